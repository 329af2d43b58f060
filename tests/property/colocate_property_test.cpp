// colocate/: thousands of random graphs, kernel registries, device requests,
// reference edges and colocation groups. Every placement passes
// check_placement (each group on one device, each device with a kernel for
// its ops, references together, assigned devices kept); the groups are
// exactly the components of the colocation constraints (a brute-force
// oracle); failures are memopt errors; and the groups do not depend on the
// order in which constraints are added.
#include "../colocate/tf_ops.hpp"

#include <memopt/colocate.hpp>
#include <memopt/graph/property.hpp>

#include <doctest/doctest.h>

#include <boost/graph/adjacency_list.hpp>

#include <algorithm>
#include <map>
#include <numeric>
#include <random>

namespace mt = memopt::testing;

namespace {

using list_graph = boost::adjacency_list<boost::listS, boost::listS, boost::directedS,
                                         boost::property<boost::vertex_index_t, std::size_t, mt::tf_test_node>,
                                         memopt::placement_edge>;

const std::vector<std::string> types = {"CPU", "GPU", "TPU"};

struct instance {
  memopt::device_set devices;
  memopt::kernel_registry kernels;
  std::vector<mt::tf_test_node> nodes;
  std::vector<std::tuple<std::size_t, std::size_t, bool>> edges;  // from, to, reference
  bool soft = false;
};

std::size_t pick(std::mt19937_64& rng, std::size_t lo, std::size_t hi) {
  return std::uniform_int_distribution<std::size_t>(lo, hi)(rng);
}
bool chance(std::mt19937_64& rng, double p) { return std::bernoulli_distribution(p)(rng); }

std::string random_device(std::mt19937_64& rng, bool complete) {
  std::string text;
  if (complete || chance(rng, 0.3)) text += "/job:a";
  if (complete || chance(rng, 0.2)) text += "/replica:0";
  if (complete || chance(rng, 0.4)) text += "/task:" + std::to_string(pick(rng, 0, complete ? 1 : 2));
  if (complete || chance(rng, 0.6)) {
    text += "/device:" + types[pick(rng, 0, 2)];
    if (complete || chance(rng, 0.5)) text += ":" + std::to_string(pick(rng, 0, 1));
  }
  return text;
}

instance random_instance(std::mt19937_64& rng, bool with_priorities, bool with_requests) {
  std::vector<std::string> names;
  for (int k = 0, count = static_cast<int>(pick(rng, 3, 12)); k < count; ++k) {
    const auto name = random_device(rng, true);
    if (std::ranges::find(names, name) == names.end()) names.push_back(name);
  }
  std::vector<std::string> preference = types;
  std::ranges::shuffle(preference, rng);
  preference.resize(pick(rng, 0, 3));
  instance in{memopt::device_set(names, preference), {}, {}, {}, chance(rng, 0.3)};
  for (int op = 0; op < 6; ++op) {
    std::vector<memopt::kernel> ks;
    for (const auto& t : types) {
      if (chance(rng, 0.6)) ks.push_back({t, with_priorities && chance(rng, 0.3) ? static_cast<int>(pick(rng, 1, 3)) : 0});
    }
    if (!ks.empty() || chance(rng, 0.5)) in.kernels.kernels["op" + std::to_string(op)] = ks;
  }
  const std::size_t n = pick(rng, 1, 30);
  for (std::size_t i = 0; i < n; ++i) {
    mt::tf_test_node node;
    node.name = "n" + std::to_string(i);
    node.op = chance(rng, 0.05) ? "Shape" : "op" + std::to_string(pick(rng, 0, 5));
    node.outputs.assign(pick(rng, 0, 2), 0);
    if (!node.outputs.empty() && chance(rng, 0.2)) node.reference_outputs = {0};
    if (with_requests && chance(rng, 0.1)) node.device = random_device(rng, false);
    if (with_requests && chance(rng, 0.03)) node.assigned_device = names[pick(rng, 0, names.size() - 1)];
    for (std::size_t k = chance(rng, 0.3) ? pick(rng, 1, 2) : 0; k > 0; --k) {
      node.colocation.push_back(chance(rng, 0.5) ? "n" + std::to_string(pick(rng, 0, n - 1))
                                                 : "g" + std::to_string(pick(rng, 0, 3)));
    }
    if (i > 0) {
      for (std::size_t k = pick(rng, 0, 3); k > 0; --k) {
        const std::size_t from = pick(rng, 0, i - 1);
        const bool reads_reference = !in.nodes[from].reference_outputs.empty() && chance(rng, 0.7);
        in.edges.emplace_back(from, i, reads_reference);
      }
    }
    in.nodes.push_back(std::move(node));
  }
  in.kernels.kernels["Shape"] = {{"CPU"}, {"GPU"}, {"TPU"}};
  return in;
}

template <class G>
struct built_graph {
  G g;
  std::vector<memopt::vertex_t<G>> vertex;
  explicit built_graph(const instance& in) {
    for (std::size_t i = 0; i < in.nodes.size(); ++i) {
      if constexpr (memopt::indexed_dag<G>) {
        vertex.push_back(add_vertex(in.nodes[i], g));
      } else {
        vertex.push_back(add_vertex(g));
        put(boost::vertex_index, g, vertex.back(), i);
        g[vertex.back()] = in.nodes[i];
      }
    }
    for (const auto& [from, to, reference] : in.edges) {
      add_edge(vertex[from], vertex[to], memopt::placement_edge{.control = false, .reference = reference}, g);
    }
  }
};

/// The components of the colocation constraints, found by flooding.
std::vector<std::size_t> oracle_components(const instance& in) {
  const std::size_t n = in.nodes.size();
  std::vector<std::vector<std::size_t>> joined(n);
  const auto link = [&](std::size_t a, std::size_t b) {
    joined[a].push_back(b);
    joined[b].push_back(a);
  };
  for (const auto& [from, to, reference] : in.edges) {
    if (reference) link(from, to);
  }
  for (std::size_t a = 0; a < n; ++a) {
    for (std::size_t b = 0; b < n; ++b) {
      const auto& na = in.nodes[a];
      const auto& nb = in.nodes[b];
      const bool names_b = std::ranges::count(na.colocation, nb.name) > 0;
      bool shared = false;
      for (const auto& group : na.colocation) shared = shared || std::ranges::count(nb.colocation, group) > 0;
      if (names_b || shared) link(a, b);
    }
  }
  std::vector<std::size_t> component(n, n);
  std::size_t next = 0;
  for (std::size_t s = 0; s < n; ++s) {
    if (component[s] != n) continue;
    std::vector<std::size_t> stack{s};
    component[s] = next;
    while (!stack.empty()) {
      const auto v = stack.back();
      stack.pop_back();
      for (const auto w : joined[v]) {
        if (component[w] == n) {
          component[w] = next;
          stack.push_back(w);
        }
      }
    }
    ++next;
  }
  return component;
}

/// Both labelings split the vertices the same way.
bool same_partition(const std::vector<std::size_t>& a, const std::vector<std::size_t>& b) {
  if (a.size() != b.size()) return false;
  std::map<std::size_t, std::size_t> ab, ba;
  for (std::size_t i = 0; i < a.size(); ++i) {
    if (ab.try_emplace(a[i], b[i]).first->second != b[i]) return false;
    if (ba.try_emplace(b[i], a[i]).first->second != a[i]) return false;
  }
  return true;
}

template <class G>
void check_instance(const instance& in, std::size_t& placed, std::size_t& refused) {
  built_graph<G> b(in);
  const auto index = [&] {
    if constexpr (memopt::indexed_dag<G>) {
      return memopt::identity_index{};
    } else {
      return memopt::from_property_map(get(boost::vertex_index, b.g));
    }
  }();
  const memopt::placement_options options{.soft_placement = in.soft};
  memopt::placement_result r;
  try {
    r = memopt::place(b.g, in.devices, in.kernels, options, index);
  } catch (const memopt::error& e) {
    CHECK(std::string(e.what()).size() > 0);
    ++refused;
    return;
  }
  ++placed;
  const auto faults = memopt::check_placement(b.g, in.devices, in.kernels, r, options, index);
  CHECK(faults.empty());
  if (!in.soft) CHECK(same_partition(r.group, oracle_components(in)));
  if (in.soft) {  // what soft placement dropped is all that splits the oracle's components
    CHECK((r.ignored.empty() == same_partition(r.group, oracle_components(in))));
  }
}

}  // namespace

