// memopt/io/minimalloc_csv.hpp: MiniMalloc's CSV in and out; bad rows are
// refused with their line number.
#include <memopt/io/minimalloc_csv.hpp>

#include <memopt/heap/check.hpp>
#include <memopt/heap/exact.hpp>

#include <doctest/doctest.h>

#include <string>

namespace {

std::string error_of(const std::string& text) {
  try {
    (void)memopt::io::parse_minimalloc_csv(text, "t.csv");
  } catch (const memopt::io::format_error& e) {
    return e.what();
  }
  return "";
}

bool contains(const std::string& text, const std::string& needle) {
  return text.find(needle) != std::string::npos;
}

}  // namespace

TEST_CASE("minimalloc csv: the README example reads, packs and writes back") {
  const auto problem = memopt::io::parse_minimalloc_csv(
      "id,lower,upper,size\nb1,0,3,4\nb2,3,9,4\nb3,0,9,4\nb4,9,21,4\nb5,0,21,4\n");
  REQUIRE(problem.buffers.size() == 5);
  CHECK(problem.ids[3] == "b4");
  CHECK(problem.buffers[3].lower == 9);
  CHECK(problem.buffers[3].upper == 21);
  CHECK(problem.buffers[3].bytes == 4);
  const auto r = memopt::exact_fit(problem.buffers, {.capacity = 12});
  REQUIRE(r.status == memopt::fit_status::fits);
  const auto text = memopt::io::write_minimalloc_csv(problem, r.plan.offsets);
  CHECK(text.starts_with("id,lower,upper,size,offset\nb1,0,3,4,"));
  const auto again = memopt::io::parse_minimalloc_csv(text);
  CHECK(again.buffers.size() == 5);
}

TEST_CASE("minimalloc csv: alternative names, inclusive end, alignment, any column order, CRLF") {
  const auto problem = memopt::io::parse_minimalloc_csv(
      "size,buffer,begin,end,alignment\r\n8,x,2,4,16\r\n\r\n3,y,0,0,1\r\n");
  REQUIRE(problem.buffers.size() == 2);
  CHECK(problem.has_alignment);
  CHECK(problem.buffers[0].lower == 2);
  CHECK(problem.buffers[0].upper == 5);  // end is inclusive
  CHECK(problem.buffers[0].alignment == 16);
  CHECK(problem.buffers[1].upper == 1);
  CHECK(memopt::io::write_minimalloc_csv(problem, {0, 0}).starts_with("id,lower,upper,size,alignment,offset\n"));
}

TEST_CASE("minimalloc csv: zero-length lifetimes are accepted") {
  const auto problem = memopt::io::parse_minimalloc_csv("id,lower,upper,size\na,4,4,10\n");
  CHECK_FALSE(problem.buffers[0].takes_space());
}

TEST_CASE("minimalloc csv: bad input is refused with its line") {
  CHECK(contains(error_of(""), "empty file"));
  CHECK(contains(error_of("id,lower,size\na,0,1\n"), "line 1: missing column \"upper\""));
  CHECK(contains(error_of("id,lower,upper,size,colour\n"), "line 1: unknown column \"colour\""));
  CHECK(contains(error_of("id,lower,upper,size,size\n"), "line 1: column \"size\" appears twice"));
  CHECK(contains(error_of("id,lower,upper,size\na,0,1,5\nb,0,1\n"), "t.csv: line 3: 3 fields, the header has 4"));
  CHECK(contains(error_of("id,lower,upper,size\na,5,3,5\n"), "line 2: upper 3 is below lower 5"));
  CHECK(contains(error_of("id,lower,upper,size\na,0,3,-5\n"), "line 2: size \"-5\" is negative"));
  CHECK(contains(error_of("id,lower,upper,size\na,0,3,5\n\na,1,2,3\n"),
                 "line 4: duplicate id \"a\" (first on line 2)"));
  CHECK(contains(error_of("id,lower,upper,size\na,zero,3,5\n"), "line 2: lower \"zero\" is not a whole number"));
  CHECK(contains(error_of("id,lower,upper,size\na,0,3,5.5\n"), "line 2: size \"5.5\" is not a whole number"));
  CHECK(contains(error_of("id,lower,upper,size\na,0,3,\n"), "line 2: empty size"));
  CHECK(contains(error_of("id,lower,upper,size\na,0,3,99999999999999999999\n"), "line 2: size \"99999999999999999999\" is larger than 2^62, the most this reader takes"));
  CHECK(contains(error_of("id,lower,upper,size\na,0,3,4611686018427387905\n"),
                 "line 2: size \"4611686018427387905\" is larger than 2^62"));
  CHECK(error_of("id,lower,upper,size\na,0,3,4611686018427387904\n").empty());
  CHECK(contains(error_of("id,lower,upper,size\n,0,3,5\n"), "line 2: empty id"));
  CHECK(contains(error_of("id,lower,upper,size,alignment\na,0,3,5,0\n"), "line 2: alignment 0"));
  CHECK(contains(error_of("id,lower,upper,size,gaps\na,0,3,5,1-2\n"), "line 2: gaps are not supported"));
}

TEST_CASE("minimalloc csv: a missing file is a format_error") {
  CHECK_THROWS_AS((void)memopt::io::read_minimalloc_csv("/nonexistent/memopt.csv"), memopt::io::format_error);
}
