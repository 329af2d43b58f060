// The simulation family (simulate/): hand-checked runs with exact times and
// bytes under fixed costs, the seed's ready policies case by case, send and
// receive pairs, memory per device with the one model, Merge, pruning and the
// errors.
#include <memopt/io/graph_file.hpp>
#include <memopt/simulate.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <boost/graph/adjacency_list.hpp>

#include <algorithm>
#include <cstdint>
#include <filesystem>
#include <sstream>
#include <string>
#include <vector>

namespace sim = memopt::sim;

namespace {

memopt::io::file_graph graph_of(const std::string& nodes, const std::string& outputs = "[]") {
  return memopt::io::parse_graph(R"({"format": "memopt-graph/1", "name": "t", "nodes": )" + nodes +
                                 R"(, "outputs": )" + outputs + "}");
}

/// Two devices A and B joined by 1e8 B/s links with 2 us latency.
sim::machine two_devices() {
  sim::machine m;
  m.devices = {{.name = "A"}, {.name = "B"}};
  m.default_link = {.bytes_per_s = 1e8, .latency_us = 2};
  return m;
}

std::vector<std::string> run_names(const sim::simulation_result& r) {
  std::vector<std::string> names;
  for (const auto& run : r.runs) names.emplace_back(r.graph.name(run.task));
  return names;
}

const sim::task_run& run_of(const sim::simulation_result& r, const std::string& name) {
  const auto it = std::ranges::find_if(r.runs, [&](const auto& run) { return r.graph.name(run.task) == name; });
  REQUIRE(it != r.runs.end());
  return *it;
}

const std::string chain = R"([
  {"name": "a", "op": "input", "outputs": [10]},
  {"name": "b", "op": "op", "outputs": [20], "inputs": ["a:0"]},
  {"name": "c", "op": "op", "outputs": [5], "inputs": ["b:0"]},
  {"name": "d", "op": "op", "outputs": [30], "inputs": ["c:0"]}])";

/// x feeds y (on A) and z (on B); w on A joins them.
const std::string fork_join = R"([
  {"name": "x", "op": "op", "outputs": [100], "device": "A"},
  {"name": "y", "op": "op", "outputs": [40], "inputs": ["x:0"], "device": "A"},
  {"name": "z", "op": "op", "outputs": [50], "inputs": ["x:0"], "device": "B"},
  {"name": "w", "op": "op", "outputs": [10], "inputs": ["y:0", "z:0"], "device": "A"}])";

}  // namespace

TEST_CASE("an op's scratch is in its device's memory during its run only, with or without unread outputs") {
  // a (10) -> b (20, scratch 100) -> c (5, unread): steps 10, 130, 25; c dropped without unread outputs.
  const auto g = graph_of(R"([
    {"name": "a", "op": "input", "outputs": [10]},
    {"name": "b", "op": "op", "outputs": [20], "inputs": ["a:0"], "scratch_bytes": 100},
    {"name": "c", "op": "op", "outputs": [5], "inputs": ["b:0"]}])");
  const sim::machine m;
  const auto r = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{10}, sim::fifo{});
  CHECK(r.devices[0].memory.timeline == std::vector<std::uint64_t>{10, 130, 25});
  CHECK(sim::tensors_at_peak(r, 0).size() == 2);  // a and b; the scratch is no tensor
  const auto grappler = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{10}, sim::fifo{},
                                      {.memory = {.count_unread_outputs = false}});
  CHECK(grappler.devices[0].memory.timeline == std::vector<std::uint64_t>{10, 130, 20});
}

