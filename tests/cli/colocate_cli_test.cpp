// memopt-plan colocate: the JSON contract on the TF-like fixtures, a real
// graph, and one clear line for every kind of bad input.
#include "run_plan.hpp"

#include <doctest/doctest.h>
#include <nlohmann/json.hpp>

#include <fstream>
#include <string>

namespace {

using memopt::testing::check_refused;
using memopt::testing::plan;
using memopt::testing::write_temp;

const std::string data_dir = MEMOPT_DATA_DIR;
const std::string fixtures = data_dir + "/colocate/";
const std::string config = fixtures + "placer.config.json";
const std::string cpu0 = "/job:localhost/replica:0/task:0/device:CPU:0";
const std::string gpu0 = "/job:localhost/replica:0/task:0/device:GPU:0";
const std::string gpu1 = "/job:localhost/replica:0/task:0/device:GPU:1";

nlohmann::json placed(const std::string& graph, const std::string& config_path = config) {
  const auto r = plan("colocate " + graph + " --config " + config_path);
  INFO("stderr: " << r.err);
  REQUIRE(r.status == 0);
  CHECK(r.err.empty());
  return nlohmann::json::parse(r.out);
}

std::string config_with(const std::string& fields) {
  return R"({"devices": ["/job:a/replica:0/task:0/device:CPU:0"], "kernels": {"*": ["CPU"]})" +
         (fields.empty() ? std::string() : ", " + fields) + "}";
}

}  // namespace

TEST_CASE("colocate: a GraphDef with references, groups and heuristics") {
  const auto j = placed(fixtures + "train_step.graphdef.json");
  CHECK(j["graph"] == "train_step");
  const auto& p = j["placement"];
  CHECK(p["w"] == gpu1);        // requested on a reference generator: kept
  CHECK(p["w/read"] == gpu1);   // _class loc:@w, base64 in TF's AttrValue form
  CHECK(p["update"] == gpu1);   // reference edge from w
  CHECK(p["shape"] == gpu1);    // metadata op stays with its input
  CHECK(p["matmul"] == gpu0);   // GPU preferred, lowest id
  CHECK(p["x"] == gpu0);        // generator follows its one consumer
  CHECK(p["lr"] == gpu0);       // consumers on two devices: its own best device
  CHECK(p["summary"] == cpu0);  // CPU-only kernel
  CHECK(p["batch"] == cpu0);    // kernel priority beats the type preference
  CHECK(j["groups"] == nlohmann::json::parse(
                           R"([["x"], ["w", "w/read", "update"], ["matmul"], ["shape"], ["lr"], ["summary"], ["batch"]])"));
  CHECK(j["num_groups"] == 7);
  CHECK(j["devices_used"] == 3);
  CHECK(j["ignored"].empty());
}

TEST_CASE("colocate: a memopt-graph/1 file with resource edges and an assigned device") {
  const auto j = placed(fixtures + "resources.json");
  const auto& p = j["placement"];
  CHECK(p["var"] == cpu0);
  CHECK(p["read"] == cpu0);
  CHECK(p["assign"] == cpu0);
  CHECK(p["step"] == gpu1);
  CHECK(p["mul"] == gpu0);
  CHECK(p["x"] == gpu0);
  CHECK(j["groups"] == nlohmann::json::parse(R"([["var", "read", "assign"], ["x"], ["mul"], ["step"], ["add"]])"));
}

TEST_CASE("colocate: unsatisfiable groups fail naming both nodes, and split under soft placement") {
  check_refused(plan("colocate " + fixtures + "unsatisfiable.graphdef.json --config " + config),
                "cannot colocate 'allreduce' and 'decode' (both are in colocation group 'decode'): "
                "no device type supports both");
  auto soft = nlohmann::json::parse(std::ifstream(config));
  soft["soft_placement"] = true;
  const auto j = placed(fixtures + "unsatisfiable.graphdef.json", write_temp("soft.json", soft.dump()).string());
  CHECK(j["placement"]["decode"] == cpu0);
  CHECK(j["placement"]["allreduce"] == gpu0);
  CHECK(j["ignored"] == nlohmann::json::parse(R"([{"node": "allreduce", "group": "decode"}])"));
}

