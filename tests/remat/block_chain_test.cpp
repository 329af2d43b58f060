// Rematerialisation on chains of blocks: the chain a residual network reduces
// to, stage by stage with the sizes the programme counts (hand-checked);
// the programme against an enumeration of every schedule of its family;
// Chen's sqrt(n) point on long residual chains; plans on small random
// training graphs against the exhaustive optimum; the shipped training
// graphs; bad input.
#include "../support/fewest_extra_flops.hpp"
#include "../support/random_training.hpp"

#include <memopt/io/graph_file.hpp>
#include <memopt/liveness.hpp>
#include <memopt/remat.hpp>
#include <memopt/rewrite.hpp>

#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <random>
#include <span>
#include <string>
#include <vector>

namespace rw = memopt::rewrite;
namespace remat = memopt::remat;

namespace {

/// n residual blocks: h_i = conv(a_(i-1)), a_i = add(h_i, a_(i-1)) (x = a_0),
/// a loss, and the backward: g_n from the loss, then per block gh_i from g_i
/// and h_i, dw_i from gh_i and a_(i-1), g_(i-1) from gh_i and g_i. Every
/// activation and gradient `bytes`; conv 10 flops, add 1. Outputs: the loss,
/// g_0 and the weight gradients (8 bytes each).
memopt::io::file_graph residual_chain(std::size_t n, std::uint64_t bytes = 100) {
  const auto a = [](std::size_t i) { return i == 0 ? std::string("x") : "a" + std::to_string(i); };
  const std::string b = std::to_string(bytes);
  std::string nodes = R"([{"name": "x", "op": "input", "outputs": [)" + b + "]}";
  std::string outputs = R"("loss:0", "g0:0")";
  for (std::size_t i = 1; i <= n; ++i) {
    const std::string k = std::to_string(i);
    nodes += R"(, {"name": "w)" + k + R"(", "op": "parameter", "persistent": true, "outputs": [8]})";
    nodes += R"(, {"name": "h)" + k + R"(", "op": "conv", "outputs": [)" + b + R"(], "flops": 10, "inputs": [")" + a(i - 1) +
             R"(:0", "w)" + k + R"(:0"]})";
    nodes += R"(, {"name": ")" + a(i) + R"(", "op": "add", "outputs": [)" + b + R"(], "flops": 1, "inputs": ["h)" + k + R"(:0", ")" +
             a(i - 1) + R"(:0"]})";
  }
  nodes += R"(, {"name": "loss", "op": "loss", "outputs": [4], "inputs": [")" + a(n) + R"(:0"]})";
  nodes += R"(, {"name": "g)" + std::to_string(n) + R"(", "op": "loss_grad", "outputs": [)" + b + R"(], "inputs": ["loss:0", ")" +
           a(n) + R"(:0"]})";
  for (std::size_t i = n; i >= 1; --i) {
    const std::string k = std::to_string(i), g = "g" + k;
    nodes += R"(, {"name": "gh)" + k + R"(", "op": "add_grad", "outputs": [)" + b + R"(], "inputs": [")" + g + R"(:0", "h)" + k + R"(:0"]})";
    nodes += R"(, {"name": "dw)" + k + R"(", "op": "conv_grad_w", "outputs": [8], "inputs": ["gh)" + k + R"(:0", ")" + a(i - 1) + R"(:0"]})";
    nodes += R"(, {"name": "g)" + std::to_string(i - 1) + R"(", "op": "conv_grad_x", "outputs": [)" + b + R"(], "inputs": ["gh)" + k +
             R"(:0", ")" + g + R"(:0", "w)" + k + R"(:0"]})";
    outputs += R"(, "dw)" + k + R"(:0")";
  }
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "residual", "nodes": )" + nodes + R"(], "outputs": [)" +
                                 outputs + "]}");
}

std::vector<std::size_t> index_order(const rw::graph_facts& f) {
  std::vector<std::size_t> order(f.size());
  for (std::size_t v = 0; v < order.size(); ++v) order[v] = v;
  return order;
}

