"""Bad input, a further round: the environment (switches, the kernel cache), paths and names, an interrupted command,
the example networks' profiles, the PyTorch exporter, the plugin creators and the data loader's arguments. Each
mistake is one line naming it, nothing is left half written or running, nothing is silently ignored."""

import logging
import os
import signal
import stat
import time
from pathlib import Path

import numpy as np
import onnx
import pytest
from onnx import helper, numpy_helper

import onnx_fixtures as fx
from trt_scatter import onnx_models
from trt_scatter.inputs import ScatterDataLoader
from trt_scatter.plugins import cuda, kernels


def _one_line(result, code=2):
    """The command failed with ``code`` and said why in one line on stderr (no traceback); returns that line."""
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    return result.stderr.rstrip("\n")


def _plugin_model(tmp_path, name="m.onnx"):
    path = tmp_path / name
    onnx.save(onnx_models.slice_scatter_model((4, 6), start=[1], stop=[6], step=[2], axes=[1]), path)
    return path


def _temporary_files(folder):
    return [name for name in os.listdir(folder) if name.endswith(".tmp") or name.startswith(".")]


# ---- the environment ------------------------------------------------------------------------------------


@pytest.mark.parametrize("value, on", [("1", True), ("true", True), ("Yes", True), ("on", True), ("", False), ("0", False),
                                       ("false", False), ("no", False), ("OFF", False)])
def test_switches_read_the_usual_words(monkeypatch, value, on):
    """TRT_SCATTER_DEBUG=true was silently off (only "1" counted) and TRT_SCATTER_VERBOSE=false on (all but "0")."""
    from trt_scatter.log import env_flag

    monkeypatch.setenv("TRT_SCATTER_DEBUG", value)
    monkeypatch.setenv("TRT_SCATTER_VERBOSE", value)
    assert kernels.debug_enabled() is on
    assert env_flag("TRT_SCATTER_VERBOSE") is on


def test_a_switch_of_another_value_is_on_with_one_warning(monkeypatch, caplog):
    monkeypatch.setenv("TRT_SCATTER_DEBUG", "2")
    with caplog.at_level(logging.WARNING, logger="trt_scatter"):
        assert kernels.debug_enabled() and kernels.debug_enabled()
    assert [record.getMessage() for record in caplog.records] == ["TRT_SCATTER_DEBUG='2' is not one of 1/true/yes/on (on) or 0/false/no/off (off): taken as on"]


@pytest.fixture
def fake_compiler(monkeypatch, tmp_path):
    """NVRTC replaced by a stand-in that returns a recognizable CUBIN and counts its calls; the cache in tmp_path."""
    compiled = []

    def compile_cubin(kernel, element_size, index_itemsize, arch):
        compiled.append(kernel)
        return b"\x7fELF" + bytes([element_size, arch]) * 500, f"lowered_{kernel}"

    monkeypatch.setattr(cuda, "compile_cubin", compile_cubin)
    monkeypatch.setattr(cuda, "_cubins", {})
    monkeypatch.setattr(cuda, "source_digest", lambda: "d1g3st")
    monkeypatch.setenv(cuda.CACHE_ENV, str(tmp_path / "cache"))
    return compiled


def _cache_file(tmp_path):
    return tmp_path / "cache" / (cuda.cache_key("slice_scatter", 4, None, 90) + ".cubin")


@pytest.mark.parametrize("damage", ["truncated", "name not UTF-8", "one byte flipped"])
def test_a_damaged_kernel_in_the_cache_is_compiled_again_not_loaded(fake_compiler, tmp_path, damage):
    first = cuda.cubin("slice_scatter", 4, None, 90)
    cuda._cubins.clear()
    blob = _cache_file(tmp_path).read_bytes()
    damaged = {"truncated": blob[: len(blob) // 2],
               "name not UTF-8": blob.replace(b"lowered_slice_scatter", b"\xff\xfe"),
               "one byte flipped": blob[:-10] + bytes([blob[-10] ^ 1]) + blob[-9:]}[damage]
    _cache_file(tmp_path).write_bytes(damaged)
    assert cuda.cubin("slice_scatter", 4, None, 90) == first
    assert len(fake_compiler) == 2
    cuda._cubins.clear()
    assert cuda.cubin("slice_scatter", 4, None, 90) == first and len(fake_compiler) == 2  # written again, whole


def test_a_kernel_cache_write_that_fails_leaves_no_temporary_file(fake_compiler, tmp_path, monkeypatch):
    def full_disk(self, data):
        with open(self, "wb") as f:
            f.write(data[:10])
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(Path, "write_bytes", full_disk)
    assert cuda.cubin("slice_scatter", 4, None, 90)[1] == "lowered_slice_scatter"
    assert os.listdir(tmp_path / "cache") == []


# ---- paths and names ------------------------------------------------------------------------------------


def test_an_output_through_a_dangling_link_is_written_where_it_points(tmp_path):
    model = _plugin_model(tmp_path)
    (tmp_path / "link.onnx").symlink_to(tmp_path / "target.onnx")
    result = fx.run_tool("trt-scatter", ["lower", model, tmp_path / "link.onnx"])
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "link.onnx").is_symlink() and onnx.load(tmp_path / "target.onnx").graph.node


