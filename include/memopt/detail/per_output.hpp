#pragma once
// per_output<T>: a value for each output of each vertex, all in one array
// (vertex v's outputs at first[v] .. first[v + 1], offsets that the tables of
// one graph share). values[v][port] reads as a vector of vectors does, without
// an allocation per vertex: the rematerialisation planner builds a dozen of
// these a run over graphs of 10^5 vertices, and the allocator's time was a
// third of the planner's.

#include <cstddef>
#include <memory>
#include <span>
#include <utility>
#include <vector>

namespace memopt::detail {

using output_offsets_ptr = std::shared_ptr<const std::vector<std::size_t>>;

/// first[v] .. first[v + 1]: the outputs of vertex v, numbered together; from
/// any container of per-vertex output lists.
template <class Outputs>
[[nodiscard]] output_offsets_ptr output_offsets(const Outputs& outputs_by_vertex) {
  std::vector<std::size_t> first(outputs_by_vertex.size() + 1, 0);
  for (std::size_t v = 0; v < outputs_by_vertex.size(); ++v) first[v + 1] = first[v] + outputs_by_vertex[v].size();
  return std::make_shared<const std::vector<std::size_t>>(std::move(first));
}

template <class T>
class per_output {
 public:
  per_output() = default;
  per_output(output_offsets_ptr first, const T& value) : first_(std::move(first)), values_(first_->back(), value) {}

  [[nodiscard]] std::span<T> operator[](std::size_t v) {
    return {values_.data() + (*first_)[v], (*first_)[v + 1] - (*first_)[v]};
  }
  [[nodiscard]] std::span<const T> operator[](std::size_t v) const {
    return {values_.data() + (*first_)[v], (*first_)[v + 1] - (*first_)[v]};
  }
  /// Every output's value, vertex by vertex.
  [[nodiscard]] std::vector<T>& values() { return values_; }
  [[nodiscard]] const output_offsets_ptr& offsets() const { return first_; }

 private:
  output_offsets_ptr first_;
  std::vector<T> values_;
};

}  // namespace memopt::detail
