"""What trt-scatter says when something is wrong: one line on stderr, exit 2, and nothing else there.

Each case runs the real command in a fresh process (so stderr holds everything the process wrote,
TensorRT's C++ side included) and asserts the whole of stderr. The rules themselves are tested one
at a time in tests/test_validate.py; here each kind of mistake reaches the user through every
command that builds: ``trt-scatter build``, ``trt-scatter check`` and ``polygraphy run
--trt-scatter-plugins``. The valid forms the specs allow still build.
"""

import os
import re

import numpy as np
import onnx
import pytest
from conftest import HAS_FULL_TENSORRT
from test_validate import scatter_update, slice_scatter, standard_scatter

import onnx_fixtures as fx
import plugin_models as models

RTX_ENV = None if HAS_FULL_TENSORRT else {"POLYGRAPHY_USE_TENSORRT_RTX": "1"}


def save(model, path):
    onnx.save(model, path)
    return path


def assert_one_line(result, line):
    assert result.returncode == 2, result.stdout + result.stderr
    assert result.stderr == line + "\n", result.stderr
    assert "Traceback" not in result.stdout


STEP_0 = "SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 (got [0])"
OUT_OF_RANGE = "ScatterUpdate node 'update': scatter_update: 'indices' values must be in [0, 2] for a dimension of size 3 (got 5)"


@pytest.mark.parametrize(
    "model, line",
    [
        (slice_scatter(step=(0,)), STEP_0),
        (scatter_update(indices=(5,)), OUT_OF_RANGE),
        (standard_scatter("ScatterND", [[9]]), "ScatterND node 'scatter': scatter_nd: 'indices' values must be in [-8, 7] for a dimension of size 8 (got 9)"),
        (slice_scatter(attrs={"inplace": 2}), "SliceScatter node 'write_kv': attribute 'inplace' must be the int 0 or 1 (got 2)"),
        (scatter_update(index_dtype=np.float32), "ScatterUpdate node 'update': scatter_update: 'indices' must be int32 or int64 (got float32)"),
        (slice_scatter(updates=(2, 4), stop=(1,)), "SliceScatter node 'write_kv': slice_scatter: 'updates' must have shape (1, 5) "
         "(data's shape with each sliced axis cut to its slice's length; axis 0's slice (start 0, stop 1, step 1) takes 1 of its 2) "
         "(got shape (2, 4))"),
    ],
)
@pytest.mark.parametrize("command", ["build", "check", "lower", "rewrite"])
def test_a_mistake_in_the_model_is_one_line(tmp_path, command, model, line):
    path = save(model, tmp_path / "model.onnx")
    output = tmp_path / ("m.engine" if command == "build" else "out.onnx")
    args = {"build": ["build", path, "--plugins", "-o", output], "check": ["check", path]}.get(command, [command, path, output])
    assert_one_line(fx.run_tool("trt-scatter", args), f"trt-scatter {command}: error: {line}")
    assert not output.exists()


def test_polygraphy_run_with_the_plugin_flag_refuses_the_mistake_in_one_line(tmp_path):
    path = save(slice_scatter(step=(0,)), tmp_path / "model.onnx")
    result = fx.run_tool("polygraphy", ["run", path, "--trt", "--trt-scatter-plugins"], env=RTX_ENV)
    assert result.returncode != 0
    assert result.stderr == f"[!] --trt-scatter-plugins: {STEP_0}\n", result.stderr
    assert "Traceback" not in result.stdout


def test_polygraphy_run_enables_aliased_io_for_inplace_models(tmp_path):
    inplace = save(slice_scatter(attrs={"inplace": 1}), tmp_path / "inplace.onnx")
    plain = save(slice_scatter(), tmp_path / "plain.onnx")
    script = fx.run_tool("polygraphy", ["run", inplace, "--trt", "--trt-scatter-plugins", "--gen-script", "-"], env=RTX_ENV)
    features = re.search(r"preview_features=\[([^]]*)\]", script.stdout)
    assert script.returncode == 0 and features and "trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03" in features.group(1), script.stdout + script.stderr
    script = fx.run_tool("polygraphy", ["run", plain, "--trt", "--trt-scatter-plugins", "--gen-script", "-"], env=RTX_ENV)
    assert script.returncode == 0 and "ALIASED_PLUGIN_IO_10_03" not in script.stdout, script.stderr