def test_an_output_gets_the_usual_permissions_and_keeps_those_of_the_file_it_replaces(tmp_path):
    model = _plugin_model(tmp_path)
    umask = os.umask(0o022)
    try:
        assert fx.run_tool("trt-scatter", ["lower", model, tmp_path / "new.onnx"]).returncode == 0
        (tmp_path / "old.onnx").write_bytes(b"old")
        os.chmod(tmp_path / "old.onnx", 0o640)
        assert fx.run_tool("trt-scatter", ["lower", model, tmp_path / "old.onnx"]).returncode == 0
    finally:
        os.umask(umask)
    assert stat.S_IMODE(os.stat(tmp_path / "new.onnx").st_mode) == 0o644
    assert stat.S_IMODE(os.stat(tmp_path / "old.onnx").st_mode) == 0o640 and onnx.load(tmp_path / "old.onnx").graph.node


def test_a_model_in_a_folder_whose_name_is_not_utf8_builds_with_its_external_weights(tmp_path):
    """TensorRT's parser takes the path as UTF-8 only: it was one confusing line ("parse(): incompatible function arguments")."""
    data = helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [4, 300])
    output = helper.make_tensor_value_info("output", onnx.TensorProto.FLOAT, [4, 300])
    constants = [numpy_helper.from_array(np.array([[1], [3]], np.int64), "indices"), numpy_helper.from_array(np.ones((2, 300), np.float32), "updates")]
    graph = helper.make_graph([helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])], "g", [data], [output], constants)
    (tmp_path / "plain").mkdir()
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "plain" / "w.onnx",
              save_as_external_data=True, size_threshold=1024, location="w.data")
    folder = tmp_path / os.fsdecode(b"mod\xe8les")  # Latin-1 bytes: not UTF-8
    (tmp_path / "plain").rename(folder)
    (folder / "w.onnx").rename(folder / os.fsdecode(b"\xe9.onnx"))
    result = fx.run_tool("trt-scatter", ["build", folder / os.fsdecode(b"\xe9.onnx"), "-o", tmp_path / "e.engine"])
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "e.engine").stat().st_size > 0


@pytest.mark.parametrize("argv, rule", [
    (["build", "slice_scater"], "unknown example network 'slice_scater' (did you mean 'slice_scatter'?); known: "),
    (["build", "SliceScatter", "--plugins"], "unknown example network 'SliceScatter' (did you mean 'slice_scatter'?)"),
    (["build", "./missing", "--plugins"], "cannot read ONNX model './missing': No such file or directory"),
    (["build", "slice_scatter", "--dynamic", "--min", "data:[1,,6]", "--opt", "data:[2,6]", "--max", "data:[4,6]"],
     "--min 'data:[1,,6]' is not NAME:[D,...]"),
    (["build", "slice_scatter", "--dynamic", "--min", "data:[99999999999999999999,6]", "--opt", "data:[2,6]", "--max", "data:[4,6]"],
     "--min 'data:[99999999999999999999,6]' has more than 2147483647 elements, TensorRT's most for one tensor"),
    (["build", "slice_scatter", "--dynamic", "--min", "data:[2,3]", "--opt", "data:[2,3]", "--max", "data:[4,6]"],
     "the --min shapes (data [2, 3]; built-in: updates [2, 3]) break the slice_scatter example's rule: updates must be [2, 2], which the "
     "example derives from its other inputs' shapes (got [2, 3]): give --min/--opt/--max for updates too"),
    (["build", "scatter_update", "--dynamic", "--min", "indices:[2]", "updates:[3,2]", "--opt", "indices:[2]", "updates:[3,2]",
      "--max", "indices:[4]", "updates:[3,2]"],
     "the --max shapes (indices [4], updates [3, 2]; built-in: data [6, 10]) break the scatter_update example's rule: updates must be "
     "[6, 4], which the example derives from its other inputs' shapes (got [3, 2])"),
    (["build", "slice_scatter", "--dynamic", "--min", "data:[2,5]", "--opt", "data:[2,5]", "--max", "data:[4,5]", "data:[4,7]"],
     "--max gives input 'data' twice"),
], ids=["typo", "typo before a flag", "a missing path", "an empty dimension", "a dimension past TensorRT's",
        "a profile for data alone", "a profile whose inputs do not fit", "a name twice"])
