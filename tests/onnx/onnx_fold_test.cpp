// Shape arithmetic folded by the ONNX importer (examples/onnx_import/fold.hpp):
// fold_node op by op with hand-computed values, then small models where ONNX
// 1.12's own inference leaves a shape unknown (checked here too), imported
// with exact sizes, shape nodes left out of the graph and control edges kept.
#include "onnx_test_support.hpp"

#include <onnx_import/model.hpp>

#include <memopt/liveness.hpp>
#include <memopt/schedule.hpp>

#include <doctest/doctest.h>
#include <onnx/defs/parser.h>

#include <algorithm>
#include <cstdint>
#include <map>
#include <optional>
#include <string>
#include <vector>

namespace {

using onnx_import::constant_tensor;
using values = std::vector<std::int64_t>;

constant_tensor int64s(onnx_import::shape dims, values v) {
  return {.element = onnx::TensorProto::INT64, .dims = std::move(dims), .values = std::move(v)};
}

/// fold_node on a node in ONNX's text syntax, its inputs' values from `known`
/// and the shape of "x" (for Shape) [2,3,4,5].
std::optional<std::vector<constant_tensor>> fold(const char* text, const std::map<std::string, constant_tensor>& known) {
  onnx::NodeProto node;
  const auto status = onnx::OnnxParser::Parse(node, text);
  REQUIRE_MESSAGE(status.IsOK(), status.ErrorMessage());
  static const onnx_import::shape x_shape{2, 3, 4, 5};
  return onnx_import::fold_node(
      node, "n",
      [&](const std::string& t) -> const constant_tensor* {
        const auto it = known.find(t);
        return it == known.end() ? nullptr : &it->second;
      },
      [&](const std::string& t) -> const onnx_import::shape* { return t == "x" ? &x_shape : nullptr; });
}

/// The single output of a node that folds.
constant_tensor folded(const char* text, const std::map<std::string, constant_tensor>& known = {}) {
  const auto r = fold(text, known);
  REQUIRE(r.has_value());
  REQUIRE(r->size() == 1);
  return r->front();
}

std::string fold_refusal(const char* text, const std::map<std::string, constant_tensor>& known) {
  try {
    (void)fold(text, known);
  } catch (const memopt::io::format_error& e) {
    CHECK(e.node == "n");
    return e.what();
  }
  FAIL("the node folded");
  return {};
}

using memopt::testing::model_of;
using memopt::testing::node_named;

/// Whether ONNX's own inference (with data propagation) gives `tensor` a static shape.
bool onnx_infers_shape(onnx::ModelProto model, const std::string& tensor) {
  onnx::shape_inference::InferShapes(model, onnx::OpSchemaRegistry::Instance(),
                                     onnx::ShapeInferenceOptions(true, 1, true));
  for (const auto& value : model.graph().value_info()) {
    if (value.name() != tensor || !value.type().tensor_type().has_shape()) continue;
    const auto& dims = value.type().tensor_type().shape().dim();
    return std::ranges::all_of(dims, [](const auto& d) { return d.has_dim_value(); });
  }
  return false;
}

/// The document of a model in which ONNX's own inference leaves `unsized` without a static shape.
nlohmann::ordered_json import_past_onnx(const char* text, const std::string& unsized) {
  const auto model = model_of(text);
  CHECK_FALSE(onnx_infers_shape(model, unsized));
  return onnx_import::to_graph_json(model);
}

std::vector<std::string> node_names(const nlohmann::ordered_json& doc) {
  std::vector<std::string> names;
  for (const auto& node : doc["nodes"]) names.push_back(node["name"]);
  return names;
}

std::uint64_t program_peak(const nlohmann::ordered_json& doc) {
  const auto g = memopt::io::graph_from_json(doc);
  return memopt::liveness(g, memopt::program_order(g)).peak_bytes;
}

}  // namespace

