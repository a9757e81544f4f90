"""GPU check and benchmark of the SliceScatter / ScatterUpdate kernels, in one run.

Needs a CUDA GPU (e.g. the lent H100/H200); run it with ``bash bench/gpu_check.sh`` (which adds a
compute-sanitizer memcheck run) or directly::

    python3 bench/gpu_check.py --out bench/results/ [--size-mb 512] [--quick] [--no-bench]

Everything goes through ``trt_scatter.plugins.kernels``, the launch code that plugin ``enqueue``
uses: buffers from ``cuMemAlloc``, a stream from ``cuStreamCreate``. It

1. compiles every instantiation cold (NVRTC -> CUBIN for this device) and times each;
2. checks every element size and index type against the oracle on random cases (valid ones,
   out-of-range indices, invalid geometry), both the copy and the in-place path, with the error
   counter, and exits 1 if any case is wrong;
3. benchmarks (>= 256 MB): the copy path against ``cuMemcpyDtoD`` of the same data measured in the
   same run, the in-place path against the bytes it moves, torch's ``slice_scatter`` and
   ``index_copy_`` if torch imports, and the Python overhead per launch (target < 20 us).

Results go to ``<out>/gpu_check.json`` and ``<out>/gpu_check.md``. The script imports without a GPU;
its pure parts (arguments, case generation, formatting) are tested on the CPU.
"""

import argparse
import ctypes
import json
import math
import os
import platform
import statistics
import sys
import tempfile
import time
import types
from pathlib import Path

import numpy as np

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_OUT = ROOT / "bench" / "results"
ELEMENT_DTYPES = {1: np.dtype(np.uint8), 2: np.dtype(np.float16), 4: np.dtype(np.float32), 8: np.dtype(np.int64)}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=Path, default=DEFAULT_OUT, help="folder for gpu_check.json and gpu_check.md")
    parser.add_argument("--size-mb", type=int, default=512, help="size of the large benchmark tensors (>= 256)")
    parser.add_argument("--reps", type=int, default=10, help="timed repetitions per measurement (median reported)")
    parser.add_argument("--cases", type=int, default=12, help="random correctness cases per configuration")
    parser.add_argument("--seed", type=int, default=0)
    parser.add_argument("--quick", action="store_true", help="small correctness run only (for compute-sanitizer)")
    parser.add_argument("--no-bench", action="store_true", help="skip the benchmarks")
    parser.add_argument("--no-torch", action="store_true", help="skip the torch comparison")
    parser.add_argument("--cache-dir", type=Path, default=None,
                        help="kernel cache folder (default: a new temporary one, so compile times are cold)")
    args = parser.parse_args(argv)
    if args.size_mb < 256 and not args.quick:
        parser.error("--size-mb must be at least 256 (the benchmarks are about large tensors)")
    if args.quick:
        args.no_bench, args.cases = True, min(args.cases, 3)
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


# ---------------------------------------------------------------------------------------------
# Cases (pure NumPy)


def _bound(rng, dim, dtype):
    info = np.iinfo(dtype)
    if rng.integers(0, 5) == 0:
        return int(rng.choice([info.min, info.max, info.min + 1, info.max - 1]))
    return int(rng.integers(-dim - 3, dim + 4))


def random_slice_scatter_case(rng, element_size, param_dtype, max_elements=200_000, broken=False):
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
    dtype = ELEMENT_DTYPES[element_size]
    return {
        "data": _random_bits(rng, shape, dtype), "updates": _random_bits(rng, updates_shape, dtype),
        "start": start, "stop": stop, "step": step, "axes": None if default_axes else axes,
        "param_dtype": np.dtype(param_dtype), "broken": bool(broken),
    }


def random_scatter_update_case(rng, element_size, index_dtype, max_elements=200_000, broken=False):
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
    updates_shape = shape[:axis] + indices_shape + shape[axis + 1 :]
    dtype = ELEMENT_DTYPES[element_size]
    return {
        "data": _random_bits(rng, shape, dtype), "indices": indices, "updates": _random_bits(rng, updates_shape, dtype),
        "axis": rank if broken else (axis - rank if rng.integers(0, 2) else axis), "normalized_axis": axis,
        "broken": bool(broken),
    }


def _random_bits(rng, shape, dtype):
    bits = rng.integers(0, 256, size=math.prod(shape) * dtype.itemsize, dtype=np.uint8)
    return bits.view(dtype).reshape(shape)


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


