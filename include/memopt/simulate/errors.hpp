#pragma once
// The simulation family's errors. Like every memopt::error they carry vertex
// indices as fields, and describe(name) renders them with a caller's names.

#include <memopt/error.hpp>

#include <cstddef>
#include <string>
#include <utility>
#include <vector>

namespace memopt::sim {

/// A machine description that cannot be simulated (no device, a rate that is
/// not positive, a link naming a missing device). Names no vertex.
class bad_machine_error : public error {
 public:
  explicit bad_machine_error(const std::string& problem) : error(problem) {}
  [[nodiscard]] std::string describe(const vertex_namer&) const override { return what(); }
};

/// What a placement, fetch or feed list gets wrong about a vertex.
enum class input_fault {
  no_device,       ///< the placement names a device the machine lacks
  placement_size,  ///< the placement does not give one device per vertex
  unknown_vertex,  ///< a fetch or feed names a vertex not in the graph
  duplicate_feed   ///< a vertex fed twice
};

/// A placement, fetch or feed list the graph cannot take; `vertex` is the one
/// at fault (for placement_size: the size given).
class bad_simulation_input_error : public error {
 public:
  bad_simulation_input_error(input_fault why, std::size_t at, std::size_t limit = 0)
      : error(message(why, at, limit, index_name)), fault(why), vertex(at), bound(limit) {}
  input_fault fault;
  std::size_t vertex;
  std::size_t bound;  ///< devices in the machine, or vertices in the graph
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(fault, vertex, bound, name);
  }

 private:
  static std::string message(input_fault why, std::size_t v, std::size_t limit, const vertex_namer& name) {
    switch (why) {
      case input_fault::no_device:
        return name(v) + " is placed on a device the machine lacks (it has " + std::to_string(limit) + ")";
      case input_fault::placement_size:
        return "the placement gives " + std::to_string(v) + " devices for " + std::to_string(limit) + " vertices";
      case input_fault::unknown_vertex:
        return "a fetch or feed names vertex " + std::to_string(v) + ", not in the graph of " +
               std::to_string(limit);
      case input_fault::duplicate_feed:
        return name(v) + " is fed twice";
    }
    return "bad simulation input";
  }
};

/// The device field of `vertex` names no device of the machine, or several
/// (`matches`, their names; empty when none): a placement cannot guess.
class unmatched_device_error : public error {
 public:
  unmatched_device_error(std::size_t at, std::string requested, std::vector<std::string> matching)
      : error(message(at, requested, matching, index_name)), vertex(at), device(std::move(requested)),
        matches(std::move(matching)) {}
  std::size_t vertex;
  std::string device;
  std::vector<std::string> matches;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override {
    return message(vertex, device, matches, name);
  }

 private:
  static std::string message(std::size_t v, const std::string& device, const std::vector<std::string>& matches,
                             const vertex_namer& name) {
    std::string text = name(v) + " is placed on '" + device + "', which ";
    if (matches.empty()) return text + "matches no device of the machine";
    text += "matches several devices:";
    for (const std::string& m : matches) text += " '" + m + "'";
    return text;
  }
};

/// Nothing can start: every op to run waits for an input (the seed's "No
/// ready nodes in the graph"). `waiting` lists the vertices of the ops that
/// would run, at most a few.
class no_ready_node_error : public error {
 public:
  explicit no_ready_node_error(std::vector<std::size_t> some_waiting)
      : error(message(some_waiting, index_name)), waiting(std::move(some_waiting)) {}
  std::vector<std::size_t> waiting;
  [[nodiscard]] std::string describe(const vertex_namer& name) const override { return message(waiting, name); }

 private:
  static std::string message(const std::vector<std::size_t>& waiting, const vertex_namer& name) {
    std::string text = "no op is ready at the start: every op waits for an input";
    for (std::size_t i = 0; i < waiting.size(); ++i) text += (i == 0 ? " (" : ", ") + name(waiting[i]);
    return waiting.empty() ? text : text + ")";
  }
};

}  // namespace memopt::sim