TEST_CASE("a chain on one device: times from a fixed cost, the liveness peak") {
  const auto g = graph_of(chain, R"(["d:0"])");
  const sim::machine m;
  const auto r = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{10}, sim::fifo{});
  CHECK(run_names(r) == std::vector<std::string>{"a", "b", "c", "d"});
  CHECK(r.makespan_us == 40);
  CHECK(run_of(r, "c").start_us == 20);
  CHECK(run_of(r, "c").end_us == 30);
  REQUIRE(r.devices.size() == 1);
  CHECK(r.devices[0].busy_us == 40);
  CHECK(r.devices[0].idle_us == 0);
  CHECK(r.devices[0].utilisation == 1);
  CHECK(r.devices[0].peak_bytes() == 35);
  CHECK(r.devices[0].memory.peak_step == 3);
  CHECK(r.transfer_runs.empty());
  CHECK(r.policy == "fifo");
}

TEST_CASE("a fork/join on one device and on two: transfers, busy and idle time, peaks per device") {
  const auto g = graph_of(fork_join);
  SUBCASE("one device") {
    const sim::machine m;
    const auto r = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{10}, sim::fifo{});
    CHECK(run_names(r) == std::vector<std::string>{"x", "y", "z", "w"});
    CHECK(r.makespan_us == 40);
    CHECK(r.devices[0].peak_bytes() == 190);  // x, y and z live while z runs
  }
  SUBCASE("two devices") {
    const auto m = two_devices();
    const auto placement = sim::placement_by_device_field(g, m);
    CHECK(placement == std::vector<std::size_t>{0, 0, 1, 0});
    const auto r = sim::simulate(g, m, placement, sim::fixed_cost{10}, sim::fifo{});
    CHECK(run_names(r) == std::vector<std::string>{"x", "y", "Send_x_0_from_A_to_B", "Recv_x_0_on_B", "z",
                                                   "Send_z_0_from_B_to_A", "Recv_z_0_on_A", "w"});
    CHECK(run_of(r, "Send_x_0_from_A_to_B").start_us == 10);
    CHECK(run_of(r, "Send_x_0_from_A_to_B").end_us == 13);  // 2 us + 100 B at 1e8 B/s
    CHECK(run_of(r, "z").start_us == 13);
    CHECK(run_of(r, "Send_z_0_from_B_to_A").end_us == 25.5);
    CHECK(run_of(r, "w").start_us == 25.5);
    CHECK(r.makespan_us == 35.5);
    CHECK(r.devices[0].busy_us == 30);
    CHECK(r.devices[0].idle_us == 5.5);
    CHECK(r.devices[1].busy_us == 10);
    REQUIRE(r.links.size() == 2);
    CHECK(r.links[0].bytes == 100);
    CHECK(r.links[1].bytes == 50);
    CHECK(r.transfer_runs.size() == 2);
    // A: x until its send ends, y until w, z's copy from its arrival.
    CHECK(r.devices[0].peak_bytes() == 140);
    CHECK(r.devices[0].memory.timeline == std::vector<std::uint64_t>{100, 140, 140, 90, 100});
    // B: x's copy, then z with it.
    CHECK(r.devices[1].peak_bytes() == 150);
  }
}

