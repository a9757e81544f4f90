"""`trt-scatter check`: builds the engine, compares a backend with the reference on valid inputs (without a
GPU: onnxruntime on the lowered model, and a distinct verdict and exit code), saves and checks golden data
named by runner, and fails (exit 1, FAIL lines) when the reference, a lowering or a golden file is corrupted."""


import re
import shlex

import numpy as np
import onnx
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


NOT_RUN = "NOT RUN ON TENSORRT: every comparison passed, but the engine was built and never run (no GPU)"


def _exit_code_without_tensorrt_run(result):
    """What a check that passed must exit with here: 0 with a GPU, 3 (engine not run) without."""
    return 0 if HAS_GPU else 3


def test_check_builds_compares_and_saves_golden_data(elements_model, tmp_path):
    inputs, outputs, engine = tmp_path / "inputs.json", tmp_path / "outputs.json", tmp_path / "model.plan"
    result = check(elements_model, "--input-shapes", "data:[3,5]", "indices:[3,3]", "updates:[3,3]", "--seed", "4",
                   "--save-inputs", inputs, "--save-outputs", outputs, "--save-engine", engine)  # fmt: skip
    assert result.returncode == _exit_code_without_tensorrt_run(result), output_of(result)
    assert "engine: built" in result.stdout and engine.stat().st_size > 0
    backend = "tensorrt" if HAS_GPU else "onnxruntime"
    if not HAS_GPU:
        assert "no GPU: the TensorRT engine is not run; comparing onnxruntime with the reference instead" in result.stdout
        assert result.stdout.rstrip().endswith(NOT_RUN + "; exit 3 (--allow-engine-not-run accepts it)")
    else:
        assert result.stdout.rstrip().endswith("PASSED")
    assert f"PASS output: {backend} vs reference: max abs diff 0" in result.stdout

    from polygraphy.comparator import RunResults
    from polygraphy.json import load_json

    feeds = load_json(str(inputs))
    assert feeds[0]["data"].shape == (3, 5) and feeds[0]["indices"].shape == (3, 3)
    assert list(RunResults.load(str(outputs)).keys()) == ["reference", backend]  # golden data says what produced it

    again = check(elements_model, "--load-inputs", inputs, "--load-outputs", outputs, "--allow-engine-not-run")
    assert again.returncode == 0, output_of(again)
    assert f"golden outputs ({outputs}) from: reference, {backend}" in again.stdout
    assert "PASS output: reference vs golden reference: max abs diff 0" in again.stdout
    assert f"PASS output: {backend} vs golden {backend}: max abs diff 0" in again.stdout
    assert "note: golden outputs match only the inputs" not in again.stdout
    # The golden outputs against inputs generated with another seed: a FAIL, and a note that the inputs differ.
    other = check(elements_model, "--input-shapes", "data:[3,5]", "indices:[3,3]", "updates:[3,3]", "--seed", "5", "--load-outputs", outputs)
    assert other.returncode == 1 and f"FAIL output: {backend} vs golden {backend}" in other.stdout, output_of(other)
    assert ("note: golden outputs match only the inputs they were made from, and these inputs were generated here: give the golden run's "
            "inputs with --load-inputs (check --save-inputs saves them beside --save-outputs)") in other.stdout


def _golden(elements_model, tmp_path):
    inputs, outputs = tmp_path / "inputs.json", tmp_path / "outputs.json"
    saved = check(elements_model, "--save-inputs", inputs, "--save-outputs", outputs, "--allow-engine-not-run")
    assert saved.returncode == 0, output_of(saved)
    return inputs, outputs


def _shift_golden(outputs, delta, run=0):
    from polygraphy.comparator import RunResults

    results = RunResults.load(str(outputs))
    iteration = results[run][1][0]
    shifted = iteration["output"].copy()
    shifted.flat[0] += delta
    iteration["output"] = shifted
    results.save(str(outputs))


def test_a_corrupted_golden_file_fails_unless_within_tolerance(elements_model, tmp_path):
    inputs, outputs = _golden(elements_model, tmp_path)
    _shift_golden(outputs, 1e-3, run=1)  # the backend's golden run
    failed = check(elements_model, "--load-inputs", inputs, "--load-outputs", outputs)
    assert failed.returncode == 1, output_of(failed)
    backend = "tensorrt" if HAS_GPU else "onnxruntime"
    assert f"FAIL output: {backend} vs golden {backend}" in failed.stdout and failed.stdout.rstrip().endswith("FAILED")
    assert "PASS output: reference vs golden reference" in failed.stdout
    tolerant = check(elements_model, "--load-inputs", inputs, "--load-outputs", outputs, "--atol", "1e-2")
    assert tolerant.returncode == _exit_code_without_tensorrt_run(tolerant), output_of(tolerant)


def test_a_float_output_that_fails_at_the_default_tolerance_says_which_flags_set_another(tmp_path):
    """A float output off by more than polygraphy's 1e-5 (two runtimes summing a MatMul in other orders are): the FAIL
    line names the flags that set the tolerance, where the tolerance was the default."""
    from onnx import helper

    graph = helper.make_graph([helper.make_node("Sigmoid", ["x"], ["output"])], "g", [fx.info("x", (2, 3), np.float32)],
                              [fx.info("output", (2, 3), np.float32)])
    model = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "sigmoid.onnx")
    inputs, outputs = _golden(model, tmp_path)
    _shift_golden(outputs, 1e-3, run=0)  # the reference's golden run
    failed = check(model, "--load-inputs", inputs, "--load-outputs", outputs)
    assert failed.returncode == 1, output_of(failed)
    (line,) = [line for line in failed.stdout.splitlines() if line.startswith("FAIL output: reference vs golden reference")]
    assert line.endswith("(atol 1e-05, rtol 1e-05: the model computes it with floats; --atol and --rtol set others)"), line
    given = check(model, "--load-inputs", inputs, "--load-outputs", outputs, "--atol", "1e-4")
    assert "(atol 0.0001, rtol 1e-05: --atol given)" in given.stdout and "set others" not in given.stdout, output_of(given)


def test_golden_data_saved_by_polygraphy_run_is_matched_by_runner(elements_model, tmp_path):
    """polygraphy names its runs onnxrt-runner-N0-<time>, reference-runner-N0-<time>: each of check's runs is
    compared with the golden run of its own runner, not every run with the file's first."""
    inputs, outputs = tmp_path / "inputs.json", tmp_path / "outputs.json"
    saved = fx.run_tool("polygraphy", ["run", elements_model, "--pluginref", "--onnxrt", "--trt-scatter-inputs",
                                       "--save-inputs", inputs, "--save-outputs", outputs])
    assert saved.returncode == 0, saved.stdout + saved.stderr
    if HAS_GPU:
        pytest.skip("with a GPU the engine runs: polygraphy's file has no TensorRT run to match")
    _shift_golden(outputs, 1e-3, run=0)  # the golden reference run only
    result = check(elements_model, "--load-inputs", inputs, "--load-outputs", outputs)
    assert result.returncode == 1, output_of(result)
    assert re.search(r"FAIL output: reference vs golden reference-runner-N\d+-\S+", result.stdout), result.stdout
    assert re.search(r"PASS output: onnxruntime vs golden onnxrt-runner-N\d+-\S+", result.stdout), result.stdout


def _corrupted(module, function):
    """A `trt-scatter` run in which ``module.function``'s outputs get 1 added to their last element."""
    return (
        f"import importlib, sys\nm = importlib.import_module({module!r})\n"
        f"real = m.{function}\n"
        "def wrong(*args, **kwargs):\n"
        "    out = real(*args, **kwargs)\n"
        "    out.flat[-1] += 1\n"
        "    return out\n"
        f"m.{function} = wrong\n"
        "from trt_scatter.cli import main\n"
        "sys.exit(main(sys.argv[1:]))\n"
    )


def test_a_corrupted_oracle_fails_the_check(elements_model):
    result = fx.run_python(_corrupted("trt_scatter.oracle.scatter_elements", "scatter_elements"), ["check", elements_model])
    assert result.returncode == 1, output_of(result)
    backend = "tensorrt" if HAS_GPU else "onnxruntime"
    assert f"FAIL output: {backend} vs reference: max abs diff 1" in result.stdout
    assert result.stdout.rstrip().endswith("FAILED")


def test_a_wrong_lowering_fails_the_check_of_a_plugin_model(tmp_path):
    """Without a GPU the lowered model stands in for the engine: a lowering that writes elsewhere fails the check."""
    import mixed_models

    path = fx.save(mixed_models.kv_cache(runtime=True).model, tmp_path / "kv.onnx")
    wrong = _corrupted("trt_scatter.networks.slice_scatter", "_offsets").replace("out.flat[-1] += 1\n    return out", "return m._arith(args[0], 'add', out, 1)")
    result = fx.run_python(wrong, ["check", path, "--allow-engine-not-run"])
    if HAS_GPU:
        pytest.skip("with a GPU the engine runs, not the lowered model")
    assert result.returncode == 1, output_of(result)
    assert "FAIL new_cache: onnxruntime-lowered vs reference" in result.stdout and result.stdout.rstrip().endswith("FAILED")


