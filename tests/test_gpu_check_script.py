"""bench/gpu_check.py and bench/gpu_check.sh without a GPU, so the one GPU run works the first time.

In process: arguments, case generation, the correctness check on the CPU shim through the same launch
code, the benchmark and overhead code on host memory, the report. As a rehearsal: the whole of
gpu_check.sh behind the real cuda-bindings with the project's stand-in driver (tests/kernel_shim/
fakecuda.c, built here with gcc) and a stand-in compute-sanitizer: every step, a kernel fault
(FAKECUDA_FAIL_AFTER), sanitizer verdicts, step time limits, and GPU tests that may not all skip.
"""

import importlib.util
import json
import math
import os
import re
import shutil
import subprocess
import sys
import textwrap
from pathlib import Path

import numpy as np
import pytest

from conftest import HAS_GPU, needs_gxx
from kernel_shim import host
from trt_scatter import oracle
from trt_scatter.plugins import kernels

ROOT = Path(__file__).resolve().parents[1]
SCRIPT = ROOT / "bench" / "gpu_check.py"
SHELL = ROOT / "bench" / "gpu_check.sh"
spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)

OUTPUT_FILES = {"summary.md", "gpu_check.json", "gpu_check.md", "gpu_check.log", "pytest_gpu.log", "memcheck.log", "racecheck.log"}


def test_arguments():
    args = gpu_check.parse_args([])
    assert args.out == gpu_check.DEFAULT_OUT and args.size_mb == 256 and not args.quick and args.torch_device == "cuda"
    quick = gpu_check.parse_args(["--quick", "--out", "x", "--cases", "9"])
    assert quick.no_bench and quick.cases == 3 and quick.out == Path("x")
    sanitize = gpu_check.parse_args(["--sanitize", "--size-mb", "512"])
    assert (sanitize.size_mb, sanitize.reps, sanitize.no_torch, sanitize.overhead_launches, sanitize.no_bench) == (16, 1, True, 0, False)
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["--size-mb", "0"])


def test_default_output_folder_is_OUT(tmp_path):
    """On the GPU machine only what is under $OUT comes back: that is the default."""
    code = f"import importlib.util as u; s = u.spec_from_file_location('g', {str(SCRIPT)!r}); m = u.module_from_spec(s); s.loader.exec_module(m); print(m.DEFAULT_OUT)"
    result = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, OUT=str(tmp_path)), capture_output=True, text=True, timeout=60)
    assert result.stdout.strip() == str(tmp_path), result.stderr


def test_cases_are_valid_for_the_oracle_unless_broken():
    rng = np.random.default_rng(3)
    for i in range(40):
        broken = i % 4 == 3
        case = gpu_check.random_slice_scatter_case(rng, 2, np.int32, max_elements=3000, broken=broken)
        if broken:
            with pytest.raises(oracle.ScatterInputError):
                oracle.slice_scatter(case["data"], case["updates"], case["start"], case["stop"], case["step"], case["axes"])
        else:
            gpu_check.expected_slice_scatter(case)
        update = gpu_check.random_scatter_update_case(rng, 8, np.int64, max_elements=3000, broken=broken)
        expected, count = gpu_check.expected_scatter_update(update)
        assert expected.shape == update["data"].shape and count >= 0
        cache = gpu_check.random_tensor_scatter_case(rng, 4, np.int32, max_elements=3000, broken=broken)
        if broken:
            with pytest.raises(oracle.ScatterInputError):
                oracle.tensor_scatter(cache["data"], cache["updates"], cache["write_indices"], cache["axis"], cache["mode"])
        assert gpu_check.expected_tensor_scatter(cache)[0].shape == cache["data"].shape


@pytest.mark.parametrize("element_size", [1, 2, 4, 8])
def test_large_cases_take_several_passes_of_each_loop(element_size):
    """Each large case has more work than one wave of the launcher's own grid (an H100's: 132 SMs)
    in the loop it aims at: blocks for the tile loop, threads for the unit and row loops."""
    sms = 132
    blocks = sms * kernels.BLOCKS_PER_SM
    wave = blocks * kernels.BLOCK
    slices = gpu_check.large_cases("slice_scatter", element_size, np.int64, sms, kernels.BLOCK, kernels.BLOCKS_PER_SM)
    updates = gpu_check.large_cases("scatter_update", element_size, np.int32, sms, kernels.BLOCK, kernels.BLOCKS_PER_SM)
    (_, long_rows), (_, short_rows), (_, single) = slices
    assert long_rows["updates"].shape[0] > 2 * blocks and long_rows["updates"].shape[1] * element_size == 4096
    assert short_rows["updates"].size * element_size // 16 > 2 * wave and short_rows["updates"].shape[1] * element_size == 32
    assert single["updates"].shape == (2 * wave, 1)
    (_, rows), (_, many), (_, last) = updates
    assert rows["indices"].size > 2 * blocks and many["indices"].size >= 2 * wave and last["updates"].shape == (wave, 5)
    assert grid_passes(many["indices"].size, sms) >= 2
    for case in (long_rows, short_rows, single):
        assert gpu_check.expected_slice_scatter(case)[1] == 0
    assert [gpu_check.expected_scatter_update(case)[1] for case in (rows, many, last)] == [0, 0, 1]


def grid_passes(work, sms):
    return math.ceil(work / (kernels.grid_size(work, sms) * kernels.BLOCK))


@needs_gxx
def test_correctness_check_passes_on_the_cpu_shim(monkeypatch):
    monkeypatch.setattr(kernels, "device", host.ShimDevice(host.load(host.shared_library())))
    records = gpu_check.check_correctness(kernels, host.Memory(), stream=0, cases=8, max_elements=2000, large=(1, 32, 2))
    # the reductions' AOT entry takes 4- and 8-byte elements (int32, int64) only
    assert len(records) == 3 * 2 * 4 * 2 + 2 * (4 + 2) * 2 and {r["entry"] for r in records} == {"struct", "aot"}
    assert {r["op"] for r in records} == {"slice_scatter", "scatter_update", "tensor_scatter", "scatter_elements_reduce", "scatter_nd_reduce"}
    assert all(r["failed"] == 0 for r in records), [r for r in records if r["failed"]]
    # per op and entry: 8 random cases per element size and index type; large ones (3 kinds for the writes, 2 for
    # ScatterNDReduce, 1 for ScatterElementsReduce; copy and in place) for one index type per element size
    writes = 3 * 2 * (4 * 2 * 8 + 4 * 3 * 2)
    reductions = sum((sizes * 2 * 8 + sizes * large * 2) for sizes in (4, 2) for large in (2, 1))
    assert sum(r["cases"] for r in records) == writes + reductions


