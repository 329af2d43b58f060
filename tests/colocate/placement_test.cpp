// colocate/placement.hpp: TensorFlow's placer behaviours (placer_test.cc) on
// small graphs, with exact devices, and every error naming both nodes.
#include "tf_ops.hpp"

#include <memopt/colocate.hpp>

#include <doctest/doctest.h>

#include <string>

namespace mt = memopt::testing;
using memopt::placement_options;

namespace {

struct placer {
  mt::tf_graph_builder b;
  memopt::device_set devices = mt::tf_test_devices();
  memopt::kernel_registry kernels = mt::tf_test_kernels();
  memopt::placement_result result;

  void run(bool soft = false) {
    result = memopt::place(b.g, devices, kernels, placement_options{.soft_placement = soft});
    CHECK(memopt::check_placement(b.g, devices, kernels, result, {.soft_placement = soft}).empty());
  }
  std::string device(const std::string& name) const {
    return devices.full_name(result.device.at(b.vertex.at(name)));
  }
  std::string type(const std::string& name) const {
    return devices.types()[devices.type_of(result.device.at(b.vertex.at(name)))];
  }
  bool colocated(const std::string& x, const std::string& y) const { return device(x) == device(y); }
  /// Runs expecting an error of type E; returns it described with node names.
  template <class E>
  E fails(bool soft = false) {
    try {
      run(soft);
    } catch (const E& e) {
      return e;
    }
    FAIL("placement did not fail");
    throw;
  }
  std::string name(std::size_t v) const { return b.g[v].name; }
  std::string describe(const memopt::error& e) const {
    return e.describe([this](std::size_t v) { return "'" + name(v) + "'"; });
  }
};

const std::string cpu0 = "/job:a/replica:0/task:0/device:FakeCPU:0";
const std::string gpu0 = "/job:a/replica:0/task:0/device:FakeGPU:0";

}  // namespace

TEST_CASE("placement: no constraints puts each op on its best device type") {
  placer p;
  p.b.add("in", "TestInput");
  p.b.add("n1", "TestRelu", {"in"});
  p.b.add("n2", "TestRelu", {"in"});
  p.run();
  CHECK(p.device("in") == cpu0);  // CPU-only kernel
  CHECK(p.device("n1") == gpu0);  // CPU and GPU: GPU preferred, GPUs by id
  CHECK(p.device("n2") == gpu0);
  CHECK(p.result.num_groups == 3);
}

TEST_CASE("placement: kernel priorities beat the type preference") {
  placer p;
  p.b.add("in", "TestInput");
  p.b.add("n1", "TestDatasetOp", {"in"});
  p.run();
  CHECK(p.type("n1") == "FakeCPU");

  placer q;  // a GPU-only input does not pull a CPU-prioritised consumer
  q.b.add("in", "TestGPUOutput");
  q.b.add("n1", "TestDatasetOp", {"in"});
  q.run();
  CHECK(q.type("in") == "FakeGPU");
  CHECK(q.type("n1") == "FakeCPU");
}

TEST_CASE("placement: loc:@in pulls one consumer onto in's device, its sibling stays") {
  placer p;
  p.b.add("in", "TestGPUOutput");
  p.b.add("n1", "TestDatasetOp", {"in"}, {.colocation = {"in"}});
  p.b.add("n2", "TestDatasetOp", {"in"});
  p.run();
  CHECK(p.type("in") == "FakeGPU");
  CHECK(p.type("n1") == "FakeGPU");
  CHECK(p.type("n2") == "FakeCPU");

  placer q;
  q.b.add("in", "TestInput");
  q.b.add("colocated_1", "TestRelu", {"in"}, {.colocation = {"in"}});
  q.b.add("foo", "TestRelu", {"in"});
  q.run();
  CHECK(q.device("colocated_1") == cpu0);
  CHECK(q.colocated("in", "colocated_1"));
  CHECK(q.device("foo") == gpu0);
  CHECK(q.result.group[q.b.vertex["in"]] == q.result.group[q.b.vertex["colocated_1"]]);
  CHECK(q.result.num_groups == 2);
}