def test_plugin_model_is_compared_through_its_lowering_and_golden_data(tmp_path):
    start, stop, step = [-1, 1], [-8, 7], [-2, 3]
    native, updates_shape = fx.slice_scatter_native_model([7, 8], start, stop, step)
    native_path = fx.save(native, tmp_path / "native.onnx")
    plugin_path = fx.save(fx.slice_scatter_model([7, 8], updates_shape, start, stop, step), tmp_path / "plugin.onnx")
    inputs, outputs = tmp_path / "inputs.json", tmp_path / "outputs.json"
    saved = check(native_path, "--save-inputs", inputs, "--save-outputs", outputs, "--seed", "9", "--allow-engine-not-run")
    assert saved.returncode == 0, output_of(saved)

    result = check(plugin_path, "--load-inputs", inputs, "--load-outputs", outputs)
    assert "PASS output: reference vs golden reference: max abs diff 0" in result.stdout, output_of(result)
    if not HAS_GPU:
        assert "no GPU: the TensorRT engine is not run; comparing onnxruntime on the lowered model (trt_scatter nodes as standard ONNX ops) with the reference instead" in result.stdout
        assert "PASS output: onnxruntime-lowered vs reference: max abs diff 0" in result.stdout
        # no golden run of that runner: it is compared with the golden reference
        assert "PASS output: onnxruntime-lowered vs golden reference: max abs diff 0" in result.stdout
    assert result.returncode == _exit_code_without_tensorrt_run(result), output_of(result)


@pytest.mark.parametrize("name", ["kv_cache", "conv_update", "matmul_elements", "add_nd"])
def test_models_with_other_ops_around_the_scatter_ops_are_checked(name, tmp_path):
    """MatMul, Conv, Sigmoid, Relu and Add run in the reference too (polygraphy's pluginref knew about 45 ops)."""
    import mixed_models

    case = mixed_models.BUILDERS[name](runtime=True, dynamic=True)
    path = fx.save(case.model, tmp_path / f"{name}.onnx")
    shapes = {"kv_cache": ["x:[2,1,6]", "cache:[2,3,8,4]"], "conv_update": ["x:[2,3,5,4]", "u:[2,3,2,4]"],
              "matmul_elements": ["a:[3,4]", "u:[3,2]", "indices:[3,2]"], "add_nd": ["x:[4,3]", "y:[4,3]", "u:[2,3]"]}[name]  # fmt: skip
    result = check(path, "--input-shapes", *shapes, "--atol", "1e-5", "--rtol", "1e-5", "--iterations", "2")
    assert result.returncode == _exit_code_without_tensorrt_run(result), output_of(result)
    assert "engine: built" in result.stdout
    assert "FAIL" not in result.stdout and result.stdout.count("PASS ") == 2 * len(case.model.graph.output)


@pytest.mark.parametrize("name, axes_from", [("kv_cache", "input"), ("kv_cache", "computed"), ("conv_update", "input")])
def test_models_with_runtime_axes_are_checked_through_their_lowering(name, axes_from, tmp_path):
    """Axes from a graph input (inputs generated, axes included) or computed by the model (inputs
    loaded: generated inputs need constant or fed axes); without a GPU the lowered model is compared."""
    from polygraphy.json import save_json

    import mixed_models

    case = mixed_models.BUILDERS[name](runtime=True, dynamic=True, axes_from=axes_from)
    path = fx.save(case.model, tmp_path / f"{name}.onnx")
    if name == "kv_cache" and axes_from == "input":
        args = ["--input-shapes", "x:[2,1,6]", "cache:[2,3,8,4]", "--iterations", "3"]
    else:
        save_json([case.feeds(np.random.default_rng(seed)) for seed in range(3)], str(tmp_path / "inputs.json"))
        args = ["--load-inputs", tmp_path / "inputs.json"]
    result = check(path, *args, "--atol", "1e-5", "--rtol", "1e-5")
    assert result.returncode == _exit_code_without_tensorrt_run(result), output_of(result)
    assert "engine: built" in result.stdout and "FAIL" not in result.stdout
    assert result.stdout.count("PASS ") == 3 * len(case.model.graph.output)
    if not HAS_GPU:
        assert result.stdout.count("onnxruntime-lowered vs reference") == 3 * len(case.model.graph.output)


def test_a_loop_with_a_scan_output_and_an_input_trip_count_is_checked(tmp_path):
    """A Loop whose trip count is an input and which scans the value its body writes: check drew a negative count, on
    which TensorRT builds no profile for the scan output ("engine: FAIL"), and the reference stacked the scan output
    otherwise than onnxruntime ("FAIL scan"): a valid model failed its check."""
    from test_reference import _loop_with_a_scan_output

    result = check(fx.save(_loop_with_a_scan_output("declared"), tmp_path / "loop.onnx"))
    assert result.returncode == _exit_code_without_tensorrt_run(result), output_of(result)
    assert "FAIL" not in output_of(result) and result.stdout.count("PASS scan") == 1


def test_exit_codes_of_each_verdict(elements_model, tmp_path):
    """0 passed (the engine ran, or its not running accepted), 1 failed, 2 error, 3 passed without running the engine."""
    not_run = check(elements_model)
    accepted = check(elements_model, "--allow-engine-not-run", "--save-engine", tmp_path / "saved" / "elements.plan")
    if HAS_GPU:
        assert not_run.returncode == 0 and not_run.stdout.rstrip().endswith("PASSED")
    else:
        assert not_run.returncode == 3 and not_run.stdout.rstrip().endswith("(--allow-engine-not-run accepts it)")
        assert accepted.stdout.rstrip().endswith(NOT_RUN)
    assert accepted.returncode == 0, output_of(accepted)
    size = (tmp_path / "saved" / "elements.plan").stat().st_size
    assert size > 0 and f"engine: built ({size} bytes)" in accepted.stdout

    no_tensorrt = check(elements_model, env={"TRT_SCATTER_BACKEND": "no-such-backend"}, fresh=True)  # a backend not yet chosen
    assert no_tensorrt.returncode == 1 and "engine: FAIL: not built" in no_tensorrt.stdout, output_of(no_tensorrt)
    assert no_tensorrt.stdout.rstrip().endswith("FAILED")

    error = check(tmp_path / "missing.onnx")
    assert error.returncode == 2 and error.stdout == "" and error.stderr.count("\n") == 1


def test_bad_arguments_and_inputs_end_in_one_line(elements_model, tmp_path):
    missing = check(tmp_path / "missing.onnx")
    assert missing.returncode == 2
    assert missing.stderr.strip().count("\n") == 0 and "trt-scatter check: error: cannot read ONNX model" in missing.stderr

    unfit = check(elements_model, "--input-shapes", "indices:[3,2]")
    assert unfit.returncode == 2  # no hint to give --input-shapes: the given one is wrong
    assert unfit.stderr == "trt-scatter check: error: cannot generate valid inputs: input 'indices': the given shape (3, 2) does not fit the model's (N, 3)\n"
    from trt_scatter import onnx_models
    from trt_scatter.inputs import ScatterDataLoader

    named = fx.save(onnx_models.scatter_elements_model(("N", 5), ("N", 3)), tmp_path / "named.onnx")
    conflict = check(named, "--input-shapes", "data:[2,5]", "indices:[3,3]")
    assert conflict.stderr == ("trt-scatter check: error: cannot generate valid inputs: dimension 'N' is 2 in the given shape of input 'data' "
                               "and 3 in that of input 'indices': the model names them one dimension\n")
    with pytest.raises(ValueError, match=re.escape("input 'indices': the given shape (3,) does not fit the model's (2,)")):
        list(ScatterDataLoader(onnx_models.scatter_update_model(("N", 3), (2,), 0), input_shapes={"indices": (3,)}))

    (tmp_path / "not_feeds.json").write_text("{}")
    not_feeds = check(elements_model, "--load-inputs", tmp_path / "not_feeds.json")
    assert not_feeds.returncode == 2 and "does not hold a list of feed dicts" in not_feeds.stderr


@pytest.mark.parametrize("arguments, line", [
    (["--input-shapes", "data:[3,-1]"], "argument --input-shapes: 'data:[3,-1]' is not NAME:[D,...] with non-negative integer dims"),
    (["--input-shapes", "[3,1]"], "argument --input-shapes: '[3,1]' is not NAME:[D,...] with non-negative integer dims"),
    (["--input-shapes", "data:[3,x]"], "argument --input-shapes: 'data:[3,x]' is not NAME:[D,...] with non-negative integer dims"),
    (["--seed", "one"], "argument --seed: 'one' is not a non-negative integer"),
    (["--seed", "-1"], "argument --seed: '-1' is not a non-negative integer"),
    (["--atol", "-1"], "argument --atol: '-1' is not a finite non-negative number, nor OUTPUT:NUMBER"),
    (["--rtol", "nan"], "argument --rtol: 'nan' is not a finite non-negative number, nor OUTPUT:NUMBER"),
    (["--atol", "inf"], "argument --atol: 'inf' is not a finite non-negative number, nor OUTPUT:NUMBER"),  # it would pass any output
    (["--atol", "output:-1"], "argument --atol: 'output:-1' is not a finite non-negative number, nor OUTPUT:NUMBER"),
    (["--atol", "1e-3", "other.onnx"], "argument --atol: 'other.onnx' is not a finite non-negative number, nor OUTPUT:NUMBER (is it the "
                                       "model? --atol takes every word after it: give the model first)"),
    (["--atol", "out:1e-3"], "--atol names 'out', which is not an output of the model (its outputs: output)"),
    (["--rtol", "output:1e-3", "output:1e-2"], "--rtol gives output 'output' twice"),
    (["--atol", "1e-3", "2e-3"], "--atol gives a value for every output twice"),
    (["--iterations", "two"], "argument --iterations: 'two' is not a positive integer"),
    (["--iterations", "0"], "argument --iterations: '0' is not a positive integer"),
    (["--atol", "tiny"], "argument --atol: 'tiny' is not a finite non-negative number, nor OUTPUT:NUMBER"),
    (["--input-shapes", "data:[3,5]", "other.onnx"], "argument --input-shapes: 'other.onnx' is not NAME:[D,...] with non-negative integer "
                                                     "dims (is it the model? --input-shapes takes every word after it: give the model first)"),
    (["--input-shapes", "nothing:[2]"], "--input-shapes names 'nothing', which is not an input of the model (its inputs: data, indices, updates)"),
    (["--input-shapes", "data :[2]"], "--input-shapes names 'data ', which is not an input of the model (did you mean 'data'? a name's spaces are "
                                      "part of it) (its inputs: data, indices, updates)"),
    (["--input-shapes", "data:[8,6]", "data:[9,6]"], "--input-shapes gives input 'data' twice"),  # the last was taken
])
def test_arguments_that_mean_nothing_end_in_one_line_before_any_work(elements_model, capsys, arguments, line):
    from trt_scatter.cli import main

    try:
        code = main(["check", elements_model, *arguments])
    except SystemExit as exited:  # argparse's own errors
        code = exited.code
    err = capsys.readouterr().err
    assert code == 2 and err.count("\n") == 1 and err.startswith("trt-scatter check: error: ") and line in err, err