TEST_CASE("colocate: a real network, every op on the preferred device") {
  const auto cfg = write_temp("gpu.json", R"({"devices": [")" + cpu0 + R"(", ")" + gpu0 +
                                              R"("], "kernels": {"*": ["CPU", "GPU"]}, "device_type_preference": ["GPU"]})");
  const auto j = placed(data_dir + "/resnet18_train_b32.json", cfg.string());
  CHECK(j["placement"].size() == 332);
  CHECK(j["num_groups"] == 332);
  CHECK(j["devices_used"] == 1);
  CHECK(j["placement"].front() == gpu0);
}

TEST_CASE("colocate: bad configurations and graphs give one line each") {
  const auto graph = fixtures + "train_step.graphdef.json";
  const auto with_config = [&](const std::string& name, const std::string& text) {
    return plan("colocate " + graph + " --config " + write_temp(name, text).string());
  };
  check_refused(with_config("c1.json", R"({"kernels": {}})"), "missing \"devices\"");
  check_refused(with_config("c2.json", R"({"devices": [], "kernels": {}})"), "\"devices\" is empty");
  check_refused(with_config("c3.json", R"({"devices": ["/job:a/device:CPU:0"], "kernels": {}})"),
                "must name its job, replica, task, type and id");
  check_refused(with_config("c4.json", R"({"devices": ["/job:a/replica:0/task:0/device:CPU:x"], "kernels": {}})"),
                "malformed device name '/job:a/replica:0/task:0/device:CPU:x' at offset 35");
  check_refused(with_config("c5.json", config_with(R"("soft_placement": 1)")), "\"soft_placement\" must be true or false");
  check_refused(with_config("c6.json", R"({"devices": ["/job:a/replica:0/task:0/device:CPU:0"], "kernels": {"Op": [3]}})"),
                "kernels.Op: 3 is neither a device type");
  check_refused(with_config("c7.json", "{"), "not JSON");
  check_refused(plan("colocate " + graph + " --config /nonexistent/config.json"), "cannot open");
  check_refused(plan("colocate " + graph), "--config is required");

  const auto cfg = write_temp("cpu.json", config_with("")).string();
  const auto with_graph = [&](const std::string& name, const std::string& text) {
    return plan("colocate " + write_temp(name, text).string() + " --config " + cfg);
  };
  check_refused(with_graph("g1.json", R"({"node": [{"name": "a", "op": "X", "device": "/gpu:x"}]})"),
                "malformed device name '/gpu:x' (requested device of 'a') at offset 5");
  check_refused(with_graph("g2.json", R"({"node": [{"name": "a", "op": "X", "input": ["b"]}, {"name": "b", "op": "X", "input": ["a:0"]}]})"),
                "the graph has a cycle");
  check_refused(with_graph("g3.json", R"({"node": [{"name": "a", "op": "X", "input": ["zz"]}]})"),
                "node 'a': input \"zz\" names no node");
  check_refused(with_graph("g4.json", R"({"node": [{"name": "a", "op": "X", "input": ["a:b"]}]})"),
                "has no valid port");
  check_refused(with_graph("g5.json", R"({"node": [{"name": "a", "op": "X", "attr": {"ref_inputs": [0]}}]})"),
                "ref_inputs/resource_inputs name an input it does not have");
  check_refused(with_graph("g6.json", R"({"node": [{"name": "a", "op": "X", "device": "/job:b"}]})"),
                "cannot place 'a' (op 'X') on its requested device '/job:b': no device of the set matches it");
  check_refused(with_graph("g7.json", R"({"node": [{"name": "a", "op": "X", "attr": {"assigned_device": "/gpu:0"}}]})"),
                "cannot place 'a' (op 'X') on its assigned device '/gpu:0': no device of the set matches it");
  check_refused(with_graph("g8.json", R"({"nodes": []})"), "a GraphDef needs a \"node\" array");
  check_refused(with_graph("g9.json", R"({"node": [{"name": "a", "op": "X", "attr": {"_class": "loc:@b"}}]})"),
                "attr _class must be a list of strings");
}
