"""GPU check and benchmark of the trt-scatter kernels (SliceScatter, ScatterUpdate, TensorScatter (CacheScatter), and the
deterministic reductions ScatterElementsReduce and ScatterNDReduce), in one run.

Needs a CUDA GPU (e.g. an H100 or H200). ``bash bench/gpu_check.sh "$OUT"`` runs it together with
compute-sanitizer and the GPU tests, each step bounded in time; or directly::

    python3 bench/gpu_check.py --out DIR [--size-mb 256] [--quick | --sanitize] [--no-bench] [--no-torch]

Everything goes through ``trt_scatter.plugins.kernels``, the launch code that plugin ``enqueue`` uses:
buffers from ``cuMemAlloc``, a stream from ``cuStreamCreate``. Its phases, each written to
``<out>/gpu_check.json`` and ``<out>/gpu_check.md`` as soon as it ends (a fault or a timeout keeps
what came before):

1. machine: device, driver, NVRTC, SMs, L2;
2. compile: every instantiation cold (NVRTC -> CUBIN for this device) and timed, then loaded: its
   registers and local memory per thread;
3. correctness against the oracle through both entry points of each kernel (the Python plugins' and
   the AOT one): every element size and index type, copy path and in place, valid and invalid inputs
   in both, launch grids forced small (every grid-stride loop takes many passes) and cases larger
   than one wave of the launcher's own grid; the reductions with repeated targets, every element type
   their kernels combine (the AOT entry: int32, int64); exits 1 if any case is wrong;
   then determinism: each reduction op launched ``--determinism-runs`` (100) times on sums whose rounding
   depends on their order, grids cycling: one output, bit for bit, the oracle's (torch's float-atomic
   ``index_add_`` on the same buffers beside it, for comparison);
4. benchmarks of production launches (no error counter), float32 and 1- and 2-byte elements, first
   and last axis, contiguous and strided, 1/10/50 % of data updated: the copy path against
   ``cuMemcpyDtoD`` of the same bytes, in place against the copy path, and torch (``slice_scatter``,
   a slice's ``copy_``, ``index_copy``/``index_copy_``) on the same buffers, stream and timer, with
   int64 indices on both sides; the AOT entry in place for 4-byte elements; every output is checked
   against the oracle;
5. KV cache: TensorScatter in place into a float16 cache [64, 8, 4096, 128] (smaller with ``--size-mb`` below 256),
   a one-token decode and a 16-token prefill, each batch row at its own position and all at one, through the Python
   plugins' entry and the AOT entry, against one launch's latency (the same kernel through the same entry writing one
   element) and, for the plugins' entry, torch on the same buffers and stream (``index_copy_`` where every row writes
   at one position, ``index_put_`` with a batch and a position index otherwise); every output checked;
6. the reductions against torch (ScatterNDReduce in place; index_add_ and scatter_reduce_ amax/mean, with
   their atomics and with ``torch.use_deterministic_algorithms(True)``) on the same buffers: 10M updates into
   1M targets of 64 floats, and a GNN's 1M edges into 100k nodes of 128 features (scaled by ``--size-mb``);
   each output checked against the oracle on sampled targets and bit-identical over two runs;
7. Python time per launch call with its driver calls, and without them.

Timing: each repetition first queues a memset of 4x the L2 size on the stream. It evicts the L2 and
keeps the GPU busy while the host queues the start event and the launch, so the events time the
kernel alone, from DRAM, not the Python that queues it.

A sticky CUDA error (a faulting kernel poisons the context: every later call fails) ends the run:
the phase, op, sizes and case are recorded under ``fault``, the results so far are written, exit 3.

The script imports without a GPU; tests run it on the CPU: its pure parts directly, and all of it
behind the real cuda-bindings with the project's stand-in driver (tests/kernel_shim/fakecuda.c).
"""

import argparse
import ctypes
import datetime
import functools
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import traceback
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = Path(os.environ["OUT"]) if os.environ.get("OUT") else ROOT / "bench" / "results"
ELEMENT_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype(np.float16), 4: np.dtype(np.float32), 8: np.dtype(np.int64)}
BENCH_ELEMENT_SIZES = (4, 1, 2)
ROW_BYTES = 16 << 10  # benchmark tensors: rows of 16 KB, as many as the size gives
FAULT_EXIT = 3
GOALS = {"copy_bw_vs_memcpy": 0.85, "in_place_speedup_at_1pct": 20, "torch_over_ours": 1.5, "python_us_per_launch": 20,
         "decode_over_launch": 3,
         "reduction_over_torch_atomic": 2.0, "torch_deterministic_over_reduction": 1.5}
KV_CACHE_SHAPE = (64, 8, 4096, 128)  # batch, heads, positions, head dim: float16, 512 MiB

# The kernel instantiations the check compiles, times and loads: both entry points of each op, the
# Python plugins' (one by-value struct) and the AOT plugins' (an argument list). Another entry point
# adds its instantiations here and its launcher to RUNNERS below.
ENTRY_SUFFIXES = {"struct": "", "aot": "_aot"}
REDUCE_OPS = ("scatter_elements_reduce", "scatter_nd_reduce")
INSTANTIATIONS = [(f"slice_scatter{suffix}", e, None) for suffix in ENTRY_SUFFIXES.values() for e in (1, 2, 4, 8)] + [
    (f"{op}{suffix}", e, i) for op in ("scatter_update",) + REDUCE_OPS for suffix in ENTRY_SUFFIXES.values() for e in (1, 2, 4, 8)
    for i in (4, 8)
] + [(f"tensor_scatter{suffix}", e, None) for suffix in ENTRY_SUFFIXES.values() for e in (1, 2, 4, 8)]


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for gpu_check.json and gpu_check.md (default: $OUT)")
    parser.add_argument("--size-mb", type=int, default=256,
                        help="size of the benchmarks' data tensor in MB (default 256: 5x an H100's L2; 1 for rehearsals)")
    parser.add_argument("--reps", type=int, default=10, help="timed repetitions per measurement (median reported)")
    parser.add_argument("--cases", type=int, default=12, help="random correctness cases per configuration")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="small correctness cases only (for racecheck)")
    parser.add_argument("--sanitize", action="store_true",
                        help="for compute-sanitizer memcheck: every correctness case kind, large ones included, and every "
                             "benchmark configuration once at <= 16 MB, checked, untimed; no torch")
    parser.add_argument("--no-bench", action="store_true", help="skip the benchmarks")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch comparison")
    parser.add_argument("--torch-device", default="cuda",
                        help="torch's device for the comparison (cpu: for the CPU stand-in driver, whose memory is host memory)")
    parser.add_argument("--overhead-launches", type=int, default=2000, help="launch calls per Python-overhead measurement")
    parser.add_argument("--determinism-runs", type=int, default=100, help="launches of each reduction op whose outputs must be bit-identical")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="kernel cache folder (default: a new temporary one, so compile times are cold)")
    args = parser.parse_args(argv)
    if args.size_mb < 1:
        parser.error("--size-mb must be at least 1")
    if args.quick:
        args.no_bench, args.no_torch, args.cases, args.determinism_runs = True, True, min(args.cases, 3), min(args.determinism_runs, 3)
    if args.sanitize:
        args.size_mb, args.reps, args.cases = min(args.size_mb, 16), 1, min(args.cases, 4)
        args.no_torch, args.overhead_launches, args.determinism_runs = True, 0, min(args.determinism_runs, 2)
    return args


def import_kernels():
    """``trt_scatter.plugins.kernels`` from this checkout, whether or not the package is installed.

    Without an install, ``trt_scatter.plugins`` (the top-level ``plugins/`` folder) is registered by
    hand, skipping ``plugins/__init__.py`` if that cannot import here (e.g. no TensorRT).
    """
    if str(ROOT) not in sys.path:
        sys.path.insert(0, str(ROOT))
    try:
        from trt_scatter.plugins import kernels
    except Exception:
        import trt_scatter

        package = types.ModuleType("trt_scatter.plugins")
        package.__path__ = [str(ROOT / "plugins")]
        sys.modules["trt_scatter.plugins"] = trt_scatter.plugins = package
        from trt_scatter.plugins import kernels
    return kernels


def launcher(name):
    """``launch_<op>`` or ``launch_<op>_aot`` of the op's kernel module, ``trt_scatter.plugins.<op>`` (import_kernels first)."""
    import importlib

    op = name.removeprefix("launch_").removesuffix("_aot")
    return getattr(importlib.import_module(f"trt_scatter.plugins.{op}"), name)


class Relaunch:
    """A ``kernels.device`` whose launches use another grid, block or SM count than the launcher
    chose. The kernels grid-stride, so they must be right for any grid; a small one makes every
    loop take many passes."""

    def __init__(self, device, grid=None, block=None, sm_count=None):
        self.device, self.grid, self.block, self.sm_count = device, grid, block, sm_count

    def __getattr__(self, name):
        return getattr(self.device, name)

    def kernel(self, *key):
        function, sm_count = self.device.kernel(*key)
        return function, self.sm_count or sm_count

    def launch(self, function, grid, block, stream, params_address):
        self.device.launch(function, self.grid or grid, self.block or block, stream, params_address)


class PhaseEvents:
    """A ``kernels.device`` that records a CUDA event before each reduction launch, with the launch's phase (read from
    its packed ScatterReduceArgs), so that one run's GPU time splits into the sort (keys, count, scan, place) and the
    reduction. The events sit between launches on one stream: they time the launches, not the host."""

    def __init__(self, device, cuda, stream):
        from trt_scatter.plugins import reductions

        self.device, self.cuda, self.driver, self.stream = device, cuda, cuda.driver(), stream
        self.phase_offset = reductions.ScatterReduceArgs.phase.offset
        self.marks = []  # (event, phase)

    def __getattr__(self, name):
        return getattr(self.device, name)

    def launch(self, function, grid, block, stream, params_address):
        event = self.cuda.check(self.driver.cuEventCreate(0), "cuEventCreate")
        self.cuda.check(self.driver.cuEventRecord(event, stream), "cuEventRecord")
        args = ctypes.c_void_p.from_address(params_address).value  # kernelParams[0]: the packed struct
        self.marks.append((event, ctypes.c_int32.from_address(args + self.phase_offset).value))
        self.device.launch(function, grid, block, stream, params_address)

    def phase_ms(self):
        """``{phase name: ms}`` of the launches recorded since the last call, each phase's launches summed."""
        from trt_scatter.plugins import reductions

        names = {code: name for name, code in reductions.PHASES.items()}
        end = self.cuda.check(self.driver.cuEventCreate(0), "cuEventCreate")
        self.cuda.check(self.driver.cuEventRecord(end, self.stream), "cuEventRecord")
        self.cuda.check(self.driver.cuEventSynchronize(end), "cuEventSynchronize")
        phases = {}
        events = [event for event, _ in self.marks] + [end]
        for (event, phase), following in zip(self.marks, events[1:]):
            ms = self.cuda.check(self.driver.cuEventElapsedTime(event, following), "cuEventElapsedTime")
            phases[names[phase]] = phases.get(names[phase], 0.0) + ms
        for event in events:
            self.driver.cuEventDestroy(event)
        self.marks = []
        return phases

    def split_ms(self):
        """``{"sort_ms", "reduce_ms", "launches"}`` of the launches recorded since the last call."""
        launches = len(self.marks)
        phases = self.phase_ms()
        return {"sort_ms": round(sum(ms for name, ms in phases.items() if name != "reduce"), 4),
                "reduce_ms": round(phases.get("reduce", 0.0), 4), "launches": launches}


class DeviceFault(Exception):
    """A sticky CUDA error: the context is unusable and the run must stop. ``record`` says where."""

    def __init__(self, record):
        super().__init__(record.get("error"))
        self.record = record


def context_error(cuda):
    """None while the CUDA context works, else the error ``cuCtxSynchronize`` reports (after a kernel
    fault every call fails: that error is sticky)."""
    try:
        cuda.check(cuda.driver().cuCtxSynchronize(), "cuCtxSynchronize")
    except cuda.CudaError as error:
        return str(error)
    return None


