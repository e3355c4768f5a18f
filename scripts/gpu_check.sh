#!/usr/bin/env bash
# The one command for the lent GPU machine (docs/gpu.md, "GPU machine"): says what machine it
# is, unpacks the build that scripts/pack_gpu_bundle.sh made (carried as .gpu-bundle), runs the
# tests labelled `gpu` and bench/gpu/run.sh where it exists, and prints a table last. GPU time
# comes 15 minutes at a time, so one run does everything in under 8 minutes and a failing part
# is recorded, never the end of the run. Where there is no GPU every test skips (exit 77) and
# it exits 0. Logs: $OUT/gpu-check/ (the device tool brings back 8 files from at most 2 folders
# down), else ./gpu-check-out/. Env: GPU_CHECK_DEADLINE_S (460), GPU_CHECK_JOBS (4).
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
t0=$SECONDS
deadline=${GPU_CHECK_DEADLINE_S:-460}
log=${OUT:+$OUT/gpu-check}
log=${log:-$root/gpu-check-out}
rm -rf "$log"
mkdir -p "$log"
scratch=$(mktemp -d)
trap 'rm -rf "$scratch"' EXIT
trap 'echo "gpu_check: stopped by an unexpected error at line $LINENO" >&2' ERR
rows=()   # "name|result|seconds" for the table
failed=0

row() { rows+=("$1|$2|$3"); [[ $2 == ok || $2 == skipped* ]] || failed=1; }
note() { echo "gpu_check: $*" | tee -a "$log/bundle.txt"; }
# Runs "$@" under the part's limit, cut to what is left of the whole run's deadline.
timed() {
  local name=$1 limit=$2 file=$3 left rc=0 s=$SECONDS
  shift 3
  left=$((deadline - (SECONDS - t0)))
  ((limit < left)) || limit=$left
  if ((limit < 10)); then row "$name" "skipped: no time left" 0; return 0; fi
  timeout -k 10 "$limit" "$@" >>"$file" 2>&1 || rc=$?
  case $rc in
    0) row "$name" ok $((SECONDS - s)) ;;
    124 | 137) row "$name" "timeout ${limit}s" $((SECONDS - s)) ;;
    77) if [[ -n ${gpu:-} ]]; then row "$name" "failed: exit 77, no GPU seen" $((SECONDS - s))
        else row "$name" "skipped (exit 77)" $((SECONDS - s)); fi ;;
    *) row "$name" "failed: exit $rc" $((SECONDS - s)) ;;
  esac
}

# --- The machine: enough to read the results against, and whether there is a GPU at all.
machine() {
  date -u
  uname -a
  grep PRETTY_NAME /etc/os-release || true
  echo "glibc $(getconf GNU_LIBC_VERSION 2>/dev/null); $(nproc) cores"
  free -g | head -2 || true
  nvidia-smi || true
  nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap,clocks.sm,clocks.max.sm --format=csv || true
  nvcc --version | tail -2 || true
  ctest --version | head -1 || true
  python3 -c 'import torch; print("torch", torch.__version__, "cuda", torch.version.cuda, "cudnn",
    torch.backends.cudnn.version(), torch.cuda.get_device_name(0) if torch.cuda.is_available() else "(no GPU)")' || true
}
export -f machine
timed machine 60 "$log/machine.txt" bash -c machine
gpu=$(timeout 30 nvidia-smi --query-gpu=name,driver_version,memory.total,compute_cap --format=csv,noheader 2>/dev/null | head -1 || true)
cuda=$(timeout 30 nvidia-smi 2>/dev/null | grep -o 'CUDA Version: [0-9.]*' || true)
if [[ -n $gpu ]]; then echo "gpu_check: GPU $gpu, ${cuda:-CUDA version unknown}"
else echo "gpu_check: no GPU here (nvidia-smi found none): every gpu test skips, the benchmarks do not run"; fi

