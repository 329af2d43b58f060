#pragma once
// Graph generators, deterministic by seed, for tests, benchmarks and
// comparisons on graphs nobody tuned for:
// - layered:           layers of random width, each node reading 1-3 nodes of
//                      the layer before and now and then one further back;
// - randwire:          RandWire's stages, each a Watts-Strogatz graph (k = 4,
//                      p = 0.75) made acyclic by node order, 32 nodes a stage;
// - cnn-train:         a ResNet-like training step: conv, batch norm, ReLU
//                      blocks with residual adds, a loss, and its backward;
// - transformer-train: a GPT-like training step: attention and MLP layers,
//                      a loss, and its backward.
// The training graphs' backward is derived from the forward (derive_backward):
// each op's gradient reads the output gradient and what that op saves, sums
// where a tensor has several readers, and gives every weight a gradient that
// is a graph output. Sizes are float32 bytes of realistic shapes; flops are
// the usual estimates. The random numbers come from std::mt19937_64 and are
// mapped to ranges here (not by std distributions, whose results differ
// between standard libraries), so a seed gives the same graph everywhere.

#include "graph.hpp"

#include <algorithm>
#include <cmath>
#include <cstddef>
#include <cstdint>
#include <random>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace graph_gen {

class rng {
 public:
  explicit rng(std::uint64_t seed) : engine_(seed) {}
  /// A number in [lo, hi].
  std::uint64_t between(std::uint64_t lo, std::uint64_t hi) { return lo + engine_() % (hi - lo + 1); }
  bool chance(double p) { return static_cast<double>(engine_() >> 11) * 0x1.0p-53 < p; }
  template <class T>
  const T& pick(const std::vector<T>& from) { return from[between(0, from.size() - 1)]; }

 private:
  std::mt19937_64 engine_;
};

// What the backward of an op reads besides its output's gradient.
enum class saves { nothing, inputs, output };

struct forward_op {
  std::size_t node;
  saves saved;
};

/// Records the forward ops of a training step as they are added, with what
/// each one's backward reads.
struct forward_pass {
  graph& g;
  std::vector<forward_op> ops;

  tensor operator()(node n, saves saved) {
    n.phase = "forward";
    const std::size_t v = g.add(std::move(n));
    ops.push_back({v, saved});
    return {v, 0};
  }
};

/// Appends the backward of `forward` (ops in program order; the last one is the
/// loss, whose gradient is where the backward starts) to g.
inline void derive_backward(graph& g, const std::vector<forward_op>& forward) {
  const std::size_t forward_nodes = g.nodes.size();
  std::vector<std::vector<tensor>> grad(forward_nodes);  // grad[v][port]: (node, port), or (size_t(-1), 0)
  for (std::size_t v = 0; v < forward_nodes; ++v) grad[v].assign(g.nodes[v].outputs.size(), {SIZE_MAX, 0});
  std::vector<char> differentiable(forward_nodes, 0);
  for (const auto& op : forward) differentiable[op.node] = 1;
  const auto accumulate = [&](tensor t, tensor contribution) {
    tensor& slot = grad[t.first][t.second];
    if (slot.first == SIZE_MAX) {
      slot = contribution;
      return;
    }
    const auto bytes = g.nodes[t.first].outputs[t.second];
    slot = {g.add({.name = g.nodes[t.first].name + "_grad_sum" + std::to_string(g.nodes.size()),
                   .op = "add",
                   .outputs = {bytes},
                   .inputs = {slot, contribution},
                   .flops = static_cast<double>(bytes) / 4,
                   .phase = "backward"}),
            0};
  };
  for (auto it = forward.rbegin(); it != forward.rend(); ++it) {
    const node fwd = g.nodes[it->node];  // a copy: g.nodes grows below
    const bool is_loss = it == forward.rbegin();
    if (!is_loss && grad[it->node][0].first == SIZE_MAX) continue;  // nothing downstream needs it
    node bwd{.name = fwd.name + "_backward", .op = fwd.op + "_backward", .flops = 2 * fwd.flops, .phase = "backward"};
    if (!is_loss) bwd.inputs.push_back(grad[it->node][0]);
    if (it->saved == saves::inputs) bwd.inputs.insert(bwd.inputs.end(), fwd.inputs.begin(), fwd.inputs.end());
    if (it->saved == saves::output) bwd.inputs.push_back({it->node, 0});
    std::vector<std::pair<tensor, std::size_t>> gradients;  // (input, port of bwd)
    for (const tensor& in : fwd.inputs) {
      const node& producer = g.nodes[in.first];
      if (!producer.persistent && !differentiable[in.first]) continue;  // a data input: no gradient
      gradients.push_back({in, bwd.outputs.size()});
      bwd.outputs.push_back(producer.outputs[in.second]);
    }
    const std::size_t b = g.add(std::move(bwd));
    for (const auto& [in, port] : gradients) {
      if (g.nodes[in.first].persistent) {
        g.outputs.push_back({b, port});  // a weight's gradient: the step's result
      } else {
        accumulate(in, {b, port});
      }
    }
  }
}

