// The ONNX adapter (examples/onnx_import/): models written in ONNX's text
// syntax at test time, their weights as external data that does not exist
// (only shapes matter), checked node by node with hand-computed sizes, flops
// and peaks; every defect refused naming the node or tensor.
#include "onnx_test_support.hpp"

#include <onnx_import/model.hpp>

#include <memopt/liveness.hpp>
#include <memopt/schedule.hpp>

#include <doctest/doctest.h>

#include <cstdint>
#include <fstream>
#include <string>
#include <vector>

namespace {

const std::string data_dir = MEMOPT_DATA_DIR;

using memopt::testing::model_of;
using memopt::testing::node_named;

/// A float32 weight of `dims` whose data lives in a file that does not exist.
void add_weight(onnx::ModelProto& model, const std::string& name, const std::vector<std::int64_t>& dims) {
  auto& t = *model.mutable_graph()->add_initializer();
  t.set_name(name);
  t.set_data_type(onnx::TensorProto::FLOAT);
  for (const auto d : dims) t.add_dims(d);
  t.set_data_location(onnx::TensorProto::EXTERNAL);
  auto& location = *t.add_external_data();
  location.set_key("location");
  location.set_value("missing.weights");
}

/// The refusal's message of converting `model`.
std::string refusal(const onnx::ModelProto& model, const onnx_import::import_options& options = {}) {
  try {
    (void)onnx_import::to_graph_json(model, options);
  } catch (const memopt::io::format_error& e) {
    return e.what();
  }
  FAIL("the model was accepted");
  return {};
}

std::uint64_t program_peak(const nlohmann::ordered_json& doc, bool storage_aliases) {
  const auto g = memopt::io::graph_from_json(doc, {.storage_aliases = storage_aliases});
  return memopt::liveness(g, memopt::program_order(g)).peak_bytes;
}

// x [2,3,8,8] -> Conv 3x3 pad 1 (4 filters) -> BatchNormalization -> Relu
// -> MaxPool 2x2 -> Flatten -> Gemm (64 -> 10) -> Softmax.
const char* small_cnn = R"(
<ir_version: 7, opset_import: ["" : 13]>
small_cnn (float[2,3,8,8] x) => (float[2,10] y) {
  c = Conv <pads = [1,1,1,1], kernel_shape = [3,3]> (x, w)
  b = BatchNormalization (c, scale, bias, mean, var)
  r = Relu (b)
  p = MaxPool <kernel_shape = [2,2], strides = [2,2]> (r)
  f = Flatten (p)
  g = Gemm (f, fc, fc_bias)
  y = Softmax (g)
}
)";

onnx::ModelProto small_cnn_model() {
  auto model = model_of(small_cnn);
  add_weight(model, "w", {4, 3, 3, 3});
  for (const char* name : {"scale", "bias", "mean", "var"}) add_weight(model, name, {4});
  add_weight(model, "fc", {64, 10});
  add_weight(model, "fc_bias", {10});
  return model;
}

}  // namespace