# ---------------------------------------------------------------------------------------------
# Running cases through the launch code (any device backend / memory with alloc, put, get, free)


def run_slice_scatter(kernels, memory, stream, case, in_place, error_flag=True):
    data, updates = case["data"], case["updates"]
    output = memory.put(data) if in_place else memory.alloc(data.nbytes)
    flag = memory.put(np.array([0xDEAD], np.uint32)) if error_flag else 0
    param = case["param_dtype"]
    kernels.launch_slice_scatter(
        output=output, data=0 if in_place else memory.put(data), updates=memory.put(updates),
        start=memory.put(np.asarray(case["start"], param)), stop=memory.put(np.asarray(case["stop"], param)),
        step=memory.put(np.asarray(case["step"], param)),
        axes=0 if case["axes"] is None else memory.put(np.asarray(case["axes"], np.int32)), num_axes=len(case["start"]),
        data_shape=data.shape, updates_shape=updates.shape, element_size=data.dtype.itemsize,
        param_itemsize=param.itemsize, axes_itemsize=4, error_flag=flag, stream=stream)
    count = kernels.check_error_flag(flag, stream)
    return memory.get(output, data.dtype, data.shape), count


def run_scatter_update(kernels, memory, stream, case, in_place, error_flag=True):
    data, indices, updates = case["data"], case["indices"], case["updates"]
    output = memory.put(data) if in_place else memory.alloc(data.nbytes)
    flag = memory.put(np.array([0xDEAD], np.uint32)) if error_flag else 0
    kernels.launch_scatter_update(
        output=output, data=0 if in_place else memory.put(data), indices=memory.put(indices),
        updates=memory.put(updates), axis=memory.put(np.array([case["axis"]], np.int64)), data_shape=data.shape,
        indices_shape=indices.shape, element_size=data.dtype.itemsize, index_itemsize=indices.dtype.itemsize,
        axis_itemsize=8, error_flag=flag, stream=stream, updates_shape=updates.shape)
    count = kernels.check_error_flag(flag, stream)
    return memory.get(output, data.dtype, data.shape), count


def check_correctness(kernels, memory, stream, cases=12, seed=0, max_elements=200_000):
    """Every element size x param/index type x {copy, in place} x {valid, broken} on random cases;
    returns one record per configuration with the number of failed cases and the first failure."""
    rng = np.random.default_rng(seed)
    records = []
    for op, make, run, expect, types_ in (
        ("slice_scatter", random_slice_scatter_case, run_slice_scatter, expected_slice_scatter, (np.int32, np.int64)),
        ("scatter_update", random_scatter_update_case, run_scatter_update, expected_scatter_update, (np.int32, np.int64)),
    ):
        for element_size in (1, 2, 4, 8):
            for index_type in types_:
                failures, first = 0, None
                for i in range(cases):
                    case = make(rng, element_size, index_type, max_elements=max_elements, broken=i % 4 == 3)
                    in_place = bool(i % 2)
                    try:
                        output, count = run(kernels, memory, stream, case, in_place)
                        expected, expected_count = expect(case)
                        same = np.array_equal(output.view(f"u{element_size}"), expected.view(f"u{element_size}"))
                        problem = None if same and count == expected_count else f"equal={same} count={count} expected={expected_count}"
                    except Exception as error:  # a failed launch is a failed case, reported
                        problem = f"{type(error).__name__}: {error}"
                    finally:
                        memory.free()
                    if problem:
                        failures += 1
                        first = first or {"case": i, "in_place": in_place, "shape": list(case["data"].shape), "problem": problem}
                records.append({"op": op, "element_size": element_size, "index_type": np.dtype(index_type).name,
                                "cases": cases, "failed": failures, "first_failure": first})
    return records


# ---------------------------------------------------------------------------------------------
# GPU-only parts


class DeviceMemory:
    """cuMemAlloc'd buffers with NumPy upload/download; ``free`` releases them all."""

    def __init__(self, cuda):
        self.cuda, self.driver, self.addresses = cuda, cuda.driver(), []

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
        for address in self.addresses:
            self.cuda.check(self.driver.cuMemFree(address), "cuMemFree")
        self.addresses = []


