#pragma once
// memopt-plan convert MODEL.onnx [--output GRAPH.json[.gz]] [--dim NAME=SIZE ...]
// Writes an ONNX model (examples/onnx_import/) as memopt-graph/1, one node per
// line as the shipped graphs are, gzipped when the name ends in .gz; without
// --output, to standard output. The graph is read back before it is written,
// so a file convert writes is one every subcommand reads. With --output it
// prints what it wrote: {"output", "nodes", "edges", "persistent_bytes",
// "activation_bytes"}.

#include "command.hpp"

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <sstream>
#include <string>

namespace memopt::plan {

/// memopt-graph/1 text with one node per line.
inline std::string graph_text(const nlohmann::ordered_json& doc) {
  std::ostringstream out;
  out << "{\"format\":" << doc["format"].dump() << ",\n\"name\":" << doc["name"].dump() << ",\n\"source\":"
      << doc["source"].dump() << ",\n\"nodes\":[\n";
  const auto& nodes = doc["nodes"];
  for (std::size_t i = 0; i < nodes.size(); ++i) out << nodes[i].dump() << (i + 1 < nodes.size() ? ",\n" : "\n");
  out << "],\n\"outputs\":" << doc["outputs"].dump() << "}\n";
  return out.str();
}

/// Writes `text` to `path`, gzipped when the name ends in .gz.
inline void write_text(const std::string& path, const std::string& text) {
  gzFile file = gzopen(path.c_str(), path.ends_with(".gz") ? "wb9" : "wbT");  // T: plain, no gzip
  if (file == nullptr) throw cli_error("cannot write " + path);
  bool ok = true;
  for (std::size_t at = 0; ok && at < text.size();) {
    const auto chunk = static_cast<unsigned>(std::min<std::size_t>(text.size() - at, 1u << 30));
    ok = gzwrite(file, text.data() + at, chunk) == static_cast<int>(chunk);
    at += chunk;
  }
  if (gzclose(file) != Z_OK || !ok) throw cli_error("cannot write " + path);
}

inline command add_convert_command(CLI::App& app) {
  struct options {
    graph_argument model;
    std::string output;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("convert", "write an ONNX model as a memopt-graph/1 file");
  cmd->add_option("MODEL", opts->model.path, "ONNX model (.onnx); initializers' external data files are not needed")
      ->required();
  cmd->add_option("--dim", opts->model.dims, "size of a dynamic dimension (repeatable)")->check(dimension_assignment());
  cmd->add_option("--output", opts->output, "the file to write, .json or .json.gz (default: standard output)");
  return {cmd, [opts] {
            if (!is_onnx(opts->model)) throw cli_error(opts->model.path + ": convert reads ONNX models (.onnx)");
            const auto doc = onnx_document(opts->model);
            const auto g = [&] {
              try {
                return io::graph_from_json(doc);
              } catch (const error& e) {
                throw cli_error(opts->model.path + ": " + e.what());
              }
            }();
            const std::string text = graph_text(doc);
            if (opts->output.empty()) {
              std::cout << text;
              return;
            }
            write_text(opts->output, text);
            std::uint64_t persistent = 0;
            std::uint64_t activations = 0;
            for (const auto v : boost::make_iterator_range(vertices(g))) {
              for (const auto& out : g[v].outputs) (g[v].persistent ? persistent : activations) += out.bytes;
            }
            nlohmann::ordered_json summary;
            summary["output"] = opts->output;
            summary["nodes"] = num_vertices(g);
            summary["edges"] = num_edges(g);
            summary["persistent_bytes"] = persistent;
            summary["activation_bytes"] = activations;
            std::cout << summary.dump() << '\n';
          }};
}

}  // namespace memopt::plan