def test_multiple_iterations_get_one_verdict_each(tmp_path):
    path = fx.save(fx.scatter_nd_model([4, 5], [3, 1], [3, 5], dtype=np.int64), tmp_path / "nd.onnx")
    result = check(path, "--iterations", "2", "--allow-engine-not-run")
    assert result.returncode == 0, output_of(result)
    assert "PASS output (iteration 0)" in result.stdout and "PASS output (iteration 1)" in result.stdout


@needs_gpu
def test_check_runs_tensorrt_on_the_gpu(elements_model):
    result = check(elements_model)
    assert result.returncode == 0, output_of(result)
    assert "PASS output: tensorrt vs reference: max abs diff 0" in result.stdout and result.stdout.rstrip().endswith("PASSED")


def _verdict(expected, actual, atol=0.0, rtol=0.0):
    from polygraphy.comparator import IterationResult, RunResults

    from trt_scatter.cli.check import _compare

    results = RunResults([(name, [IterationResult({"output": array}, runner_name=name)]) for name, array in (("oracle", expected), ("engine", actual))])
    failed = _compare(results, [("oracle", "engine")], {"output": (atol, rtol, "the test's", (atol, rtol) == (0.0, 0.0))})
    assert failed in ([], [("oracle", "engine")])  # the pairs that failed: a golden one's failure adds a note on the inputs
    return not failed


def test_outputs_of_another_type_or_shape_fail(capsys):
    """Equal values in another type (an engine output of the wrong type) or shape are a mismatch, never a pass or a crash."""
    expected = np.arange(6, dtype=np.float32).reshape(2, 3)
    for actual in (expected.astype(np.float16), expected.astype(np.int64), expected.reshape(3, 2)):
        assert not _verdict(expected, actual, atol=1.0)
        assert f"FAIL output: engine vs oracle: got {actual.dtype} {actual.shape}, expected float32 (2, 3)" in capsys.readouterr().out


def test_nan_and_infinities_moved_unchanged_pass_and_changed_ones_fail(capsys):
    """Scatter ops move NaN and inf like any value: identical outputs pass, exactly or within tolerances."""
    expected = np.array([np.nan, np.inf, -np.inf, 1.0], dtype=np.float32)
    assert _verdict(expected, expected.copy())
    assert "PASS output: engine vs oracle: max abs diff 0 (identical); NaN in the same 1 place on both sides" in capsys.readouterr().out
    nearly = expected.copy()
    nearly[3] += 1e-3
    assert not _verdict(expected, nearly) and _verdict(expected[1:], nearly[1:], atol=1e-2)
    assert _verdict(expected, nearly, atol=1e-2)  # NaN in the same place on both sides (a NaN input computed on): the rest compared
    capsys.readouterr()
    assert not _verdict(expected, np.array([0.0, np.inf, -np.inf, 1.0], dtype=np.float32), atol=1e-2)
    assert "engine vs oracle: NaN where the other has a number: 0 of engine's elements, 1 of oracle's\n" in capsys.readouterr().out
    assert not _verdict(np.array([0.0, 1.0, np.nan, np.nan], np.float32), np.array([np.nan, 1.0, np.nan, np.nan], np.float32), atol=1e-2)
    assert ("engine vs oracle: NaN where the other has a number: 1 of engine's elements, 0 of oracle's; NaN in the same 2 places on "
            "both sides\n") in capsys.readouterr().out
    assert not _verdict(expected[1:], np.array([-np.inf, -np.inf, 1.0], dtype=np.float32), atol=1e-2)


def test_outputs_that_are_views_compare_within_tolerances(capsys):
    """onnx.reference hands out a Transpose's output as a view (not contiguous): values within the tolerances pass, others
    fail, never polygraphy's "Input array to view() must be contiguous in memory"."""
    expected = np.arange(12, dtype=np.float32).reshape(3, 4).T  # as a Transpose after a scatter leaves it
    assert not expected.flags.c_contiguous
    assert _verdict(expected, np.ascontiguousarray(expected) + 1e-6, atol=1e-5)
    assert not _verdict(expected, np.ascontiguousarray(expected) + 1e-3, atol=1e-5)
    assert "FAIL output: engine vs oracle: max abs diff" in capsys.readouterr().out


def test_a_model_for_the_aot_plugins_is_built_with_them(tmp_path):
    """A model from trt_scatter.torch.export(aot=True) names the AOT plugins: check builds it with them (full
    TensorRT >= 10.9), and on TensorRT-RTX says that this is what is missing, not TensorRT's 'Plugin not found', and
    that the engine was not built: exit 3 as for an engine not run (it was FAILED, exit 1, where nothing had failed)."""
    from trt_scatter import backend
    from trt_scatter.onnx_models import scatter_update_model
    from trt_scatter.passes.aot import to_aot

    path = fx.save(to_aot(scatter_update_model((3, 5), (2,), 1)), tmp_path / "update_aot.onnx")
    result = check(path)
    assert "Plugin not found" not in output_of(result)
    if backend.is_rtx():  # the rest of the model is built with the Python plugins: a node TensorRT cannot build still fails
        assert result.returncode == 3, output_of(result)
        assert "engine: not built with the AOT plugins: the AOT plugins need full TensorRT >= 10.9" in result.stdout
        assert "; built with trt-scatter's Python plugins in their place (" in result.stdout
        assert "PASS output: onnxruntime-lowered vs reference" in result.stdout
        assert result.stdout.splitlines()[-1] == ("NOT RUN ON TENSORRT: every comparison passed, but the engine was not built as it is (this "
                                                  "TensorRT cannot build it; see the engine line); exit 3 (--allow-engine-not-run accepts it)")
        assert check(path, "--allow-engine-not-run").returncode == 0
        saved = check(path, "--save-engine", tmp_path / "update.engine")
        assert saved.returncode == 2 and saved.stderr.startswith("trt-scatter check: error: --save-engine: the AOT plugins need full TensorRT")
        import onnx

        model = onnx.load(path)
        model.graph.node.append(onnx.helper.make_node("NonZero", ["data"], ["where"]))  # TensorRT-RTX builds no NonZero
        model.graph.output.append(onnx.helper.make_tensor_value_info("where", onnx.TensorProto.INT64, None))
        failed = check(fx.save(model, tmp_path / "nonzero.onnx"))
        assert failed.returncode == 1 and "engine: FAIL: engine build failed: " in failed.stdout and "NonZero" in failed.stdout, output_of(failed)
        # The Python plugins' sort needs a workspace TensorRT must size, the AOT kernels (integer atomics) none: no failure of the model.
        import plugin_models

        pool = check(fx.save(to_aot(plugin_models.mean_pool_model("int64")), tmp_path / "pool_aot.onnx"), "--input-shapes", "x:[6,4]", "batch:[6]")
        assert pool.returncode == 3 and "; nor with trt-scatter's Python plugins in their place: " in pool.stdout, output_of(pool)


def test_bfloat16_inputs_are_named_in_one_line(tmp_path):
    """polygraphy's runners take no bfloat16 NumPy arrays (ml_dtypes), so the run cannot start; the error names
    the input and says why, where it was the last line of polygraphy's message ('Note: Expected type: bfloat16')."""
    import ml_dtypes

    from trt_scatter.onnx_models import slice_scatter_model

    path = fx.save(slice_scatter_model((4, 6), [1], [6], [2], [1], dtype=ml_dtypes.bfloat16), tmp_path / "bf16.onnx")
    result = check(path)
    assert result.returncode == 2, output_of(result)
    assert result.stderr.strip().count("\n") == 0
    assert result.stderr.startswith("trt-scatter check: error: input 'data' is bfloat16")


def test_inputs_the_free_dims_make_invalid_say_to_give_the_shapes(tmp_path, monkeypatch):
    """A free dimension gets 4, or grows (by at most 64) until the constant slice takes updates' length: -6::2 takes 3
    of 5. Where it cannot grow that far (stood in for: no growth at all), the error says to give the shapes."""
    import importlib

    from trt_scatter.onnx_models import slice_scatter_model

    slice_scatter = importlib.import_module("trt_scatter.oracle.slice_scatter")  # the module (the package names its function so)
    path = fx.save(slice_scatter_model((4, "n"), [-6], [2**62], [2], [1], updates_shape=(4, 3)), tmp_path / "free.onnx")
    grown = check(path, "--allow-engine-not-run")
    assert grown.returncode == 0 and "'data:[4,5]'" in grown.stdout, output_of(grown)
    monkeypatch.setattr(slice_scatter, "_GROWTH", 1)  # the checks run in forked children, which keep it
    result = check(path)
    assert result.returncode == 2, output_of(result)
    assert result.stderr.strip().count("\n") == 0
    assert "'updates' must have shape (4, 2)" in result.stderr
    assert result.stderr.rstrip().endswith("(the model has dynamic input dims: give them with --input-shapes, or your inputs with --load-inputs)")
    assert check(path, "--input-shapes", "data:[4,6]", "--allow-engine-not-run").returncode == 0
    # Some shapes given, the others free: the note says those are free too (it said to give the shapes just given).
    path = fx.save(slice_scatter_model((4, "n"), [-6], [2**62], [2], [1], updates_shape=(4, "k")), tmp_path / "two_free.onnx")
    result = check(path, "--input-shapes", "updates:[4,3]")
    assert result.returncode == 2 and "'updates' must have shape (4, 2)" in result.stderr, output_of(result)
    assert result.stderr.rstrip().endswith("(--input-shapes leaves dynamic input dims free: give them too, or other shapes; "
                                           "or your inputs with --load-inputs)")