TEST_CASE("placement: priorities merged across resource edges as TF merges them") {
  const auto both_on = [](const char* source, const char* user) {
    placer p;
    p.b.add("ds", source);
    p.b.add("it", user, {"ds"});
    p.run();
    CHECK(p.colocated("ds", "it"));
    return p.type("it");
  };
  CHECK(both_on("CreateDatasetSP", "IteratorNP") == "FakeCPU");
  CHECK(both_on("CreateDatasetRP", "IteratorNP") == "FakeGPU");
  CHECK(both_on("CreateDatasetNP", "IteratorSP") == "FakeCPU");
  CHECK(both_on("CreateDatasetNP", "IteratorRP") == "FakeGPU");
  CHECK(both_on("CreateDatasetSP", "IteratorGPU") == "FakeGPU");
  CHECK(both_on("CreateDatasetCPU", "IteratorRP") == "FakeCPU");
  CHECK(both_on("CreateDatasetSP", "IteratorSP") == "FakeCPU");
  CHECK(both_on("CreateDatasetRP", "IteratorRP") == "FakeGPU");
  CHECK(both_on("CreateDatasetSP", "IteratorRP") == "FakeGPU");  // disagree: preference decides
  CHECK(both_on("CreateDatasetRP", "IteratorSP") == "FakeGPU");
}

TEST_CASE("placement: device type constraints and reference edges") {
  placer p;
  p.b.add("in", "TestInput");
  p.b.add("var_cpu", "VariableCPU");
  p.b.add("assign_cpu", "AssignCPU", {"var_cpu", "in"});
  p.b.add("var_gpu", "VariableGPU");
  p.b.add("assign_gpu", "AssignGPU", {"var_gpu", "in"});
  p.run();
  CHECK(p.type("in") == "FakeCPU");
  CHECK(p.type("var_cpu") == "FakeCPU");
  CHECK(p.colocated("var_cpu", "assign_cpu"));
  CHECK(p.type("var_gpu") == "FakeGPU");
  CHECK(p.colocated("var_gpu", "assign_gpu"));
}

TEST_CASE("placement: a metadata op stays with its input") {
  placer p;
  p.b.add("var_cpu", "VariableCPU");
  p.b.add("shape_op", "Shape", {"var_cpu"});
  p.run();
  CHECK(p.type("shape_op") == "FakeCPU");
  CHECK(p.colocated("var_cpu", "shape_op"));

  placer q;  // without the heuristic, Shape would go to GPU
  q.b.add("var_cpu", "VariableCPU");
  q.b.add("shape_op", "Shape", {"var_cpu"});
  q.result = memopt::place(q.b.g, q.devices, q.kernels, {.metadata_ops = {}});
  CHECK(q.type("shape_op") == "FakeGPU");
}

TEST_CASE("placement: a generator follows its consumers when it may") {
  SUBCASE("one consumer bound to CPU by a reference edge") {
    placer p;
    p.b.add("var_cpu", "VariableCPU");
    p.b.add("in", "TestCPUGPUOutput");
    p.b.add("assign", "TestAssign", {"var_cpu", "in"});
    p.run();
    CHECK(p.colocated("var_cpu", "in"));
    CHECK(p.colocated("assign", "in"));
  }
  SUBCASE("two consumers on one device") {
    placer p;
    p.b.add("var1_cpu", "VariableCPU");
    p.b.add("var2_cpu", "VariableCPU");
    p.b.add("in", "TestCPUGPUOutput");
    p.b.add("assign1", "TestAssign", {"var1_cpu", "in"});
    p.b.add("assign2", "TestAssign", {"var2_cpu", "in"});
    p.run();
    CHECK(p.colocated("var1_cpu", "in"));
    CHECK(p.colocated("assign2", "in"));
  }
  SUBCASE("consumers on two devices: the generator goes to its own best device") {
    placer p;
    p.b.add("var1_cpu", "VariableCPU", {}, {.assigned = "/job:a/replica:0/task:0/device:FakeCPU:1"});
    p.b.add("var2_cpu", "VariableCPU", {}, {.assigned = "/job:a/replica:0/task:0/device:FakeCPU:2"});
    p.b.add("in", "TestCPUGPUOutput");
    p.b.add("assign1", "TestAssign", {"var1_cpu", "in"});
    p.b.add("assign2", "TestAssign", {"var2_cpu", "in"});
    p.run();
    CHECK(p.colocated("assign1", "var1_cpu"));
    CHECK(p.device("assign2") == "/job:a/replica:0/task:0/device:FakeCPU:2");
    CHECK(p.type("in") == "FakeGPU");
  }
  SUBCASE("the consumer's device type has no kernel for the generator") {
    placer p;
    p.b.add("var_cpu", "VariableCPU");
    p.b.add("in", "TestGPUOutput");
    p.b.add("assign", "TestAssign", {"var_cpu", "in"});
    p.run();
    CHECK(p.type("in") == "FakeGPU");
    CHECK(p.colocated("var_cpu", "assign"));
  }
  SUBCASE("the generator's own request excludes the consumer's device") {
    placer p;
    p.b.add("var_cpu", "VariableCPU");
    p.b.add("in", "TestCPUGPUOutput", {}, {.device = "/device:FakeCPU:1"});
    p.b.add("assign", "TestAssign", {"var_cpu", "in"});
    p.run();
    CHECK(p.device("in") == "/job:a/replica:0/task:0/device:FakeCPU:1");
    CHECK(p.device("var_cpu") == cpu0);
  }
}

