// colocate/device_name.hpp: parsing, printing, compatibility, specification
// and merging of TF-style device names, and each malformed name's own error.
#include <memopt/colocate/device_name.hpp>

#include <doctest/doctest.h>

#include <string>

using memopt::device_name;
using memopt::device_name_fault;
using memopt::device_part;
using memopt::merge_policy;
using memopt::parse_device_name;

namespace {

device_name full(const std::string& job, std::uint32_t replica, std::uint32_t task,
                 const std::string& type, std::uint32_t id) {
  return {job, replica, task, type, id};
}

/// The fault and offset parse_device_name reports for `text`.
std::pair<device_name_fault, std::size_t> fault_of(const std::string& text) {
  try {
    (void)parse_device_name(text);
  } catch (const memopt::malformed_device_error& e) {
    CHECK(e.name == text);
    CHECK(std::string(e.what()).find("'" + text + "'") != std::string::npos);
    CHECK_FALSE(e.vertex.has_value());
    return {e.fault, e.position};
  }
  FAIL("parsed a malformed name: " << text);
  return {};
}

}  // namespace

TEST_CASE("device_name: full, partial, wildcard and legacy names parse") {
  CHECK(parse_device_name("/job:worker/replica:1/task:2/device:GPU:3") == full("worker", 1, 2, "GPU", 3));
  CHECK(parse_device_name("") == device_name{});
  CHECK(parse_device_name("/") == device_name{});
  CHECK(parse_device_name("/job:a") == device_name{.job = "a"});
  CHECK(parse_device_name("/task:7/job:a_1") == device_name{.job = "a_1", .task = 7});
  CHECK(parse_device_name("/device:FakeGPU") == device_name{.type = "FakeGPU"});
  CHECK(parse_device_name("/device:GPU:*") == device_name{.type = "GPU"});
  CHECK(parse_device_name("/device:*:4") == device_name{.id = 4});
  CHECK(parse_device_name("/job:*/replica:*/task:*/device:*") == device_name{});
  CHECK(parse_device_name("/cpu:0") == device_name{.type = "CPU", .id = 0});
  CHECK(parse_device_name("/CPU:1") == device_name{.type = "CPU", .id = 1});
  CHECK(parse_device_name("/gpu:2") == device_name{.type = "GPU", .id = 2});
  CHECK(parse_device_name("/job:a/GPU:*") == device_name{.job = "a", .type = "GPU"});
  CHECK(parse_device_name("/replica:2147483647") == device_name{.replica = 2147483647});
}

TEST_CASE("device_name: printing is canonical and parses back") {
  CHECK(to_string(full("a", 0, 0, "FakeCPU", 7)) == "/job:a/replica:0/task:0/device:FakeCPU:7");
  CHECK(to_string(device_name{}).empty());
  CHECK(to_string(parse_device_name("/gpu:1")) == "/device:GPU:1");
  CHECK(to_string(device_name{.job = "a", .type = "GPU"}) == "/job:a/device:GPU:*");
  CHECK(to_string(device_name{.id = 3}) == "/device:*:3");
  for (const char* text : {"/job:a/replica:0/task:0/device:FakeCPU:7", "/job:a/device:GPU:*",
                           "/task:3", "/device:*:3", "/replica:1/device:TPU:0"}) {
    CHECK(to_string(parse_device_name(text)) == text);
  }
}

TEST_CASE("device_name: each malformed name has its own fault and offset") {
  using F = device_name_fault;
  CHECK(fault_of("/foo:bar") == std::pair(F::unknown_part, std::size_t{0}));
  CHECK(fault_of("job:a") == std::pair(F::unknown_part, std::size_t{0}));
  CHECK(fault_of("/job:a/") == std::pair(F::unknown_part, std::size_t{6}));
  CHECK(fault_of("/job:a/replica:0x") == std::pair(F::unknown_part, std::size_t{16}));
  CHECK(fault_of("/job:") == std::pair(F::bad_job, std::size_t{5}));
  CHECK(fault_of("/job:/task:0") == std::pair(F::bad_job, std::size_t{5}));
  CHECK(fault_of("/job:1a") == std::pair(F::bad_job, std::size_t{5}));
  CHECK(fault_of("/job:a-b") == std::pair(F::bad_job, std::size_t{6}));
  CHECK(fault_of("/replica:") == std::pair(F::bad_number, std::size_t{9}));
  CHECK(fault_of("/task:x") == std::pair(F::bad_number, std::size_t{6}));
  CHECK(fault_of("/task:-1") == std::pair(F::bad_number, std::size_t{6}));
  CHECK(fault_of("/device:GPU:x") == std::pair(F::bad_number, std::size_t{12}));
  CHECK(fault_of("/gpu:") == std::pair(F::bad_number, std::size_t{5}));
  CHECK(fault_of("/device:") == std::pair(F::bad_type, std::size_t{8}));
  CHECK(fault_of("/device::0") == std::pair(F::bad_type, std::size_t{8}));
  CHECK(fault_of("/device:0GPU") == std::pair(F::bad_type, std::size_t{8}));
  CHECK(fault_of("/device:G.PU:0") == std::pair(F::bad_type, std::size_t{9}));
  CHECK(fault_of("/replica:2147483648") == std::pair(F::number_too_large, std::size_t{9}));
  CHECK(fault_of("/task:99999999999999999999") == std::pair(F::number_too_large, std::size_t{6}));
  CHECK(fault_of("/job:a/job:b") == std::pair(F::repeated_part, std::size_t{6}));
  CHECK(fault_of("/device:CPU:0/gpu:0") == std::pair(F::repeated_part, std::size_t{13}));
  CHECK(fault_of("/task:1/task:*") == std::pair(F::repeated_part, std::size_t{7}));
}