TEST_CASE("onnx fold: Shape, Gather, Slice, Concat by hand") {
  const auto shape = folded("s = Shape <start = 1, end = -1> (x)");
  CHECK(shape.dims == onnx_import::shape{2});
  CHECK(shape.values == values{3, 4});
  CHECK(folded("s = Size (x)").values == values{120});
  // [[1,2,3],[4,5,6]], columns 2 and -3 (= 0): [[3,1],[6,4]]
  const auto gathered = folded("g = Gather <axis = 1> (d, i)", {{"d", int64s({2, 3}, {1, 2, 3, 4, 5, 6})}, {"i", int64s({2}, {2, -3})}});
  CHECK(gathered.dims == onnx_import::shape{2, 2});
  CHECK(gathered.values == values{3, 1, 6, 4});
  // [[0..4],[5..9]] from column -1 backwards by 2 to the start: columns 4, 2, 0.
  const auto sliced = folded("y = Slice (d, s, e, a, st)", {{"d", int64s({2, 5}, {0, 1, 2, 3, 4, 5, 6, 7, 8, 9})},
                                                            {"s", int64s({1}, {-1})},
                                                            {"e", int64s({1}, {INT64_MIN})},
                                                            {"a", int64s({1}, {1})},
                                                            {"st", int64s({1}, {-2})}});
  CHECK(sliced.dims == onnx_import::shape{2, 3});
  CHECK(sliced.values == values{4, 2, 0, 9, 7, 5});
  // Ends past the end are clamped; starts past it give nothing.
  CHECK(folded("y = Slice (d, s, e)", {{"d", int64s({4}, {7, 8, 9, 10})}, {"s", int64s({1}, {1})}, {"e", int64s({1}, {INT64_MAX})}}).values ==
        values{8, 9, 10});
  CHECK(folded("y = Slice (d, s, e)", {{"d", int64s({4}, {7, 8, 9, 10})}, {"s", int64s({1}, {6})}, {"e", int64s({1}, {9})}}).dims ==
        onnx_import::shape{0});
  const auto joined = folded("c = Concat <axis = 1> (a, b)", {{"a", int64s({2, 1}, {1, 2})}, {"b", int64s({2, 2}, {3, 4, 5, 6})}});
  CHECK(joined.dims == onnx_import::shape{2, 3});
  CHECK(joined.values == values{1, 3, 4, 2, 5, 6});
}

TEST_CASE("onnx fold: arithmetic, comparisons and Where broadcast, as integers") {
  // [[10],[20]] - [1,2,3] = [[9,8,7],[19,18,17]]
  const auto difference = folded("y = Sub (a, b)", {{"a", int64s({2, 1}, {10, 20})}, {"b", int64s({3}, {1, 2, 3})}});
  CHECK(difference.dims == onnx_import::shape{2, 3});
  CHECK(difference.values == values{9, 8, 7, 19, 18, 17});
  // Div truncates as C++ (and ONNX Runtime) do; Mod takes the divisor's sign.
  CHECK(folded("y = Div (a, b)", {{"a", int64s({2}, {7, -7})}, {"b", int64s({}, {2})}}).values == values{3, -3});
  CHECK(folded("y = Mod (a, b)", {{"a", int64s({3}, {7, -7, 7})}, {"b", int64s({3}, {3, 3, -3})}}).values == values{1, 2, -2});
  CHECK(folded("y = Max (a, b, c)", {{"a", int64s({2}, {1, 9})}, {"b", int64s({}, {4})}, {"c", int64s({2}, {2, 3})}}).values ==
        values{4, 9});
  // torch's expand: Where(Equal(shape, -1), ones, shape)
  const auto equal = folded("q = Equal (s, m)", {{"s", int64s({3}, {2, -1, 4})}, {"m", int64s({}, {-1})}});
  CHECK(equal.element == onnx::TensorProto::BOOL);
  CHECK(equal.values == values{0, 1, 0});
  CHECK(folded("w = Where (q, o, s)", {{"q", equal}, {"o", int64s({3}, {1, 1, 1})}, {"s", int64s({3}, {2, -1, 4})}}).values ==
        values{2, 1, 4});
  const auto wrapped = folded("c = Cast <to = 3> (a)", {{"a", int64s({2}, {300, -129})}});  // to int8
  CHECK(wrapped.element == onnx::TensorProto::INT8);
  CHECK(wrapped.values == values{44, 127});
  CHECK(folded("c = Cast <to = 9> (a)", {{"a", int64s({2}, {0, 5})}}).values == values{0, 1});  // to bool
  CHECK_FALSE(fold("c = Cast <to = 1> (a)", {{"a", int64s({1}, {5})}}).has_value());          // to float: not folded
}

