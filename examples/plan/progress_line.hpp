#pragma once
// A long search's progress on stderr (the exact scheduler, the exact packer):
// one line redrawn in place with the best result so far, the bound proved so
// far, the work spent and the time taken, shown only when stderr is a
// terminal (silent in pipes and CI) and cleared when the search is done.

#include <memopt/progress.hpp>

#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <iostream>
#include <string>
#include <utility>

namespace memopt::plan {

class progress_line {
 public:
  explicit progress_line(std::string what) : what_(std::move(what)), shown_(isatty(STDERR_FILENO) != 0) {}
  progress_line(const progress_line&) = delete;
  progress_line& operator=(const progress_line&) = delete;
  ~progress_line() {
    if (drawn_) std::cerr << "\r\x1b[K" << std::flush;
  }

  /// The callback to hand the search; empty when nothing is shown.
  [[nodiscard]] progress_callback callback() {
    if (!shown_) return {};
    return [this](const search_progress& p) { draw(p); };
  }

 private:
  void draw(const search_progress& p) {
    const double seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - started_).count();
    const double above = p.bound_bytes > 0 && p.best_bytes > p.bound_bytes
                             ? 100.0 * static_cast<double>(p.best_bytes - p.bound_bytes) / static_cast<double>(p.bound_bytes)
                             : 0.0;
    char line[160];
    std::snprintf(line, sizeof line, "%s: best %llu B, bound %llu B (%.2f %% above), work %llu, %.1f s", what_.c_str(),
                  static_cast<unsigned long long>(p.best_bytes), static_cast<unsigned long long>(p.bound_bytes), above,
                  static_cast<unsigned long long>(p.work), seconds);
    std::cerr << '\r' << line << "\x1b[K" << std::flush;
    drawn_ = true;
  }

  std::string what_;
  bool shown_;
  bool drawn_ = false;
  std::chrono::steady_clock::time_point started_ = std::chrono::steady_clock::now();
};

}  // namespace memopt::plan
