#!/usr/bin/env bash
# Installs the Python package memopt of a build directory for the Python it
# was built for (Debian's /usr/bin/python3 by default): `cmake --install
# BUILD --component python`, with sudo when not root, into that build's
# MEMOPT_PYTHON_INSTALL_DIR (the interpreter's site-packages), then imports
# it once to check. Build the target memopt-python first.
#
#   scripts/install-python.sh [BUILD]     (default: build)
set -euo pipefail
build=${1:-build}
if ! grep -q '^MEMOPT_PYTHON:BOOL=ON$' "$build/CMakeCache.txt" 2>/dev/null; then
  echo "install-python: $build has no Python package (configure with pybind11-dev and python3-dev installed)" >&2
  exit 1
fi
python=$(sed -n 's/^Python3_EXECUTABLE:FILEPATH=//p' "$build/CMakeCache.txt")
sudo=""
[ "$(id -u)" -eq 0 ] || sudo="sudo"
$sudo cmake --install "$build" --component python
"$python" -I -c "import memopt; print('install-python: memopt for $python in', memopt.__path__[0])"
