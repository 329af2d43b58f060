#pragma once
// The task graph a simulation runs: the graph's ops after pruning to what the
// fetches need, plus a send and a receive for each value that crosses
// devices. Built once in O(V + E + A log A) for A aliases; simulate() then
// only reads it.
//
// - Fetches (vertex indices) prune the graph to their transitive fan-in
//   (data and control); fed vertices start ready and their own inputs are cut
//   (a fed value needs no producer). No fetch: every op runs.
// - An edge between devices becomes a send (its time on the link, its memory
//   on the source device) and a receive on the destination, one pair per
//   (producer, output port, destination device) however many consumers read
//   it there. A control edge between devices sends a token of
//   control_token_bytes (port -1). Names follow the seed:
//   Send_<src>_<port>_from_<srcdev>_to_<dstdev>, Recv_<src>_<port>_on_<dstdev>,
//   '/' and ':' of a device name written '_', port -1 written "minus1".
// - Sends and receives already in the graph (op types _Send/_Recv): an edge
//   from one to the other, or a _Recv whose transfer_key names a _Send's, is
//   an arc, never a second transfer; a _Recv with no input starts ready.
// - In-place writes order what touches their storage (graph/storage.hpp):
//   each such order is an arc (a token pair across devices).
// - Memory: each op's outputs live on its device; a receive's copy on the
//   destination; an alias lives in the storage of the tensor its op reads
//   there. With control_token_bytes > 0 an op with control successors holds
//   a token of that size until they have run, as the seed counts port -1.

#include <memopt/detail/edge_walk.hpp>
#include <memopt/graph/buffers.hpp>
#include <memopt/graph/compact.hpp>
#include <memopt/graph/index_map.hpp>
#include <memopt/graph/storage.hpp>
#include <memopt/graph/tensor_traits.hpp>
#include <memopt/simulate/errors.hpp>
#include <memopt/simulate/machine.hpp>
#include <memopt/simulate/op_traits.hpp>
#include <memopt/simulate/task_graph.hpp>

#include <algorithm>
#include <cstddef>
#include <cstdint>
#include <limits>
#include <span>
#include <stdexcept>
#include <string>
#include <string_view>
#include <unordered_map>
#include <utility>
#include <vector>

namespace memopt::sim {

namespace detail {

/// A data or control input of a vertex in the caller's graph (8 bytes: the
/// task graph's rows hold vertices, tasks and buffers in 32 bits).
struct graph_input {
  compact_index source = 0;
  std::int32_t port = 0;  ///< -1: a control edge
};

/// Which vertices run: the fan-in of the fetches (inputs and in-place
/// orders), not crossing fed vertices.
inline std::vector<bool> vertices_to_run(const csr_rows<graph_input>& inputs, std::span<const storage_hazard> hazards,
                                         const std::vector<bool>& fed, std::span<const std::size_t> fetch) {
  const std::size_t n = fed.size();
  if (fetch.empty()) return std::vector<bool>(n, true);
  std::vector<std::pair<std::size_t, std::size_t>> orders;
  for (const storage_hazard& h : hazards) orders.emplace_back(h.after, h.before);
  const csr_rows<std::size_t> ordered_after = memopt::detail::group_rows<std::size_t>(n, orders);
  std::vector<bool> keep(n, false);
  std::vector<std::size_t> stack;
  const auto visit = [&](std::size_t v) {
    if (keep[v]) return;
    keep[v] = true;
    stack.push_back(v);
  };
  for (const std::size_t v : fetch) visit(v);
  while (!stack.empty()) {
    const std::size_t v = stack.back();
    stack.pop_back();
    if (fed[v]) continue;
    for (const graph_input& in : inputs[v]) visit(in.source);
    for (const std::size_t u : ordered_after[v]) visit(u);
  }
  return keep;
}

/// The receive made for each (producer vertex, port, destination device): a
/// chain per producer, newest first. A chain holds at most ports x devices
/// entries, so walking it costs less than hashing the key.
class receive_index {
 public:
  explicit receive_index(std::size_t vertices) : latest_(vertices, no_task) {}
  [[nodiscard]] std::size_t find(std::size_t vertex, std::ptrdiff_t port, std::size_t device) const {
    for (std::size_t k = latest_[vertex]; k != no_task; k = entries_[k].next) {
      if (entries_[k].port == port && entries_[k].device == device) return entries_[k].recv;
    }
    return no_task;
  }
  void add(std::size_t vertex, std::ptrdiff_t port, std::size_t device, std::size_t recv) {
    entries_.push_back({.port = port, .device = device, .recv = recv, .next = latest_[vertex]});
    latest_[vertex] = entries_.size() - 1;
  }

