#pragma once
// MiniMalloc's CSV format (google/minimalloc), in and out: a header row, then
// one buffer a row: id, lower, upper (exclusive: the lifetime is [lower,
// upper)), size, and optionally alignment. Accepted like MiniMalloc's own
// reader: `buffer`/`buffer_id` for id, `start`/`begin` for lower, and `end`
// for an *inclusive* upper; columns in any order; an `offset` or `hint`
// column is read past (a plan is computed afresh). `gaps` are refused.
// The output is the same CSV with an `offset` column.
//
// Every defect is a format_error naming the line (the header is line 1).

#include <memopt/io/graph_file.hpp>

#include <memopt/heap/problem.hpp>

#include <charconv>
#include <cstdint>
#include <fstream>
#include <optional>
#include <sstream>
#include <string>
#include <string_view>
#include <unordered_map>
#include <vector>

namespace memopt::io {

struct csv_problem {
  std::vector<std::string> ids;     ///< by buffer, as in the file
  std::vector<heap_buffer> buffers; ///< by buffer, in file order
  bool has_alignment = false;       ///< the file has an alignment column
};

namespace detail {

inline std::vector<std::string_view> split_fields(std::string_view line) {
  std::vector<std::string_view> fields;
  for (std::size_t start = 0;;) {
    const auto comma = line.find(',', start);
    auto field = line.substr(start, comma == std::string_view::npos ? std::string_view::npos : comma - start);
    while (!field.empty() && (field.front() == ' ' || field.front() == '\t')) field.remove_prefix(1);
    while (!field.empty() && (field.back() == ' ' || field.back() == '\t' || field.back() == '\r')) field.remove_suffix(1);
    fields.push_back(field);
    if (comma == std::string_view::npos) return fields;
    start = comma + 1;
  }
}

/// A whole number in [0, 2^62], so that offsets and sums stay in 64 bits;
/// else the error fail(message) makes.
template <class Fail>
std::uint64_t parse_count(std::string_view text, const char* column, const Fail& fail) {
  const std::string quoted = std::string(column) + " \"" + std::string(text) + "\" ";
  if (text.empty()) throw fail(std::string("empty ") + column);
  if (text.front() == '-') throw fail(quoted + "is negative");
  std::uint64_t value = 0;
  const auto [stop, code] = std::from_chars(text.data(), text.data() + text.size(), value);
  if (code == std::errc::result_out_of_range || (code == std::errc{} && value > (std::uint64_t{1} << 62))) {
    throw fail(quoted + "is larger than 2^62, the most this reader takes (offsets and sums must fit 64 bits)");
  }
  if (code != std::errc{} || stop != text.data() + text.size()) throw fail(quoted + "is not a whole number");
  return value;
}

}  // namespace detail

/// Parses CSV text; `source` names it in errors.
[[nodiscard]] inline csv_problem parse_minimalloc_csv(const std::string& text, const std::string& source = "") {
  const std::string where = source.empty() ? "" : source + ": ";
  std::istringstream in(text);
  std::string line;
  std::size_t line_number = 0;
  const auto fail = [&](std::size_t at, const std::string& what) {
    return format_error("", where + "line " + std::to_string(at) + ": " + what);
  };
  // Header: which column holds what.
  std::optional<std::size_t> id, lower, upper, size, alignment, gaps;
  bool inclusive_end = false;
  std::size_t columns = 0;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto fields = detail::split_fields(line);
    columns = fields.size();
    for (std::size_t c = 0; c < fields.size(); ++c) {
      const std::string_view name = fields[c];
      std::optional<std::size_t>* slot = nullptr;
      if (name == "id" || name == "buffer" || name == "buffer_id") {
        slot = &id;
      } else if (name == "lower" || name == "start" || name == "begin") {
        slot = &lower;
      } else if (name == "upper" || name == "end") {
        slot = &upper;
        inclusive_end = name == "end";
      } else if (name == "size") {
        slot = &size;
      } else if (name == "alignment") {
        slot = &alignment;
      } else if (name == "gaps") {
        slot = &gaps;
      } else if (name != "offset" && name != "hint") {
        throw fail(line_number, "unknown column \"" + std::string(name) + "\"");
      }
      if (slot == nullptr) continue;
      if (*slot) throw fail(line_number, "column \"" + std::string(name) + "\" appears twice");
      *slot = c;
    }
    break;
  }
  if (columns == 0) throw format_error("", where + "empty file: expected a header id,lower,upper,size");
  const std::pair<const std::optional<std::size_t>*, const char*> required[] = {
      {&id, "id"}, {&lower, "lower"}, {&upper, "upper"}, {&size, "size"}};
  for (const auto& [column, name] : required) {
    if (!*column) throw fail(line_number, std::string("missing column \"") + name + "\"");
  }
  csv_problem problem;
  problem.has_alignment = alignment.has_value();
  std::unordered_map<std::string, std::size_t> line_of_id;
  while (std::getline(in, line)) {
    ++line_number;
    if (line.find_first_not_of(" \t\r") == std::string::npos) continue;
    const auto fields = detail::split_fields(line);
    if (fields.size() != columns) {
      throw fail(line_number, std::to_string(fields.size()) + " fields, the header has " + std::to_string(columns));
    }
    const std::string name(fields[*id]);
    if (name.empty()) throw fail(line_number, "empty id");
    if (const auto [it, fresh] = line_of_id.emplace(name, line_number); !fresh) {
      throw fail(line_number, "duplicate id \"" + name + "\" (first on line " + std::to_string(it->second) + ")");
    }
    const auto here = [&](const std::string& what) { return fail(line_number, what); };
    heap_buffer b;
    b.lower = detail::parse_count(fields[*lower], "lower", here);
    b.upper = detail::parse_count(fields[*upper], inclusive_end ? "end" : "upper", here);
    if (inclusive_end) ++b.upper;
    b.bytes = detail::parse_count(fields[*size], "size", here);
    if (alignment) {
      b.alignment = detail::parse_count(fields[*alignment], "alignment", here);
      if (b.alignment == 0) throw here("alignment 0 (it must be at least 1)");
    }
    if (gaps && !fields[*gaps].empty()) throw fail(line_number, "gaps are not supported");
    if (b.upper < b.lower) {
      throw fail(line_number, "upper " + std::string(fields[*upper]) + " is below lower " + std::string(fields[*lower]));
    }
    problem.ids.push_back(name);
    problem.buffers.push_back(b);
  }
  return problem;
}

/// Reads a MiniMalloc CSV file.
[[nodiscard]] inline csv_problem read_minimalloc_csv(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  if (!in) throw format_error("", "cannot open " + path);
  std::stringstream text;
  text << in.rdbuf();
  return parse_minimalloc_csv(text.str(), path);
}

/// The plan as MiniMalloc writes it: id,lower,upper,size[,alignment],offset.
[[nodiscard]] inline std::string write_minimalloc_csv(const csv_problem& problem,
                                                      const std::vector<std::uint64_t>& offsets) {
  std::string out = problem.has_alignment ? "id,lower,upper,size,alignment,offset\n"
                                          : "id,lower,upper,size,offset\n";
  for (std::size_t b = 0; b < problem.buffers.size(); ++b) {
    const heap_buffer& x = problem.buffers[b];
    out += problem.ids[b] + ',' + std::to_string(x.lower) + ',' + std::to_string(x.upper) + ',' +
           std::to_string(x.bytes) + ',';
    if (problem.has_alignment) out += std::to_string(x.alignment) + ',';
    out += std::to_string(offsets[b]) + '\n';
  }
  return out;
}

}  // namespace memopt::io