TEST_CASE("device fields match device names as TensorFlow matches them, one that matches none or several is refused") {
  const auto g = graph_of(R"([
    {"name": "x", "op": "op", "outputs": [8], "device": "/job:localhost/replica:0/task:0/device:GPU:1"},
    {"name": "y", "op": "op", "outputs": [8], "inputs": ["x:0"], "device": "/cpu:0"},
    {"name": "z", "op": "op", "outputs": [8], "inputs": ["y:0"]}])");
  sim::machine m;
  m.devices = {{.name = "/gpu:0"}, {.name = "/GPU:1"}, {.name = "/job:localhost/replica:0/task:0/device:CPU:0"}};
  // A partial name matches a full one that agrees with it, either way round; no field: the first device.
  CHECK(sim::placement_by_device_field(g, m) == std::vector<std::size_t>{1, 2, 0});
  CHECK(m.devices_matching("/device:GPU:0") == std::vector<std::size_t>{0});
  CHECK(m.devices_matching("/device:GPU:*") == std::vector<std::size_t>{0, 1});
  CHECK(m.devices_matching("gpu0").empty());
  const auto refusal = [&](const sim::machine& machine) -> sim::unmatched_device_error {
    try {
      (void)sim::placement_by_device_field(g, machine);
    } catch (const sim::unmatched_device_error& e) {
      return e;
    }
    FAIL("no unmatched_device_error");
    return {0, "", {}};
  };
  m.devices[1].name = "/gpu:2";
  const auto none = refusal(m);
  CHECK(none.vertex == 0);
  CHECK(none.device == "/job:localhost/replica:0/task:0/device:GPU:1");
  CHECK(none.matches.empty());
  CHECK(std::string(none.what()) ==
        "vertex 0 is placed on '/job:localhost/replica:0/task:0/device:GPU:1', which matches no device of the machine");
  m.devices[1].name = "/job:localhost/device:GPU:1";
  m.devices.push_back({.name = "/task:0/gpu:1"});
  const auto several = refusal(m);
  CHECK(several.matches == std::vector<std::string>{"/job:localhost/device:GPU:1", "/task:0/gpu:1"});
  CHECK(std::string(several.what()) == "vertex 0 is placed on '/job:localhost/replica:0/task:0/device:GPU:1', "
                                       "which matches several devices: '/job:localhost/device:GPU:1' '/task:0/gpu:1'");
}

TEST_CASE("a producer read by two consumers on another device is sent once") {
  const auto g = graph_of(R"([
    {"name": "x", "op": "op", "outputs": [8, 16], "device": "A"},
    {"name": "p", "op": "op", "outputs": [1], "inputs": ["x:0"], "device": "B"},
    {"name": "q", "op": "op", "outputs": [1], "inputs": ["x:0", "x:1"], "device": "B"}])");
  const auto m = two_devices();
  const auto r = sim::simulate(g, m, sim::placement_by_device_field(g, m), sim::fixed_cost{1}, sim::fifo{});
  CHECK(r.graph.transfers == 2);  // one per port, however many readers
  CHECK(r.transfer_runs.size() == 2);
  CHECK(r.links.at(0).bytes == 24);
  std::vector<std::string> names = run_names(r);
  CHECK(std::ranges::count(names, "Recv_x_0_on_B") == 1);
  CHECK(std::ranges::count(names, "Recv_x_1_on_B") == 1);
}

TEST_CASE("device names in transfer names: '/' and ':' written '_'") {
  CHECK(sim::sanitized_device_name("/job:w/replica:0/task:0/device:GPU:0") == "_job_w_replica_0_task_0_device_GPU_0");
}

TEST_CASE("sum and roofline cost models: compute and memory parts apart, added or overlapped") {
  const sim::device_spec d{.name = "d", .flops_per_s = 1e12, .bytes_per_s = 1e11};
  const sim::op_profile op{.name = "mm", .op_type = "matmul", .flops = 2e6, .bytes_read = 6e4, .bytes_written = 4e4};
  const auto sum = sim::sum_cost{}.cost(op, d);
  CHECK(sum.compute_us == doctest::Approx(2));
  CHECK(sum.memory_us == doctest::Approx(1));
  CHECK(sum.total_us == doctest::Approx(3));
  CHECK(sim::roofline_cost{}.cost(op, d).total_us == doctest::Approx(2));
  sim::table_cost<sim::roofline_cost> table;
  table.by_type["matmul"] = 7;
  table.by_name["mm"] = 9;
  CHECK(table.cost(op, d).total_us == 9);
  table.by_name.clear();
  CHECK(table.cost(op, d).total_us == 7);
  table.by_type.clear();
  CHECK(table.cost(op, d).total_us == doctest::Approx(2));

  // A simulated graph: flops and bytes from the file.
  const auto g = graph_of(R"([
    {"name": "x", "op": "input", "outputs": [40000]},
    {"name": "y", "op": "matmul", "outputs": [20000], "inputs": ["x:0"], "flops": 3e6}])");
  sim::machine m;
  m.devices[0] = d;
  const auto by_sum = sim::simulate(g, m, sim::one_device(g), sim::sum_cost{}, sim::fifo{});
  const auto by_roofline = sim::simulate(g, m, sim::one_device(g), sim::roofline_cost{}, sim::fifo{});
  // x writes 40 kB (0.4 us); y computes 3 us and moves 60 kB (0.6 us).
  CHECK(by_sum.makespan_us == doctest::Approx(4.0));
  CHECK(by_roofline.makespan_us == doctest::Approx(3.4));
  CHECK(run_of(by_sum, "y").cost.compute_us == doctest::Approx(3));
  CHECK(run_of(by_sum, "y").cost.memory_us == doctest::Approx(0.6));
  CHECK(by_sum.devices[0].compute_us == doctest::Approx(3));
  CHECK(by_sum.devices[0].memory_us == doctest::Approx(1.0));
}

