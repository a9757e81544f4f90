#!/usr/bin/env bash
# The GPU check in one call, for a machine with a CUDA GPU (e.g. the lent H100/H200):
#   bash bench/gpu_check.sh [OUT]        (OUT defaults to bench/results)
# 1. bench/gpu_check.py: cold compile times, correctness of every instantiation against the
#    oracle, benchmarks (>= 256 MB) -> OUT/gpu_check.{json,md}, log in OUT/gpu_check.log;
# 2. compute-sanitizer memcheck on a small correctness run -> OUT/memcheck.log;
# 3. the GPU tests under tests/ (pytest, skipped elsewhere) -> OUT/pytest_gpu.log.
# Exits non-zero if any step fails.
set -uo pipefail
cd "$(dirname "$0")/.."
out="${1:-bench/results}"
mkdir -p "$out"
python="${PYTHON:-python3}"
# Without an install, trt_scatter.plugins (the folder plugins/) needs an overlay package.
overlay="$(mktemp -d)"
mkdir "$overlay/trt_scatter"
for entry in trt_scatter/*; do ln -s "$PWD/$entry" "$overlay/trt_scatter/"; done
ln -s "$PWD/plugins" "$overlay/trt_scatter/plugins"
ln -s "$PWD/networks" "$overlay/trt_scatter/networks"
export PYTHONUNBUFFERED=1 PYTHONPATH="$overlay${PYTHONPATH:+:$PYTHONPATH}"
status=0
cache="$(mktemp -d)"  # empty: the first run's compile times are cold; later runs reuse it
export TRT_SCATTER_CACHE_DIR="$cache"

"$python" bench/gpu_check.py --out "$out" --cache-dir "$cache" 2>&1 | tee "$out/gpu_check.log"
[ "${PIPESTATUS[0]}" -eq 0 ] || status=1

if command -v compute-sanitizer >/dev/null 2>&1; then
    compute-sanitizer --tool memcheck --error-exitcode 99 --leak-check no \
        "$python" bench/gpu_check.py --quick --out "$out/memcheck" --cache-dir "$cache" >"$out/memcheck.log" 2>&1
    code=$?
    echo "compute-sanitizer memcheck exit code: $code (0: no memory errors)" | tee -a "$out/memcheck.log"
    [ "$code" -eq 0 ] || status=1
else
    echo "compute-sanitizer not found: memcheck skipped" | tee "$out/memcheck.log"
fi

if "$python" -c "import pytest, hypothesis" 2>/dev/null; then
    # -P: no current folder on sys.path, so trt_scatter comes from the overlay (with plugins)
    "$python" -P -m pytest -q -p no:cacheprovider tests/test_kernels_gpu.py 2>&1 | tee "$out/pytest_gpu.log"
    [ "${PIPESTATUS[0]}" -eq 0 ] || status=1
fi
exit $status