@needs_gxx
def test_correctness_check_reports_a_wrong_kernel(monkeypatch):
    class Dropping(host.ShimDevice):  # loses every launch: outputs stay data (copy path) or untouched
        def launch(self, *args):
            pass

    monkeypatch.setattr(kernels, "device", Dropping(host.load(host.shared_library())))
    records = gpu_check.check_correctness(kernels, host.Memory(), stream=0, cases=4, max_elements=2000)
    assert sum(r["failed"] for r in records) > 0
    assert any(r["first_failure"] and "count=" in r["first_failure"]["problem"] for r in records)


class PoisonedCuda:
    """plugins.cuda's error helpers with a context that a kernel fault made unusable."""

    from trt_scatter.plugins.cuda import CudaError

    @staticmethod
    def driver():
        return type("Driver", (), {"cuCtxSynchronize": staticmethod(lambda: (700,))})

    @classmethod
    def check(cls, result, what):
        if result[0]:
            raise cls.CudaError(f"{what} failed: CUDA_ERROR_ILLEGAL_ADDRESS")


@needs_gxx
def test_a_fault_stops_the_check_and_names_its_case(monkeypatch):
    class Faulting(host.ShimDevice):
        def stream_synchronize(self, stream):  # where a GPU reports an asynchronous kernel fault
            raise PoisonedCuda.CudaError("cuStreamSynchronize failed: CUDA_ERROR_ILLEGAL_ADDRESS")

    monkeypatch.setattr(kernels, "device", Faulting(host.load(host.shared_library())))
    records = []
    with pytest.raises(gpu_check.DeviceFault) as raised:
        gpu_check.check_correctness(kernels, host.Memory(), stream=0, cases=2, max_elements=2000, cuda=PoisonedCuda, records=records)
    fault = raised.value.record
    assert (fault["op"], fault["element_size"], fault["index_type"], fault["case"]) == ("slice_scatter", 1, "int32", "random 0, rng [0, 0, 1, 4, 0]")
    assert "cuStreamSynchronize failed" in fault["error"] and "cuCtxSynchronize failed" in fault["context"]
    assert fault["data_shape"] and fault["updates_shape"] and records == []


def test_kv_cache_plan_is_the_decode_goal_and_a_prefill():
    plan = gpu_check.kv_cache_plan(256)
    assert {entry["cache_shape"] for entry in plan} == {(64, 8, 4096, 128)}  # 512 MiB of float16
    steps = [(1, "per row"), (1, "one position"), (16, "per row"), (16, "one position")]
    assert [(entry["tokens"], entry["positions"], entry["entry"]) for entry in plan] == [step + (kind,) for kind in ("struct", "aot") for step in steps]
    small = gpu_check.kv_cache_plan(1)
    assert all(entry["cache_shape"] == (64, 8, 32, 128) for entry in small)  # cut to the rehearsal's size
    for entry in plan:
        positions = gpu_check._kv_positions(entry)
        assert positions.shape == (64,) and positions.min() >= 0 and positions.max() <= 4096 - entry["tokens"]
        assert (len(set(positions.tolist())) == 1) == (entry["positions"] == "one position")


@needs_gxx
def test_kv_cache_benchmark_runs_on_host_memory_and_compares_with_torch(host_gpu):
    from trt_scatter.plugins import cuda

    rows, problems = gpu_check.kv_cache_benchmarks(kernels, cuda, 0x5, size_mb=1, reps=1, torch_device=_torch_device())
    assert problems == [] and len(rows) == 8 and all(row["correct"] for row in rows)
    assert all(row["bytes_moved"] == 2 * 64 * 8 * row_tokens * 128 * 2 + 64 * 8 for row, row_tokens in zip(rows, (1, 1, 16, 16) * 2))
    assert [row["goal"] for row in rows] == [3, 3, "", ""] * 2  # the goal is the decode write's, through either entry
    assert [row["what"].endswith(", AOT entry") for row in rows] == [False] * 4 + [True] * 4
    launched = [call[1] for call in kernels.device.calls if call[0] == "launch"]
    assert {"run_tensor_scatter_e2", "run_tensor_scatter_aot_e2"} <= set(launched)
    if _torch_device():
        assert [row.get("torch_op") for row in rows] == ["Tensor.index_put_", "Tensor.index_copy_"] * 2 + [None] * 4
        assert all(row["torch_same_output"] for row in rows[:4])
    assert host_gpu.live == set()


def test_benchmark_plan_covers_every_op_axis_element_size_and_step():
    plan = gpu_check.benchmark_plan(256)
    assert {e["element_size"] for e in plan} == {4, 1, 2}
    assert {(e["op"], e["dim"]) for e in plan} == {("slice_scatter", 0), ("slice_scatter", 1), ("scatter_update", 0), ("scatter_update", 1)}
    assert {e["step"] for e in plan if e["op"] == "slice_scatter"} == {1, 2, 10, 100}
    assert {e["fraction"] for e in plan if e["path"] == "in place"} == {0.01, 0.1, 0.5}
    assert {e["index_itemsize"] for e in plan if e["op"] == "scatter_update" and e["path"] == "in place"} == {4, 8}
    first_copy = {(e["op"], e["element_size"], e["layout"], e["fraction"]): i for i, e in reversed(list(enumerate(plan))) if e["path"] == "copy"}
    for i, entry in enumerate(plan):
        assert math.prod(entry["data_shape"]) * entry["element_size"] == 256 << 20
        updated = math.prod(entry["updates_shape"]) / math.prod(entry["data_shape"])
        assert abs(updated - entry["fraction"]) < 0.01 * entry["fraction"] + 1e-3, gpu_check.describe_entry(entry)
        if entry["path"] == "in place" and (entry["op"], entry["element_size"], entry["layout"], entry["fraction"]) in first_copy:
            assert first_copy[(entry["op"], entry["element_size"], entry["layout"], entry["fraction"])] < i  # measured before
    aot = [e for e in plan if e.get("entry") == "aot"]
    assert {(e["element_size"], e["path"], e.get("index_itemsize", 8)) for e in aot} == {(4, "in place", 8)} and len(aot) == 18
    tiny = gpu_check.benchmark_plan(1)
    assert all(min(e["updates_shape"]) >= 1 for e in tiny)