namespace detail {

inline std::uint64_t f32(std::uint64_t elements) { return 4 * elements; }

/// An empty graph named after how it is made, its source the command that makes it.
inline graph named(const std::string& kind, std::size_t vertices, std::uint64_t seed) {
  std::string name = kind + "_n" + std::to_string(vertices) + "_s" + std::to_string(seed);
  std::ranges::replace(name, '-', '_');
  return {.name = std::move(name),
          .source = "memopt-plan generate " + kind + " --vertices " + std::to_string(vertices) + " --seed " +
                    std::to_string(seed)};
}

inline std::size_t add_weight(graph& g, const std::string& name, std::uint64_t bytes) {
  return g.add({.name = name, .op = "parameter", .outputs = {bytes}, .persistent = true});
}

}  // namespace detail

/// Layers of random width (about sqrt(vertices) / 2 nodes on average), each node
/// reading 1-3 nodes of the layer before and, one time in five, a node of one
/// of the eight layers before that.
inline graph layered(std::size_t vertices, std::uint64_t seed) {
  rng r(seed);
  graph g = detail::named("layered", vertices, seed);
  const std::size_t mean_width = std::max<std::size_t>(1, static_cast<std::size_t>(std::sqrt(double(vertices)) / 2));
  std::vector<std::vector<std::size_t>> layers{{g.add({.name = "input", .op = "input", .outputs = {1 << 20}})}};
  while (g.nodes.size() < vertices) {
    const std::size_t width = std::min<std::size_t>(r.between(1, 2 * mean_width), vertices - g.nodes.size());
    const std::uint64_t layer_bytes = std::uint64_t{1} << r.between(10, 24);
    std::vector<std::size_t> layer;
    for (std::size_t k = 0; k < width; ++k) {
      // Appended, not "n" + to_string(...): g++ 12 warns falsely (-Wrestrict, GCC bug 105329) on that form.
      std::string name = "n";
      name += std::to_string(g.nodes.size());
      node n{.name = std::move(name), .op = "op", .outputs = {layer_bytes * r.between(1, 4)}};
      for (std::size_t e = r.between(1, 3); e > 0; --e) n.inputs.push_back({r.pick(layers.back()), 0});
      if (layers.size() > 1 && r.chance(0.2)) {
        const std::size_t back = r.between(2, std::min<std::size_t>(9, layers.size()));
        n.inputs.push_back({r.pick(layers[layers.size() - back]), 0});
      }
      std::ranges::sort(n.inputs);
      n.inputs.erase(std::unique(n.inputs.begin(), n.inputs.end()), n.inputs.end());
      n.flops = 10.0 * static_cast<double>(n.outputs[0]);
      layer.push_back(g.add(std::move(n)));
    }
    layers.push_back(std::move(layer));
  }
  for (const auto v : layers.back()) g.outputs.push_back({v, 0});
  return g;
}

/// RandWire (Xie et al. 2019, WS(4, 0.75)): stages of 32 nodes; each node sums
/// its inputs and runs ReLU-conv-BN; the stage's sources read its input, its
/// sinks are averaged into its output. Spatial size halves every few stages.
inline graph randwire(std::size_t vertices, std::uint64_t seed) {
  rng r(seed);
  graph g = detail::named("randwire", vertices, seed);
  constexpr std::size_t per_stage = 32, k = 4;
  const std::uint64_t batch = r.pick(std::vector<std::uint64_t>{8, 16, 32});
  const std::size_t stages = std::max<std::size_t>(1, vertices / (per_stage + 1));
  std::uint64_t channels = 78, side = 56;
  std::size_t previous = g.add({.name = "input", .op = "input", .outputs = {detail::f32(batch * 3 * 224 * 224)}});
  for (std::size_t s = 0; s < stages; ++s) {
    if (s > 0 && s % std::max<std::size_t>(1, stages / 4) == 0 && side > 7) {
      side /= 2;
      channels *= 2;
    }
    const std::uint64_t bytes = detail::f32(batch * channels * side * side);
    const double flops = 2.0 * double(batch * side * side) * double(channels) * 9.0;
    // Watts-Strogatz: a ring where each node links to k/2 neighbours each side, each link
    // rewired with probability 0.75; edges point from the lower to the higher index.
    std::vector<std::vector<std::size_t>> preds(per_stage);
    for (std::size_t i = 0; i < per_stage; ++i) {
      for (std::size_t j = 1; j <= k / 2; ++j) {
        std::size_t to = (i + j) % per_stage;
        if (r.chance(0.75)) {
          to = r.between(0, per_stage - 1);
          if (to == i) continue;
        }
        const auto [a, b] = std::minmax(i, to);
        if (std::ranges::find(preds[b], a) == preds[b].end()) preds[b].push_back(a);
      }
    }
    const std::string stage = "s" + std::to_string(s) + "_";
    std::vector<std::size_t> id(per_stage);
    std::vector<char> read(per_stage, 0);
    for (std::size_t i = 0; i < per_stage; ++i) {
      node n{.name = stage + "n" + std::to_string(i), .op = "wired_conv", .outputs = {bytes}, .flops = flops};
      if (preds[i].empty()) n.inputs.push_back({previous, 0});
      std::ranges::sort(preds[i]);
      for (const auto p : preds[i]) {
        n.inputs.push_back({id[p], 0});
        read[p] = 1;
      }
      id[i] = g.add(std::move(n));
    }
    node out{.name = stage + "output", .op = "mean", .outputs = {bytes}};
    for (std::size_t i = 0; i < per_stage; ++i) {
      if (!read[i]) out.inputs.push_back({id[i], 0});
    }
    previous = g.add(std::move(out));
  }
  g.outputs.push_back({previous, 0});
  return g;
}

