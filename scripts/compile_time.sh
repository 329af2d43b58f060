#!/usr/bin/env bash
# What including memopt costs a user's translation unit, beside what Boost.Graph's
# own adjacency_list and topological_sort headers cost in the same run (the
# machine is shared: the ratio is the figure that repeats).
#
# usage: scripts/compile_time.sh [--cli]
#   Each header alone, g++ -fsyntax-only, CPU seconds (best of 3), and its floor:
#   the same translation unit with only the standard and Boost headers that
#   memopt's own files include, none of memopt's code. Then a user's program
#   with one liveness call against one with one topological_sort, both at -O2.
#   With --cli, also memopt-plan's translation unit compiled at -O0 and with
#   CI's ASan and UBSan flags, where code generation, not parsing, is most of
#   the time.
set -euo pipefail
cd "$(dirname "$0")/.."
cxx=${CXX:-g++}
flags=(-std=gnu++20 -Iinclude -Iexamples)
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT

cpu_seconds() {  # cpu_seconds FILE EXTRA_FLAGS...: best of 3 runs, user + system
  local file=$1 best="" t
  shift
  for _ in 1 2 3; do
    /usr/bin/time -o "$tmp/time" -f '%U %S' "$cxx" "${flags[@]}" "$@" "$file" -o "$tmp/out"
    t=$(awk '{print $1 + $2}' "$tmp/time")
    best=$(awk -v a="$t" -v b="$best" 'BEGIN { print (b == "" || a < b) ? a : b }')
  done
  echo "$best"
}

header_cost() {  # header_cost "<a.hpp> <b.hpp>": seconds to parse them in one TU
  : >"$tmp/tu.cpp"
  for h in $1; do echo "#include $h" >>"$tmp/tu.cpp"; done
  cpu_seconds "$tmp/tu.cpp" -fsyntax-only
}

external_headers() {  # external_headers HEADER: the other headers memopt's files reachable from it include
  echo "#include <memopt/$1.hpp>" >"$tmp/probe.cpp"
  "$cxx" "${flags[@]}" -H -fsyntax-only "$tmp/probe.cpp" 2>&1 >/dev/null | awk '
    /^\.+ / { depth = length($1); path[depth] = $2
               if (path[depth - 1] ~ /include\/memopt\// && $2 !~ /include\/memopt\//) print "\"" $2 "\"" }' |
    sort -u | tr '\n' ' '
}

baseline=$(header_cost "<boost/graph/adjacency_list.hpp> <boost/graph/topological_sort.hpp>")
ratio() { awk -v a="$1" -v b="$2" 'BEGIN { printf "%.2f", a / b }'; }
printf '| %-52s | %6s | %11s | %17s |\n' "included alone ($cxx -fsyntax-only)" "CPU s" "vs baseline" "floor vs baseline"
printf '|%s|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..54})" "--------" "-------------" "-------------------"
printf '| %-52s | %6.2f | %11s | %17s |\n' "baseline: boost adjacency_list + topological_sort" "$baseline" 1.00 ""
for h in graph liveness schedule heap share colocate simulate rewrite remat compare memopt io; do
  cost=$(header_cost "<memopt/$h.hpp>")
  floor=$(header_cost "$(external_headers "$h")")
  printf '| %-52s | %6.2f | %11s | %17s |\n' "<memopt/$h.hpp>" "$cost" "$(ratio "$cost" "$baseline")" "$(ratio "$floor" "$baseline")"
done

# A user's program at -O2: one liveness call on memopt's bundles, against one
# topological_sort on the same adjacency_list.
cat >"$tmp/sort_user.cpp" <<'CPP'
#include <boost/graph/adjacency_list.hpp>
#include <boost/graph/topological_sort.hpp>
#include <iterator>
#include <vector>
int main() {
  boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS> g(2);
  add_edge(0, 1, g);
  std::vector<std::size_t> order;
  boost::topological_sort(g, std::back_inserter(order));
  return static_cast<int>(order.size());
}
CPP
cat >"$tmp/liveness_user.cpp" <<'CPP'
#include <memopt/liveness.hpp>
#include <boost/graph/adjacency_list.hpp>
int main() {
  using graph = boost::adjacency_list<boost::vecS, boost::vecS, boost::bidirectionalS,
                                      memopt::tensor_node, memopt::tensor_edge>;
  graph g;
  const auto x = add_vertex({.outputs = {{.bytes = 100}}}, g);
  const auto y = add_vertex({.outputs = {{.bytes = 200, .live_out = true}}}, g);
  add_edge(x, y, g);
  return static_cast<int>(memopt::liveness(g, memopt::program_order(g)).peak_bytes);
}
CPP
sort_user=$(cpu_seconds "$tmp/sort_user.cpp" -O2 -c)
liveness_user=$(cpu_seconds "$tmp/liveness_user.cpp" -O2 -c)
echo
echo "a user's program at -O2 (-c): one topological_sort $sort_user s, one liveness call $liveness_user s:" \
     "$(ratio "$liveness_user" "$sort_user")x"

if [ "${1:-}" = --cli ]; then
  ci=(-g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  echo
  echo "memopt-plan (examples/plan/main.cpp, one translation unit, every family):"
  echo "  -O0:                  $(cpu_seconds examples/plan/main.cpp -c) s"
  echo "  -O0 ASan+UBSan (CI):  $(cpu_seconds examples/plan/main.cpp -c "${ci[@]}") s"
fi
