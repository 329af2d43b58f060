#pragma once
// Runs memopt's algorithms with the GIL released, on a worker thread, while
// the calling thread keeps Python's signal handlers running. Ctrl-C
// (KeyboardInterrupt) during a search sets the search's stop flag: it ends
// with its best so far and its result says interrupted. Any other exception
// a signal handler raises (and KeyboardInterrupt outside a search) stops the
// work too, and reaches the caller once the worker is done.

#include "errors.hpp"

#include <memopt/error.hpp>
#include <memopt/io/graph_file.hpp>

#include <pybind11/pybind11.h>

#include <atomic>
#include <chrono>
#include <future>
#include <optional>
#include <thread>
#include <utility>

namespace memopt::python {

namespace py = pybind11;

enum class on_interrupt { stop_search, raise };

/// f(), run on a worker thread with the GIL released; `stop` is the flag the
/// search reads. Call with the GIL held.
template <class F>
auto run_released(std::atomic<bool>& stop, on_interrupt interrupt, F f) {
  std::packaged_task<decltype(f())()> task(std::move(f));
  auto result = task.get_future();
  std::optional<py::error_already_set> raised;
  {
    py::gil_scoped_release released;
    std::thread worker(std::move(task));
    constexpr auto poll = std::chrono::milliseconds(20);
    while (result.wait_for(poll) != std::future_status::ready) {
      if (stop) continue;
      py::gil_scoped_acquire held;
      if (PyErr_CheckSignals() == 0) continue;
      stop = true;
      if (interrupt == on_interrupt::stop_search && PyErr_ExceptionMatches(PyExc_KeyboardInterrupt)) {
        PyErr_Clear();
      } else {
        raised.emplace();  // takes the pending exception
      }
    }
    worker.join();
  }
  if (raised) throw std::move(*raised);
  return result.get();
}

/// f(g), run as run_released runs it, on the graph `g` from `label`: memopt's
/// errors become python_errors naming the label and the nodes.
template <class F>
auto run_on_graph(std::shared_ptr<const io::file_graph> g, const std::string& label, std::atomic<bool>& stop,
                  on_interrupt interrupt, F f) {
  return run_released(stop, interrupt, [g = std::move(g), label, f = std::move(f)] {
    try {
      return f(*g);
    } catch (const error& e) {
      throw python_error(kind_of(e), label + ": " + e.describe(io::node_namer(*g)));
    }
  });
}

}  // namespace memopt::python
