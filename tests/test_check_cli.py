"""`trt-scatter check`: builds the engine, compares a backend with the oracle on valid inputs, saves and
checks golden data, and fails (exit 1, FAIL lines) when a reference or golden file is corrupted."""

import sys

import numpy as np
import pytest

import onnx_fixtures as fx
from conftest import HAS_GPU, needs_gpu


@pytest.fixture(scope="module")
def elements_model(tmp_path_factory):
    return fx.save(fx.scatter_elements_model(["N", 5], ["N", 3], axis=1), tmp_path_factory.mktemp("check") / "elements.onnx")


def check(*args, **kwargs):
    return fx.run_tool("trt-scatter", ["check", *args], **kwargs)


def output_of(result):
    return result.stdout + result.stderr


def test_check_builds_compares_and_saves_golden_data(elements_model, tmp_path):
    inputs, outputs, engine = tmp_path / "inputs.json", tmp_path / "outputs.json", tmp_path / "model.plan"
    result = check(elements_model, "--input-shapes", "data:[3,5]", "indices:[3,3]", "updates:[3,3]", "--seed", "4",
                   "--save-inputs", inputs, "--save-outputs", outputs, "--save-engine", engine)  # fmt: skip
    assert result.returncode == 0, output_of(result)
    assert "engine: built" in result.stdout and engine.stat().st_size > 0
    if not HAS_GPU:
        assert "no GPU: the engine is not run; comparing onnxruntime with the oracle instead" in result.stdout
        assert "PASS output: onnxruntime vs oracle: max abs diff 0" in result.stdout
    assert result.stdout.rstrip().endswith("PASSED")

    from polygraphy.comparator import RunResults
    from polygraphy.json import load_json

    feeds = load_json(str(inputs))
    assert feeds[0]["data"].shape == (3, 5) and feeds[0]["indices"].shape == (3, 3)
    assert list(RunResults.load(str(outputs)).keys())[0] == "oracle"

    again = check(elements_model, "--load-inputs", inputs, "--load-outputs", outputs)
    assert again.returncode == 0, output_of(again)
    assert "PASS output: oracle vs golden oracle: max abs diff 0" in again.stdout


def _golden(elements_model, tmp_path):
    inputs, outputs = tmp_path / "inputs.json", tmp_path / "outputs.json"
    saved = check(elements_model, "--save-inputs", inputs, "--save-outputs", outputs)
    assert saved.returncode == 0, output_of(saved)
    return inputs, outputs


def _shift_golden(outputs, delta):
    from polygraphy.comparator import RunResults

    results = RunResults.load(str(outputs))
    iteration = results[0][1][0]
    shifted = iteration["output"].copy()
    shifted.flat[0] += delta
    iteration["output"] = shifted
    results.save(str(outputs))


def test_a_corrupted_golden_file_fails_unless_within_tolerance(elements_model, tmp_path):
    inputs, outputs = _golden(elements_model, tmp_path)
    _shift_golden(outputs, 1e-3)
    failed = check(elements_model, "--load-inputs", inputs, "--load-outputs", outputs)
    assert failed.returncode == 1, output_of(failed)
    assert "FAIL output: oracle vs golden oracle" in failed.stdout and failed.stdout.rstrip().endswith("FAILED")
    tolerant = check(elements_model, "--load-inputs", inputs, "--load-outputs", outputs, "--atol", "1e-2")
    assert tolerant.returncode == 0, output_of(tolerant)