TEST_CASE("onnx: a small CNN node by node: sizes, flops, weights, views and in-place candidates") {
  const auto doc = onnx_import::to_graph_json(small_cnn_model());
  CHECK(doc["format"] == "memopt-graph/1");
  CHECK(doc["name"] == "small_cnn");
  // x, then each weight just before its first reader, then the nodes in the model's order.
  std::vector<std::string> names;
  for (const auto& node : doc["nodes"]) names.push_back(node["name"]);
  CHECK(names == std::vector<std::string>{"x", "w", "c", "scale", "bias", "mean", "var", "b", "r", "p", "f", "fc",
                                          "fc_bias", "g", "y"});
  const auto& x = node_named(doc, "x");
  CHECK(x["op"] == "input");
  CHECK(x["outputs"] == nlohmann::ordered_json::array({2 * 3 * 8 * 8 * 4}));
  CHECK(!x.contains("persistent"));
  const auto& w = node_named(doc, "w");
  CHECK(w["op"] == "parameter");
  CHECK(w["persistent"] == true);
  CHECK(w["outputs"] == nlohmann::ordered_json::array({4 * 3 * 3 * 3 * 4}));

  const auto& conv = node_named(doc, "c");
  CHECK(conv["op"] == "Conv");
  CHECK(conv["inputs"] == nlohmann::ordered_json::array({"x:0", "w:0"}));
  CHECK(conv["outputs"] == nlohmann::ordered_json::array({2 * 4 * 8 * 8 * 4}));
  CHECK(conv["flops"] == 2.0 * (2 * 4 * 8 * 8) * 3 * 3 * 3);  // 2 x outputs x Cin x kh x kw
  CHECK(conv["attrs"]["shape"] == nlohmann::ordered_json::array({2, 4, 8, 8}));
  CHECK(conv["attrs"]["dtype"] == "float32");
  CHECK(node_named(doc, "b")["flops"] == 4.0 * 512);
  const auto& relu = node_named(doc, "r");
  CHECK(relu["attrs"]["may_alias"] == "b:0");  // an in-place candidate, not a view
  CHECK(!relu["attrs"].contains("alias"));
  CHECK(relu["flops"] == 512.0);
  const auto& pool = node_named(doc, "p");
  CHECK(pool["outputs"] == nlohmann::ordered_json::array({2 * 4 * 4 * 4 * 4}));
  CHECK(pool["flops"] == 128.0 * 4);  // a 2x2 window per output
  const auto& flatten = node_named(doc, "f");
  CHECK(flatten["attrs"]["alias"] == "p:0");
  CHECK(flatten["attrs"]["view"] == true);
  CHECK(!flatten.contains("flops"));
  CHECK(node_named(doc, "g")["flops"] == 2.0 * 20 * 64);
  CHECK(doc["outputs"] == nlohmann::ordered_json::array({"y:0"}));

  // Program order, by hand (bytes): x 1536; c 2048; b 2048 (c dies); r 2048
  // (b dies); p 512; f views p; g 80; y 80. Peak at b: x is dead after c, so
  // c + b = 4096, and at r: b + r = 4096.
  CHECK(program_peak(doc, true) == 4096);
  // Every output apart: at f, p + f = 1024 < 4096; the peak is the same.
  CHECK(program_peak(doc, false) == 4096);
  const auto g = memopt::io::graph_from_json(doc);
  CHECK(memopt::liveness(g, memopt::program_order(g)).persistent_bytes == (108 + 16 + 640 + 10) * 4);
}

TEST_CASE("onnx: a view keeps its source alive in the storage-aware model, apart it is a copy") {
  const char* text = R"(
<ir_version: 7, opset_import: ["" : 13]>
views (float[4,256] x) => (float[4,16,16] s, float[4,256] t) {
  v = Reshape (x, shape)
  s = Relu (v)
  t = Neg (x)
}
)";
  auto model = model_of(text);
  auto& shape = *model.mutable_graph()->add_initializer();
  shape.set_name("shape");
  shape.set_data_type(onnx::TensorProto::INT64);
  shape.add_dims(3);
  for (const std::int64_t d : {4, 16, 16}) shape.add_int64_data(d);
  const auto doc = onnx_import::to_graph_json(model);
  CHECK(node_named(doc, "v")["attrs"]["alias"] == "x:0");
  // Storage-aware: x (4096) lives while v, s and t run; s 4096, t 4096: at t, x + s + t.
  CHECK(program_peak(doc, true) == 3 * 4096);
  // Apart: at s, x + v + s; at t, x + s + t (v died at s).
  CHECK(program_peak(doc, false) == 3 * 4096);
  const auto g = memopt::io::graph_from_json(doc);
  const auto live = memopt::liveness(g, memopt::program_order(g));
  CHECK(live.buffers.aliased == 1);
}

TEST_CASE("onnx: an element-wise op may run in its first input only, as ONNX Runtime's MayInplace(0, 0)") {
  const char* text = R"(
<ir_version: 7, opset_import: ["" : 13]>
broadcast (float[4] b, float[2,4] x, float[2,4] y) => (float[2,4] s, float[2,4] t, float[2,4] u) {
  s = Add (b, x)
  t = Add (x, b)
  u = Mul (x, y)
}
)";
  const auto doc = onnx_import::to_graph_json(model_of(text));
  // s: input 0 (b, 16 bytes) is smaller than s; x matches s but is input 1: no candidate.
  CHECK(!node_named(doc, "s")["attrs"].contains("may_alias"));
  CHECK(node_named(doc, "t")["attrs"]["may_alias"] == "x:0");
  CHECK(node_named(doc, "u")["attrs"]["may_alias"] == "x:0");  // both match: the first
}