# --- The build: the one made here where this is a developer's checkout, else the carried one.
bundle=.gpu-bundle
get() { sed -n "s/^$1=//p" "$bundle/MANIFEST" 2>/dev/null || true; }
build=$(get build_dir)
build=${build:-${STRATA_GPU_BUILD:-build-gpu}}
src=$(get source_dir)
usable=1
s=$SECONDS
if [[ -f $build/build.ninja ]]; then
  note "using $build, a build made on this machine"
elif [[ -f $bundle/build.tar.xz ]]; then
  note "bundle: $(get commit), made $(get made), $(get cuda_toolkit), CUDA sources: $(get cuda_sources)"
  [[ ! -e $build || -f $build/.from-bundle ]] || { note "$build exists and is no unpacked bundle: leaving it"; usable=0; }
  if ((usable)); then
    rm -rf "$build"
    mkdir -p "$build"
    touch "$build/.from-bundle"
    # python3's tarfile where xz is missing
    unpack() { if command -v xz >/dev/null; then xz -dc .gpu-bundle/build.tar.xz | tar -xf -
      else python3 -c 'import tarfile; tarfile.open(".gpu-bundle/build.tar.xz").extractall()'; fi; }
    export -f unpack
    timeout 120 bash -c unpack >>"$log/bundle.txt" 2>&1 || { note "unpacking failed"; usable=0; }
  fi
  # The binaries and CTest files name the checkout they were built in: that path must lead here.
  if [[ -n $src && ! -e $src ]]; then
    if mkdir -p "$(dirname "$src")" && ln -s "$root" "$src"; then note "linked $src -> $root (the build's checkout)"
    else note "could not link $src -> $root: tests will not find their files"; fi
  elif [[ -n $src && ! $src -ef $root ]]; then
    note "WARNING: $src (the build's checkout) exists and is not this tree: tests read their files there"
  fi
  # A stale bundle is the likeliest failure: say which tracked files differ from the build's.
  differ=$(sha1sum -c --quiet "$bundle/sources.sha1" 2>/dev/null | grep -c . || true)
  if ((differ)); then note "WARNING: $differ tracked files differ from the bundle's tree (rerun scripts/pack_gpu_bundle.sh):"
    sha1sum -c --quiet "$bundle/sources.sha1" 2>&1 | head -10 | tee -a "$log/bundle.txt" || true
  else note "the tracked files are those the bundle was built from"; fi
else
  note "no $bundle/build.tar.xz and no $build: run scripts/pack_gpu_bundle.sh where you build"
  usable=0
