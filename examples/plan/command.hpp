#pragma once
// What every memopt-plan subcommand shares: the one-line error a user sees,
// loading a graph file, and naming the library's vertices by node name.

#include <memopt/io/graph_file.hpp>

#include <memopt/error.hpp>

#ifdef MEMOPT_WITH_ONNX
#include <onnx_import/model.hpp>
#endif

#include <CLI/CLI.hpp>
#include <nlohmann/json.hpp>

#include <algorithm>
#include <atomic>
#include <charconv>
#include <cmath>
#include <csignal>
#include <cstdint>
#include <filesystem>
#include <fstream>
#include <functional>
#include <limits>
#include <optional>
#include <sstream>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memopt::plan {

/// A fault in the user's input or usage, already worded for them: main prints
/// "memopt-plan: <what>" and exits 1.
class cli_error : public std::runtime_error {
 public:
  using std::runtime_error::runtime_error;
};

/// Set by Ctrl-C (SIGINT): the searches (exact and best schedules, the exact
/// packer) then end with the best they have, which is printed as usual with
/// "interrupted": true. A second Ctrl-C ends the program at once.
inline std::atomic<bool> interrupted{false};

inline void stop_searches_on_interrupt() {
  std::signal(SIGINT, [](int) {
    if (interrupted.exchange(true)) {
      std::signal(SIGINT, SIG_DFL);
      std::raise(SIGINT);
    }
  });
}

/// Checks for numeric options, with messages a user reads at a glance. CLI11
/// reads "-5" into an unsigned option as 2^64 - 5: whole numbers take digits only.
inline CLI::Validator whole_number(std::uint64_t least = 0, std::uint64_t most = std::numeric_limits<std::uint64_t>::max()) {
  return CLI::Validator(
      [least, most](const std::string& text) -> std::string {
        const auto what = [&] {
          return "'" + text + "' is not a whole number from " + std::to_string(least) +
                 (most == std::numeric_limits<std::uint64_t>::max() ? " up" : " to " + std::to_string(most));
        };
        if (text.empty() || !std::ranges::all_of(text, [](char c) { return c >= '0' && c <= '9'; })) return what();
        std::uint64_t value = 0;
        const auto [end, fault] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (fault != std::errc{} || value < least || value > most) return what();
        return {};
      },
      "UINT");
}

/// Seconds and other amounts above zero.
inline CLI::Validator positive_number() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        double value = 0;
        const auto [end, fault] = std::from_chars(text.data(), text.data() + text.size(), value);
        if (fault != std::errc{} || end != text.data() + text.size() || !(value > 0) || !std::isfinite(value)) {
          return "'" + text + "' is not a number above 0";
        }
        return {};
      },
      "POSITIVE");
}

/// A subcommand: its CLI11 parser and what it does once parsed.
struct command {
  CLI::App* parser = nullptr;
  std::function<void()> run;
};

/// The graph a subcommand reads: the GRAPH argument, the memory model, and
/// the sizes of an ONNX model's dynamic dimensions.
struct graph_argument {
  std::string path;
  bool no_alias = false;  ///< every output apart: views and in-place results as copies
  std::vector<std::string> dims{};  ///< "name=value", from --dim
  /// In-place reuse of may-alias inputs (io::read_options::in_place_reuse):
  /// --in-place / --no-in-place; neither, on for ONNX models and off otherwise.
  bool in_place = false;
  bool no_in_place = false;
};

/// NAME=VALUE with a name and a whole number from 1.
inline CLI::Validator dimension_assignment() {
  return CLI::Validator(
      [](const std::string& text) -> std::string {
        const auto equals = text.find('=');
        const std::string_view value = equals == std::string::npos ? std::string_view() : std::string_view(text).substr(equals + 1);
        std::int64_t size = 0;
        const auto [end, fault] = std::from_chars(value.data(), value.data() + value.size(), size);
        if (equals == 0 || value.empty() || fault != std::errc{} || end != value.data() + value.size() || size < 1) {
          return "'" + text + "' is not NAME=SIZE with a size from 1";
        }
        return {};
      },
      "NAME=SIZE");
}

/// Whether GRAPH is an ONNX model (by its extension) rather than memopt-graph/1.
inline bool is_onnx(const graph_argument& arg) { return arg.path.ends_with(".onnx"); }

/// Adds GRAPH, --no-alias, --dim and --in-place to `cmd`, as every subcommand that reads a graph takes them.
inline void add_graph_argument(CLI::App* cmd, graph_argument& arg,
                               const std::string& help = "memopt-graph/1 file (.json or .json.gz) or ONNX model (.onnx)",
                               const std::string& name = "GRAPH") {
  cmd->add_option(name, arg.path, help)->required();
  cmd->add_flag("--no-alias", arg.no_alias,
                "count every output apart: views and in-place results as copies, no in-place ordering");
  cmd->add_option("--dim", arg.dims, "size of a dynamic dimension of an ONNX model (repeatable)")
      ->check(dimension_assignment());
  auto* in_place = cmd->add_flag("--in-place", arg.in_place,
                                 "in-place reuse: an output marked may_alias takes over its input's storage where "
                                 "its op reads it last (default: on for ONNX models, off for memopt-graph/1 files)");
  cmd->add_flag("--no-in-place", arg.no_in_place, "no in-place reuse, for an ONNX model too")->excludes(in_place);
}

/// The reader's options for `arg`: its memory model.
inline io::read_options read_options_of(const graph_argument& arg) {
  return {.storage_aliases = !arg.no_alias, .in_place_reuse = arg.in_place || (!arg.no_in_place && is_onnx(arg))};
}