TEST_CASE("onnx: Constant and what reads only weights are persistent, and multi-output ops have a port each") {
  const char* text = R"(
<ir_version: 7, opset_import: ["" : 13]>
weights (float[8,6] x) => (float[8,3] a, float[8,3] b, float[6,8] wt) {
  k = Constant <value = float[3] {1.0, 2.0, 3.0}> ()
  wt = Transpose (w)
  wi = Identity (w)
  parts = Constant <value = int64[2] {3, 3}> ()
  a0, b0 = Split <axis = 1> (x, parts)
  a = Add (a0, k)
  b = MatMul (x, wi2)
  wi2 = Identity (w2)
}
)";
  // wi2 is used before it is made: refused below; first the well-formed model.
  const char* ordered = R"(
<ir_version: 7, opset_import: ["" : 13]>
weights (float[8,6] x) => (float[8,3] a, float[8,3] b, float[6,8] wt) {
  k = Constant <value = float[3] {1.0, 2.0, 3.0}> ()
  wt = Transpose (w)
  parts = Constant <value = int64[2] {3, 3}> ()
  a0, b0 = Split <axis = 1> (x, parts)
  a = Add (a0, k)
  wi2 = Identity (w2)
  b = MatMul (x, wi2)
}
)";
  auto model = model_of(ordered);
  add_weight(model, "w", {8, 6});
  add_weight(model, "w2", {6, 3});
  const auto doc = onnx_import::to_graph_json(model);
  CHECK(node_named(doc, "k")["persistent"] == true);
  CHECK(node_named(doc, "wt")["persistent"] == true);   // a transposed weight: folded by runtimes
  CHECK(node_named(doc, "wi2")["persistent"] == true);  // Identity of an initializer
  CHECK(node_named(doc, "wi2")["attrs"]["alias"] == "w2:0");
  const auto& split = node_named(doc, "a0");
  CHECK(!split.contains("persistent"));
  CHECK(split["outputs"] == nlohmann::ordered_json::array({8 * 3 * 4, 8 * 3 * 4}));
  CHECK(split["attrs"]["shapes"] == nlohmann::ordered_json::array({{8, 3}, {8, 3}}));
  CHECK(node_named(doc, "a")["inputs"] == nlohmann::ordered_json::array({"a0:0", "k:0"}));
  CHECK(doc["outputs"] == nlohmann::ordered_json::array({"a:0", "b:0", "wt:0"}));
  CHECK(node_named(doc, "b")["flops"] == 2.0 * 8 * 3 * 6);

  auto unordered = model_of(text);
  add_weight(unordered, "w", {8, 6});
  add_weight(unordered, "w2", {6, 3});
  const std::string why = refusal(unordered);
  CHECK(why.find("input 'wi2'") != std::string::npos);
}

TEST_CASE("onnx: dynamic dimensions come from --dim, or the tensor is named") {
  const char* text = R"(
<ir_version: 7, opset_import: ["" : 13]>
dynamic (float[batch, 16] x) => (float[batch, 16] y) {
  y = Relu (x)
}
)";
  const auto model = model_of(text);
  const std::string why = refusal(model);
  CHECK(why.find("tensor 'x'") != std::string::npos);
  CHECK(why.find("dimension 'batch'") != std::string::npos);
  CHECK(why.find("--dim batch=") != std::string::npos);
  const auto doc = onnx_import::to_graph_json(model, {.dims = {{"batch", 5}}});
  CHECK(node_named(doc, "y")["outputs"] == nlohmann::ordered_json::array({5 * 16 * 4}));
  const std::string unknown = refusal(model, {.dims = {{"batch", 5}, {"seq", 3}}});
  CHECK(unknown.find("no dimension named 'seq'") != std::string::npos);
}

