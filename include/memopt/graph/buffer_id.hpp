#pragma once
// buffer_id: the dense number of one buffer (one output of one vertex), on
// its own so that code numbering buffers (the arena algorithms) need not
// compile the graph layer.

#include <cstddef>

namespace memopt {

using buffer_id = std::size_t;

/// "No buffer": e.g. what buffer_table::shares holds for a buffer with storage of its own.
inline constexpr buffer_id no_buffer = static_cast<buffer_id>(-1);

}  // namespace memopt