/// A ResNet-like training step of about `vertices` nodes: stages of blocks
/// (conv, batch norm, ReLU; a residual add every second block), pooling, a
/// fully connected layer and a loss, then the backward.
inline graph cnn_train(std::size_t vertices, std::uint64_t seed) {
  rng r(seed);
  graph g = detail::named("cnn-train", vertices, seed);
  const std::uint64_t batch = r.pick(std::vector<std::uint64_t>{8, 16, 32, 64});
  std::uint64_t channels = r.pick(std::vector<std::uint64_t>{32, 48, 64}), side = 56;
  const std::size_t blocks = std::max<std::size_t>(2, vertices * 5 / 47);  // about 9.4 nodes a block, both passes
  forward_pass op{g};
  tensor x{g.add({.name = "images", .op = "input", .outputs = {detail::f32(batch * 3 * 224 * 224)}}), 0};
  tensor residual = x;
  for (std::size_t b = 0; b < blocks; ++b) {
    if (b > 0 && b % std::max<std::size_t>(2, blocks / 4) == 0 && side > 7) {
      side /= 2;
      channels *= 2;
    }
    const std::string name = "block" + std::to_string(b) + "_";
    const std::uint64_t bytes = detail::f32(batch * channels * side * side);
    const double conv_flops = 2.0 * double(batch * side * side) * double(channels * channels) * 9.0;
    const auto w = detail::add_weight(g, name + "conv_w", detail::f32(channels * channels * 9));
    const auto gamma = detail::add_weight(g, name + "bn_w", detail::f32(2 * channels));
    const auto conv = op({.name = name + "conv", .op = "convolution", .outputs = {bytes}, .inputs = {x, {w, 0}},
                          .flops = conv_flops},
                         saves::inputs);
    const auto bn = op({.name = name + "bn", .op = "batch_norm", .outputs = {bytes}, .inputs = {conv, {gamma, 0}},
                        .flops = 8.0 * double(bytes) / 4},
                       saves::inputs);
    x = op({.name = name + "relu", .op = "relu", .outputs = {bytes}, .inputs = {bn}, .flops = double(bytes) / 4},
           saves::output);
    if (b % 2 == 1 && g.nodes[residual.first].outputs[residual.second] == bytes) {
      x = op({.name = name + "add", .op = "add", .outputs = {bytes}, .inputs = {x, residual},
              .flops = double(bytes) / 4},
             saves::nothing);
    }
    if (b % 2 == 1) residual = x;
  }
  const auto pooled = op({.name = "pool", .op = "mean", .outputs = {detail::f32(batch * channels)}, .inputs = {x}},
                         saves::nothing);
  const auto fc_w = detail::add_weight(g, "fc_w", detail::f32(channels * 1000));
  const auto logits = op({.name = "fc", .op = "matmul", .outputs = {detail::f32(batch * 1000)},
                          .inputs = {pooled, {fc_w, 0}}, .flops = 2.0 * double(batch * channels * 1000)},
                         saves::inputs);
  const auto labels = g.add({.name = "labels", .op = "input", .outputs = {8 * batch}});
  const auto loss = op({.name = "loss", .op = "cross_entropy", .outputs = {4}, .inputs = {logits, {labels, 0}}},
                       saves::inputs);
  g.outputs.push_back(loss);
  derive_backward(g, op.ops);
  return g;
}