std::vector<std::string> names(const rw::graph_facts& f, const std::vector<std::size_t>& vertices) {
  std::vector<std::string> out;
  for (const std::size_t v : vertices) out.push_back(f.name[v]);
  return out;
}

/// The plan's peak measured again on the rewritten graph, which it must pass
/// check_plan on and be run in a topological order of.
std::uint64_t measured_peak(const rw::graph_facts& f, const remat::remat_result& r) {
  REQUIRE(rw::check_plan(f, r.plan).empty());
  const auto h = rw::apply(f, r.plan);
  std::vector<std::size_t> order;
  for (const auto& ref : r.order) order.push_back(ref.added ? f.size() + ref.index : ref.index);
  REQUIRE(memopt::is_topological_order(h, order));
  return memopt::liveness(h, order).peak_bytes;
}

/// The least forward flops of the programme's family by enumeration, with
/// the programme's own count of bytes (header comment of block_chain.hpp),
/// sizes in bytes: every choice at every state, no memo, no pruning.
class family {
 public:
  explicit family(const remat::block_chain& c) : c_(c) {}

  double least(std::size_t s, std::size_t t, std::uint64_t m) const {
    const std::size_t n = c_.stages.size();
    const auto& st = c_.stages;
    const std::uint64_t a = s == 0 ? 0 : st[s - 1].output;
    const auto staying = [&](std::size_t u) {
      std::uint64_t k = c_.kept, x = 0;
      for (std::size_t j = u + 1; j <= n; ++j) k += st[j - 1].kept;
      for (std::size_t j = 1; j <= u; ++j) x += st[j - 1].fixed;
      return k + x;
    };
    const std::uint64_t held = staying(t) + st[t - 1].gradients_in;
    double best = inf;
    if (t == s + 1) {
      const bool rerun = t == n || st[t - 1].backward_reads_it;
      if (a + held + (rerun ? st[t - 1].forward_peak_saving : 0) <= m && a + staying(t) + st[t - 1].backward_peak <= m) {
        best = rerun ? st[t - 1].flops : 0;
      }
      return best;
    }
    if (a + held + st[s].forward_peak_saving <= m && a + staying(s + 1) + st[s].backward_peak <= m && a + st[s].saved <= m) {
      best = std::min(best, st[s].flops + least(s + 1, t, m - a - st[s].saved));
    }
    double forward = 0;
    for (std::size_t k = s + 1; k < t; ++k) {
      if (a + held + (k - 1 > s ? st[k - 2].output : 0) + st[k - 1].forward_peak > m) break;
      forward += st[k - 1].flops;
      best = std::min(best, forward + least(k, t, m - a) + least(s, k, m));
    }
    return best;
  }

  static constexpr double inf = std::numeric_limits<double>::infinity();

 private:
  const remat::block_chain& c_;
};

}  // namespace

