#pragma once
// Caffe2 memonger's two passes on a Caffe2-like NetDef, through memopt:
// - optimize_inference_net: linear_share over the op order (LIFO); every
//   blob whose storage is freed is renamed __m<k>_shared, k in order of the
//   storage's first release;
// - optimize_dag_net: dag_share (best fit, or the seed's size-aware pick),
//   valid for any order a DAG executor picks; only storages holding two or
//   more blobs (versions of one blob are one) are renamed,
//   <namescope>__m<k>_shared, k in storage order.
//
// The net becomes a tensor graph with one storage per blob name: its root is
// the first op's output writing it; an op writing it again (in place, as
// Relu with the same blob in and out) has an output that shares that storage
// (tensor_output::shares, in_place) and reads the version it overwrites, and
// later readers read the newest version. memopt's memory model then orders
// every reader and writer of a blob as the net does (graph/storage.hpp), and
// every version lives in the blob's one storage. Blobs read but never written
// are graph inputs. Devices: a blob
// lives on its producer's device, except that CopyGPUToCPU produces on the
// CPU; no storage mixes devices. Static blobs (external inputs and outputs,
// the don't-share list) keep their names.
//
// Refusals, as the seed's (the net is returned unchanged, with the reason):
// an already optimised net (a blob named *__m<k>_shared), a net type other
// than "" or "simple" (inference pass), a RecurrentNetwork op (both passes:
// step nets are not rewritten here). A blob read before the op that makes it
// (and not an external input) is a net_error naming the blob. Every
// rewritten net is checked to compute the same thing: each op reads the
// same producer's value for every input, no op reads and writes one renamed
// blob unless it did so before, and the external outputs come from the same
// ops; a failure there is a std::logic_error (a bug, not bad input).

#include "netdef.hpp"

#include <memopt/liveness.hpp>
#include <memopt/share.hpp>

#include <boost/graph/adjacency_list.hpp>

#include <algorithm>
#include <regex>
#include <span>
#include <stdexcept>
#include <unordered_map>
#include <unordered_set>