TEST_CASE("placement: partial specifications, assigned devices, resource moves") {
  SUBCASE("partial specification") {
    placer p;
    p.b.add("in", "TestInput", {}, {.device = "/job:a"});
    p.b.add("var", "TestVariable", {}, {.device = "/job:a"});
    p.run();
    CHECK(p.type("in") == "FakeCPU");
    CHECK(p.type("var") == "FakeGPU");
  }
  SUBCASE("an assigned device is kept") {
    placer p;
    p.b.add("in", "TestInput", {}, {.assigned = "/job:a/replica:0/task:0/device:FakeCPU:7"});
    p.run();
    CHECK(p.device("in") == "/job:a/replica:0/task:0/device:FakeCPU:7");
  }
  SUBCASE("soft placement moves a CPU-only op off its requested GPU") {
    placer p;
    p.b.add("in", "TestInput", {}, {.device = "/device:FakeGPU:0"});
    p.b.add("var", "TestVariable", {}, {.device = "/device:FakeGPU:0"});
    p.run(true);
    CHECK(p.device("in") == cpu0);
    CHECK(p.device("var") == gpu0);
  }
  SUBCASE("soft placement moves a resource to where its user has a kernel") {
    placer p;
    p.b.add("ds", "CreateDatasetSP", {}, {.device = "/device:FakeCPU:0"});
    p.b.add("it", "IteratorGPU", {"ds"});
    p.run(true);
    CHECK(p.type("ds") == "FakeGPU");
    CHECK(p.type("it") == "FakeGPU");
  }
  SUBCASE("soft placement relaxes a device that does not exist to one of its type") {
    placer p;
    p.b.add("in", "TestDevice", {}, {.device = "/device:FakeGPU:11"});
    p.run(true);
    CHECK(p.device("in") == gpu0);
  }
  SUBCASE("soft placement honours the reference edge over the request") {
    placer p;
    p.b.add("var_gpu", "VariableGPU");
    p.b.add("force_gpu", "TestDeviceEnforce", {"var_gpu"}, {.device = "/device:FakeCPU:0"});
    p.b.add("var_cpu", "VariableCPU");
    p.b.add("force_cpu", "TestDeviceEnforce", {"var_cpu"}, {.device = "/device:FakeGPU:0"});
    p.run(true);
    CHECK(p.type("force_gpu") == "FakeGPU");
    CHECK(p.colocated("var_gpu", "force_gpu"));
    CHECK(p.type("force_cpu") == "FakeCPU");
    CHECK(p.colocated("var_cpu", "force_cpu"));
  }
}

