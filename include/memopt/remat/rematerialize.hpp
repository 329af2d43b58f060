#pragma once
// Budget-driven rematerialisation: given a byte budget, which tensors to drop
// and recompute, and the order to run the result in, so that the peak fits
// at little extra compute. The planner runs the graph in a fixed order (the
// best schedule of the original, or the caller's) over memopt's memory model
// and, whenever the next step would pass the budget, evicts resident storages
// in order of least recompute cost per byte and per step of idleness until
// their next use (Belady's rule weighted by cost, as in DTR; the idleness
// raised to remat_options::idle_weight); a step that
// needs an evicted tensor first recomputes it, recursively through evicted
// inputs, as a copy of its producer (Recomputed/<node>, then
// Recomputed_<k>/<node> for the k-th copy) reading the inputs' current
// copies. Each copy waits (a control edge) for the op run just before it, so
// it runs where the plan put it. The plan passes check_plan: every copy runs
// its original's op on the same values.
//
// Never dropped: graph outputs (the loss, what the caller fetches),
// persistent storages, storages an in-place op has still to write, and what
// cannot be recomputed to the same value: sources (no data inputs:
// parameters, inputs), random draws (default_unrepeatable_ops), fed
// vertices, ops that read a value after an in-place write over it, and what
// the caller excludes. A view costs nothing: dropping a storage drops its
// views with it, bringing a view back recomputes its source first, and the
// reads of a view count as reads of its source (it stays while a view of it
// is to be rebuilt). An in-place write makes the values it overwrites
// unavailable. A copy of an in-place op writes in place only into a copy's
// storage that nothing else reads and no original writes any more, and its
// output is then declared a view (in-place hazards follow vertex order,
// where copies come after every original); otherwise it writes a new tensor,
// since writing in place would clobber what its original's readers still
// read. No copy reads a storage an in-place op has still to write (the
// write would have to come first).
//
// The cost of dropping a storage counts its whole rebuild (dropped ancestors
// too, up to max_rebuild_walk vertices) and grows with each rebuild of it;
// dropping one keeps what its rebuild reads resident until then. A run that
// still needs a tensor it cannot rebuild runs again keeping it (a permanent
// repair, so this ends).
// max_rebuild_ratio bounds the bytes a rebuild remakes per byte its drop
// frees: a deep rebuild (a block's output remade from the layer before)
// makes its own peak; rematerialize_best tries bounded rebuilds first.
//
// A vertex reading a copy instead of its original's output still waits for
// that original (a control edge): the graph's own vertices keep a
// topological order of the graph in every schedule of the result, so
// rematerialisation_floor (remat/floor.hpp) bounds its peak.
//
// Candidates wait in a heap by their score when last measured (after each
// step that touches them, and when what their rebuild needs changes); the
// one taken is measured again and kept only if still no worse than the next
// (scores mostly grow as the run goes on), and once a step with none left,
// every resident storage is measured again. About O((steps + evictions) x
// log storages) plus the rebuild walks (at most max_rebuild_walk vertices
// each): a 100,000-vertex training graph in under half a second
// (bench/remat_bench). rematerialize_best (remat/best.hpp) runs it over
// several orders and rules, beside the exact programmes.

#include <memopt/remat/eviction.hpp>
#include <memopt/remat/rebuild.hpp>
#include <memopt/remat/options.hpp>
#include <memopt/remat/run.hpp>
#include <memopt/rewrite/graph.hpp>
#include <memopt/rewrite/naming.hpp>

#include <cstddef>
#include <limits>
#include <string>
#include <vector>

namespace memopt::remat {

/// The plan for `budget` over `order` (a topological order of the original
/// vertices, every one once). Throws bad_plan_error for an order that is not
/// one or a fed vertex that does not exist.
template <rewrite_naming Naming = seed_naming>
[[nodiscard]] remat_result rematerialize(const graph_facts& f, const std::vector<std::size_t>& order,
                                         const remat_options& options, const Naming& naming = {}) {
  detail::check_order(f, order, "rematerialize");
  (void)detail::recomputable_vertices(f, options);  // checks the fed vertices
  if (!(options.idle_weight >= 0 && options.idle_weight <= std::numeric_limits<double>::max())) {
    throw bad_plan_error({"rematerialize: idle_weight is " + std::to_string(options.idle_weight) + ", not a finite number from 0"});
  }
  // A run that drops a tensor it cannot rebuild runs again keeping it (and
  // not recomputing what reads it): each repair is permanent, so this ends.
  detail::remat_repairs repairs;
  for (;;) {
    try {
      return detail::remat_run<Naming>(f, order, options, naming, repairs).run();
    } catch (const detail::unrebuildable& fault) {
      const operand t = fault.tensor;
      if (!repairs.kept.insert({t.vertex, t.port}).second) {
        throw bad_plan_error({"rematerialize: '" + f.name[t.vertex] + "' is needed again and cannot be recomputed"});
      }
      for (const std::size_t c : f.consumers[t.vertex]) repairs.not_recomputed.insert(c);
    }
  }
}

}  // namespace memopt::remat