def test_report(tmp_path):
    results = {
        "machine": {"device": "Test GPU", "arch": "sm_90"},
        "phases": {"compile": {"seconds": 9.5}},
        "correctness": [{"op": "slice_scatter", "entry": "struct", "element_size": 4, "index_type": "int32", "cases": 3, "failed": 0,
                         "first_failure": None}],
        "compile": [{"kernel": "slice_scatter<unsigned int>", "arch": 90, "seconds": 0.8}],
        "benchmarks": [{"what": "x", "op": "slice_scatter", "element_size": 4, "path": "copy", "layout": "l", "fraction": 0.01, "ms": 1.0,
                        "correct": True, "bw_vs_memcpy": 0.9, "torch_over_ours": 2.0},
                       {"what": "y", "op": "slice_scatter", "element_size": 4, "path": "in place", "layout": "l", "fraction": 0.01,
                        "ms": 0.02, "correct": True, "speedup_vs_copy": 50.0}],
        "python_overhead": [{"what": "launch_slice_scatter, in place", "us_per_call": 9.5, "goal_us": 20}],
        "all_correct": True, "problems": [],
    }
    results["goals"] = gpu_check.goals(results)
    assert [met for _, _, met in results["goals"]] == [True, True, True, True]
    json_path, md_path = gpu_check.write_results(results, tmp_path / "out")
    assert json.loads(json_path.read_text())["all_correct"] is True
    text = md_path.read_text()
    assert "| slice_scatter | struct | 4 | int32 | 3 | 0 |  |" in text and "| slice_scatter<unsigned int> | 90 | 0.8 |" in text
    assert "| what | ms | correct | bw_vs_memcpy | torch_over_ours | speedup_vs_copy |" in text and "| y | 0.02 | True |  |  | 50.0 |" in text
    assert "| in place >= 20x faster than the copy path at 1 % updates | 50.0 | True |" in text
    results["fault"] = {"phase": "benchmarks", "case": "y"}
    assert "## FAULT" in gpu_check.format_markdown(results)


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
@pytest.mark.parametrize("cache_set", [False, True], ids=["own cache", "cache given"])
def test_without_a_gpu_the_script_fails_with_the_reason(tmp_path, cache_set):
    scratch = tmp_path / "scratch"
    scratch.mkdir()
    env = {k: v for k, v in _without_fakecuda().items() if k != "TRT_SCATTER_CACHE_DIR"}
    env["TMPDIR"] = str(scratch)
    if cache_set:
        env["TRT_SCATTER_CACHE_DIR"] = str(tmp_path / "cache")
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120,
                            env=env)
    assert result.returncode == 2
    assert result.stderr.startswith("gpu_check.py: needs a CUDA GPU: the CUDA driver is unavailable") and result.stderr.count("\n") == 1
    assert not list(scratch.iterdir())  # its own cold kernel cache is removed; a given one leaves no unused folder behind


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
def test_without_a_gpu_the_reduce_phases_bench_fails_with_the_reason(tmp_path):
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_reduce_phases.py"), "--out", str(tmp_path)], capture_output=True,
                            text=True, timeout=120, env=_without_fakecuda())
    assert result.returncode == 2
    assert result.stderr.startswith("bench_reduce_phases.py: needs a CUDA GPU: the CUDA driver is unavailable") and result.stderr.count("\n") == 1


# ---- in process, on host memory: the driver calls gpu_check makes, the kernels on the CPU shim ----


class HostDriver:
    """cuda.bindings.driver's calls that gpu_check makes, on host memory (malloc'd "device" buffers),
    so the script's GPU-only code runs here with the kernels on the CPU shim."""

    from cuda.bindings.driver import CUdevice_attribute, CUfunction_attribute

    class CUresult:
        CUDA_SUCCESS = 0

    def __init__(self):
        import ctypes

        self.ctypes, self.libc = ctypes, ctypes.CDLL(None)
        self.libc.malloc.restype, self.libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
        self.libc.free.argtypes = [ctypes.c_void_p]
        self.live, self.events, self.memsets = set(), 0, 0

    def cuMemAlloc(self, nbytes):
        address = self.libc.malloc(nbytes)
        self.live.add(address)
        return 0, address

    def cuMemFree(self, address):
        self.live.remove(address)
        self.libc.free(address)
        return (0,)

    def cuMemsetD8(self, address, value, nbytes):
        self.ctypes.memset(address, value, nbytes)
        return (0,)

    def cuMemsetD32Async(self, address, value, count, stream):
        self.memsets += 1
        self.ctypes.memset(address, value, 4 * count)  # value 0 only
        return (0,)

    def cuMemcpyHtoD(self, destination, source, nbytes):
        self.ctypes.memmove(destination, source, nbytes)
        return (0,)

    cuMemcpyDtoH = cuMemcpyHtoD

    def cuMemcpyDtoDAsync(self, destination, source, nbytes, stream):
        return self.cuMemcpyHtoD(destination, source, nbytes)

    def cuEventCreate(self, flags):
        self.events += 1
        return 0, self.events

    def cuEventRecord(self, event, stream):
        return (0,)

    def cuEventSynchronize(self, event):
        return (0,)

    def cuEventElapsedTime(self, begin, end):
        return 0, 1.5

    def cuEventDestroy(self, event):
        return (0,)

    def cuCtxGetDevice(self):
        return 0, 0

    def cuCtxSynchronize(self):
        return (0,)

    def cuStreamSynchronize(self, stream):
        return (0,)

    def cuDeviceGetName(self, length, device):
        return 0, b"Host Test Device\0\0"

    def cuDeviceGetAttribute(self, attribute, device):
        return 0, {self.CUdevice_attribute.CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE: 1 << 16}[attribute]

    def cuFuncGetAttribute(self, attribute, function):
        return 0, {self.CUfunction_attribute.CU_FUNC_ATTRIBUTE_NUM_REGS: 40}.get(attribute, 0)

    def cuDriverGetVersion(self):
        return 0, 13000

    def cuStreamCreate(self, flags):
        return 0, 0x5