/// A GPT-like training step of about `vertices` nodes: layers of attention
/// (layer norm, QKV projection, scores, softmax, context, output projection,
/// residual add) and MLP (layer norm, up projection, GELU, down projection,
/// residual add), a vocabulary projection and a loss, then the backward.
inline graph transformer_train(std::size_t vertices, std::uint64_t seed) {
  rng r(seed);
  graph g = detail::named("transformer-train", vertices, seed);
  const std::uint64_t batch = r.pick(std::vector<std::uint64_t>{4, 8, 16});
  const std::uint64_t seq = r.pick(std::vector<std::uint64_t>{256, 512, 1024});
  const std::uint64_t width = r.pick(std::vector<std::uint64_t>{512, 768, 1024}), heads = width / 64;
  const std::uint64_t vocab = 32000, tokens = batch * seq;
  const std::size_t layers = std::max<std::size_t>(1, vertices * 2 / 61);  // about 30.5 nodes a layer, both passes
  forward_pass op{g};
  const std::uint64_t act = detail::f32(tokens * width);
  const auto matmul = [&](const std::string& name, tensor in, std::uint64_t in_width, std::uint64_t out_width) {
    const auto w = detail::add_weight(g, name + "_w", detail::f32(in_width * out_width));
    return op({.name = name, .op = "matmul", .outputs = {detail::f32(tokens * out_width)}, .inputs = {in, {w, 0}},
               .flops = 2.0 * double(tokens * in_width * out_width)},
              saves::inputs);
  };
  const auto elementwise = [&](const std::string& name, const std::string& kind, std::vector<tensor> in,
                               saves saved) {
    const auto bytes = g.nodes[in[0].first].outputs[in[0].second];
    return op({.name = name, .op = kind, .outputs = {bytes}, .inputs = std::move(in), .flops = double(bytes)}, saved);
  };
  tensor x = {g.add({.name = "tokens", .op = "input", .outputs = {8 * tokens}}), 0};
  const auto embedding = detail::add_weight(g, "embedding", detail::f32(vocab * width));
  x = op({.name = "embed", .op = "embedding", .outputs = {act}, .inputs = {x, {embedding, 0}}}, saves::inputs);
  for (std::size_t l = 0; l < layers; ++l) {
    const std::string name = "layer" + std::to_string(l) + "_";
    const auto ln1 = elementwise(name + "ln1", "layer_norm", {x}, saves::inputs);
    const auto qkv = matmul(name + "qkv", ln1, width, 3 * width);
    const std::uint64_t scores_bytes = detail::f32(batch * heads * seq * seq);
    const auto scores = op({.name = name + "scores", .op = "bmm", .outputs = {scores_bytes}, .inputs = {qkv},
                            .flops = 2.0 * double(batch * heads * seq * seq * 64)},
                           saves::inputs);
    const auto probs = elementwise(name + "softmax", "softmax", {scores}, saves::output);
    const auto context = op({.name = name + "context", .op = "bmm", .outputs = {act}, .inputs = {probs, qkv},
                             .flops = 2.0 * double(batch * heads * seq * seq * 64)},
                            saves::inputs);
    const auto attn = matmul(name + "proj", context, width, width);
    x = elementwise(name + "add1", "add", {x, attn}, saves::nothing);
    const auto ln2 = elementwise(name + "ln2", "layer_norm", {x}, saves::inputs);
    const auto up = matmul(name + "up", ln2, width, 4 * width);
    const auto gelu = elementwise(name + "gelu", "gelu", {up}, saves::inputs);
    const auto down = matmul(name + "down", gelu, 4 * width, width);
    x = elementwise(name + "add2", "add", {x, down}, saves::nothing);
  }
  const auto logits = matmul("lm_head", x, width, vocab);
  const auto labels = g.add({.name = "labels", .op = "input", .outputs = {8 * tokens}});
  const auto loss = op({.name = "loss", .op = "cross_entropy", .outputs = {4}, .inputs = {logits, {labels, 0}}},
                       saves::inputs);
  g.outputs.push_back(loss);
  derive_backward(g, op.ops);
  return g;
}

/// The kinds `memopt-plan generate` takes, in help-text order.
inline const std::vector<std::string>& kinds() {
  static const std::vector<std::string> all = {"layered", "randwire", "cnn-train", "transformer-train"};
  return all;
}

/// The graph of kind `kind`; std::invalid_argument for an unknown kind.
inline graph generate(std::string_view kind, std::size_t vertices, std::uint64_t seed) {
  if (kind == "layered") return layered(vertices, seed);
  if (kind == "randwire") return randwire(vertices, seed);
  if (kind == "cnn-train") return cnn_train(vertices, seed);
  if (kind == "transformer-train") return transformer_train(vertices, seed);
  throw std::invalid_argument("unknown graph kind '" + std::string(kind) + "'");
}

}  // namespace graph_gen
