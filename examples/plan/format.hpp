#pragma once
// Small text helpers for memopt-plan's human-readable report, and a timer.

#include <memopt/compare/cell.hpp>

#include <cstdint>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

namespace memopt::plan {

/// "969.7 MiB": bytes in the largest binary unit that keeps the number >= 1.
inline std::string human_bytes(std::uint64_t bytes) {
  static const char* const units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB", "EiB"};
  double value = static_cast<double>(bytes);
  int unit = 0;
  while (value >= 1024.0 && unit < 6) {
    value /= 1024.0;
    ++unit;
  }
  char text[32];
  std::snprintf(text, sizeof text, unit == 0 ? "%.0f %s" : "%.1f %s", value, units[unit]);
  return text;
}

/// "12.34 ms".
inline std::string milliseconds(double ms) {
  char text[32];
  std::snprintf(text, sizeof text, "%.2f ms", ms);
  return text;
}

/// Left- or right-aligned cell of a fixed width.
inline std::string pad(const std::string& text, std::size_t width, bool right = false) {
  if (text.size() >= width) return text;
  const std::string fill(width - text.size(), ' ');
  return right ? fill + text : text + fill;
}

/// "a, b, c".
inline std::string joined(const std::vector<std::string>& items, const std::string& separator = ", ") {
  std::string text;
  for (const auto& item : items) text += (text.empty() ? "" : separator) + item;
  return text;
}

/// Milliseconds f() takes, and its result.
template <class F>
auto timed(F&& f) {
  auto [result, seconds] = compare::timed(std::forward<F>(f));
  return std::pair{std::move(result), seconds * 1000};
}

}  // namespace memopt::plan