@pytest.fixture
def host_gpu(monkeypatch):
    from trt_scatter.plugins import cuda

    fake = HostDriver()
    monkeypatch.setattr(cuda, "_driver_module", fake)
    monkeypatch.setattr(cuda, "device_arch", lambda: 90)
    monkeypatch.setattr(cuda, "sm_count", lambda: 2)
    monkeypatch.setattr(cuda, "cubin", lambda kernel, size, index, arch: (b"", "lowered"))
    monkeypatch.setattr(cuda, "target_arch", lambda arch: arch)
    monkeypatch.setattr(cuda, "kernel", lambda *key: ("function", 2))
    monkeypatch.setattr(kernels, "device", host.ShimDevice(host.load(host.shared_library())))
    return fake


def test_compile_times_build_what_the_launcher_loads(monkeypatch):
    """The launcher loads CUBINs for cuda.target_arch(device arch); timing others would compile for nothing."""
    from trt_scatter.plugins import cuda

    built = []
    monkeypatch.setattr(cuda, "cubin", lambda kernel, size, index, arch: built.append(arch) or (b"", "lowered"))
    monkeypatch.setattr(cuda, "target_arch", lambda arch: {89: 86}[arch])  # an NVRTC without sm_89
    records = gpu_check.compile_times(cuda, 89)
    assert len(records) == 64 and set(built) == {86} and {r["arch"] for r in records} == {86}
    assert {r["kernel"].split("<")[0] for r in records} == {f"{op}{suffix}" for suffix in ("", "_aot") for op in
                                                            ("slice_scatter", "scatter_update", "tensor_scatter", "scatter_elements_reduce", "scatter_nd_reduce")}


def _torch_device():
    try:
        import torch  # noqa: F401
    except ImportError:
        return None
    return "cpu"  # host memory stands for device memory here


@needs_gxx
def test_benchmark_code_runs_on_host_memory(host_gpu):
    from trt_scatter.plugins import cuda

    plan = [entry for entry in gpu_check.benchmark_plan(1) if entry["fraction"] != 0.1]
    rows, problems, timing = gpu_check.benchmarks(kernels, cuda, 0x5, size_mb=1, reps=1, torch_device=_torch_device(), plan=plan)
    assert problems == [] and len(rows) == len(plan) and all(row["correct"] for row in rows)
    assert all(row["bw_vs_memcpy"] > 0 for row in rows if row["path"] == "copy")
    assert all(row["speedup_vs_copy"] == 1.0 for row in rows if row["path"] == "in place" and "int32" not in row["what"])  # all 1.5 ms
    compared = [row for row in rows if "torch_ms" in row]
    assert host_gpu.memsets >= len(rows) + len(compared)  # an L2 flush before each timed repetition
    if _torch_device():
        assert len(compared) == len([e for e in plan if e.get("entry") != "aot" and (e["op"] == "slice_scatter" or e["index_itemsize"] == 8)])
        assert all(row["torch_same_output"] and row["torch_over_ours"] == 1.0 for row in compared)
    assert set(timing["memcpy_ms_by_bytes"]) == {str(1 << 20)}
    assert host_gpu.live == set()  # every buffer freed


@needs_gxx
def test_benchmarks_report_a_wrong_output(host_gpu, monkeypatch):
    class Dropping(host.ShimDevice):
        def launch(self, *args):
            pass

    from trt_scatter.plugins import cuda

    monkeypatch.setattr(kernels, "device", Dropping(host.load(host.shared_library())))
    plan = [entry for entry in gpu_check.benchmark_plan(1) if entry["path"] == "copy"][:2]
    rows, problems, _ = gpu_check.benchmarks(kernels, cuda, 0x5, size_mb=1, reps=1, plan=plan)
    assert [row["correct"] for row in rows] == [False, False] and len(problems) == 2 and "differs from the oracle" in problems[0]


@needs_gxx
def test_a_torch_failure_keeps_our_row(host_gpu, monkeypatch):
    pytest.importorskip("torch")
    from trt_scatter.plugins import cuda

    def failing(self, entry, data, updates, output):
        raise RuntimeError("no such torch op")

    monkeypatch.setattr(gpu_check.TorchSide, "operation", failing)
    plan = gpu_check.benchmark_plan(1)[:1]
    rows, problems, _ = gpu_check.benchmarks(kernels, cuda, 0x5, size_mb=1, reps=1, torch_device="cpu", plan=plan)
    assert rows[0]["correct"] and rows[0]["ms"] == 1.5 and rows[0]["torch_error"] == "RuntimeError: no such torch op"
    assert problems == [f"{rows[0]['what']}: torch failed: RuntimeError: no such torch op"]


@needs_gxx
def test_python_overhead_with_and_without_driver_calls(host_gpu):
    from trt_scatter.plugins import cuda

    records = gpu_check.python_overhead(kernels, cuda, 0x5, launches=5)
    assert [r["what"] for r in records] == ["launch_slice_scatter, in place", "launch_slice_scatter, copy path",
                                            "launch_scatter_update, in place", "launch_slice_scatter, in place, debug counter"]
    assert all(r["us_per_call"] > 0 and r["python_only_us"] > 0 for r in records)
    assert kernels.device.calls  # the shim ran the launches with driver calls