# ---------------------------------------------------------------------------------------------
# Correctness cases (pure NumPy)


def _bound(rng, dim, dtype):
    info = np.iinfo(dtype)
    if rng.integers(0, 5) == 0:
        return int(rng.choice([info.min, info.max, info.min + 1, info.max - 1]))
    return int(rng.integers(-dim - 3, dim + 4))


def random_slice_scatter_case(rng, element_size, param_dtype, max_elements=200_000, broken=False, entry="struct"):
    """A random SliceScatter case as a dict; ``broken``: updates one longer on some axis."""
    from trt_scatter import oracle

    rank = int(rng.integers(1, 7))
    shape = [int(rng.integers(1, 9)) for _ in range(rank)]
    shape[-1] = int(rng.choice([shape[-1], 300, 2048]))
    while math.prod(shape) > max_elements:
        shape[shape.index(max(shape))] //= 2
    num_axes = int(rng.integers(0, rank + 1))
    default_axes = rng.integers(0, 3) == 0
    if default_axes:
        axes = list(range(num_axes))
    else:
        axes = [int(a) - rank if rng.integers(0, 2) else int(a) for a in rng.permutation(rank)[:num_axes]]
    start = [_bound(rng, shape[a], param_dtype) for a in axes]
    stop = [_bound(rng, shape[a], param_dtype) for a in axes]
    step = [int(rng.choice([-3, -2, -1, 1, 1, 2, 3, np.iinfo(param_dtype).max])) for _ in axes]
    updates_shape = list(shape)
    for i, axis in enumerate(axes):
        if oracle.slice_geometry(start[i], stop[i], step[i], shape[axis])[1] == 0 and rng.integers(0, 4):
            start[i], stop[i] = stop[i], start[i]  # mostly non-empty slices
        updates_shape[axis] = oracle.slice_geometry(start[i], stop[i], step[i], shape[axis])[1]
    if broken:
        updates_shape[int(rng.integers(0, rank))] += 1
    return slice_scatter_case(rng, element_size, param_dtype, shape, updates_shape, start, stop, step,
                              None if default_axes else axes, broken)


def slice_scatter_case(rng, element_size, param_dtype, shape, updates_shape, start, stop, step, axes, broken=False):
    dtype = ELEMENT_DTYPES[element_size]
    return {
        "data": _random_bits(rng, shape, dtype), "updates": _random_bits(rng, updates_shape, dtype),
        "start": list(start), "stop": list(stop), "step": list(step), "axes": axes,
        "param_dtype": np.dtype(param_dtype), "broken": bool(broken),
    }


def random_scatter_update_case(rng, element_size, index_dtype, max_elements=200_000, broken=False, entry="struct"):
    """A random ScatterUpdate case: unique in-range indices plus some out-of-range ones; ``broken``:
    an axis out of range."""
    rank = int(rng.integers(1, 6))
    shape = [int(rng.integers(1, 9)) for _ in range(rank)]
    shape[-1] = int(rng.choice([shape[-1], 300, 2048]))
    while math.prod(shape) > max_elements:
        shape[shape.index(max(shape))] //= 2
    axis = int(rng.integers(0, rank))
    indices_shape = [int(rng.integers(1, 4)) for _ in range(int(rng.integers(0, min(3, 9 - rank) + 1)))]
    size, count = shape[axis], math.prod(indices_shape)
    valid = [int(v) for v in rng.permutation(size)[: int(rng.integers(0, min(size, count) + 1))]]
    info = np.iinfo(index_dtype)
    invalid = [int(rng.choice([-1, size, size + 5, info.min, info.max])) for _ in range(count - len(valid))]
    values = rng.permutation(np.array(valid + invalid, dtype=np.int64)) if count else np.zeros(0, np.int64)
    indices = values.astype(index_dtype).reshape(indices_shape)
    return scatter_update_case(rng, element_size, shape, indices, axis, broken=broken,
                               device_axis=axis - rank if rng.integers(0, 2) else axis)


def scatter_update_case(rng, element_size, shape, indices, axis, broken=False, device_axis=None):
    rank = len(shape)
    updates_shape = list(shape[:axis]) + list(indices.shape) + list(shape[axis + 1 :])
    dtype = ELEMENT_DTYPES[element_size]
    return {
        "data": _random_bits(rng, shape, dtype), "indices": indices, "updates": _random_bits(rng, updates_shape, dtype),
        "axis": rank if broken else (axis if device_axis is None else device_axis), "normalized_axis": axis,
        "broken": bool(broken),
    }


def random_tensor_scatter_case(rng, element_size, index_dtype, max_elements=200_000, broken=False, entry="struct"):
    """A random TensorScatter case: rank 2-5, any axis but 0, both modes, write indices of ``index_dtype`` (sometimes
    none) with some batch rows out of range (skipped and counted); ``broken``: an update one longer than the cache on
    the axis (nothing written, one error)."""
    rank = int(rng.integers(2, 6))
    shape = [int(rng.integers(1, 7)) for _ in range(rank)]
    shape[-1] = int(rng.choice([shape[-1], 300, 2048]))
    while math.prod(shape) > max_elements:
        shape[shape.index(max(shape))] //= 2
    axis = int(rng.integers(1, rank))
    mode = str(rng.choice(["linear", "circular"]))
    size = shape[axis]
    count = int(rng.integers(0, size + 1))
    indices = None
    if rng.integers(0, 4):
        high = 3 * size if mode == "circular" else size - count
        values = [int(rng.integers(0, high + 1)) if rng.integers(0, 5) else int(rng.choice([-1, size - count + 1, np.iinfo(index_dtype).max]))
                  for _ in range(shape[0])]
        indices = np.array(values, np.int64).astype(index_dtype)
    return tensor_scatter_case(rng, element_size, shape, size + 1 if broken else count, axis, mode, indices, broken)


def tensor_scatter_case(rng, element_size, shape, count, axis, mode, indices, broken=False):
    update_shape = list(shape)
    update_shape[axis] = count
    dtype = ELEMENT_DTYPES[element_size]
    return {"data": _random_bits(rng, shape, dtype), "updates": _random_bits(rng, update_shape, dtype), "write_indices": indices,
            "axis": axis, "mode": mode, "broken": bool(broken)}


def _random_bits(rng, shape, dtype):
    bits = rng.integers(0, 256, size=math.prod(shape) * dtype.itemsize, dtype=np.uint8)
    return bits.view(dtype).reshape(shape)


