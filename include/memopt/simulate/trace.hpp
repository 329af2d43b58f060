#pragma once
// A simulation as a Chrome trace (the trace-event JSON format that Perfetto
// and chrome://tracing open): one process, a track (thread) per device and per
// link, every run as a complete slice ("ph": "X") with its op type and bytes
// as arguments, and each device's live bytes as a counter track ("ph": "C").
// Timestamps are microseconds, the format's unit. No JSON library needed.

#include <memopt/simulate/machine.hpp>
#include <memopt/simulate/result.hpp>

#include <cstdio>
#include <ostream>
#include <string>
#include <string_view>

namespace memopt::sim {

namespace detail {

/// s as a JSON string literal.
inline std::string json_string(std::string_view s) {
  std::string out = "\"";
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char escaped[8];
      std::snprintf(escaped, sizeof escaped, "\\u%04x", static_cast<unsigned>(c));
      out += escaped;
    } else {
      out += c;
    }
  }
  return out + '"';
}

/// A number as JSON takes it (no inf or nan can occur: times are finite sums).
inline std::string json_number(double x) {
  char text[32];
  std::snprintf(text, sizeof text, "%.17g", x);
  return text;
}

}  // namespace detail

inline void write_chrome_trace(std::ostream& out, const simulation_result& r, const machine& m) {
  using detail::json_number;
  using detail::json_string;
  const std::size_t num_devices = r.devices.size();
  out << "{\"displayTimeUnit\":\"ns\",\"traceEvents\":[\n";
  out << R"({"name":"process_name","ph":"M","pid":0,"tid":0,"args":{"name":"memopt simulation"}})";
  const auto track = [&](std::size_t tid, const std::string& name) {
    out << ",\n{\"name\":\"thread_name\",\"ph\":\"M\",\"pid\":0,\"tid\":" << tid
        << ",\"args\":{\"name\":" << json_string(name) << "}}";
  };
  for (std::size_t d = 0; d < num_devices; ++d) track(d, m.devices[d].name);
  for (std::size_t k = 0; k < r.links.size(); ++k) {
    track(num_devices + k, "link " + m.devices[r.links[k].from].name + " -> " + m.devices[r.links[k].to].name);
  }
  for (const task_run& run : r.runs) {
    const task& t = r.graph.tasks[run.task];
    const std::string_view op_type = r.graph.op_type(run.task);
    const auto bytes = t.kind == task_kind::send ? static_cast<double>(t.transfer_bytes) : t.bytes_written;
    out << ",\n{\"name\":" << json_string(r.graph.name(run.task)) << ",\"cat\":" << json_string(op_type.empty() ? "op" : op_type)
        << ",\"ph\":\"X\",\"pid\":0,\"tid\":" << run.resource << ",\"ts\":" << json_number(run.start_us)
        << ",\"dur\":" << json_number(run.end_us - run.start_us) << ",\"args\":{\"op\":" << json_string(op_type)
        << ",\"bytes\":" << json_number(bytes) << ",\"compute_us\":" << json_number(run.cost.compute_us)
        << ",\"memory_us\":" << json_number(run.cost.memory_us) << "}}";
  }
  for (std::size_t d = 0; d < num_devices; ++d) {
    const std::string name = json_string("memory " + m.devices[d].name);
    for (const memory_point& p : r.devices[d].timeline) {
      out << ",\n{\"name\":" << name << ",\"ph\":\"C\",\"pid\":0,\"tid\":" << d << ",\"ts\":" << json_number(p.time_us)
          << ",\"args\":{\"bytes\":" << p.bytes << "}}";
    }
  }
  out << "\n]}\n";
}

}  // namespace memopt::sim