def test_the_shapes_of_generated_inputs_are_printed_where_the_model_leaves_dims_free(elements_model, tmp_path):
    """A free dim gets 4, or the length an op's rule sets: a TensorScatter along the cache's axis 1 of (B, 8, 64, 16)
    takes updates of 64 rows there, so a check at free shapes passed a model whose one decode shape (T = 1) it
    refuses; the line shows what ran. None where every dim is static or given."""
    from onnx import TensorProto, helper

    node = helper.make_node("TensorScatter", ["past_cache", "update", "write_indices"], ["present_cache"], axis=1)  # meant: axis 2
    graph = helper.make_graph([node], "cache", [fx.info("past_cache", ["B", 8, 64, 16]), fx.info("update", ["B", 8, "T", 16]),
                                                helper.make_tensor_value_info("write_indices", TensorProto.INT64, ["B"])],
                              [fx.info("present_cache", ["B", 8, 64, 16])])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)]), tmp_path / "cache.onnx")
    result = check(path, "--allow-engine-not-run")
    assert result.returncode == 0, output_of(result)
    printed = "inputs: generated at --input-shapes 'past_cache:[4,8,64,16]' 'update:[4,8,64,16]' 'write_indices:[4]'"
    assert result.stdout.splitlines()[0] == printed
    again = check(path, "--allow-engine-not-run", *shlex.split(printed)[3:])  # the line is the flag that gives those shapes again, quoted
    assert again.returncode == 0 and "inputs:" not in again.stdout, output_of(again)
    given = check(elements_model, "--input-shapes", "data:[2,5]", "indices:[2,3]", "updates:[2,3]", "--allow-engine-not-run")
    assert given.returncode == 0 and "inputs:" not in given.stdout, output_of(given)
    # an initializer a model lists among its inputs (IR version < 4 asked it) is no input a run feeds: its named dim is not free
    listed = fx.scatter_elements_model([2, 5], ["K", 3], axis=1)
    listed.graph.initializer.append(onnx.numpy_helper.from_array(np.array([[0, 1, 2], [4, 3, 2]]), "indices"))
    (updates,) = [value for value in listed.graph.input if value.name == "updates"]
    updates.type.tensor_type.shape.dim[0].dim_value = 2  # every input a run feeds is static
    listed.ir_version = 8
    static = check(fx.save(listed, tmp_path / "listed.onnx"), "--allow-engine-not-run")
    assert static.returncode == 0 and "inputs:" not in static.stdout, output_of(static)


@pytest.mark.parametrize("rows", ["n", 4, "n given 4"])
def test_an_index_wrapped_over_an_earlier_writes_shape_grows_free_rows_or_names_the_rule(tmp_path, rows):
    """``x.index_copy(0, pos, row).index_fill(0, [5], 0)`` as PyTorch's exporters write it: the fill's index is wrapped
    with the first write's Shape, which no value of ``pos`` changes, and is 5 in every run. Free rows grow to take it;
    4 rows get one line naming the fill's rule, not ``pos`` as an input drawn for both writes, and 4 given by
    --input-shapes point at those shapes (other inputs could not help)."""
    import onnx
    from onnx import TensorProto, helper

    from onnx_fixtures import info

    def constant(name, value):
        return onnx.numpy_helper.from_array(np.array(value, dtype=np.int64), name)

    nodes = [helper.make_node("ScatterUpdate", ["data", "pos", "row", "axis"], ["first"], domain="trt_scatter", name="copy"),
             helper.make_node("Shape", ["first"], ["n"], start=0, end=1), helper.make_node("Add", ["given", "n"], ["plus_n"]),
             helper.make_node("Less", ["given", "zero"], ["negative"]), helper.make_node("Where", ["negative", "plus_n", "given"], ["inner"]),
             helper.make_node("Less", ["plus_n", "zero"], ["below"]), helper.make_node("Where", ["below", "given", "inner"], ["index"]),
             helper.make_node("ScatterUpdate", ["first", "index", "fill", "axis"], ["output"], domain="trt_scatter", name="fill")]
    dim = "n" if rows == "n given 4" else rows
    graph = helper.make_graph(nodes, "wrap", [info("data", [dim, 3]), info("pos", [1], TensorProto.INT64), info("row", [1, 3])],
                              [info("output", [dim, 3])], [constant("axis", 0), constant("given", [5]), constant("zero", [0]),
                                                            onnx.numpy_helper.from_array(np.zeros((1, 3), np.float32), "fill")])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)]), tmp_path / "wrap.onnx")
    shapes = ["--input-shapes", "data:[4,3]"] if rows == "n given 4" else []
    result = check(path, "--allow-engine-not-run", "--save-inputs", tmp_path / "inputs.json", *shapes)
    if rows == "n":
        from polygraphy.json import load_json

        assert result.returncode == 0, output_of(result)
        assert load_json(str(tmp_path / "inputs.json"))[0]["data"].shape == (6, 3)  # the least rows that take index 5
        return
    assert result.returncode == 2 and result.stderr.count("\n") == 1, output_of(result)
    assert "ScatterUpdate node 'fill': scatter_update: 'indices' values must be in [0, 3] for a dimension of size 4 (got 5)" in result.stderr
    assert "'pos'" not in result.stderr
    if shapes:
        assert result.stderr.rstrip().endswith("(the inputs were generated at the given --input-shapes: give others, or your inputs with --load-inputs)")


def test_a_model_with_external_data_is_checked_from_any_directory(tmp_path):
    """Weights and index constants in an external file beside the model: check reads them from there."""
    import mixed_models
    import onnx

    (tmp_path / "model").mkdir()
    (tmp_path / "elsewhere").mkdir()
    path = tmp_path / "model" / "kv.onnx"
    onnx.save(mixed_models.kv_cache(runtime=True).model, path, save_as_external_data=True, location="kv.bin", size_threshold=0)
    result = check(path, "--allow-engine-not-run", cwd=tmp_path / "elsewhere")
    assert result.returncode == 0, output_of(result)
    assert "engine: built" in result.stdout and "FAIL" not in result.stdout
    assert result.stdout.count("PASS ") == 2  # new_cache and y


def test_a_mismatch_is_one_fail_line_without_polygraphy_log_lines(capsys):
    """The verdict lines are the output: polygraphy's comparison logs ([W] ... [E] FAILED ...) stay out of it."""
    expected = np.array([0.0, 1.0, 2.0], dtype=np.float32)
    assert not _verdict(expected, expected + np.float32(0.5))
    captured = capsys.readouterr()
    lines = captured.out.splitlines()
    assert len(lines) == 1 and lines[0].startswith("FAIL output: engine vs oracle: max abs diff 0.5, max rel diff "), captured.out
    assert captured.err == ""


def test_loaded_inputs_without_an_input_of_the_model_are_one_line_naming_it(elements_model, tmp_path):
    from polygraphy.json import save_json

    save_json([{"data": np.zeros((3, 5), np.float32), "updates": np.zeros((3, 3), np.float32)}], str(tmp_path / "feeds.json"))
    result = check(elements_model, "--load-inputs", tmp_path / "feeds.json")
    assert result.returncode == 2, output_of(result)
    assert result.stderr == (f"trt-scatter check: error: --load-inputs {str(tmp_path / 'feeds.json')!r}: iteration 0 has no input "
                             "'indices' (the model's inputs: data, indices, updates)\n")


def test_a_loaded_input_of_another_shape_is_one_line_showing_the_models_shape_with_its_dimension_names(elements_model, tmp_path):
    from polygraphy.json import save_json

    feeds = {"data": np.zeros((3, 6), np.float32), "indices": np.zeros((3, 3), np.int64), "updates": np.zeros((3, 3), np.float32)}
    save_json([feeds], str(tmp_path / "feeds.json"))
    result = check(elements_model, "--load-inputs", tmp_path / "feeds.json")
    assert result.returncode == 2, output_of(result)
    assert result.stderr == (f"trt-scatter check: error: --load-inputs {str(tmp_path / 'feeds.json')!r}: iteration 0, input 'data' has "
                             "shape (3, 6), which does not fit the model's (N, 5)\n")


def test_a_plugin_node_in_a_subgraph_registers_the_plugins_and_is_compared_through_its_lowering(tmp_path):
    """A SliceScatter in an If branch: the engine gets the plugins (it was built without them: "Plugin not
    found"), and without a GPU onnxruntime runs the lowered model, the branch's node lowered too (the lowering took
    main-graph nodes only, and the check ended in one line saying so)."""
    import onnx

    from trt_scatter import backend

    model = fx.slice_scatter_in_an_if_branch()
    path = tmp_path / "if.onnx"
    onnx.save(model, path)
    result = check(path)
    assert "Plugin not found" not in result.stdout, output_of(result)
    engine_lines = [line for line in result.stdout.splitlines() if line.startswith("engine: ")]
    assert len(engine_lines) == 1, output_of(result)
    engine_line = engine_lines[0]
    if backend.is_rtx():
        # TensorRT-RTX's refusal, not a missing plugin: its Myelin compiler reaches the plugin layer 'inner'
        # in the If branch and cannot type the workspace the plugin asks for (a plugin asking for none builds).
        assert engine_line.startswith("engine: FAIL: engine build failed: SliceScatter node 'inner' lies in a subgraph of If node 'branch', where "
                                      "TensorRT-RTX builds no plugin (TensorRT-RTX said: IBuilder::buildSerializedNetwork: Error Code 1: Myelin ("), engine_line
        assert "then^inner_wksp with TYPE unspecified and not inferred." in engine_line, engine_line
    else:  # full TensorRT (not run here)
        assert engine_line.startswith("engine: built ("), engine_line
    if not HAS_GPU:  # the node in the branch is lowered for onnxruntime like any other
        assert "PASS output: onnxruntime-lowered vs reference: max abs diff 0 (identical)" in result.stdout, output_of(result)
        assert result.returncode == (1 if backend.is_rtx() else 3), output_of(result)



