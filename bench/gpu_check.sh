#!/usr/bin/env bash
# The GPU check in one call, for a machine with a CUDA GPU (e.g. an H100 or H200: no TensorRT needed):
#
#   bash bench/gpu_check.sh OUT [arguments for every bench/gpu_check.py run]
#
# On a GPU machine, run exactly that one command (within 10 minutes, nothing to install beyond the
# working tree); OUT is the folder the results go to (default: the environment's $OUT), kept under
# bench/results/ with the device named.
# Measured on an H200 (bench/results/gpu_check_h200_2026-11-2*_*, the runs whose every step ran): 186-315 s in all. gpu_check.py
# 139-239 s (cold NVRTC of the 64 kernel instantiations 50-104 s, correctness 11-18 s, determinism 6-8 s, 126
# benchmark rows at 256 MB 46-67 s, each output checked against the oracle on the host, KV cache 9-12 s for its
# 8 rows through both entries (4-6 s for the 4 of the first three runs), 6 reduction rows against torch
# 15-22 s, Python overhead ~1 s), the GPU tests 25-47 s (with the AOT PTX compiles), memcheck 16-24 s,
# racecheck 6 s. (The same command on a 2-core CPU machine with the stand-in driver and --size-mb 1 takes
# about 90 s, 60 s of it NVRTC.) Each step is bounded (300/150/150/90 s) and the whole run by
# GPU_CHECK_BUDGET_S=540 s, so it ends, with its summary, inside 10 minutes even if a step hangs.
# Steps, in order of what matters most if time runs short:
#   1. bench/gpu_check.py: machine, cold NVRTC compile, correctness against the oracle, the reductions'
#      determinism over 100 launches, benchmarks (vs cuMemcpyDtoD, in place vs copy, vs torch; the reductions
#      vs torch with atomics and deterministic; the KV-cache decode write vs one launch's latency), Python per
#      launch -> gpu_check.{json,md} (rewritten after each phase, so a fault or a timeout keeps what came
#      before), its output in gpu_check.log;
#   2. tests/test_kernels_gpu.py (hypothesis cases against the oracle, guard bytes, offsets past 4 GiB)
#      with TRT_SCATTER_REQUIRE_GPU=1, so a skipped GPU test is a failure -> pytest_gpu.log;
#   3. compute-sanitizer memcheck on gpu_check.py --sanitize (every case kind, large ones included, every
#      benchmark configuration at 16 MB) -> memcheck.log;
#   4. compute-sanitizer racecheck on gpu_check.py --quick -> racecheck.log.
# summary.md says, per step: ok, FAILED, TIMED OUT, or UNAVAILABLE (compute-sanitizer missing, or refusing
# the device), with its seconds; and the device, driver and commit. 7 files, all directly in OUT.
# Exit status 0 only if every step is ok. The summary is printed last.
#
# Environment: PYTHON (default python3); COMPUTE_SANITIZER (else searched where CUDA installs it);
# GPU_CHECK_BUDGET_S (540); GPU_CHECK_STEPS (default "check tests memcheck racecheck": which steps run, e.g.
# to re-run one after a fix); TRT_SCATTER_CACHE_DIR (kernel cache; default a new empty folder, so compile
# times are cold); GPU_CHECK_PYTEST_ARGS (more pytest arguments, e.g. a --deselect).
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-${OUT:-}}"
if [ -z "$out" ]; then
    echo "gpu_check.sh: the output folder must be given (or OUT set): bash bench/gpu_check.sh gpu_check_results" >&2
    exit 2