TEST_CASE("device_name: compatibility and specification as TF defines them") {
  const auto a = parse_device_name("/job:a/device:GPU:0");
  CHECK(memopt::are_compatible(a, parse_device_name("/job:a/replica:0")));
  CHECK(memopt::are_compatible(a, device_name{}));
  CHECK_FALSE(memopt::are_compatible(a, parse_device_name("/job:b")));
  CHECK_FALSE(memopt::are_compatible(a, parse_device_name("/device:GPU:1")));
  CHECK(memopt::first_conflict(a, parse_device_name("/job:b/device:CPU:1")) == device_part::job);
  CHECK(memopt::first_conflict(a, parse_device_name("/job:a/device:CPU:1")) == device_part::type);
  CHECK(memopt::first_conflict(a, parse_device_name("/gpu:1")) == device_part::id);
  CHECK_FALSE(memopt::first_conflict(a, a));

  CHECK(memopt::is_specification(device_name{}, a));
  CHECK(memopt::is_specification(parse_device_name("/job:a"), a));
  CHECK(memopt::is_specification(a, a));
  CHECK_FALSE(memopt::is_specification(a, parse_device_name("/job:a")));
  CHECK_FALSE(memopt::is_specification(parse_device_name("/task:0"), a));
  CHECK(memopt::is_complete(full("a", 0, 0, "CPU", 0)));
  CHECK_FALSE(memopt::is_complete(a));
  CHECK(memopt::has_details(a));
  CHECK_FALSE(memopt::has_details(parse_device_name("/job:*")));
}

TEST_CASE("device_name: merging strict, soft and override") {
  auto target = parse_device_name("/job:a/device:GPU:0");
  CHECK_FALSE(memopt::merge_device_names(target, parse_device_name("/replica:1/task:2")));
  CHECK(target == full("a", 1, 2, "GPU", 0));

  SUBCASE("job, replica and task conflicts fail under every policy, leaving the target") {
    for (const auto policy : {merge_policy::strict, merge_policy::soft, merge_policy::override}) {
      auto t = target;
      CHECK(memopt::merge_device_names(t, parse_device_name("/job:b"), policy) == device_part::job);
      CHECK(memopt::merge_device_names(t, parse_device_name("/replica:0"), policy) == device_part::replica);
      CHECK(memopt::merge_device_names(t, parse_device_name("/task:0/device:CPU:0"), policy) ==
            device_part::task);
      CHECK(t == target);
    }
  }
  SUBCASE("strict: a type or id conflict fails") {
    auto t = target;
    CHECK(memopt::merge_device_names(t, parse_device_name("/device:CPU:0")) == device_part::type);
    CHECK(memopt::merge_device_names(t, parse_device_name("/gpu:1")) == device_part::id);
    CHECK(t == target);
  }
  SUBCASE("soft: a type conflict drops type and id, an id conflict the id") {
    auto t = target;
    CHECK_FALSE(memopt::merge_device_names(t, parse_device_name("/device:CPU:0"), merge_policy::soft));
    CHECK(t == device_name{.job = "a", .replica = 1, .task = 2});
    t = target;
    CHECK_FALSE(memopt::merge_device_names(t, parse_device_name("/gpu:3"), merge_policy::soft));
    CHECK(t == device_name{.job = "a", .replica = 1, .task = 2, .type = "GPU"});
  }
  SUBCASE("override: the other name's type and id win") {
    auto t = target;
    CHECK_FALSE(memopt::merge_device_names(t, parse_device_name("/cpu:5"), merge_policy::override));
    CHECK(t == full("a", 1, 2, "CPU", 5));
  }
  SUBCASE("ensure_specification copies every part the less specific name sets") {
    auto t = parse_device_name("/job:a/device:GPU:0");
    memopt::ensure_specification(t, parse_device_name("/task:4/device:CPU"));
    CHECK(t == device_name{.job = "a", .task = 4, .type = "CPU", .id = 0});
  }
}
