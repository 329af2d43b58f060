#pragma once
// memopt::error and its kinds. Each kind carries the facts as fields (vertex
// *indices*, as given by the algorithm's vertex index map) and what() names the
// same vertices. describe(name) renders the same message with a caller's names
// for the vertices (e.g. node names from a file), so a front end never parses
// what(). The colocation family's own kinds are in colocate/errors.hpp.

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

/// No algorithm of `family` ("scheduler", "heap algorithm", ...) is called
/// `name`; `known` lists the names its registry has.
class unknown_algorithm_error : public error {
 public:
  unknown_algorithm_error(std::string of_family, std::string bad_name, std::vector<std::string> names)
      : error(message(of_family, bad_name, names)), family(std::move(of_family)), name(std::move(bad_name)),
        known(std::move(names)) {}
  std::string family;
  std::string name;
  std::vector<std::string> known;
  [[nodiscard]] std::string describe(const vertex_namer&) const override { return what(); }

 private:
  static std::string message(const std::string& family, const std::string& name,
                             const std::vector<std::string>& known) {
    std::string text = "unknown " + family + " '" + name + "'; known:";
    for (const auto& k : known) text += " " + k;
    return text;
  }
};

/// What is wrong with a sequence that should be a topological order.
enum class order_fault {
  unknown_vertex,     ///< `vertex` is not an index below the vertex count
  duplicate,          ///< `vertex` appears twice
  missing,            ///< `vertex` does not appear
  before_predecessor, ///< `vertex` comes before its predecessor `other`
  write_too_early,    ///< `vertex` overwrites in place a storage `other` uses first in the graph's order
  read_too_early      ///< `vertex` uses a storage before `other` overwrites it, against the graph's order
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
  std::size_t other;  ///< the vertex that must come first (before_predecessor, *_too_early)
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
      case order_fault::write_too_early:
        return "the order runs " + name(v) + " before " + name(u) + ", but " + name(v) +
               " overwrites in place a storage that " + name(u) + " uses first in the graph's order";
      case order_fault::read_too_early:
        return "the order runs " + name(v) + " before " + name(u) + ", but " + name(v) +
               " uses a storage after " + name(u) + " overwrites it in place in the graph's order";
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

/// What is wrong with a vertex index map.
enum class index_fault {
  out_of_range,  ///< an index at or beyond the vertex count
  repeated       ///< two vertices share an index
};

/// The vertex index map a caller passed is not a one-to-one map onto
/// [0, vertex_count): the vertex at `position` of vertices(g) gets `index`
/// (for repeated, as the vertex at `other_position` did). The vertices are
/// named by position, since their indices are what is wrong.
class bad_index_error : public error {
 public:
  bad_index_error(index_fault why, std::size_t at, std::size_t bad_index, std::size_t count,
                  std::size_t other_at = 0)
      : error(message(why, at, bad_index, count, other_at)), fault(why), position(at),
        index(bad_index), vertex_count(count), other_position(other_at) {}
  index_fault fault;
  std::size_t position;
  std::size_t index;
  std::size_t vertex_count;
  std::size_t other_position;
  [[nodiscard]] std::string describe(const vertex_namer&) const override { return what(); }

 private:
  static std::string message(index_fault why, std::size_t at, std::size_t index, std::size_t count,
                             std::size_t other_at) {
    const std::string text = "the vertex index map gives the vertex at position " + std::to_string(at) +
                             " of vertices(g) index " + std::to_string(index);
    if (why == index_fault::out_of_range) {
      return text + ", outside [0, " + std::to_string(count) + ") (a 1-based map?)";
    }
    return text + ", as it gave the vertex at position " + std::to_string(other_at) + ": not one-to-one";
  }
};

/// What is wrong with an output's storage alias (tensor_traits::shares_storage_of).
enum class alias_fault {
  unknown_source,  ///< the source vertex is not in the graph
  no_such_port,    ///< the source has no such output
  not_an_input,    ///< the vertex does not read the source tensor
  loop             ///< following aliases comes back to this output
};

/// Output `port` of `vertex` claims the storage of output `source_port` of
/// `source`, which it cannot (`fault`).
class bad_alias_error : public error {
 public:
  bad_alias_error(alias_fault why, std::size_t v, std::size_t output, std::size_t from,
                  std::size_t from_port)
      : error(message(why, v, output, from, from_port, index_name)), fault(why), vertex(v),
        port(output), source(from), source_port(from_port) {}
  alias_fault fault;
  std::size_t vertex;
  std::size_t port;
  std::size_t source;
  std::size_t source_port;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(fault, vertex, port, source, source_port, name);
  }

 private:
  static std::string message(alias_fault why, std::size_t v, std::size_t output, std::size_t from,
                             std::size_t from_port, const vertex_namer& name) {
    const std::string text = "output " + std::to_string(output) + " of " + name(v) +
                             " is declared to share the storage of output " +
                             std::to_string(from_port) + " of ";
    switch (why) {
      case alias_fault::unknown_source: return text + index_name(from) + ", which is not in the graph";
      case alias_fault::no_such_port: return text + name(from) + ", which has no such output";
      case alias_fault::not_an_input: return text + name(from) + ", which " + name(v) + " does not read";
      case alias_fault::loop: return text + name(from) + ", whose storage is its own: the aliases loop";
    }
    return text + name(from);
  }
};

}  // namespace memopt