 private:
  struct entry {
    std::ptrdiff_t port;
    std::size_t device;
    std::size_t recv;  ///< its task
    std::size_t next;  ///< the producer's previous entry, or no_task
  };
  std::vector<std::size_t> latest_;  // by vertex
  std::vector<entry> entries_;
};

/// An arc of the task graph, in the order made: `to` runs after `from`, and
/// reads its output `port` (-1: its token) unless port is no_read (an order
/// only: a send before its receive, a graph's own transfer). One record
/// serves both the successors (by from) and the reads (by to).
struct task_arc {
  static constexpr std::int32_t no_read = std::numeric_limits<std::int32_t>::min();
  compact_index from;
  compact_index to;
  std::int32_t port;
};

/// Rows of item_of(e) for the records e, row row_of(e), in record order;
/// an item no_task is left out. O(rows + records).
template <class Record, class RowOf, class ItemOf>
compact_rows group_by(std::size_t rows, std::span<const Record> records, RowOf row_of, ItemOf item_of) {
  return memopt::detail::gather_rows<compact_index, compact_index>(rows, [&](auto&& emit) {
    for (const Record& e : records) {
      if (const std::size_t item = item_of(e); item != no_task) emit(row_of(e), static_cast<compact_index>(item));
    }
  });
}

}  // namespace detail

/// The task graph of g on `m`, vertex index(v) placed on device placement[index(v)].
/// Throws bad_simulation_input_error (placement size or device, fetch or feed
/// outside the graph, a vertex fed twice), and what buffer_table and
/// storage_hazards throw (bad_alias_error, bad_port_error, bad_index_error).
template <simulation_graph G, vertex_index_map<G> Index = identity_index>
[[nodiscard]] task_graph make_task_graph(const G& g, const machine& m, std::span<const std::size_t> placement,
                                         const task_options& options = {}, Index index = {}) {
  using tensors = tensor_traits<G>;
  using ops = op_traits<G>;
  const buffer_table table = make_buffer_table(g, index);  // checks the index map
  const std::size_t n = table.num_vertices();
  if (placement.size() != n) throw bad_simulation_input_error(input_fault::placement_size, placement.size(), n);
  for (std::size_t i = 0; i < n; ++i) {
    if (placement[i] >= m.devices.size()) throw bad_simulation_input_error(input_fault::no_device, i, m.devices.size());
  }
  std::vector<bool> fed(n, false);
  for (const std::size_t v : options.feed) {
    if (v >= n) throw bad_simulation_input_error(input_fault::unknown_vertex, v, n);
    if (fed[v]) throw bad_simulation_input_error(input_fault::duplicate_feed, v, n);
    fed[v] = true;
  }
  for (const std::size_t v : options.fetch) {
    if (v >= n) throw bad_simulation_input_error(input_fault::unknown_vertex, v, n);
  }
  // Rows hold vertices, tasks and buffers in 32 bits.
  const auto require_compact = [](std::size_t items, const char* what) {
    if (items >= std::numeric_limits<compact_index>::max()) {
      throw std::length_error(std::string("memopt::sim::make_task_graph: more than 2^32 - 2 ") + what);
    }
  };
  require_compact(n, "vertices");

  // By buffer id, what tensors::output_bytes says: the table's bytes, but
  // for a view, which adds none to its storage.
  std::vector<std::uint64_t> output_bytes = table.bytes;
  if (table.aliased > 0) {
    for (const auto v : boost::make_iterator_range(vertices(g))) {
      const std::size_t i = index(v);
      for (std::size_t port = 0; port < table.num_outputs(i); ++port) {
        output_bytes[table.id(i, port)] = tensors::output_bytes(g, v, port);
      }
    }
  }

  // The graph's edges by target, in the order out_edges lists them: one pass
  // over the edges (their bundles are the slow part of a Boost graph to read)
  // into packed entries, then grouped. Those that cross devices are counted.
  struct edge_entry {
    compact_index target;
    detail::graph_input input;
  };
  std::vector<edge_entry> edges;
  edges.reserve(memopt::detail::num_edges_hint(g));
  std::size_t crossing_edges = 0;
  const auto out_edges_of = [&g](vertex_t<G> u) { return out_edges(u, g); };
  memopt::detail::for_each_vertex_fetching_edges(g, out_edges_of, [&](vertex_t<G> u) {
    const std::size_t i = index(u);
    for (const auto e : boost::make_iterator_range(out_edges(u, g))) {
      const std::size_t j = index(target(e, g));
      const bool control = tensors::is_control(g, e);
      const std::size_t port = control ? 0 : tensors::port(g, e);
      if (!control && port >= table.num_outputs(i)) throw bad_port_error(i, j, port, table.num_outputs(i));
      edges.push_back({static_cast<compact_index>(j),
                       {static_cast<compact_index>(i), control ? -1 : static_cast<std::int32_t>(port)}});
      crossing_edges += placement[i] == placement[j] ? 0 : 1;
    }
  });
  const csr_rows<detail::graph_input> inputs = memopt::detail::gather_rows<detail::graph_input>(n, [&](auto&& emit) {
    for (const edge_entry& e : edges) emit(e.target, e.input);
  });
  edges = {};
  const std::vector<storage_hazard> hazards = storage_hazards(g, table, index);
  const std::vector<bool> run = detail::vertices_to_run(inputs, hazards, fed, options.fetch);

  task_graph tg;
  tg.task_of_vertex.assign(n, no_task);
  // Room for every op and, at most, a send and a receive per edge or in-place
  // order that crosses devices: the tasks are never moved as they are added.
  // (Room reserved and never used costs no page of memory.)
  const std::size_t most_transfers = crossing_edges + hazards.size();
  tg.reserve(n + 2 * most_transfers);
  std::vector<vertex_t<G>> vertex_list;
  vertex_list.reserve(n);
  for (const auto v : boost::make_iterator_range(vertices(g))) vertex_list.push_back(v);
  std::vector<std::size_t> rank(n);
  for (std::size_t r = 0; r < n; ++r) rank[index(vertex_list[r])] = r;
  std::vector<vertex_t<G>> by_index(n);
  for (const auto v : vertex_list) by_index[index(v)] = v;

  std::string unnamed;  // "v<index>" for a vertex with no name
  for (const auto v : vertex_list) {  // op tasks in program order
    const std::size_t i = index(v);
    if (!run[i]) continue;
    task t;
    t.vertex = i;
    const std::string_view op_type = ops::op_type(g, v);
    t.device = t.to_device = static_cast<std::uint32_t>(placement[i]);
    t.rank = rank[i];
    t.merge = seed_op_types::merge(op_type);
    t.flops = ops::flops(g, v);
    for (std::size_t port = 0; port < table.num_outputs(i); ++port) {
      t.bytes_written += static_cast<double>(output_bytes[table.id(i, port)]);
    }
    std::string_view name = ops::name(g, v);
    if (name.empty()) name = unnamed.assign("v").append(std::to_string(i));
    tg.task_of_vertex[i] = tg.add_task(t, name, op_type);
  }
  const std::size_t num_ops = tg.tasks.size();
  const auto kind_of_op = [&](std::size_t i) { return tg.op_type(tg.task_of_vertex[i]); };

  // Arcs, each with the port it reads; transfers made on the way.
  using detail::task_arc;
  std::vector<task_arc> arcs;
  arcs.reserve(inputs.items.size() + hazards.size() + 2 * most_transfers);
  // (Task numbers past 32 bits are refused below, before any arc is read.)
  const auto add_arc = [&arcs](std::size_t from, std::size_t to, std::ptrdiff_t port) {
    arcs.push_back({static_cast<compact_index>(from), static_cast<compact_index>(to), static_cast<std::int32_t>(port)});
  };
  detail::receive_index recv_of(n);
  std::vector<std::string> device_label;  // by device: its name as a transfer's name spells it
  for (const auto& d : m.devices) device_label.push_back(sanitized_device_name(d.name));
  std::string src;            // "<producer>_<port>": what a send's and its receive's names share
  std::string transfer_name;  // the one being spelled
  // The receive on `device` of output `port` of vertex i, made with its send
  // when first asked for. What it reads of i comes from arrays by vertex, not
  // from i's task: a producer is often far from its reader, and each lookup
  // may miss the cache; these can all be under way at once.
  const auto transfer_to = [&](std::size_t i, std::ptrdiff_t port, std::size_t device) {
    if (const std::size_t made = recv_of.find(i, port, device); made != no_task) return made;
    const std::size_t producer_task = tg.task_of_vertex[i];
    const std::uint64_t bytes =
        port < 0 ? options.control_token_bytes : output_bytes[table.id(i, static_cast<std::size_t>(port))];
    const task send{.kind = task_kind::send,
                    .created = true,
                    .port = static_cast<std::int32_t>(port),
                    .device = static_cast<std::uint32_t>(placement[i]),
                    .to_device = static_cast<std::uint32_t>(device),
                    .vertex = i,
                    .rank = rank[i],
                    .bytes_read = static_cast<double>(bytes),
                    .transfer_bytes = bytes};
    task recv = send;
    recv.kind = task_kind::recv;
    recv.device = static_cast<std::uint32_t>(device);
    recv.bytes_read = 0;
    recv.bytes_written = static_cast<double>(bytes);
    recv.transfer_bytes = 0;
    src.assign(tg.name(producer_task)).append("_").append(port < 0 ? std::string("minus1") : std::to_string(port));
    transfer_name.assign("Send_").append(src).append("_from_").append(device_label[send.device]);
    const std::size_t s = tg.add_task(send, transfer_name.append("_to_").append(device_label[device]), "_Send");
    transfer_name.assign("Recv_").append(src).append("_on_").append(device_label[device]);
    tg.add_task(recv, transfer_name, "_Recv");
    add_arc(producer_task, s, port);
    add_arc(s, s + 1, task_arc::no_read);
    ++tg.transfers;
    recv_of.add(send.vertex, port, device, s + 1);
    return s + 1;
  };
  // Vertex j's task reads `port` of vertex i's: directly, or from the receive on j's device.
  const auto connect = [&](std::size_t i, std::ptrdiff_t port, std::size_t j) {
    const std::size_t p = tg.task_of_vertex[i];
    const std::size_t t = tg.task_of_vertex[j];
    if (placement[i] == placement[j]) {
      add_arc(p, t, port);
    } else {
      add_arc(transfer_to(i, port, placement[j]), t, 0);
    }
  };
  std::unordered_map<std::string_view, std::size_t> send_by_key;
  for (std::size_t t = 0; t < num_ops; ++t) {
    const std::size_t i = tg.tasks[t].vertex;
    if (seed_op_types::send(tg.op_type(t))) {
      const auto key = ops::transfer_key(g, by_index[i]);
      if (!key.empty()) send_by_key.emplace(key, t);
    }
  }
  for (std::size_t t = 0; t < num_ops; ++t) {
    const std::size_t j = tg.tasks[t].vertex;
    if (fed[j]) continue;
    const bool is_recv = seed_op_types::recv(tg.op_type(t));
    for (const detail::graph_input& in : inputs[j]) {
      if (is_recv && seed_op_types::send(kind_of_op(in.source))) {
        add_arc(tg.task_of_vertex[in.source], t, task_arc::no_read);  // the graph's own transfer
        continue;
      }
      if (in.port >= 0) {
        tg.tasks[t].bytes_read += static_cast<double>(output_bytes[table.id(in.source, static_cast<std::size_t>(in.port))]);
      }
      connect(in.source, in.port, j);
    }
    if (is_recv && inputs[j].empty()) {
      const auto key = ops::transfer_key(g, by_index[j]);
      const auto it = send_by_key.find(key);
      if (!key.empty() && it != send_by_key.end()) add_arc(it->second, t, task_arc::no_read);
    }
  }
  for (const storage_hazard& h : hazards) {
    if (!run[h.before] || !run[h.after] || fed[h.after]) continue;
    connect(h.before, -1, h.after);
  }

  const std::size_t count = tg.tasks.size();
  require_compact(count, "tasks");
  tg.successors = detail::group_by(
      count, std::span<const task_arc>(arcs), [](const task_arc& a) { return a.from; },
      [](const task_arc& a) { return a.to; });
  tg.num_inputs.assign(count, 0);
  for (const task_arc& a : arcs) ++tg.num_inputs[a.to];
  tg.starts_ready.resize(count);
  for (std::size_t t = 0; t < count; ++t) {
    tg.starts_ready[t] = tg.num_inputs[t] == 0 || (t < num_ops && fed[tg.tasks[t].vertex]);
  }

  // Buffers, contiguous by task: an op's outputs, its token, its scratch; a receive's copy.
  std::vector<bool> has_token(count, false);
  for (const task_arc& a : arcs) {
    if (a.port == -1) has_token[a.from] = true;
  }
  const auto holds_token = [&](std::size_t t) { return has_token[t] && options.control_token_bytes > 0; };
  tg.first_buffer.assign(count + 1, 0);
  // At most: every buffer of the graph, a copy per receive, a token per task.
  tg.buffers.reserve(table.size() + (count - num_ops) + (options.control_token_bytes > 0 ? count : 0));
  for (std::size_t t = 0; t < count; ++t) {
    const task& tk = tg.tasks[t];
    tg.first_buffer[t] = tg.buffers.size();
    if (tk.kind == task_kind::op) {
      const auto v = by_index[tk.vertex];
      const bool persistent = tensors::is_persistent(g, v) || seed_op_types::persistent(tg.op_type(t));
      for (std::size_t port = 0; port < table.num_outputs(tk.vertex); ++port) {
        tg.buffers.push_back({.task = t,
                              .port = static_cast<std::ptrdiff_t>(port),
                              .bytes = output_bytes[table.id(tk.vertex, port)],
                              .persistent = persistent,
                              .live_out = tensors::is_live_out(g, v, port),
                              .in_place = table.in_place[table.id(tk.vertex, port)]});
      }
    } else if (tk.kind == task_kind::recv) {
      tg.buffers.push_back({.task = t, .port = 0, .bytes = tg.tasks[t - 1].transfer_bytes});
    }
    if (holds_token(t)) tg.buffers.push_back({.task = t, .port = -1, .bytes = options.control_token_bytes});
    if (tk.kind == task_kind::op && table.num_outputs(tk.vertex) < table.first[tk.vertex + 1] - table.first[tk.vertex]) {
      const buffer_id b = table.first[tk.vertex + 1] - 1;
      tg.buffers.push_back({.task = t, .port = -1, .bytes = table.bytes[b], .scratch = true});
    }
  }
  tg.first_buffer[count] = tg.buffers.size();
  const auto buffer_of = [&](std::size_t t, std::ptrdiff_t port) {
    const std::size_t first = tg.first_buffer[t];
    if (port >= 0) return first + static_cast<std::size_t>(port);  // a receive is read at port 0
    return holds_token(t) ? first + table.num_outputs(tg.tasks[t].vertex) : no_task;
  };
  require_compact(tg.buffers.size(), "buffers");
  tg.reads = detail::group_by(
      count, std::span<const task_arc>(arcs), [](const task_arc& a) { return a.to; },
      [&](const task_arc& a) { return a.port == task_arc::no_read ? no_task : buffer_of(a.from, a.port); });

  // An alias lives in the storage of the tensor its op reads on its device,
  // and an in-place candidate may take that tensor's storage over.
  const auto read_copy = [&](std::size_t t, buffer_id source) {
    const std::size_t p = tg.task_of_vertex[table.owner[source]];
    const auto source_port = static_cast<std::ptrdiff_t>(table.port_of(source));
    if (tg.tasks[p].device == tg.tasks[t].device) return buffer_of(p, source_port);
    const std::size_t recv = recv_of.find(tg.tasks[p].vertex, source_port, tg.tasks[t].device);
    return recv == no_task ? no_task : buffer_of(recv, 0);
  };
  for (std::size_t t = 0; t < num_ops; ++t) {
    const std::size_t i = tg.tasks[t].vertex;
    if (fed[i]) continue;
    for (std::size_t port = 0; port < table.num_outputs(i); ++port) {
      const buffer_id shares = table.shares[table.id(i, port)];
      const buffer_id takes_over = table.takes_over[table.id(i, port)];
      if (shares == no_buffer && takes_over == no_buffer) continue;
      task_buffer& out = tg.buffers[buffer_of(t, static_cast<std::ptrdiff_t>(port))];
      if (shares != no_buffer) out.shares = read_copy(t, shares);
      if (takes_over != no_buffer) out.takes_over = read_copy(t, takes_over);
    }
  }
  return tg;
}

}  // namespace memopt::sim
