#pragma once
// The sharing passes and reuse policies by name, as memopt-plan share's
// --algo and --policy take them:
//   memopt::share::by_name("linear")(g, order, "best-fit", options, index) -> sharing_plan
// A pass valid for every order (dag) ignores the order. entries() and
// policies() list names and descriptions for help texts.

#include <memopt/registry.hpp>
#include <memopt/share/dag.hpp>
#include <memopt/share/linear.hpp>
#include <memopt/share/plan.hpp>
#include <memopt/share/policy.hpp>

#include <array>
#include <span>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

namespace memopt::share {

struct policy_entry {
  std::string_view name;
  std::string_view description;
  std::variant<lifo_reuse, best_fit_reuse, caffe2_size_aware_reuse> policy;
};

inline constexpr std::array policies_table{
    policy_entry{"lifo", "the most recently freed storage (Caffe2's linear pass)", lifo_reuse{}},
    policy_entry{"best-fit", "the smallest storage that fits, else the largest", best_fit_reuse{}},
    policy_entry{"caffe2", "Caffe2 memonger's size-aware pick, for compatibility", caffe2_size_aware_reuse{}},
};

[[nodiscard]] inline std::span<const policy_entry> policies() { return policies_table; }

[[nodiscard]] inline std::vector<std::string> policy_names() { return detail::names_of(policies()); }

[[nodiscard]] inline const policy_entry& policy_by_name(std::string_view name) {
  return detail::entry_named(policies(), "reuse policy", name);
}

enum class algorithm { linear, dag };

struct entry {
  algorithm id;
  std::string_view name;
  std::string_view description;
  std::string_view default_policy;
  bool every_order;  ///< the plan is valid for every order, not only the one given

  /// The plan with the policy called `policy` ("": default_policy).
  template <tensor_graph G, vertex_index_map<G> Index = identity_index>
  [[nodiscard]] sharing_plan operator()(const G& g, std::span<const vertex_t<G>> order,
                                        std::string_view policy = {}, const share_options& options = {},
                                        Index index = {}) const {
    return std::visit(
        [&](auto reuse) {
          return id == algorithm::linear ? linear_share(g, order, reuse, options, index)
                                         : dag_share(g, reuse, options, index);
        },
        policy_by_name(policy.empty() ? default_policy : policy).policy);
  }
};

inline constexpr std::array entries_table{
    entry{algorithm::linear, "linear", "one order: a buffer reuses storage freed earlier in it", "lifo", false},
    entry{algorithm::dag, "dag", "every order: reuse only along paths (Caffe2's DAG pass)", "best-fit", true},
};

[[nodiscard]] inline std::span<const entry> entries() { return entries_table; }

[[nodiscard]] inline std::vector<std::string> names() { return detail::names_of(entries()); }

/// The pass called `name`; unknown_algorithm_error listing the names otherwise.
[[nodiscard]] inline const entry& by_name(std::string_view name) {
  return detail::entry_named(entries(), "sharing pass", name);
}

}  // namespace memopt::share