/// Reading a graph file takes about this many bytes of memory per byte of
/// JSON text: the JSON document, then the graph (1.6 GB for the 116 MB file
/// of a generated 10^6-vertex graph).
inline constexpr std::uint64_t memory_per_json_byte = 16;

/// The memory the system can give now (Linux's MemAvailable), if known.
inline std::optional<std::uint64_t> available_memory() {
  std::ifstream meminfo("/proc/meminfo");
  std::string key;
  std::uint64_t kib = 0;
  while (meminfo >> key >> kib) {
    if (key == "MemAvailable:") return kib * 1024;
    meminfo.ignore(std::numeric_limits<std::streamsize>::max(), '\n');
  }
  return std::nullopt;
}

/// Refuses a graph file too large to read in the memory available, before
/// reading it (rather than the system killing the process half way). A
/// gzipped file counts its uncompressed size as its trailer states it
/// (modulo 4 GiB), at least four times its own and at most deflate's largest
/// ratio, 1032 to 1, times its own: a truncated file's last four bytes are
/// not a trailer.
inline void check_memory_for(const std::string& path) {
  std::error_code fault;
  const std::uint64_t size = std::filesystem::file_size(path, fault);
  if (fault) return;  // the reader says what is wrong with the file
  std::uint64_t text = size;
  if (path.ends_with(".gz") && size >= 4) {
    std::ifstream file(path, std::ios::binary);
    file.seekg(-4, std::ios::end);
    unsigned char trailer[4] = {};
    file.read(reinterpret_cast<char*>(trailer), 4);
    const std::uint64_t stated = trailer[0] | trailer[1] << 8 | trailer[2] << 16 | std::uint64_t{trailer[3]} << 24;
    constexpr std::uint64_t deflate_max_ratio = 1032;
    text = std::clamp(stated, 4 * size, deflate_max_ratio * size);
  }
  const auto available = available_memory();
  if (!available || text > std::numeric_limits<std::uint64_t>::max() / memory_per_json_byte) return;
  if (const std::uint64_t needed = text * memory_per_json_byte; needed > *available) {
    constexpr double mib = 1024.0 * 1024.0;
    std::ostringstream what;
    what.precision(0);
    what << std::fixed << path << ": reading " << static_cast<double>(text) / mib << " MiB of graph text takes about "
         << static_cast<double>(needed) / mib << " MiB of memory; " << static_cast<double>(*available) / mib
         << " MiB are available";
    throw cli_error(what.str());
  }
}


#ifdef MEMOPT_WITH_ONNX
/// An ONNX model imported with the --dim sizes of `arg`; a bad model is a
/// cli_error naming the file and the node or tensor.
inline onnx_import::imported_model import_onnx(const graph_argument& arg) {
  onnx_import::import_options options;
  for (const auto& assignment : arg.dims) {  // checked by dimension_assignment
    const auto equals = assignment.find('=');
    options.dims[assignment.substr(0, equals)] = std::stoll(assignment.substr(equals + 1));
  }
  try {
    return onnx_import::import_file(arg.path, options);
  } catch (const error& e) {
    throw cli_error(arg.path + ": " + e.what());
  }
}
#endif

/// The memopt-graph/1 document of an ONNX model; a bad model is a cli_error
/// naming the file and the node or tensor.
inline nlohmann::ordered_json onnx_document(const graph_argument& arg) {
#ifdef MEMOPT_WITH_ONNX
  return import_onnx(arg).doc;
#else
  throw cli_error(arg.path + ": this memopt-plan was built without ONNX import (install libonnx-dev and "
                             "libprotobuf-dev, then configure and build again)");
#endif
}

/// Reads a memopt-graph/1 file or an ONNX model; a bad file is a cli_error naming the file.
inline io::file_graph load_graph(const graph_argument& arg) {
  if (is_onnx(arg)) {
    const auto doc = onnx_document(arg);
    try {
      return io::graph_from_json(doc, read_options_of(arg));
    } catch (const error& e) {
      throw cli_error(arg.path + ": " + e.what());
    }
  }
  if (!arg.dims.empty()) throw cli_error("--dim applies to ONNX models only, and " + arg.path + " is not one");
  check_memory_for(arg.path);
  try {
    return io::read_graph(arg.path, read_options_of(arg));
  } catch (const error& e) {
    throw cli_error(arg.path + ": " + e.what());
  }
}

/// Runs f(); the library's errors, which name vertices by index, become
/// cli_errors naming the file and the nodes.
template <class F>
decltype(auto) naming_nodes(const io::file_graph& g, const std::string& path, F&& f) {
  try {
    return std::forward<F>(f)();
  } catch (const error& e) {
    throw cli_error(path + ": " + e.describe(io::node_namer(g)));
  }
}

inline cli_error not_a_node(const std::string& what, const std::string& name) {
  return cli_error(what + " names '" + name + "', which is not a node of the graph");
}

/// Node names to vertex indices; an unknown one is a cli_error naming it.
inline std::vector<std::size_t> vertices_named(const io::file_graph& g, const std::vector<std::string>& names,
                                               const std::string& what) {
  std::unordered_map<std::string_view, std::size_t> index;
  for (std::size_t v = 0; v < num_vertices(g); ++v) index.emplace(g[v].name, v);
  std::vector<std::size_t> out;
  out.reserve(names.size());
  for (const auto& name : names) {
    const auto it = index.find(name);
    if (it == index.end()) throw not_a_node(what, name);
    out.push_back(it->second);
  }
  return out;
}

/// "node:port" of buffer b; "node:scratch" for the node's scratch (the buffer after its outputs).
inline std::string buffer_name(const io::file_graph& g, std::size_t vertex, std::size_t port) {
  return g[vertex].name + ":" + (port < g[vertex].outputs.size() ? std::to_string(port) : "scratch");
}

}  // namespace memopt::plan
