#pragma once
// Naming policies: the names of the nodes a rewrite adds. A policy is any
// type with the members of seed_naming (the rewrite_naming concept);
// seed_naming gives grappler's names, which the TF-like adapter keeps.

#include <concepts>
#include <cstddef>
#include <string>
#include <string_view>

namespace memopt::rewrite {

template <class N>
concept rewrite_naming = requires(const N& n, std::string_view node, std::size_t input) {
  { n.recomputed(node) } -> std::convertible_to<std::string>;
  { n.trigger(node) } -> std::convertible_to<std::string>;
  { n.swap_out(node, input) } -> std::convertible_to<std::string>;
  { n.swap_in(node, input) } -> std::convertible_to<std::string>;
  { n.accumulator_buffer(node) } -> std::convertible_to<std::string>;
  { n.accumulator_zeros(node) } -> std::convertible_to<std::string>;
  { n.accumulator(node) } -> std::convertible_to<std::string>;
  { n.accumulate(node, input) } -> std::convertible_to<std::string>;
};

/// Recomputed/<node>, RecomputeTrigger/<node>, swap_out_<node>_<input>,
/// swap_in_<node>_<input>, and <node>/tmp_var, <node>/tmp_var_zeros,
/// <node>/tmp_var_initializer, <node>/tmp_var_accum_<input> for the
/// accumulation of <node>: the memory optimizer's names.
struct seed_naming {
  [[nodiscard]] std::string recomputed(std::string_view node) const { return "Recomputed/" + std::string(node); }
  [[nodiscard]] std::string trigger(std::string_view node) const { return "RecomputeTrigger/" + std::string(node); }
  [[nodiscard]] std::string swap_out(std::string_view node, std::size_t input) const {
    return "swap_out_" + std::string(node) + "_" + std::to_string(input);
  }
  [[nodiscard]] std::string swap_in(std::string_view node, std::size_t input) const {
    return "swap_in_" + std::string(node) + "_" + std::to_string(input);
  }
  [[nodiscard]] std::string accumulator_buffer(std::string_view node) const { return std::string(node) + "/tmp_var"; }
  [[nodiscard]] std::string accumulator_zeros(std::string_view node) const { return std::string(node) + "/tmp_var_zeros"; }
  [[nodiscard]] std::string accumulator(std::string_view node) const {
    return std::string(node) + "/tmp_var_initializer";
  }
  [[nodiscard]] std::string accumulate(std::string_view node, std::size_t input) const {
    return std::string(node) + "/tmp_var_accum_" + std::to_string(input);
  }
};

}  // namespace memopt::rewrite
