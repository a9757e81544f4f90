"""The CPU benchmarks run end to end and report every case (small sizes; no timing is asserted)."""

from pathlib import Path

import onnx_fixtures as fx

BENCH = Path(__file__).resolve().parents[1] / "bench"


def _run(script, *args):
    """``python bench/<script> <args>`` (in a forked child: the modules are imported already)."""
    result = fx.run_python(BENCH / script, args)
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
    rows = [line for line in result.stdout.splitlines() if line.startswith(("SliceScatter", "ScatterUpdate", "ScatterNDReduce", "ScatterElementsReduce"))]
    assert len(rows) == 8 and all(len(row.split()) >= 10 for row in rows)
    assert [int(row.split()[-3]) for row in rows] == [1, 1, 1, 1, 23, 23, 23, 23]  # launches: the reductions' sort and reduction


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


def test_model_size_benchmark_reports_every_chain():
    result = _run("bench_model_size.py", "--nodes", "3", "6", "--repeat", "1", "--build")
    assert result.returncode == 0, result.stderr
    rows = [line.split("|")[1:-1] for line in result.stdout.splitlines() if line.startswith(("| lower", "| build"))]
    assert [(row[0].strip(), int(row[1])) for row in rows] == [("lower", 3), ("lower", 6), ("build --plugins", 3), ("build --plugins", 6)]


def test_hugging_face_kv_cache_benchmark_reports_every_path():
    import pytest

    pytest.importorskip("torch")
    pytest.importorskip("transformers")
    result = _run("bench_hf_kv_cache.py", "--families", "llama", "--shapes", "1x1", "--no-check")
    assert result.returncode == 0, result.stdout[-2000:] + result.stderr[-2000:]
    rows = [line.split("|")[1:-1] for line in result.stdout.splitlines() if line.startswith("| llama")]
    assert len(rows) == 4 and all(row[5].strip() == "4 ScatterUpdate" and row[6].strip() == "True" for row in rows)
    assert "4 of 4 exports: one trt_scatter node per write" in result.stdout


def test_reductions_benchmark_reports_the_oracle_and_the_plan():
    result = _run("bench_reductions.py", "--rows", "2000", "--targets", "50", "--columns", "4", "--repeat", "1")
    assert result.returncode == 0, result.stderr
    rows = [line.split("|") for line in result.stdout.splitlines() if line.startswith("| oracle") or line.startswith("| np.add.at")]
    assert len(rows) == 2 and all(row[4].strip() == "True" for row in rows)  # np.add.at gives the oracle's bits here
    assert "| 10M updates into 1M targets of 64 | 3 | 23 | 190.9 |" in result.stdout


def test_model_memory_benchmark_reports_every_command_against_the_baseline():
    result = _run("bench_model_memory.py", "--weights-mb", "4", "--commands", "lower", "rewrite")
    assert result.returncode == 0, result.stderr
    rows = [line.split("|")[1:-1] for line in result.stdout.splitlines() if line.startswith("| ") and "---" not in line and "command" not in line]
    assert [row[0].strip() for row in rows] == ["onnx.load + onnx.save (baseline)", "lower", "rewrite"]
    assert float(rows[0][3]) == 1.0 and all(float(row[1]) > 0 for row in rows)
