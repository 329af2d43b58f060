// An online heap algorithm must take allocate, free and finish; without free
// it is no heap_algorithm (nor an offline one: it has no pack).
#include <memopt/heap/algorithm.hpp>

#include <cstdint>
#include <vector>

struct bump_allocator {
  std::uint64_t top = 0;
  void allocate(memopt::buffer_id, std::uint64_t bytes) { top += bytes; }
  memopt::heap_plan finish() && { return {}; }
};

int main() {
  const std::vector<memopt::heap_buffer> buffers;
  (void)memopt::plan_heap(buffers, bump_allocator{});
}
