"""The CPU benchmarks run end to end and report every case (small sizes; no timing is asserted)."""

import subprocess
import sys
from pathlib import Path

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _run(script, *args):
    result = subprocess.run([sys.executable, str(BENCH / script), *args], capture_output=True, text=True, timeout=300)
    assert "Traceback" not in result.stderr, result.stderr
    return result


def test_oracle_benchmark_reports_every_case():
    result = _run("bench_oracle.py", "--data-mb", "0.25", "--repeat", "1")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.split()[:1] and line.split()[0] in {"slice_scatter", "scatter_elements", "scatter_nd", "scatter_update"}]
    assert len(rows) == 10 and "worst ratio" in result.stdout


def test_lowering_size_benchmark_reports_every_case():
    result = _run("bench_lowering_size.py")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.split()[:1] and line.split()[0] in {"slice_scatter", "scatter_elements", "scatter_nd", "scatter_update"}]
    assert len(rows) == 18
    assert all(row.split()[-1] == "8" for row in rows if "run-time ax" in row)  # one int64 destination per updated element


def test_enqueue_overhead_benchmark_reports_every_case():
    result = _run("bench_enqueue_overhead.py", "--calls", "20")
    assert result.returncode in (0, 1), result.stderr  # 1: over the target on this machine, which tests do not judge
    rows = [line for line in result.stdout.splitlines() if line.startswith(("SliceScatter", "ScatterUpdate"))]
    assert len(rows) == 4 and all(len(row.split()) >= 8 for row in rows)


def test_lowered_models_benchmark_reports_every_case():
    result = _run("bench_lowered_models.py", "--small")
    assert result.returncode == 0, result.stderr
    rows = [line for line in result.stdout.splitlines() if line.startswith(("KV ", "paged", "[B,S,E]"))]
    assert len(rows) == 10 and all(len(row.split()) > 8 for row in rows)


def test_torch_export_benchmark_reports_every_variant_of_a_case():
    import pytest

    pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    result = _run("bench_torch_export.py", "--cases", "index_copy_last")
    assert result.returncode == 0, result.stderr
    rows = [line.split("|")[1:-1] for line in result.stdout.splitlines() if line.startswith("| index_copy_last")]
    assert len(rows) == 4 and all(len(row) == 12 for row in rows)
    assert all(row[10].strip() == "2/1" for row in rows)  # trt_scatter.torch: the axis constant and one ScatterUpdate
