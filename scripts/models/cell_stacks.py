"""Cell-stack networks from neural architecture search, for ImageNet-style 224x224 input.

Two model builders for scripts/export_torch.py (MODEL = scripts/models/cell_stacks.py:nasnet_a
or ...:darts).  Both are plain nn.Modules whose forward has no data-dependent Python
control flow: every wiring decision is made in __init__ from the genotype and the
(statically known) channel counts and spatial sizes, so they trace with
torch.fx.symbolic_trace and export to ONNX.

* nasnet_a(): NASNet-A, Zoph, Vasudevan, Shlens, Le, "Learning Transferable
  Architectures for Scalable Image Recognition", CVPR 2018 (arXiv:1707.07012),
  Fig. 4 / Appendix A: the published NASNet-A normal and reduction cells, each of 5
  blocks; a block applies one operation to each of two inputs chosen from the two
  previous cell outputs and earlier blocks of the cell and adds the results; the cell
  output concatenates the blocks no other block consumed (the normal cell also keeps
  h_{i-1}).  ImageNet layout of
  the paper's mobile model "NASNet-A (4 @ 1056)": a 3x3/2 stem convolution (32
  filters), two stem reduction cells (C/4, C/2 filters), then 3 stages of N normal
  cells with a reduction cell (filters doubled) between stages, ReLU, global average
  pool, dropout, linear classifier.  Defaults C=44, N=4 (penultimate width 6*4*44 =
  1056): 18 cells, ~5.3 M parameters.  Separable convolutions are applied twice
  (ReLU, depthwise kxk, pointwise 1x1, BN) x 2 as in the paper; the previous-previous
  input is brought to the current resolution by a factorized reduction (two shifted
  1x1/2 paths, concatenated) or to C channels by ReLU-1x1 conv-BN.  Training-only
  parts (auxiliary head, drop path) are left out.

* darts(): DARTS, Liu, Simonyan, Yang, "DARTS: Differentiable Architecture Search",
  ICLR 2019 (arXiv:1806.09055): the published genotype DARTS_V2 (second-order search,
  Fig. 4/5 of the paper): normal and reduction cells with 4 intermediate nodes, each
  the sum of two operations on earlier nodes (the two cell inputs are nodes 0 and 1),
  the cell output concatenating the 4 intermediate nodes.  ImageNet network of the
  paper (mobile setting): stem0 (3x3/2 conv C/2, BN, ReLU, 3x3/2 conv C, BN), stem1
  (ReLU, 3x3/2 conv C, BN), 14 cells with reduction cells at 1/3 and 2/3 depth
  (channels doubled), global average pool, linear classifier.  Defaults C=48,
  cells=14 (~4.7 M parameters).  The auxiliary head and drop path (training only) are
  left out.

Both return an nn.Module; export_torch.py feeds float32 [N,3,224,224].
"""

import torch
from torch import nn

# ---------------------------------------------------------------------------
# NASNet-A genotype (Zoph et al. 2018, Fig. 4; identical to the cell definition of the
# authors' released TF-slim code, nasnet_utils.NasNetANormalCell / NasNetAReductionCell).
# Hidden state 0 is the current input h_i (the previous cell's output), hidden state 1
# is h_{i-1} (the output before it); blocks append hidden states 2..6.
# Each block: (op_left, input_left, op_right, input_right).
NASNET_A_NORMAL = [
    ("sep5x5", 0, "sep3x3", 1),
    ("sep5x5", 1, "sep3x3", 1),
    ("avg3x3", 0, "identity", 1),
    ("avg3x3", 1, "avg3x3", 1),
    ("sep3x3", 0, "identity", 0),
]
NASNET_A_REDUCTION = [
    ("sep5x5", 0, "sep7x7", 1),
    ("max3x3", 0, "sep7x7", 1),
    ("avg3x3", 0, "sep5x5", 1),
    ("identity", 3, "avg3x3", 2),
    ("sep3x3", 2, "max3x3", 0),
]
# hidden states concatenated into the cell output (TF-slim used_hiddenstates
# [1,0,0,0,0,0,0] and [1,1,1,0,0,0,0]): the normal cell keeps h_{i-1} (after the
# cell-base adjustment) and all 5 blocks (6 x filters channels, "4 @ 1056" = 6 x 176);
# the reduction cell keeps the 4 blocks no other block reads.
NASNET_A_NORMAL_CONCAT = [1, 2, 3, 4, 5, 6]
NASNET_A_REDUCTION_CONCAT = [3, 4, 5, 6]

