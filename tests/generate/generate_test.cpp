// The graph generators (examples/generate/): deterministic by seed, about the
// size asked for, valid memopt-graph/1 that memopt::io reads back, and
// training graphs whose backward reads the forward's activations and whose
// results are the weights' gradients.
#include <generate/generators.hpp>

#include <memopt/io/graph_file.hpp>
#include <memopt/liveness.hpp>

#include <doctest/doctest.h>

#include <set>
#include <sstream>
#include <string>

namespace {

std::string text_of(const graph_gen::graph& g) {
  std::ostringstream out;
  graph_gen::write_graph(out, g);
  return out.str();
}

}  // namespace

TEST_CASE("generate: every kind is deterministic by seed, about the size asked for, and reads back") {
  for (const auto& kind : graph_gen::kinds()) {
    for (const std::size_t vertices : {50, 2000}) {
      INFO(kind << " " << vertices);
      const auto text = text_of(graph_gen::generate(kind, vertices, 7));
      CHECK(text == text_of(graph_gen::generate(kind, vertices, 7)));
      CHECK(text != text_of(graph_gen::generate(kind, vertices, 8)));
      const auto g = memopt::io::parse_graph(text);  // refuses a cycle, a bad reference, a duplicate name
      if (vertices >= 1000) {  // smaller ones are a stage, a block or a layer at least
        CHECK(num_vertices(g) >= vertices * 9 / 10);
        CHECK(num_vertices(g) <= vertices * 11 / 10);
      }
      CHECK(memopt::liveness(g, memopt::program_order(g)).peak_bytes > 0);
    }
  }
}

TEST_CASE("generate: a training step's backward reads forward activations, its results are weight gradients") {
  for (const std::string kind : {"cnn-train", "transformer-train"}) {
    INFO(kind);
    const auto g = graph_gen::generate(kind, 3000, 1);
    std::size_t backward_reading_forward = 0, weights = 0;
    for (const auto& n : g.nodes) {
      weights += n.persistent ? 1 : 0;
      if (n.phase != "backward") continue;
      for (const auto& [producer, port] : n.inputs) {
        const auto& p = g.nodes[producer];
        if (p.phase == "forward" && p.op != "parameter") ++backward_reading_forward;
      }
    }
    CHECK(backward_reading_forward > 100);
    // One gradient per weight, and the loss: every graph output.
    CHECK(g.outputs.size() == weights + 1);
    std::set<std::size_t> gradient_producers;
    for (std::size_t k = 1; k < g.outputs.size(); ++k) {
      CHECK(g.nodes[g.outputs[k].first].phase == "backward");
      gradient_producers.insert(g.outputs[k].first);
    }
    CHECK(!gradient_producers.empty());
  }
}

TEST_CASE("generate: derive_backward sums the gradients of a tensor read twice") {
  graph_gen::graph g;
  const auto x = g.add({.name = "x", .op = "input", .outputs = {16}});
  const auto w = g.add({.name = "w", .op = "parameter", .outputs = {8}, .persistent = true});
  const auto a = g.add({.name = "a", .op = "matmul", .outputs = {16}, .inputs = {{x, 0}, {w, 0}}, .flops = 10});
  const auto b = g.add({.name = "b", .op = "relu", .outputs = {16}, .inputs = {{a, 0}}});
  const auto c = g.add({.name = "c", .op = "add", .outputs = {16}, .inputs = {{a, 0}, {b, 0}}});
  const auto loss = g.add({.name = "loss", .op = "sum", .outputs = {4}, .inputs = {{c, 0}}});
  g.outputs.push_back({loss, 0});
  using graph_gen::saves;
  graph_gen::derive_backward(g, {{a, saves::inputs}, {b, saves::output}, {c, saves::nothing}, {loss, saves::inputs}});
  std::vector<std::string> names;
  for (std::size_t v = loss + 1; v < g.nodes.size(); ++v) names.push_back(g.nodes[v].name);
  // loss, then c (grads for a and b), b (a second grad for a: summed), then a (w's gradient only: x is data).
  CHECK(names == std::vector<std::string>{"loss_backward", "c_backward", "b_backward", "a_grad_sum9", "a_backward"});
  const auto& sum = g.nodes[loss + 4];
  CHECK(sum.inputs == std::vector<graph_gen::tensor>{{loss + 2, 0}, {loss + 3, 0}});
  const auto& a_backward = g.nodes[loss + 5];
  CHECK(a_backward.inputs == std::vector<graph_gen::tensor>{{loss + 4, 0}, {x, 0}, {w, 0}});
  CHECK(a_backward.outputs == std::vector<std::uint64_t>{8});
  CHECK(a_backward.flops == 20);
  CHECK(g.outputs == std::vector<graph_gen::tensor>{{loss, 0}, {loss + 5, 0}});
}