TEST_CASE("onnx fold: Range, ConstantOfShape, Reshape, Expand, Transpose, Squeeze and Unsqueeze") {
  const auto down = folded("r = Range (a, b, c)", {{"a", int64s({}, {10})}, {"b", int64s({}, {1})}, {"c", int64s({}, {-3})}});
  CHECK(down.dims == onnx_import::shape{3});
  CHECK(down.values == values{10, 7, 4});
  CHECK(folded("r = Range (a, b, c)", {{"a", int64s({}, {1})}, {"b", int64s({}, {1})}, {"c", int64s({}, {2})}}).dims ==
        onnx_import::shape{0});
  const auto filled = folded("f = ConstantOfShape <value = int64[1] {7}> (s)", {{"s", int64s({2}, {2, 2})}});
  CHECK(filled.dims == onnx_import::shape{2, 2});
  CHECK(filled.values == values{7, 7, 7, 7});
  CHECK_FALSE(fold("f = ConstantOfShape (s)", {{"s", int64s({1}, {3})}}).has_value());  // float zeros
  CHECK_FALSE(fold("f = ConstantOfShape <value = int64[1] {7}> (s)", {{"s", int64s({2}, {1000, 1000})}}).has_value());
  // 0 copies the input's dimension, -1 takes what is left: [3,4] -> [3,2,2].
  const auto reshaped = folded("r = Reshape (d, s)", {{"d", int64s({3, 4}, values(12, 1))}, {"s", int64s({3}, {0, -1, 2})}});
  CHECK(reshaped.dims == onnx_import::shape{3, 2, 2});
  const auto expanded = folded("e = Expand (d, s)", {{"d", int64s({3, 1}, {1, 2, 3})}, {"s", int64s({2}, {1, 2})}});
  CHECK(expanded.dims == onnx_import::shape{3, 2});
  CHECK(expanded.values == values{1, 1, 2, 2, 3, 3});
  CHECK(folded("u = Unsqueeze (d, a)", {{"d", int64s({3}, {1, 2, 3})}, {"a", int64s({2}, {0, -1})}}).dims ==
        onnx_import::shape{1, 3, 1});
  CHECK(folded("q = Squeeze (d)", {{"d", int64s({1, 3, 1}, {1, 2, 3})}}).dims == onnx_import::shape{3});
  // Swin's padding: [[1,2,3],[4,5,6]] transposed is [[1,4],[2,5],[3,6]].
  const auto transposed = folded("t = Transpose <perm = [1, 0]> (d)", {{"d", int64s({2, 3}, {1, 2, 3, 4, 5, 6})}});
  CHECK(transposed.dims == onnx_import::shape{3, 2});
  CHECK(transposed.values == values{1, 4, 2, 5, 3, 6});
  CHECK(folded("k = Constant <value_ints = [4, 5]> ()").values == values{4, 5});
  CHECK_FALSE(fold("y = Relu (a)", {{"a", int64s({1}, {1})}}).has_value());  // not shape arithmetic
  CHECK_FALSE(fold("y = Add (a, b)", {{"a", int64s({1}, {1})}}).has_value());  // b unknown
}

TEST_CASE("onnx fold: bad shape arithmetic is refused naming the node") {
  CHECK(fold_refusal("y = Div (a, b)", {{"a", int64s({2}, {4, 4})}, {"b", int64s({2}, {2, 0})}}) ==
        "node 'n': op 'Div' divides by zero");
  CHECK(fold_refusal("y = Mul (a, b)", {{"a", int64s({}, {INT64_MAX})}, {"b", int64s({}, {2})}}) ==
        "node 'n': op 'Mul' overflows 64-bit integers");
  CHECK(fold_refusal("g = Gather (d, i)", {{"d", int64s({3}, {1, 2, 3})}, {"i", int64s({}, {3})}}) ==
        "node 'n': op 'Gather' has index 3 outside 0..2");
  CHECK(fold_refusal("r = Reshape (d, s)", {{"d", int64s({6}, values(6, 0))}, {"s", int64s({1}, {4})}}) ==
        "node 'n': op 'Reshape' reshapes 6 elements into 4");
  CHECK(fold_refusal("y = Add (a, b)", {{"a", int64s({2}, {1, 2})}, {"b", int64s({3}, {1, 2, 3})}}) ==
        "node 'n': op 'Add' has operands of dimensions 2 and 3 that do not broadcast");
  CHECK(fold_refusal("r = Range (a, b, c)", {{"a", int64s({}, {0})}, {"b", int64s({}, {4})}, {"c", int64s({}, {0})}}) ==
        "node 'n': op 'Range' has delta 0");
}