def test_build_names_the_mistake_in_its_target_or_profile(tmp_path, argv, rule):
    line = _one_line(fx.run_tool("trt-scatter", argv, cwd=tmp_path))
    assert line.startswith("trt-scatter build: error: ") and rule in line, line


def test_a_profile_name_the_model_lacks_is_named_as_such_even_in_one_flag(tmp_path):
    argv = ["build", _plugin_model(tmp_path), "--plugins", "--min", "data:[4,6]", "dtaa:[4,6]", "--opt", "data:[4,6]", "--max", "data:[4,6]"]
    line = _one_line(fx.run_tool("trt-scatter", argv, cwd=tmp_path))
    assert line == "trt-scatter build: error: the shape profile names 'dtaa', which is not an input of the model (its inputs: data, updates)"


def test_a_profile_that_gives_one_named_dimension_two_sizes_is_refused(tmp_path):
    """The model names idx's and src's first dimension E: TensorRT refused the profile only when it built (exit 1)."""
    node = helper.make_node("ScatterElements", ["data", "idx", "src"], ["out"], reduction="add")
    graph = helper.make_graph([node], "g", [fx.info("data", ["N", 4]), fx.info("idx", ["E", 4], np.int64), fx.info("src", ["E", 4])],
                              [fx.info("out", ["N", 4])])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "named.onnx")
    bounds = ["--min", "data:[1,4]", "idx:[1,4]", "src:[1,4]", "--opt", "data:[4,4]", "idx:[6,4]", "src:[7,4]",
              "--max", "data:[8,4]", "idx:[9,4]", "src:[9,4]"]
    line = _one_line(fx.run_tool("trt-scatter", ["build", path, "--plugins", *bounds, "-o", tmp_path / "e.engine"], cwd=tmp_path))
    assert line == ("trt-scatter build: error: dimension 'E' is 6 in idx's --opt shape [6, 4] and 7 in src's [7, 4]: "
                    "the model names both 'E', so they must be equal")
    assert not (tmp_path / "e.engine").exists()


@pytest.mark.parametrize("argv", [["build", "--plugins"], ["check", "--input-shapes", "data:[4,6]", "updates:[4,3]"]], ids=["build", "check"])
def test_an_input_without_a_shape_is_one_line_before_tensorrt(tmp_path, argv):
    """TensorRT's parser failed on the node that read it (INVALID_NODE, exit 1); check's --input-shapes could not help."""
    model = onnx_models.slice_scatter_model((4, 6), start=[1], stop=[6], step=[2], axes=[1])
    for value in model.graph.input:
        value.type.tensor_type.ClearField("shape")
    path = fx.save(model, tmp_path / "m.onnx")
    line = _one_line(fx.run_tool("trt-scatter", [argv[0], path, *argv[1:]], cwd=tmp_path))
    assert line == (f"trt-scatter {argv[0]}: error: input 'data' has no shape in the model: TensorRT needs the rank of every "
                    "input (give it a shape, with named dimensions where they vary)")


def test_a_profile_whose_inputs_fit_builds_with_those_shapes(tmp_path):
    bounds = {"--min": "[1,5]", "--opt": "[2,5]", "--max": "[3,7]"}  # updates: data's rows, every 2nd of its columns
    argv = ["build", "slice_scatter", "--dynamic", "-o", tmp_path / "e.engine"]
    for flag, data in bounds.items():
        rows, columns = (int(d) for d in data.strip("[]").split(","))
        argv += [flag, f"data:{data}", f"updates:[{rows},{(columns + 1) // 2}]"]
    result = fx.run_tool("trt-scatter", argv, cwd=tmp_path)
    assert result.returncode == 0, result.stderr
    assert (tmp_path / "e.engine").stat().st_size > 0


# ---- an interrupted command ------------------------------------------------------------------------------


