#pragma once
// TF-style device names: parse, print, compare and merge partial device
// specifications "/job:J/replica:R/task:T/device:TYPE:ID".
//
// Every part is optional and may appear in any order, at most once; "*" leaves
// a part unspecified; "/cpu:0" and "/gpu:1" (either case) are the legacy forms
// of "/device:CPU:0" and "/device:GPU:1"; "" and "/" specify nothing. A job or
// device type is a letter followed by letters, digits and '_'; replica, task
// and id are decimal numbers below 2^31.
//
// Two names are *compatible* when every part both specify agrees; `more` is a
// *specification* of `less` (more specific) when it specifies every part `less`
// does, with the same value. A complete name (every part set) names a device.
// All operations are O(length of the names). parse_device_name throws
// malformed_device_error (try_parse_device_name returns nothing instead);
// nothing else throws.

#include <memopt/colocate/errors.hpp>

#include <array>
#include <charconv>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace memopt {

/// A (partial) device specification; an unset part matches anything.
struct device_name {
  std::optional<std::string> job;
  std::optional<std::uint32_t> replica;
  std::optional<std::uint32_t> task;
  std::optional<std::string> type;
  std::optional<std::uint32_t> id;
  friend bool operator==(const device_name&, const device_name&) = default;
};

/// Specifies at least one part.
[[nodiscard]] inline bool has_details(const device_name& d) noexcept {
  return d.job || d.replica || d.task || d.type || d.id;
}

/// Specifies every part: the name of one device.
[[nodiscard]] inline bool is_complete(const device_name& d) noexcept {
  return d.job && d.replica && d.task && d.type && d.id;
}

/// Canonical text: "/job:a/replica:0/task:0/device:GPU:1"; unset parts are left
/// out, except an unset id after a type ("/device:GPU:*").
[[nodiscard]] inline std::string to_string(const device_name& d) {
  std::string text;
  if (d.job) text += "/job:" + *d.job;
  if (d.replica) text += "/replica:" + std::to_string(*d.replica);
  if (d.task) text += "/task:" + std::to_string(*d.task);
  if (d.type || d.id) {
    text += "/device:" + d.type.value_or("*") + ":" + (d.id ? std::to_string(*d.id) : "*");
  }
  return text;
}

