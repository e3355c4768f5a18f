#!/bin/bash
# pybind11 or nanobind for strata._strata (docs/python_bindings.md): the same probe module in
# each (probe_*.cpp: the kinds of call strata's module makes), built as each library's CMake
# function builds it, Release. Prints the machine, then one table: clean-build and rebuild
# time, stripped size, import time and call overhead.
#
#   bench/python_bindings/run.sh [WORK_DIR]     (default /tmp/strata-bindings, emptied first)
# Env: JOBS (ninja -j, default 2), BUILDS (clean builds per variant, default 3), ROUNDS (call
# and import measurements per variant, default 3).
set -euo pipefail
HERE=$(cd "$(dirname "$0")" && pwd)
W=${1:-/tmp/strata-bindings}
JOBS=${JOBS:-2}
BUILDS=${BUILDS:-3}
ROUNDS=${ROUNDS:-3}
export CCACHE_DISABLE=1  # a cache hit would make the second and third clean builds free
rm -rf "$W" && mkdir -p "$W"

# Debian's interpreter and numpy; nanobind is only on PyPI, and PyPI's latest pybind11 is here
# to compare with Debian's pybind11-dev (/usr/lib/cmake/pybind11).
/usr/bin/python3 -m venv --system-site-packages "$W/venv"
PY=$W/venv/bin/python
"$PY" -m pip install -q nanobind pybind11

echo "date: $(date -u +%FT%TZ)"
echo "cpu: $(lscpu | grep 'Model name' | sed 's/ *Model name: *//'), $(nproc) cores;" \
  "ISA: $(grep -o -w -E 'avx2|avx512[a-z_0-9]*|amx[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "compiler: $(g++ --version | head -1); $(cmake --version | head -1); ninja $(ninja --version)"
echo "python: $("$PY" -c 'import sys, numpy; print(sys.version.split()[0], "numpy", numpy.__version__)');" \
  "pybind11 $(dpkg-query -W -f '${Version}' pybind11-dev) (Debian), $("$PY" -m pip list 2>/dev/null |
  awk '$1 == "pybind11" || $1 == "nanobind" {printf "%s %s (PyPI), ", $1, $2}')"
echo "load at start: $(cut -d' ' -f1-3 /proc/loadavg) (other work shares the machine: CPU s is steadier than wall s)"

# name | binding | CMake options. pybind11_add_module adds -flto (strata's module gets it too);
# pybind11-noLTO shows what that costs. nanobind_add_module builds the module -Os by default;
# NOMINSIZE gives -O3.
variants=(
  "pybind11-debian|pybind11|-Dpybind11_DIR=/usr/lib/cmake/pybind11"
  "pybind11-noLTO|pybind11|-Dpybind11_DIR=/usr/lib/cmake/pybind11 -DCMAKE_INTERPROCEDURAL_OPTIMIZATION=OFF"
  "pybind11-pypi|pybind11|-Dpybind11_DIR=$("$PY" -m pybind11 --cmakedir)"
  "nanobind|nanobind|-Dnanobind_DIR=$("$PY" -m nanobind --cmake_dir)"
  "nanobind-O3|nanobind|-Dnanobind_DIR=$("$PY" -m nanobind --cmake_dir) -DNB_OPTIONS=NOMINSIZE"
)
# Builds and measurements alternate between variants, so that a change in the machine's load
# falls on all of them.
for _ in $(seq "$BUILDS"); do
  for v in "${variants[@]}"; do
    IFS='|' read -r name binding opts <<< "$v"
    b=$W/build-$name
    rm -rf "$b"
    # shellcheck disable=SC2086  # opts holds several options
    cmake -G Ninja -S "$HERE" -B "$b" -DCMAKE_BUILD_TYPE=Release -DCMAKE_CXX_COMPILER=g++ \
      -DPython_EXECUTABLE="$PY" -DBINDING="$binding" $opts > "$W/$name.log"
    # Clean: everything the module needs (nanobind: its library too, built with every module).
    /usr/bin/time -a -o "$W/$name.build" -f "clean %e %U %S" ninja -C "$b" -j"$JOBS" >> "$W/$name.log"
    # Rebuild: what editing the module's source costs (its object and the link).
    rm "$b"/CMakeFiles/probe_*.dir/probe_*.cpp.o
    /usr/bin/time -a -o "$W/$name.build" -f "rebuild %e %U %S" ninja -C "$b" -j"$JOBS" >> "$W/$name.log"
  done
done
names=()
for v in "${variants[@]}"; do
  IFS='|' read -r name _ _ <<< "$v"
  names+=("$name")
  grep -- '-- probe:' "$W/$name.log"
  strip --strip-all -o "$W/$name.so" "$W"/build-"$name"/probe_*.so
  stat -c %s "$W/$name.so" > "$W/$name.size"
done
for _ in $(seq "$ROUNDS"); do
  for v in "${variants[@]}"; do
    IFS='|' read -r name binding _ <<< "$v"
    "$PY" "$HERE/bench.py" measure "probe_$binding" "$W/build-$name" >> "$W/$name.json"
  done
done
echo "load at end: $(cut -d' ' -f1-3 /proc/loadavg)"
echo
"$PY" "$HERE/bench.py" table "$W" "${names[@]}"