TEST_CASE("placement: variable and assign across the kernel matrix") {
  const char* variables[] = {"TestVariable", "VariableCPU", "VariableGPU"};
  const char* assigns[] = {"TestAssign", "AssignCPU", "AssignGPU"};
  const char* expected[3][3] = {{"FakeGPU", "FakeCPU", "FakeGPU"},
                                {"FakeCPU", "FakeCPU", nullptr},
                                {"FakeGPU", nullptr, "FakeGPU"}};
  for (int v = 0; v < 3; ++v) {
    for (int a = 0; a < 3; ++a) {
      CAPTURE(variables[v]);
      CAPTURE(assigns[a]);
      placer p;
      p.b.add("in", "TestInput");
      for (int i = 0; i < 10; ++i) {
        p.b.add("var_" + std::to_string(i), variables[v]);
        p.b.add("assign_" + std::to_string(i), assigns[a], {"var_" + std::to_string(i), "in"});
      }
      if (expected[v][a] == nullptr) {
        const auto e = p.fails<memopt::no_common_device_type_error>();
        CHECK(p.name(e.first) == "var_0");
        CHECK(p.name(e.second) == "assign_0");
        CHECK(e.reason.reference_edge);
        CHECK(e.first_types.size() == 1);
        CHECK(e.first_types != e.second_types);
        CHECK(p.describe(e).find("no device type supports both") != std::string::npos);
        CHECK(p.describe(e).find("'var_0' and 'assign_0'") != std::string::npos);
        continue;
      }
      p.run();
      for (int i = 0; i < 10; ++i) {
        CHECK(p.colocated("var_" + std::to_string(i), "assign_" + std::to_string(i)));
        CHECK(p.type("var_" + std::to_string(i)) == expected[v][a]);
      }
    }
  }
}

TEST_CASE("placement: resource handles across the kernel matrix") {
  const auto placed_on = [](const char* variable, const char* user) -> std::string {
    placer p;
    p.b.add("in", "TestInput");
    p.b.add("var", variable);
    p.b.add("assign", user, {"var", "in"});
    try {
      p.run();
    } catch (const memopt::no_common_device_type_error&) {
      return "fails";
    }
    CHECK(p.colocated("var", "assign"));
    return p.type("assign");
  };
  CHECK(placed_on("TestHandleVariable", "TestHandleAssign") == "FakeGPU");
  CHECK(placed_on("TestHandleVariable", "HandleAssignCPU") == "FakeCPU");
  CHECK(placed_on("TestHandleVariable", "HandleAssignGPU") == "FakeGPU");
  CHECK(placed_on("HandleVariableCPU", "TestHandleAssign") == "FakeCPU");
  CHECK(placed_on("HandleVariableCPU", "HandleAssignCPU") == "FakeCPU");
  CHECK(placed_on("HandleVariableGPU", "HandleAssignGPU") == "FakeGPU");
  CHECK(placed_on("HandleVariableGPU", "TestHandleAssign") == "FakeGPU");
  CHECK(placed_on("HandleVariableGPU", "HandleAssignCPU") == "fails");
  CHECK(placed_on("HandleVariableCPU", "HandleAssignGPU") == "fails");
}

TEST_CASE("placement: two resource handles on different devices fail with or without soft placement") {
  for (const bool soft : {false, true}) {
    for (const bool assigned : {false, true}) {
      CAPTURE(soft);
      CAPTURE(assigned);
      placer p;
      const auto where = [&](const std::string& d) {
        return assigned ? memopt::testing::node_options{.assigned = d} : memopt::testing::node_options{.device = d};
      };
      p.b.add("var_cpu", "TestHandleVariable", {}, where(cpu0));
      p.b.add("var_gpu", "TestHandleVariable", {}, where(gpu0));
      p.b.add("two_handles_in", "TestTwoHandlesIn", {"var_cpu", "var_gpu"});
      const auto e = p.fails<memopt::reference_edge_error>(soft);
      CHECK(p.name(e.source) == "var_gpu");
      CHECK(p.name(e.target) == "two_handles_in");
      CHECK(e.constraint ==
            (assigned ? memopt::device_constraint::assigned : memopt::device_constraint::resource));
      CHECK(e.source_device == gpu0);
      CHECK(e.target_device == cpu0);
      CHECK(std::string(e.what()).find(gpu0 + "' (vertex 1) vs '" + cpu0) != std::string::npos);
    }
  }
}

