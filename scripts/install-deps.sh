#!/usr/bin/env bash
# Installs, on Debian 12, the packages memopt's build, tests, examples,
# benchmarks and Python package need, and only those that are missing. Safe
# to run again.
#
#   scripts/install-deps.sh [--without-onnx] [--without-torch]
#
# --without-onnx: not libonnx-dev and libprotobuf-dev; CMake then builds
#   memopt-plan without ONNX import (MEMOPT_ONNX is on where they are found).
# --without-torch: not PyTorch, torchvision and ONNX for Python, which only
#   scripts/export_torch.py and its test need.
set -euo pipefail
packages=(g++ cmake make libboost-graph-dev doctest-dev nlohmann-json3-dev libcli11-dev zlib1g-dev
          libbenchmark-dev clang libclang-rt-14-dev clang-tidy coinor-libcbc-dev pkg-config
          pybind11-dev python3-pybind11 python3-dev)
onnx=(libonnx-dev libprotobuf-dev)
torch=(python3-torch python3-torchvision python3-onnx python3-networkx)
with_onnx=1
with_torch=1
for arg in "$@"; do
  case "$arg" in
    --without-onnx) with_onnx=0 ;;
    --without-torch) with_torch=0 ;;
    *) echo "install-deps: unknown option $arg (known: --without-onnx, --without-torch)" >&2; exit 1 ;;
  esac
done
[ $with_onnx -eq 1 ] && packages+=("${onnx[@]}")
[ $with_torch -eq 1 ] && packages+=("${torch[@]}")
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
