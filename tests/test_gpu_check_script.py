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