TEST_CASE("placement: the destination of a reference edge follows its source") {
  SUBCASE("an infeasible request on the destination is ignored, even without soft placement") {
    placer p;
    p.b.add("in", "TestDevice", {}, {.device = "/job:a/task:0/device:FakeGPU:0"});
    p.b.add("var_0", "TestVariable", {}, {.device = "/job:a/task:0/device:FakeGPU:0"});
    p.b.add("assign", "TestAssign", {"var_0", "in"}, {.device = "/job:a/task:0/device:FakeCPU:0"});
    p.run();
    CHECK(p.type("var_0") == "FakeGPU");
    CHECK(p.type("assign") == "FakeGPU");
  }
  SUBCASE("a more specific destination wins over a vaguer source") {
    placer p;
    p.b.add("in", "TestCPUGPUOutput", {}, {.device = "/job:a/task:0"});
    p.b.add("var_0", "TestVariable", {}, {.device = "/job:a/task:0"});
    p.b.add("assign", "TestAssign", {"var_0", "in"}, {.device = "/job:a/task:0/device:FakeCPU:0"});
    p.run();
    CHECK(p.type("var_0") == "FakeCPU");
    CHECK(p.type("assign") == "FakeCPU");
  }
  SUBCASE("a source without a device takes the destination's") {
    placer p;
    p.b.add("in", "TestDevice", {}, {.device = "/job:a/task:0/device:FakeGPU:0"});
    p.b.add("var_0", "TestVariable");
    p.b.add("assign", "TestAssign", {"var_0", "in"}, {.device = "/job:a/task:0/device:FakeCPU:0"});
    p.run();
    CHECK(p.type("var_0") == "FakeCPU");
    CHECK(p.type("assign") == "FakeCPU");
  }
}

