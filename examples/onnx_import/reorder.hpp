#pragma once
// An ONNX model with its nodes in a schedule's order, for runtimes that run
// a file's nodes as they come: reordered_model takes the order of the
// imported graph's vertices and places every ONNX node that has no vertex
// (shape arithmetic the importer folded) just before the first node that
// reads it, the rest at the end. Initializers, inputs, outputs and value
// infos are untouched (external data references included). O(nodes + edges).

#include "model.hpp"

#include <onnx/onnx_pb.h>

#include <cstddef>
#include <string>
#include <unordered_map>
#include <vector>

namespace onnx_import {

/// `model` (imported as `imported`) with its nodes in `order`, a schedule of
/// the imported graph (vertex i is imported.doc["nodes"][i]). Throws
/// format_error when `order` does not list each vertex once, or when a node
/// would come before a node it reads (the order is not topological).
[[nodiscard]] inline onnx::ModelProto reordered_model(onnx::ModelProto model, const imported_model& imported,
                                                      const std::vector<std::size_t>& order) {
  auto& graph = *model.mutable_graph();
  const auto count = static_cast<std::size_t>(graph.node_size());
  if (order.size() != imported.onnx_nodes.size()) {
    throw format_error("", "the order has " + std::to_string(order.size()) + " nodes where the graph has " +
                               std::to_string(imported.onnx_nodes.size()));
  }
  std::vector<bool> scheduled(count, false);  // has a vertex: the order places it
  std::vector<bool> seen(imported.onnx_nodes.size(), false);
  for (const std::size_t v : order) {
    if (v >= seen.size() || seen[v]) throw format_error("", "the order lists vertex " + std::to_string(v) + " twice or out of range");
    seen[v] = true;
    if (imported.onnx_nodes[v] >= 0) scheduled[static_cast<std::size_t>(imported.onnx_nodes[v])] = true;
  }
  std::unordered_map<std::string, std::size_t> made_by;
  for (std::size_t i = 0; i < count; ++i) {
    for (const auto& tensor : graph.node(static_cast<int>(i)).output()) {
      if (!tensor.empty()) made_by.emplace(tensor, i);
    }
  }
  std::vector<bool> placed(count, false);
  std::vector<bool> expanded(count, false);  // its inputs' nodes were pushed: it waits for them
  std::vector<std::size_t> sequence;
  sequence.reserve(count);
  // Places node `first` after the unscheduled nodes it needs, depth first without recursion.
  const auto place = [&](std::size_t first) {
    std::vector<std::size_t> stack{first};
    while (!stack.empty()) {
      const std::size_t i = stack.back();
      if (placed[i]) {
        stack.pop_back();
        continue;
      }
      const auto& node = graph.node(static_cast<int>(i));
      const std::size_t before = stack.size();
      for (const auto& tensor : node.input()) {
        const auto it = made_by.find(tensor);
        if (it == made_by.end() || placed[it->second]) continue;
        if (scheduled[it->second] || expanded[it->second]) {  // out of order, or a cycle
          throw format_error(detail::converter::display_name(node, static_cast<int>(i)),
                             "the order puts it before '" + tensor + "', which it reads");
        }
        stack.push_back(it->second);
      }
      expanded[i] = true;
      if (stack.size() == before) {
        placed[i] = true;
        sequence.push_back(i);
        stack.pop_back();
      }
    }
  };
  for (const std::size_t v : order) {
    if (imported.onnx_nodes[v] >= 0) place(static_cast<std::size_t>(imported.onnx_nodes[v]));
  }
  for (std::size_t i = 0; i < count; ++i) place(i);  // shape nodes that no scheduled node reads
  google::protobuf::RepeatedPtrField<onnx::NodeProto> nodes;
  for (const std::size_t i : sequence) *nodes.Add() = std::move(*graph.mutable_node(static_cast<int>(i)));
  graph.mutable_node()->Swap(&nodes);
  return model;
}

}  // namespace onnx_import