// torch.chunk(x, 2, dim=1) as torch 1.13 exports it: the half comes from Shape and Div.
const char* chunk_model = R"(
<ir_version: 8, opset_import: ["" : 13]>
chunk (float[1,4,3,3] x) => (float[1,2,3,3] y) {
  s = Shape (x)
  i = Constant <value = int64[1] {1}> ()
  c = Gather <axis = 0> (s, i)
  two = Constant <value = int64[1] {2}> ()
  h = Div (c, two)
  zero = Constant <value = int64[1] {0}> ()
  big = Constant <value = int64[1] {9223372036854775807}> ()
  a = Slice (x, zero, h, i)
  b = Slice (x, h, big, i)
  y = Add (a, b)
}
)";

TEST_CASE("onnx fold: torch's chunk, sliced at a Div of a Shape, has static halves and no shape nodes") {
  const auto doc = import_past_onnx(chunk_model, "a");
  // The shape nodes and their constants are left out; the slices read x alone.
  CHECK(node_names(doc) == std::vector<std::string>{"x", "a", "b", "y"});
  for (const char* half : {"a", "b"}) {
    const auto& slice = node_named(doc, half);
    CHECK(slice["inputs"] == nlohmann::ordered_json::array({"x:0"}));
    CHECK(slice["outputs"] == nlohmann::ordered_json::array({2 * 3 * 3 * 4}));
    CHECK(slice["attrs"]["shape"] == nlohmann::ordered_json::array({1, 2, 3, 3}));
    CHECK(!slice.contains("control"));  // x is a graph input: nothing to order
  }
  // x 144 B lives until b: x + a + b = 288 at b; then a + b + y = 216.
  CHECK(program_peak(doc) == 288);
}

TEST_CASE("onnx fold: a shape read from another node's output orders that node first, without keeping it alive") {
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 13]>
heads (float[2,6,8] x, float[2,48] z) => (float[2,3,16] y) {
  xr = Neg (x)
  s = Shape (xr)
  zero = Constant <value = int64[1] {0}> ()
  n = Gather <axis = 0> (s, zero)
  one = Constant <value = int64[1] {1}> ()
  m = Div (n, one)
  three = Constant <value = int64[1] {3}> ()
  last = Constant <value = int64[1] {-1}> ()
  shape = Concat <axis = 0> (m, three, last)
  r = Relu (z)
  y = Reshape (r, shape)
}
)";
  const auto doc = import_past_onnx(text, "y");
  CHECK(node_names(doc) == std::vector<std::string>{"x", "z", "xr", "r", "y"});
  const auto& reshape = node_named(doc, "y");
  CHECK(reshape["inputs"] == nlohmann::ordered_json::array({"r:0"}));
  CHECK(reshape["control"] == nlohmann::ordered_json::array({"xr"}));  // Shape(xr) comes before y in the file
  CHECK(reshape["outputs"] == nlohmann::ordered_json::array({2 * 48 * 4}));
  CHECK(reshape["attrs"]["shape"] == nlohmann::ordered_json::array({2, 3, 16}));
  // x 384 and z 384 B; xr 384 is read by nobody in the graph, so it dies at its step:
  // x + z + xr = 1152 there; then z + r = 768 (y is a view of r).
  CHECK(program_peak(doc) == 1152);
}