TEST_CASE("placement: colocation groups are transitive and checked") {
  SUBCASE("two groups named by one node") {
    placer p;
    p.b.add("in", "TestInput");
    p.b.add("colocated_1", "TestRelu", {"in"}, {.colocation = {"in"}});
    p.b.add("foo", "TestRelu", {"in"}, {.colocation = {"in", "colocated_1"}});
    p.run();
    CHECK(p.colocated("in", "colocated_1"));
    CHECK(p.colocated("in", "foo"));
    CHECK(p.result.num_groups == 1);
  }
  SUBCASE("a CPU-only and a GPU-only node in one group: an error, or split with soft placement") {
    placer p;
    p.b.add("in", "TestInput");
    p.b.add("colocated_1", "ReluCPU", {"in"}, {.colocation = {"in"}});
    p.b.add("foo", "ReluGPU", {"in"}, {.colocation = {"in", "colocated_1"}});
    const auto e = p.fails<memopt::no_common_device_type_error>();
    CHECK(p.name(e.first) == "foo");
    CHECK(p.name(e.second) == "in");
    CHECK(e.reason.group == "in");
    CHECK(e.first_types == std::vector<std::string>{"FakeGPU"});
    CHECK(e.second_types == std::vector<std::string>{"FakeCPU"});
    CHECK(p.describe(e) ==
          "cannot colocate 'foo' and 'in' (both are in colocation group 'in'): no device type supports both "
          "of them and the nodes colocated with them; 'foo''s group runs on [FakeGPU], 'in''s on [FakeCPU]");
    p.run(true);
    CHECK(p.type("in") == "FakeCPU");
    CHECK(p.type("colocated_1") == "FakeCPU");
    CHECK(p.type("foo") == "FakeGPU");
    CHECK(p.result.ignored == std::vector<memopt::ignored_colocation>{{2, "in"}, {2, "colocated_1"}});
  }
  SUBCASE("groups joined through reference edges") {
    placer p;
    p.b.add("in", "TestInput");
    p.b.add("var1", "VariableCPU");
    p.b.add("var2", "VariableCPU");
    p.b.add("assign1", "TestAssign", {"var1", "in"}, {.colocation = {"var1"}});
    p.b.add("assign2", "TestAssign", {"var2", "in"}, {.colocation = {"var2"}});
    p.run();
    CHECK(p.colocated("in", "var1"));
    CHECK(p.colocated("var1", "assign2"));
  }
  SUBCASE("a group unsatisfiable through a reference edge") {
    placer p;
    p.b.add("in", "TestInput");
    p.b.add("var1", "VariableCPU");
    p.b.add("var2", "VariableCPU");
    p.b.add("var3", "VariableGPU");
    p.b.add("assign1", "TestAssign", {"var1", "in"}, {.colocation = {"var1"}});
    p.b.add("assign2", "TestAssign", {"var2", "in"}, {.colocation = {"var2"}});
    p.b.add("assign3", "TestAssign", {"var3", "in"}, {.colocation = {"var2"}});
    const auto e = p.fails<memopt::no_common_device_type_error>();
    CHECK(p.name(e.first) == "assign3");
    CHECK(p.name(e.second) == "var2");
    p.run(true);
    CHECK(p.type("assign3") == "FakeGPU");
  }
  SUBCASE("a hundred variables and assigns in overlapping groups") {
    placer p;
    p.b.add("in", "TestInput");
    for (int i = 0; i < 100; ++i) {
      const auto n = std::to_string(i);
      const auto var_group = i < 10 ? std::vector<std::string>{} : std::vector{"var_" + std::to_string(i % 6)};
      const auto assign_group = i < 10 ? std::vector<std::string>{} : std::vector{"assign_" + std::to_string(i % 3)};
      p.b.add("var_" + n, "TestVariable", {}, {.colocation = var_group});
      p.b.add("assign_" + n, "TestAssign", {"var_" + n, "in"}, {.colocation = assign_group});
    }
    p.run();
    for (int i = 10; i < 100; ++i) {
      const auto n = std::to_string(i);
      CHECK(p.colocated("var_" + n, "assign_" + n));
      CHECK(p.colocated("var_" + n, "var_" + std::to_string(i % 6)));
      CHECK(p.colocated("assign_" + n, "assign_" + std::to_string(i % 3)));
    }
  }
  SUBCASE("a resource generator's request is kept like an assigned device") {
    placer p;
    p.b.add("a", "_Arg", {}, {.device = "/device:FakeGPU:0"});
    p.b.add("b", "_Arg", {}, {.device = "/device:FakeCPU:0"});
    p.b.add("id1", "Identity", {"a"}, {.colocation = {"id2"}});
    p.b.add("id2", "Identity", {"b"});
    const auto e = p.fails<memopt::device_conflict_error>();
    CHECK(p.name(e.first) == "id2");
    CHECK(p.name(e.second) == "id1");
    CHECK(e.constraint == memopt::device_constraint::resource);
    CHECK(e.part == memopt::device_part::type);
    CHECK(e.first_device == "/device:FakeCPU:0");
    CHECK(e.second_device == "/device:FakeGPU:0");
    CHECK(p.describe(e).find("incompatible resource devices '/device:FakeCPU:0' and '/device:FakeGPU:0' "
                             "differ in type") != std::string::npos);
    p.run(true);
    CHECK(p.type("a") == "FakeGPU");
    CHECK(p.type("id1") == "FakeGPU");
    CHECK(p.type("b") == "FakeCPU");
    CHECK(p.type("id2") == "FakeCPU");
  }
}