@pytest.mark.parametrize(
    "content, line",
    [
        (b"", "'{path}' is empty, not an ONNX model"),
        (b"\xff\xfe not protobuf", "'{path}' is not an ONNX model (Error parsing message with type 'onnx.ModelProto': Wire format was corrupt)"),
        (None, "cannot read ONNX model '{path}': No such file or directory"),
    ],
)
@pytest.mark.parametrize("command", ["build", "check"])
def test_a_file_that_is_no_model_is_one_line(tmp_path, command, content, line):
    path = tmp_path / "model.onnx"
    if content is not None:
        path.write_bytes(content)
    assert_one_line(fx.run_tool("trt-scatter", [command, path]), f"trt-scatter {command}: error: " + line.format(path=path))


@pytest.mark.parametrize("command", ["build", "check"])
def test_an_engine_where_a_model_is_expected_is_one_line(tmp_path, command):
    engine = tmp_path / "slice_scatter.engine"
    built = fx.run_tool("trt-scatter", ["build", "slice_scatter", "-o", engine])
    assert built.returncode == 0, built.stderr
    line = f"trt-scatter {command}: error: '{engine}' is a serialized TensorRT engine, not an ONNX model"
    assert_one_line(fx.run_tool("trt-scatter", [command, engine]), line)


def test_an_engine_given_to_build_where_it_would_write_it_is_named_as_an_engine(tmp_path):
    """``trt-scatter build engines/x.engine`` would write engines/x.engine: what is wrong is the input, an engine (or no
    file at all), not the output (it said the output was the file it reads)."""
    built = fx.run_tool("trt-scatter", ["build", "slice_scatter"], cwd=tmp_path)
    assert built.returncode == 0, built.stderr
    engine = os.path.join("engines", "slice_scatter.engine")
    line = f"trt-scatter build: error: '{engine}' is a serialized TensorRT engine, not an ONNX model"
    assert_one_line(fx.run_tool("trt-scatter", ["build", engine], cwd=tmp_path), line)
    missing = os.path.join("engines", "missing.engine")
    line = f"trt-scatter build: error: cannot read ONNX model '{missing}': No such file or directory"
    assert_one_line(fx.run_tool("trt-scatter", ["build", missing], cwd=tmp_path), line)


def test_output_paths_that_cannot_be_written_are_one_line(tmp_path):
    model = save(slice_scatter(), tmp_path / "model.onnx")
    folder = tmp_path / "engines"
    folder.mkdir()
    result = fx.run_tool("trt-scatter", ["build", model, "--plugins", "-o", folder])
    assert_one_line(result, f"trt-scatter build: error: output '{folder}' is a directory: give a file path")
    missing = f"{tmp_path / 'new'}/"  # a folder by its name: a file called 'new' was written there
    result = fx.run_tool("trt-scatter", ["lower", model, missing])
    assert_one_line(result, f"trt-scatter lower: error: output '{missing}' names a folder (it ends in '/'): give a file path")
    assert not (tmp_path / "new").exists()
    result = fx.run_tool("trt-scatter", ["build", model, "--plugins", "-o", model / "x.engine"])
    assert_one_line(result, f"trt-scatter build: error: output '{model / 'x.engine'}' cannot be written: '{model}' is not a directory")


@pytest.mark.skipif(os.geteuid() == 0, reason="root writes into read-only folders")
def test_output_in_a_read_only_folder_is_one_line(tmp_path):
    model = save(slice_scatter(), tmp_path / "model.onnx")
    folder = tmp_path / "read_only"
    folder.mkdir(mode=0o555)
    result = fx.run_tool("trt-scatter", ["build", model, "--plugins", "-o", folder / "m.engine"])
    assert_one_line(result, f"trt-scatter build: error: output '{folder / 'm.engine'}' cannot be written: no permission to write in '{folder}'")


def test_input_shapes_for_no_input_is_one_line(tmp_path):
    model = save(slice_scatter(data=("n", 5), updates=("n", 5)), tmp_path / "model.onnx")
    result = fx.run_tool("trt-scatter", ["check", model, "--input-shapes", "dat:[3,5]"])
    assert_one_line(result, "trt-scatter check: error: --input-shapes names 'dat', which is not an input of the model (its inputs: data, updates)")


