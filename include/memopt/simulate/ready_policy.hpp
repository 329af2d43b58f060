#pragma once
// Ready policies: which ready task runs next, the seed's ready managers as
// models of one concept. simulate() asks a policy for one task at a time
// (pop), runs it, then pushes the tasks that became ready; so a task pushed
// while another runs never displaces it, as in the seed.
// - fifo: the task ready first in push order; lifo: the last pushed;
// - first_ready: the earliest ready time, ties by name (the seed's rule);
// - priority<Key>: the smallest key(task, view), ties as first_ready;
// - composite (the seed's default): per device LIFO for ops, first-ready for
//   sends and for receives; across them the earliest ready, ties send, then
//   receive, then op by name;
// - program: the graph's own order (priority by program position).
// Ties that remain (two ops of one name) go to the task created first.
// O(log R) per push and pop for R ready tasks (composite: O(log R + D)).

#include <memopt/simulate/task_graph.hpp>

#include <algorithm>
#include <concepts>
#include <cstddef>
#include <deque>
#include <queue>
#include <string_view>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

namespace memopt::sim {

/// What a policy may read of the tasks: their facts and ready times.
class ready_view {
 public:
  ready_view(const task_graph& graph, const std::vector<double>& ready_times)
      : graph_(&graph), ready_(&ready_times) {}
  [[nodiscard]] const task& operator[](std::size_t t) const { return graph_->tasks[t]; }
  [[nodiscard]] std::string_view name(std::size_t t) const { return graph_->name(t); }
  [[nodiscard]] double ready_us(std::size_t t) const { return (*ready_)[t]; }

 private:
  const task_graph* graph_;
  const std::vector<double>* ready_;
};

template <class P>
concept ready_policy = requires(P& p, const P& cp, std::size_t t, const ready_view& view) {
  p.push(t, view);
  { p.pop(view) } -> std::same_as<std::size_t>;
  { cp.empty() } -> std::convertible_to<bool>;
};

class fifo {
 public:
  static constexpr const char* name = "fifo";
  void push(std::size_t t, const ready_view&) { queue_.push_back(t); }
  std::size_t pop(const ready_view&) {
    const std::size_t t = queue_.front();
    queue_.pop_front();
    return t;
  }
  [[nodiscard]] bool empty() const { return queue_.empty(); }

 private:
  std::deque<std::size_t> queue_;
};

class lifo {
 public:
  static constexpr const char* name = "lifo";
  void push(std::size_t t, const ready_view&) { stack_.push_back(t); }
  std::size_t pop(const ready_view&) {
    const std::size_t t = stack_.back();
    stack_.pop_back();
    return t;
  }
  [[nodiscard]] bool empty() const { return stack_.empty(); }
  [[nodiscard]] std::size_t top() const { return stack_.back(); }

 private:
  std::vector<std::size_t> stack_;
};

namespace detail {

/// A ready task with the keys it is ordered by, smallest first.
struct ready_entry {
  double key = 0;
  double ready_us = 0;
  std::string_view name;
  std::size_t task = 0;
  [[nodiscard]] bool before(const ready_entry& other) const {
    return std::tie(key, ready_us, name, task) < std::tie(other.key, other.ready_us, other.name, other.task);
  }
};

/// A min-heap of ready entries.
class ready_heap {
 public:
  void push(const ready_entry& e) { heap_.push(e); }
  std::size_t pop() {
    const std::size_t t = heap_.top().task;
    heap_.pop();
    return t;
  }
  [[nodiscard]] const ready_entry& top() const { return heap_.top(); }
  [[nodiscard]] bool empty() const { return heap_.empty(); }