@needs_gxx
def test_quick_run_end_to_end_on_host_memory(host_gpu, tmp_path, monkeypatch, kernel_cache):
    monkeypatch.setenv("TRT_SCATTER_CACHE_DIR", kernel_cache)  # main() sets it: restore it after
    assert gpu_check.main(["--quick", "--out", str(tmp_path), "--cache-dir", kernel_cache]) == 0
    results = json.loads((tmp_path / "gpu_check.json").read_text())
    assert results["all_correct"] and results["machine"]["device"] == "Host Test Device" and results["machine"]["l2_bytes"] == 1 << 16
    assert len(results["compile"]) == 64 and len(results["correctness"]) == 72 and results["resources"][0]["registers"] == 40
    assert set(results["phases"]) == {"compile", "resources", "correctness", "determinism"}
    assert [(r["op"], r["runs"], r["identical"], r["oracle"]) for r in results["determinism"]] == [
        ("scatter_elements_reduce", 3, True, True), ("scatter_nd_reduce", 3, True, True)]
    assert "All correct: True" in (tmp_path / "gpu_check.md").read_text()


@needs_gxx
def test_a_phase_error_is_recorded_and_the_run_goes_on(host_gpu, tmp_path, monkeypatch, kernel_cache):
    monkeypatch.setenv("TRT_SCATTER_CACHE_DIR", kernel_cache)

    def broken(cuda):
        raise ValueError("resources broke")

    monkeypatch.setattr(gpu_check, "kernel_resources", broken)
    assert gpu_check.main(["--quick", "--out", str(tmp_path), "--cache-dir", kernel_cache]) == 1
    results = json.loads((tmp_path / "gpu_check.json").read_text())
    assert results["phases"]["resources"]["error"] == "ValueError: resources broke" and results["all_correct"]
    assert results["problems"] == ["phase resources: ValueError: resources broke"]


# ---- the rehearsal: gpu_check.sh end to end behind the real cuda-bindings and the stand-in driver ----


def _without_fakecuda():
    return {k: v for k, v in os.environ.items() if not k.startswith(("FAKECUDA_", "TRT_SCATTER_REQUIRE_GPU"))}


FAKE_SANITIZER = textwrap.dedent("""\
    #!/usr/bin/env bash
    # A stand-in compute-sanitizer. FAKE_SANITIZER: run (the program, then a clean summary in the
    # tool's own format), errors (2 memory errors), race (3 hazards), refuse (as on gVisor: the device
    # is not supported), hang.
    tool=memcheck
    while [ $# -gt 0 ]; do case "$1" in --tool) tool=$2; shift 2;; --error-exitcode|--print-limit) shift 2;; --*) shift;; *) break;; esac; done
    echo "========= COMPUTE-SANITIZER"
    case "${FAKE_SANITIZER:-run}" in
        errors) echo "========= Invalid __global__ write of size 4 bytes"; echo "========= ERROR SUMMARY: 2 errors"; exit 99 ;;
        race) echo "========= RACECHECK SUMMARY: 3 hazards displayed (3 errors, 0 warnings)"; exit 99 ;;
        refuse) echo "========= Error: Device not supported"; echo "========= ERROR SUMMARY: 1 error"; exit 1 ;;
        hang) sleep 60 ;;
    esac
    "$@"; code=$?
    if [ "$tool" = racecheck ]; then
        echo "========= RACECHECK SUMMARY: 0 hazards displayed (0 errors, 0 warnings)"
    else
        echo "========= ERROR SUMMARY: 0 errors"
    fi
    exit $code
    """)


def _kernel_cache_of_stand_ins(folder, library):
    """The rehearsal's own kernel cache: for every instantiation gpu_check.py loads, a stand-in CUBIN (an ELF tag) and,
    for each AOT entry, a stand-in PTX (the ``.version`` this NVRTC writes, from one real compile), under the name g++
    gave its kernel in the shim.

    The stand-in driver runs the shim's kernel whatever image it is handed and reads no more of a PTX than its version,
    so compiling the 64 CUBINs and 32 PTX texts (about two minutes of CPU) would prove nothing here;
    tests/test_kernels_compile.py compiles a sample of them and checks that NVRTC's names are the shim's."""
    from trt_scatter.plugins import cuda

    try:
        arch, ptx_arch = cuda.target_arch(90), cuda.aot_ptx_arch()
        isa = cuda.ptx_isa_version(cuda.aot_ptx("slice_scatter_aot", 4)[1])
    except cuda.CudaUnavailableError as error:
        pytest.skip(f"the rehearsal needs NVRTC: {error}")
    for kernel, element_size, index in gpu_check.INSTANTIATIONS:
        symbol = host.kernel_symbol(library, kernel, element_size, index)
        cuda._write_cache_file(folder / f"{cuda.cache_key(kernel, element_size, index, arch)}.cubin", b"\x7fELF stand-in", symbol)
        if kernel.endswith(cuda.AOT_SUFFIX):
            ptx = f"// a stand-in: the driver runs the shim's {symbol}\n.version {isa}\n.target sm_{ptx_arch}\n"
            cuda._write_cache_file(folder / f"{cuda.cache_key(kernel, element_size, index, ptx_arch)}.ptx", ptx.encode(), symbol)
    return folder