TEST_CASE("block chain: a residual chain is found stage by stage, with the sizes the programme counts") {
  const auto g = residual_chain(3);
  const auto f = rw::read_facts(g);
  const auto c = remat::block_chain_of(f, index_order(f), {});
  REQUIRE(c.has_value());
  CHECK(names(f, c->persistent) == std::vector<std::string>{"w1", "w2", "w3"});
  REQUIRE(c->stages.size() == 5);
  // Cuts where one remakable storage crosses (x is an input: no copy remakes
  // it, it stays): after h1, after each a_i, before the loss.
  CHECK(names(f, c->stages[0].forward) == std::vector<std::string>{"x", "h1"});
  CHECK(names(f, c->stages[0].rerun) == std::vector<std::string>{"h1"});
  CHECK(names(f, c->stages[1].forward) == std::vector<std::string>{"a1"});
  CHECK(names(f, c->stages[2].forward) == std::vector<std::string>{"h2", "a2"});
  CHECK(names(f, c->stages[3].forward) == std::vector<std::string>{"h3", "a3"});
  CHECK(names(f, c->stages[4].forward) == std::vector<std::string>{"loss"});
  // A backward vertex goes with the last stage it reads: dw2 reads a1, gh2 reads h2.
  CHECK(names(f, c->stages[0].backward) == std::vector<std::string>{"gh1", "dw1", "g0"});
  CHECK(names(f, c->stages[1].backward) == std::vector<std::string>{"dw2"});
  CHECK(names(f, c->stages[2].backward) == std::vector<std::string>{"dw3", "gh2", "g1"});
  CHECK(names(f, c->stages[3].backward) == std::vector<std::string>{"g3", "gh3", "g2"});
  CHECK(c->stages[4].backward.empty());
  CHECK(c->kept == 4);  // the loss
  CHECK(c->stages[0].fixed == 100);  // x
  // Stage 3 (h2, a2): output a2; its backward reads h2 (saved) and a2. Its
  // forward holds h2 and a2 (200); its backward starts with h2, a2 and the
  // gradients gh3 and g2 from stage 4's, and dw3 is made with all four (408).
  const auto& s3 = c->stages[2];
  CHECK(s3.output == 100);
  CHECK(s3.saved == 100);
  CHECK(s3.forward_peak == 200);
  CHECK(s3.forward_peak_saving == 200);
  CHECK(s3.gradients_in == 200);
  CHECK(s3.backward_peak == 408);
  CHECK(s3.kept == 8);
  CHECK(s3.flops == 11);
  CHECK(s3.backward_reads_it);
  CHECK(c->stages[1].backward_reads_it);         // dw2 reads a1: the stage reruns before its backward
  CHECK_FALSE(c->stages[4].backward_reads_it);   // the loss's stage has no backward vertex
  // Everything fits at the program order's peak: no copy.
  const auto peak = memopt::liveness(g, std::span<const std::size_t>(index_order(f))).peak_bytes;
  const auto all = remat::rematerialize_blocks(f, *c, peak);
  REQUIRE(all.has_value());
  CHECK(all->extra_flops == 0);
  CHECK(all->method == "blocks");
  CHECK(all->planned_peak <= peak);
  CHECK(measured_peak(f, *all) == all->planned_peak);
}

TEST_CASE("block chain: the programme finds the least flops of its family, by enumeration on 300 random chains") {
  std::mt19937_64 rng(20261126);
  std::size_t feasible = 0, recomputing = 0;
  for (int trial = 0; trial < 300; ++trial) {
    INFO("trial " << trial);
    const std::size_t n = 2 + static_cast<std::size_t>(trial % 5);
    remat::block_chain c;
    std::uniform_int_distribution<std::uint64_t> bytes(1, 12);
    for (std::size_t i = 0; i < n; ++i) {
      remat::block_stage st;
      st.output = i + 1 == n ? 0 : bytes(rng);
      st.saved = bytes(rng) / 2;
      st.forward_peak = st.output + bytes(rng) / 3;
      st.forward_peak_saving = st.forward_peak + st.saved;
      st.gradients_in = i + 1 == n ? 0 : bytes(rng);
      st.kept = bytes(rng) / 4;
      st.backward_peak = st.saved + st.gradients_in + st.kept + bytes(rng);
      st.fixed = bytes(rng) / 6;
      st.flops = static_cast<double>(std::uniform_int_distribution<int>(1, 20)(rng));
      st.backward_reads_it = std::bernoulli_distribution(0.8)(rng);
      c.stages.push_back(st);
    }
    c.kept = 1;
    const family all(c);
    for (const std::uint64_t budget : {20, 35, 50, 80}) {
      INFO("budget " << budget);
      const auto s = remat::solve_blocks(c, budget);
      const double least = all.least(0, n, budget);
      REQUIRE(s.exact);  // units of a byte: nothing rounded
      CHECK(s.feasible == (least != family::inf));
      if (!s.feasible) continue;
      ++feasible;
      CHECK(s.forward_flops == least);
      double once = 0;
      for (const auto& st : c.stages) once += st.flops;
      CHECK(s.extra_flops == doctest::Approx(least - once));
      recomputing += s.extra_flops > 0;
      // Each backward stage once, in turn; the last stage's forward first of all backward.
      std::size_t next = n;
      for (const remat::block_step step : s.steps) {
        if (step.op == remat::block_op::backward) CHECK(step.stage == next--);
      }
      CHECK(next == 0);
    }
  }
  CHECK(feasible > 500);
  CHECK(recomputing > 100);
}