# DARTS_V2 genotype (Liu et al. 2019; genotypes.py of the authors' release):
# node k (k = 2..5) = op_a(state[i_a]) + op_b(state[i_b]); states 0, 1 are the cell inputs
# (outputs of the cells k-2 and k-1).  Output: concat of states 2, 3, 4, 5.
DARTS_V2_NORMAL = [
    ("sep_conv_3x3", 0), ("sep_conv_3x3", 1),
    ("sep_conv_3x3", 0), ("sep_conv_3x3", 1),
    ("sep_conv_3x3", 1), ("skip_connect", 0),
    ("skip_connect", 0), ("dil_conv_3x3", 2),
]
DARTS_V2_REDUCE = [
    ("max_pool_3x3", 0), ("max_pool_3x3", 1),
    ("skip_connect", 2), ("max_pool_3x3", 1),
    ("max_pool_3x3", 0), ("skip_connect", 2),
    ("skip_connect", 2), ("max_pool_3x3", 1),
]
DARTS_V2_CONCAT = [2, 3, 4, 5]


# ---------------------------------------------------------------------------
# shared building blocks

class ReLUConvBN(nn.Sequential):
    def __init__(self, c_in, c_out, kernel=1, stride=1, padding=0):
        super().__init__(nn.ReLU(inplace=False),
                         nn.Conv2d(c_in, c_out, kernel, stride, padding, bias=False),
                         nn.BatchNorm2d(c_out))