TEST_CASE("colocate property: random placements are valid and group exactly the constrained components") {
  std::mt19937_64 rng(20261122);
  std::size_t placed = 0, refused = 0;
  for (int round = 0; round < 4000; ++round) {
    const auto in = random_instance(rng, round % 2 == 0, round % 3 != 0);
    check_instance<mt::tf_test_graph>(in, placed, refused);
    if (round % 10 == 0) check_instance<list_graph>(in, placed, refused);
  }
  // Both outcomes are exercised.
  CHECK(placed > 1000);
  CHECK(refused > 100);
}

TEST_CASE("colocate property: groups, kernel types and devices do not depend on the order of merges") {
  std::mt19937_64 rng(7);
  std::size_t compared = 0;
  for (int round = 0; round < 2000; ++round) {
    const auto in = random_instance(rng, true, true);
    const std::size_t n = in.nodes.size();
    std::vector<std::pair<std::size_t, std::size_t>> pairs;
    for (std::size_t k = pick(rng, 0, 2 * n); k > 0; --k) pairs.push_back({pick(rng, 0, n - 1), pick(rng, 0, n - 1)});  // braces: drawn in order
    const auto run = [&](const std::vector<std::pair<std::size_t, std::size_t>>& order)
        -> std::optional<std::vector<std::tuple<std::size_t, std::vector<std::string>, std::string>>> {
      memopt::colocation_graph groups(n, in.devices, in.kernels);
      try {
        for (std::size_t v = 0; v < n; ++v) {
          groups.initialize(v, in.nodes[v].op, in.nodes[v].device, in.nodes[v].assigned_device);
        }
      } catch (const memopt::error&) {
        return std::nullopt;
      }
      for (const auto& [u, v] : order) {
        if (groups.try_colocate(u, v)) return std::vector<std::tuple<std::size_t, std::vector<std::string>, std::string>>{};
      }
      std::vector<std::tuple<std::size_t, std::vector<std::string>, std::string>> state;
      for (std::size_t v = 0; v < n; ++v) {
        const auto root = groups.find(v);
        std::size_t smallest = v;
        for (std::size_t w = 0; w < v; ++w) {
          if (groups.find(w) == root) {
            smallest = w;
            break;
          }
        }
        state.emplace_back(smallest, groups.type_names(root), to_string(groups.devices_of(root).requested));
      }
      return state;
    };
    const auto first = run(pairs);
    std::ranges::shuffle(pairs, rng);
    for (auto& [u, v] : pairs) {
      if (chance(rng, 0.5)) std::swap(u, v);
    }
    const auto second = run(pairs);
    CHECK(first == second);  // a failing merge (empty state) fails in every order
    if (first && !first->empty()) ++compared;
  }
  CHECK(compared > 500);
}
