#pragma once
// memopt-plan convert MODEL.onnx [--output GRAPH.json[.gz]] [--dim NAME=SIZE ...]
// memopt-plan convert MODEL.onnx --schedule ALGO --output NEW.onnx [--work-limit N]
// Writes an ONNX model (examples/onnx_import/) as memopt-graph/1, one node per
// line as the shipped graphs are, gzipped when the name ends in .gz; without
// --output, to standard output. The graph is read back before it is written,
// so a file convert writes is one every subcommand reads. With --output it
// prints what it wrote: {"output", "nodes", "edges", "persistent_bytes",
// "activation_bytes"}.
// With --schedule and an .onnx --output, it writes the model with its nodes
// in the order of that scheduler (onnx_import/reorder.hpp) and prints
// {"output", "algo", "method", "nodes" (ONNX nodes written), "peak_bytes"
// (of that order), "stopped_by_clock"}.

#include "command.hpp"
#include "schedulers.hpp"

#ifdef MEMOPT_WITH_ONNX
#include <onnx_import/reorder.hpp>
#endif

#include <nlohmann/json.hpp>
#include <zlib.h>

#include <cstdint>
#include <iostream>
#include <memory>
#include <optional>
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

#ifdef MEMOPT_WITH_ONNX
/// Writes the model of `model` to `output` with its nodes in the order of
/// scheduler `algo`; the summary JSON.
inline nlohmann::ordered_json write_scheduled_model(const graph_argument& model, const std::string& algo,
                                                    const search_limits& limits, const std::string& output) {
  const auto imported = import_onnx(model);
  const auto g = [&] {
    try {
      return io::graph_from_json(imported.doc, read_options_of(model));
    } catch (const error& e) {
      throw cli_error(model.path + ": " + e.what());
    }
  }();
  const auto scheduled = naming_nodes(g, model.path, [&] { return run_scheduler(g, algo, limits); });
  std::string bytes;
  int nodes = 0;
  try {
    const auto written = onnx_import::reordered_model(onnx_import::read_model(model.path), imported, scheduled.order);
    nodes = written.graph().node_size();
    if (!written.SerializeToString(&bytes)) throw cli_error("cannot serialise the reordered model");
  } catch (const error& e) {
    throw cli_error(model.path + ": " + e.what());
  }
  write_text(output, bytes);
  nlohmann::ordered_json summary;
  summary["output"] = output;
  summary["algo"] = algo;
  summary["method"] = scheduled.method;
  summary["nodes"] = nodes;
  summary["peak_bytes"] = scheduled.peak_bytes;
  summary["stopped_by_clock"] = scheduled.stopped_by_clock;
  return summary;
}
#endif

inline command add_convert_command(CLI::App& app) {
  struct options {
    graph_argument model;
    std::string output;
    std::string schedule;
    std::optional<std::uint64_t> work_limit;
  };
  auto opts = std::make_shared<options>();
  auto* cmd = app.add_subcommand("convert", "write an ONNX model as a memopt-graph/1 file");
  cmd->add_option("MODEL", opts->model.path, "ONNX model (.onnx); initializers' external data files are not needed")
      ->required();
  cmd->add_option("--dim", opts->model.dims, "size of a dynamic dimension (repeatable)")->check(dimension_assignment());
  cmd->add_option("--output", opts->output,
                  "the file to write, .json or .json.gz (default: standard output), or .onnx with --schedule");
  cmd->add_option("--schedule", opts->schedule,
                  "write the model (--output NEW.onnx) with its nodes in this scheduler's order")
      ->check(CLI::IsMember(schedule::names()));
  cmd->add_option("--work-limit", opts->work_limit, "states for a searching --schedule: the order depends on the input only")
      ->check(whole_number());
  cmd->add_flag("--no-in-place", opts->model.no_in_place,
                "--schedule without in-place reuse (on by default, as ONNX runtimes reuse a dying input)");
  return {cmd, [opts] {
            if (!is_onnx(opts->model)) throw cli_error(opts->model.path + ": convert reads ONNX models (.onnx)");
            if (opts->output.ends_with(".onnx") != !opts->schedule.empty()) {
              throw cli_error("--schedule ALGO and --output NEW.onnx go together: the model is written in ALGO's order");
            }
#ifdef MEMOPT_WITH_ONNX
            if (!opts->schedule.empty()) {
              std::cout << write_scheduled_model(opts->model, opts->schedule, {.work_limit = opts->work_limit}, opts->output)
                                   .dump()
                        << '\n';
              return;
            }
#endif
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