namespace detail {

inline bool is_letter(char c) noexcept { return (c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z'); }
inline bool is_digit(char c) noexcept { return c >= '0' && c <= '9'; }

/// Reads one device name left to right; each fault names its position.
class device_name_parser {
 public:
  explicit device_name_parser(std::string_view text) : text_(text) {}

  device_name parse() {
    device_name d;
    if (text_ == "/") return d;
    while (at_ < text_.size()) {
      const std::size_t part_start = at_;
      if (consume("/job:")) {
        once(seen_job_, "job", part_start);
        d.job = star() ? std::nullopt : std::optional(identifier(device_name_fault::bad_job, "/"));
      } else if (consume("/replica:")) {
        once(seen_replica_, "replica", part_start);
        d.replica = star() ? std::nullopt : std::optional(number());
      } else if (consume("/task:")) {
        once(seen_task_, "task", part_start);
        d.task = star() ? std::nullopt : std::optional(number());
      } else if (consume("/device:")) {
        once(seen_device_, "device", part_start);
        d.type = star() ? std::nullopt : std::optional(identifier(device_name_fault::bad_type, "/:"));
        d.id = consume(":") && !star() ? std::optional(number()) : std::nullopt;
      } else if (const char* legacy = legacy_type()) {
        once(seen_device_, "device", part_start);
        d.type = legacy;
        d.id = star() ? std::nullopt : std::optional(number());
      } else {
        fail(device_name_fault::unknown_part, "expected /job:, /replica:, /task:, /device:, /cpu: or /gpu:");
      }
    }
    return d;
  }

 private:
  std::string_view text_;
  std::size_t at_ = 0;
  bool seen_job_ = false, seen_replica_ = false, seen_task_ = false, seen_device_ = false;

  [[noreturn]] void fail(device_name_fault fault, const std::string& problem) const {
    throw malformed_device_error(std::string(text_), at_, fault, problem);
  }
  bool consume(std::string_view prefix) {
    if (text_.substr(at_, prefix.size()) != prefix) return false;
    at_ += prefix.size();
    return true;
  }
  bool star() { return consume("*"); }
  void once(bool& seen, const char* part, std::size_t start) {
    if (seen) {
      at_ = start;
      fail(device_name_fault::repeated_part, std::string("the ") + part + " is given twice");
    }
    seen = true;
  }
  const char* legacy_type() {
    if (consume("/cpu:") || consume("/CPU:")) return "CPU";
    if (consume("/gpu:") || consume("/GPU:")) return "GPU";
    return nullptr;
  }
  /// A letter, then letters, digits or '_', up to one of `stops` or the end.
  std::string identifier(device_name_fault fault, std::string_view stops) {
    const char* what = fault == device_name_fault::bad_job ? "job" : "device type";
    const std::size_t start = at_;
    if (at_ == text_.size() || stops.find(text_[at_]) != std::string_view::npos) {
      fail(fault, std::string("empty ") + what);
    }
    if (!is_letter(text_[at_])) fail(fault, std::string(what) + " must start with a letter");
    while (at_ < text_.size() && stops.find(text_[at_]) == std::string_view::npos) {
      const char c = text_[at_];
      if (!is_letter(c) && !is_digit(c) && c != '_') {
        fail(fault, std::string("character '") + c + "' in " + what);
      }
      ++at_;
    }
    return std::string(text_.substr(start, at_ - start));
  }
  std::uint32_t number() {
    const char* begin = text_.data() + at_;
    const char* end = text_.data() + text_.size();
    std::uint32_t value = 0;
    const auto [stop, code] = std::from_chars(begin, end, value);
    if (begin == end || !is_digit(*begin)) fail(device_name_fault::bad_number, "expected a number or *");
    if (code == std::errc::result_out_of_range || value > 0x7fffffffU) {
      fail(device_name_fault::number_too_large, "number beyond 2^31 - 1");
    }
    at_ += static_cast<std::size_t>(stop - begin);
    return value;
  }
};

}  // namespace detail

/// Parses `text`; throws malformed_device_error naming the fault and where.
[[nodiscard]] inline device_name parse_device_name(std::string_view text) {
  return detail::device_name_parser(text).parse();
}

/// The specification `text` is, or nothing when it is not one.
[[nodiscard]] inline std::optional<device_name> try_parse_device_name(std::string_view text) {
  try {
    return parse_device_name(text);
  } catch (const malformed_device_error&) {
    return std::nullopt;
  }
}

/// The first part, in job, replica, task, type, id order, that both specify
/// with different values; none when the names are compatible.
[[nodiscard]] inline std::optional<device_part> first_conflict(const device_name& a,
                                                               const device_name& b) {
  if (a.job && b.job && *a.job != *b.job) return device_part::job;
  if (a.replica && b.replica && *a.replica != *b.replica) return device_part::replica;
  if (a.task && b.task && *a.task != *b.task) return device_part::task;
  if (a.type && b.type && *a.type != *b.type) return device_part::type;
  if (a.id && b.id && *a.id != *b.id) return device_part::id;
  return std::nullopt;
}

/// Every part both specify agrees.
[[nodiscard]] inline bool are_compatible(const device_name& a, const device_name& b) {
  return !first_conflict(a, b);
}

/// `more` specifies every part `less` does, with the same value.
[[nodiscard]] inline bool is_specification(const device_name& less, const device_name& more) {
  const auto covers = [](const auto& l, const auto& m) { return !l || (m && *l == *m); };
  return covers(less.job, more.job) && covers(less.replica, more.replica) &&
         covers(less.task, more.task) && covers(less.type, more.type) && covers(less.id, more.id);
}

/// Sets in `more` every part `less` specifies (less's value wins).
inline void ensure_specification(device_name& more, const device_name& less) {
  if (less.job) more.job = less.job;
  if (less.replica) more.replica = less.replica;
  if (less.task) more.task = less.task;
  if (less.type) more.type = less.type;
  if (less.id) more.id = less.id;
}

/// What a merge does with two different values of one part.
enum class merge_policy {
  strict,   ///< any conflict fails
  soft,     ///< soft placement: a type conflict drops type and id, an id conflict the id
  override  ///< the other name's type and id win
};

/// Merges `other` into `target`, the most specific name compatible with both.
/// A job, replica or task conflict always fails; type and id conflicts as
/// `policy` says. Returns the conflicting part and leaves `target` unchanged on
/// failure.
[[nodiscard]] inline std::optional<device_part> merge_device_names(device_name& target,
                                                                   const device_name& other,
                                                                   merge_policy policy = merge_policy::strict) {
  if (const auto part = first_conflict(target, other)) {
    if (*part <= device_part::task || policy == merge_policy::strict) return part;
  }
  if (other.job) target.job = other.job;
  if (other.replica) target.replica = other.replica;
  if (other.task) target.task = other.task;
  if (policy == merge_policy::soft && target.type && other.type && *target.type != *other.type) {
    target.type.reset();
    target.id.reset();
    return std::nullopt;
  }
  if (other.type) target.type = other.type;
  if (policy == merge_policy::soft && target.id && other.id && *target.id != *other.id) {
    target.id.reset();
    return std::nullopt;
  }
  if (other.id) target.id = other.id;
  return std::nullopt;
}

}  // namespace memopt