class Timer:
    """CUDA events on one stream: ``measure(fn, reps)`` -> median milliseconds of fn()."""

    def __init__(self, cuda, stream):
        self.cuda, self.driver, self.stream = cuda, cuda.driver(), stream
        self.begin = cuda.check(self.driver.cuEventCreate(0), "cuEventCreate")
        self.end = cuda.check(self.driver.cuEventCreate(0), "cuEventCreate")

    def measure(self, fn, reps):
        fn()  # warm-up (and compile, on first use)
        times = []
        for _ in range(reps):
            self.cuda.check(self.driver.cuEventRecord(self.begin, self.stream), "cuEventRecord")
            fn()
            self.cuda.check(self.driver.cuEventRecord(self.end, self.stream), "cuEventRecord")
            self.cuda.check(self.driver.cuEventSynchronize(self.end), "cuEventSynchronize")
            times.append(self.cuda.check(self.driver.cuEventElapsedTime(self.begin, self.end), "cuEventElapsedTime"))
        return statistics.median(times)


def compile_times(cuda, device_arch):
    """Cold NVRTC time of every instantiation, for the arch the launcher loads on this device."""
    arch, records = cuda.target_arch(device_arch), []
    for kernel, element_size, index in [("slice_scatter", e, None) for e in (1, 2, 4, 8)] + [
        ("scatter_update", e, i) for e in (1, 2, 4, 8) for i in (4, 8)
    ]:
        started = time.perf_counter()
        cuda.cubin(kernel, element_size, index, arch)
        records.append({"kernel": cuda.name_expression(kernel, element_size, index), "arch": arch,
                        "seconds": round(time.perf_counter() - started, 3)})
    return records