@pytest.fixture(scope="module")
def golden_files(elements_model, tmp_path_factory):
    """Saved inputs and golden outputs (one check run, engine build included) for the tests that only read them."""
    return _golden(elements_model, tmp_path_factory.mktemp("golden"))


@pytest.mark.parametrize("mixup", ["inputs file as golden outputs", "golden outputs as inputs", "not JSON", "inputs not JSON",
                                   "the model as inputs", "no golden file"])
def test_a_json_file_of_the_wrong_kind_is_one_line_without_polygraphys_log(elements_model, golden_files, tmp_path, mixup):
    """Swapping --load-inputs and --load-outputs is an easy mistake: one line on stderr that names the file and
    what it is not, not polygraphy's [!] block too."""
    inputs, outputs = golden_files
    text = tmp_path / "text.json"
    text.write_text("not json\n")
    args, line = {
        "inputs file as golden outputs": (["--load-inputs", inputs, "--load-outputs", inputs],
                                          f"cannot load golden outputs from {str(inputs)!r}: Provided JSON cannot be decoded into a RunResults."),
        "golden outputs as inputs": (["--load-inputs", outputs],
                                     f"{str(outputs)!r} does not hold a list of feed dicts (polygraphy's --save-inputs format)"),
        "not JSON": (["--load-inputs", inputs, "--load-outputs", text],
                     f"cannot load golden outputs from {str(text)!r}: Expecting value: line 1 column 1 (char 0)"),
        "inputs not JSON": (["--load-inputs", text], f"cannot load inputs from {str(text)!r}: Expecting value: line 1 column 1 (char 0)"),
        "the model as inputs": (["--load-inputs", elements_model],
                                f"cannot load inputs from {str(elements_model)!r}: not a text file (polygraphy's --save-inputs JSON is)"),
        "no golden file": (["--load-outputs", tmp_path / "missing.json"], f"cannot load golden outputs from {str(tmp_path / 'missing.json')!r}: "),
    }[mixup]  # fmt: skip
    result = check(elements_model, *args)
    assert result.returncode == 2, output_of(result)
    assert result.stderr.startswith(f"trt-scatter check: error: {line}") and result.stderr.count("\n") == 1, result.stderr
    assert result.stdout == ""  # refused before the engine is built


def test_golden_data_that_does_not_fit_the_run_and_inputs_the_reference_refuses(elements_model, tmp_path):
    from polygraphy.comparator import RunResults
    from polygraphy.comparator.struct import IterationResult
    from polygraphy.json import save_json

    golden = tmp_path / "two.json"
    saved = check(elements_model, "--iterations", "2", "--save-outputs", golden, "--allow-engine-not-run")
    assert saved.returncode == 0, output_of(saved)
    fewer = check(elements_model, "--load-outputs", golden, "--allow-engine-not-run")  # 1 iteration against 2 golden ones
    assert fewer.returncode == 1 and "1 iteration(s), expected 2 (the first 1 compared)" in fewer.stdout, output_of(fewer)
    assert fewer.stdout.rstrip().endswith("FAILED")
    # the outputs compared say which iteration they are (a line without one read as a comparison of the whole run)
    golden_lines = [line for line in fewer.stdout.splitlines() if line.startswith("PASS") and "golden" in line]
    assert golden_lines and all("(iteration 0)" in line for line in golden_lines), output_of(fewer)

    # golden outputs none of which the model has are another model's: one line, not a FAIL for each output on each side
    renamed = fx.scatter_elements_model(["N", 5], ["N", 3], axis=1)
    renamed.graph.output[0].name = renamed.graph.node[-1].output[0] = "result"
    other = check(fx.save(renamed, tmp_path / "renamed.onnx"), "--iterations", "2", "--load-outputs", golden, "--allow-engine-not-run")
    assert other.returncode == 2 and not other.stdout, output_of(other)
    assert other.stderr == (f"trt-scatter check: error: --load-outputs {str(golden)!r}: its run 'reference' holds outputs 'output', none of "
                            "this model's ('result'): golden outputs of another model?\n")
    # the run the reference is compared with decides, not another run of the file
    mixed = RunResults()
    mixed.append(("reference", [IterationResult({"result": np.zeros((2, 5), np.float32)})]))
    mixed.append(("onnxruntime", [IterationResult({"output": np.zeros((2, 5), np.float32)})]))
    mixed.save(str(tmp_path / "mixed.json"))
    refused = check(elements_model, "--load-outputs", tmp_path / "mixed.json")
    assert refused.returncode == 2 and refused.stderr.endswith("its run 'reference' holds outputs 'result', none of this model's ('output'): "
                                                                "golden outputs of another model?\n"), output_of(refused)
    # an output the model gained fails by name
    grown = fx.scatter_elements_model(["N", 5], ["N", 3], axis=1)
    grown.graph.node.append(onnx.helper.make_node("Identity", ["output"], ["result"]))
    grown.graph.output.append(onnx.helper.make_tensor_value_info("result", onnx.TensorProto.FLOAT, ["N", 5]))
    more = check(fx.save(grown, tmp_path / "grown.onnx"), "--iterations", "2", "--load-outputs", golden, "--allow-engine-not-run")
    assert more.returncode == 1 and more.stdout.rstrip().endswith("FAILED"), output_of(more)
    assert "FAIL result (iteration 0): reference vs golden reference: missing in golden reference" in more.stdout.splitlines(), output_of(more)

    RunResults().save(str(tmp_path / "empty.json"))
    empty = check(elements_model, "--load-outputs", tmp_path / "empty.json")
    assert empty.returncode == 2 and empty.stderr.count("\n") == 1 and f"{str(tmp_path / 'empty.json')!r} holds no runs" in empty.stderr, output_of(empty)
    RunResults([("reference-runner", [])]).save(str(tmp_path / "no_iterations.json"))  # was "1 iterations, expected 0", FAILED
    hollow = check(elements_model, "--load-outputs", tmp_path / "no_iterations.json")
    assert hollow.returncode == 2 and hollow.stderr.count("\n") == 1, output_of(hollow)
    assert f"{str(tmp_path / 'no_iterations.json')!r}: its run 'reference-runner' holds no iterations" in hollow.stderr, output_of(hollow)

    feeds = {"data": np.zeros((2, 5), np.float32), "indices": np.array([[0, 1, 5], [0, 1, 2]]), "updates": np.ones((2, 3), np.float32)}
    save_json([feeds], str(tmp_path / "out_of_range.json"))
    refused = check(elements_model, "--load-inputs", tmp_path / "out_of_range.json")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, output_of(refused)
    assert refused.stderr.startswith("trt-scatter check: error: a run failed: ") and "'indices' values must be in [-5, 4]" in refused.stderr
    assert "--input-shapes" not in refused.stderr  # the inputs were given: their shapes are not the loader's to choose


@pytest.mark.skipif(HAS_GPU, reason="the note is for the onnxruntime stand-in, which runs where no GPU runs the engine")
def test_a_min_reduction_that_onnxruntime_settles_otherwise_fails_with_a_note_saying_why(tmp_path):
    """A NaN wins PyTorch's amin (the reference) but not onnxruntime's min (the lowered model): the check fails, and a
    note says why instead of leaving a bare ``max abs diff nan``."""
    from polygraphy.json import save_json

    from polygraphy.comparator import IterationResult, RunResults

    from trt_scatter.onnx_models import scatter_nd_reduce_model

    path = fx.save(scatter_nd_reduce_model((4, 3), (2, 1), reduction="min", include_self=1), tmp_path / "min.onnx")
    feeds = {"data": np.array([[np.nan, 1, 1]] + [[0, 0, 0]] * 3, np.float32), "indices": np.array([[0], [0]]),
             "updates": np.array([[5, np.nan, 0], [5, 0, 0]], np.float32)}
    save_json([feeds], str(tmp_path / "nan.json"))
    failed = check(path, "--load-inputs", tmp_path / "nan.json")
    assert failed.returncode == 1 and failed.stdout.rstrip().endswith("FAILED"), output_of(failed)
    assert "note: onnxruntime's min and max let no NaN win" in failed.stdout
    feeds["data"][0, 0] = feeds["updates"][0, 1] = 2.0  # no NaN: they agree, and no note
    save_json([feeds], str(tmp_path / "plain.json"))
    passed = check(path, "--load-inputs", tmp_path / "plain.json", "--allow-engine-not-run")
    assert passed.returncode == 0 and "note:" not in passed.stdout, output_of(passed)
    golden = {"output": np.full((4, 3), 7.0, np.float32)}  # golden outputs the reference fails too: not onnxruntime's way
    RunResults([("reference", [IterationResult(golden)])]).save(str(tmp_path / "golden.json"))
    off = check(path, "--load-inputs", tmp_path / "plain.json", "--load-outputs", tmp_path / "golden.json")
    assert off.returncode == 1 and "FAIL output: reference vs golden reference" in off.stdout, output_of(off)
    assert "NaN" not in off.stdout, output_of(off)


