#pragma once
// memopt-plan caffe2 NET.json --pass inference|dag [--heads B...] [--dont-share B...]
//                   [--namescope S] [--policy best-fit|caffe2] [--blob-bytes FILE]
// Prints the NetDef rewritten by Caffe2 memonger's pass (see
// caffe2_like/memonger.hpp) as JSON. A net the pass refuses (already
// optimised, unsupported type, recurrent ops) is printed unchanged, with the
// reason on stderr, exit 0. --blob-bytes names a JSON object {blob: bytes}
// (unknown blobs: 0 bytes) for the size-aware choice.

#include "command.hpp"

#include <caffe2_like/memonger.hpp>

#include <iostream>
#include <memory>

namespace memopt::plan {

inline command add_caffe2_command(CLI::App& app) {
  struct options {
    std::string net;
    std::string pass;
    std::string policy = "best-fit";
    std::string blob_bytes;
    caffe2_like::memonger_options memonger;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("caffe2", "share the blobs of a Caffe2-like NetDef (JSON)");
  cmd->add_option("NET", opts->net, "NetDef JSON file")->required();
  cmd->add_option("--pass", opts->pass, "inference (linear, one order) or dag (every order)")
      ->required()
      ->check(CLI::IsMember({"inference", "dag"}));
  cmd->add_option("--heads", opts->memonger.heads, "dag: blobs the walk starts from (default: external inputs)");
  cmd->add_option("--dont-share", opts->memonger.dont_share, "blobs never recycled");
  cmd->add_option("--namescope", opts->memonger.namescope, "dag: prefix of the shared blob names");
  cmd->add_option("--policy", opts->policy, "dag: best-fit (default) or caffe2 (the seed's size-aware pick)")
      ->check(CLI::IsMember({"best-fit", "caffe2"}));
  cmd->add_option("--blob-bytes", opts->blob_bytes, "JSON object {blob: bytes}");
  return {cmd, [opts] {
            const auto read = [](const std::string& path) {
              check_memory_for(path);
              try {
                return io::detail::read_file(path);
              } catch (const error& e) {
                throw cli_error(e.what());
              }
            };
            auto& memonger = opts->memonger;
            memonger.seed_size_pick = opts->policy == "caffe2";
            if (!opts->blob_bytes.empty()) {
              try {
                const auto sizes = nlohmann::json::parse(read(opts->blob_bytes));
                if (!sizes.is_object()) throw cli_error(opts->blob_bytes + ": not a JSON object of byte counts");
                for (const auto& [blob, bytes] : sizes.items()) {
                  if (const auto problem = io::detail::size_problem(bytes)) {
                    throw cli_error(opts->blob_bytes + ": not a JSON object of byte counts: '" + blob +
                                    "' has " + bytes.dump() + ", which " + *problem);
                  }
                  memonger.blob_bytes[blob] = io::detail::parse_size(bytes, blob);
                }
              } catch (const nlohmann::json::exception& e) {
                throw cli_error(opts->blob_bytes + ": not a JSON object of byte counts: " + e.what());
              }
            }
            caffe2_like::memonger_result result;
            try {
              const auto net = caffe2_like::parse_net(read(opts->net));
              result = opts->pass == "inference" ? caffe2_like::optimize_inference_net(net, memonger)
                                                 : caffe2_like::optimize_dag_net(net, memonger);
            } catch (const caffe2_like::net_error& e) {
              throw cli_error(opts->net + ": " + e.what());
            }
            if (!result.refusal.empty()) {
              std::cerr << "memopt-plan: caffe2: " << opts->net << " left unchanged: " << result.refusal << '\n';
            }
            std::cout << result.net.dump() << '\n';
          }};
}

}  // namespace memopt::plan