def _terminated_at(name, argv, cwd):
    """trt-scatter ``argv`` in a forked child that gets SIGTERM when it calls ``os.<name>``."""
    from trt_scatter.cli import main

    def command():
        real = getattr(os, name)

        def terminated(*args, **kwargs):
            os.kill(os.getpid(), signal.SIGTERM)
            return real(*args, **kwargs)

        setattr(os, name, terminated)
        return main([str(a) for a in argv])

    return fx.run_forked(command, ["trt-scatter", *argv], cwd=cwd)


@pytest.mark.parametrize("at", ["fsync", "replace"])
def test_sigterm_mid_write_leaves_the_old_output_and_no_temporary_file(tmp_path, at):
    model = _plugin_model(tmp_path)
    (tmp_path / "out.onnx").write_bytes(b"old")
    result = _terminated_at(at, ["lower", model, tmp_path / "out.onnx"], tmp_path)
    assert _one_line(result, code=128 + signal.SIGTERM) == "trt-scatter lower: terminated by SIGTERM"
    assert (tmp_path / "out.onnx").read_bytes() == b"old" and _temporary_files(tmp_path) == []


def _build_signalled(tmp_path, signal_number):
    """`trt-scatter build` in a forked process whose build child, once started, writes its pid to ``child`` and sends
    ``signal_number`` to the command; the command's result."""
    from trt_scatter import engine
    from trt_scatter.cli import main

    def command():
        def slow_build(*args, **kwargs):  # in the child that builds: tell where it is, then the command is stopped
            (tmp_path / "child").write_text(str(os.getpid()))
            os.kill(os.getppid(), signal_number)
            time.sleep(20)
            return real(*args, **kwargs)

        real, engine.build_engine = engine.build_engine, slow_build
        return main(["build", "slice_scatter", "-o", str(tmp_path / "e.engine")])

    return fx.run_forked(command, ["trt-scatter"], cwd=tmp_path)


def test_sigterm_while_building_ends_the_build_child_too(tmp_path):
    result = _build_signalled(tmp_path, signal.SIGTERM)
    assert _one_line(result, code=128 + signal.SIGTERM) == "trt-scatter build: terminated by SIGTERM"
    child = Path("/proc") / (tmp_path / "child").read_text()
    assert not child.exists() or (child / "stat").read_text().split(") ")[1].startswith("Z")  # gone (or dead, not yet reaped)
    assert not (tmp_path / "e.engine").exists()


def _ended(pid, within_s=10.0):
    """Whether process ``pid`` is gone (or dead, not yet reaped) within ``within_s`` seconds."""
    deadline = time.monotonic() + within_s
    while time.monotonic() < deadline:
        try:
            state = (Path("/proc") / str(pid) / "stat").read_text().split(") ")[1]
        except (FileNotFoundError, ProcessLookupError):
            return True
        if state.startswith(("Z", "X")):
            return True
        time.sleep(0.05)
    return False


@pytest.mark.skipif(not Path("/proc/self/stat").exists(), reason="reads process states from /proc (Linux)")
def test_sigkill_of_the_command_ends_the_build_child_too(tmp_path):
    """SIGKILL leaves the command no time to end its build child: the child ends with it (PR_SET_PDEATHSIG)."""
    result = _build_signalled(tmp_path, signal.SIGKILL)
    assert result.returncode in (-signal.SIGKILL, 128 + signal.SIGKILL), (result.returncode, result.stderr)
    assert _ended(int((tmp_path / "child").read_text()))
    assert not (tmp_path / "e.engine").exists()


# ---- PyTorch -----------------------------------------------------------------------------------------------


def test_export_refuses_a_flag_that_is_not_a_bool():
    trt_torch = pytest.importorskip("trt_scatter.torch")
    for flag in ("dynamo", "inplace", "aot"):
        with pytest.raises(TypeError, match=f"^trt_scatter.torch.export: {flag} must be True or False \\(got 'False'\\)$"):
            trt_torch.export(None, (), **{flag: "False"})  # a non-empty string is true: aot="no" built for the AOT plugins
    with pytest.raises(ValueError, match=r"^trt_scatter.torch.export: inplace=True does nothing with aot=True, whose writes are always in place"):
        trt_torch.export(None, (), inplace=True, aot=True)  # silently ignored