def test_loaded_inputs_that_give_one_named_dimension_two_lengths_are_one_line_before_the_build(tmp_path, elements_model):
    """The model names indices' and updates' first dimension "N": loaded inputs of 2 and 3 rows there fail in one line
    naming the dimension, before the engine's profile fails to build and the reference refuses the run."""
    from polygraphy.json import save_json

    feeds = {"data": np.zeros((2, 5), np.float32), "indices": np.array([[0, 1, 2], [0, 1, 2]]), "updates": np.ones((3, 3), np.float32)}
    save_json([feeds], str(tmp_path / "rows.json"))
    refused = check(elements_model, "--load-inputs", tmp_path / "rows.json")
    assert refused.returncode == 2 and refused.stdout == "", output_of(refused)
    assert refused.stderr.endswith("iteration 0: dimension 'N' is 2 in input 'data' and 3 in input 'updates': the model names them one "
                                   "dimension\n"), refused.stderr


def test_loaded_inputs_with_a_name_the_model_lacks_are_refused(tmp_path, elements_model):
    from polygraphy.json import save_json

    feeds = {"data": np.zeros((2, 5), np.float32), "indices": np.array([[0, 1, 2], [0, 1, 2]]), "updates": np.ones((2, 3), np.float32),
             "date": np.zeros((2, 5), np.float32)}
    save_json([feeds], str(tmp_path / "extra.json"))
    refused = check(elements_model, "--load-inputs", tmp_path / "extra.json")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, output_of(refused)
    assert refused.stderr.rstrip("\n").endswith("iteration 0 has 'date', which is not an input of the model (its inputs: data, indices, updates)")


def test_inputs_it_cannot_generate_point_to_loading_them(tmp_path):
    """ScatterUpdate's axis as a graph input: the data loader needs it constant; the user's own inputs are the way."""
    from onnx import helper, numpy_helper

    node = helper.make_node("ScatterUpdate", ["data", "indices", "updates", "axis"], ["output"], domain="trt_scatter")
    graph = helper.make_graph([node], "g", [fx.info("data", (3, 5)), fx.info("updates", (3, 2)), fx.info("axis", (1,), np.int64)],
                              [fx.info("output", (3, 5))], initializer=[numpy_helper.from_array(np.array([0, 2], np.int64), "indices")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    result = check(fx.save(model, tmp_path / "axis.onnx"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, output_of(result)
    assert result.stderr.startswith("trt-scatter check: error: cannot generate valid inputs: ")
    assert result.stderr.endswith(" (or give inputs of your own: --load-inputs)\n"), result.stderr


@pytest.mark.parametrize("flag", [["--iterations", "2"], ["--seed", "5"], ["--input-shapes", "data:[3,5]"]], ids=lambda flag: flag[0])
def test_generator_flags_with_loaded_inputs_are_refused(tmp_path, elements_model, flag):
    """They would be silently ignored: the loaded inputs are what runs."""
    (tmp_path / "in.json").write_text("[]")
    refused = check(elements_model, "--load-inputs", tmp_path / "in.json", *flag)
    assert refused.returncode == 2 and refused.stderr == (f"trt-scatter check: error: {flag[0]} is for generated inputs, and "
                                                          "--load-inputs gives the inputs instead: give one or the other\n"), output_of(refused)


def test_a_model_onnxruntime_cannot_run_says_so_and_that_nothing_was_compared(tmp_path):
    """onnxruntime's CPU ScatterND has no float16 max: that is neither the model's mistake nor a failed check."""
    from onnx import helper

    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"], reduction="max")
    graph = helper.make_graph([node], "g", [fx.info("data", (4, 3), np.float16), fx.info("indices", (2, 1), np.int64),
                                            fx.info("updates", (2, 3), np.float16)], [fx.info("output", (4, 3), np.float16)])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "f16.onnx")
    result = check(path)
    if result.returncode == 3:
        pytest.skip("this onnxruntime runs float16 ScatterND max")  # a newer onnxruntime: then it compares
    assert result.returncode == 2 and result.stderr.count("\n") == 1, output_of(result)
    assert result.stderr.startswith("trt-scatter check: error: onnxruntime cannot run this model on this machine, so nothing was "
                                    "compared (compare the engine where a GPU runs it): [ONNXRuntimeError]"), output_of(result)
    assert "--load-inputs" not in result.stderr  # no inputs would give onnxruntime the kernel it lacks


@pytest.mark.parametrize("op_type, reduction, dtype", [("ScatterNDReduce", "mean", np.float16), ("ScatterElementsReduce", "mul", np.float16),
                                                       ("ScatterElements", "add", np.float16)])
def test_float16_sums_are_not_checked_by_onnxruntime_and_nothing_is_compared(tmp_path, op_type, reduction, dtype):
    """onnxruntime runs a float16 mean (ScatterND add at opset 18) rounding its sums its own way: a valid model failed by a
    unit in the last place. Where the engine cannot run, such a model is not compared at all, and says why."""
    from onnx import helper

    import plugin_models

    if op_type == "ScatterElements":
        node = helper.make_node(op_type, ["data", "indices", "updates"], ["output"], reduction=reduction)
        graph = helper.make_graph([node], "g", [fx.info("data", (4, 3), dtype), fx.info("indices", (5, 3), np.int64),
                                                fx.info("updates", (5, 3), dtype)], [fx.info("output", (4, 3), dtype)])
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    else:
        indices = (5, 1) if op_type == "ScatterNDReduce" else (5, 3)
        model = plugin_models.reduce_model(op_type, (4, 3), indices, (5, 3), dtype=np.dtype(dtype).name, reduction=reduction)
    path = fx.save(model, tmp_path / "f16.onnx")
    result = check(path)
    assert result.returncode == 2 and result.stderr.count("\n") == 1, output_of(result)
    assert re.match(rf"trt-scatter check: error: onnxruntime(-lowered)? cannot check this model on this machine, so nothing was compared \(compare "
                    rf"the engine where a GPU runs it, or give --atol/--rtol to let onnxruntime try: it has such kernels at some opsets only\): {op_type} node .* reduces float16 values with '{reduction}': "
                    rf"onnxruntime's CPU kernels round such {'products' if reduction == 'mul' else 'sums'} their own way, not as the spec orders them\n$",
                    result.stderr), output_of(result)
    tolerant = check(path, "--atol", "0.05", "--rtol", "0.05")  # the user's tolerances: onnxruntime is compared at them, where it runs
    compared = "(atol 0.05, rtol 0.05: --atol and --rtol given)" in tolerant.stdout
    assert compared or "cannot run this model on this machine" in tolerant.stderr, output_of(tolerant)
    assert compared == (reduction == "mean") and "cannot check this model" not in tolerant.stderr, output_of(tolerant)


def test_the_model_is_read_once_and_inferred_at_most_twice(tmp_path, monkeypatch, capsys):
    """One read of the model file (the engine, the reference, the data loader and the lowering all take what it read)
    and at most two runs of ONNX shape inference: the model's, and the data loader's symbolic copy."""
    import builtins
    import os

    import onnx

    from trt_scatter import onnx_models
    from trt_scatter.cli import main

    path = fx.save(onnx_models.slice_scatter_model((4, 6), start=[1], stop=[6], step=[2], axes=[1]), tmp_path / "one.onnx")
    opens, inferences = [], []
    real_open, real_os_open, real_infer = builtins.open, os.open, onnx.shape_inference.infer_shapes
    monkeypatch.setattr(builtins, "open", lambda file, *args, **kwargs: opens.append(file) or real_open(file, *args, **kwargs))
    monkeypatch.setattr(os, "open", lambda file, *args, **kwargs: opens.append(file) or real_os_open(file, *args, **kwargs))
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", lambda *args, **kwargs: inferences.append(1) or real_infer(*args, **kwargs))
    exit_code = main(["check", str(path), "--allow-engine-not-run"])
    assert exit_code == 0, capsys.readouterr()
    assert [file for file in opens if str(file) == str(path)] == [str(path)]
    assert 1 <= len(inferences) <= 2


def test_outputs_computed_with_floats_get_tolerances_and_data_moved_is_exact(tmp_path):
    """A correct model with a Sigmoid passes (onnxruntime and NumPy differ in the last bits), at polygraphy's default
    tolerances; a scatter's output is compared exactly; each line says which."""
    import onnx
    from onnx import TensorProto, helper

    from trt_scatter import onnx_models

    model = onnx_models.scatter_elements_model((4, 6), (2, 6), axis=0)
    model.graph.node.append(helper.make_node("Sigmoid", ["output"], ["activated"]))
    model.graph.output.append(helper.make_tensor_value_info("activated", TensorProto.FLOAT, [4, 6]))
    path = fx.save(model, tmp_path / "sigmoid.onnx")
    onnx.checker.check_model(model, full_check=True)
    result = check(path, "--allow-engine-not-run", "--iterations", "3")
    assert result.returncode == 0, output_of(result)
    lines = result.stdout.splitlines()
    assert all("(atol 0, rtol 0: exact" in line or "(identical)" in line for line in lines if line.startswith("PASS output"))
    activated = [line for line in lines if line.startswith("PASS activated")]
    assert len(activated) == 3 and all("(atol 1e-05, rtol 1e-05: the model computes it with floats)" in line or "(identical)" in line for line in activated)
    assert any("(atol 1e-05" in line for line in activated)  # onnxruntime's Sigmoid is not NumPy's to the last bit


def test_check_says_nothing_of_the_inputs_its_loader_threw_away(tmp_path):
    """The command line keeps trt-scatter's warnings for after the run: the loader's discarded tries must not reach it."""
    from onnx import TensorProto, helper

    from onnx_fixtures import info

    nodes = [helper.make_node("Concat", ["a", "b"], ["ab"], axis=0), helper.make_node("ScatterElements", ["d", "ab", "u"], ["y"], axis=0)]
    graph = helper.make_graph(nodes, "g", [info("d", ["N"]), info("a", [2], TensorProto.INT64), info("b", [2], TensorProto.INT64), info("u", [4])],
                              [info("y", ["N"])])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "concat.onnx")
    result = check(path, "--iterations", "5", "--allow-engine-not-run")
    assert result.returncode == 0 and "warning" not in result.stderr, output_of(result)


def test_a_run_that_fails_on_generated_inputs_says_they_were_generated(tmp_path):
    """A scatter in an If branch whose indices the branch computes: the loader draws the input they come from as free
    integers (it plans the main graph's tensors), and the reference refuses them; the line says the inputs were
    generated and how to give others."""
    from onnx import TensorProto, helper

    from onnx_fixtures import info

    nodes = [helper.make_node("Add", ["idx", "idx"], ["doubled"]), helper.make_node("ScatterElements", ["data", "doubled", "upd"], ["written"], axis=0)]
    branch = helper.make_graph(nodes, "then", [], [info("written", [6])])
    other = helper.make_graph([helper.make_node("Identity", ["data"], ["kept"])], "else", [], [info("kept", [6])])
    graph = helper.make_graph([helper.make_node("If", ["cond"], ["o"], then_branch=branch, else_branch=other)], "g",
                              [info("cond", [], TensorProto.BOOL), info("data", [6]), info("idx", [3], TensorProto.INT64), info("upd", [3])],
                              [info("o", [6])])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "branch.onnx")
    results = [check(path, "--seed", str(seed)) for seed in range(1, 4)]
    failed = [r for r in results if r.returncode == 2]
    assert failed, [output_of(r) for r in results]  # some draw takes the branch with indices out of range
    assert all(r.stderr.rstrip().endswith("(the inputs were generated: give yours with --load-inputs)") and r.stderr.count("\n") == 1
               for r in failed), [r.stderr for r in failed]


def test_outputs_computed_exactly_are_found_through_thousands_of_nodes():
    """Which outputs must match bit for bit is worked out without recursion (a chain of 400 nodes ended check in a
    RecursionError, an internal error); a float Mul on the way makes an output inexact."""
    from onnx import TensorProto, helper

    from trt_scatter.cli.check import _exact_outputs
    from trt_scatter.model import as_model

    chain = [helper.make_node("Identity", [f"t{i}"], [f"t{i + 1}"]) for i in range(5000)]
    nodes = [helper.make_node("Relu", ["x"], ["t0"]), *chain, helper.make_node("Mul", ["t5000", "t5000"], ["squared"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])],
                              [helper.make_tensor_value_info(name, TensorProto.FLOAT, [2]) for name in ("t5000", "squared")])
    # exact, and as numbers only: the Relu at the chain's start may give a zero either sign
    assert _exact_outputs(as_model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))) == {"t5000": False}