fi
shift $(($# > 0 ? 1 : 0))
mkdir -p "$out"
out="$(cd "$out" && pwd)"
python="$(command -v "${PYTHON:-python3}")" || { echo "gpu_check.sh: no Python at ${PYTHON:-python3}" >&2; exit 2; }
case "$python" in /*) ;; *) python="$PWD/$python" ;; esac
repo="$PWD"
budget="${GPU_CHECK_BUDGET_S:-540}"
steps=" ${GPU_CHECK_STEPS:-check tests memcheck racecheck} "
started=$SECONDS
status=0
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# Without an install, trt_scatter.plugins (the folder plugins/) needs an overlay package.
overlay="$scratch/overlay"
mkdir -p "$overlay/trt_scatter"
for entry in trt_scatter/*; do ln -s "$PWD/$entry" "$overlay/trt_scatter/"; done
ln -s "$PWD/plugins" "$overlay/trt_scatter/plugins"
ln -s "$PWD/networks" "$overlay/trt_scatter/networks"
export PYTHONUNBUFFERED=1 PYTHONPATH="$overlay${PYTHONPATH:+:$PYTHONPATH}"
cache="${TRT_SCATTER_CACHE_DIR:-$scratch/cache}"  # empty: the first run's compile times are cold; later runs reuse it
mkdir -p "$cache"
export TRT_SCATTER_CACHE_DIR="$cache"

summary="$out/summary.md"
{
    echo "# GPU check summary"
    echo
    echo "- date (UTC): $(date -u '+%Y-%m-%d %H:%M')"
    if commit="$(git rev-parse --short HEAD 2>/dev/null)"; then
        git diff --quiet HEAD 2>/dev/null || commit="$commit, with uncommitted changes"
    else
        commit="unknown (no git repository here)"
    fi
    echo "- commit: $commit"
    echo "- host: $(uname -n), $(uname -r)"
    if command -v nvidia-smi >/dev/null 2>&1; then
        echo "- nvidia-smi: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>&1 | head -n 4 | tr '\n' ';')"
    else
        echo "- nvidia-smi: not found"
    fi
    echo "- python: $("$python" -c 'import sys; print(sys.version.split()[0])' 2>&1)"
    echo "- arguments for gpu_check.py: ${*:-(none)}"
    echo
    echo "| step | result | seconds | log |"
    echo "| --- | --- | --- | --- |"
} >"$summary"

record() {  # step result seconds log
    echo "| $1 | $2 | $3 | $4 |" >>"$summary"
    case "$2" in ok*) ;; *) status=1 ;; esac
}

time_left() {  # seconds this step may take: its own bound, within what is left of the budget
    local left=$((budget - (SECONDS - started)))
    echo $(($1 < left ? $1 : left))
}

run_step() {  # name bound log command...: runs the command under `timeout`, output to log;
    # sets step_code (its exit code; empty if no time was left for it) and step_seconds
    local name=$1 bound log=$3 step_started=$SECONDS
    bound=$(time_left "$2")
    shift 3
    step_code="" step_seconds=0
    if [ "$bound" -lt 5 ]; then
        echo "no time left for $name in the ${budget}s budget" >"$out/$log"
        return
    fi
    echo "== $name (at most ${bound}s)"
    timeout --kill-after=10 "$bound" "$@" >"$out/$log" 2>&1
    step_code=$?
    step_seconds=$((SECONDS - step_started))
    tail -n 5 "$out/$log"
}

result() {  # the result column for step_code, through the verdict function $1 (with the log $2)
    if [ -z "$step_code" ]; then
        echo "SKIPPED: no time left in the ${budget}s budget"
    else
        "$1" "$step_code" "${2:-}"
    fi
}

verdict() {  # exit code -> result column
    case "$1" in
        0) echo ok ;;
        124 | 137) echo "TIMED OUT" ;;
        3) echo "FAILED: a sticky CUDA error (fault) stopped it: see the log" ;;
        *) echo "FAILED (exit $1)" ;;
    esac
}

# 1. correctness and benchmarks
if [[ "$steps" == *" check "* ]]; then
    run_step "gpu_check.py" 300 gpu_check.log "$python" bench/gpu_check.py --out "$out" --cache-dir "$cache" "$@"
    record "gpu_check.py" "$(result verdict)" "$step_seconds" gpu_check.log
fi

# 2. the GPU tests; a skip is a failure here. Run from the scratch folder, so that the checkout's
# trt_scatter/ (without plugins) is not on sys.path before the overlay.
if [[ "$steps" == *" tests "* ]]; then
    # shellcheck disable=SC2086
    run_step "tests/test_kernels_gpu.py" 150 pytest_gpu.log bash -c 'cd "$0" && exec "$@"' "$scratch" \
        env TRT_SCATTER_REQUIRE_GPU=1 "$python" -m pytest -q -rs -p no:cacheprovider --rootdir "$repo" \
        "$repo/tests/test_kernels_gpu.py" ${GPU_CHECK_PYTEST_ARGS:-}
    record "tests/test_kernels_gpu.py (TRT_SCATTER_REQUIRE_GPU=1)" "$(result verdict)" "$step_seconds" pytest_gpu.log
fi

# 3-4. compute-sanitizer: found where CUDA installs it, or a failure that says where it was looked for
find_sanitizer() {
    local candidate nvcc
    nvcc="$(command -v nvcc 2>/dev/null || true)"
    for candidate in "${COMPUTE_SANITIZER:-}" "$(command -v compute-sanitizer 2>/dev/null || true)" \
        ${CUDA_HOME:+"$CUDA_HOME/bin/compute-sanitizer"} ${CUDA_PATH:+"$CUDA_PATH/bin/compute-sanitizer"} \
        ${nvcc:+"$(dirname "$nvcc")/compute-sanitizer"} \
        /usr/local/cuda/bin/compute-sanitizer /usr/local/cuda/compute-sanitizer/compute-sanitizer \
        /usr/local/cuda-*/bin/compute-sanitizer /usr/local/cuda-*/compute-sanitizer/compute-sanitizer \
        /opt/nvidia/*/compute-sanitizer/compute-sanitizer \
        $("$python" -c 'import glob, sys; print(" ".join(p for e in sys.path for p in glob.glob(e + "/nvidia/*/compute-sanitizer/compute-sanitizer") + glob.glob(e + "/nvidia/*/bin/compute-sanitizer")))' 2>/dev/null); do
        if [ -n "$candidate" ] && [ -x "$candidate" ]; then
            echo "$candidate"
            return 0
        fi
    done
    return 1
}

sanitizer_verdict() {  # exit code, log -> result column. memcheck ends with "ERROR SUMMARY: N errors",
    # racecheck with "RACECHECK SUMMARY: N hazards displayed (E errors, W warnings)"
    local code=$1 log=$2 errors hazards
    errors="$(grep -Eo 'ERROR SUMMARY: [0-9]+ error' "$log" | tail -n 1 | grep -Eo '[0-9]+' || true)"
    hazards="$(grep -Eo 'RACECHECK SUMMARY: [0-9]+ hazard' "$log" | tail -n 1 | grep -Eo '[0-9]+' || true)"
    if [ "$code" -eq 124 ] || [ "$code" -eq 137 ]; then
        echo "TIMED OUT"
    elif grep -qiE '^=+ *(Error: )?.*(device not supported|not supported on this|unable to|failed to initialize)' "$log"; then
        echo "UNAVAILABLE: compute-sanitizer refused this device or could not start (see the log), exit $code"
    elif [ -z "$errors$hazards" ]; then
        echo "UNAVAILABLE: no summary (compute-sanitizer did not run the program to its end), exit $code"
    elif [ "${errors:-0}" -gt 0 ]; then
        echo "FAILED: $errors errors found"
    elif [ "${hazards:-0}" -gt 0 ]; then
        echo "FAILED: $hazards race hazards found"
    elif [ "$code" -ne 0 ]; then
        echo "FAILED: 0 errors found, but the program failed under the tool (exit $code)"
    else
        echo "ok: 0 errors"
    fi
}

sanitizer=""
[[ "$steps" != *" memcheck "* && "$steps" != *" racecheck "* ]] || sanitizer="$(find_sanitizer || true)"
for tool in memcheck racecheck; do
    [[ "$steps" == *" $tool "* ]] || continue
    if [ "$tool" = memcheck ]; then mode=--sanitize; bound=150; else mode=--quick; bound=90; fi
    if [ -z "$sanitizer" ]; then
        echo "compute-sanitizer not found (COMPUTE_SANITIZER, PATH, CUDA_HOME, CUDA_PATH, beside nvcc, /usr/local/cuda*, /opt/nvidia, Python's nvidia packages)" | tee "$out/$tool.log"
        record "compute-sanitizer $tool ($mode)" "UNAVAILABLE: compute-sanitizer not found" 0 "$tool.log"
        continue
    fi
    run_step "compute-sanitizer $tool" "$bound" "$tool.log" "$sanitizer" --tool "$tool" --error-exitcode 99 --print-limit 50 \
        "$python" bench/gpu_check.py "$mode" --out "$scratch/$tool" --cache-dir "$cache" "$@"
    [ -z "$step_code" ] || echo "compute-sanitizer: $sanitizer; exit code $step_code" >>"$out/$tool.log"
    record "compute-sanitizer $tool ($mode)" "$(result sanitizer_verdict "$out/$tool.log")" "$step_seconds" "$tool.log"
done

printf '\nTotal: %s s; exit status %s.\n' "$((SECONDS - started))" "$status" >>"$summary"
echo
cat "$summary"
exit $status
