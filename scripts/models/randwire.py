"""RandWire: randomly wired networks, for ImageNet-style 224x224 input.

Model builder for scripts/export_torch.py (MODEL = scripts/models/randwire.py:randwire).

Xie, Kirillov, Girshick, He, "Exploring Randomly Wired Neural Networks for Image
Recognition", ICCV 2019 (arXiv:1904.01569), Sec. 3 and Table 1, small computation
regime, random graph generator WS (Watts-Strogatz) with N = 32, K = 4, P = 0.75:

* conv1: 3x3/2 convolution, C/2 filters, BN;
  conv2: ReLU, 3x3/2 convolution, C filters, BN (56x56 for 224x224 input);
* three random stages conv3..conv5 with C, 2C, 4C channels (28x28, 14x14, 7x7), each
  built from its own networkx.connected_watts_strogatz_graph(N, K, P, seed) graph; the
  undirected graph is made a DAG by orienting every edge from the lower to the higher
  node id;
* node (Sec. 3.2, Fig. 2): aggregation = weighted sum of the inputs with positive
  weights sigmoid(w) (one learnable scalar per incoming edge; a single-input node uses
  its input unchanged), transformation = ReLU -> 3x3 depthwise convolution -> 1x1
  convolution -> BN (the separable ReLU-conv-BN triplet), distribution = the same output
  sent to every successor;
* input nodes (no predecessors) read the previous stage's output, their depthwise
  convolution has stride 2 (and their 1x1 convolution changes the channel count); the
  stage output is the mean of the output nodes (no successors);
* head: ReLU, 1x1 convolution to 1280 channels, BN, ReLU, global average pool, linear
  classifier (1000 classes).

Defaults C = 78 (the paper's small regime, ~5.6 M parameters for WS(32,4,0.75)).  The
graph seeds of model seed s are 10s, 10s+1, 10s+2 for the three stages.

The module is a plain nn.Module whose forward has no data-dependent Python control flow:
the wiring (predecessor lists, input and output nodes) is fixed in __init__, so it traces
with torch.fx.symbolic_trace and exports to ONNX.  Requires networkx (Debian
python3-networkx; the shipped graphs used networkx 2.8.8, whose generator draws from
random.Random(seed)).
"""

import networkx as nx
import torch
import torch.nn.functional as F
from torch import nn


def ws_dag(nodes, k, p, seed):
    """Predecessor lists of the DAG of connected_watts_strogatz_graph(nodes, k, p, seed)
    with every edge oriented from the lower to the higher node id (ascending order)."""
    g = nx.connected_watts_strogatz_graph(nodes, k, p, seed=seed)
    return [sorted(u for u in g.neighbors(v) if u < v) for v in range(nodes)]


class Node(nn.Module):
    """One graph node: sigmoid-weighted sum of its n_in inputs (n_in > 1), ReLU, 3x3
    depthwise convolution (stride 2 for input nodes), 1x1 convolution, BN."""

    def __init__(self, n_in, c_in, c_out, stride):
        super().__init__()
        self.n_in = n_in
        if n_in > 1:
            self.w = nn.Parameter(torch.zeros(n_in))
        self.dw = nn.Conv2d(c_in, c_in, 3, stride, 1, groups=c_in, bias=False)
        self.pw = nn.Conv2d(c_in, c_out, 1, bias=False)
        self.bn = nn.BatchNorm2d(c_out)

    def forward(self, inputs):
        if self.n_in > 1:           # structural (fixed in __init__), not data-dependent
            w = torch.sigmoid(self.w)
            x = inputs[0] * w[0]
            for i in range(1, self.n_in):
                x = x + inputs[i] * w[i]
        else:
            x = inputs[0]
        return self.bn(self.pw(self.dw(F.relu(x))))


class Stage(nn.Module):
    """A random-graph stage: nodes evaluated in id order (a topological order of the DAG);
    input nodes read the stage input, the output is the mean of the sink nodes."""

    def __init__(self, preds, c_in, c_out):
        super().__init__()
        n = len(preds)
        self.preds = [list(p) for p in preds]
        has_succ = set(u for p in preds for u in p)
        self.sinks = [v for v in range(n) if v not in has_succ]
        self.nodes = nn.ModuleList(
            Node(len(p), c_out if p else c_in, c_out, 1 if p else 2) for p in self.preds)

    def forward(self, x):
        outs = []
        for node, p in zip(self.nodes, self.preds):
            outs.append(node([outs[u] for u in p] if p else [x]))
        y = outs[self.sinks[0]]
        for v in self.sinks[1:]:
            y = y + outs[v]
        return y / len(self.sinks)


class RandWire(nn.Module):
    def __init__(self, stage_preds, channels=78, num_classes=1000):
        super().__init__()
        c = channels
        self.conv1 = nn.Sequential(
            nn.Conv2d(3, c // 2, 3, 2, 1, bias=False),
            nn.BatchNorm2d(c // 2))
        self.conv2 = nn.Sequential(
            nn.ReLU(inplace=False),
            nn.Conv2d(c // 2, c, 3, 2, 1, bias=False),
            nn.BatchNorm2d(c))
        stages = []
        c_in = c
        for i, preds in enumerate(stage_preds):
            c_out = c * 2 ** i
            stages.append(Stage(preds, c_in, c_out))
            c_in = c_out
        self.stages = nn.ModuleList(stages)
        self.head = nn.Sequential(
            nn.ReLU(inplace=False),
            nn.Conv2d(c_in, 1280, 1, bias=False),
            nn.BatchNorm2d(1280),
            nn.ReLU(inplace=False),
            nn.AdaptiveAvgPool2d(1),
            nn.Flatten(),
            nn.Linear(1280, num_classes))

    def forward(self, x):
        x = self.conv2(self.conv1(x))
        for stage in self.stages:
            x = stage(x)
        return self.head(x)


def randwire(seed=0, channels=78, nodes=32, k=4, p=0.75, stages=3, num_classes=1000):
    """RandWire-WS(nodes, k, p) small regime, C = channels (Xie et al. 2019).

    Stage i (i = 0, 1, 2) uses the graph connected_watts_strogatz_graph(nodes, k, p,
    seed=10*seed + i)."""
    preds = [ws_dag(nodes, k, p, 10 * seed + i) for i in range(stages)]
    return RandWire(preds, channels=channels, num_classes=num_classes)