def test_export_refuses_a_model_and_a_destination_it_cannot_take(tmp_path):
    """An int as f was taken for a file descriptor (the model written into whatever file it was, else EBADF after the
    export), a missing folder was met after the export, and a model that is no module failed inside torch in pages."""
    import torch

    from trt_scatter.torch import export

    with pytest.raises(TypeError, match=r"^trt_scatter.torch.export: f is a path or a binary file to save the model to \(got int\)$"):
        export(torch.nn.Identity(), (torch.zeros(2),), 1)
    with pytest.raises(ValueError, match=r"^trt_scatter.torch.export: f '.*/missing/m.onnx': its folder does not exist$"):
        export(torch.nn.Identity(), (torch.zeros(2),), tmp_path / "missing" / "m.onnx")
    with pytest.raises(ValueError, match=r"^trt_scatter.torch.export: f '.*': it is a folder: give a file path, such as '.*/model.onnx'$"):
        export(torch.nn.Identity(), (torch.zeros(2),), tmp_path)  # was IsADirectoryError, after the whole export
    with pytest.raises(ValueError, match=r"^trt_scatter.torch.export: f '.*/new/': it is a folder: give a file path, such as '.*/new/model.onnx'$"):
        export(torch.nn.Identity(), (torch.zeros(2),), f"{tmp_path}/new/")
    with pytest.raises(ValueError, match=r"^trt_scatter.torch.export: f is an empty path: give a file path, such as 'model.onnx'$"):
        export(torch.nn.Identity(), (torch.zeros(2),), "")  # was FileNotFoundError: '', after the export
    with pytest.raises(TypeError, match=r"^trt_scatter.torch.export: opset_version must be an int \(got '18'\)$"):
        export(torch.nn.Identity(), (torch.zeros(2),), opset_version="18")
    with pytest.raises(TypeError, match=r"^trt_scatter.torch.export: model is a torch.nn.Module, a torch.export.ExportedProgram or a "
                                        r"TorchScript function \(got str\)$"):
        export("notamodule", (torch.zeros(2),))

    @torch.jit.script
    def double(x):  # a TorchScript function, which torch.onnx.export's TorchScript path takes
        return x * 2

    assert [node.op_type for node in export(double, (torch.zeros(2),), dynamo=False).graph.node] == ["Constant", "Mul"]


@pytest.mark.parametrize("asked", [9, 30])
def test_export_refuses_an_opset_the_exporter_did_not_give(asked):
    """torch's dynamo exporter writes opset 18 where it cannot convert to the one asked for (9: no adapter; 30: none such),
    after a traceback in its log: the model came back at opset 18 as if it had been asked for."""
    import torch

    from trt_scatter.torch import export

    class Write(torch.nn.Module):
        def forward(self, x, i, u):
            return x.scatter(0, i, u)

    args = (torch.zeros(4, 3), torch.tensor([[1, 2, 0]]), torch.ones(1, 3))
    with pytest.raises(ValueError, match=rf"^trt_scatter.torch.export: opset_version={asked}, and torch's exporter gave opset 18 \(its "
                                         r"log above says why\): ask for an opset it gives, or leave opset_version out$"):
        export(Write(), args, opset_version=asked)
    assert [(o.domain, o.version) for o in export(Write(), args, opset_version=17).opset_import if o.domain == ""] == [("", 17)]


@pytest.mark.parametrize("dynamo", [True, False])
def test_export_refuses_args_given_as_a_list(dynamo):
    import torch

    from trt_scatter.torch import export

    with pytest.raises(TypeError, match=r"^trt_scatter.torch.export: args must be a tuple of the model's positional inputs \(got a list"):
        export(torch.nn.Identity(), [torch.zeros(2)], dynamo=dynamo)


def test_export_refuses_an_index_of_floats_instead_of_writing_it():
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    import trt_scatter.torch
    from trt_scatter.model import ModelError

    class IndexCopy(torch.nn.Module):
        def forward(self, data, index, source):
            return data.index_copy(0, index, source)

    with pytest.raises(ModelError, match="'indices' must be int32 or int64 \\(got float32\\)"):
        trt_scatter.torch.export(IndexCopy(), (torch.zeros(4, 6), torch.tensor([1.0, 2.0]), torch.ones(2, 6)))