TEST_CASE("onnx fold: Range, Where and Expand as torch exports them, and what reads only folded values is persistent") {
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 13]>
positions (float[1,5,4] x) => (int64[1,5] p, float[1,5,4] e) {
  s = Shape (x)
  one = Constant <value = int64 {1}> ()
  len = Gather <axis = 0> (s, one)
  start = Constant <value = int64 {0}> ()
  r = Range (start, len, one)
  axes = Constant <value = int64[1] {0}> ()
  p = Unsqueeze (r, axes)
  w = Constant <value = float[4] {1.0, 2.0, 3.0, 4.0}> ()
  minus = Constant <value = int64 {-1}> ()
  unset = Equal (s, minus)
  three = Constant <value = int64[1] {3}> ()
  ones = ConstantOfShape <value = int64[1] {1}> (three)
  wanted = Where (unset, ones, s)
  ex = Expand (w, wanted)
  e = Add (x, ex)
}
)";
  const auto doc = import_past_onnx(text, "p");
  CHECK(node_names(doc) == std::vector<std::string>{"x", "p", "w", "ex", "e"});
  // p is a graph output: its node stays, persistent (a runtime folds it), reading nothing.
  const auto& positions = node_named(doc, "p");
  CHECK(positions["persistent"] == true);
  CHECK(!positions.contains("inputs"));
  CHECK(positions["outputs"] == nlohmann::ordered_json::array({5 * 8}));
  CHECK(positions["attrs"]["dtype"] == "int64");
  // A float weight expanded to a folded shape is a folded weight too.
  const auto& expanded = node_named(doc, "ex");
  CHECK(expanded["persistent"] == true);
  CHECK(expanded["inputs"] == nlohmann::ordered_json::array({"w:0"}));
  CHECK(expanded["outputs"] == nlohmann::ordered_json::array({5 * 4 * 4}));
  CHECK(node_named(doc, "e")["outputs"] == nlohmann::ordered_json::array({80}));
  const auto g = memopt::io::graph_from_json(doc);
  const auto live = memopt::liveness(g, memopt::program_order(g));
  CHECK(live.persistent_bytes == 40 + 16 + 80);  // p, w, ex
  CHECK(live.peak_bytes == 80 + 80);             // x and e (x dies there)
}

TEST_CASE("onnx fold: the shape of a weight stored in the model folds (Swin-v2's zeroed key bias)") {
  // torch exports `bias[k:2k].zero_()` as a ScatterND of zeros whose shape comes from
  // Shape of the weight itself; an empty Slice of that shape leaves ONNX's inference behind.
  const char* text = R"(
<ir_version: 8, opset_import: ["" : 13]>
zeroed (float[2,6] x) => (float[2,6] y)
<float[6] b = {1.0, 2.0, 3.0, 4.0, 5.0, 6.0}>
{
  s = Shape (b)
  one = Constant <value = int64[1] {1}> ()
  big = Constant <value = int64[1] {9223372036854775807}> ()
  zero = Constant <value = int64[1] {0}> ()
  rest = Slice (s, one, big, zero)
  six = Constant <value = int64[6] {0, 1, 2, 3, 4, 5}> ()
  n = Shape (six)
  shape = Concat <axis = 0> (n, rest)
  z = Constant <value = float {0.0}> ()
  e = Expand (z, s)
  r = Reshape (e, shape)
  y = Add (x, r)
}
)";
  const auto doc = import_past_onnx(text, "r");
  CHECK(node_named(doc, "r")["outputs"] == nlohmann::ordered_json::array({6 * 4}));
  CHECK(node_named(doc, "r")["attrs"]["shape"] == nlohmann::ordered_json::array({6}));
}

TEST_CASE("onnx fold: a shape computation that divides by zero is refused naming its node") {
  const auto model = model_of(R"(
<ir_version: 8, opset_import: ["" : 13]>
g (float[1,4] x) => (float[1,4] y) {
  s = Shape (x)
  z = Constant <value = int64[2] {1, 0}> ()
  d = Div (s, z)
  y = Reshape (x, d)
}
)");
  try {
    (void)onnx_import::to_graph_json(model);
    FAIL("accepted");
  } catch (const memopt::io::format_error& e) {
    CHECK(e.node == "Div #2");
    CHECK(std::string(e.what()) == "node 'Div #2': op 'Div' divides by zero");
  }
}