fi
# Every library must load: an older libstdc++ takes the bundle's; CUDA's own come from this
# machine (toolkit, driver, or the pip packages beside PyTorch).
if ((usable)); then
  mapfile -t elves < <(find "$build" \( -path "$build/bundle-*" -o -path "$build/CMakeFiles" \) -prune -o -type f -perm -u+x -print)
  missing() { ldd "${elves[@]}" 2>&1 | grep -E 'not found' | grep -v 'libcuda\.so' || true; }
  if missing | grep -q 'version .GLIBCXX\|version .GCC_\|version .CXXABI'; then
    export LD_LIBRARY_PATH=$root/$build/bundle-compat${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    note "this machine's libstdc++ is older than the build's: using the bundle's"
  fi
  for so in $(missing | grep -o '^[[:space:]]*lib[^ ]*\.so[^ ]* => not found' | awk '{print $1}' | sort -u); do
    dir=$(timeout 30 find /usr/local /opt /usr/lib -name "$so" -print -quit 2>/dev/null | xargs -r dirname || true)
    [[ -n $dir ]] || continue
    export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
    note "$so from $dir"
  done
  # cuBLASLt is opened at run time (src/kernels/cuda/cublaslt_api.cuh), so ldd does not list it;
  # CUDA 13's soname, as the build's toolkit (MANIFEST).
  if ! ldconfig -p 2>/dev/null | grep -q 'libcublasLt\.so\.13 '; then
    dir=$(timeout 30 find /usr/local /opt /usr/lib -name 'libcublasLt.so.13' -print -quit 2>/dev/null | xargs -r dirname || true)
    if [[ -n $dir ]]; then
      export LD_LIBRARY_PATH=$dir${LD_LIBRARY_PATH:+:$LD_LIBRARY_PATH}
      note "libcublasLt.so.13 (opened at run time) from $dir"
    else
      note "WARNING: no libcublasLt.so.13 here: the GPU's matrix products will fail"
    fi
  fi
  # NCCL is opened at run time too (src/dist/nccl/nccl_api.cuh); there it comes with PyTorch's
  # wheel (nvidia-nccl-cu13), off the loader's path: STRATA_NCCL_LIBRARY names it.
  if [[ -z ${STRATA_NCCL_LIBRARY:-} ]] && ! ldconfig -p 2>/dev/null | grep -q 'libnccl\.so\.2 '; then
    nccl=$(timeout 30 python3 -c 'import nvidia.nccl, os; print(os.path.join(list(nvidia.nccl.__path__)[0], "lib", "libnccl.so.2"))' 2>/dev/null || true)
    [[ -f $nccl ]] || nccl=$(timeout 30 find /usr/local /opt /usr/lib -name 'libnccl.so.2' -print -quit 2>/dev/null || true)
    if [[ -n $nccl ]]; then
      export STRATA_NCCL_LIBRARY=$nccl
      note "libnccl.so.2 (opened at run time) from $nccl"
    else
      note "WARNING: no libnccl.so.2 here: the NCCL tests will fail"
    fi
  fi
  if [[ -n $(missing) ]]; then
    note "libraries that do not load (this machine's glibc: $(getconf GNU_LIBC_VERSION); the build needs $(get needs_glibc)):"
    missing | sort -u | head -20 | tee -a "$log/bundle.txt" || true
    usable=0
  else
    note "every library loads; $("$build/strata" --version 2>&1 | head -1)"
  fi
fi
if ((usable)); then row build ok $((SECONDS - s))
elif [[ -z $gpu && ! -f $bundle/build.tar.xz ]]; then row build "skipped: no bundle" $((SECONDS - s))
else row build failed $((SECONDS - s)); fi

# --- Does CUDA code built on the developers' machines run here: one kernel, one cuBLAS product.
if [[ ! -x $build/gpu_smoke ]]; then row gpu_smoke "skipped: not built" 0
elif ((usable)); then timed gpu_smoke 60 "$log/machine.txt" "$build/gpu_smoke"
else row gpu_smoke "skipped: no build" 0; fi

# --- The tests labelled gpu (each exits 77, reported as skipped, where there is no GPU).
tests_ran=0
# PyPI's cmake package (beside PyTorch there) has one where PATH has none.
ctest=$(command -v ctest || python3 -c 'import cmake, os; print(os.path.join(cmake.CMAKE_BIN_DIR, "ctest"))' 2>/dev/null || true)
if ((usable)) && [[ -x $ctest ]]; then
  timed "ctest -L gpu" 240 "$log/tests.log" "$ctest" --test-dir "$build" -L '^gpu$' --output-on-failure \
    -j "${GPU_CHECK_JOBS:-4}" --timeout 200 --output-junit "$log/junit.xml"
  tests_ran=1
  grep -q 'No tests were found' "$log/tests.log" && echo "gpu_check: no test is labelled gpu in this build"
elif ((usable)); then row "ctest -L gpu" "failed: no ctest" 0
else row "ctest -L gpu" "skipped: no build" 0; fi

# --- The projection's GPU figures (docs/studies.md, "GPU instance types"): `strata plan` on the
# seeds' ALBERT job profiles its units on this GPU and prints the fraction of the peak they
# reach, which catalog/gpus.yaml's `achieved` of this GPU is to keep.
if [[ -z $gpu ]]; then row "strata plan (GPU fractions)" "skipped: no GPU" 0
elif ((!usable)); then row "strata plan (GPU fractions)" "skipped: no build" 0
else
  timed "strata plan (GPU fractions)" 150 "$log/plan_albert.log" "$build/strata" plan examples/jobs/albert_p4d.yaml \
    --instance-types ml.p4d.24xlarge --instance-counts 2,4,8,16 --max-degree 1 --calibration-steps 3 --profile-steps 3
  grep -h '^measured on this GPU' "$log/plan_albert.log" || true
fi

# --- The GPU benchmarks, where they exist: bench/gpu/run.sh finds the build in
# STRATA_GPU_BUILD and writes its files into STRATA_GPU_BENCH_OUT (packed into extra.tar.gz).
if [[ ! -f bench/gpu/run.sh ]]; then row bench/gpu/run.sh "skipped: not written yet" 0
elif [[ -z $gpu ]]; then row bench/gpu/run.sh "skipped: no GPU" 0
elif ((!usable)); then row bench/gpu/run.sh "skipped: no build" 0
else
  mkdir -p "$scratch/bench"
  STRATA_GPU_BUILD=$root/$build STRATA_GPU_BENCH_OUT=$scratch/bench \
    timed bench/gpu/run.sh 150 "$log/bench.log" bash bench/gpu/run.sh
fi

# Everything else in one file: ctest's full output of each test, the benchmarks' files.
[[ -f $build/Testing/Temporary/LastTest.log ]] && cp "$build"/Testing/Temporary/LastTest*.log "$scratch/" 2>/dev/null || true
if [[ -n $(ls -A "$scratch") ]]; then tar -C "$scratch" -czf "$log/extra.tar.gz" . || true; fi

# --- The table, last: what the device tool's reply shows.
{
  commit=$(get commit)
  echo "== gpu_check: ${gpu:-no GPU}${cuda:+, $cuda}${commit:+; build of $commit}; logs in $log"
  printf '%-56s %-30s %8s\n' "part / test" result seconds
  for r in "${rows[@]}"; do IFS='|' read -r n res sec <<<"$r"; printf '%-56s %-30s %8s\n' "$n" "$res" "$sec"; done
  if ((tests_ran)); then
    # ctest's progress lines, not its JUnit file: they survive a run cut short by the timeout.
    awk '/^ *Start +[0-9]+: /{ n=$2; sub(/:/, "", n); nm=$0; sub(/^ *Start +[0-9]+: /, "", nm); started[n]=nm }
      /^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: /{
      n=$3; gsub(/[#:]/, "", n); delete started[n]; line=$0; sec=$(NF-1); sub(/^ *[0-9]+\/[0-9]+ +Test +#[0-9]+: /, "", line); sub(/ +[0-9.]+ sec *$/, "", line)
      if (i = index(line, "***")) { res=substr(line, i+3); name=substr(line, 1, i-1) }
      else { res=line; sub(/.* /, "", res); name=substr(line, 1, length(line)-length(res)) }
      sub(/ \.* *$/, "", name); if (length(name) > 54) name=substr(name, 1, 51) "..."
      if (res == "Skipped") skipped++
      printf "  %-54s %-30s %8s\n", name, res, sec }
      END { for (n in started) printf "  %-54s %-30s %8s\n", started[n], "did not finish", "-"
        if (skipped && gpu != "") print "  " skipped " skipped on a machine with a GPU: read tests.log" }' gpu="$gpu" "$log/tests.log"
    echo "== $(grep -E 'tests passed|No tests were found' "$log/tests.log" | head -1 || echo 'ctest stopped before its summary')"
  fi
  echo "== total $((SECONDS - t0)) s; $( ((failed)) && echo 'SOMETHING FAILED (see above)' || echo 'nothing failed')"
} | tee "$log/summary.txt"
exit $failed