def test_a_corrupted_oracle_fails_the_check(elements_model):
    corrupt = (
        "import sys, trt_scatter.oracle as o\n"
        "real = o.scatter_elements\n"
        "def wrong(*args, **kwargs):\n"
        "    out = real(*args, **kwargs)\n"
        "    out.flat[-1] += 1\n"
        "    return out\n"
        "o.scatter_elements = wrong\n"
        "from trt_scatter.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )
    import subprocess

    result = subprocess.run([sys.executable, "-c", corrupt, "check", elements_model], capture_output=True, text=True, timeout=300)
    assert result.returncode == 1, output_of(result)
    backend = "tensorrt" if HAS_GPU else "onnxruntime"
    assert f"FAIL output: {backend} vs oracle: max abs diff 1" in result.stdout


def test_plugin_model_is_checked_against_golden_data_of_its_native_lowering(tmp_path):
    start, stop, step = [-1, 1], [-8, 7], [-2, 3]
    native, updates_shape = fx.slice_scatter_native_model([7, 8], start, stop, step)
    native_path = fx.save(native, tmp_path / "native.onnx")
    plugin_path = fx.save(fx.slice_scatter_model([7, 8], updates_shape, start, stop, step), tmp_path / "plugin.onnx")
    inputs, outputs = tmp_path / "inputs.json", tmp_path / "outputs.json"
    saved = check(native_path, "--save-inputs", inputs, "--save-outputs", outputs, "--seed", "9")
    assert saved.returncode == 0, output_of(saved)

    result = check(plugin_path, "--load-inputs", inputs, "--load-outputs", outputs)
    assert "PASS output: oracle vs golden oracle: max abs diff 0" in result.stdout, output_of(result)
    if not HAS_GPU:
        assert "no GPU: the engine is not run; only the oracle runs" in result.stdout
    assert result.returncode == 0 and result.stdout.rstrip().endswith("PASSED"), output_of(result)

    alone = check(plugin_path, "--load-inputs", inputs)
    assert alone.returncode == 0 and "engine: built" in alone.stdout, output_of(alone)
    if not HAS_GPU:  # the oracle has nothing to be compared with: the verdict says only that the engine built
        assert alone.stdout.rstrip().endswith("BUILT (nothing compared)"), output_of(alone)


def test_bad_arguments_and_inputs_end_in_one_line(elements_model, tmp_path):
    bad_shape = check(elements_model, "--input-shapes", "data:[3,x]")
    assert bad_shape.returncode == 2 and "'data:[3,x]' is not NAME:[D0,D1,...]" in bad_shape.stderr

    no_iterations = check(elements_model, "--iterations", "0")
    assert no_iterations.returncode == 2 and "'0' is not a positive integer" in no_iterations.stderr

    missing = check(tmp_path / "missing.onnx")
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "trt-scatter check: error: cannot read ONNX model" in missing.stderr

    unfit = check(elements_model, "--input-shapes", "indices:[3,2]")
    assert unfit.returncode == 2
    assert "cannot generate valid inputs: input 'indices': the given shape (3, 2) does not fit the model's (N, 3)" in unfit.stderr

    (tmp_path / "not_feeds.json").write_text("{}")
    not_feeds = check(elements_model, "--load-inputs", tmp_path / "not_feeds.json")
    assert not_feeds.returncode == 2 and "does not hold a list of feed dicts" in not_feeds.stderr


def test_multiple_iterations_get_one_verdict_each(tmp_path):
    path = fx.save(fx.scatter_nd_model([4, 5], [3, 1], [3, 5], dtype=np.int64), tmp_path / "nd.onnx")
    result = check(path, "--iterations", "2")
    assert result.returncode == 0, output_of(result)
    assert "PASS output (iteration 0)" in result.stdout and "PASS output (iteration 1)" in result.stdout


@needs_gpu
def test_check_runs_tensorrt_on_the_gpu(elements_model):
    result = check(elements_model)
    assert result.returncode == 0, output_of(result)
    assert "PASS output: tensorrt vs oracle: max abs diff 0" in result.stdout


def _verdict(expected, actual, atol=0.0, rtol=0.0):
    from polygraphy.comparator import IterationResult, RunResults

    from trt_scatter.cli.check import _compare

    results = RunResults([(name, [IterationResult({"output": array}, runner_name=name)]) for name, array in (("oracle", expected), ("engine", actual))])
    return _compare(results, [("oracle", "engine")], atol, rtol)


def test_outputs_of_another_type_or_shape_fail(capsys):
    """Equal values in another type (an engine output of the wrong type) or shape are a mismatch, never a pass or a crash."""
    expected = np.arange(6, dtype=np.float32).reshape(2, 3)
    for actual in (expected.astype(np.float16), expected.astype(np.int64), expected.reshape(3, 2)):
        assert not _verdict(expected, actual, atol=1.0)
        assert f"FAIL output: engine vs oracle: got {actual.dtype} {actual.shape}, expected float32 (2, 3)" in capsys.readouterr().out


def test_nan_and_infinities_moved_unchanged_pass_and_changed_ones_fail():
    """Scatter ops move NaN and inf like any value: identical outputs pass, exactly or within tolerances."""
    expected = np.array([np.nan, np.inf, -np.inf, 1.0], dtype=np.float32)
    assert _verdict(expected, expected.copy())
    nearly = expected.copy()
    nearly[3] += 1e-3
    assert not _verdict(expected, nearly) and _verdict(expected[1:], nearly[1:], atol=1e-2)
    assert not _verdict(expected, np.array([0.0, np.inf, -np.inf, 1.0], dtype=np.float32), atol=1e-2)
    assert not _verdict(expected[1:], np.array([-np.inf, -np.inf, 1.0], dtype=np.float32), atol=1e-2)