TEST_CASE("placement: bad devices each give their own error") {
  SUBCASE("no devices at all") {
    placer p;
    p.b.add("in", "TestInput");
    p.devices = memopt::device_set({});
    p.fails<memopt::no_devices_error>();
  }
  SUBCASE("a requested device that no device matches") {
    placer p;
    p.b.add("in", "TestInput", {}, {.device = "/job:foo"});
    const auto e = p.fails<memopt::unsatisfiable_device_error>();
    CHECK(e.fault == memopt::device_fault::no_such_device);
    CHECK(e.device == "/job:foo");
    CHECK(std::string(e.what()).find("/job:foo") != std::string::npos);
    p.fails<memopt::unsatisfiable_device_error>(true);  // a job is never relaxed
  }
  SUBCASE("a device that does not exist, without soft placement") {
    placer p;
    p.b.add("in", "TestDevice", {}, {.device = "/device:FakeGPU:11"});
    CHECK(p.fails<memopt::unsatisfiable_device_error>().fault == memopt::device_fault::no_such_device);
  }
  SUBCASE("a device type without a kernel for the op") {
    placer p;
    p.b.add("var", "VariableGPU", {}, {.device = "/device:FakeCPU:0"});
    const auto e = p.fails<memopt::unsatisfiable_device_error>();
    CHECK(e.fault == memopt::device_fault::no_kernel);
    CHECK(e.op == "VariableGPU");
    CHECK(p.describe(e) == "cannot place 'var' (op 'VariableGPU') on its requested device "
                           "'/device:FakeCPU:0': no matching device has a kernel for the op");
  }
  SUBCASE("an assigned device that does not exist, is partial, or has no kernel") {
    for (const char* assigned : {"/job:foo", "/job:a", "/job:a/replica:0/task:0/device:FakeGPU:0"}) {
      placer p;
      p.b.add("in", "TestInput", {}, {.assigned = assigned});
      const auto e = p.fails<memopt::unsatisfiable_device_error>();
      CHECK(e.constraint == memopt::device_constraint::assigned);
      CHECK(e.device == assigned);
      CHECK(e.fault == (std::string(assigned).find("GPU") != std::string::npos
                            ? memopt::device_fault::no_kernel
                            : memopt::device_fault::no_such_device));
    }
  }
  SUBCASE("malformed requested and assigned devices") {
    placer p;
    p.b.add("in", "TestInput", {}, {.device = "/foo:bar"});
    const auto e = p.fails<memopt::malformed_device_error>();
    CHECK(e.vertex == 0u);
    CHECK(e.constraint == memopt::device_constraint::requested);
    CHECK(p.describe(e) == "malformed device name '/foo:bar' (requested device of 'in') at offset 0: "
                           "expected /job:, /replica:, /task:, /device:, /cpu: or /gpu:");
    placer q;
    q.b.add("in", "TestInput", {}, {.assigned = "/job:a/task:x"});
    const auto f = q.fails<memopt::malformed_device_error>();
    CHECK(f.constraint == memopt::device_constraint::assigned);
    CHECK(f.fault == memopt::device_name_fault::bad_number);
  }
  SUBCASE("an op without kernels, or whose kernels no device has") {
    placer p;
    p.b.add("var", "VariableNoKernels");
    const auto e = p.fails<memopt::no_kernel_error>();
    CHECK(e.op == "VariableNoKernels");
    CHECK(e.kernel_types.empty());
    placer q;
    q.b.add("var", "VariableGPU");
    q.devices = memopt::device_set({cpu0});
    const auto f = q.fails<memopt::no_kernel_error>();
    CHECK(f.kernel_types == std::vector<std::string>{"FakeGPU"});
    CHECK(f.device_types == std::vector<std::string>{"FakeCPU"});
  }
  SUBCASE("a request that the group's other constraints make impossible") {
    placer p;
    p.b.add("in", "TestInput");
    p.b.add("var", "VariableGPU");
    p.b.add("assign", "TestAssign", {"var", "in"}, {.device = "/job:b/task:1"});
    p.devices = memopt::device_set({"/job:b/replica:0/task:0/device:FakeGPU:0",
                                    "/job:b/replica:0/task:1/device:FakeCPU:0"});
    const auto e = p.fails<memopt::unsatisfiable_device_error>();
    CHECK(p.name(e.vertex) == "var");
    CHECK(e.fault == memopt::device_fault::incompatible_group);
    CHECK(e.group_device == "/job:b/task:1");
  }
  SUBCASE("a reference edge between a GPU-only variable and a CPU-only assign") {
    placer p;
    p.b.add("var", "VariableGPU");
    p.b.add("in", "TestInput");
    p.b.add("assign", "AssignCPU", {"var", "in"});
    const auto e = p.fails<memopt::no_common_device_type_error>();
    CHECK(p.name(e.first) == "var");
    CHECK(p.name(e.second) == "assign");
    CHECK(p.describe(e).find("a reference/resource edge joins them") != std::string::npos);
  }
  SUBCASE("soft placement lets an unsupported request go") {
    placer p;
    p.b.add("a", "TestInput", {}, {.device = "/device:FakeGPU:0"});
    p.run(true);
    CHECK(p.device("a") == cpu0);
  }
}

