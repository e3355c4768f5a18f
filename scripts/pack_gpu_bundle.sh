#!/usr/bin/env bash
# Packs a build made here for the lent GPU machine (docs/gpu.md, "GPU machine"): that machine
# gets only the tracked tree plus the folders named in `carry` (64 MiB in all) and has none of
# our Debian libraries. Carrying the Debian packages and building there costs more than the
# budget and minutes of GPU time (docs/gpu.md has the numbers), so this carries the built
# executables and the libraries they load, each pointed at its neighbours by RUNPATH.
# scripts/gpu_check.sh unpacks and runs it there. Run it in the checkout that calls `run`.
# Env: STRATA_GPU_BUILD (build folder, build-gpu), STRATA_CUDA_ARCH (90).
set -euo pipefail
cd "$(dirname "$0")/.."
build=${STRATA_GPU_BUILD:-build-gpu}
out=.gpu-bundle
# patchelf sets the RUNPATHs below; installed here, not by install_deps.sh: only packing needs it.
# shellcheck disable=SC2034 # read by apt_packages
PKGS=(patchelf)
source scripts/apt_packages.sh
apt_packages >/dev/null

# Release like the main build, with the CUDA backend for Hopper (sm_90); no Python module: it
# is built for Debian's python3.11, that machine has 3.12. Configured every time, so an older cache cannot leave
# CUDA out unnoticed.
arch=${STRATA_CUDA_ARCH:-90}
cmake -S . -B "$build" -G Ninja --no-warn-unused-cli -DCMAKE_BUILD_TYPE=Release -DSTRATA_CUDA=ON \
  -DSTRATA_CUDA_ARCHITECTURES="$arch" -DCMAKE_CUDA_ARCHITECTURES="$arch" -DSTRATA_PYTHON=OFF >/dev/null