namespace {

/// Tasks with given names, kinds, devices and ready times, for the policies.
struct policy_bench {
  sim::task_graph graph;
  std::vector<double> ready;
  void add(const std::string& name, double ready_us, sim::task_kind kind = sim::task_kind::op,
           std::uint32_t device = 0, std::size_t rank = 0) {
    graph.add_task({.kind = kind, .device = device, .rank = rank}, name, "");
    ready.push_back(ready_us);
  }
  template <class Policy>
  std::vector<std::string> order(Policy policy) const {
    const sim::ready_view view(graph, ready);
    for (std::size_t t = 0; t < graph.tasks.size(); ++t) policy.push(t, view);
    std::vector<std::string> names;
    while (!policy.empty()) names.emplace_back(graph.name(policy.pop(view)));
    return names;
  }
};

}  // namespace

TEST_CASE("ready policies: the seed's orders on ops with given ready times") {
  policy_bench b;
  b.add("c", 5, sim::task_kind::op, 0, 0);
  b.add("b", 1, sim::task_kind::op, 0, 2);
  b.add("a", 1, sim::task_kind::op, 0, 1);
  b.add("d", 0.5, sim::task_kind::op, 0, 3);
  CHECK(b.order(sim::fifo{}) == std::vector<std::string>{"c", "b", "a", "d"});
  CHECK(b.order(sim::lifo{}) == std::vector<std::string>{"d", "a", "b", "c"});
  CHECK(b.order(sim::first_ready{}) == std::vector<std::string>{"d", "a", "b", "c"});
  CHECK(b.order(sim::program{}) == std::vector<std::string>{"c", "a", "b", "d"});
  // A user's priority: larger ranks first; ties go first-ready.
  b.add("e", 0, sim::task_kind::op, 0, 3);
  const auto by_rank_desc = [](const sim::task& t, double) { return -static_cast<double>(t.rank); };
  CHECK(b.order(sim::priority(by_rank_desc)) == std::vector<std::string>{"e", "d", "b", "a", "c"});
}

TEST_CASE("ready policies: pushes while a task runs never displace it (LIFO, first-ready)") {
  policy_bench b;
  b.add("late", 9);
  b.add("early", 1);
  const sim::ready_view view(b.graph, b.ready);
  sim::first_ready fr;
  fr.push(0, view);
  CHECK(fr.pop(view) == 0);  // the only one ready when asked
  fr.push(1, view);
  CHECK(fr.pop(view) == 1);
  sim::lifo lifo;
  lifo.push(0, view);
  lifo.push(1, view);
  CHECK(lifo.pop(view) == 1);
  CHECK(lifo.pop(view) == 0);
}