namespace {

// A user's own graph: different member names, no colocation attribute, the
// reference flag derived from the op; traits inherit the default and override.
struct op_node {
  std::string label;
  std::string kind;
  std::string where;
};
using user_graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS, op_node>;

}  // namespace

template <>
struct memopt::placement_traits<user_graph> : memopt::bundled_placement_traits<user_graph> {
  static std::string_view name(const user_graph& g, vertex v) { return g[v].label; }
  static std::string_view op_type(const user_graph& g, vertex v) { return g[v].kind; }
  static std::string_view requested_device(const user_graph& g, vertex v) { return g[v].where; }
  static bool is_reference_output(const user_graph& g, vertex v, std::size_t) { return g[v].kind == "VariableCPU"; }
  static bool is_reference_edge(const user_graph& g, edge e) { return g[source(e, g)].kind == "VariableCPU"; }
};
static_assert(memopt::placement_graph<user_graph>);
static_assert(!memopt::placement_graph<boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS>>);

TEST_CASE("placement: a user graph through its own placement_traits") {
  user_graph g;
  const auto var = add_vertex({"var", "VariableCPU", ""}, g);
  const auto relu = add_vertex({"relu", "TestRelu", ""}, g);
  const auto other = add_vertex({"other", "TestRelu", "/device:FakeGPU:3"}, g);
  add_edge(var, relu, g);
  add_edge(relu, other, g);
  const auto devices = mt::tf_test_devices();
  const auto kernels = mt::tf_test_kernels();
  const auto r = memopt::place(g, devices, kernels);
  CHECK(devices.full_name(r.device[relu]) == cpu0);  // follows the variable over the reference edge
  CHECK(r.group[var] == r.group[relu]);
  CHECK(devices.full_name(r.device[other]) == "/job:a/replica:0/task:0/device:FakeGPU:3");
  CHECK(memopt::check_placement(g, devices, kernels, r).empty());
}

TEST_CASE("check_placement: every kind of violation is found") {
  placer p;
  p.b.add("in", "TestInput", {}, {.assigned = cpu0});
  p.b.add("var", "VariableCPU");
  p.b.add("assign", "TestAssign", {"var", "in"});
  p.b.add("relu", "TestRelu", {"in"}, {.colocation = {"in"}});
  p.run();
  using F = memopt::placement_fault;
  const auto faults_after = [&](auto&& tamper) {
    auto r = p.result;
    tamper(r);
    return memopt::check_placement(p.b.g, p.devices, p.kernels, r);
  };
  const auto gpu = *p.devices.find(memopt::parse_device_name(gpu0));
  const auto cpu1 = *p.devices.find(memopt::parse_device_name("/job:a/replica:0/task:0/device:FakeCPU:1"));
  CHECK(faults_after([&](auto& r) { r.device[0] = cpu1; }) ==
        std::vector<memopt::placement_violation>{
            {F::assigned_moved, 0, 0}, {F::group_split, 3, 0}, {F::colocation_split, 3, 0}});
  CHECK(faults_after([&](auto& r) { r.device[1] = gpu; }) ==
        std::vector<memopt::placement_violation>{
            {F::no_kernel, 1, 0}, {F::reference_split, 1, 2}, {F::group_split, 2, 1}});
  CHECK(faults_after([&](auto& r) { r.device[2] = cpu1; }) ==
        std::vector<memopt::placement_violation>{{F::reference_split, 1, 2}, {F::group_split, 2, 1}});
  CHECK(faults_after([&](auto& r) { r.device[3] = 99; }) ==
        std::vector<memopt::placement_violation>{{F::bad_device, 3, 0}});
  CHECK(faults_after([&](auto& r) { r.device.pop_back(); }) ==
        std::vector<memopt::placement_violation>{{F::bad_device, 3, 0}});
}
