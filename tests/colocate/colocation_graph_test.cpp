// colocate/colocation_graph.hpp: checked merges, interned constraints and
// order-independent priority merging, on dense indices.
#include "tf_ops.hpp"

#include <memopt/colocate/colocation_graph.hpp>

#include <doctest/doctest.h>

namespace mt = memopt::testing;

TEST_CASE("colocation_graph: a failed merge leaves every group as it was") {
  const auto devices = mt::tf_test_devices(2);
  const auto kernels = mt::tf_test_kernels();
  memopt::colocation_graph groups(4, devices, kernels);
  groups.initialize(0, "ReluCPU", "", "");
  groups.initialize(1, "TestRelu", "/device:FakeCPU:1", "");
  groups.initialize(2, "ReluGPU", "", "");
  groups.initialize(3, "TestRelu", "/device:FakeCPU:0", "");
  groups.colocate(0, 1, {.reference_edge = false, .group = "g"});
  const auto root = groups.find(0);
  CHECK(groups.find(1) == root);
  CHECK(groups.type_names(root) == std::vector<std::string>{"FakeCPU"});
  CHECK(to_string(groups.devices_of(root).requested) == "/device:FakeCPU:1");

  const auto no_type = groups.try_colocate(1, 2);
  REQUIRE(no_type.has_value());
  CHECK_FALSE(no_type->constraint.has_value());
  const auto id_clash = groups.try_colocate(3, 0);
  REQUIRE(id_clash.has_value());
  CHECK(id_clash->constraint == memopt::device_constraint::requested);
  CHECK(id_clash->part == memopt::device_part::id);
  // Nothing moved.
  CHECK(groups.find(2) == 2);
  CHECK(groups.find(3) == 3);
  CHECK(groups.find(1) == root);
  CHECK(groups.type_names(root) == std::vector<std::string>{"FakeCPU"});
  CHECK(to_string(groups.devices_of(root).requested) == "/device:FakeCPU:1");
  CHECK(groups.type_names(2) == std::vector<std::string>{"FakeGPU"});
  CHECK_THROWS_AS(groups.colocate(3, 0, {.reference_edge = false, .group = "h"}), memopt::device_conflict_error);
  CHECK(groups.find(3) == 3);
}

TEST_CASE("colocation_graph: soft placement merges conflicting types and ids by dropping them") {
  const auto devices = mt::tf_test_devices(2);
  const auto kernels = mt::tf_test_kernels();
  memopt::colocation_graph groups(3, devices, kernels, true);
  groups.initialize(0, "TestRelu", "/job:a/device:FakeGPU:1", "");
  groups.initialize(1, "TestRelu", "/job:a/device:FakeCPU:0", "");
  groups.initialize(2, "TestRelu", "/job:b", "");
  CHECK_FALSE(groups.try_colocate(0, 1));
  CHECK(to_string(groups.devices_of(groups.find(0)).requested) == "/job:a");
  const auto job = groups.try_colocate(0, 2);  // never relaxed
  REQUIRE(job.has_value());
  CHECK(job->part == memopt::device_part::job);
}

TEST_CASE("colocation_graph: priority disagreement is sticky, so merge order does not matter") {
  const auto devices = mt::tf_test_devices(2);
  const auto kernels = mt::tf_test_kernels();
  // CPU-first, GPU-first, CPU-first: TF's pairwise rule gives CPU or GPU
  // depending on the order; memopt gives the preference (GPU) either way.
  const std::vector<std::pair<int, int>> orders[] = {{{0, 1}, {0, 2}}, {{0, 2}, {0, 1}}, {{1, 2}, {2, 0}}};
  for (const auto& order : orders) {
    memopt::colocation_graph groups(3, devices, kernels);
    groups.initialize(0, "IteratorSP", "", "");
    groups.initialize(1, "IteratorRP", "", "");
    groups.initialize(2, "IteratorSP", "", "");
    for (const auto& [u, v] : order) groups.colocate(u, v, {.reference_edge = true, .group = {}});
    const auto root = groups.find(0);
    CHECK(groups.type_names(root) == std::vector<std::string>{"FakeGPU", "FakeCPU"});
    CHECK(groups.supported_types(root).front().priority == 0);
  }
}

TEST_CASE("colocation_graph: 100000 singletons joined in a chain stay shallow") {
  const auto devices = mt::tf_test_devices(1);
  const memopt::kernel_registry kernels;
  const std::size_t n = 100000;
  memopt::colocation_graph groups(n, devices, kernels);
  bool merged = true;
  for (std::size_t v = 1; v < n; ++v) merged = merged && !groups.try_colocate(v - 1, v);
  CHECK(merged);
  const auto root = groups.find(0);
  bool one_group = true;
  for (std::size_t v = 0; v < n; ++v) one_group = one_group && groups.find(v) == root;
  CHECK(one_group);
  CHECK(groups.type_names(root) == std::vector<std::string>{"FakeGPU", "FakeCPU"});
}
