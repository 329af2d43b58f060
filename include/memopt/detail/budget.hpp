#pragma once
// search_budget: how long an anytime search may go on. A wall-clock time
// limit, a work limit (units of work: states expanded, nodes visited), both or
// neither; the first one reached ends the search. With a work limit and no
// time limit, a search's result depends on its input alone, on any machine
// under any load: the work limit is what makes results repeatable.
//
// A stop flag (say, set by a SIGINT handler) ends it as well, at the next
// clock reading; the search then returns the best it has, as at a deadline.
//
// A search shares its budget among parts with slice(fraction): the part gets
// that fraction of the time and of the work left; or with limited(work): the
// same deadline and at most that much work. charge(part) bills the work it
// did to the whole. clock_stopped() says whether the deadline ended any of
// it: results say so, as a result that may not repeat.

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstdint>
#include <optional>

namespace memopt::detail {

class search_budget {
 public:
  using clock = std::chrono::steady_clock;

  search_budget() = default;
  search_budget(std::optional<double> seconds, std::optional<std::uint64_t> work,
                const std::atomic<bool>* stop = nullptr)
      : work_limit_(work), stop_(stop) {
    if (seconds) {
      deadline_ = clock::now() + std::chrono::duration_cast<clock::duration>(std::chrono::duration<double>(*seconds));
    }
  }

  /// Spends one unit of work; false once the budget is gone (the clock and
  /// the stop flag are read every 256 units).
  bool spend() {
    ++used_;
    if (work_limit_ && used_ > *work_limit_) return false;
    if (used_ % 256 != 0) return true;
    return !stopped() && !past_deadline();
  }
  /// Spends `units` at once (a part priced up front); false once the budget is gone.
  bool spend(std::uint64_t units) {
    const bool crosses_check = (used_ + units) / 256 != used_ / 256;
    used_ += units;
    if (work_limit_ && used_ > *work_limit_) return false;
    return !crosses_check || (!stopped() && !past_deadline());
  }
  /// Whether the work limit leaves room for `units` more.
  [[nodiscard]] bool can_spend(std::uint64_t units) const { return !work_limit_ || used_ + units <= *work_limit_; }
  /// Whether nothing is left, reading the clock now.
  [[nodiscard]] bool exhausted() const {
    return (work_limit_ && used_ >= *work_limit_) || past_deadline() || stopped();
  }
  /// Whether the clock has ended (or shortened) a search billed here: then
  /// the same call may end elsewhere under another load, as a work limit
  /// alone never does.
  [[nodiscard]] bool clock_stopped() const noexcept { return clock_stopped_; }
  /// Whether the stop flag is set.
  [[nodiscard]] bool stopped() const { return stop_ != nullptr && stop_->load(std::memory_order_relaxed); }
  /// A part of what is left: `fraction` of the time and of the work, with at
  /// least `minimum_time` of the time (never past the deadline).
  [[nodiscard]] search_budget slice(double fraction, clock::duration minimum_time = {}) const {
    search_budget part;
    part.stop_ = stop_;
    if (deadline_) {
      const auto now = clock::now();
      const auto left = *deadline_ > now ? *deadline_ - now : clock::duration{};
      const auto share = std::chrono::duration_cast<clock::duration>(left * fraction);
      part.deadline_ = std::min(*deadline_, now + std::max(share, minimum_time));
    }
    if (work_limit_) {
      const std::uint64_t left = *work_limit_ > used_ ? *work_limit_ - used_ : 0;
      part.work_limit_ = static_cast<std::uint64_t>(static_cast<double>(left) * fraction);
    }
    return part;
  }
  /// A part with the same deadline and at most `work` units of the work left.
  [[nodiscard]] search_budget limited(std::uint64_t work) const {
    search_budget part;
    part.stop_ = stop_;
    part.deadline_ = deadline_;
    part.work_limit_ = work_limit_ ? std::min(work, *work_limit_ > used_ ? *work_limit_ - used_ : 0) : work;
    return part;
  }
  /// Bills a part's work to this budget, and whether the clock stopped it.
  void charge(const search_budget& part) {
    used_ += part.used_;
    clock_stopped_ = clock_stopped_ || part.clock_stopped_;
  }

  [[nodiscard]] std::uint64_t used() const noexcept { return used_; }

 private:
  [[nodiscard]] bool past_deadline() const {
    if (!deadline_ || clock::now() < *deadline_) return false;
    clock_stopped_ = true;
    return true;
  }

  std::optional<clock::time_point> deadline_;
  std::optional<std::uint64_t> work_limit_;
  const std::atomic<bool>* stop_ = nullptr;
  std::uint64_t used_ = 0;
  mutable bool clock_stopped_ = false;  // set where the clock is read: exhausted() is a query
};

}  // namespace memopt::detail