cmake --build "$build"
if ls src/kernels/cuda/*.cu >/dev/null 2>&1 && ! grep -q STRATA_WITH_CUDA "$build/build.ninja"; then
  echo "pack_gpu_bundle.sh: WARNING: src/kernels/cuda has CUDA sources but $build has no CUDA backend" >&2
fi

stage=$(mktemp -d)
trap 'rm -rf "$stage"' EXIT
dst=$stage/$build
mkdir -p "$dst/bundle-lib" "$dst/bundle-compat"

# What ctest reads: the CTest files (gtest_discover_tests' lists too) name absolute paths of
# this checkout; gpu_check.sh recreates this checkout's path there as a link to that tree.
(cd "$build" && find . -path ./CMakeFiles -prune -o -type f \( -name CTestTestfile.cmake \
  -o -name '*_include.cmake' -o -name '*_tests.cmake' -o -name CMakeCache.txt \) -print) |
  while read -r f; do mkdir -p "$dst/$(dirname "$f")"; cp "$build/$f" "$dst/$f"; done
exes=()
while read -r f; do
  [[ $(head -c4 "$build/$f" | od -An -c | tr -d ' ') == 177ELF ]] || continue
  mkdir -p "$dst/$(dirname "$f")"
  cp "$build/$f" "$dst/$f"
  exes+=("$f")
done < <(cd "$build" && find . -path ./CMakeFiles -prune -o -path ./python -prune -o -type f -perm -u+x -print)
# A kernel and a cuBLAS call that gpu_check.sh runs first: whether code built here runs there.
if command -v nvcc >/dev/null; then
  nvcc -O2 -arch="sm_$arch" -o "$dst/gpu_smoke" tools/gpu_smoke.cu -lcublas \
    -Xlinker -rpath="$(dirname "$(dirname "$(command -v nvcc)")")/lib64"
  exes+=(./gpu_smoke)
fi

# Their libraries, except glibc (the kernel's interface: that machine's must be new enough)
# and CUDA's (that machine has its own toolkit and driver, the same CUDA 13). libstdc++ and
# libgcc_s go aside: used there only if the system's are older than these.
is_cuda() { [[ $1 == /usr/local/cuda* || $(basename "$1") =~ ^lib(cuda|cudart|cublas|cublasLt|cudnn|nccl|nvrtc|nvJitLink|curand|cufft|cusparse|cusolver|nvToolsExt|cupti)[._] ]]; }
declare -A libs=()
for f in "${exes[@]}"; do
  while read -r name path; do
    case $name in
      linux-vdso*|ld-linux*|libc.so*|libm.so*|libpthread.so*|libdl.so*|librt.so*|libresolv.so*) continue ;;
    esac
    if [[ $path == "not found" ]]; then
      [[ $name == libcuda.so* ]] && continue  # the driver: absent on a machine with no GPU
      echo "pack_gpu_bundle.sh: $f needs $name, which is not found here" >&2; exit 1
    fi
    is_cuda "$path" && continue
    libs[$name]=$path
  done < <(ldd "$build/$f" | awk '/=>/{print $1, ($3 == "not" ? "not found" : $3)}')
done
for name in "${!libs[@]}"; do
  case $name in libstdc++.so*|libgcc_s.so*) dir=bundle-compat ;; *) dir=bundle-lib ;; esac
  cp -L "${libs[$name]}" "$dst/$dir/$name"
  chmod u+w "$dst/$dir/$name"
  patchelf --set-rpath '$ORIGIN' "$dst/$dir/$name"
done
# RUNPATH (not LD_LIBRARY_PATH): the Python and PyTorch that tests and benchmarks start
# there keep loading the machine's own libraries. CUDA's folders from the link stay in it.
for f in "${exes[@]}"; do
  rel=$(realpath -m --relative-to="$(dirname "$dst/$f")" "$dst/bundle-lib")
  keep=$(patchelf --print-rpath "$dst/$f" | tr ':' '\n' | grep '^/usr/local/cuda' | paste -sd: || true)
  patchelf --set-rpath "\$ORIGIN/$rel${keep:+:$keep}" "$dst/$f"
done

# What gpu_check.sh checks there: the tree the build was made from (a stale bundle is the
# likeliest failure), the path to recreate, and the newest glibc and libstdc++ versions needed.
elves=("${exes[@]/#/$dst/}" "$dst"/bundle-lib/*)
glibc=$(objdump -T "${elves[@]}" | grep -o 'GLIBC_2\.[0-9]*' | sort -uV | tail -1)
glibcxx=$(objdump -T "${elves[@]}" | grep -o 'GLIBCXX_3\.[0-9.]*' | sort -uV | tail -1)
git ls-files -z | while IFS= read -r -d '' f; do [[ -f $f ]] && printf '%s\0' "$f"; done |
  xargs -0 sha1sum > "$stage/sources.sha1"
rm -rf "$out"
mkdir -p "$out"
{
  echo "source_dir=$PWD"
  echo "build_dir=$build"
  echo "commit=$(git rev-parse HEAD)$(git diff --quiet HEAD -- . || echo ' (with uncommitted changes)')"
  echo "made=$(date -u +%Y-%m-%dT%H:%MZ) on $(. /etc/os-release && echo "$PRETTY_NAME")"
  echo "cuda_toolkit=$(nvcc --version 2>/dev/null | grep -o 'release [0-9.]*' || echo none)"
  echo "cuda_sources=$(grep -q STRATA_WITH_CUDA "$build/build.ninja" && echo "yes, sm_$arch" || echo no)"
  echo "needs_glibc=${glibc#GLIBC_}"
  echo "needs_glibcxx=${glibcxx#GLIBCXX_}"
  echo "executables=${#exes[@]}"
  echo "libraries=$(find "$dst/bundle-lib" "$dst/bundle-compat" -type f -printf '%f\n' | sort | paste -sd' ')"
} > "$out/MANIFEST"
cp "$stage/sources.sha1" "$out/"
# xz: half the size of gzip -9 here (docs/gpu.md); gpu_check.sh falls back to python3's
# tarfile where xz is missing. The executables, each holding a copy of strata_core, go first
# and together, within xz's 64 MiB window of one another; the large libraries after them.
(cd "$stage" && find "$build" -type f ! -path '*/bundle-*' | sort && find "$build" -type f -path '*/bundle-*' | sort) |
  tar -C "$stage" -cf - -T - | xz -9 -T2 > "$out/build.tar.xz"
echo "unpacked=$(du -sm "$stage/$build" | cut -f1) MiB" >> "$out/MANIFEST"
cat "$out/MANIFEST"
# What the device tool sends: the tracked and untracked-not-ignored files, and the carried folder.
tree=$(git ls-files -z --cached --others --exclude-standard | du -cb --files0-from=- 2>/dev/null | tail -1 | cut -f1)
carried=$(du -sb "$out" | cut -f1)
awk -v t="$tree" -v c="$carried" 'BEGIN { m = 1048576; printf "travels: tree %.1f MiB + %s %.1f MiB = %.1f MiB of 64\n",
  t / m, "'"$out"'", c / m, (t + c) / m; if (t + c > 64 * m) { print "OVER the device tool'"'"'s 64 MiB"; exit 1 } }'
