#!/usr/bin/env bash
# Installs, on Debian 12, the packages memopt's build, tests, examples and
# benchmarks need, and only those that are missing. Safe to run again.
set -euo pipefail
packages=(g++ cmake make libboost-graph-dev doctest-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
          libbenchmark-dev clang libclang-rt-14-dev clang-tidy coinor-libcbc-dev pkg-config)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
[ ${#missing[@]} -eq 0 ] && exit 0
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
echo "install-deps: installing ${missing[*]}"
$sudo apt-get update -qq
DEBIAN_FRONTEND=noninteractive $sudo apt-get install -y -qq --no-install-recommends "${missing[@]}"
