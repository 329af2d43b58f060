// memopt-plan on ONNX models, run as a user runs it: every subcommand reads
// .onnx, convert writes memopt-graph/1, and a bad model or option is exit 1
// with one line naming the file and the node or tensor.
#include "../cli/run_plan.hpp"

#include <memopt/io/graph_file.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <cstdlib>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

namespace {

const std::string data_dir = MEMOPT_DATA_DIR;
const std::string resnet18 = data_dir + "/onnx/resnet18_b1.onnx";

using memopt::testing::check_refused;
using memopt::testing::plan;
using memopt::testing::temp_path;
using memopt::testing::write_temp;

/// A model in ONNX's text syntax, serialised to a temporary .onnx file.
std::string onnx_file(const std::string& name, const char* text) {
  onnx::ModelProto model;
  const auto status = onnx::OnnxParser::Parse(model, text);
  REQUIRE_MESSAGE(status.IsOK(), status.ErrorMessage());
  std::string bytes;
  REQUIRE(model.SerializeToString(&bytes));
  return write_temp(name, bytes).string();
}

const char* dynamic_model = R"(
<ir_version: 7, opset_import: ["" : 13]>
dynamic (float[batch, 16] x) => (float[1, 1] y) {
  a = Relu (x)
  b = Neg (a)
  c = Exp (a)
  d = Add (b, c)
  y = ReduceSum (d)
}
)";

// Two branches from x; the second's Reshape takes its shape from Shape(a) over
// a Div that ONNX's own inference does not evaluate: Shape, Gather, Div and
// Concat are folded, left out of the graph, and the Reshape is ordered after a.
const char* branches_model = R"(
<ir_version: 8, opset_import: ["" : 13]>
branches (float[1,64] x) => (float[1,64] y) {
  a = Relu (x)
  b = Neg (x)
  s = Shape (a)
  zero = Constant <value = int64[1] {0}> ()
  n = Gather <axis = 0> (s, zero)
  one = Constant <value = int64[1] {1}> ()
  m = Div (n, one)
  minus = Constant <value = int64[1] {-1}> ()
  shape = Concat <axis = 0> (m, minus)
  c = Sigmoid (b)
  d = Reshape (c, shape)
  e = Exp (a)
  y = Add (d, e)
}
)";

/// The first output of each node of an ONNX file, in the file's order.
std::vector<std::string> node_outputs(const std::string& path) {
  std::ifstream file(path, std::ios::binary);
  std::stringstream bytes;
  bytes << file.rdbuf();
  onnx::ModelProto model;
  REQUIRE(model.ParseFromString(bytes.str()));
  std::vector<std::string> outputs;
  for (const auto& node : model.graph().node()) outputs.push_back(node.output(0));
  return outputs;
}

/// Whether Debian's Python has onnx, whose checker the written models must pass.
bool have_python_onnx() { return std::system("/usr/bin/python3 -c 'import onnx' 2>/dev/null") == 0; }

void check_with_onnx_checker(const std::string& path) {
  if (!have_python_onnx()) return;
  const std::string command = "/usr/bin/python3 -c \"import onnx, sys; onnx.checker.check_model(onnx.load(sys.argv[1], "
                              "load_external_data=False))\" " + path;
  CHECK(std::system(command.c_str()) == 0);
}

}  // namespace

TEST_CASE("onnx cli: convert --schedule writes the model in memopt's order, shape nodes before their readers") {
  const auto model = onnx_file("branches.onnx", branches_model);
  const auto exact = plan("schedule " + model + " --algo exact");
  REQUIRE(exact.status == 0);
  const auto schedule = nlohmann::json::parse(exact.out);
  const auto written = temp_path("branches_exact.onnx").string();
  const auto r = plan("convert " + model + " --schedule exact --output " + written);
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["output"] == written);
  CHECK(summary["algo"] == "exact");
  CHECK(summary["nodes"] == 13);  // every ONNX node, folded or not
  CHECK(summary["peak_bytes"] == schedule["peak_bytes"]);
  // The graph's nodes in the schedule's order; each left-out node just before its first reader.
  std::vector<std::string> graph_order;
  for (const auto& name : schedule["order"]) {
    if (name != "x") graph_order.push_back(name);
  }
  std::vector<std::string> file_order;
  const std::vector<std::string> left_out{"s", "zero", "n", "one", "m", "minus", "shape"};
  for (const auto& output : node_outputs(written)) {
    if (std::ranges::find(left_out, output) == left_out.end()) file_order.push_back(output);
  }
  CHECK(file_order == graph_order);
  const auto all = node_outputs(written);
  const auto at = [&](const std::string& t) { return std::ranges::find(all, t) - all.begin(); };
  CHECK(at("a") < at("s"));  // Shape(a) after a, which the graph orders before d by a control edge
  CHECK(at("shape") == at("d") - 1);
  // The written file, read back, has the schedule's peak in its own (program) order:
  // x 256, then a and b 256 each, c, d a view, e, y: the optimum runs a's branch last.
  const auto peak = nlohmann::json::parse(plan("peak " + written).out);
  CHECK(peak["peak_bytes"] == schedule["peak_bytes"]);
  CHECK(peak["peak_bytes"] == 768);
  check_with_onnx_checker(written);
}