TEST_CASE("composite policy: per-device LIFO for ops, first-ready transfers, sends before receives on ties") {
  policy_bench b;
  b.add("x", 1, sim::task_kind::op, 0);    // device 0, pushed first
  b.add("y", 0, sim::task_kind::op, 0);    // device 0, the LIFO top
  b.add("a", 0, sim::task_kind::op, 1);    // device 1
  b.add("Send_s", 0, sim::task_kind::send, 0);
  b.add("Recv_r", 0, sim::task_kind::recv, 1);
  b.add("Send_t", 0.5, sim::task_kind::send, 1);
  CHECK(b.order(sim::composite{}) ==
        std::vector<std::string>{"Send_s", "Recv_r", "a", "y", "Send_t", "x"});
  // LIFO within a device even when the older op was ready earlier.
  policy_bench c;
  c.add("old", 0, sim::task_kind::op, 0);
  c.add("new", 3, sim::task_kind::op, 0);
  CHECK(c.order(sim::composite{}) == std::vector<std::string>{"new", "old"});
}

TEST_CASE("composite policy across two devices: a simulated run") {
  const auto g = graph_of(fork_join);
  const auto m = two_devices();
  const auto r = sim::simulate(g, m, sim::placement_by_device_field(g, m), sim::fixed_cost{10}, sim::composite{});
  // After x (A, 0-10): y (A) and the send of x are ready at 10; the send goes
  // first, then y (ready at 10) before the receive (ready at 13).
  CHECK(run_names(r) == std::vector<std::string>{"x", "Send_x_0_from_A_to_B", "y", "Recv_x_0_on_B", "z",
                                                 "Send_z_0_from_B_to_A", "Recv_z_0_on_A", "w"});
  CHECK(r.makespan_us == 35.5);
  CHECK(run_of(r, "y").start_us == 10);
  CHECK(run_of(r, "z").start_us == 13);
}

TEST_CASE("persistent buffers are reported apart, the seed's variable and constant op types are persistent") {
  const auto g = graph_of(R"([
    {"name": "w", "op": "parameter", "outputs": [400], "persistent": true},
    {"name": "k", "op": "Const", "outputs": [30]},
    {"name": "x", "op": "input", "outputs": [100]},
    {"name": "y", "op": "op", "outputs": [50], "inputs": ["x:0", "w:0", "k:0"]}])");
  const sim::machine m;
  const auto r = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{1}, sim::fifo{});
  CHECK(r.devices[0].persistent_bytes() == 430);
  CHECK(r.devices[0].peak_bytes() == 150);
}

TEST_CASE("control edges across devices send a token, counted as the seed counts it") {
  const auto g = graph_of(R"([
    {"name": "x", "op": "op", "outputs": [100], "device": "A"},
    {"name": "y", "op": "op", "outputs": [10], "control": ["x"], "device": "B"}])");
  const auto m = two_devices();
  const auto placement = sim::placement_by_device_field(g, m);
  SUBCASE("no bytes by default") {
    const auto r = sim::simulate(g, m, placement, sim::fixed_cost{1}, sim::fifo{});
    CHECK(run_names(r) == std::vector<std::string>{"x", "Send_x_minus1_from_A_to_B", "Recv_x_minus1_on_B", "y"});
    CHECK(run_of(r, "y").start_us == 3);  // latency only
    CHECK(r.devices[1].peak_bytes() == 10);
  }
  SUBCASE("4-byte tokens") {
    sim::simulation_options options;
    options.tasks.control_token_bytes = 4;
    const auto r = sim::simulate(g, m, placement, sim::fixed_cost{1}, sim::fifo{}, options);
    CHECK(run_of(r, "y").start_us == doctest::Approx(3.04));
    CHECK(r.devices[0].peak_bytes() == 104);  // x's output and its token until the send ends
    CHECK(r.devices[1].peak_bytes() == 14);   // the received token while y runs
  }
}

