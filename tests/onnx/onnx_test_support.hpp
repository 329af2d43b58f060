#pragma once
// Helpers of the ONNX adapter's tests: models in ONNX's text syntax, nodes of
// the imported memopt-graph/1 document by name.
#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <string>

namespace memopt::testing {

inline onnx::ModelProto model_of(const std::string& text) {
  onnx::ModelProto model;
  const auto status = onnx::OnnxParser::Parse(model, text.c_str());
  REQUIRE_MESSAGE(status.IsOK(), status.ErrorMessage());
  return model;
}

inline const nlohmann::ordered_json& node_named(const nlohmann::ordered_json& doc, const std::string& name) {
  for (const auto& node : doc["nodes"]) {
    if (node["name"] == name) return node;
  }
  FAIL("no node " << name);
  static const nlohmann::ordered_json none;
  return none;
}

}  // namespace memopt::testing