TEST_CASE("onnx cli: convert --schedule keeps the weights, external data references and all") {
  const auto written = temp_path("resnet18_best.onnx").string();
  const auto r = plan("convert " + resnet18 + " --schedule best --work-limit 100000 --output " + written);
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["peak_bytes"] == 6422528);
  CHECK(nlohmann::json::parse(plan("peak " + written).out)["peak_bytes"] == 6422528);
  const auto read = [](const std::string& path) {
    std::ifstream file(path, std::ios::binary);
    std::stringstream bytes;
    bytes << file.rdbuf();
    onnx::ModelProto model;
    REQUIRE(model.ParseFromString(bytes.str()));
    return model;
  };
  const auto before = read(resnet18);
  const auto after = read(written);
  REQUIRE(after.graph().initializer_size() == before.graph().initializer_size());
  for (int i = 0; i < before.graph().initializer_size(); ++i) {
    CHECK(after.graph().initializer(i).SerializeAsString() == before.graph().initializer(i).SerializeAsString());
  }
  CHECK(after.graph().node_size() == before.graph().node_size());
  check_refused(plan("convert " + resnet18 + " --output " + written), "--schedule ALGO and --output NEW.onnx go together");
  check_refused(plan("convert " + resnet18 + " --schedule best"), "--schedule ALGO and --output NEW.onnx go together");
  check_refused(plan("convert " + resnet18 + " --schedule nonsense --output " + written), "--schedule");
}

TEST_CASE("onnx cli: arena --value-offsets keys the plan by ONNX value names") {
  const auto model = onnx_file("branches_arena.onnx", branches_model);
  const auto offsets_path = temp_path("branches_offsets.json").string();
  const auto r = plan("arena " + model + " --algo exact --schedule exact --value-offsets " + offsets_path);
  REQUIRE(r.status == 0);
  const auto arena = nlohmann::json::parse(r.out);
  std::ifstream file(offsets_path);
  const auto written = nlohmann::json::parse(file);
  CHECK(written["arena_bytes"] == arena["arena_bytes"]);
  CHECK(written["arena_bytes"] == 768);  // the peak: three 256 B tensors at once
  const auto& values = written["values"];
  std::vector<std::string> names;
  for (const auto& [name, placed] : values.items()) {
    names.push_back(name);
    CHECK(placed["size"] == 256);
    CHECK(placed["offset"].get<std::uint64_t>() + 256 <= 768);
  }
  std::ranges::sort(names);
  CHECK(names == std::vector<std::string>{"a", "b", "c", "d", "e", "x", "y"});  // no shape arithmetic
  CHECK(values["d"]["offset"] == values["c"]["offset"]);  // Reshape: a view of c
  check_refused(plan("arena " + data_dir + "/small/diamond.json --value-offsets " + offsets_path),
                "--value-offsets names ONNX values");
}

TEST_CASE("onnx cli: every subcommand that reads a graph reads an ONNX model") {
  const auto peak = plan("peak " + resnet18);
  REQUIRE(peak.status == 0);
  const auto j = nlohmann::json::parse(peak.out);
  CHECK(j["graph"] == "resnet18_b1");
  CHECK(j["peak_bytes"] == 6422528);  // resnet18_infer_b1.json's, in both memory models
  CHECK(nlohmann::json::parse(plan("peak --no-alias " + resnet18).out)["peak_bytes"] == 6422528);
  const auto exact = plan("schedule " + resnet18 + " --algo exact");
  REQUIRE(exact.status == 0);
  CHECK(nlohmann::json::parse(exact.out)["proved_optimal"] == true);
  for (const std::string& args : {"arena " + resnet18, "share " + resnet18 + " --algo dag",
                                 "simulate " + resnet18, "rewrite " + resnet18 + " --budget 4000000",
                                 "compare " + resnet18 + " --families schedule --algos program,exact"}) {
    const auto r = plan(args);
    INFO(args << "\n" << r.err);
    CHECK(r.status == 0);
    CHECK(r.err.empty());
  }
  const auto report = plan("report " + resnet18);
  CHECK(report.status == 0);
  CHECK(report.out.find("memopt-plan report: resnet18_b1") != std::string::npos);
}

