"""torch.nn.Transformer and torch.nn.TransformerEncoder on token embeddings.

Model builders for scripts/export_torch.py (MODEL = scripts/models/transformer.py:encoder
or :transformer), with torch's defaults (batch_first=False, so that eval mode does not
take the fused fast path, which torch.onnx.export cannot export).  Each returns the module
and its example inputs, float32 embeddings of shape [seq, batch, d_model]: torch.onnx.export
turns the attention's
head splitting into shape arithmetic (Shape, Gather, Concat, Reshape), which is what the
ONNX importer's shape folding is tested on.  Defaults are small (2 layers, d_model 64,
4 heads, sequence 16) so that an export takes a few seconds.
"""

import torch
from torch import nn


def encoder(batch=1, layers=2, d_model=64, heads=4, ff=128, seq=16):
    """nn.TransformerEncoder of `layers` nn.TransformerEncoderLayer."""
    layer = nn.TransformerEncoderLayer(d_model, heads, dim_feedforward=ff)
    model = nn.TransformerEncoder(layer, layers)
    return model, (torch.randn(seq, batch, d_model),)


def transformer(batch=1, layers=2, d_model=64, heads=4, ff=128, seq=16, target_seq=8):
    """nn.Transformer with `layers` encoder and decoder layers."""
    model = nn.Transformer(d_model, heads, num_encoder_layers=layers, num_decoder_layers=layers,
                           dim_feedforward=ff)
    return model, (torch.randn(seq, batch, d_model), torch.randn(target_seq, batch, d_model))
