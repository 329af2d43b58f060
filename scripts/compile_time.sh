#!/usr/bin/env bash
# What including memopt costs a user's translation unit, beside what Boost.Graph's
# own adjacency_list and topological_sort headers cost in the same run (the
# machine is shared: the ratio is the figure that repeats).
#
# usage: scripts/compile_time.sh [--cli]
#   Each header alone, g++ -fsyntax-only, CPU seconds (best of 3). With --cli,
#   also memopt-plan's translation unit compiled at -O0 and with CI's ASan and
#   UBSan flags, where code generation, not parsing, is most of the time.
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

baseline=$(header_cost "<boost/graph/adjacency_list.hpp> <boost/graph/topological_sort.hpp>")
printf '| %-52s | %8s | %12s |\n' "included alone ($cxx -fsyntax-only)" "CPU s" "vs baseline"
printf '|%s|%s|%s|\n' "$(printf -- '-%.0s' {1..54})" "----------" "--------------"
row() { printf '| %-52s | %8.2f | %12.2f |\n' "$1" "$2" "$(awk -v a="$2" -v b="$baseline" 'BEGIN { print a / b }')"; }
row "baseline: boost adjacency_list + topological_sort" "$baseline"
for h in graph liveness schedule heap share colocate simulate rewrite remat compare memopt io; do
  row "<memopt/$h.hpp>" "$(header_cost "<memopt/$h.hpp>")"
done

if [ "${1:-}" = --cli ]; then
  ci=(-g -fsanitize=address,undefined -fno-sanitize-recover=all -fno-omit-frame-pointer)
  echo
  echo "memopt-plan (examples/plan/main.cpp, one translation unit, every family):"
  echo "  -O0:                  $(cpu_seconds examples/plan/main.cpp -c) s"
  echo "  -O0 ASan+UBSan (CI):  $(cpu_seconds examples/plan/main.cpp -c "${ci[@]}") s"
fi