TEST_CASE("onnx cli: convert writes memopt-graph/1 that reads back with the same peak") {
  const auto json = temp_path("resnet18.json").string();
  const auto r = plan("convert " + resnet18 + " --output " + json);
  REQUIRE(r.status == 0);
  const auto summary = nlohmann::json::parse(r.out);
  CHECK(summary["output"] == json);
  const auto g = memopt::io::read_graph(json);
  CHECK(summary["nodes"] == num_vertices(g));
  CHECK(summary["edges"] == num_edges(g));
  CHECK(nlohmann::json::parse(plan("peak " + json).out)["peak_bytes"] == 6422528);
  const auto gz = temp_path("resnet18.json.gz").string();
  REQUIRE(plan("convert " + resnet18 + " --output " + gz).status == 0);
  CHECK(nlohmann::json::parse(plan("peak " + gz).out)["peak_bytes"] == 6422528);
  const auto stdout_text = plan("convert " + resnet18);
  REQUIRE(stdout_text.status == 0);
  CHECK(memopt::io::parse_graph(stdout_text.out)[boost::graph_bundle].name == "resnet18_b1");
}

TEST_CASE("onnx cli: dynamic dimensions from --dim") {
  const auto model = onnx_file("dynamic.onnx", dynamic_model);
  check_refused(plan("peak " + model), "tensor 'x' has dimension 'batch' of unknown size (give it with --dim batch=N)");
  const auto r = plan("peak " + model + " --dim batch=8");
  REQUIRE(r.status == 0);
  // In place (ONNX's default): c takes a over (its last reader), d takes b; x
  // (the caller's) and y (a graph output) are never taken over or taking.
  CHECK(nlohmann::json::parse(r.out)["peak_bytes"] == 2 * 8 * 16 * 4);
  const auto apart = plan("peak " + model + " --dim batch=8 --no-in-place");
  CHECK(nlohmann::json::parse(apart.out)["peak_bytes"] == 3 * 8 * 16 * 4);  // a, b and c at c's step
  // convert --schedule orders under the same rule, and says that order's peak.
  const auto written = temp_path("dynamic_exact.onnx").string();
  const auto reordered = plan("convert " + model + " --dim batch=8 --schedule exact --output " + written);
  REQUIRE(reordered.status == 0);
  CHECK(nlohmann::json::parse(reordered.out)["peak_bytes"] == 2 * 8 * 16 * 4);
  const auto reordered_apart = plan("convert " + model + " --dim batch=8 --schedule exact --no-in-place --output " + written);
  CHECK(nlohmann::json::parse(reordered_apart.out)["peak_bytes"] == 3 * 8 * 16 * 4);
  check_refused(plan("peak " + model + " --dim batch=0"), "'batch=0' is not NAME=SIZE with a size from 1");
  check_refused(plan("peak " + model + " --dim batch"), "is not NAME=SIZE");
  check_refused(plan("peak " + model + " --dim batch=8 --dim seq=4"), "the model has no dimension named 'seq'");
  check_refused(plan("peak " + data_dir + "/small/diamond.json --dim batch=8"), "--dim applies to ONNX models only");
  check_refused(plan("convert " + data_dir + "/small/diamond.json"), "convert reads ONNX models");
}

TEST_CASE("onnx cli: a bad model is one line naming the file and what is wrong") {
  const auto unknown = onnx_file("unknown.onnx", R"(
<ir_version: 7, opset_import: ["" : 13]>
g (float[4] x) => (float[4] y) { y = FancyOp (x) }
)");
  check_refused(plan("peak " + unknown), unknown + ": node 'FancyOp #0': unknown op 'FancyOp' at opset 13");
  const auto truncated = write_temp("truncated.onnx", std::string("\x08\x07\x12\x07pytorch\x3a\xff\xff\x03", 13)).string();
  check_refused(plan("schedule " + truncated + " --algo exact"), "not an ONNX model: the protobuf is malformed or truncated");
  check_refused(plan("peak " + write_temp("empty.onnx", "").string()), "empty file");
  // ONNX's own shape inference crashes on this one (a convolution weight of rank 12): memopt
  // runs it apart, and refuses the model.
  check_refused(plan("peak " + std::string(MEMOPT_FUZZ_REGRESSIONS) + "/onnx_model_fuzz/conv_weight_of_wrong_rank.onnx"),
                "ONNX shape inference crashed on the model (it is malformed)");
  check_refused(plan("peak " + temp_path("absent.onnx").string()), "cannot open");
}