@pytest.fixture(scope="module")
def rehearsal(tmp_path_factory, kernel_cache):
    """What gpu_check.sh needs to run here: the stand-in driver and shim, a stand-in compute-sanitizer, a kernel
    cache of stand-in CUBINs and the AOT entries' PTX (_kernel_cache_of_stand_ins). Skips where gcc or cuda-bindings
    are missing."""
    if shutil.which("gcc") is None or shutil.which("g++") is None or shutil.which("timeout") is None:
        pytest.skip("the rehearsal needs gcc, g++ and timeout")
    try:
        import cuda.bindings.driver  # noqa: F401
    except ImportError as error:
        pytest.skip(f"the rehearsal needs cuda-bindings ({error})")
    folder = tmp_path_factory.mktemp("rehearsal")
    try:
        driver = host.build_fakecuda(folder / "fakecuda")
    except subprocess.CalledProcessError as error:
        pytest.skip(f"the stand-in driver does not build here: {error.stderr}")
    sanitizer = folder / "compute-sanitizer"
    sanitizer.write_text(FAKE_SANITIZER)
    sanitizer.chmod(0o755)
    cache = _kernel_cache_of_stand_ins(folder / "kernel-cache", host.shared_library())
    # sms=1: the large cases stay small; ptx_isa: this NVRTC's PTX loads (a driver 580 takes ISA <= 9.0)
    env = host.fakecuda_environment(driver, host.shared_library(), sms=1, ptx_isa="99.9")
    env.update(PYTHON=sys.executable, COMPUTE_SANITIZER=str(sanitizer), TRT_SCATTER_CACHE_DIR=str(cache),
               HYPOTHESIS_PROFILE="dev", GPU_CHECK_PYTEST_ARGS="--deselect tests/test_kernels_gpu.py::test_offsets_past_4_gib")
    env.pop("TRT_SCATTER_REQUIRE_GPU", None)
    return env


ARGS = ["--size-mb", "1", "--reps", "1", "--cases", "2", "--overhead-launches", "20"]


def run_shell(env, out, *args, **settings):
    env = dict(env, **{name: str(value) for name, value in settings.items()})
    result = subprocess.run(["bash", str(SHELL), str(out), *args], env=env, capture_output=True, text=True, timeout=600)
    return result, (out / "summary.md").read_text() if (out / "summary.md").exists() else ""


def summary_rows(summary):
    return {line.split(" | ")[0].strip("| "): line.split(" | ")[1] for line in summary.splitlines() if line.startswith("| ") and "---" not in line and "| step |" not in line}


def test_rehearsal_runs_every_step_and_brings_back_every_figure(rehearsal, tmp_path):
    torch_args = ["--torch-device", "cpu"] if _torch_device() else ["--no-torch"]
    result, summary = run_shell(rehearsal, tmp_path / "out", *ARGS, *torch_args)
    assert result.returncode == 0, result.stdout + result.stderr
    rows = summary_rows(summary)
    assert rows == {"gpu_check.py": "ok", "tests/test_kernels_gpu.py (TRT_SCATTER_REQUIRE_GPU=1)": "ok",
                    "compute-sanitizer memcheck (--sanitize)": "ok: 0 errors", "compute-sanitizer racecheck (--quick)": "ok: 0 errors"}
    # What comes back from the GPU machine: at most 8 files, none in a subfolder.
    assert {path.name for path in (tmp_path / "out").iterdir()} == OUTPUT_FILES
    assert summary in result.stdout  # printed last: where only the end of the output is kept, the verdicts are there
    results = json.loads((tmp_path / "out" / "gpu_check.json").read_text())
    assert results["machine"]["device"] == "Fake H100 (CPU shim)" and results["all_correct"] and results["problems"] == []
    assert len(results["benchmarks"]) == len(gpu_check.benchmark_plan(1)) and all(row["correct"] for row in results["benchmarks"])
    assert len(results["python_overhead"]) == 4 and len(results["resources"]) == 64
    kv = results["kv_cache"]  # the cache's positions cut to fit --size-mb 1
    assert len(kv) == len(gpu_check.kv_cache_plan(1)) == 8 and all(row["correct"] and row["over_launch"] > 0 for row in kv)
    assert all(row["torch_same_output"] for row in kv[:4]) if _torch_device() else True
    assert [(r["op"], r["identical"], r["oracle"]) for r in results["determinism"]] == [
        ("scatter_elements_reduce", True, True), ("scatter_nd_reduce", True, True)]
    assert len(results["reduction_benchmarks"]) == 6 and all(r["correct"] and r["identical"] for r in results["reduction_benchmarks"])
    goals = {goal for goal, _, _ in results["goals"]}
    assert len(goals) == (8 if _torch_device() else 4)  # the decode write's and the reductions' goals too
    assert re.search(r"\b\d+ passed, 1 deselected in", (tmp_path / "out" / "pytest_gpu.log").read_text())
    memcheck = (tmp_path / "out" / "memcheck.log").read_text()  # --sanitize: large cases and every benchmark configuration
    assert "| slice_scatter | struct | 1 | int32 | 8 | 0 |  |" in memcheck and "== benchmarks" in memcheck
    cubins = list(Path(rehearsal["TRT_SCATTER_CACHE_DIR"]).glob("*.cubin"))  # every one loaded was a stand-in: NVRTC compiled none
    assert len(cubins) == 64 and all(b"ELF stand-in" in path.read_bytes() for path in cubins)
    ptxs = list(Path(rehearsal["TRT_SCATTER_CACHE_DIR"]).glob("*.ptx"))  # nor any AOT entry's PTX
    assert len(ptxs) == 32 and all(b"a stand-in" in path.read_bytes() for path in ptxs)


def test_rehearsal_fault_keeps_results_and_names_the_case(rehearsal, tmp_path):
    """A kernel fault (sticky: every later call fails) at the 11th launch of each process: in gpu_check.py,
    the first case of 2-byte SliceScatter with int32 parameters (1-byte int32 took 2 random + 6 large, int64 2)."""
    out = tmp_path / "out"
    result, summary = run_shell(rehearsal, out, *ARGS, "--no-torch", FAKECUDA_FAIL_AFTER=10, GPU_CHECK_STEPS="check tests")
    assert result.returncode == 1
    rows = summary_rows(summary)
    assert rows["gpu_check.py"].startswith("FAILED: a sticky CUDA error")
    assert rows["tests/test_kernels_gpu.py (TRT_SCATTER_REQUIRE_GPU=1)"].startswith("FAILED: a sticky CUDA error")
    results = json.loads((out / "gpu_check.json").read_text())
    assert len(results["compile"]) == 64 and len(results["resources"]) == 64  # written before the fault
    fault = results["fault"]
    assert (fault["phase"], fault["op"], fault["element_size"], fault["index_type"]) == ("correctness", "slice_scatter", 2, "int32")
    assert fault["case"] == "random 0, rng [0, 0, 2, 4, 0]" and fault["data_shape"] and "start" in fault
    assert "CUDA_ERROR_ILLEGAL_ADDRESS" in fault["error"]
    assert [(r["element_size"], r["index_type"], r["failed"]) for r in results["correctness"]] == [(1, "int32", 0), (1, "int64", 0)]
    assert "## FAULT" in (out / "gpu_check.md").read_text()
    log = (out / "pytest_gpu.log").read_text()
    assert "a sticky CUDA error stopped the GPU tests" in log and "'case': {'data':" in log and "Flaky" not in log