@pytest.mark.parametrize("dynamo", [True, False], ids=["dynamo", "torchscript"])
@pytest.mark.parametrize("reduce, value", [("add", None), ("multiply", 3.0)])
def test_scatter_with_reduce_exports_and_computes_what_pytorch_does(reduce, value, dynamo):
    """torch.onnx has no translation of scatter(..., reduce=): its dynamo export failed with a long ConversionError,
    its TorchScript one with an AssertionError (the stock symbolic takes four inputs)."""
    torch = pytest.importorskip("torch")
    pytest.importorskip("onnxscript")
    import trt_scatter.torch
    from trt_scatter.reference import Reference

    class Scatter(torch.nn.Module):
        def forward(self, data, index, source):
            return data.scatter(0, index, source if value is None else value, reduce=reduce)

    args = (torch.arange(24.0).reshape(4, 6) + 1, torch.tensor([[1, 2, 0, 3, 1, 2], [1, 0, 0, 3, 1, 1]]), torch.arange(12.0).reshape(2, 6) + 2)
    names = ["data", "index", "source"]
    model = trt_scatter.torch.export(Scatter(), args, dynamo=dynamo, **({} if dynamo else {"input_names": names}))
    assert [node.op_type for node in model.graph.node if node.domain == "trt_scatter"] == ["ScatterElementsReduce"]
    inputs = [value_info.name for value_info in model.graph.input]  # TorchScript drops a source it does not read
    feeds = {name: arg.numpy() for name, arg in zip(names, args) if name in inputs}
    (result,) = Reference(model).run(feeds).values()
    np.testing.assert_array_equal(result, Scatter()(*args).numpy())  # repeated indices reduced, as eager PyTorch does


# ---- plugin creators ------------------------------------------------------------------------------------------


def test_a_plugin_field_given_twice_is_refused_not_the_last_taken():
    from trt_scatter import backend, plugins
    from trt_scatter.plugins.base import PluginError

    trt = backend.tensorrt()
    fields = [trt.PluginField("inplace", np.array([value], np.int32), trt.PluginFieldType.INT32) for value in (1, 0)]
    with pytest.raises(PluginError, match=r"^SliceScatter: plugin field\(s\) \['inplace'\] given more than once$"):
        plugins.register()["SliceScatter"].create_plugin("s", trt.PluginFieldCollection(fields), trt.TensorRTPhase.BUILD)


@pytest.mark.parametrize("value", [0.7, None, [1]])
def test_a_plugin_field_value_that_is_no_int_or_str_is_refused_not_truncated(value):
    from trt_scatter.plugins.base import fields_to_keep

    with pytest.raises(TypeError) as caught:
        fields_to_keep({"inplace": value})
    assert str(caught.value) == f"plugin field 'inplace' must be an int or a str (got {value!r})"


@pytest.mark.parametrize("value", [2**31, -(2**31) - 1, np.int64(2**40)])
def test_a_plugin_field_value_past_int32_is_refused_not_an_overflow(value):
    from trt_scatter.plugins.base import fields_to_keep

    with pytest.raises(ValueError) as caught:
        fields_to_keep({"axis": value})
    assert str(caught.value) == f"plugin field 'axis' must fit in int32 (got {int(value)})"
    assert fields_to_keep({"axis": -(2**31)})[0].name == "axis"  # the ends of int32 are taken


# ---- the data loader ---------------------------------------------------------------------------------------------


@pytest.mark.parametrize("arguments, error, message", [
    ({"seed": None}, TypeError, "seed must be an int (got None)"),
    ({"seed": "7"}, TypeError, "seed must be an int (got '7')"),
    ({"seed": -1}, ValueError, "seed must not be negative (got -1)"),
    ({"iterations": -1}, ValueError, "iterations must not be negative (got -1)"),
    ({"iterations": 2.5}, TypeError, "iterations must be an int (got 2.5)"),
    ({"iterations": True}, TypeError, "iterations must be an int (got True)"),
    ({"input_shapes": [("data", (4, 6))]}, TypeError, "input_shapes must map input names to shapes (got list)"),
    ({"input_shapes": {"data": "4,6"}}, TypeError, "input_shapes['data'] must be a sequence of ints (got '4,6')"),
    ({"input_shapes": {"data": (2.9, 6)}}, TypeError, "input_shapes['data'] dimension must be an int (got 2.9)"),
    ({"input_shapes": {"data": (-2, 6)}}, ValueError, "input_shapes['data'] dimension must not be negative (got -2)"),
])
def test_the_data_loader_names_a_wrong_argument(arguments, error, message):
    """These were NumPy's words ("object of type 'NoneType' has no len()", "__len__() should return >= 0") or,
    for 2.9 and True, a silent int()."""
    model = onnx_models.slice_scatter_model(("n", 6), start=[1], stop=[6], step=[2], axes=[1])
    with pytest.raises(error) as caught:
        ScatterDataLoader(model, **arguments)[0]
    assert str(caught.value) == f"ScatterDataLoader: {message}"