TEST_CASE("onnx: refusals name the node or tensor") {
  SUBCASE("an unknown op") {
    const auto model = model_of(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (float[4] x) => (float[4] y) { y = FancyOp (x) }
)");
    const std::string why = refusal(model);
    CHECK(why.find("unknown op 'FancyOp'") != std::string::npos);
  }
  SUBCASE("an op of a domain the model does not import") {
    const auto model = model_of(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (float[4] x) => (float[4] y) { y = com.example.Gelu (x) }
)");
    CHECK(refusal(model).find("does not import") != std::string::npos);
  }
  SUBCASE("a subgraph") {
    const auto model = model_of(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (bool c, float[4] x) => (float[4] y) {
  y = If (c) <then_branch = then_g () => (float[4] t) { t = Relu (x) },
              else_branch = else_g () => (float[4] e) { e = Neg (x) }>
}
)");
    const std::string why = refusal(model);
    CHECK(why.find("'If'") != std::string::npos);
    CHECK(why.find("subgraph") != std::string::npos);
  }
  SUBCASE("an attribute of the wrong type") {
    const auto model = model_of(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (float[1,1,4,4] x) => (float[1,1,2,2] y) { y = MaxPool <kernel_shape = "two"> (x) }
)");
    const std::string why = refusal(model);
    CHECK(why.find("'MaxPool'") != std::string::npos);
    CHECK(why.find("malformed") != std::string::npos);
  }
  SUBCASE("an op of an opset newer than the ONNX library knows") {
    const auto model = model_of(R"(
<ir_version: 8, opset_import: ["" : 18]>
g (float[4,4] x, int64[1] axes) => (float[4,1] y) { y = ReduceMean (x, axes) }
)");
    const std::string why = refusal(model);
    CHECK(why.find("'ReduceMean' is malformed") != std::string::npos);
    CHECK(why.find("opset 18 is newer than the 17") != std::string::npos);
  }
  SUBCASE("a zero stride, which ONNX's own shape inference divides by") {
    const auto model = model_of(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (float[1,1,4,4] x) => (float[1,1,2,2] y) { y = MaxPool <kernel_shape = [2,2], strides = [2,0]> (x) }
)");
    CHECK(refusal(model).find("attribute 'strides' below 1") != std::string::npos);
  }
  SUBCASE("operands of mismatched types") {
    const auto model = model_of(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (float[4] x, int64[4] n) => (float[4] y) { y = Add (x, n) }
)");
    CHECK(refusal(model).find("shape inference failed") != std::string::npos);
  }
  SUBCASE("a tensor made twice") {
    const auto model = model_of(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (float[4] x) => (float[4] y) { y = Relu (x)
  y = Neg (x) }
)");
    const std::string why = refusal(model);
    CHECK(why.find("output 'y'") != std::string::npos);
  }
  SUBCASE("a string tensor, which has no size") {
    const auto model = model_of(R"(
<ir_version: 7, opset_import: ["" : 13]>
g (string[4] x) => (string[4] y) { y = Identity (x) }
)");
    CHECK(refusal(model).find("tensor 'x' has element type string") != std::string::npos);
  }
}

TEST_CASE("onnx: bytes that are not a model are refused") {
  CHECK_THROWS_WITH_AS((void)onnx_import::parse_model(""), "empty file", memopt::io::format_error);
  std::string bytes;
  REQUIRE(small_cnn_model().SerializeToString(&bytes));
  CHECK_NOTHROW((void)onnx_import::to_graph_json(onnx_import::parse_model(bytes)));
  // Cut anywhere, the model is refused as truncated or as incomplete (or, cut
  // where a field ends, read and converted, and still refused or a valid graph).
  for (std::size_t cut = 1; cut < bytes.size(); cut += 7) {
    try {
      (void)onnx_import::to_graph_json(onnx_import::parse_model(bytes.substr(0, cut)));
    } catch (const memopt::io::format_error&) {
    }
  }
  CHECK_THROWS_AS((void)onnx_import::parse_model(R"({"format": "memopt-graph/1", "nodes": []})"),
                  memopt::io::format_error);
}

TEST_CASE("onnx: torchvision's ResNet-18 exported graph-only has the shipped graph's peak") {
  // examples/data/onnx/resnet18_b1.onnx: torch.onnx.export without weight data
  // (scripts/export_torch.py); resnet18_infer_b1.json: the same network traced
  // with torch.fx. The ONNX graph has no separate parameter nodes for batch
  // norm's num_batches_tracked and Identity nodes for deduplicated weights,
  // but its activations are the same tensors in the same order.
  const auto g = onnx_import::read_graph(data_dir + "/onnx/resnet18_b1.onnx");
  const auto shipped = memopt::io::read_graph(data_dir + "/resnet18_infer_b1.json");
  const auto peak_of = [](const auto& graph) { return memopt::liveness(graph, memopt::program_order(graph)).peak_bytes; };
  CHECK(peak_of(g) == 6422528);
  CHECK(peak_of(shipped) == 6422528);
  const auto apart = onnx_import::read_graph(data_dir + "/onnx/resnet18_b1.onnx", {}, {.storage_aliases = false});
  CHECK(peak_of(apart) == 6422528);
  const auto best = memopt::exact_schedule(g);
  CHECK(best.proved_optimal);
  CHECK(best.peak_bytes == memopt::exact_schedule(shipped).peak_bytes);
}