TEST_CASE("Merge runs on each ready input, the conditional's ops all run, as in the seed") {
  const auto g = graph_of(R"([
    {"name": "p", "op": "Placeholder", "outputs": [4]},
    {"name": "sw", "op": "Switch", "outputs": [8, 8], "inputs": ["p:0"]},
    {"name": "t", "op": "Identity", "outputs": [8], "inputs": ["sw:1"]},
    {"name": "f", "op": "Neg", "outputs": [8], "inputs": ["sw:0"]},
    {"name": "m", "op": "Merge", "outputs": [8], "inputs": ["f:0", "t:0"]},
    {"name": "out", "op": "Identity", "outputs": [8], "inputs": ["m:0"]}])");
  const sim::machine m;
  const auto r = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{1}, sim::fifo{});
  CHECK(run_names(r) == std::vector<std::string>{"p", "sw", "t", "f", "m", "m", "out"});
  CHECK(r.makespan_us == 7);
  CHECK(r.not_run.empty());
}

TEST_CASE("fetches prune the graph to what they need, feeds start ready and need no producer") {
  const auto g = graph_of(R"([
    {"name": "a", "op": "op", "outputs": [10]},
    {"name": "b", "op": "op", "outputs": [20], "inputs": ["a:0"]},
    {"name": "c", "op": "op", "outputs": [30], "inputs": ["a:0"]},
    {"name": "d", "op": "op", "outputs": [40], "inputs": ["b:0"]}])");
  const sim::machine m;
  sim::simulation_options options;
  options.tasks.fetch = {3};
  auto r = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{1}, sim::fifo{}, options);
  CHECK(run_names(r) == std::vector<std::string>{"a", "b", "d"});
  options.tasks.feed = {1};
  r = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{1}, sim::fifo{}, options);
  CHECK(run_names(r) == std::vector<std::string>{"b", "d"});
  options.tasks.feed = {1, 1};
  CHECK_THROWS_AS((void)sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{1}, sim::fifo{}, options),
                  sim::bad_simulation_input_error);
}

TEST_CASE("counting unread outputs is an option of the one memory model") {
  const auto g = graph_of(R"([
    {"name": "a", "op": "op", "outputs": [10, 7]},
    {"name": "b", "op": "op", "outputs": [20], "inputs": ["a:0"]}])", R"(["b:0"])");
  const sim::machine m;
  const auto counted = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{1}, sim::fifo{});
  CHECK(counted.devices[0].peak_bytes() == 30);  // a:1 (unread) for a step; a:0 and the fetched b
  CHECK(counted.devices[0].memory.timeline == std::vector<std::uint64_t>{17, 30});
  CHECK(memopt::liveness(g, memopt::program_order(g)).peak_bytes == 30);
  sim::simulation_options seed;
  seed.memory.count_unread_outputs = false;
  const auto uncounted = sim::simulate(g, m, sim::one_device(g), sim::fixed_cost{1}, sim::fifo{}, seed);
  CHECK(uncounted.devices[0].peak_bytes() == 10);  // only a:0, which b reads
  CHECK(memopt::liveness(g, memopt::program_order(g), memopt::identity_index{}, {.count_unread_outputs = false})
            .peak_bytes == 10);
}

TEST_CASE("errors: nothing ready, a placement the machine cannot take, a bad machine") {
  using graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, memopt::tensor_node,
                                      memopt::tensor_edge>;
  graph loop(2);
  loop[0].outputs = {{.bytes = 1}};
  loop[1].outputs = {{.bytes = 1}};
  add_edge(0, 1, loop);
  add_edge(1, 0, loop);
  const sim::machine m;
  CHECK_THROWS_AS((void)sim::simulate(loop, m, sim::one_device(loop), sim::fixed_cost{1}, sim::fifo{}),
                  sim::no_ready_node_error);
  try {
    (void)sim::simulate(loop, m, sim::one_device(loop), sim::fixed_cost{1}, sim::fifo{});
  } catch (const sim::no_ready_node_error& e) {
    CHECK(std::string(e.what()) == "no op is ready at the start: every op waits for an input (vertex 0, vertex 1)");
  }
  const auto g = graph_of(chain);
  const std::vector<std::size_t> bad = {0, 0, 3, 0};
  CHECK_THROWS_AS((void)sim::simulate(g, m, bad, sim::fixed_cost{1}, sim::fifo{}), sim::bad_simulation_input_error);
  const std::vector<std::size_t> short_placement = {0};
  CHECK_THROWS_AS((void)sim::simulate(g, m, short_placement, sim::fixed_cost{1}, sim::fifo{}),
                  sim::bad_simulation_input_error);
  sim::machine broken;
  broken.devices[0].flops_per_s = 0;
  CHECK_THROWS_AS((void)sim::simulate(g, broken, sim::one_device(g), sim::fixed_cost{1}, sim::fifo{}),
                  sim::bad_machine_error);
}