TEST_CASE("block chain: n residual blocks in about 2 sqrt(n) blocks of activations for at most one more forward pass") {
  for (const std::size_t n : {16, 36, 64}) {
    INFO("n = " << n);
    const auto g = residual_chain(n);
    const auto f = rw::read_facts(g);
    const auto c = remat::block_chain_of(f, index_order(f), {});
    REQUIRE(c.has_value());
    CHECK(c->stages.size() == std::min<std::size_t>(n + 1, 64));  // cuts carry at least a 64th of the flops
    const auto budget = static_cast<std::uint64_t>(2 * std::sqrt(static_cast<double>(n)) + 6) * 100;
    const auto r = remat::rematerialize_blocks(f, *c, budget);
    REQUIRE(r.has_value());
    CHECK(r->planned_peak <= budget);
    CHECK(measured_peak(f, *r) == r->planned_peak);
    CHECK(r->extra_flops > 0);
    CHECK(r->extra_flops <= 11.0 * static_cast<double>(n));  // one forward pass
    // Everything kept would take n blocks' activations.
    const auto before = memopt::liveness(g, std::span<const std::size_t>(index_order(f))).peak_bytes;
    CHECK(before > 2 * n * 100);
  }
}

TEST_CASE("block chain: plans on 200 small random training graphs fit, replay, and never beat the exhaustive optimum") {
  std::mt19937_64 rng(5);
  std::size_t chains = 0, fits = 0, optimal = 0, beats_planner = 0, ratios = 0, taken = 0;
  double ratio_sum = 0;
  for (int trial = 0; trial < 200; ++trial) {
    INFO("trial " << trial);
    auto g = memopt::testing::training_graph(rng, 3 + static_cast<std::size_t>(trial % 6));
    for (const auto v : boost::make_iterator_range(vertices(g))) {
      if (g[v].name == "loss") g[v].outputs[0].live_out = true;  // a training graph outputs its loss
    }
    const auto f = rw::read_facts(g);
    const auto program = index_order(f);
    const auto before = memopt::liveness(g, std::span<const std::size_t>(program)).peak_bytes;
    const auto floor = remat::rematerialisation_floor(f).bytes;
    const std::uint64_t budget = std::uniform_int_distribution<std::uint64_t>(floor, before)(rng);
    const auto c = remat::block_chain_of(f, program, {});
    if (!c) continue;
    ++chains;
    const auto r = remat::rematerialize_blocks(f, *c, budget);
    if (!r) continue;
    CHECK(measured_peak(f, *r) == r->planned_peak);
    if (r->planned_peak > budget) continue;
    ++fits;
    const double exact = memopt::testing::fewest_extra_flops(f, budget);
    CHECK(r->extra_flops >= exact);
    optimal += r->extra_flops == exact;
    if (exact > 0) {
      ++ratios;
      ratio_sum += r->extra_flops / exact;
    }
    const auto planned = remat::rematerialize(f, program, {.budget = budget});
    beats_planner += planned.planned_peak > budget || r->extra_flops < planned.extra_flops;
    // The best of the planners takes it when it is cheaper.
    const auto best = remat::rematerialize_best(f, {program}, {.budget = budget});
    CHECK(best.planned_peak <= budget);
    CHECK(best.extra_flops <= r->extra_flops);
    taken += best.method.starts_with("blocks");
  }
  MESSAGE(chains << " block chains, " << fits << " plans fit: " << optimal << " optimal, extra flops "
                 << ratio_sum / static_cast<double>(std::max<std::size_t>(ratios, 1)) << " times the optimum on average where copies are needed ("
                 << ratios << "); cheaper than the eviction planner " << beats_planner << " times, taken by rematerialize_best "
                 << taken << " times");
  CHECK(chains == 200);
  CHECK(fits > 80);
  CHECK(beats_planner > 0);
  CHECK(taken > 0);
}

