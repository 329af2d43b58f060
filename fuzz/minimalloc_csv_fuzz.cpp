// MiniMalloc CSV text → io::parse_minimalloc_csv; a problem that is read is
// planned by best fit and the plan must pass check_heap_plan.
#include "fuzz_input.hpp"

#include <memopt/heap.hpp>
#include <memopt/io/minimalloc_csv.hpp>

#include <cstdlib>

extern "C" int LLVMFuzzerTestOneInput(const std::uint8_t* data, std::size_t size) {
  memopt::io::csv_problem problem;
  try {
    problem = memopt::io::parse_minimalloc_csv(memopt::fuzz::text_of(data, size), "fuzz.csv");
  } catch (const memopt::error&) {
    return 0;
  }
  const auto plan = memopt::plan_heap(problem.buffers, memopt::best_fit{});
  if (!memopt::check_heap_plan(problem.buffers, plan).empty()) std::abort();
  return 0;
}