namespace caffe2_like {

struct memonger_options {
  std::vector<std::string> heads;       ///< dag: blobs the walk starts from (empty: external inputs)
  std::vector<std::string> dont_share;  ///< blobs never recycled
  std::string namescope;                ///< dag: prefix of the shared names
  bool seed_size_pick = false;          ///< dag: the seed's size-aware pick instead of best fit
  std::unordered_map<std::string, std::uint64_t> blob_bytes;  ///< sizes (unknown: 0)
};

struct memonger_result {
  nlohmann::json net;            ///< the rewritten net, or the input unchanged when refused
  std::string refusal;           ///< why the net is unchanged; empty when optimised
  std::size_t shared_names = 0;  ///< __m<k>_shared names introduced
  std::size_t renamed_blobs = 0; ///< blob names replaced by one of them
};

using blob_graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::directedS,
                                         memopt::tensor_node, memopt::tensor_edge>;

/// A net as a tensor graph: vertices are the external blobs read (first
/// read first), then the ops in order; buffer ids in that order, ports in
/// output order (a rewritten blob is one more port of its writer).
struct net_graph {
  blob_graph g;
  std::size_t first_op = 0;  ///< vertex of op 0
  std::unordered_map<std::string, memopt::buffer_id> buffer_of;  ///< the root of each blob's storage
  std::vector<std::uint32_t> device;  ///< by buffer
  std::vector<bool> fixed;            ///< by buffer: a static blob
};

namespace detail {

/// Devices numbered densely in order of first appearance.
struct device_numbers {
  std::vector<device_option> seen{device_option{}};
  std::uint32_t operator()(const device_option& d) {
    const auto it = std::ranges::find(seen, d);
    if (it != seen.end()) return static_cast<std::uint32_t>(it - seen.begin());
    seen.push_back(d);
    return static_cast<std::uint32_t>(seen.size() - 1);
  }
};

inline bool is_recurrent(const op_def& op) { return op.type.rfind("RecurrentNetwork", 0) == 0; }

inline std::string refusal_of(const net_def& net, bool inference) {
  if (inference && !net.type.empty() && net.type != "simple") {
    return "cannot optimise memory for nets of type '" + net.type + "' (only \"\" or \"simple\")";
  }
  static const std::regex shared(R"(.*__m[0-9]+_shared)");
  for (std::size_t i = 0; i < net.op.size(); ++i) {
    if (is_recurrent(net.op[i])) {
      return op_label(i, net.op[i].type) + ": RecurrentNetwork ops are not supported";
    }
    for (const auto* blobs : {&net.op[i].input, &net.op[i].output}) {
      for (const auto& blob : *blobs) {
        if (std::regex_match(blob, shared)) {
          return "the net was already optimised (it has blob '" + blob + "')";
        }
      }
    }
  }
  return {};
}

/// Index of the op that last wrote each input of each op (-1: none), then the
/// last writer of each external output.
inline std::vector<std::ptrdiff_t> producers(const std::vector<op_def>& ops,
                                             const std::vector<std::string>& external_output) {
  std::unordered_map<std::string, std::ptrdiff_t> last;
  std::vector<std::ptrdiff_t> out;
  const auto writer = [&](const std::string& blob) {
    const auto it = last.find(blob);
    return it == last.end() ? std::ptrdiff_t{-1} : it->second;
  };
  for (std::size_t i = 0; i < ops.size(); ++i) {
    for (const auto& blob : ops[i].input) out.push_back(writer(blob));
    for (const auto& blob : ops[i].output) last[blob] = static_cast<std::ptrdiff_t>(i);
  }
  for (const auto& blob : external_output) out.push_back(writer(blob));
  return out;
}

/// Throws std::logic_error unless `after` computes what `net` does.
inline void check_same_computation(const net_def& net, const std::vector<op_def>& after) {
  if (producers(net.op, net.external_output) != producers(after, net.external_output)) {
    throw std::logic_error("memonger: the rewritten net reads a blob another op overwrote");
  }
  for (std::size_t i = 0; i < after.size(); ++i) {
    for (std::size_t j = 0; j < after[i].input.size(); ++j) {
      for (std::size_t k = 0; k < after[i].output.size(); ++k) {
        if (after[i].input[j] == after[i].output[k] && net.op[i].input[j] != net.op[i].output[k]) {
          throw std::logic_error("memonger: " + op_label(i, after[i].type) + " reads and writes '" +
                                 after[i].input[j] + "'");
        }
      }
    }
  }
}

}  // namespace detail

/// The tensor graph of `net`. Throws net_error for a blob read before the op
/// that makes it.
[[nodiscard]] inline net_graph to_graph(const net_def& net, const memonger_options& options = {}) {
  const std::unordered_set<std::string> external(net.external_input.begin(), net.external_input.end());
  std::unordered_map<std::string, std::size_t> first_writer;
  for (std::size_t i = 0; i < net.op.size(); ++i) {
    for (const auto& blob : net.op[i].output) first_writer.try_emplace(blob, i);
  }
  // The external blobs read, in order of first read.
  std::vector<std::string> inputs;
  {
    std::unordered_set<std::string> made, listed;
    for (std::size_t i = 0; i < net.op.size(); ++i) {
      for (const auto& blob : net.op[i].input) {
        if (made.contains(blob) || listed.contains(blob)) continue;
        if (first_writer.contains(blob) && !external.contains(blob)) {
          throw net_error(detail::op_label(i, net.op[i].type) + " reads blob '" + blob +
                          "' before any op produced it (op #" +
                          std::to_string(first_writer.at(blob)) + " does, later)");
        }
        listed.insert(blob);
        inputs.push_back(blob);
      }
      for (const auto& blob : net.op[i].output) made.insert(blob);
    }
  }

  net_graph r;
  r.first_op = inputs.size();
  r.g = blob_graph(inputs.size() + net.op.size());
  std::unordered_map<std::string, memopt::buffer_ref<std::size_t>> version;  // each blob's newest tensor
  detail::device_numbers device_number;
  memopt::buffer_id next = 0;
  const auto add_output = [&](std::size_t v, memopt::tensor_output output, std::uint32_t device) {
    r.g[v].outputs.push_back(output);
    r.device.push_back(device);
    ++next;
    return memopt::buffer_ref<std::size_t>{v, r.g[v].outputs.size() - 1};
  };
  const auto own = [&](const std::string& blob, std::size_t v, std::uint64_t bytes, std::uint32_t device) {
    r.buffer_of[blob] = next;
    version[blob] = add_output(v, {.bytes = bytes}, device);
  };
  const auto bytes_of = [&](const std::string& blob) {
    const auto it = options.blob_bytes.find(blob);
    return it == options.blob_bytes.end() ? std::uint64_t{0} : it->second;
  };
  for (std::size_t k = 0; k < inputs.size(); ++k) own(inputs[k], k, bytes_of(inputs[k]), 0);
  for (std::size_t i = 0; i < net.op.size(); ++i) {
    const std::size_t v = r.first_op + i;
    const op_def& op = net.op[i];
    for (const auto& blob : op.input) {
      const auto read = version.at(blob);
      add_edge(read.vertex, v, memopt::tensor_edge{.port = read.port}, r.g);
    }
    const device_option made_on = op.type == "CopyGPUToCPU" ? device_option{} : op.device;
    for (const auto& blob : op.output) {
      const auto it = version.find(blob);
      if (it == version.end()) {
        own(blob, v, bytes_of(blob), device_number(made_on));
        continue;
      }
      const auto overwritten = it->second;  // written again: a new version in the same storage
      if (overwritten.vertex == v) continue;
      add_edge(overwritten.vertex, v, memopt::tensor_edge{.port = overwritten.port}, r.g);
      it->second = add_output(v,
                              {.bytes = bytes_of(blob),
                               .shares = memopt::shared_storage<std::size_t>{overwritten, true}},
                              r.device[r.buffer_of.at(blob)]);
    }
  }

  r.fixed.assign(next, false);
  for (memopt::buffer_id b = 0; b < inputs.size(); ++b) r.fixed[b] = true;
  for (const auto* blobs : {&net.external_input, &net.external_output, &options.dont_share}) {
    for (const auto& blob : *blobs) {
      if (const auto it = r.buffer_of.find(blob); it != r.buffer_of.end()) r.fixed[it->second] = true;
    }
  }
  for (const auto& blob : net.external_output) {
    if (const auto it = version.find(blob); it != version.end()) {
      r.g[it->second.vertex].outputs[it->second.port].live_out = true;
    }
  }
  return r;
}

namespace detail {

/// The net with every blob of a named storage renamed, checked.
inline memonger_result renamed(const net_def& net, const net_graph& graph, const memopt::sharing_plan& plan,
                               const std::vector<std::string>& storage_name) {
  memonger_result result;
  std::unordered_set<std::string> renamed_blobs;
  std::vector<op_def> ops = net.op;
  for (auto& op : ops) {
    for (auto* blobs : {&op.input, &op.output}) {
      for (auto& blob : *blobs) {
        const std::string& name = storage_name[plan.storage_of[graph.buffer_of.at(blob)]];
        if (name.empty()) continue;
        renamed_blobs.insert(blob);
        blob = name;
      }
    }
  }
  check_same_computation(net, ops);
  result.net = with_ops(net, ops);
  result.shared_names = static_cast<std::size_t>(
      std::ranges::count_if(storage_name, [](const std::string& s) { return !s.empty(); }));
  result.renamed_blobs = renamed_blobs.size();
  return result;
}

inline memopt::share_options share_options_of(const net_graph& graph) {
  return {.dont_share = graph.fixed, .device = graph.device};
}

}  // namespace detail

/// The seed's optimize_inference_net. Throws net_error.
[[nodiscard]] inline memonger_result optimize_inference_net(const net_def& net,
                                                            const memonger_options& options = {}) {
  if (auto why = detail::refusal_of(net, true); !why.empty()) return {net.document, why};
  const net_graph graph = to_graph(net, options);
  const auto order = memopt::program_order(graph.g);
  const std::span<const std::size_t> steps(order);
  const memopt::share_options sharing = detail::share_options_of(graph);
  const memopt::sharing_plan plan = memopt::linear_share(graph.g, steps, memopt::lifo_reuse{}, sharing);
  if (!memopt::check_sharing(graph.g, plan, steps, sharing).empty()) {
    throw std::logic_error("memonger: linear_share produced an invalid plan");
  }
  // Name storages in order of first release: at each op, its inputs then outputs.
  const auto live = memopt::liveness(graph.g, steps);
  std::vector<std::string> storage_name(plan.num_storages());
  std::size_t k = 0;
  for (std::size_t i = 0; i < net.op.size(); ++i) {
    for (const auto* blobs : {&net.op[i].input, &net.op[i].output}) {
      for (const auto& blob : *blobs) {
        const memopt::buffer_id b = graph.buffer_of.at(blob);
        std::string& name = storage_name[plan.storage_of[b]];
        if (graph.fixed[b] || !name.empty() || live.intervals[b].last != graph.first_op + i) continue;
        name = "__m" + std::to_string(k++) + "_shared";
      }
    }
  }
  return detail::renamed(net, graph, plan, storage_name);
}

/// The seed's compute_blob_recycling_for_dag. Throws net_error.
[[nodiscard]] inline memonger_result optimize_dag_net(const net_def& net,
                                                      const memonger_options& options = {}) {
  if (auto why = detail::refusal_of(net, false); !why.empty()) return {net.document, why};
  net_graph graph = to_graph(net, options);
  // Ops the walk from the heads never reaches keep their blobs, as in the seed.
  const auto& heads = options.heads.empty() ? net.external_input : options.heads;
  std::unordered_set<std::string> reached(heads.begin(), heads.end());
  for (std::size_t i = 0; i < net.op.size(); ++i) {
    const auto& op = net.op[i];
    const bool from_heads = op.input.empty() || std::ranges::any_of(op.input, [&](const auto& blob) {
                              return reached.contains(blob);
                            });
    for (const auto& blob : op.output) {
      if (from_heads) {
        reached.insert(blob);
      } else if (!reached.contains(blob)) {
        graph.fixed[graph.buffer_of.at(blob)] = true;
      }
    }
  }
  const memopt::share_options sharing = detail::share_options_of(graph);
  const memopt::sharing_plan plan = options.seed_size_pick
                                        ? memopt::dag_share(graph.g, memopt::caffe2_size_aware_reuse{}, sharing)
                                        : memopt::dag_share(graph.g, memopt::best_fit_reuse{}, sharing);
  if (!memopt::check_sharing(graph.g, plan, sharing).empty()) {
    throw std::logic_error("memonger: dag_share produced an invalid plan");
  }
  // A storage is renamed when it holds two blobs; the versions an in-place op
  // writes are one blob, in one storage, whatever the plan.
  std::vector<std::size_t> blobs_in(plan.num_storages(), 0);
  for (const auto& [blob, root] : graph.buffer_of) ++blobs_in[plan.storage_of[root]];
  std::vector<std::string> storage_name(plan.num_storages());
  std::size_t k = 0;
  for (std::size_t s = 0; s < plan.num_storages(); ++s) {
    if (blobs_in[s] > 1) storage_name[s] = options.namescope + "__m" + std::to_string(k++) + "_shared";
  }
  return detail::renamed(net, graph, plan, storage_name);
}

}  // namespace caffe2_like