 private:
  struct later {
    bool operator()(const ready_entry& a, const ready_entry& b) const { return b.before(a); }
  };
  std::priority_queue<ready_entry, std::vector<ready_entry>, later> heap_;
};

}  // namespace detail

class first_ready {
 public:
  static constexpr const char* name = "first-ready";
  void push(std::size_t t, const ready_view& view) {
    heap_.push({.key = 0, .ready_us = view.ready_us(t), .name = view.name(t), .task = t});
  }
  std::size_t pop(const ready_view&) { return heap_.pop(); }
  [[nodiscard]] bool empty() const { return heap_.empty(); }
  [[nodiscard]] const detail::ready_entry& top() const { return heap_.top(); }

 private:
  detail::ready_heap heap_;
};

/// Smallest key first; Key is callable as double(const task&, double ready_us).
template <class Key>
  requires std::is_invocable_r_v<double, const Key&, const task&, double>
class priority {
 public:
  static constexpr const char* name = "priority";
  explicit priority(Key key) : key_(std::move(key)) {}
  void push(std::size_t t, const ready_view& view) {
    const double ready = view.ready_us(t);
    heap_.push({.key = key_(view[t], ready), .ready_us = ready, .name = view.name(t), .task = t});
  }
  std::size_t pop(const ready_view&) { return heap_.pop(); }
  [[nodiscard]] bool empty() const { return heap_.empty(); }

 private:
  Key key_;
  detail::ready_heap heap_;
};

/// The graph's own order: the task of the earliest vertex first (a transfer
/// ranks with its producer).
struct program_rank {
  double operator()(const task& t, double) const { return static_cast<double>(t.rank); }
};

class program : public priority<program_rank> {
 public:
  static constexpr const char* name = "program";
  program() : priority<program_rank>(program_rank{}) {}
};

class composite {
 public:
  static constexpr const char* name = "composite";
  void push(std::size_t t, const ready_view& view) {
    const task& tk = view[t];
    if (tk.kind == task_kind::send) {
      sends_.push(t, view);
    } else if (tk.kind == task_kind::recv) {
      recvs_.push(t, view);
    } else {
      if (tk.device >= ops_.size()) ops_.resize(tk.device + 1);
      ops_[tk.device].push(t, view);
    }
    ++size_;
  }
  std::size_t pop(const ready_view& view) {
    // Candidates: each device's last pushed op, the first-ready send and
    // receive. The earliest ready goes first; on a tie a send, then a
    // receive, then the op of the smaller name (only ops of two devices can
    // tie on both, so names are read only then).
    lifo* best_ops = nullptr;
    first_ready* best_transfers = nullptr;
    double best_ready = 0;
    int best_score = -1;  // 2 send, 1 receive, 0 op; -1: no candidate yet
    std::size_t best_task = 0;
    const auto goes_first = [&](double ready_us, int score, std::size_t t) {
      if (best_score < 0 || ready_us < best_ready) return true;
      if (ready_us != best_ready) return false;
      if (score != best_score) return score > best_score;
      return std::pair(view.name(t), t) < std::pair(view.name(best_task), best_task);
    };
    for (lifo& ops : ops_) {
      if (ops.empty()) continue;
      const std::size_t t = ops.top();
      if (const double ready_us = view.ready_us(t); goes_first(ready_us, 0, t)) {
        best_ops = &ops;
        std::tie(best_ready, best_score, best_task) = std::tuple(ready_us, 0, t);
      }
    }
    for (auto [queue, score] : {std::pair(&sends_, 2), std::pair(&recvs_, 1)}) {
      if (queue->empty()) continue;
      const detail::ready_entry& e = queue->top();
      if (goes_first(e.ready_us, score, e.task)) {
        best_ops = nullptr;
        best_transfers = queue;
        std::tie(best_ready, best_score, best_task) = std::tuple(e.ready_us, score, e.task);
      }
    }
    --size_;
    return best_ops != nullptr ? best_ops->pop(view) : best_transfers->pop(view);
  }
  [[nodiscard]] bool empty() const { return size_ == 0; }

 private:
  std::vector<lifo> ops_;  // by device
  first_ready sends_;
  first_ready recvs_;
  std::size_t size_ = 0;
};

}  // namespace memopt::sim
