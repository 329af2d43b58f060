"""A GPT-style decoder for scripts/export_torch.py (MODEL = scripts/models/gpt.py:gpt).

The module of examples/data/gpt_infer_b32.json (remade node for node, see
tests/scripts/test_export_torch.py): token embedding `tok` plus a learned position
table `pos`, `layers` pre-LayerNorm blocks (causal multi-head attention written as
matmuls with an additive triangular mask buffer, then a GELU MLP of width 4 * d), a
final LayerNorm `ln` and a linear `head` over the vocabulary without bias.  Its training
step (`--train`, the loss over every token) has the large-vocabulary loss whose backward
holds the logits, their softmax and its gradient at once: the case the
rematerialisation issue singles out.  `dropout` > 0 adds dropout after the attention
softmax and after each block's two branches.  Shapes are fixed in __init__ so that the
trace has no data-dependent control flow.  Returns (module, (token_ids,)): int64
[batch, seq].
"""

import math

import torch
from torch import nn


class Block(nn.Module):
    def __init__(self, d, heads, seq, dropout):
        super().__init__()
        self.heads, self.head_dim = heads, d // heads
        self.ln1 = nn.LayerNorm(d)
        self.qkv = nn.Linear(d, 3 * d)
        self.proj = nn.Linear(d, d)
        self.ln2 = nn.LayerNorm(d)
        self.fc1 = nn.Linear(d, 4 * d)
        self.fc2 = nn.Linear(4 * d, d)
        self.drop = nn.Dropout(dropout) if dropout > 0 else nn.Identity()
        causal = torch.full((seq, seq), float("-inf")).triu(1)
        self.register_buffer("mask", causal)

    def forward(self, x):
        b, length, d = x.shape
        q, k, v = self.qkv(self.ln1(x)).split(d, dim=2)
        shape = (b, length, self.heads, self.head_dim)
        q, k, v = (t.reshape(shape).transpose(1, 2) for t in (q, k, v))
        scores = (q @ k.transpose(-2, -1)) * (1.0 / math.sqrt(self.head_dim))
        attention = self.drop(torch.softmax(scores + self.mask[:length, :length], dim=-1))
        y = (attention @ v).transpose(1, 2).reshape(b, length, d)
        x = x + self.drop(self.proj(y))
        return x + self.drop(self.fc2(nn.functional.gelu(self.fc1(self.ln2(x)))))


class GPT(nn.Module):
    def __init__(self, vocab, seq, d, heads, layers, dropout):
        super().__init__()
        self.tok = nn.Embedding(vocab, d)
        self.pos = nn.Parameter(torch.zeros(1, seq, d))
        self.blocks = nn.Sequential(*[Block(d, heads, seq, dropout) for _ in range(layers)])
        self.ln = nn.LayerNorm(d)
        self.head = nn.Linear(d, vocab, bias=False)

    def forward(self, x):
        return self.head(self.ln(self.blocks(self.tok(x) + self.pos)))


def gpt(batch=32, vocab=8192, seq=256, d=512, heads=8, layers=6, dropout=0.0):
    model = GPT(vocab, seq, d, heads, layers, dropout)
    ids = torch.randint(0, vocab, (batch, seq), generator=torch.Generator().manual_seed(0))
    return model, (ids,)