class FactorizedReduce(nn.Module):
    """DARTS FactorizedReduce (even sizes): ReLU, 1x1/2 convolutions on x and on x shifted
    by one pixel (x[:, :, 1:, 1:]), each C/2 channels, concatenated, BN."""

    def __init__(self, c_in, c_out):
        super().__init__()
        self.relu = nn.ReLU(inplace=False)
        self.conv_1 = nn.Conv2d(c_in, c_out // 2, 1, stride=2, bias=False)
        self.conv_2 = nn.Conv2d(c_in, c_out - c_out // 2, 1, stride=2, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x):
        x = self.relu(x)
        return self.bn(torch.cat([self.conv_1(x), self.conv_2(x[:, :, 1:, 1:])], dim=1))


class FactorizedReduction(nn.Module):
    """NASNet factorized_reduction (any size, 'SAME' semantics): ReLU; path 1 = 1x1/2
    conv of x; path 2 = 1x1/2 conv of x shifted by one pixel and zero-padded at the
    bottom/right (TF: pad then crop).  The shift is written as a 1x1/2 convolution with
    padding 1 whose first row and column are cropped, which gives exactly the same
    values without a Pad op (so the ONNX export keeps static shapes without constant
    folding).  Concatenation, BN."""

    def __init__(self, c_in, c_out):
        super().__init__()
        self.relu = nn.ReLU(inplace=False)
        self.path1 = nn.Conv2d(c_in, c_out // 2, 1, stride=2, bias=False)
        self.path2 = nn.Conv2d(c_in, c_out - c_out // 2, 1, stride=2, padding=1, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, x):
        x = self.relu(x)
        return self.bn(torch.cat([self.path1(x), self.path2(x)[:, :, 1:, 1:]], dim=1))


class SepConv(nn.Sequential):
    """Stacked separable convolution: (ReLU, depthwise kxk, pointwise 1x1, BN) x 2, the
    stride on the first depthwise convolution (NASNet 'separable_kxk_2', DARTS SepConv)."""

    def __init__(self, c_in, c_out, kernel, stride):
        pad = kernel // 2
        super().__init__(
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, c_in, kernel, stride, pad, groups=c_in, bias=False),
            nn.Conv2d(c_in, c_in, 1, bias=False),
            nn.BatchNorm2d(c_in),
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, c_in, kernel, 1, pad, groups=c_in, bias=False),
            nn.Conv2d(c_in, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        )


class DilConv(nn.Sequential):
    """DARTS dil_conv: ReLU, depthwise 3x3 dilation 2, pointwise 1x1, BN."""

    def __init__(self, c_in, c_out, kernel, stride, padding, dilation):
        super().__init__(
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, c_in, kernel, stride, padding, dilation=dilation, groups=c_in, bias=False),
            nn.Conv2d(c_in, c_out, 1, bias=False),
            nn.BatchNorm2d(c_out),
        )


def _out_size(size, stride):
    # every strided op here pads to 'same' resolution: ceil(size / stride)
    return (size + stride - 1) // stride


# ---------------------------------------------------------------------------
# NASNet-A

def _nasnet_op(name, c, stride):
    if name.startswith("sep"):
        k = int(name[3])
        return SepConv(c, c, k, stride)
    if name == "avg3x3":
        return nn.AvgPool2d(3, stride=stride, padding=1, count_include_pad=False)
    if name == "max3x3":
        return nn.MaxPool2d(3, stride=stride, padding=1)
    if name == "identity":
        if stride != 1:
            return FactorizedReduction(c, c)
        return nn.Identity()
    raise ValueError(name)


class NasNetACell(nn.Module):
    """One NASNet-A cell; inputs (h_prev = h_{i-1}, h_cur = h_i) with known shapes."""

    def __init__(self, c_prev_prev, size_prev_prev, c_cur, size_cur, filters, reduction):
        super().__init__()
        # current input: ReLU, 1x1 conv, BN (cell base)
        self.cur_1x1 = ReLUConvBN(c_cur, filters)
        # previous input brought to the current input's resolution and `filters` channels
        if size_prev_prev != size_cur:
            self.prev_adjust = FactorizedReduction(c_prev_prev, filters)
        elif c_prev_prev != filters:
            self.prev_adjust = ReLUConvBN(c_prev_prev, filters)
        else:
            self.prev_adjust = nn.Identity()
        genotype = NASNET_A_REDUCTION if reduction else NASNET_A_NORMAL
        self.blocks = nn.ModuleList()
        self.wiring = []
        for op_l, in_l, op_r, in_r in genotype:
            block = nn.ModuleList([
                _nasnet_op(op_l, filters, 2 if reduction and in_l < 2 else 1),
                _nasnet_op(op_r, filters, 2 if reduction and in_r < 2 else 1),
            ])
            self.blocks.append(block)
            self.wiring.append((in_l, in_r))
        self.concat = NASNET_A_REDUCTION_CONCAT if reduction else NASNET_A_NORMAL_CONCAT
        self.out_channels = filters * len(self.concat)
        self.out_size = _out_size(size_cur, 2) if reduction else size_cur

    def forward(self, h_prev, h_cur):
        states = [self.cur_1x1(h_cur), self.prev_adjust(h_prev)]
        for (in_l, in_r), block in zip(self.wiring, self.blocks):
            states.append(block[0](states[in_l]) + block[1](states[in_r]))
        return torch.cat([states[i] for i in self.concat], dim=1)


class NasNetA(nn.Module):
    def __init__(self, C=44, N=4, num_classes=1000, stem_filters=32, image_size=224, cifar=False):
        super().__init__()
        if cifar:  # CIFAR layout: a 3x3/1 stem convolution, no stem reduction cells
            self.stem = nn.Sequential(
                nn.Conv2d(3, stem_filters, 3, stride=1, padding=1, bias=False),
                nn.BatchNorm2d(stem_filters),
            )
            size = image_size
        else:
            self.stem = nn.Sequential(
                nn.Conv2d(3, stem_filters, 3, stride=2, padding=0, bias=False),
                nn.BatchNorm2d(stem_filters),
            )
            size = (image_size - 3) // 2 + 1         # 224 -> 111 ('VALID')
        cells = []
        # (channels, size) of h_{i-1} and h_i; the first cell sees the stem twice
        prev = (stem_filters, size)
        cur = (stem_filters, size)
        plan = [] if cifar else [(C // 4, True), (C // 2, True)]  # two stem reduction cells
        filters = C
        for stage in range(3):
            if stage > 0:
                filters *= 2
                plan.append((filters, True))
            plan.extend([(filters, False)] * N)
        for f, reduction in plan:
            cell = NasNetACell(prev[0], prev[1], cur[0], cur[1], f, reduction)
            cells.append(cell)
            prev, cur = cur, (cell.out_channels, cell.out_size)
        self.cells = nn.ModuleList(cells)
        self.relu = nn.ReLU(inplace=False)
        self.pool = nn.AdaptiveAvgPool2d(1)
        self.dropout = nn.Dropout(0.5)
        self.classifier = nn.Linear(cur[0], num_classes)

    def forward(self, x):
        x = self.stem(x)
        h_prev, h_cur = x, x
        for cell in self.cells:
            h_prev, h_cur = h_cur, cell(h_prev, h_cur)
        y = self.pool(self.relu(h_cur))
        return self.classifier(self.dropout(torch.flatten(y, 1)))


def nasnet_a(C=44, N=4, num_classes=1000):
    """NASNet-A (Zoph et al. 2018) mobile layout, C filters, N normal cells per stage"""
    return NasNetA(C=C, N=N, num_classes=num_classes)


def nasnet_a_cifar(C=32, N=6, num_classes=10):
    """NASNet-A (Zoph et al. 2018) CIFAR-10 layout "6 @ 768": a 3x3 stem of 3C filters,
    3 stages of N normal cells at 32x32, 16x16, 8x8 (input [N,3,32,32]: --input-shape 3,32,32)"""
    return NasNetA(C=C, N=N, num_classes=num_classes, stem_filters=3 * C, image_size=32, cifar=True)


# ---------------------------------------------------------------------------
# DARTS

def _darts_op(name, c, stride):
    if name == "sep_conv_3x3":
        return SepConv(c, c, 3, stride)
    if name == "sep_conv_5x5":
        return SepConv(c, c, 5, stride)
    if name == "dil_conv_3x3":
        return DilConv(c, c, 3, stride, 2, 2)
    if name == "dil_conv_5x5":
        return DilConv(c, c, 5, stride, 4, 2)
    if name == "max_pool_3x3":
        return nn.MaxPool2d(3, stride=stride, padding=1)
    if name == "avg_pool_3x3":
        return nn.AvgPool2d(3, stride=stride, padding=1, count_include_pad=False)
    if name == "skip_connect":
        return nn.Identity() if stride == 1 else FactorizedReduce(c, c)
    raise ValueError(name)


class DartsCell(nn.Module):
    def __init__(self, genotype, concat, c_prev_prev, c_prev, c, reduction, reduction_prev):
        super().__init__()
        self.preprocess0 = FactorizedReduce(c_prev_prev, c) if reduction_prev else ReLUConvBN(c_prev_prev, c)
        self.preprocess1 = ReLUConvBN(c_prev, c)
        self.ops = nn.ModuleList()
        self.indices = []
        for name, index in genotype:
            stride = 2 if reduction and index < 2 else 1
            self.ops.append(_darts_op(name, c, stride))
            self.indices.append(index)
        self.concat = list(concat)
        self.out_channels = c * len(self.concat)

    def forward(self, s0, s1):
        states = [self.preprocess0(s0), self.preprocess1(s1)]
        for k in range(len(self.ops) // 2):
            a = self.ops[2 * k](states[self.indices[2 * k]])
            b = self.ops[2 * k + 1](states[self.indices[2 * k + 1]])
            states.append(a + b)
        return torch.cat([states[i] for i in self.concat], dim=1)


class Darts(nn.Module):
    def __init__(self, C=48, cells=14, num_classes=1000, cifar=False):
        super().__init__()
        if cifar:  # CIFAR layout: one 3x3/1 stem convolution of 3C channels read by both first cells
            self.stem0 = nn.Sequential(
                nn.Conv2d(3, 3 * C, 3, stride=1, padding=1, bias=False),
                nn.BatchNorm2d(3 * C),
            )
            self.stem1 = nn.Identity()
            c_prev_prev, c_prev, c = 3 * C, 3 * C, C
            reduction_prev = False
        else:
            self.stem0 = nn.Sequential(
                nn.Conv2d(3, C // 2, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(C // 2),
                nn.ReLU(inplace=True),
                nn.Conv2d(C // 2, C, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(C),
            )
            self.stem1 = nn.Sequential(
                nn.ReLU(inplace=True),
                nn.Conv2d(C, C, 3, stride=2, padding=1, bias=False),
                nn.BatchNorm2d(C),
            )
            c_prev_prev, c_prev, c = C, C, C
            reduction_prev = True              # stem1 halves the resolution of stem0
        layers = []
        for i in range(cells):
            reduction = i in (cells // 3, 2 * cells // 3)
            if reduction:
                c *= 2
            genotype = DARTS_V2_REDUCE if reduction else DARTS_V2_NORMAL
            cell = DartsCell(genotype, DARTS_V2_CONCAT, c_prev_prev, c_prev, c, reduction, reduction_prev)
            layers.append(cell)
            reduction_prev = reduction
            c_prev_prev, c_prev = c_prev, cell.out_channels
        self.cells = nn.ModuleList(layers)
        self.global_pooling = nn.AdaptiveAvgPool2d(1)
        self.classifier = nn.Linear(c_prev, num_classes)

    def forward(self, x):
        s0 = self.stem0(x)
        s1 = self.stem1(s0)
        for cell in self.cells:
            s0, s1 = s1, cell(s0, s1)
        y = self.global_pooling(s1)
        return self.classifier(torch.flatten(y, 1))


def darts(C=48, cells=14, num_classes=1000):
    """DARTS (Liu et al. 2019) genotype DARTS_V2, ImageNet network, C channels, `cells` cells"""
    return Darts(C=C, cells=cells, num_classes=num_classes)


def darts_cifar(C=36, cells=20, num_classes=10):
    """DARTS_V2 CIFAR-10 network of the paper: C=36, 20 cells at 32x32, 16x16, 8x8
    (input [N,3,32,32]: --input-shape 3,32,32)"""
    return Darts(C=C, cells=cells, num_classes=num_classes, cifar=True)
