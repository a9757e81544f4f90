"""bench/gpu_check.py without a GPU: arguments, case generation, the correctness check itself (run on
the CPU shim through the same launch code), and the report. The GPU parts run on a lent GPU."""

import importlib.util
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from conftest import HAS_GPU, needs_gxx
from kernel_shim import host
from trt_scatter import oracle
from trt_scatter.plugins import kernels

SCRIPT = Path(__file__).resolve().parents[1] / "bench" / "gpu_check.py"
spec = importlib.util.spec_from_file_location("gpu_check", SCRIPT)
gpu_check = importlib.util.module_from_spec(spec)
spec.loader.exec_module(gpu_check)


def test_arguments():
    args = gpu_check.parse_args([])
    assert args.out == gpu_check.DEFAULT_OUT and args.size_mb >= 256 and not args.quick
    quick = gpu_check.parse_args(["--quick", "--out", "x", "--cases", "9"])
    assert quick.no_bench and quick.cases == 3 and quick.out == Path("x")
    with pytest.raises(SystemExit):
        gpu_check.parse_args(["--size-mb", "100"])


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


@needs_gxx
def test_correctness_check_passes_on_the_cpu_shim(monkeypatch):
    monkeypatch.setattr(kernels, "device", host.ShimDevice(host.load(host.shared_library())))
    records = gpu_check.check_correctness(kernels, host.Memory(), stream=0, cases=4, max_elements=2000)
    assert len(records) == 2 * 4 * 2
    assert all(r["failed"] == 0 for r in records), [r for r in records if r["failed"]]


@needs_gxx
def test_correctness_check_reports_a_wrong_kernel(monkeypatch):
    class Dropping(host.ShimDevice):  # loses every launch: outputs stay data (copy path) or untouched
        def launch(self, *args):
            pass

    monkeypatch.setattr(kernels, "device", Dropping(host.load(host.shared_library())))
    records = gpu_check.check_correctness(kernels, host.Memory(), stream=0, cases=4, max_elements=2000)
    assert sum(r["failed"] for r in records) > 0
    assert any(r["first_failure"] and "count=" in r["first_failure"]["problem"] for r in records)


def test_report(tmp_path):
    results = {
        "machine": {"device": "Test GPU", "arch": "sm_90"},
        "correctness": [{"op": "slice_scatter", "element_size": 4, "index_type": "int32", "cases": 3, "failed": 0, "first_failure": None}],
        "compile": [{"kernel": "slice_scatter<unsigned int>", "arch": 90, "seconds": 0.8}],
        "benchmarks": [{"kind": "copy path", "what": "x", "ms": 1.0, "time_vs_memcpy": 1.02},
                       {"kind": "python overhead", "what": "y", "us_per_call": 9.5, "target_us": 20}],
        "all_correct": True,
    }
    json_path, md_path = gpu_check.write_results(results, tmp_path / "out")
    assert json.loads(json_path.read_text())["all_correct"] is True
    text = md_path.read_text()
    assert "| slice_scatter | 4 | int32 | 3 | 0 |  |" in text and "`slice_scatter<unsigned int>` | sm_90 | 0.8" in text
    assert "| kind | what | ms | time_vs_memcpy | us_per_call | target_us |" in text and "| python overhead | y |  |  | 9.5 | 20 |" in text


@pytest.mark.skipif(HAS_GPU, reason="checks the behaviour without a GPU")
def test_without_a_gpu_the_script_fails_with_the_reason(tmp_path):
    result = subprocess.run([sys.executable, str(SCRIPT), "--quick", "--out", str(tmp_path)], capture_output=True, text=True, timeout=120)
    assert result.returncode != 0
    assert "CudaUnavailableError: the CUDA driver is unavailable" in result.stderr


class HostDriver:
    """cuda.bindings.driver's calls that gpu_check makes, on host memory (malloc'd "device" buffers),
    so the script's GPU-only code runs here with the kernels on the CPU shim."""

    class CUresult:
        CUDA_SUCCESS = 0

    def __init__(self):
        import ctypes

        self.ctypes, self.libc = ctypes, ctypes.CDLL(None)
        self.libc.malloc.restype, self.libc.malloc.argtypes = ctypes.c_void_p, [ctypes.c_size_t]
        self.libc.free.argtypes = [ctypes.c_void_p]
        self.live, self.events = set(), 0

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

    def cuCtxGetDevice(self):
        return 0, 0

    def cuDeviceGetName(self, length, device):
        return 0, b"Host Test Device\0\0"

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
    monkeypatch.setattr(kernels, "device", host.ShimDevice(host.load(host.shared_library())))
    return fake


def test_compile_times_build_what_the_launcher_loads(monkeypatch):
    """The launcher loads CUBINs for cuda.target_arch(device arch); timing others would compile for nothing."""
    from trt_scatter.plugins import cuda

    built = []
    monkeypatch.setattr(cuda, "cubin", lambda kernel, size, index, arch: built.append(arch) or (b"", "lowered"))
    monkeypatch.setattr(cuda, "target_arch", lambda arch: {89: 86}[arch])  # an NVRTC without sm_89
    records = gpu_check.compile_times(cuda, 89)
    assert len(records) == 12 and set(built) == {86} and {r["arch"] for r in records} == {86}


@needs_gxx
def test_benchmark_code_runs_on_host_memory(host_gpu):
    from trt_scatter.plugins import cuda

    rows, memcpy_ms = gpu_check.benchmarks(kernels, cuda, 0x5, size_mb=2, reps=1, use_torch=False, overhead_launches=5)
    kinds = [row["kind"] for row in rows]
    assert kinds.count("copy path") == 3 and kinds.count("in place") == 5 and kinds.count("python overhead") == 3
    assert all(row["time_vs_memcpy"] == 1.0 for row in rows if "time_vs_memcpy" in row)  # the fake times everything 1.5 ms
    assert set(memcpy_ms) == {str(2 << 20), str(1 << 20)}
    assert host_gpu.live == set()  # every buffer freed


@needs_gxx
def test_quick_run_end_to_end_on_host_memory(host_gpu, tmp_path, monkeypatch):
    monkeypatch.setenv("TRT_SCATTER_CACHE_DIR", str(tmp_path / "cache"))  # main() sets it: restore it after
    assert gpu_check.main(["--quick", "--out", str(tmp_path), "--cache-dir", str(tmp_path / "cache")]) == 0
    results = json.loads((tmp_path / "gpu_check.json").read_text())
    assert results["all_correct"] and results["machine"]["device"] == "Host Test Device"
    assert len(results["compile"]) == 12 and len(results["correctness"]) == 16
    assert "All correct: True" in (tmp_path / "gpu_check.md").read_text()