def benchmarks(kernels, cuda, stream, size_mb, reps, use_torch, overhead_launches=2000):
    """Large-tensor timings; every row carries its own baseline from this run."""
    driver, rows = cuda.driver(), []
    memory = DeviceMemory(cuda)
    timer = Timer(cuda, stream)
    nbytes = size_mb << 20
    source, target = memory.alloc(nbytes), memory.alloc(nbytes)
    flag = memory.alloc(4)

    def memcpy(n):
        return lambda: cuda.check(driver.cuMemcpyDtoDAsync(target, source, n, stream), "cuMemcpyDtoDAsync")

    memcpy_ms = {}

    def baseline(n):
        if n not in memcpy_ms:
            memcpy_ms[n] = timer.measure(memcpy(n), reps)
        return memcpy_ms[n]

    def params(values, dtype=np.int64):
        return memory.put(np.asarray(values, dtype))

    def row(kind, what, ms, moved, baseline_bytes):
        base = baseline(baseline_bytes)
        rows.append({"kind": kind, "what": what, "ms": round(ms, 4), "GB/s": round(moved / ms / 1e6, 1),
                     "memcpy_ms_same_bytes": round(base, 4), "memcpy_GB/s": round(2 * baseline_bytes / base / 1e6, 1),
                     "time_vs_memcpy": round(ms / base, 3)})

    # The copy path: output = data (nbytes) with a slice written. Baseline: cuMemcpyDtoD of data.
    cols = 4096
    shape = (nbytes // 4 // cols, cols)
    for label, start, stop, step, axis, updates_shape in (
        ("one row", [0], [1], [1], [0], (1, cols)),
        ("every 2nd row (half of data)", [0], [shape[0]], [2], [0], ((shape[0] + 1) // 2, cols)),
        ("every 2nd column (half of data, strided)", [0], [cols], [2], [1], (shape[0], cols // 2)),
    ):
        updates = memory.alloc(math.prod(updates_shape) * 4)
        args = dict(output=target, data=source, updates=updates, start=params(start), stop=params(stop), step=params(step),
                    axes=params(axis), num_axes=1, data_shape=shape, updates_shape=updates_shape, element_size=4,
                    param_itemsize=8, axes_itemsize=8, error_flag=flag, stream=stream)
        ms = timer.measure(lambda: kernels.launch_slice_scatter(**args), reps)
        moved = 2 * nbytes + 2 * math.prod(updates_shape) * 4
        row("copy path", f"slice_scatter f32 {shape}, {label}", ms, moved, nbytes)

    # The in-place path: time against the bytes of updates (read + write). Baseline: memcpy of updates' bytes.
    for updates_mb in [mb for mb in (1, 16, 64, 256) if 2 * mb <= size_mb]:
        n = (updates_mb << 20) // 4
        for label, data_shape, updates_shape, start, stop, step, axis in (
            ("rows", (2 * n // cols, cols), (n // cols, cols), [0], [n // cols], [1], [0]),
            ("strided, step 2 on the last axis", (n // cols, 2 * cols), (n // cols, cols), [1], [2 * cols], [2], [1]),
        ):
            updates = memory.alloc(n * 4)
            args = dict(output=target, data=0, updates=updates, start=params(start), stop=params(stop), step=params(step),
                        axes=params(axis), num_axes=1, data_shape=data_shape, updates_shape=updates_shape, element_size=4,
                        param_itemsize=8, axes_itemsize=8, error_flag=flag, stream=stream)
            ms = timer.measure(lambda: kernels.launch_slice_scatter(**args), reps)
            row("in place", f"slice_scatter f32 {updates_mb} MB updates, {label}", ms, 2 * n * 4, n * 4)
        for inner in (1, 64, 4096):
            count = n // inner
            data_shape, indices = (2 * count, inner), params(np.random.default_rng(0).permutation(2 * count)[:count], np.int32)
            updates = memory.alloc(n * 4)
            args = dict(output=target, data=0, indices=indices, updates=updates, axis=params([0]), data_shape=data_shape,
                        indices_shape=(count,), element_size=4, index_itemsize=4, axis_itemsize=8, error_flag=flag,
                        stream=stream, updates_shape=(count, inner))
            ms = timer.measure(lambda: kernels.launch_scatter_update(**args), reps)
            row("in place", f"scatter_update f32 {updates_mb} MB updates, rows of {inner}", ms, 2 * n * 4 + count * 4, n * 4)

    if use_torch:
        rows += torch_comparison(nbytes, reps)
    rows += python_overhead(kernels, memory, stream, flag, overhead_launches)
    memory.free()
    return rows, {str(k): round(v, 4) for k, v in memcpy_ms.items()}


def torch_comparison(nbytes, reps):
    try:
        import torch
    except ImportError:
        return [{"kind": "torch", "what": "torch not importable: skipped"}]
    rows, cols = [], 4096
    data = torch.empty((nbytes // 4 // cols, cols), dtype=torch.float32, device="cuda")
    begin, end = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)

    def measure(fn):
        fn()
        times = []
        for _ in range(reps):
            begin.record()
            fn()
            end.record()
            end.synchronize()
            times.append(begin.elapsed_time(end))
        return statistics.median(times)

    half_rows = torch.empty(((data.shape[0] + 1) // 2, cols), dtype=torch.float32, device="cuda")
    rows.append({"kind": "torch", "what": "Tensor.slice_scatter every 2nd row (copy path equivalent)",
                 "ms": round(measure(lambda: data.slice_scatter(half_rows, 0, 0, data.shape[0], 2)), 4)})
    half_cols = torch.empty((data.shape[0], cols // 2), dtype=torch.float32, device="cuda")
    rows.append({"kind": "torch", "what": "Tensor.slice_scatter every 2nd column (copy path equivalent)",
                 "ms": round(measure(lambda: data.slice_scatter(half_cols, 1, 0, cols, 2)), 4)})
    for inner in (1, 64, 4096):
        n = (64 << 20) // 4
        count = n // inner
        target = torch.empty((2 * count, inner), dtype=torch.float32, device="cuda")
        index = torch.randperm(2 * count, device="cuda")[:count]
        source = torch.empty((count, inner), dtype=torch.float32, device="cuda")
        rows.append({"kind": "torch", "what": f"index_copy_ 64 MB updates, rows of {inner} (in-place equivalent)",
                     "ms": round(measure(lambda: target.index_copy_(0, index, source)), 4)})
    return rows


def python_overhead(kernels, memory, stream, flag, launches=2000):
    """Host time per launch call, tiny tensors (the GPU keeps up, so this is the Python cost)."""
    data, updates = memory.alloc(64 * 4), memory.alloc(32 * 4)
    start, stop, step = (memory.put(np.array([v], np.int64)) for v in (0, 64, 2))
    records = []
    for label, extra in (("in place, no error flag", dict(data=0, error_flag=0)),
                         ("copy path + error flag", dict(data=data, error_flag=flag))):
        args = dict(output=memory.alloc(64 * 4), updates=updates, start=start, stop=stop, step=step, axes=0, num_axes=1,
                    data_shape=(64,), updates_shape=(32,), element_size=4, param_itemsize=8, axes_itemsize=8,
                    stream=stream, **extra)
        kernels.launch_slice_scatter(**args)
        kernels.device.stream_synchronize(stream)
        started = time.perf_counter()
        for _ in range(launches):
            kernels.launch_slice_scatter(**args)
        per_call = (time.perf_counter() - started) / launches
        kernels.device.stream_synchronize(stream)
        records.append({"kind": "python overhead", "what": f"launch_slice_scatter, {label}", "us_per_call": round(per_call * 1e6, 2),
                        "target_us": 20})
    started = time.perf_counter()
    for _ in range(launches):
        kernels.slice_scatter_args(output=1, updates=1, start=1, stop=1, step=1, axes=0, num_axes=1, data_shape=(64,),
                                   updates_shape=(32,), element_size=4, param_itemsize=8, axes_itemsize=8, error_flag=0)
    records.append({"kind": "python overhead", "what": "slice_scatter_args (checks + packing only)",
                    "us_per_call": round((time.perf_counter() - started) / launches * 1e6, 2), "target_us": 20})
    return records


# ---------------------------------------------------------------------------------------------
# Report


def format_markdown(results):
    """The results dict as a Markdown report."""
    lines = ["# trt-scatter kernels: GPU check", ""]
    machine = results.get("machine", {})
    lines += [f"- {key}: {value}" for key, value in machine.items()]
    lines += ["", "## Correctness (against trt_scatter.oracle)", "",
              "| op | element size | index type | cases | failed | first failure |", "| --- | --- | --- | --- | --- | --- |"]
    for r in results.get("correctness", []):
        lines.append(f"| {r['op']} | {r['element_size']} | {r['index_type']} | {r['cases']} | {r['failed']} | {r['first_failure'] or ''} |")
    if results.get("compile"):
        lines += ["", "## Cold compile time per instantiation (NVRTC -> CUBIN)", "", "| kernel | arch | seconds |", "| --- | --- | --- |"]
        lines += [f"| `{r['kernel']}` | sm_{r['arch']} | {r['seconds']} |" for r in results["compile"]]
    if results.get("benchmarks"):
        columns = []
        for r in results["benchmarks"]:
            columns += [key for key in r if key not in columns]
        lines += ["", "## Benchmarks", "", "| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
        lines += ["| " + " | ".join(str(r.get(c, "")) for c in columns) + " |" for r in results["benchmarks"]]
    lines += ["", f"All correct: {results.get('all_correct')}", ""]
    return "\n".join(lines)


def write_results(results, out):
    out = Path(out)
    out.mkdir(parents=True, exist_ok=True)
    (out / "gpu_check.json").write_text(json.dumps(results, indent=2, default=str))
    (out / "gpu_check.md").write_text(format_markdown(results))
    return out / "gpu_check.json", out / "gpu_check.md"


def main(argv=None):
    args = parse_args(argv)
    os.environ.setdefault("TRT_SCATTER_CACHE_DIR", str(args.cache_dir or tempfile.mkdtemp(prefix="trt-scatter-cache-")))
    if args.cache_dir:
        os.environ["TRT_SCATTER_CACHE_DIR"] = str(args.cache_dir)
    kernels = import_kernels()
    cuda = kernels.cuda
    driver = cuda.driver()
    arch = cuda.device_arch()
    device = cuda.check(driver.cuCtxGetDevice(), "cuCtxGetDevice")
    name = cuda.check(driver.cuDeviceGetName(256, device), "cuDeviceGetName")
    results = {"machine": {"device": name.split(b"\0")[0].decode(), "arch": f"sm_{arch}", "sms": cuda.sm_count(),
                           "driver": cuda.check(driver.cuDriverGetVersion(), "cuDriverGetVersion"),
                           "nvrtc": ".".join(map(str, cuda.nvrtc_version())), "python": platform.python_version(),
                           "host": platform.node()}}
    print(results["machine"], flush=True)
    results["compile"] = compile_times(cuda, arch)
    print("compiled", results["compile"], flush=True)
    stream = int(cuda.check(driver.cuStreamCreate(0), "cuStreamCreate"))
    memory = DeviceMemory(cuda)
    results["correctness"] = check_correctness(kernels, memory, stream, cases=args.cases, seed=args.seed,
                                               max_elements=2_000 if args.quick else 200_000)
    results["all_correct"] = all(r["failed"] == 0 for r in results["correctness"])
    print("all correct:", results["all_correct"], flush=True)
    if not args.no_bench:
        results["benchmarks"], results["memcpy_ms_by_bytes"] = benchmarks(kernels, cuda, stream, args.size_mb, args.reps,
                                                                          not args.no_torch)
    paths = write_results(results, args.out)
    print(format_markdown(results))
    print("wrote", *paths)
    return 0 if results["all_correct"] else 1


if __name__ == "__main__":
    sys.exit(main())