TEST_CASE("the graph's own _Send/_Recv pairs are honoured, not sent again") {
  const auto g = graph_of(R"([
    {"name": "x", "op": "op", "outputs": [100], "device": "A"},
    {"name": "s", "op": "_Send", "outputs": [], "inputs": ["x:0"], "device": "A"},
    {"name": "r", "op": "_Recv", "outputs": [100], "control": ["s"], "device": "B"},
    {"name": "lonely", "op": "_Recv", "outputs": [8], "device": "B"},
    {"name": "y", "op": "op", "outputs": [1], "inputs": ["r:0", "lonely:0"], "device": "B"}])");
  const auto m = two_devices();
  const auto r = sim::simulate(g, m, sim::placement_by_device_field(g, m), sim::fixed_cost{1}, sim::fifo{});
  CHECK(r.graph.transfers == 0);
  CHECK(run_names(r) == std::vector<std::string>{"x", "lonely", "s", "r", "y"});
}

TEST_CASE("a Chrome trace of a run on two devices: trace events with the format's fields") {
  const auto g = graph_of(fork_join);
  const auto m = two_devices();
  const auto r = sim::simulate(g, m, sim::placement_by_device_field(g, m), sim::fixed_cost{10}, sim::fifo{});
  std::ostringstream out;
  sim::write_chrome_trace(out, r, m);
  const auto trace = nlohmann::json::parse(out.str());
  std::size_t slices = 0;
  std::size_t counters = 0;
  for (const auto& e : trace.at("traceEvents")) {
    for (const char* field : {"name", "ph", "pid", "tid"}) CHECK(e.contains(field));
    if (e["ph"] == "X") {
      ++slices;
      CHECK(e.contains("ts"));
      CHECK(e.contains("dur"));
      CHECK(e["args"].contains("op"));
      CHECK(e["args"].contains("bytes"));
    } else if (e["ph"] == "C") {
      ++counters;
      CHECK(e["args"]["bytes"].is_number());
    }
  }
  CHECK(slices == r.runs.size());
  CHECK(counters == r.devices[0].timeline.size() + r.devices[1].timeline.size());
}

TEST_CASE("every shipped graph on one device under the program policy: the liveness module's peak") {
  std::size_t graphs = 0;
  for (const auto& entry : std::filesystem::directory_iterator(MEMOPT_DATA_DIR)) {
    if (entry.path().extension() != ".json") continue;
    for (const bool storage_aliases : {true, false}) {
      const auto g = memopt::io::read_graph(entry.path().string(), {.storage_aliases = storage_aliases});
      INFO(entry.path().filename().string() << (storage_aliases ? "" : " --no-alias"));
      const sim::machine m;
      const auto r = sim::simulate(g, m, sim::one_device(g), sim::sum_cost{}, sim::program{});
      const auto live = memopt::liveness(g, memopt::program_order(g));
      CHECK(r.devices[0].peak_bytes() == live.peak_bytes);
      CHECK(r.devices[0].persistent_bytes() == live.persistent_bytes);
      CHECK(r.runs.size() == num_vertices(g));
    }
    ++graphs;
  }
  CHECK(graphs >= 20);
}