TEST_CASE("block chain: the shipped training graphs reduce to chains of blocks, and their plans replay") {
  struct expected {
    const char* name;
    std::size_t stages;
  };
  for (const expected& e : {expected{"resnet18_train_b32", 10}, expected{"mobilenet_v2_train_b32", 26},
                             expected{"transformer_train_b32", 9}, expected{"randwire_ws_s0_train_b32", 7}}) {
    INFO(e.name);
    const auto g = memopt::io::read_graph(std::string(MEMOPT_DATA_DIR) + "/" + e.name + ".json");
    const auto f = rw::read_facts(g);
    const auto program = index_order(f);
    const auto c = remat::block_chain_of(f, program, {});
    REQUIRE(c.has_value());
    CHECK(c->stages.size() == e.stages);
    const auto before = memopt::liveness(g, std::span<const std::size_t>(program)).peak_bytes;
    // Random draws (the transformer's dropout masks) run once; the stages rerun the rest.
    const auto r = remat::rematerialize_blocks(f, *c, before * 3 / 4);
    REQUIRE(r.has_value());
    CHECK(measured_peak(f, *r) == r->planned_peak);
    CHECK(r->planned_peak < before);
  }
}

TEST_CASE("block chain: bad input is refused, graphs that are not block chains are not taken for one") {
  const auto f = rw::read_facts(residual_chain(2));
  auto order = index_order(f);
  std::swap(order[1], order[2]);  // h1 before w1
  CHECK_THROWS_WITH_AS((void)remat::block_chain_of(f, order, {}), "bad rewrite plan: block_chain_of: the order runs 'h1' before its input 'w1'",
                       rw::bad_plan_error);
  CHECK_THROWS_AS((void)remat::block_chain_of(f, {0, 1}, {}), rw::bad_plan_error);
  CHECK_THROWS_AS((void)remat::block_chain_of(f, index_order(f), {.feed = {1000}}), rw::bad_plan_error);
  CHECK_THROWS_AS((void)remat::solve_blocks(remat::block_chain{}, 100), rw::bad_plan_error);
  // No output that anything reads: no loss to turn around at.
  const auto inference = rw::read_facts(memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "inference", "nodes": [
    {"name": "x", "op": "input", "outputs": [4]}, {"name": "a", "op": "f", "outputs": [4], "inputs": ["x:0"]},
    {"name": "b", "op": "f", "outputs": [4], "inputs": ["a:0"]}], "outputs": ["b:0"]})"));
  CHECK_FALSE(remat::block_chain_of(inference, index_order(inference), {}).has_value());
  // A backward vertex reading an activation from two stages back: not a block chain.
  const auto skip = rw::read_facts(memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "skip", "nodes": [
    {"name": "x", "op": "input", "outputs": [4]}, {"name": "a", "op": "f", "outputs": [4], "flops": 1, "inputs": ["x:0"]},
    {"name": "b", "op": "f", "outputs": [4], "flops": 1, "inputs": ["a:0"]}, {"name": "c", "op": "f", "outputs": [4], "flops": 1, "inputs": ["b:0"]},
    {"name": "loss", "op": "loss", "outputs": [4], "inputs": ["c:0"]},
    {"name": "gc", "op": "g", "outputs": [4], "inputs": ["loss:0", "c:0", "a:0"]},
    {"name": "gb", "op": "g", "outputs": [4], "inputs": ["gc:0", "a:0"]}], "outputs": ["loss:0", "gb:0"]})"));
  CHECK_FALSE(remat::block_chain_of(skip, index_order(skip), {}).has_value());
}
