#pragma once
// TensorFlow's placer test environment, rebuilt for memopt: ten FakeCPU and
// ten FakeGPU devices (GPU preferred), the test ops' kernels (with priorities)
// and signatures (reference/resource inputs and outputs), and a small graph
// builder in which an edge into a reference input is a reference edge.

#include <memopt/colocate.hpp>

#include <boost/graph/adjacency_list.hpp>

#include <map>
#include <stdexcept>
#include <string>
#include <vector>

namespace memopt::testing {

struct tf_test_node : placement_node {
  std::vector<int> outputs;  ///< one entry per output
};
using tf_test_graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                            tf_test_node, placement_edge>;

struct op_signature {
  std::size_t outputs = 1;
  std::vector<std::size_t> reference_inputs;
  bool reference_output = false;
  std::vector<kernel> kernels;
};

inline const std::map<std::string, op_signature>& tf_test_ops() {
  const std::vector<kernel> cpu = {{"FakeCPU"}}, gpu = {{"FakeGPU"}}, both = {{"FakeCPU"}, {"FakeGPU"}};
  const std::vector<kernel> cpu_first = {{"FakeCPU", 2}, {"FakeGPU", 1}};
  const std::vector<kernel> gpu_first = {{"FakeCPU", 1}, {"FakeGPU", 2}};
  static const std::map<std::string, op_signature> ops = {
      {"TestVariable", {1, {}, true, both}},
      {"VariableCPU", {1, {}, true, cpu}},
      {"VariableGPU", {1, {}, true, gpu}},
      {"VariableNoKernels", {1, {}, true, {}}},
      {"TestAdd", {1, {}, false, both}},
      {"TestRelu", {1, {}, false, both}},
      {"ReluCPU", {1, {}, false, cpu}},
      {"ReluGPU", {1, {}, false, gpu}},
      {"TestAssign", {0, {0}, false, both}},
      {"AssignCPU", {0, {0}, false, cpu}},
      {"AssignGPU", {0, {0}, false, gpu}},
      {"TestInput", {2, {}, false, cpu}},
      {"TestCPUGPUOutput", {1, {}, false, both}},
      {"TestGPUOutput", {1, {}, false, gpu}},
      {"TestDevice", {2, {}, false, gpu}},
      {"TestDeviceEnforce", {1, {0}, false, both}},
      {"Shape", {1, {}, false, both}},
      {"TestDatasetOp", {1, {}, false, cpu_first}},
      {"CreateDatasetCPU", {1, {}, true, cpu}},
      {"CreateDatasetGPU", {1, {}, true, gpu}},
      {"CreateDatasetSP", {1, {}, true, cpu_first}},
      {"CreateDatasetRP", {1, {}, true, gpu_first}},
      {"CreateDatasetNP", {1, {}, true, both}},
      {"IteratorNP", {1, {0}, false, both}},
      {"IteratorSP", {1, {0}, false, cpu_first}},
      {"IteratorRP", {1, {0}, false, gpu_first}},
      {"IteratorGPU", {1, {0}, false, gpu}},
      {"TestHandleVariable", {1, {}, true, both}},
      {"HandleVariableCPU", {1, {}, true, cpu}},
      {"HandleVariableGPU", {1, {}, true, gpu}},
      {"TestHandleAssign", {0, {0}, false, both}},
      {"HandleAssignCPU", {0, {0}, false, cpu}},
      {"HandleAssignGPU", {0, {0}, false, gpu}},
      {"TestTwoHandlesIn", {0, {0, 1}, false, both}},
      {"_Arg", {1, {}, true, both}},
      {"Identity", {1, {0}, false, both}},
  };
  return ops;
}

inline kernel_registry tf_test_kernels() {
  kernel_registry registry;
  for (const auto& [op, signature] : tf_test_ops()) {
    if (!signature.kernels.empty()) registry.kernels[op] = signature.kernels;
  }
  return registry;
}

/// FakeCPU:0-9 and FakeGPU:0-9 of /job:a/replica:0/task:0, GPUs listed in
/// reverse order (as TF's test does), FakeGPU preferred.
inline device_set tf_test_devices(int count = 10) {
  std::vector<std::string> names;
  for (int i = 0; i < count; ++i) {
    names.push_back("/job:a/replica:0/task:0/device:FakeCPU:" + std::to_string(i));
    names.push_back("/job:a/replica:0/task:0/device:FakeGPU:" + std::to_string(count - 1 - i));
  }
  return device_set(names, {"FakeGPU", "FakeCPU"});
}

struct node_options {
  std::string device;
  std::vector<std::string> colocation;  ///< group names (TF's "loc:@name" without the prefix)
  std::string assigned;
};

/// Builds a graph op by op; inputs are node names, each reading output 0.
struct tf_graph_builder {
  tf_test_graph g;
  std::map<std::string, std::size_t> vertex;

  std::size_t add(const std::string& name, const std::string& op, const std::vector<std::string>& inputs = {},
                  const node_options& o = {}) {
    const auto& signature = tf_test_ops().at(op);
    tf_test_node node;
    node.name = name;
    node.op = op;
    node.device = o.device;
    node.assigned_device = o.assigned;
    node.colocation = o.colocation;
    node.outputs.assign(signature.outputs, 0);
    if (signature.reference_output) node.reference_outputs = {0};
    const auto v = add_vertex(node, g);
    for (std::size_t k = 0; k < inputs.size(); ++k) {
      const bool reference = std::ranges::count(signature.reference_inputs, k) > 0;
      add_edge(vertex.at(inputs[k]), v, placement_edge{.control = false, .reference = reference}, g);
    }
    vertex[name] = v;
    return v;
  }
};

}  // namespace memopt::testing