def test_float16_outputs_are_compared_at_float16s_tolerance(tmp_path):
    """Float16 sums of 16 values up to 30: onnxruntime and ONNX's evaluator accumulate them in other orders and differ by
    units in the last place, far above polygraphy's 1e-5: check compares float16 outputs at atol 1e-3, rtol 1e-2 (sums
    that cancel differ by more than that: give tolerances of yours there)."""
    from onnx import helper

    nodes = [helper.make_node("Abs", ["x"], ["size"]), helper.make_node("Mul", ["size", "thirty"], ["large"]),
             helper.make_node("ReduceSum", ["large", "axis"], ["total"], keepdims=1)]
    graph = helper.make_graph(nodes, "g", [fx.info("x", (2, 4, 16, 8), np.float16)], [fx.info("total", (2, 4, 1, 8), np.float16)],
                              [helper.make_tensor("thirty", 10, [], [30.0]), helper.make_tensor("axis", 7, [1], [2])])
    result = check(fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "sum.onnx"), "--iterations", "3")
    assert result.returncode == 3, output_of(result)
    assert "(atol 0.001, rtol 0.01: the model computes it with floats)" in result.stdout, output_of(result)
    assert result.stdout.count("PASS") > result.stdout.count("(identical)"), output_of(result)  # they differ: the tolerance is what passes


def test_an_input_onnxruntime_refuses_is_a_failed_run_not_the_machine(tmp_path):
    """An integer division by zero at the inputs given: onnxruntime refuses the values, not the model, so the line says
    the run failed and that inputs decide (it said onnxruntime could not run the model on this machine)."""
    from onnx import helper
    from polygraphy.json import save_json

    nodes = [helper.make_node("Div", ["x", "y"], ["quotient"]), helper.make_node("ScatterElements", ["data", "indices", "quotient"], ["output"], axis=0)]
    graph = helper.make_graph(nodes, "g", [fx.info("data", (4,), np.int64), fx.info("indices", (2,), np.int64), fx.info("x", (2,), np.int64),
                                           fx.info("y", (2,), np.int64)], [fx.info("output", (4,), np.int64)])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "div.onnx")
    feeds = {"data": np.zeros(4, np.int64), "indices": np.array([1, 3]), "x": np.array([6, 7]), "y": np.array([3, 0])}
    save_json([feeds], tmp_path / "inputs.json")
    result = check(path, "--load-inputs", tmp_path / "inputs.json")
    assert result.returncode == 2 and result.stderr.count("\n") == 1, output_of(result)
    assert result.stderr.startswith("trt-scatter check: error: onnxruntime failed to run the model on these inputs: [ONNXRuntimeError]")
    assert "division by zero" in result.stderr, output_of(result)


def test_a_model_onnxruntime_refuses_for_its_types_is_not_blamed_on_the_inputs(tmp_path):
    """PyTorch's TorchScript exporter writes a Slice of int32 starts and int64 axes: onnxruntime refuses the model's types,
    and the line said to give input shapes or inputs, which would not help."""
    from onnx import helper, numpy_helper

    nodes = [helper.make_node("Slice", ["x", "starts", "ends", "axes"], ["sliced"]),
             helper.make_node("ScatterElements", ["data", "indices", "sliced"], ["output"])]
    constants = [numpy_helper.from_array(np.array([0], np.int32), "starts"), numpy_helper.from_array(np.array([2], np.int32), "ends"),
                 numpy_helper.from_array(np.array([0], np.int64), "axes")]
    graph = helper.make_graph(nodes, "g", [fx.info("x", (4,), np.float32), fx.info("data", ("n",), np.float32), fx.info("indices", (2,), np.int64)],
                              [fx.info("output", ("n",), np.float32)], constants)
    result = check(fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "types.onnx"))
    assert result.returncode == 2 and result.stderr.count("\n") == 1, output_of(result)
    assert result.stderr.startswith("trt-scatter check: error: onnxruntime refuses the model: [ONNXRuntimeError]") and "Type Error" in result.stderr
    assert "--input-shapes" not in result.stderr and "--load-inputs" not in result.stderr


def test_integer_outputs_that_differ_where_the_expected_value_is_0_fail_without_numpys_warnings(capfd):
    """polygraphy's relative difference divides by the expected values: an int64 output with 0 there printed NumPy's
    "divide by zero" and "invalid value" RuntimeWarnings, each with a source line, between the verdicts."""
    import warnings

    with warnings.catch_warnings():
        warnings.simplefilter("default")  # as a user's run shows them (pytest's own filters aside)
        assert not _verdict(np.array([0, 3, 0], np.int64), np.array([1, 3, 0], np.int64))
    out, err = capfd.readouterr()
    assert "FAIL output: engine vs oracle: max abs diff 1, max rel diff 1 (" in out and "RuntimeWarning" not in err + out, err


@pytest.mark.parametrize("expected, actual", [
    (np.array([0.0, 1.0], np.float32), np.array([-0.0, 1.0], np.float32)),  # a zero's sign
    (np.array([2**63 - 1, 0]), np.array([-(2**63), 0])),  # polygraphy's int64 difference wraps around
])
def test_an_exact_output_that_differs_only_where_numbers_compare_equal_fails(capfd, expected, actual):
    """An output the model only moves data to compute is compared bit for bit: -0.0 for 0.0 passed at atol 0, and
    polygraphy's int64 difference wrapped around, so that -2**63 for 2**63 - 1 passed too."""
    assert not _verdict(expected, actual)
    out = capfd.readouterr().out
    assert out.startswith("FAIL output: engine vs oracle: ") and "not bit for bit" in out, out
    if expected.dtype.kind == "f":
        assert _verdict(expected, actual, atol=1.0)  # a tolerance compares numbers
    else:
        assert not _verdict(expected, actual, atol=1.0)  # numbers 2**64 - 1 apart, which the wrapped difference made 1


def test_a_verdict_says_which_tolerance_the_user_gave(elements_model, tmp_path):
    """With --atol alone, the line said "(atol 0.01, rtol 0: given)", rtol being the output's own default."""
    from polygraphy.comparator import RunResults

    inputs, golden = tmp_path / "in.json", tmp_path / "golden.json"
    check(elements_model, "--save-inputs", inputs, "--save-outputs", golden)
    results = RunResults.load(str(golden))
    for _, iterations in results.items():
        for iteration in iterations:
            iteration["output"] = iteration["output"] + np.float32(0.001)  # off by less than the given atol
    results.save(str(golden))
    result = check(elements_model, "--load-inputs", inputs, "--load-outputs", golden, "--atol", "0.01", "--allow-engine-not-run")
    assert result.returncode == 0 and "(atol 0.01, rtol 0: --atol given)" in result.stdout, output_of(result)


def test_bfloat16_outputs_are_compared_not_crashed_on(capfd):
    """polygraphy's tolerance check promotes the outputs with int64, which bfloat16 refuses: a bfloat16 output that
    differed (a TensorRT engine's, on a GPU machine) ended the check in a DTypePromotionError."""
    import ml_dtypes

    bfloat16 = np.dtype(ml_dtypes.bfloat16)
    assert not _verdict(np.array([1.0, 2.0], bfloat16), np.array([1.0, 2.5], bfloat16))
    assert "FAIL output: engine vs oracle: max abs diff 0.5" in capfd.readouterr().out
    assert _verdict(np.array([1.0, 2.0], bfloat16), np.array([1.0, 2.0078125], bfloat16), atol=0.01)