def test_rehearsal_without_a_gpu_every_skip_fails(rehearsal, tmp_path):
    """The GPU tests under TRT_SCATTER_REQUIRE_GPU=1 on a machine without a driver: failures, not skips."""
    env = {k: v for k, v in rehearsal.items() if k not in ("LD_LIBRARY_PATH", "FAKECUDA_SHIM")}
    if HAS_GPU:
        pytest.skip("this machine has a GPU")
    result, summary = run_shell(env, tmp_path / "out", GPU_CHECK_STEPS="tests")
    assert result.returncode == 1
    assert summary_rows(summary) == {"tests/test_kernels_gpu.py (TRT_SCATTER_REQUIRE_GPU=1)": "FAILED (exit 1)"}
    log = (tmp_path / "out" / "pytest_gpu.log").read_text()
    assert "TRT_SCATTER_REQUIRE_GPU='1' and no CUDA GPU" in log and "skipped" not in log


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
def test_require_gpu_reads_on_as_every_switch_does(tmp_path):
    """TRT_SCATTER_REQUIRE_GPU=true is on, as it is for every other switch: a safety switch is never silently off."""
    env = dict(_without_fakecuda(), TRT_SCATTER_REQUIRE_GPU="true")
    result = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-k", "aot_ptx_loads",
                             str(ROOT / "tests" / "test_kernels_gpu.py")], capture_output=True, text=True, timeout=120, env=env, cwd=tmp_path)
    assert result.returncode == 1, result.stdout[-2000:]
    assert "TRT_SCATTER_REQUIRE_GPU='true' and no CUDA GPU" in result.stdout and "skipped" not in result.stdout


def test_rehearsal_a_gpu_test_that_cannot_run_fails(rehearsal, tmp_path):
    """The stand-in reports 2 GiB free: the 4 GiB test cannot run, and under gpu_check.sh that is a failure."""
    result, summary = run_shell(rehearsal, tmp_path / "out", GPU_CHECK_STEPS="tests", GPU_CHECK_PYTEST_ARGS="-k offsets_past")
    assert summary_rows(summary) == {"tests/test_kernels_gpu.py (TRT_SCATTER_REQUIRE_GPU=1)": "FAILED (exit 1)"}
    assert "this GPU test cannot run: needs about 6 GiB of free GPU memory" in (tmp_path / "out" / "pytest_gpu.log").read_text()


def test_rehearsal_a_driver_older_than_nvrtc_refuses_the_aot_ptx(rehearsal, tmp_path):
    """The GPU machines this targets run driver 580 (PTX ISA <= 9.0): if the NVRTC there is newer, the GPU tests say so by name."""
    from trt_scatter.plugins import cuda

    try:
        isa = cuda.ptx_isa_version(cuda.aot_ptx("slice_scatter_aot", 4)[1])
    except cuda.CudaUnavailableError as error:
        pytest.skip(str(error))
    if tuple(map(int, isa.split("."))) <= (9, 0):
        pytest.skip(f"this NVRTC writes PTX ISA {isa}, which driver 580 takes")
    result, summary = run_shell(rehearsal, tmp_path / "out", GPU_CHECK_STEPS="tests", FAKECUDA_PTX_ISA="9.0",
                                GPU_CHECK_PYTEST_ARGS="-k aot_ptx_loads")
    assert summary_rows(summary) == {"tests/test_kernels_gpu.py (TRT_SCATTER_REQUIRE_GPU=1)": "FAILED (exit 1)"}
    log = (tmp_path / "out" / "pytest_gpu.log").read_text()
    assert f"cuModuleLoadData(PTX ISA {isa} of " in log and "CUDA_ERROR_UNSUPPORTED_PTX_VERSION" in log


@pytest.mark.parametrize("mode, verdict", [
    ("errors", "FAILED: 2 errors found"),
    ("race", "FAILED: 3 race hazards found"),
    ("refuse", "UNAVAILABLE: compute-sanitizer refused this device or could not start (see the log), exit 1"),
    ("hang", "TIMED OUT"),
    ("missing", "UNAVAILABLE: compute-sanitizer not found"),
])
def test_rehearsal_sanitizer_verdicts(rehearsal, tmp_path, mode, verdict):
    if mode == "missing" and any(Path(p).is_file() for p in ["/usr/local/cuda/bin/compute-sanitizer", shutil.which("compute-sanitizer") or ""]):
        pytest.skip("this machine has a compute-sanitizer")
    tool, mode_flag = ("racecheck", "--quick") if mode == "race" else ("memcheck", "--sanitize")
    settings = {"FAKE_SANITIZER": mode, "GPU_CHECK_STEPS": tool, "GPU_CHECK_BUDGET_S": 6}
    if mode == "missing":
        settings["COMPUTE_SANITIZER"] = tmp_path / "none"
    result, summary = run_shell(rehearsal, tmp_path / "out", **settings)
    assert result.returncode == 1
    assert summary_rows(summary) == {f"compute-sanitizer {tool} ({mode_flag})": verdict}


def test_the_output_folder_is_required(tmp_path):
    env = {k: v for k, v in os.environ.items() if k != "OUT"}
    result = subprocess.run(["bash", str(SHELL)], env=env, capture_output=True, text=True, timeout=60, cwd=tmp_path)
    assert result.returncode == 2 and "the output folder must be given (or OUT set)" in result.stderr


# ---- the reduction ops: plan, determinism, time against torch (on host memory here) ----


