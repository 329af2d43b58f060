#pragma once
// memopt::error and its kinds. Each kind carries the facts as fields (vertex
// *indices*, as given by the algorithm's vertex index map) and what() names the
// same vertices. describe(name) renders the same message with a caller's names
// for the vertices (e.g. node names from a file), so a front end never parses
// what().

#include <cstddef>
#include <cstdint>
#include <functional>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

namespace memopt {

/// Maps a vertex index to a human-readable name, for error messages.
using vertex_namer = std::function<std::string(std::size_t)>;

/// The default namer: "vertex 7".
inline std::string index_name(std::size_t v) { return "vertex " + std::to_string(v); }

/// Base of every exception memopt throws on bad input.
class error : public std::runtime_error {
 public:
  /// The message of what(), with vertices named by `name`.
  [[nodiscard]] virtual std::string describe(const vertex_namer& name) const = 0;

 protected:
  explicit error(const std::string& message) : std::runtime_error(message) {}
};

/// The graph has a directed cycle. `cycle` lists its vertices in edge order;
/// the last has an edge back to the first (a self-loop is a cycle of one).
class cycle_error : public error {
 public:
  explicit cycle_error(std::vector<std::size_t> cycle_vertices)
      : error(message(cycle_vertices, index_name)), cycle(std::move(cycle_vertices)) {}
  std::vector<std::size_t> cycle;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(cycle, name);
  }

 private:
  static std::string message(const std::vector<std::size_t>& cycle, const vertex_namer& name) {
    std::string text = "the graph has a cycle: ";
    for (const std::size_t v : cycle) text += name(v) + " -> ";
    return text + (cycle.empty() ? std::string("?") : name(cycle.front()));
  }
};

/// What is wrong with a sequence that should be a topological order.
enum class order_fault {
  unknown_vertex,     ///< `vertex` is not an index below the vertex count
  duplicate,          ///< `vertex` appears twice
  missing,            ///< `vertex` does not appear
  before_predecessor  ///< `vertex` comes before its predecessor `other`
};

/// A sequence given as a schedule is not a topological order of the graph.
class not_topological_error : public error {
 public:
  not_topological_error(order_fault fault_kind, std::size_t bad_vertex, std::size_t other_vertex = 0)
      : error(message(fault_kind, bad_vertex, other_vertex, index_name)),
        fault(fault_kind),
        vertex(bad_vertex),
        other(other_vertex) {}
  order_fault fault;
  std::size_t vertex;
  std::size_t other;  ///< the predecessor, for before_predecessor
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(fault, vertex, other, name);
  }

 private:
  static std::string message(order_fault fault, std::size_t v, std::size_t u,
                             const vertex_namer& name) {
    switch (fault) {
      case order_fault::unknown_vertex:
        return "the order names " + index_name(v) + ", which is not in the graph";
      case order_fault::duplicate: return "the order runs " + name(v) + " twice";
      case order_fault::missing: return "the order never runs " + name(v);
      case order_fault::before_predecessor:
        return "the order runs " + name(v) + " before its predecessor " + name(u);
    }
    return "the order is not topological";
  }
};

/// A data edge `source -> target` reads output `port` of `source`, which has
/// only `num_outputs` outputs.
class bad_port_error : public error {
 public:
  bad_port_error(std::size_t source_vertex, std::size_t target_vertex, std::size_t bad_port,
                 std::size_t outputs)
      : error(message(source_vertex, target_vertex, bad_port, outputs, index_name)),
        source(source_vertex),
        target(target_vertex),
        port(bad_port),
        num_outputs(outputs) {}
  std::size_t source;
  std::size_t target;
  std::size_t port;
  std::size_t num_outputs;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(source, target, port, num_outputs, name);
  }

 private:
  static std::string message(std::size_t s, std::size_t t, std::size_t port, std::size_t outputs,
                             const vertex_namer& name) {
    return name(t) + " reads output " + std::to_string(port) + " of " + name(s) + ", which has " +
           std::to_string(outputs) + (outputs == 1 ? " output" : " outputs");
  }
};

/// A sum of buffer sizes does not fit in 64 bits: at `vertex`, adding
/// `added_bytes` to `sum_bytes` overflows.
class size_overflow_error : public error {
 public:
  size_overflow_error(std::size_t at_vertex, std::uint64_t sum, std::uint64_t added)
      : error(message(at_vertex, sum, added, index_name)),
        vertex(at_vertex),
        sum_bytes(sum),
        added_bytes(added) {}
  std::size_t vertex;
  std::uint64_t sum_bytes;
  std::uint64_t added_bytes;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(vertex, sum_bytes, added_bytes, name);
  }

 private:
  static std::string message(std::size_t v, std::uint64_t sum, std::uint64_t added,
                             const vertex_namer& name) {
    return "live bytes overflow 64 bits at " + name(v) + ": " + std::to_string(sum) + " + " +
           std::to_string(added);
  }
};

}  // namespace memopt