@pytest.mark.parametrize(
    "args, line",
    [
        (["build", "--bogus"], "trt-scatter build: error: unrecognized arguments: --bogus (see trt-scatter build --help)"),
        (["lower", "a.onnx", "b.onnx", "c.onnx"], "trt-scatter lower: error: unrecognized arguments: c.onnx (see trt-scatter lower --help)"),
        (["--bogus", "lower", "a.onnx", "b.onnx"], "trt-scatter: error: unrecognized arguments: --bogus (see trt-scatter --help)"),
        (["check"], "trt-scatter check: error: the following arguments are required: model (see trt-scatter check --help)"),
        (["check", "m.onnx", "--iterations", "0"], "trt-scatter check: error: argument --iterations: '0' is not a positive integer (see trt-scatter check --help)"),
        ([], "trt-scatter: error: the following arguments are required: command (see trt-scatter --help)"),
    ],
)
def test_argument_errors_are_one_line(args, line):
    assert_one_line(fx.run_tool("trt-scatter", args), line)


@pytest.mark.parametrize(
    "model",
    [
        pytest.param(slice_scatter(start=(1,), stop=(1,), updates=(0, 5)), id="empty-slice-empty-updates"),
        pytest.param(scatter_update(indices=2, updates=(4,)), id="0-d-indices"),
        pytest.param(scatter_update(axis=0), id="0-d-axis"),
        pytest.param(slice_scatter(attrs={"inplace": 1}), id="inplace"),
    ],
)
def test_valid_forms_build(tmp_path, model):
    path = save(model, tmp_path / "model.onnx")
    result = fx.run_tool("trt-scatter", ["build", path, "--plugins", "-o", tmp_path / "m.engine"])
    assert result.returncode == 0 and result.stderr == "", result.stderr
    assert (tmp_path / "m.engine").stat().st_size > 0
    assert "Attribute inplace not found" not in result.stdout  # the harmless parser warning stays unsaid


def test_check_builds_inplace_models(tmp_path):
    """The aliased-I/O preview feature is enabled where a node has inplace=1 (the build failed without it)."""
    path = save(slice_scatter(attrs={"inplace": 1}), tmp_path / "model.onnx")
    result = fx.run_tool("trt-scatter", ["check", path, "--allow-engine-not-run"])
    assert result.returncode == 0 and result.stderr == "", result.stdout + result.stderr
    assert "engine: built" in result.stdout


@models.forked
def test_check_fails_naming_the_op_whose_kernel_skipped_writes(tmp_path, monkeypatch, capsys):
    """A TensorRT run fails when a plugin's enqueue raises on its debug count; check says which op it was."""
    from trt_scatter import plugins
    from trt_scatter.cli import check, main

    path = save(slice_scatter(), tmp_path / "model.onnx")
    counted = "SliceScatter: the slice that start/stop/step/axes select does not have updates' shape (error count 1) (TRT_SCATTER_DEBUG=1)"

    def run(runners, feeds, model):
        plugins.report_counted_error(counted)  # what enqueue records before it raises
        raise check.common.CliError("a run failed: Failed to execute")

    monkeypatch.setattr(check, "_run", run)
    assert main(["check", str(path)]) == 1
    out = capsys.readouterr().out.splitlines()
    assert out[-2:] == [f"FAIL {counted}", "FAILED"]


def test_check_runs_tensorrt_with_the_debug_count_on(monkeypatch, debug_env_unset):
    from trt_scatter.cli import check

    check._tensorrt_runner(b"not run", False)
    assert os.environ["TRT_SCATTER_DEBUG"] == "1"
    monkeypatch.setenv("TRT_SCATTER_DEBUG", "0")  # a user who turned it off keeps it off
    check._tensorrt_runner(b"not run", False)
    assert os.environ["TRT_SCATTER_DEBUG"] == "0"


@pytest.mark.parametrize("flag", ["--save-inputs", "--save-outputs", "--save-engine"])
def test_check_output_paths_that_are_directories_are_one_line_before_any_work(tmp_path, flag):
    model = save(slice_scatter(), tmp_path / "model.onnx")
    result = fx.run_tool("trt-scatter", ["check", model, flag, tmp_path])
    assert_one_line(result, f"trt-scatter check: error: {flag} '{tmp_path}' is a directory: give a file path")
    assert result.stdout == ""  # nothing was built or run