def test_reduction_plan_covers_the_gnn_and_large_scatter_shapes():
    plan = gpu_check.reduction_plan(256)
    assert {(e["rows"], e["targets"], e["columns"]) for e in plan} == {(10_000_000, 1_000_000, 64), (1_000_000, 100_000, 128)}
    assert {(e["reduction"], e["include_self"]) for e in plan} == {("add", 1), ("max", 0), ("mean", 0)} and len(plan) == 6
    assert all(e["rows"] >= 1024 and e["targets"] >= 64 for e in gpu_check.reduction_plan(1))


@needs_gxx
def test_determinism_on_the_cpu_shim_and_torch_beside_it(host_gpu):
    from trt_scatter.plugins import cuda

    records = gpu_check.determinism(kernels, cuda, 0x5, runs=4, size_mb=1, torch_device=_torch_device())
    assert [(r["op"], r["runs"], r["distinct_outputs"], r["identical"], r["oracle"]) for r in records] == [
        ("scatter_elements_reduce", 4, 1, True, True), ("scatter_nd_reduce", 4, 1, True, True)]
    if _torch_device():
        assert records[1]["torch_index_add_distinct_outputs"] == 1  # torch on a CPU adds in order
    assert host_gpu.live == set()


@needs_gxx
def test_reduction_benchmarks_check_ours_and_time_torch_both_ways(host_gpu):
    from trt_scatter.plugins import cuda, reductions

    rows = gpu_check.reduction_benchmarks(kernels, cuda, 0x5, size_mb=1, reps=1, torch_device=_torch_device())
    assert len(rows) == 6 and all(row["correct"] and row["identical"] and row["ms"] == 1.5 for row in rows), rows
    for row, entry in zip(rows, gpu_check.reduction_plan(1)):  # one run's launches timed apart: the last one reduces
        launches = len(reductions.Plan(entry["rows"], entry["targets"]).launches(lambda **fields: b"", 0, entry["columns"]))
        assert (row.get("launches"), row.get("sort_ms"), row.get("reduce_ms")) == (launches, 1.5 * (launches - 1), 1.5), row.get("error")
    if _torch_device():
        assert all(row["ours_over_torch_atomic"] == 1.0 for row in rows)  # every event pair reads 1.5 ms here
        assert {row.get("torch_deterministic_over_ours") for row in rows} <= {1.0, None}
    results = {"reduction_benchmarks": rows, "determinism": [{"runs": 100, "distinct_outputs": 1, "identical": True, "oracle": True}]}
    goals = {goal: (worst, met) for goal, worst, met in gpu_check.goals(results)}
    assert goals["reductions: one output over 100 launches (bit-identical), the oracle's"] == (1, True)
    if _torch_device():
        assert goals["reductions: our time / torch's with atomics <= 2 (same buffers, stream)"] == (1.0, True)
    assert host_gpu.live == set()


@needs_gxx
def test_a_reduction_kernel_that_differs_from_run_to_run_is_reported(host_gpu, monkeypatch):
    from trt_scatter.plugins import cuda, reductions

    runs = iter(range(1000))
    original = reductions.run

    def flaky(kernel, **arguments):  # every other launch sums in another order: what a float-atomic kernel does
        original(kernel, **arguments)
        if next(runs) % 2:
            bad = arguments["output"]
            ctypes_value = np.ctypeslib.as_array((np.ctypeslib.ctypes.c_float * 1).from_address(bad))
            ctypes_value[0] = np.nextafter(ctypes_value[0], np.float32(np.inf))
    monkeypatch.setattr(reductions, "run", flaky)
    records = gpu_check.determinism(kernels, cuda, 0x5, runs=4, size_mb=1)
    assert [r["identical"] for r in records] == [False, False] and all(r["distinct_outputs"] == 2 for r in records)


def test_reduce_phases_bench_times_every_launch_of_the_plan(rehearsal, tmp_path):
    """bench/bench_reduce_phases.py behind the stand-in driver: each shape and chunk gets every phase's time, and the
    launches and workspace of the plan it ran."""
    from trt_scatter.plugins import reductions

    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_reduce_phases.py"), "--out", str(tmp_path), "--size-mb", "1",
                             "--reps", "2", "--chunks", "256,16"], env=rehearsal, capture_output=True, text=True, timeout=600)
    assert result.returncode == 0, result.stderr[-3000:]
    rows = json.loads((tmp_path / "reduce_phases.json").read_text())["phases"]
    expected = [(entry["what"], chunk) for entry in gpu_check.reduction_plan(1)[::3] for chunk in (256, 16)]
    assert [(row["what"], row["chunk"]) for row in rows] == expected
    for row, entry in zip(rows, [entry for entry in gpu_check.reduction_plan(1)[::3] for _ in (256, 16)]):
        plan = reductions.Plan(entry["rows"], entry["targets"], row["chunk"])
        assert row["launches"] == len(plan.launches(lambda **fields: b"", 0, entry["columns"]))
        assert all(row[key] >= 0 for key in ("keys_ms", "count_ms", "scan_ms", "place_ms", "reduce_ms"))
        assert row["total_ms"] == pytest.approx(sum(row[key] for key in ("keys_ms", "count_ms", "scan_ms", "place_ms", "reduce_ms")), abs=1e-3)
    assert "| what | chunk | keys_ms |" in (tmp_path / "reduce_phases.md").read_text()
    assert json.loads((tmp_path / "reduce_phases.json").read_text())["machine"]["commit"] not in ("", "unknown")


def test_reduce_phases_bench_refuses_bad_chunks():
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_reduce_phases.py"), "--out", "x", "--chunks", "64,a"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and "--chunks must be integers separated by commas, got '64,a'" in result.stderr
    result = subprocess.run([sys.executable, str(ROOT / "bench" / "bench_reduce_phases.py"), "--out", "x", "--chunks", "64,0"],
                            capture_output=True, text=True, timeout=60)
    assert result.returncode == 2 and result.stderr.endswith("error: --chunks must be at least 1, got 0\n")