def large_cases(op, element_size, index_dtype, sm_count, block, blocks_per_sm, seed=0, entry="struct"):
    """Cases larger than one wave of the launcher's own grid (``sm_count * blocks_per_sm`` blocks of
    ``block`` threads), one per loop of the kernels, so each grid-stride loop takes several passes:
    long rows (the tile loop), short rows (the unit loop), one element per row, many indices."""
    blocks = sm_count * blocks_per_sm
    wave = blocks * block
    rng = np.random.default_rng([seed, element_size, np.dtype(index_dtype).itemsize])
    row = 4096 // element_size  # 4 KB rows: one tile each
    cases = []
    if op == "tensor_scatter":
        positions = np.arange(3 * blocks + 1) % 3
        cases.append(("long rows: one 4 KB entry per batch row, 3 waves of blocks of rows",
                      tensor_scatter_case(rng, element_size, (3 * blocks + 1, 3, row), 1, 1, "linear", positions.astype(index_dtype))))
        positions = (np.arange(4 * wave // 8 + 1) * 3).astype(index_dtype)  # past the end: they wrap
        cases.append(("short rows: 16-byte entries, 4 waves of units, circular",
                      tensor_scatter_case(rng, element_size, (4 * wave // 8 + 1, 2, 4, 16 // element_size), 3, 2, "circular", positions)))
        cases.append(("one element per entry: 2 waves of rows, no write indices",
                      tensor_scatter_case(rng, element_size, (2 * wave // 4, 4, 6, 1), 4, 2, "linear", None)))
        return cases
    if op == "slice_scatter":
        rows = 3 * blocks + 1
        cases.append(("long rows: every 2nd of 2x(3 waves of blocks) rows",
                      slice_scatter_case(rng, element_size, index_dtype, (2 * rows, row), (rows, row), [0], [2 * rows], [2], [0])))
        width = 64 // element_size  # 64-byte rows, half of each written: 2 units of 16 bytes
        cases.append(("short rows: half of each 64-byte row, 4 waves of units",
                      slice_scatter_case(rng, element_size, index_dtype, (2 * wave, width), (2 * wave, width // 2),
                                         [width // 2], [width], [1], [1])))
        cases.append(("one element per row: every 2nd column, 2 waves of rows",
                      slice_scatter_case(rng, element_size, index_dtype, (2 * wave, 2), (2 * wave, 1), [1], [2], [2], [-1])))
    elif op in REDUCE_OPS:
        dtype = _numpy_type(REDUCE_TYPES[entry][element_size][0])
        base = {"op": op, "axis": 0, "reduction": "add" if entry == "aot" else "mean", "include_self": 1 if entry == "aot" else 0,
                "broken": False}
        targets = max(1, wave // 4)
        if op == "scatter_nd_reduce":  # 3 waves of index rows of one element into a quarter wave of targets; then 256 B rows
            indices = rng.integers(0, targets, size=(3 * wave, 1)).astype(index_dtype)
            cases.append(("many rows: 3 waves of index rows into a quarter wave of targets",
                          {**base, "data": reduce_values(rng, (targets,), dtype), "indices": indices,
                           "updates": reduce_values(rng, (3 * wave,), dtype)}))
            width = 256 // element_size
            indices = rng.integers(0, blocks, size=(3 * blocks, 1)).astype(index_dtype)
            cases.append(("long rows: 3 waves of blocks of 256-byte rows into a wave of target rows",
                          {**base, "data": reduce_values(rng, (blocks, width), dtype), "indices": indices,
                           "updates": reduce_values(rng, (3 * blocks, width), dtype)}))
        else:  # every element its own row: 3 waves of positions into a quarter wave of elements
            indices = rng.integers(0, targets, size=(3 * wave,)).astype(index_dtype)
            cases.append(("many positions: 3 waves of updates into a quarter wave of elements",
                          {**base, "data": reduce_values(rng, (targets,), dtype), "indices": indices,
                           "updates": reduce_values(rng, (3 * wave,), dtype)}))
    else:
        rows = 3 * blocks + 1
        indices = rng.permutation(2 * rows)[:rows].astype(index_dtype)
        cases.append(("long rows: 3 waves of blocks of rows, axis 0", scatter_update_case(rng, element_size, (2 * rows, row), indices, 0)))
        indices = rng.permutation(3 * wave)[: 2 * wave].astype(index_dtype)
        cases.append(("many indices: 2 waves of indices of 1-element rows", scatter_update_case(rng, element_size, (3 * wave, 1), indices, 0)))
        indices = np.array([5, 0, 9, 3, 7], index_dtype)  # 9: out of range, skipped and counted
        cases.append(("last axis: 5 indices x 1 wave of rows, one out of range",
                      scatter_update_case(rng, element_size, (wave, 8), indices, 1, device_axis=-1)))
    return cases


def expected_tensor_scatter(case):
    """The oracle on the batch rows whose write index fits; the number of the others (skipped and counted)."""
    from trt_scatter import oracle

    data, updates, indices = case["data"], case["updates"], case["write_indices"]
    if case["broken"]:
        return data, 1
    if indices is None:
        return oracle.tensor_scatter(data, updates, None, case["axis"], case["mode"]), 0
    size, count = data.shape[case["axis"]], updates.shape[case["axis"]]
    wide = indices.astype(np.int64)
    fits = (wide >= 0) & ((wide <= size - count) | (case["mode"] == "circular"))
    expected = data.copy()
    if fits.any():
        expected[fits] = oracle.tensor_scatter(data[fits], updates[fits], wide[fits], case["axis"], case["mode"])
    return expected, int((~fits).sum())


def expected_slice_scatter(case):
    from trt_scatter import oracle

    if case["broken"]:
        return case["data"], 1
    return oracle.slice_scatter(case["data"], case["updates"], case["start"], case["stop"], case["step"], case["axes"]), 0


def expected_scatter_update(case):
    """The oracle on the in-range indices; the number of out-of-range ones."""
    from trt_scatter import oracle

    if case["broken"]:
        return case["data"], 1
    data, axis, flat = case["data"], case["normalized_axis"], case["indices"].reshape(-1)
    in_range = (flat >= 0) & (flat < data.shape[axis])
    rows = case["updates"].reshape(data.shape[:axis] + (flat.size,) + data.shape[axis + 1 :])
    expected = oracle.scatter_update(data, flat[in_range], np.compress(in_range, rows, axis=axis), case["axis"])
    return expected, int((~in_range).sum())


def describe_case(case):
    """What names a case in a report: shapes and parameters, without the arrays."""
    described = {"data_shape": list(case["data"].shape), "dtype": case["data"].dtype.name,
                 "updates_shape": list(case["updates"].shape), "broken": case["broken"]}
    for key in ("start", "stop", "step", "axes", "axis", "mode", "reduction", "include_self"):
        if key in case:
            described[key] = case[key]
    if case.get("write_indices") is not None:
        described["write_indices"] = {"dtype": case["write_indices"].dtype.name, "first": case["write_indices"][:8].tolist()}
    if "indices" in case:
        described["indices"] = {"shape": list(case["indices"].shape), "dtype": case["indices"].dtype.name,
                                "first": case["indices"].reshape(-1)[:8].tolist()}
    if "param_dtype" in case:
        described["param_dtype"] = case["param_dtype"].name
    return described


# ---------------------------------------------------------------------------------------------
# Running cases through the launch code (any device backend / memory with alloc, put, get, free)


def _launched(kernels, memory, stream, launch, arguments, entry, error_flag):
    """Launches through ``entry``: the plugins' struct entry with an error counter (``error_flag``),
    or the AOT entry, which has none (error count None)."""
    if entry == "aot":
        launcher(f"{launch}_aot")(**arguments)
        kernels.device.stream_synchronize(stream)
        return None
    flag = memory.put(np.array([0xDEAD], np.uint32)) if error_flag else 0  # stale: the launch must zero it
    launcher(launch)(**arguments, error_flag=flag)
    return kernels.check_error_flag(flag, stream)


def run_slice_scatter(kernels, memory, stream, case, in_place, error_flag=True, entry="struct"):
    data, updates = case["data"], case["updates"]
    output = memory.put(data) if in_place else memory.alloc(data.nbytes)
    param = case["param_dtype"]
    arguments = dict(
        output=output, data=0 if in_place else memory.put(data), updates=memory.put(updates),
        start=memory.put(np.asarray(case["start"], param)), stop=memory.put(np.asarray(case["stop"], param)),
        step=memory.put(np.asarray(case["step"], param)),
        axes=0 if case["axes"] is None else memory.put(np.asarray(case["axes"], np.int32)), num_axes=len(case["start"]),
        data_shape=data.shape, updates_shape=updates.shape, element_size=data.dtype.itemsize,
        param_itemsize=param.itemsize, axes_itemsize=4, stream=stream)
    count = _launched(kernels, memory, stream, "launch_slice_scatter", arguments, entry, error_flag)
    return memory.get(output, data.dtype, data.shape), count


def run_scatter_update(kernels, memory, stream, case, in_place, error_flag=True, entry="struct"):
    data, indices, updates = case["data"], case["indices"], case["updates"]
    output = memory.put(data) if in_place else memory.alloc(data.nbytes)
    arguments = dict(
        output=output, data=0 if in_place else memory.put(data), indices=memory.put(indices),
        updates=memory.put(updates), axis=memory.put(np.array([case["axis"]], np.int64)), data_shape=data.shape,
        indices_shape=indices.shape, element_size=data.dtype.itemsize, index_itemsize=indices.dtype.itemsize,
        axis_itemsize=8, stream=stream, updates_shape=updates.shape)
    count = _launched(kernels, memory, stream, "launch_scatter_update", arguments, entry, error_flag)
    return memory.get(output, data.dtype, data.shape), count


def run_tensor_scatter(kernels, memory, stream, case, in_place, error_flag=True, entry="struct"):
    data, updates, indices = case["data"], case["updates"], case["write_indices"]
    if entry == "aot" and indices is None:  # the AOT form always has write indices (passes.aot writes the zeros in)
        indices = np.zeros(data.shape[0], np.int64)
    output = memory.put(data) if in_place else memory.alloc(data.nbytes)
    arguments = dict(
        output=output, data=0 if in_place else memory.put(data), update=memory.put(updates),
        write_indices=0 if indices is None else memory.put(indices), data_shape=data.shape, update_shape=updates.shape,
        index_count=0 if indices is None else indices.size, axis=case["axis"], mode=case["mode"], element_size=data.dtype.itemsize,
        write_index_itemsize=8 if indices is None else indices.dtype.itemsize, stream=stream)
    count = _launched(kernels, memory, stream, "launch_tensor_scatter", arguments, entry, error_flag)
    return memory.get(output, data.dtype, data.shape), count


# ---- the reduction ops: repeated targets, out-of-range indices (skipped, counted), every element type

#: element types of the reduction cases by entry and element size (alternating per case): the AOT entry takes int32/int64
REDUCE_TYPES = {"struct": {1: ("int8", "uint8"), 2: ("float16", "bfloat16"), 4: ("float32", "int32"), 8: ("int64",)},
                "aot": {4: ("int32",), 8: ("int64",)}}


def entry_takes(op, entry, element_size):
    """Whether ``op``'s ``entry`` takes elements of this size (the reductions' AOT entry: int32 and int64 only)."""
    return op not in REDUCE_OPS or element_size in REDUCE_TYPES[entry]


def _numpy_type(name):
    if name == "bfloat16":
        import ml_dtypes

        return np.dtype(ml_dtypes.bfloat16)
    return np.dtype(name)


def reduce_values(rng, shape, dtype):
    """Values whose sums stay finite in every type (float16 sums of a few hundred of them included): floats of mixed
    sign and magnitude (2**-4 .. 2**8), integers in [-9, 9] (unsigned: [0, 9])."""
    if dtype.kind in "iu":
        return rng.integers(0 if dtype.kind == "u" else -9, 10, size=shape).astype(dtype)
    return (rng.standard_normal(size=shape) * np.exp2(rng.integers(-4, 6, size=shape))).astype(np.float32).astype(dtype)


def random_reduce_case(op, rng, element_size, index_dtype, max_elements=200_000, broken=False, entry="struct"):
    """A random ScatterElementsReduce (``op``) or ScatterNDReduce case with repeated targets; ``broken``: some indices out
    of range (skipped and counted)."""
    types = REDUCE_TYPES[entry][element_size]
    dtype = _numpy_type(types[int(rng.integers(len(types)))])
    rank = int(rng.integers(1, 5))
    shape = [int(rng.integers(1, 9)) for _ in range(rank)]
    shape[-1] = int(rng.choice([shape[-1], 64, 300]))
    while math.prod(shape) > max_elements:
        shape[shape.index(max(shape))] //= 2
    shape = tuple(shape)
    if op == "scatter_elements_reduce":
        axis = int(rng.integers(0, rank))
        indices_shape = tuple(int(rng.integers(1, 3 * n + 1)) if d == axis else int(rng.integers(1, n + 1)) for d, n in enumerate(shape))
        while math.prod(indices_shape) > max_elements:
            indices_shape = tuple(max(1, d // 2) for d in indices_shape)
        sizes, updates_shape = np.array([shape[axis]]), indices_shape
    else:
        axis, k = 0, int(rng.integers(0, rank + 1))
        rows = int(rng.integers(1, 4 * max(math.prod(shape[:k]), 1) + 1))
        while rows * math.prod(shape[k:]) > max_elements and rows > 1:
            rows //= 2
        indices_shape, sizes, updates_shape = (rows, k), np.array(shape[:k], np.int64), (rows,) + shape[k:]
    indices = rng.integers(-sizes, sizes, size=indices_shape) if sizes.size else np.zeros(indices_shape, np.int64)
    if broken and sizes.size:  # (k = 0 rows address all of data: no index to put out of range)
        info = np.iinfo(index_dtype)
        bad = rng.choice(np.array([-int(sizes.max()) - 1, int(sizes.max()), info.min, info.max], np.int64), size=indices_shape)
        indices = np.where(rng.random(indices_shape) < 0.1, bad, indices)
    disagree = broken and entry == "aot" and rng.random() < 0.5
    if disagree:  # shapes no model allows, which an engine still launches: the AOT kernel must write nothing
        indices, updates_shape = _disagreeing_reduce_shapes(rng, op, shape, axis, indices, updates_shape)
    reductions = ("add", "mul", "min", "max") if entry == "aot" else ("add", "mul", "min", "max", "mean")
    return {"op": op, "data": reduce_values(rng, shape, dtype), "indices": indices.astype(index_dtype),
            "updates": reduce_values(rng, updates_shape, dtype), "axis": axis, "reduction": str(rng.choice(reductions)),
            "include_self": 1 if entry == "aot" else int(rng.integers(0, 2)), "broken": bool(broken), "disagree": bool(disagree)}


def _disagreeing_reduce_shapes(rng, op, shape, axis, indices, updates_shape):
    """(indices, updates shape) that disagree with data: ScatterElementsReduce's indices past data off the axis, or
    updates one shorter on one axis (or one longer where that axis is empty)."""
    others = [d for d in range(len(shape)) if d != axis]
    if op == "scatter_elements_reduce" and others and rng.random() < 0.5:
        d = int(rng.choice(others))
        grown = tuple(shape[d] + 1 if i == d else n for i, n in enumerate(indices.shape))
        return rng.integers(-shape[axis], shape[axis], size=grown), grown
    d = int(rng.integers(len(updates_shape)))
    return indices, tuple((n - 1 if n else 1) if i == d else n for i, n in enumerate(updates_shape))


def expected_reduce(case):
    """The oracle on the in-range indices; how many positions (ScatterNDReduce: rows) are out of range."""
    from trt_scatter.oracle import reductions
    from trt_scatter.oracle.scatter_nd_reduce import scatter_nd_reduce

    data, indices, updates = case["data"], case["indices"].astype(np.int64), case["updates"]
    if case.get("disagree"):  # the AOT entry writes nothing (and counts nothing)
        return data.copy(), None
    if case["op"] == "scatter_nd_reduce":
        k = indices.shape[-1]
        lead = np.array(data.shape[:k], np.int64)
        valid = ((indices >= -lead) & (indices < lead)).all(axis=-1)
        return scatter_nd_reduce(data, indices[valid], updates[valid], case["reduction"], case["include_self"]), int((~valid).sum())
    size = data.shape[case["axis"]]
    valid = (indices >= -size) & (indices < size)
    coordinates = list(np.indices(indices.shape))
    coordinates[case["axis"]] = np.where(indices < 0, indices + size, indices)
    targets = np.ravel_multi_index(tuple(c[valid] for c in coordinates), data.shape)
    out = reductions.reduce_rows(data.reshape(-1, 1), targets, updates[valid].reshape(-1, 1), case["reduction"], case["include_self"])
    return out.reshape(data.shape), int((~valid).sum())


def run_reduce(kernels, memory, stream, case, in_place, error_flag=True, entry="struct"):
    """A reduction case through its launcher (the struct entry with a workspace of the op's size) or its AOT entry."""
    import importlib

    from trt_scatter.dtypes import name

    op, data, indices, updates = case["op"], case["data"], case["indices"], case["updates"]
    output = memory.put(data) if in_place else memory.alloc(data.nbytes)
    arguments = dict(output=output, data=0 if in_place else memory.put(data), indices=memory.put(indices), updates=memory.put(updates),
                     data_shape=data.shape, indices_shape=indices.shape, element_size=data.dtype.itemsize, element_type=name(data.dtype),
                     index_itemsize=indices.dtype.itemsize, reduction=case["reduction"], include_self=case["include_self"], stream=stream)
    if op == "scatter_elements_reduce":
        arguments["axis"] = case["axis"]
    if entry == "struct":
        size = importlib.import_module(f"trt_scatter.plugins.{op}").workspace_size([data.shape, indices.shape, updates.shape], [])
        arguments["workspace"] = memory.alloc(size) if size else 0
    else:
        arguments["updates_shape"] = updates.shape
    count = _launched(kernels, memory, stream, f"launch_{op}", arguments, entry, error_flag)
    return memory.get(output, data.dtype, data.shape), count


# op -> {entry point: runner}. Every case of an op runs through each of its entry points.
RUNNERS = {op: {entry: functools.partial(run, entry=entry) for entry in ENTRY_SUFFIXES}
           for op, run in (("slice_scatter", run_slice_scatter), ("scatter_update", run_scatter_update), ("tensor_scatter", run_tensor_scatter),
                           *((op, run_reduce) for op in REDUCE_OPS))}
CASE_MAKERS = {"slice_scatter": (random_slice_scatter_case, expected_slice_scatter),
               "scatter_update": (random_scatter_update_case, expected_scatter_update),
               "tensor_scatter": (random_tensor_scatter_case, expected_tensor_scatter),
               **{op: (functools.partial(random_reduce_case, op), expected_reduce) for op in REDUCE_OPS}}
# Launch configurations the random cases cycle through: the launcher's own, and small grids/blocks.
LAUNCHES = (None, {"grid": 1, "block": 32}, {"grid": 3, "block": 5}, {"sm_count": 1, "block": 1024})


def _run_case(kernels, memory, stream, run, expect, case, in_place, launch, cuda):
    """One case on the device; returns None if it matched the oracle, else what was wrong.
    Raises DeviceFault if the case left the context unusable."""
    device = kernels.device
    if launch:
        kernels.device = Relaunch(device, **launch)
    try:
        output, count = run(kernels, memory, stream, case, in_place)
        expected, expected_count = expect(case)
        element = f"u{case['data'].dtype.itemsize}"
        same = np.array_equal(output.view(element), expected.view(element))
        counted = count is None or count == expected_count  # None: an entry without an error counter
        return None if same and counted else f"equal={same} count={count} expected={expected_count}"
    except Exception as error:  # a failed launch is a failed case, reported
        problem = f"{type(error).__name__}: {error}"
        if cuda is not None and (fault := context_error(cuda)):
            raise DeviceFault({"error": problem, "context": fault}) from error
        return problem
    finally:
        kernels.device = device
        memory.free()


def check_correctness(kernels, memory, stream, cases=12, seed=0, max_elements=200_000, large=None, cuda=None, records=None):
    """Every element size x param/index type x entry point on random cases, copy path and in place,
    valid and invalid ones in both, the launch configuration cycling through LAUNCHES; then the
    ``large`` cases (``(sm_count, block, blocks_per_sm)`` of the launcher, or None: none). Returns
    one record per configuration with the number of failed cases and the first failure, appended
    to ``records`` as each configuration ends (so a fault keeps the ones before it)."""
    records = [] if records is None else records
    for op_index, (op, (make, expect)) in enumerate(CASE_MAKERS.items()):
        for entry, run in RUNNERS[op].items():
            for element_size in (1, 2, 4, 8):
                if not entry_takes(op, entry, element_size):
                    continue
                for index_type in (np.int32, np.int64):
                    failures, first, count = 0, None, 0
                    jobs = []
                    for i in range(cases):
                        key = [seed, op_index, element_size, np.dtype(index_type).itemsize, i]  # regenerates the case
                        broken = (i // 2) % 3 == 2  # copy path and in place alike
                        case = make(np.random.default_rng(key), element_size, index_type, max_elements=max_elements, broken=broken,
                                    entry=entry)
                        jobs.append((f"random {i}, rng {key}", case, bool(i % 2), LAUNCHES[(i // 2) % len(LAUNCHES)]))
                    # Large cases cost time: one index type per element size.
                    if large and index_type == (np.int32 if element_size in (1, 4) else np.int64):
                        for label, case in large_cases(op, element_size, index_type, *large, seed=seed, entry=entry):
                            jobs += [(f"large: {label}", case, in_place, None) for in_place in (False, True)]
                    for label, case, in_place, launch in jobs:
                        count += 1
                        try:
                            problem = _run_case(kernels, memory, stream, run, expect, case, in_place, launch, cuda)
                        except DeviceFault as fault:
                            fault.record.update(phase="correctness", op=op, entry=entry, element_size=element_size,
                                                index_type=np.dtype(index_type).name, case=label, in_place=in_place,
                                                launch=launch, **describe_case(case))
                            raise
                        if problem:
                            failures += 1
                            first = first or {"case": label, "in_place": in_place, "launch": launch, "problem": problem,
                                              **describe_case(case)}
                    records.append({"op": op, "entry": entry, "element_size": element_size,
                                    "index_type": np.dtype(index_type).name, "cases": count, "failed": failures,
                                    "first_failure": first})
    return records


# ---------------------------------------------------------------------------------------------
# GPU-only parts


class DeviceMemory:
    """cuMemAlloc'd buffers with NumPy upload/download; ``free`` releases them all."""

    def __init__(self, cuda):
        self.cuda, self.driver, self.addresses, self.free_errors = cuda, cuda.driver(), [], []

    def alloc(self, nbytes, fill=0xCD):
        address = int(self.cuda.check(self.driver.cuMemAlloc(max(1, nbytes)), "cuMemAlloc"))
        self.addresses.append(address)
        self.cuda.check(self.driver.cuMemsetD8(address, fill, max(1, nbytes)), "cuMemsetD8")
        return address

    def put(self, array):
        array = np.ascontiguousarray(array)
        address = self.alloc(array.nbytes)
        if array.nbytes:
            self.cuda.check(self.driver.cuMemcpyHtoD(address, array.ctypes.data, array.nbytes), "cuMemcpyHtoD")
        return address

    def get(self, address, dtype, shape):
        out = np.empty(shape, dtype)
        if out.nbytes:
            self.cuda.check(self.driver.cuMemcpyDtoH(out.ctypes.data, address, out.nbytes), "cuMemcpyDtoH")
        return out

    def free(self):
        """Frees every buffer; errors are kept, not raised: after a kernel fault the context refuses
        to free, and that fault (reported by its case) is what matters."""
        for address in self.addresses:
            try:
                self.cuda.check(self.driver.cuMemFree(address), "cuMemFree")
            except self.cuda.CudaError as error:
                self.free_errors.append(str(error))
        self.addresses = []


class Timer:
    """CUDA events on one stream: ``measure(fn, reps)`` -> (median ms of fn() on the GPU, median
    host us of the fn() call). Before each repetition a memset of ``flush_bytes`` evicts the L2 and
    keeps the GPU busy while the host queues the start event and fn()."""

    def __init__(self, cuda, stream, memory, flush_bytes):
        self.cuda, self.driver, self.stream = cuda, cuda.driver(), stream
        self.begin = cuda.check(self.driver.cuEventCreate(0), "cuEventCreate")
        self.end = cuda.check(self.driver.cuEventCreate(0), "cuEventCreate")
        self.flush_words = max(1, flush_bytes // 4)
        self.flush = memory.alloc(4 * self.flush_words)

    def _flush(self):
        self.cuda.check(self.driver.cuMemsetD32Async(self.flush, 0, self.flush_words, self.stream), "cuMemsetD32Async")

    def measure(self, fn, reps, flush=True):
        fn()  # warm-up (and compile, on first use)
        times, host = [], []
        for _ in range(reps):
            if flush:
                self._flush()
            self.cuda.check(self.driver.cuEventRecord(self.begin, self.stream), "cuEventRecord")
            started = time.perf_counter()
            fn()
            host.append(time.perf_counter() - started)
            self.cuda.check(self.driver.cuEventRecord(self.end, self.stream), "cuEventRecord")
            self.cuda.check(self.driver.cuEventSynchronize(self.end), "cuEventSynchronize")
            times.append(self.cuda.check(self.driver.cuEventElapsedTime(self.begin, self.end), "cuEventElapsedTime"))
        return statistics.median(times), statistics.median(host) * 1e6

    def flush_ms(self, reps=5):
        """GPU time of the flush memset itself: the host has this long to queue a measured call."""
        return self.measure(self._flush, reps, flush=False)[0]


def machine_info(cuda, kernels, with_torch=True):
    driver = cuda.driver()
    arch = cuda.device_arch()
    device = cuda.check(driver.cuCtxGetDevice(), "cuCtxGetDevice")
    name = cuda.check(driver.cuDeviceGetName(256, device), "cuDeviceGetName")
    info = {"device": name.split(b"\0")[0].decode(), "arch": f"sm_{arch}", "sms": cuda.sm_count(), "l2_bytes": machine_l2(cuda),
            "driver": cuda.check(driver.cuDriverGetVersion(), "cuDriverGetVersion"),
            "nvrtc": ".".join(map(str, cuda.nvrtc_version())), "nvrtc_options": " ".join(cuda.NVRTC_OPTIONS),
            "python": platform.python_version(), "numpy": np.__version__, "host": platform.node(),
            "date_utc": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M"),
            "block": kernels.BLOCK, "blocks_per_sm": kernels.BLOCKS_PER_SM}
    if with_torch:
        try:
            import torch

            info["torch"] = f"{torch.__version__} (cuda {torch.version.cuda}, available {torch.cuda.is_available()})"
        except ImportError:
            info["torch"] = "not importable"
    return info


def compile_times(cuda, device_arch):
    """Cold NVRTC time of every instantiation, for the arch the launcher loads on this device."""
    arch, records = cuda.target_arch(device_arch), []
    for kernel, element_size, index in INSTANTIATIONS:
        started = time.perf_counter()
        cuda.cubin(kernel, element_size, index, arch)
        records.append({"kernel": cuda.name_expression(kernel, element_size, index), "arch": arch,
                        "seconds": round(time.perf_counter() - started, 3)})
    return records


def kernel_resources(cuda):
    """Each instantiation loaded: registers and local memory per thread, shared memory per block (local memory in a
    memory-bound kernel costs bandwidth; the reductions keep 256 counters per thread in it while they sort; the AOT
    entries and SliceScatter plan once per block, in shared memory)."""
    driver, records = cuda.driver(), []
    attribute = driver.CUfunction_attribute
    for kernel, element_size, index in INSTANTIATIONS:
        function, _ = cuda.kernel(kernel, element_size, index)
        values = {name: cuda.check(driver.cuFuncGetAttribute(getattr(attribute, f"CU_FUNC_ATTRIBUTE_{key}"), function),
                                   "cuFuncGetAttribute")
                  for name, key in (("registers", "NUM_REGS"), ("local_bytes", "LOCAL_SIZE_BYTES"),
                                    ("shared_bytes", "SHARED_SIZE_BYTES"), ("max_threads_per_block", "MAX_THREADS_PER_BLOCK"))}
        records.append({"kernel": cuda.name_expression(kernel, element_size, index), **values})
    return records


# ---------------------------------------------------------------------------------------------
# Benchmarks


def benchmark_plan(size_mb, element_sizes=BENCH_ELEMENT_SIZES, in_place_fractions=(0.01, 0.1, 0.5),
                   copy_fractions=(0.01, 0.5), aot_element_sizes=(4,)):
    """The benchmark configurations (pure): for each element size, data of ``size_mb`` MB in rows
    of 16 KB; SliceScatter on the first axis (a block of rows, every s-th row) and the last (a
    block of columns, every s-th column: rows of one element), ScatterUpdate on the first axis
    (rows) and the last (columns), each updating a fraction of data, in place and on the copy path.
    ScatterUpdate runs with int64 indices (torch's index_copy needs them) and, in place, also int32.
    Then the AOT entry point (always in place: TensorRT aliases its output) for ``aot_element_sizes``."""
    plan = []
    for element_size in element_sizes:
        cols, rows = ROW_BYTES // element_size, (size_mb << 20) // ROW_BYTES
        for path, fractions in (("copy", copy_fractions), ("in place", in_place_fractions)):  # copy first: in place compares with it
            for fraction in fractions:
                k_rows, k_cols, stride = max(1, round(fraction * rows)), max(1, round(fraction * cols)), round(1 / fraction)
                common = {"element_size": element_size, "path": path, "fraction": fraction, "data_shape": (rows, cols)}
                for layout, dim, start, stop, step in (
                    ("axis 0, contiguous rows", 0, 0, k_rows, 1),
                    (f"axis 0, rows with step {stride}", 0, 0, rows, stride),
                    ("axis -1, contiguous columns", 1, 0, k_cols, 1),
                    (f"axis -1, columns with step {stride}", 1, 0, cols, stride),
                ):
                    count = len(range(start, stop, step))
                    plan.append({**common, "op": "slice_scatter", "layout": layout, "dim": dim, "start": start, "stop": stop,
                                 "step": step, "updates_shape": (count, cols) if dim == 0 else (rows, count)})
                for layout, dim, count in (("axis 0, rows", 0, k_rows), ("axis -1, columns", 1, k_cols)):
                    for index_itemsize in (8, 4) if path == "in place" else (8,):
                        plan.append({**common, "op": "scatter_update", "layout": layout, "dim": dim, "count": count,
                                     "index_itemsize": index_itemsize,
                                     "updates_shape": (count, cols) if dim == 0 else (rows, count)})
    plan += [{**entry, "entry": "aot"} for entry in plan if entry["element_size"] in aot_element_sizes
             and entry["path"] == "in place" and entry.get("index_itemsize", 8) == 8]
    return plan


def describe_entry(entry):
    index = f", int{8 * entry['index_itemsize']} indices" if entry["op"] == "scatter_update" else ""
    aot = " (AOT entry)" if entry.get("entry") == "aot" else ""
    return (f"{entry['op']}{aot} {entry['element_size']}-byte {entry['path']}, {entry['layout']}, "
            f"{entry['fraction']:.0%} of {entry['data_shape']}{index}")


def _indices(entry):
    size = entry["data_shape"][entry["dim"]]
    rng = np.random.default_rng([size, entry["count"]])
    return rng.permutation(size)[: entry["count"]].astype(f"i{entry['index_itemsize']}")


def expected_output(entry, data, updates):
    """The oracle's output for one benchmark configuration."""
    from trt_scatter import oracle

    if entry["op"] == "slice_scatter":
        return oracle.slice_scatter(data, updates, [entry["start"]], [entry["stop"]], [entry["step"]], [entry["dim"]])
    return oracle.scatter_update(data, _indices(entry), updates, entry["dim"])


class TorchSide:
    """torch on the same buffers and stream as the kernels, timed by the same Timer: the like-for-like
    comparison (``device`` "cpu": the stand-in driver's device memory is host memory)."""

    def __init__(self, torch, device, stream):
        self.torch, self.device = torch, device
        self.stream = torch.cuda.ExternalStream(stream) if device.startswith("cuda") else None

    def tensor(self, address, shape, element_size):
        """A torch tensor over ``address`` (not a copy) with ``element_size``'s torch dtype."""
        torch, dtype = self.torch, getattr(self.torch, ELEMENT_DTYPES[element_size].name)  # numpy's names are torch's here
        if self.stream is None:
            nbytes = math.prod(shape) * element_size
            array = np.ctypeslib.as_array((ctypes.c_uint8 * nbytes).from_address(address))
            return torch.from_numpy(array).view(dtype).reshape(shape)
        interface = {"shape": tuple(shape), "typestr": ELEMENT_DTYPES[element_size].str, "data": (address, False),
                     "version": 3, "strides": None}
        return torch.as_tensor(types.SimpleNamespace(__cuda_array_interface__=interface), device=self.device)

    def operation(self, entry, data, updates, output):
        """The torch call equal to one configuration: out-of-place for the copy path, in place into ``output``."""
        torch, dim = self.torch, entry["dim"]
        if entry["op"] == "slice_scatter":
            start, stop, step = entry["start"], entry["stop"], entry["step"]
            if entry["path"] == "copy":
                return "torch.slice_scatter", lambda: torch.slice_scatter(data, updates, dim, start, stop, step)
            view = output[(slice(None),) * dim + (slice(start, stop, step),)]

            def copy_into_slice():
                view.copy_(updates)
                return output

            return "slice copy_", copy_into_slice
        index = torch.from_numpy(_indices(entry).astype(np.int64)).to(self.device)
        if entry["path"] == "copy":
            return "Tensor.index_copy", lambda: data.index_copy(dim, index, updates)
        return "Tensor.index_copy_", lambda: output.index_copy_(dim, index, updates)

    def same_bits(self, a, b, element_size):
        view = {1: self.torch.uint8, 2: self.torch.int16, 4: self.torch.int32, 8: self.torch.int64}[element_size]
        return bool(self.torch.equal(a.view(view), b.view(view)))

    def run(self, fn):
        if self.stream is None:
            return fn()
        with self.torch.cuda.stream(self.stream):
            return fn()


def benchmarks(kernels, cuda, stream, size_mb, reps, torch_device=None, plan=None, seed=0, log=lambda row: None, rows=None):
    """Runs every configuration of ``plan`` (default: benchmark_plan(size_mb)); returns (rows,
    problems, timing facts). Rows are appended to ``rows`` and passed to ``log`` as they come.

    Each row: our time (production launch: no error counter) and the bytes it moves; the copy path
    also against ``cuMemcpyDtoD`` of data's bytes, in place also against the copy path of the same
    configuration; torch's time on the same buffers and its ratio to ours. Every output (ours and
    torch's) is compared with the oracle's."""
    driver = cuda.driver()
    plan = benchmark_plan(size_mb) if plan is None else plan
    memory = DeviceMemory(cuda)
    l2 = machine_l2(cuda)
    timer = Timer(cuda, stream, memory, 4 * l2)
    nbytes = max(math.prod(entry["data_shape"]) * entry["element_size"] for entry in plan)
    rng = np.random.default_rng(seed)
    host_data, host_updates = _random_bits(rng, (nbytes,), np.dtype(np.uint8)), _random_bits(rng, (nbytes,), np.dtype(np.uint8))
    data_pool, updates_pool, out = memory.put(host_data), memory.put(host_updates), memory.alloc(nbytes)
    torch_side = None
    if torch_device:
        import torch

        torch_side = TorchSide(torch, torch_device, stream)
    memcpy_ms, copy_ms, problems = {}, {}, []
    rows = [] if rows is None else rows
    flush_ms = timer.flush_ms()

    def memcpy(n):
        if n not in memcpy_ms:
            memcpy_ms[n] = timer.measure(lambda: cuda.check(driver.cuMemcpyDtoDAsync(out, data_pool, n, stream), "cuMemcpyDtoDAsync"), reps)[0]
        return memcpy_ms[n]

    for entry in plan:
        what = describe_entry(entry)
        try:
            row = _benchmark_row(kernels, cuda, memory, timer, stream, entry, reps, host_data, host_updates, data_pool,
                                 updates_pool, out, memcpy, copy_ms, torch_side, flush_ms)
            rows.append(row)
            log(row)
            if not row["correct"]:
                problems.append(f"{what}: output differs from the oracle's")
            if row.get("torch_error"):
                problems.append(f"{what}: torch failed: {row['torch_error']}")
            if row.get("torch_same_output") is False:
                problems.append(f"{what}: torch's output differs from ours (which matches the oracle's)")
        except Exception as error:
            fault = context_error(cuda)
            if fault:
                raise DeviceFault({"phase": "benchmarks", "case": what, "error": f"{type(error).__name__}: {error}",
                                   "context": fault, **{k: v for k, v in entry.items() if k != "layout"}}) from error
            problems.append(f"{what}: {type(error).__name__}: {error}")
            rows.append({"what": what, "error": f"{type(error).__name__}: {error}"})
            log(rows[-1])
    memory.free()
    return rows, problems, {"flush_ms": round(flush_ms, 4), "memcpy_ms_by_bytes": {str(k): round(v, 4) for k, v in memcpy_ms.items()}}


# ---------------------------------------------------------------------------------------------
# The reduction ops: determinism over many launches, and time against torch on the same buffers

#: (what, update rows, target rows, elements per row) at --size-mb 256; smaller sizes scale rows and targets
REDUCE_BENCH = (("10M updates into 1M targets of 64 floats", 10_000_000, 1_000_000, 64),
                ("GNN: 1M edges into 100k nodes of 128 features", 1_000_000, 100_000, 128))
#: (reduction, include_self, torch's call on the same buffers): PyG's sum, max and mean aggregations
REDUCE_TORCH = (("add", 1, "index_add_"), ("max", 0, "scatter_reduce_(amax, include_self=False)"),
                ("mean", 0, "scatter_reduce_(mean, include_self=False)"))


def reduction_plan(size_mb):
    """The reduction benchmarks (pure): each shape of REDUCE_BENCH (scaled by ``size_mb / 256``) with each of REDUCE_TORCH."""
    scale = min(1.0, size_mb / 256)
    return [{"what": what, "rows": max(1024, int(rows * scale)), "targets": max(64, int(targets * scale)), "columns": columns,
             "reduction": reduction, "include_self": include_self, "torch_op": torch_op}
            for what, rows, targets, columns in REDUCE_BENCH for reduction, include_self, torch_op in REDUCE_TORCH]


def _reduce_launch(stream, output, data, indices, updates, workspace, shape, entry, error_flag=0):
    """A launch of ScatterNDReduce (index rows of one index) with the arrays' device addresses; ``shape``: (rows, targets, columns)."""
    rows, targets, columns = shape
    return lambda: launcher("launch_scatter_nd_reduce")(
        output=output, data=data, indices=indices, updates=updates, workspace=workspace, data_shape=(targets, columns),
        indices_shape=(rows, 1), element_size=4, element_type="float32", index_itemsize=8, reduction=entry["reduction"],
        include_self=entry["include_self"], error_flag=error_flag, stream=stream)


def _sampled_check(output, data, indices, updates, reduction, include_self, rng, count=256):
    """Whether ``output`` has the oracle's bits on ``count`` random target rows (their updates in ascending position)."""
    from trt_scatter.oracle import reductions

    targets = np.sort(rng.choice(data.shape[0], size=min(count, data.shape[0]), replace=False))
    rows = np.flatnonzero(np.isin(indices, targets))
    expected = reductions.reduce_rows(data[targets], np.searchsorted(targets, indices[rows]), updates[rows], reduction, include_self)
    return bool(np.array_equal(output[targets].view(np.uint32), expected.view(np.uint32)))


def determinism(kernels, cuda, stream, runs=100, size_mb=256, seed=0, torch_device=None):
    """Each reduction op ``runs`` times on one input whose float sums depend on their order (magnitudes 2**-20 .. 2**20),
    the launch configuration cycling through LAUNCHES (and the GPU running blocks in whatever order it does): the
    number of different outputs (1: bit-identical) and whether the output is the oracle's. Beside it, the same for
    torch's ``index_add_`` on the same buffers (float atomics on a GPU)."""
    import hashlib

    from trt_scatter.oracle.scatter_elements_reduce import scatter_elements_reduce
    from trt_scatter.oracle.scatter_nd_reduce import scatter_nd_reduce

    rng = np.random.default_rng([seed, 7])
    rows, targets, columns = max(2000, 200_000 * size_mb // 256), 1000, 16
    records = []
    device = kernels.device
    for op in REDUCE_OPS:
        memory = DeviceMemory(cuda)
        shape = (rows, columns) if op == "scatter_nd_reduce" else (rows,)
        data = np.zeros((targets, columns) if op == "scatter_nd_reduce" else (targets,), np.float32)
        indices = rng.integers(0, targets, size=(rows, 1) if op == "scatter_nd_reduce" else (rows,))
        updates = (rng.standard_normal(shape) * np.exp2(rng.integers(-20, 20, size=shape))).astype(np.float32)
        arguments = dict(output=memory.alloc(data.nbytes), data=memory.put(data), indices=memory.put(indices), updates=memory.put(updates),
                         data_shape=data.shape, indices_shape=indices.shape, element_size=4, element_type="float32", index_itemsize=8,
                         reduction="add", include_self=1, error_flag=0, stream=stream)
        if op == "scatter_elements_reduce":
            arguments["axis"] = 0
        size = importlib_module(op).workspace_size([data.shape, indices.shape, updates.shape], [])
        arguments["workspace"] = memory.alloc(size)
        digests, output = set(), None
        for run in range(runs):
            launch = LAUNCHES[run % len(LAUNCHES)]
            kernels.device = Relaunch(device, **launch) if launch else device
            try:
                launcher(f"launch_{op}")(**arguments)
            finally:
                kernels.device = device
            output = memory.get(arguments["output"], np.float32, data.shape)
            digests.add(hashlib.sha256(output.tobytes()).hexdigest())
        oracle = scatter_nd_reduce(data, indices, updates) if op == "scatter_nd_reduce" else scatter_elements_reduce(data, indices, updates)
        record = {"op": op, "runs": runs, "shape": f"{rows} updates into {targets} targets" + (f" of {columns}" if op == "scatter_nd_reduce" else ""),
                  "distinct_outputs": len(digests), "identical": len(digests) == 1,
                  "oracle": bool(np.array_equal(output.view(np.uint32), oracle.view(np.uint32)))}
        if torch_device and op == "scatter_nd_reduce":
            try:
                import torch

                side = TorchSide(torch, torch_device, stream)
                base = side.tensor(arguments["data"], data.shape, 4)
                index = side.tensor(arguments["indices"], (rows,), 8)
                source = side.tensor(arguments["updates"], updates.shape, 4)
                outputs = {side.run(lambda base=base, index=index, source=source: base.clone().index_add_(0, index, source)).cpu().numpy().tobytes() for _ in range(runs)}
                record["torch_index_add_distinct_outputs"] = len(outputs)
            except Exception as error:  # torch's failure is not ours
                if context_error(cuda):
                    raise
                record["torch_error"] = f"{type(error).__name__}: {error}"
        records.append(record)
        memory.free()
    return records


def importlib_module(op):
    import importlib

    return importlib.import_module(f"trt_scatter.plugins.{op}")


def reduction_benchmarks(kernels, cuda, stream, size_mb, reps, torch_device=None, seed=0, log=lambda row: None, rows=None):
    """Every configuration of :func:`reduction_plan`: ours (ScatterNDReduce, in place, production launches), checked
    against the oracle on sampled targets and bit-identical over two runs; torch's call on the same buffers, stream
    and timer with its atomics and with ``torch.use_deterministic_algorithms(True)``."""
    rows = [] if rows is None else rows
    memory = DeviceMemory(cuda)
    timer = Timer(cuda, stream, memory, 4 * machine_l2(cuda))
    driver = cuda.driver()
    side = None
    if torch_device:
        import torch

        side = TorchSide(torch, torch_device, stream)
    rng = np.random.default_rng([seed, 11])
    device = kernels.device
    prepared = {}
    for entry in reduction_plan(size_mb):
        shape = (entry["rows"], entry["targets"], entry["columns"])
        if shape not in prepared:  # one set of buffers per shape
            for buffers in prepared.values():
                buffers["memory"].free()
            prepared.clear()
            buffers_memory = DeviceMemory(cuda)
            data = rng.standard_normal((shape[1], shape[2]), dtype=np.float32)
            indices = rng.integers(0, shape[1], size=shape[0])
            updates = rng.standard_normal((shape[0], shape[2]), dtype=np.float32)
            size = importlib_module("scatter_nd_reduce").workspace_size([data.shape, (shape[0], 1), updates.shape], [])
            prepared[shape] = dict(memory=buffers_memory, host=(data, indices, updates), data=buffers_memory.put(data),
                                   indices=buffers_memory.put(indices), updates=buffers_memory.put(updates),
                                   output=buffers_memory.alloc(data.nbytes), workspace=buffers_memory.alloc(size))
        buffers = prepared[shape]
        data, indices, updates = buffers["host"]
        data_bytes = data.nbytes

        def reset(buffers=buffers, data_bytes=data_bytes):
            cuda.check(driver.cuMemcpyDtoDAsync(buffers["output"], buffers["data"], data_bytes, stream), "cuMemcpyDtoDAsync")

        ours = _reduce_launch(stream, buffers["output"], 0, buffers["indices"], buffers["updates"], buffers["workspace"], shape, entry)
        row = {k: entry[k] for k in ("what", "reduction", "include_self", "torch_op")}
        try:
            reset()
            ms, host_us = timer.measure(ours, reps)
            outputs = []
            for _ in range(2):
                reset()
                ours()
                outputs.append(memory.get(buffers["output"], np.float32, data.shape))
            row.update(ms=round(ms, 4), host_us=round(host_us, 1), identical=bool(np.array_equal(outputs[0].view(np.uint32), outputs[1].view(np.uint32))),
                       correct=_sampled_check(outputs[0], data, indices, updates, entry["reduction"], entry["include_self"], rng))
            reset()
            timer._flush()
            kernels.device = events = PhaseEvents(device, cuda, stream)
            try:
                ours()
            finally:
                kernels.device = device
            row.update(events.split_ms())
            passes = -(-shape[1].bit_length() // 8)
            moved = shape[0] * 8 + passes * 40 * shape[0] + updates.nbytes + 2 * data_bytes
            row["GB/s"] = round(moved / ms / 1e6, 1)
        except Exception as error:
            if context_error(cuda):
                raise DeviceFault({"phase": "reduction benchmarks", "case": entry["what"], "error": f"{type(error).__name__}: {error}",
                                   "context": context_error(cuda)}) from error
            row["error"] = f"{type(error).__name__}: {error}"
        if side is not None and "ms" in row:
            row.update(_torch_reduction(side, timer, entry, reps, buffers, shape, reset, row["ms"]))
        rows.append(row)
        log(row)
    for buffers in prepared.values():
        buffers["memory"].free()
    memory.free()
    return rows


def _torch_reduction(side, timer, entry, reps, buffers, shape, reset, ours_ms):
    """torch's call for ``entry`` on our buffers, timed with its atomics and deterministic: ms and ratios (or the error)."""
    torch = side.torch
    rows, targets, columns = shape
    output = side.tensor(buffers["output"], (targets, columns), 4)
    index = side.tensor(buffers["indices"], (rows,), 8)
    source = side.tensor(buffers["updates"], (rows, columns), 4)
    if entry["reduction"] == "add":
        call = lambda: output.index_add_(0, index, source)  # noqa: E731
    else:
        expanded = index.view(-1, 1).expand(-1, columns)
        reduce = {"max": "amax", "mean": "mean"}[entry["reduction"]]
        call = lambda: output.scatter_reduce_(0, expanded, source, reduce, include_self=bool(entry["include_self"]))  # noqa: E731
    row = {}
    for mode, deterministic in (("atomic", False), ("deterministic", True)):
        previous = torch.are_deterministic_algorithms_enabled()
        try:
            torch.use_deterministic_algorithms(deterministic)
            reset()
            ms, _ = timer.measure(lambda: side.run(call), reps)
            row[f"torch_{mode}_ms"] = round(ms, 4)
        except Exception as error:  # e.g. an op without a deterministic implementation: torch's, recorded
            row[f"torch_{mode}_error"] = f"{type(error).__name__}: {str(error).splitlines()[0][:200]}"
        finally:
            torch.use_deterministic_algorithms(previous)
    if "torch_atomic_ms" in row:
        row["ours_over_torch_atomic"] = round(ours_ms / row["torch_atomic_ms"], 2)
    if "torch_deterministic_ms" in row:
        row["torch_deterministic_over_ours"] = round(row["torch_deterministic_ms"] / ours_ms, 2)
    return row


def machine_l2(cuda):
    driver = cuda.driver()
    device = cuda.check(driver.cuCtxGetDevice(), "cuCtxGetDevice")
    return int(cuda.check(driver.cuDeviceGetAttribute(driver.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE, device),
                          "cuDeviceGetAttribute"))


def _benchmark_row(kernels, cuda, memory, timer, stream, entry, reps, host_data, host_updates, data_pool, updates_pool, out,
                   memcpy, copy_ms, torch_side, flush_ms):
    element_size, shape, updates_shape = entry["element_size"], entry["data_shape"], entry["updates_shape"]
    dtype = ELEMENT_DTYPES[element_size]
    data_bytes, updates_bytes = math.prod(shape) * element_size, math.prod(updates_shape) * element_size
    data = host_data[:data_bytes].view(dtype).reshape(shape)
    updates = host_updates[:updates_bytes].view(dtype).reshape(updates_shape)
    in_place = entry["path"] == "in place"
    driver = cuda.driver()

    def reset():  # in place: the output holds data before the timed (idempotent) launches
        cuda.check(driver.cuMemcpyDtoDAsync(out, data_pool, data_bytes, stream), "cuMemcpyDtoDAsync")

    if entry["op"] == "slice_scatter":
        params = [memory.put(np.array([entry[key]], np.int64)) for key in ("start", "stop", "step")]
        args = dict(output=out, data=0 if in_place else data_pool, updates=updates_pool, start=params[0], stop=params[1],
                    step=params[2], axes=memory.put(np.array([entry["dim"]], np.int64)), num_axes=1, data_shape=shape,
                    updates_shape=updates_shape, element_size=element_size, param_itemsize=8, axes_itemsize=8,
                    error_flag=0, stream=stream)
        launch = "launch_slice_scatter"
        index_bytes = 0
    else:
        indices = _indices(entry)
        args = dict(output=out, data=0 if in_place else data_pool, indices=memory.put(indices), updates=updates_pool,
                    axis=memory.put(np.array([entry["dim"]], np.int64)), data_shape=shape, indices_shape=indices.shape,
                    element_size=element_size, index_itemsize=entry["index_itemsize"], axis_itemsize=8, error_flag=0,
                    stream=stream, updates_shape=updates_shape)
        launch = "launch_scatter_update"
        index_bytes = indices.nbytes  # read once from DRAM (re-reads hit the caches)
    if entry.get("entry") == "aot":  # the AOT entry has no error counter
        launch += "_aot"
        del args["error_flag"]
    launch = launcher(launch)
    if in_place:
        reset()
    else:
        base = memcpy(data_bytes)  # before ours: it writes the output buffer too
    ms, host_us = timer.measure(lambda args=args: launch(**args), reps)
    expected = expected_output(entry, data, updates)
    output = memory.get(out, dtype, shape)
    bits = f"u{element_size}"
    row = {"what": describe_entry(entry), "op": entry["op"], "element_size": element_size, "path": entry["path"],
           "layout": entry["layout"], "fraction": entry["fraction"], "ms": round(ms, 4), "host_us": round(host_us, 1),
           "correct": bool(np.array_equal(output.view(bits), expected.view(bits)))}
    moved = 2 * updates_bytes + index_bytes + (0 if in_place else 2 * data_bytes)
    row["GB/s"] = round(moved / ms / 1e6, 1)
    key = (entry["op"], element_size, entry["layout"], entry["fraction"], entry.get("index_itemsize"))
    if in_place:
        row["updated_GB/s"] = round(2 * updates_bytes / ms / 1e6, 1)
        if key in copy_ms:
            row["speedup_vs_copy"] = round(copy_ms[key] / ms, 2)
    else:
        copy_ms[key] = ms
        row["memcpy_ms"] = round(base, 4)
        row["bw_vs_memcpy"] = round((moved / ms) / (2 * data_bytes / base), 3)
    if torch_side is not None and entry.get("entry") != "aot" and (entry["op"] == "slice_scatter" or entry["index_itemsize"] == 8):
        try:
            row.update(_torch_row(torch_side, timer, entry, reps, data_pool, updates_pool, out, shape, updates_shape,
                                  element_size, reset if in_place else None, ms))
        except Exception as error:  # torch's failure is not ours: keep our row, unless the context is gone
            if context_error(cuda):
                raise
            row["torch_error"] = f"{type(error).__name__}: {error}"
    if host_us > flush_ms * 1e3:
        row["note"] = "host slower than the flush: GPU idle between events"
    return row


def _torch_row(side, timer, entry, reps, data_pool, updates_pool, out, shape, updates_shape, element_size, reset, ours_ms):
    data = side.tensor(data_pool, shape, element_size)
    updates = side.tensor(updates_pool, updates_shape, element_size)
    ours = side.tensor(out, shape, element_size).clone()  # our verified output
    output = side.tensor(out, shape, element_size)
    if reset is not None:
        reset()
    name, operation = side.operation(entry, data, updates, output)
    ms, _ = timer.measure(lambda: side.run(operation), reps)
    result = side.run(operation)
    return {"torch_op": name, "torch_ms": round(ms, 4), "torch_over_ours": round(ms / ours_ms, 2),
            "torch_same_output": side.same_bits(result, ours, element_size)}


def kv_cache_plan(size_mb):
    """The KV-cache configurations (pure): float16 TensorScatter in place into KV_CACHE_SHAPE (its positions cut to fit
    ``size_mb`` when that is below 256), written on axis 2: a one-token decode and a 16-token prefill, each batch row at
    its own position ("per row") and every row at one ("one position", what a static cache's index_copy_ writes); each
    through the Python plugins' entry ("struct"), then through the AOT entry (what an engine of AOT plugins launches)."""
    batch, heads, positions, dim = KV_CACHE_SHAPE
    if size_mb < 256:
        positions = min(positions, max(32, (size_mb << 20) // (batch * heads * dim * 2)))
    plan = []
    for entry in ("struct", "aot"):
        for tokens in (1, 16):
            for positions_kind in ("per row", "one position"):
                plan.append({"op": "tensor_scatter", "cache_shape": (batch, heads, positions, dim), "tokens": tokens, "entry": entry,
                             "positions": positions_kind, "step": "decode" if tokens == 1 else f"prefill of {tokens}"})
    return plan


def _kv_positions(entry):
    batch, _, size, _ = entry["cache_shape"]
    rng = np.random.default_rng([batch, size, entry["tokens"]])
    if entry["positions"] == "one position":
        return np.full(batch, int(rng.integers(0, size - entry["tokens"] + 1)), np.int64)
    return rng.integers(0, size - entry["tokens"] + 1, batch).astype(np.int64)


def kv_cache_benchmarks(kernels, cuda, stream, size_mb, reps, torch_device=None, plan=None, seed=0, log=lambda row: None):
    """Runs every KV-cache configuration: our in-place launch (production: no error counter) timed with CUDA events after
    an L2 flush, against one launch's latency (the same kernel through the same entry on a one-element cache, timed the
    same way) and, for the plugins' entry, against torch on the same buffers and stream; outputs compared with the
    oracle's. Returns (rows, problems)."""
    plan = kv_cache_plan(size_mb) if plan is None else plan
    memory = DeviceMemory(cuda)
    timer = Timer(cuda, stream, memory, 4 * machine_l2(cuda))
    launches = {"struct": launcher("launch_tensor_scatter"), "aot": launcher("launch_tensor_scatter_aot")}
    flags = {"struct": {"error_flag": 0}, "aot": {}}  # the AOT entry counts nothing
    tiny = memory.put(np.zeros((1, 1, 1, 1), np.float16))
    tiny_update, tiny_index = memory.put(np.ones((1, 1, 1, 1), np.float16)), memory.put(np.zeros(1, np.int64))
    tiny_args = dict(output=tiny, data=0, update=tiny_update, write_indices=tiny_index, data_shape=(1, 1, 1, 1), update_shape=(1, 1, 1, 1),
                     index_count=1, axis=2, mode="linear", element_size=2, write_index_itemsize=8, stream=stream)
    launch_ms = {entry: timer.measure(lambda entry=entry: launches[entry](**tiny_args, **flags[entry]), reps)[0] for entry in launches}
    torch_side = None
    if torch_device:
        import torch

        torch_side = TorchSide(torch, torch_device, stream)
    rng = np.random.default_rng(seed)
    rows, problems = [], []
    for entry in plan:
        shape, tokens = entry["cache_shape"], entry["tokens"]
        update_shape = shape[:2] + (tokens,) + shape[3:]
        cache = _random_bits(rng, shape, np.dtype(np.float16))
        update = _random_bits(rng, update_shape, np.dtype(np.float16))
        positions = _kv_positions(entry)
        kind = entry.get("entry", "struct")
        launch = launches[kind]
        what = f"KV cache {list(shape)} float16, {entry['step']}, {entry['positions']}" + (", AOT entry" if kind == "aot" else "")
        try:
            out, update_pool, index = memory.put(cache), memory.put(update), memory.put(positions)
            args = dict(output=out, data=0, update=update_pool, write_indices=index, data_shape=shape, update_shape=update_shape,
                        index_count=shape[0], axis=2, mode="linear", element_size=2, write_index_itemsize=8, stream=stream, **flags[kind])
            ms, host_us = timer.measure(lambda args=args, launch=launch: launch(**args), reps)
            from trt_scatter import oracle

            expected = oracle.tensor_scatter(cache, update, positions, 2)
            correct = bool(np.array_equal(memory.get(out, np.float16, shape).view(np.uint16), expected.view(np.uint16)))
            moved = 2 * update.nbytes + positions.nbytes
            row = {"what": what, "ms": round(ms, 4), "launch_ms": round(launch_ms[kind], 4), "over_launch": round(ms / launch_ms[kind], 2),
                   "goal": GOALS["decode_over_launch"] if tokens == 1 else "", "bytes_moved": moved, "GB/s": round(moved / ms / 1e6, 2),
                   "host_us": round(host_us, 1), "correct": correct}
            if torch_side is not None and kind == "struct":  # torch's side does not depend on our entry
                row.update(_torch_kv_row(torch_side, timer, entry, reps, out, update_pool, positions, shape, update_shape, ms))
            if not correct:
                problems.append(f"{what}: output differs from the oracle's")
            if row.get("torch_same_output") is False:
                problems.append(f"{what}: torch's output differs from ours (which matches the oracle's)")
        except Exception as error:
            fault = context_error(cuda)
            if fault:
                raise DeviceFault({"phase": "kv cache", "case": what, "error": f"{type(error).__name__}: {error}", "context": fault}) from error
            row = {"what": what, "error": f"{type(error).__name__}: {error}"}
            problems.append(f"{what}: {row['error']}")
        rows.append(row)
        log(row)
        memory.free()  # a cache of 512 MiB at a time; the timer's flush buffer goes with it: a new timer
        memory = DeviceMemory(cuda)
        timer = Timer(cuda, stream, memory, 4 * machine_l2(cuda))
    memory.free()
    return rows, problems


def _torch_kv_row(side, timer, entry, reps, out, update_pool, positions, shape, update_shape, ours_ms):
    """torch's write of the same update into the same cache buffer, on the same stream: ``index_copy_`` where every row
    writes at one position, else ``index_put_`` (advanced indexing with a batch and a position index)."""
    torch = side.torch
    cache, update = side.tensor(out, shape, 2), side.tensor(update_pool, update_shape, 2)
    ours = cache.clone()
    tokens = update_shape[2]
    if entry["positions"] == "one position":
        index = torch.arange(tokens, device=cache.device) + int(positions[0])
        name, operation = "Tensor.index_copy_", lambda: cache.index_copy_(2, index, update)
    else:
        rows = torch.arange(shape[0], device=cache.device)[:, None]
        columns = torch.from_numpy(positions).to(cache.device)[:, None] + torch.arange(tokens, device=cache.device)[None, :]
        values = update.permute(0, 2, 1, 3)  # advanced indices first: (B, tokens, heads, dim)

        def index_put():  # cache[rows, :, columns] = values is index_put_ with a batch and a position index
            cache[rows, :, columns] = values
            return cache

        name, operation = "Tensor.index_put_", index_put
    ms, _ = timer.measure(lambda: side.run(operation), reps)
    return {"torch_op": name, "torch_ms": round(ms, 4), "torch_over_ours": round(ms / ours_ms, 2),
            "torch_same_output": side.same_bits(cache, ours, 2)}


class NoDriver:
    """A ``kernels.device`` whose driver calls do nothing: what is left of a launch is its Python."""

    def __init__(self, sm_count):
        self.sm_count = sm_count

    def kernel(self, *key):
        return None, self.sm_count

    def memset_u32_async(self, *args):
        pass

    def memcpy_dtod_async(self, *args):
        pass

    def launch(self, *args):
        pass


def python_overhead(kernels, cuda, stream, launches):
    """Host time per launch call on tiny tensors (the GPU keeps up, so this is the Python cost), with
    its driver calls (stream context, launch, and the copy's memcpy or the counter's memset) and,
    in the same run, without them. Plugin ``enqueue`` adds its own work on top:
    bench/bench_enqueue_overhead.py measures that part on any CPU."""
    memory = DeviceMemory(cuda)
    data, output, flag = memory.alloc(64 * 4), memory.alloc(64 * 4), memory.alloc(4)
    updates = memory.alloc(32 * 4)
    start, stop, step, axis = (memory.put(np.array([v], np.int64)) for v in (0, 64, 2, 0))
    indices = memory.put(np.arange(0, 64, 2, dtype=np.int64))
    slice_args = dict(output=output, updates=updates, start=start, stop=stop, step=step, axes=0, num_axes=1, data_shape=(64,),
                      updates_shape=(32,), element_size=4, param_itemsize=8, axes_itemsize=8, stream=stream)
    update_args = dict(output=output, indices=indices, updates=updates, axis=axis, data_shape=(64,), indices_shape=(32,),
                       element_size=4, index_itemsize=8, axis_itemsize=8, stream=stream, updates_shape=(32,))
    cases = (
        ("launch_slice_scatter, in place", launcher("launch_slice_scatter"), dict(slice_args, data=0, error_flag=0)),
        ("launch_slice_scatter, copy path", launcher("launch_slice_scatter"), dict(slice_args, data=data, error_flag=0)),
        ("launch_scatter_update, in place", launcher("launch_scatter_update"), dict(update_args, data=0, error_flag=0)),
        ("launch_slice_scatter, in place, debug counter", launcher("launch_slice_scatter"), dict(slice_args, data=0, error_flag=flag)),
    )
    records = []
    device = kernels.device
    for label, launch, args in cases:
        per_call = {}
        for driver_calls in (True, False):
            kernels.device = device if driver_calls else NoDriver(cuda.sm_count())
            try:
                rounds = []
                for _ in range(4):  # the first round warms up; the median of the other three
                    cuda.stream_synchronize(stream)
                    started = time.perf_counter()
                    for _ in range(launches):
                        launch(**args)
                    rounds.append((time.perf_counter() - started) / launches * 1e6)
                per_call[driver_calls] = statistics.median(rounds[1:])
                cuda.stream_synchronize(stream)
            finally:
                kernels.device = device
        records.append({"what": label, "us_per_call": round(per_call[True], 2), "python_only_us": round(per_call[False], 2),
                        "driver_calls_us": round(per_call[True] - per_call[False], 2), "goal_us": GOALS["python_us_per_launch"]})
    memory.free()
    return records


# ---------------------------------------------------------------------------------------------
# Report


def goals(results):
    """The kernels' goals against what was measured: (goal, worst measured, met) rows."""
    rows = []
    bench = [r for r in results.get("benchmarks", []) if "ms" in r]
    copy = [r["bw_vs_memcpy"] for r in bench if "bw_vs_memcpy" in r]
    if copy:
        rows.append(("copy path bandwidth >= 0.85x cuMemcpyDtoD's (on bytes moved)", min(copy), min(copy) >= GOALS["copy_bw_vs_memcpy"]))
    speedups = [r["speedup_vs_copy"] for r in bench if "speedup_vs_copy" in r and r["fraction"] == 0.01]
    if speedups:
        rows.append(("in place >= 20x faster than the copy path at 1 % updates", min(speedups),
                     min(speedups) >= GOALS["in_place_speedup_at_1pct"]))
    torch_ratios = [r["torch_over_ours"] for r in bench if "torch_over_ours" in r]
    if torch_ratios:
        rows.append(("torch time / ours >= 1.5 (same shapes, buffers, stream)", min(torch_ratios),
                     min(torch_ratios) >= GOALS["torch_over_ours"]))
    decode = [r["over_launch"] for r in results.get("kv_cache", []) if "over_launch" in r and r.get("goal")]
    if decode:
        rows.append(("one-token TensorScatter decode write into a [64, 8, 4096, 128] fp16 cache within 3x one launch's latency",
                     max(decode), max(decode) <= GOALS["decode_over_launch"]))
    reductions = [r for r in results.get("reduction_benchmarks", []) if "ms" in r]
    atomic = [r["ours_over_torch_atomic"] for r in reductions if "ours_over_torch_atomic" in r]
    if atomic:
        rows.append(("reductions: our time / torch's with atomics <= 2 (same buffers, stream)", max(atomic),
                     max(atomic) <= GOALS["reduction_over_torch_atomic"]))
    deterministic = [r["torch_deterministic_over_ours"] for r in reductions if "torch_deterministic_over_ours" in r]
    if deterministic:
        rows.append(("reductions: torch deterministic time / ours >= 1.5", min(deterministic),
                     min(deterministic) >= GOALS["torch_deterministic_over_reduction"]))
    runs = results.get("determinism") or []
    if runs:
        rows.append((f"reductions: one output over {runs[0]['runs']} launches (bit-identical), the oracle's",
                     max(r["distinct_outputs"] for r in runs), all(r["identical"] and r["oracle"] for r in runs)))
    overhead = [r["us_per_call"] for r in results.get("python_overhead", []) if "debug" not in r["what"]]
    if overhead:
        rows.append(("Python per launch call with driver calls <= 20 us", max(overhead), max(overhead) <= GOALS["python_us_per_launch"]))
    return rows


def _table(records, columns=None):
    if not records:
        return []
    if columns is None:
        columns = []
        for r in records:
            columns += [key for key in r if key not in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(_cell(r.get(c, "")) for c in columns) + " |" for r in records]
    return lines


def _cell(value):
    return "" if value is None else str(value).replace("|", "/")


def format_markdown(results):
    """The results dict as a Markdown report."""
    lines = ["# trt-scatter kernels: GPU check", ""]
    lines += [f"- {key}: {value}" for key, value in results.get("machine", {}).items()]
    if results.get("fault"):
        lines += ["", "## FAULT: a sticky CUDA error stopped the run", "", "```", json.dumps(results["fault"], indent=2, default=str), "```"]
    if results.get("phases"):
        lines += ["", "## Phases", ""] + _table([{"phase": k, **v} for k, v in results["phases"].items()])
    if results.get("goals"):
        lines += ["", "## Goals", ""] + _table([{"goal": g, "worst measured": m, "met": ok} for g, m, ok in results["goals"]])
    if "correctness" in results:
        lines += ["", "## Correctness (against trt_scatter.oracle)", ""]
        lines += _table(results["correctness"], ["op", "entry", "element_size", "index_type", "cases", "failed", "first_failure"])
        lines += ["", f"All correct: {results.get('all_correct')}"]
    if results.get("compile"):
        lines += ["", "## Cold compile time per instantiation (NVRTC -> CUBIN)", ""] + _table(results["compile"])
    if results.get("resources"):
        lines += ["", "## Registers and local memory per thread, shared memory per block", ""] + _table(results["resources"])
    if results.get("benchmarks"):
        lines += ["", "## Benchmarks (production launches; ms: median of CUDA-event times after an L2 flush)", ""]
        lines += _table([{k: v for k, v in r.items() if k not in ("op", "element_size", "path", "layout", "fraction")}
                         for r in results["benchmarks"]])
    if results.get("kv_cache"):
        lines += ["", "## KV cache: TensorScatter in place (ms: median of CUDA-event times after an L2 flush; launch_ms: the same kernel through the same entry writing one element)", ""]
        lines += _table(results["kv_cache"])
    if results.get("determinism"):
        lines += ["", "## Reductions: outputs over many launches (grids cycling; 1 distinct output = bit-identical)", ""]
        lines += _table(results["determinism"])
    if results.get("reduction_benchmarks"):
        lines += ["", "## Reductions against torch (ScatterNDReduce in place; ms: median of CUDA-event times after an L2 flush; "
                      "sort_ms and reduce_ms: one more run's launches timed apart, the sort's (keys, count, scan, place) and the reduction's)", ""]
        lines += _table(results["reduction_benchmarks"])
    if results.get("python_overhead"):
        lines += ["", "## Python per launch call (plugin enqueue adds bench/bench_enqueue_overhead.py's part)", ""]
        lines += _table(results["python_overhead"])
    if results.get("problems"):
        lines += ["", "## Problems", ""] + [f"- {p}" for p in results["problems"]]
    return "\n".join(lines) + "\n"


def write_results(results, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(results, indent=2, default=str))
    (out / "gpu_check.md").write_text(format_markdown(results))
    return out / "gpu_check.json", out / "gpu_check.md"


def main(argv=None):
    args = parse_args(argv)
    if args.cache_dir or os.environ.get("TRT_SCATTER_CACHE_DIR", "").strip():  # blank is unset, as the kernels read it
        os.environ["TRT_SCATTER_CACHE_DIR"] = str(args.cache_dir or os.environ["TRT_SCATTER_CACHE_DIR"])
        return check(args)
    with tempfile.TemporaryDirectory(prefix="trt-scatter-cache-") as cold:  # cold compile times, and nothing left behind
        os.environ["TRT_SCATTER_CACHE_DIR"] = cold
        try:
            return check(args)
        finally:
            del os.environ["TRT_SCATTER_CACHE_DIR"]


def check(args):
    """The whole check with ``args``, its kernel cache already chosen; returns the exit status."""
    kernels = import_kernels()
    cuda = kernels.cuda
    results = {"arguments": {k: str(v) for k, v in vars(args).items()}, "phases": {}, "problems": []}

    def phase(name, work):
        """Runs one phase and writes the results. An error that left the context unusable stops the
        run (DeviceFault); any other is recorded, and the run goes on with the next phase."""
        started = time.perf_counter()
        print(f"== {name}", flush=True)
        results["phases"][name] = {"seconds": None}
        try:
            return work()
        except DeviceFault as fault:
            fault.record.setdefault("phase", name)
            raise
        except Exception as error:
            traceback.print_exc()
            problem = f"{type(error).__name__}: {error}"
            if fault := context_error(cuda):
                raise DeviceFault({"phase": name, "error": problem, "context": fault}) from error
            results["problems"].append(f"phase {name}: {problem}")
            results["phases"][name]["error"] = problem
            return None
        finally:
            results["phases"][name]["seconds"] = round(time.perf_counter() - started, 2)
            write_results(results, args.out)

    try:
        results["machine"] = machine_info(cuda, kernels, with_torch=not args.no_torch)
    except cuda.CudaUnavailableError as error:
        print(f"gpu_check.py: needs a CUDA GPU: {error}", file=sys.stderr)
        return 2
    try:
        print(results["machine"], flush=True)
        arch = cuda.device_arch()
        results["compile"] = phase("compile", lambda: compile_times(cuda, arch))
        results["resources"] = phase("resources", lambda: kernel_resources(cuda))
        stream = int(cuda.check(cuda.driver().cuStreamCreate(0), "cuStreamCreate"))
        memory = DeviceMemory(cuda)
        large = None if args.quick else (cuda.sm_count(), kernels.BLOCK, kernels.BLOCKS_PER_SM)
        results["correctness"] = []
        phase("correctness", lambda: check_correctness(
            kernels, memory, stream, cases=args.cases, seed=args.seed, max_elements=2_000 if args.quick else 200_000,
            large=large, cuda=cuda, records=results["correctness"]))
        results["all_correct"] = bool(results["correctness"]) and all(r["failed"] == 0 for r in results["correctness"])
        print("all correct:", results["all_correct"], flush=True)
        results["determinism"] = phase("determinism", lambda: determinism(
            kernels, cuda, stream, runs=args.determinism_runs, size_mb=args.size_mb, seed=args.seed,
            torch_device=None if args.no_torch else args.torch_device)) or []
        results["problems"] += [f"determinism: {r['op']} gave {r['distinct_outputs']} different outputs in {r['runs']} launches"
                                for r in results["determinism"] if not r["identical"]]
        results["problems"] += [f"determinism: {r['op']}'s output is not the oracle's" for r in results["determinism"] if not r["oracle"]]
        if not args.no_bench:
            torch_device = None if args.no_torch else args.torch_device
            results["benchmarks"] = []

            def log(row):  # each row as it comes, and every 10 rows on disk
                print(json.dumps(row), flush=True)
                if len(results["benchmarks"]) % 10 == 0:
                    write_results(results, args.out)

            _, problems, results["timing"] = phase("benchmarks", lambda: benchmarks(
                kernels, cuda, stream, args.size_mb, args.reps, torch_device=torch_device, seed=args.seed, log=log,
                rows=results["benchmarks"])) or (None, [], None)
            results["problems"] += problems
            write_results(results, args.out)
            results["kv_cache"] = []

            def kv_log(row):
                print(json.dumps(row), flush=True)
                results["kv_cache"].append(row)

            kv_problems = phase("kv cache", lambda: kv_cache_benchmarks(
                kernels, cuda, stream, args.size_mb, args.reps, torch_device=torch_device, seed=args.seed, log=kv_log))
            results["problems"] += (kv_problems or (None, []))[1]
            results["reduction_benchmarks"] = []
            phase("reduction benchmarks", lambda: reduction_benchmarks(  # under memcheck: the smallest sizes
                kernels, cuda, stream, 1 if args.sanitize else args.size_mb, args.reps, torch_device=torch_device, seed=args.seed, log=log,
                rows=results["reduction_benchmarks"]))
            results["problems"] += [f"{r['what']} ({r['reduction']}): {'output differs from the oracle' if not r.get('correct') else 'two runs differ'}"
                                    for r in results["reduction_benchmarks"] if "ms" in r and not (r["correct"] and r["identical"])]
            results["problems"] += [f"{r['what']} ({r['reduction']}): {r['error']}" for r in results["reduction_benchmarks"] if "error" in r]
            if args.overhead_launches:
                results["python_overhead"] = phase("python overhead", lambda: python_overhead(kernels, cuda, stream, args.overhead_launches))
        results["goals"] = goals(results)
    except DeviceFault as fault:
        results["fault"] = fault.record
        write_results(results, args.out)
        print(f"FAULT: a sticky CUDA error stopped the run: {json.dumps(fault.record, default=str)}", file=sys.stderr, flush=True)
        return FAULT_EXIT
    paths = write_results(results, args.out)
    print(format_markdown(results))
    print("wrote", *paths)
    return 0 if results["all_correct"] and not results["problems"] else 1


if __name__ == "__main__":
    sys.exit(main())