def test_a_dimension_declared_minus_one_is_dynamic_as_tensorrt_takes_it(tmp_path, capsys):
    """Some exporters write dim_value -1 for a dimension they do not know. TensorRT's parser takes it for a dynamic one (build
    asked for its profile); check took it for a size of -1 ("'indices' dimension 0 must be at most data's (-1)")."""
    from onnx import TensorProto, helper

    from trt_scatter.cli import main

    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"])], "g",
                              [value("data", TensorProto.FLOAT, [-1]), value("indices", TensorProto.INT64, [2]), value("updates", TensorProto.FLOAT, [2])],
                              [value("output", TensorProto.FLOAT, [-1])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "minus_one.onnx")
    assert main(["check", str(tmp_path / "minus_one.onnx"), "--allow-engine-not-run"]) == 0, capsys.readouterr()
    assert "inputs: generated at --input-shapes 'data:[4]' 'indices:[2]' 'updates:[2]'" in capsys.readouterr().out


def test_an_unusual_debug_switch_is_named_by_check_where_no_kernel_runs(tmp_path, monkeypatch, caplog):
    """check builds in a child whose output it holds, so the plugins' reading of TRT_SCATTER_DEBUG there was never seen."""
    from trt_scatter import log
    from trt_scatter.cli import main
    from trt_scatter.onnx_models import slice_scatter_model

    onnx.save(slice_scatter_model((4, 6), [1], [4], [1], [1]), tmp_path / "m.onnx")
    monkeypatch.setenv("TRT_SCATTER_DEBUG", "2")
    monkeypatch.setattr(log, "_warned_flags", set())
    main(["check", str(tmp_path / "m.onnx"), "--allow-engine-not-run"])
    assert "TRT_SCATTER_DEBUG='2' is not one of 1/true/yes/on (on) or 0/false/no/off (off): taken as on" in caplog.text


def test_an_integer_output_the_model_computes_from_floats_is_compared_exactly(tmp_path, capsys):
    """A next-token id, the ArgMax of float logits: it was compared at the float tolerances, where an id of 124544 against
    124543 is a relative difference of 8e-6, and passed. An integer output is an index, a count or an id: exact."""
    from onnx import TensorProto, helper

    from trt_scatter.cli import check, main

    value = helper.make_tensor_value_info
    nodes = [helper.make_node("Mul", ["x", "scale"], ["logits"]), helper.make_node("ArgMax", ["logits"], ["token"], axis=-1, keepdims=0)]
    graph = helper.make_graph(nodes, "g", [value("x", TensorProto.FLOAT, [1, 200000])], [value("token", TensorProto.INT64, [1])],
                              [onnx.numpy_helper.from_array(np.array(0.5, np.float32), "scale")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "argmax.onnx")
    results = {"reference": [{"token": np.array([124544])}], "onnxruntime": [{"token": np.array([124543])}]}
    loaded = common_model(tmp_path / "argmax.onnx")
    assert check._compare(results, [("reference", "onnxruntime")], check._default_tolerances(loaded)) == [("reference", "onnxruntime")]
    out = capsys.readouterr().out
    assert out.startswith("FAIL token: onnxruntime vs reference: max abs diff 1, max rel diff 8.02936e-06 (atol 0, rtol 0: "
                                              "exact: an integer output (an index, a count, an id) computed from floats, which a near-tie "
                                              "there can flip: --atol allows a difference)"), out
    assert main(["check", str(tmp_path / "argmax.onnx"), "--allow-engine-not-run"]) == 0  # equal runs still pass


def common_model(path):
    from trt_scatter.cli import common

    return common.load_model(path, weights=True)


def test_a_tolerance_of_one_output_leaves_the_others_as_they_were(tmp_path):
    """``--atol NAME:VALUE`` (polygraphy's form) loosens one output: a float output whose golden data a regression moves
    by 1e-4 passes, while an exact output beside it stays exact (a bare --atol loosened every output)."""
    from onnx import TensorProto, helper

    from trt_scatter.cli import check

    value = helper.make_tensor_value_info
    nodes = [helper.make_node("Mul", ["x", "x"], ["y"]), helper.make_node("Identity", ["x"], ["z"])]
    graph = helper.make_graph(nodes, "g", [value("x", TensorProto.FLOAT, [4])], [value("y", TensorProto.FLOAT, [4]), value("z", TensorProto.FLOAT, [4])])
    loaded = common_model(fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "two.onnx"))
    parse = check._tolerance_word("--atol")
    tolerances = check._tolerances(loaded, [parse("y:1e-3")], [])
    assert tolerances == {"y": (1e-3, 1e-5, "--atol given", False), "z": (0.0, 0.0, "exact: the model only moves data to compute it", True)}
    assert check._tolerances(loaded, [parse("1e-3")], [check._tolerance_word("--rtol")("z:0.5")]) == {
        "y": (1e-3, 1e-5, "--atol given", False), "z": (1e-3, 0.5, "--atol and --rtol given", False)}
    assert check._tolerances(loaded, [parse("0")], [check._tolerance_word("--rtol")("0")]) == {  # a zero tolerance compares numbers
        "y": (0.0, 0.0, "--atol and --rtol given", False), "z": (0.0, 0.0, "--atol and --rtol given", True)}


def test_loaded_inputs_with_a_value_for_an_input_the_model_fills_are_refused_by_that_rule(tmp_path):
    """An input that an initializer fills is a constant (the rule polygraphy run and the reference keep): a value loaded
    for it is refused in those words, not as a name the model lacks."""
    from onnx import helper, numpy_helper
    from polygraphy.json import save_json

    nodes = [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"], axis=0)]
    graph = helper.make_graph(nodes, "g", [fx.info("data", (4, 3), np.float32), fx.info("indices", (1, 3), np.int64),
                                           fx.info("updates", (1, 3), np.float32)], [fx.info("output", (4, 3), np.float32)],
                              [numpy_helper.from_array(np.array([[0, 2, 1]]), "indices")])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "constant_indices.onnx")
    save_json([{"data": np.zeros((4, 3), np.float32), "indices": np.array([[3, 3, 3]]), "updates": np.ones((1, 3), np.float32)}],
              str(tmp_path / "inputs.json"))
    refused = check(path, "--load-inputs", tmp_path / "inputs.json")
    assert refused.returncode == 2 and refused.stderr.count("\n") == 1, output_of(refused)
    assert refused.stderr.rstrip("\n").endswith("iteration 0: input 'indices' has an initializer, so its value is a constant (as TensorRT's "
                                                "ONNX parser takes it): leave it out of the inputs, or remove the initializer to feed it")


def test_an_output_through_relu_max_or_min_is_exact_as_numbers_not_bit_for_bit(tmp_path):
    """Relu(-0.0) is +0.0 in ONNX's evaluator and -0.0 in onnxruntime (IEEE 754 leaves max(-0, +0) open): a correct
    model failed its exact comparison on inputs that hold -0.0. Such an output is compared exactly as numbers; one the
    model only moves keeps its zero's sign."""
    from onnx import helper
    from polygraphy.json import save_json

    nodes = [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["moved"], axis=0),
             helper.make_node("Relu", ["moved"], ["rectified"])]
    graph = helper.make_graph(nodes, "g", [fx.info("data", (2, 3), np.float32), fx.info("indices", (1, 3), np.int64),
                                           fx.info("updates", (1, 3), np.float32)],
                              [fx.info("moved", (2, 3), np.float32), fx.info("rectified", (2, 3), np.float32)])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "relu.onnx")
    save_json([{"data": np.array([[-0.0, 1, -2], [3, -0.0, 0]], np.float32), "indices": np.array([[1, 0, 0]]),
                "updates": np.array([[-0.0, 5, -0.0]], np.float32)}], str(tmp_path / "inputs.json"))
    result = check(path, "--load-inputs", tmp_path / "inputs.json", "--allow-engine-not-run")
    lines = [line for line in result.stdout.splitlines() if line.startswith(("PASS", "FAIL"))]
    assert result.returncode == 0, output_of(result)
    assert any(line.startswith("PASS moved: ") and "(identical)" in line for line in lines), lines
    (rectified,) = [line for line in lines if line.startswith(("PASS rectified", "FAIL rectified"))]
    assert rectified.startswith("PASS rectified: ") and "exact as numbers" in rectified, rectified
    given = check(path, "--load-inputs", tmp_path / "inputs.json", "--allow-engine-not-run", "--atol", "rectified:0")
    assert given.returncode == 0 and "PASS rectified: " in given.stdout, output_of(given)  # the same zero tolerance, given


def test_a_golden_run_that_no_run_here_is_compared_with_is_named(elements_model, tmp_path):
    """A golden file from a GPU machine holds a tensorrt run; where the engine does not run, that run was compared with
    nothing and only listed, even 1000 off. A note names it."""
    from polygraphy.comparator import IterationResult, RunResults

    inputs, outputs = _golden(elements_model, tmp_path)
    results = RunResults.load(str(outputs))
    reference = results[0][1][0]
    results.append(("tensorrt", [IterationResult({"output": reference["output"] + 1000}, runner_name="tensorrt")]))
    results.save(str(outputs))
    result = check(elements_model, "--load-inputs", inputs, "--load-outputs", outputs, "--allow-engine-not-run")
    if HAS_GPU:
        assert result.returncode == 1 and "FAIL output: tensorrt vs golden tensorrt" in result.stdout, output_of(result)
        return
    assert result.returncode == 0, output_of(result)
    assert ("note: the golden run 'tensorrt' is compared with nothing: no run here is of its runner (the engine runs only "
            "on a GPU)") in result.stdout, result.stdout
