// memopt-plan on ONNX models, run as a user runs it: every subcommand reads
// .onnx, convert writes memopt-graph/1, and a bad model or option is exit 1
// with one line naming the file and the node or tensor.
#include "../cli/run_plan.hpp"

#include <memopt/io/graph_file.hpp>

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>
#include <onnx/defs/parser.h>
#include <onnx/onnx_pb.h>

#include <string>

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
dynamic (float[batch, 16] x) => (float[batch, 16] y) {
  h = Relu (x)
  y = Neg (h)
}
)";

}  // namespace

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
  CHECK(nlohmann::json::parse(r.out)["peak_bytes"] == 2 * 8 * 16 * 4);  // x dies at h; h and y
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
