"""Bad input, tried as a careless or malicious user would: nothing of the user's is overwritten or truncated,
nothing outside a model's folder is read, a mistake is one line naming it (exit 2; 1 for a failed check or
TensorRT's own failure, 70 for trt-scatter's bug), nothing hangs, no engine is built silently wrong."""

import os
import resource
import signal
import stat
import threading
import time

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import onnx_fixtures as fx
from trt_scatter import onnx_models
from trt_scatter.ops import DOMAIN


def _one_line(result, code=2):
    """The command failed with ``code`` and said why in one line on stderr (no traceback); returns that line."""
    assert result.returncode == code, result.stdout + result.stderr
    assert result.stderr.count("\n") == 1 and "Traceback" not in result.stderr, result.stderr
    return result.stderr.rstrip("\n")


def _plugin_model(step=2):
    """A SliceScatter model of shape (4, 6); ``step=0``, which the builder refuses, is written in afterwards."""
    model = onnx_models.slice_scatter_model((4, 6), start=[1], stop=[6], step=[step or 1], axes=[1])
    if step == 0:
        step_name = model.graph.node[0].input[4]
        initializer = next(tensor for tensor in model.graph.initializer if tensor.name == step_name)
        initializer.CopyFrom(numpy_helper.from_array(np.array([0], np.int64), step_name))
    return model


def _saved(tmp_path, model=None, name="m.onnx"):
    path = tmp_path / name
    onnx.save(model if model is not None else _plugin_model(), path)
    return path


# ---- nothing lost -------------------------------------------------------------------------------------


@pytest.mark.parametrize("argv", [
    ["build", "{m}", "--plugins", "-o", "{m}"],
    ["build", "{m}", "--plugins", "--timing-cache", "{m}"],
    ["check", "{m}", "--save-engine", "{m}"],
    ["check", "{m}", "--save-outputs", "{m}"],
    ["check", "{m}", "--save-inputs", "{m}"],
    ["check", "{m}", "--save-inputs", "{other}", "--save-outputs", "{other}"],
    ["lower", "{m}", "{m}"],
    ["rewrite", "{m}", "{link}"],
], ids=["build -o", "build --timing-cache", "check --save-engine", "check --save-outputs", "check --save-inputs", "two outputs in one", "lower", "rewrite onto a link to it"])
def test_an_output_that_is_an_input_is_refused_and_the_input_kept(tmp_path, argv):
    model = _saved(tmp_path)
    (tmp_path / "link.onnx").symlink_to(model)
    before = model.read_bytes()
    result = fx.run_tool("trt-scatter", [a.format(m=model, other=tmp_path / "o.json", link=tmp_path / "link.onnx") for a in argv])
    line = _one_line(result)
    assert "this command reads: write it elsewhere" in line or "name one file" in line, line
    assert model.read_bytes() == before and not (tmp_path / "o.json").exists()


def _with_file_size_limit(limit, function):
    """``function()`` in a child whose files may not grow past ``limit`` bytes (a full disk, as a write sees it)."""

    def limited():
        signal.signal(signal.SIGXFSZ, signal.SIG_IGN)  # a write past the limit then fails (EFBIG) instead of killing
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))
        return function()

    return limited


@pytest.mark.parametrize("command", ["lower", "build"])
def test_a_write_that_fails_midway_leaves_the_old_output_whole(tmp_path, command):
    from trt_scatter.cli import main

    model = _saved(tmp_path, onnx_models.slice_scatter_model((64, 64), start=[0], stop=[64], step=[1], axes=[1]))
    output = tmp_path / "out.bin"
    output.write_bytes(b"the good old output " * 8)
    argv = ["lower", str(model), str(output)] if command == "lower" else ["build", str(model), "--plugins", "-o", str(output)]
    result = fx.run_forked(_with_file_size_limit(2048, lambda: main(argv)), ["trt-scatter", *argv])
    assert "cannot write" in _one_line(result)
    assert output.read_bytes() == b"the good old output " * 8
    assert [p.name for p in tmp_path.iterdir() if p.name.startswith(".")] == []  # no temporary file left behind


# ---- nothing let in -----------------------------------------------------------------------------------


def _external(tmp_path, location_of):
    """A ScatterUpdate model whose indices live in external data, relocated by ``location_of(folder, data)``."""
    folder = tmp_path / "model"
    folder.mkdir()
    model = onnx_models.scatter_update_model((8, 3), (2,), 0)
    indices = numpy_helper.from_array(np.array([1, 5], np.int64), "indices")
    model.graph.input.remove(next(value for value in model.graph.input if value.name == "indices"))
    model.graph.initializer.append(indices)
    path = folder / "m.onnx"
    onnx.save(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location="d.bin", size_threshold=0)
    location = location_of(folder, folder / "d.bin")
    saved = onnx.load(path, load_external_data=False)
    for tensor in saved.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = location
    onnx.save(saved, path)
    return path


def _outside(folder, data):
    outside = folder.parent / "secret.bin"
    data.rename(outside)
    return str(outside)


def _link_out(folder, data):
    outside = folder.parent / "secret.bin"
    data.rename(outside)
    (folder / "d.bin").symlink_to(outside)
    return "d.bin"


@pytest.mark.parametrize("location_of, rule", [
    (lambda folder, data: "../" + _outside(folder, data).rsplit("/", 1)[1], "an external data location must be a file in the model's folder (relative, no '..')"),
    (_outside, "an external data location must be a file in the model's folder (relative, no '..')"),
    (lambda folder, data: "/etc/passwd", "an external data location must be a file in the model's folder (relative, no '..')"),
    (_link_out, "which a link takes out of the model's folder"),
], ids=["dotdot", "absolute", "etc-passwd", "link-out"])
def test_external_data_outside_the_models_folder_is_refused_before_tensorrt(tmp_path, location_of, rule):
    path = _external(tmp_path, location_of)
    line = _one_line(fx.run_tool("trt-scatter", ["build", path, "--plugins", "-o", tmp_path / "e.engine"]))
    assert rule in line and "keeps tensor '" in line, line
    assert not (tmp_path / "e.engine").exists()
    run = fx.run_tool("polygraphy", ["run", path, "--trt", "--trt-scatter-plugins"])
    assert run.returncode == 1 and rule in run.stdout + run.stderr and "Traceback" not in run.stdout + run.stderr


def test_index_constants_behind_a_link_inside_the_folder_are_read_and_checked(tmp_path):
    def link_in(folder, data):
        data.rename(folder / "real.bin")
        (folder / "d.bin").symlink_to(folder / "real.bin")
        return "d.bin"

    path = _external(tmp_path, link_in)
    raw = np.fromfile(path.parent / "real.bin", np.int64)
    raw[raw == 5] = 99  # an index out of range, only in the linked file
    raw.tofile(path.parent / "real.bin")
    line = _one_line(fx.run_tool("trt-scatter", ["build", path, "--plugins", "-o", tmp_path / "e.engine"]))
    assert line.endswith("scatter_update: 'indices' values must be in [0, 7] for a dimension of size 8 (got 99)"), line


@pytest.mark.parametrize("name", ["evil\x1b[31mred", "evil\nsecond line"])
def test_control_characters_in_names_are_shown_escaped_in_one_line(tmp_path, name):
    model = _plugin_model(step=0)
    model.graph.node[0].name = name
    line = _one_line(fx.run_tool("trt-scatter", ["build", _saved(tmp_path, model), "--plugins"]))
    assert "\x1b" not in line and "'must not contain 0" not in line and "'step' must not contain 0" in line
    assert repr(name)[1:-1].replace("\\\\", "\\") in line or name.encode("unicode_escape").decode() in line


# ---- no silent engine ----------------------------------------------------------------------------------


def _nested_if(levels, body_node, initializers):
    """``body_node`` inside ``levels`` nested If branches, its constants inside the innermost."""
    inner = helper.make_graph([body_node], "inner", [], [fx.info("written", [4])], initializer=initializers)
    for level in range(levels):
        other = helper.make_graph([helper.make_node("Identity", ["data"], [f"else_{level}"])], f"else_{level}", [], [fx.info(f"else_{level}", [4])])
        node = helper.make_node("If", ["flag"], [f"level_{level}"], name=f"if_{level}", then_branch=inner, else_branch=other)
        inner = helper.make_graph([node], f"branch_{level}", [], [fx.info(f"level_{level}", [4])])
    graph = helper.make_graph(list(inner.node), "g", [fx.info("flag", [], TensorProto.BOOL), fx.info("data", [4]), fx.info("updates", [2])],
                              [fx.info(f"level_{levels - 1}", [4])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])


@pytest.mark.parametrize("levels", [1, 20])
def test_a_step_of_0_in_an_if_branch_is_refused_however_deep(tmp_path, levels):
    node = helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step"], ["written"], domain=DOMAIN, name="inner")
    constants = [numpy_helper.from_array(np.array([v]), n) for n, v in (("start", 0), ("stop", 4), ("step", 0))]
    line = _one_line(fx.run_tool("trt-scatter", ["build", _saved(tmp_path, _nested_if(levels, node, constants)), "--plugins"]))
    deep = f", itself {levels - 1} subgraph(s) deep" if levels > 1 else ""  # the node that holds it, and how deep that lies
    assert line.endswith(f"SliceScatter node 'inner': slice_scatter: 'step' must not contain 0 (got [0]) (in the then_branch of If node 'if_0'{deep})"), line


def test_an_index_out_of_range_in_a_loop_body_is_refused(tmp_path):
    update = helper.make_node("ScatterUpdate", ["carried", "indices", "updates", "axis"], ["carried_out"], domain=DOMAIN, name="in_loop")
    body = helper.make_graph([update, helper.make_node("Identity", ["cond"], ["cond_out"])], "body",
                             [fx.info("i", [], TensorProto.INT64), fx.info("cond", [], TensorProto.BOOL), fx.info("carried", [8, 3])],
                             [fx.info("cond_out", [], TensorProto.BOOL), fx.info("carried_out", [8, 3])],
                             [numpy_helper.from_array(np.array([99], np.int64), "indices"), numpy_helper.from_array(np.array([0], np.int64), "axis")])
    loop = helper.make_node("Loop", ["trip", "keep", "data"], ["output"], body=body, name="loop")
    graph = helper.make_graph([loop], "g", [fx.info("data", [8, 3]), fx.info("updates", [1, 3])], [fx.info("output", [8, 3])],
                              [numpy_helper.from_array(np.array(2, np.int64), "trip"), numpy_helper.from_array(np.array(True), "keep")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    line = _one_line(fx.run_tool("trt-scatter", ["build", _saved(tmp_path, model), "--plugins"]))
    assert line.endswith("ScatterUpdate node 'in_loop': scatter_update: 'indices' values must be in [0, 7] for a dimension of size 8 (got 99) "
                         "(in the body of Loop node 'loop')"), line


def test_an_input_of_2_to_the_40_elements_is_refused(tmp_path):
    model = onnx_models.slice_scatter_model((2**40, 2), start=[0], stop=[1], step=[1], axes=[1])
    for command in (["build", "{m}", "--plugins"], ["check", "{m}"]):
        line = _one_line(fx.run_tool("trt-scatter", [a.format(m=_saved(tmp_path, model)) for a in command]))
        assert "graph input 'data' has shape [1099511627776, 2]: TensorRT takes at most 2147483647 elements per tensor" in line, line


def test_a_float64_model_builds_with_a_warning(tmp_path):
    model = onnx_models.scatter_nd_model((4, 3), (2, 1), dtype=np.float64)
    result = fx.run_tool("trt-scatter", ["build", _saved(tmp_path, model), "-o", tmp_path / "e.engine"])
    assert result.returncode == 0, result.stderr
    assert "trt-scatter build: warning: graph input 'data' is float64, which TensorRT has not: the engine takes and gives float32 there" in result.stderr


def test_loaded_inputs_of_another_type_are_refused_not_truncated(tmp_path):
    from polygraphy.json import save_json

    path = _saved(tmp_path, onnx_models.scatter_elements_model((4, 3), (3, 3)))
    save_json([{"data": np.zeros((4, 3), np.float32), "indices": np.array([[0.5, 1.5, 2.5]] * 3), "updates": np.ones((3, 3), np.float32)}], tmp_path / "in.json")
    line = _one_line(fx.run_tool("trt-scatter", ["check", path, "--load-inputs", tmp_path / "in.json"]))
    assert line.endswith("iteration 0, input 'indices' is float64, the model's is int64: save the inputs in the model's types"), line


def test_repeated_targets_are_warned_of_by_name(tmp_path):
    from polygraphy.json import save_json

    model = onnx_models.scatter_nd_model((4, 3), (2, 1))
    constant = onnx.ModelProto()
    constant.CopyFrom(model)
    constant.graph.input.remove(next(value for value in constant.graph.input if value.name == "indices"))
    constant.graph.initializer.append(numpy_helper.from_array(np.array([[1], [-3]], np.int64), "indices"))
    built = fx.run_tool("trt-scatter", ["build", _saved(tmp_path, constant, "constant.onnx"), "-o", tmp_path / "e.engine"])
    assert built.returncode == 0 and "warning: ScatterND node" in built.stderr and "rows 0 and 1 of 'indices' both write (1,): the result is undefined" in built.stderr
    checked_constant = fx.run_tool("trt-scatter", ["check", tmp_path / "constant.onnx", "--allow-engine-not-run"])
    assert checked_constant.stderr.count("warning:") == 1, checked_constant.stderr  # validation's; the run's own would repeat it
    fed = _saved(tmp_path, model, "fed.onnx")
    save_json([{"data": np.zeros((4, 3), np.float32), "indices": np.array([[2], [2]]), "updates": np.arange(6, dtype=np.float32).reshape(2, 3)}], tmp_path / "in.json")
    checked = fx.run_tool("trt-scatter", ["check", fed, "--load-inputs", tmp_path / "in.json", "--allow-engine-not-run"])
    assert "(in the inputs of a run): the result is undefined" in checked.stderr and "rows 0 and 1 of 'indices' both write (2,)" in checked.stderr


@pytest.mark.parametrize("rows", [1, 2])
def test_scatter_nd_whose_indices_have_last_dimension_0_writes_all_of_data(tmp_path, capsys, rows):
    """Valid ONNX (each index row addresses all of data): one row is checked and lowered, two are warned of by name."""
    from trt_scatter.cli import main
    from trt_scatter.reference import Reference

    graph = helper.make_graph([helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])], "g",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 3]),
                               helper.make_tensor_value_info("updates", TensorProto.FLOAT, [rows, 4, 3])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [4, 3])],
                              [numpy_helper.from_array(np.zeros((rows, 0), np.int64), "indices")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    assert main(["lower", str(_saved(tmp_path, model)), str(tmp_path / "lowered.onnx")]) == 0
    warned = "rows 0 and 1 of 'indices' both write all of data: the result is undefined" in capsys.readouterr().err
    assert warned == (rows == 2)
    updates = np.arange(12, dtype=np.float32).reshape(1, 4, 3)
    if rows == 1:
        np.testing.assert_array_equal(Reference(model).run({"data": np.zeros((4, 3), np.float32), "updates": updates})["output"], updates[0])


def _model_with_a_local_function(step):
    """data (4, 6) -> local.WriteCols(data, updates): a SliceScatter of every ``step``-th column, inside the function."""
    def constant(name, values):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.array(values, np.int64), name))

    body = [constant("start", [0]), constant("stop", [6]), constant("step", [step]), constant("axes", [1]),
            helper.make_node("SliceScatter", ["d", "u", "start", "stop", "step", "axes"], ["o"], domain=DOMAIN)]
    function = helper.make_function("local", "WriteCols", ["d", "u"], ["o"], body, [helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)])
    graph = helper.make_graph([helper.make_node("WriteCols", ["data", "updates"], ["output"], domain="local")], "g",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 6]),
                               helper.make_tensor_value_info("updates", TensorProto.FLOAT, [4, 3])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [4, 6])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1), helper.make_opsetid("local", 1)],
                             functions=[function])


def test_a_step_in_external_data_reaches_the_check_of_a_node_inside_a_local_function(tmp_path):
    """The model file's integer tensors kept in external data are read into the model every step works on (the one
    with its functions inlined): a step of 0 there is refused."""
    from trt_scatter.model import Model, ModelError
    from trt_scatter.passes.validate import validate

    model = _model_with_a_local_function(2)
    function = model.functions[0]
    function.input.append("step_given")
    function.node[2].CopyFrom(helper.make_node("Identity", ["step_given"], ["step"]))
    model.graph.node[0].input.append("step_given")
    model.graph.initializer.append(numpy_helper.from_array(np.zeros(1, np.int64), "step_given"))
    onnx.save(model, tmp_path / "m.onnx", save_as_external_data=True, location="m.onnx.data", size_threshold=0)
    with pytest.raises(ModelError, match=r"slice_scatter: 'step' must not contain 0 \(got \[0\]\)$"):
        validate(Model.read(tmp_path / "m.onnx"))


def test_scatter_nodes_inside_a_local_function_are_validated_and_lowered():
    """Validation, the lowering and the plugins walk the main graph: the model is held with such functions inlined."""
    import onnxruntime

    from trt_scatter import oracle
    from trt_scatter.model import ModelError
    from trt_scatter.passes.lower import lower
    from trt_scatter.passes.validate import validate

    broken = _model_with_a_local_function(0)
    with pytest.raises(ModelError, match=r"^SliceScatter node #4 \(output 'output'\): slice_scatter: 'step' must not contain 0 \(got \[0\]\)$"):
        validate(broken)
    assert len(broken.functions) == 1  # the caller's model is not changed
    lowered = lower(_model_with_a_local_function(2))
    assert not [node for node in lowered.graph.node if node.domain == DOMAIN] and not lowered.functions
    data, updates = np.arange(24, dtype=np.float32).reshape(4, 6), -np.ones((4, 3), np.float32)
    out = onnxruntime.InferenceSession(lowered.SerializeToString()).run(None, {"data": data, "updates": updates})[0]
    np.testing.assert_array_equal(out, oracle.slice_scatter(data, updates, [0], [6], [2], [1]))


# ---- no crash, no hang ---------------------------------------------------------------------------------


def test_tensorrts_own_crash_is_one_line(tmp_path):
    body = helper.make_graph([helper.make_node("Identity", ["s_in"], ["s_out"])], "body", [fx.info("s_in", [2])], [fx.info("s_out", [2])])
    scan = helper.make_node("Scan", ["x"], ["y"], num_scan_inputs=0, body=body, name="scan")
    model = helper.make_model(helper.make_graph([scan], "g", [fx.info("x", [2])], [fx.info("y", [2])]), opset_imports=[helper.make_opsetid("", 17)])
    result = fx.run_tool("trt-scatter", ["build", _saved(tmp_path, model), "-o", tmp_path / "e.engine"])
    line = _one_line(result, code=1)  # TensorRT-RTX segfaults in its parser; another TensorRT may refuse the model
    assert line.startswith("trt-scatter build: error: TensorRT"), line


def test_endless_and_silent_sources_are_one_line_and_do_not_hang(tmp_path, monkeypatch):
    from trt_scatter.model import files

    assert _one_line(fx.run_tool("trt-scatter", ["lower", "/dev/zero", tmp_path / "o.onnx"])).endswith("(it starts with a zero byte, which no protobuf field does)")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    monkeypatch.setattr(files, "PIPE_WAIT_S", 1)  # a FIFO waits for its writer, as cat would, but not forever
    start = time.monotonic()
    line = _one_line(fx.run_tool("trt-scatter", ["lower", fifo, tmp_path / "o.onnx"]))
    assert time.monotonic() - start < 20 and line.endswith("sent nothing for 1 s: no ONNX model came"), line
    assert stat.S_ISFIFO(os.stat(fifo).st_mode)


def test_a_model_on_a_pipe_is_read(tmp_path):
    model = _saved(tmp_path)
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    writer = threading.Thread(target=lambda: fifo.write_bytes(model.read_bytes()))
    writer.start()
    result = fx.run_tool("trt-scatter", ["lower", fifo, tmp_path / "lowered.onnx"])
    writer.join()
    assert result.returncode == 0, result.stderr
    onnx.checker.check_model(onnx.load(tmp_path / "lowered.onnx"), full_check=True)


def test_a_small_model_claiming_2_to_the_40_values_is_refused_before_any_is_made(tmp_path):
    model = _plugin_model()
    huge = TensorProto(name="weights", data_type=TensorProto.FLOAT, dims=[2**20, 2**20], raw_data=b"\0" * 16)
    model.graph.initializer.append(huge)
    path = _saved(tmp_path, model)
    assert path.stat().st_size < 1000
    line = _one_line(fx.run_tool("trt-scatter", ["check", path]))
    assert "tensor 'weights' claims shape [1048576, 1048576] (1099511627776 elements): TensorRT takes at most 2147483647 elements per tensor" in line


@pytest.mark.parametrize("argv, rule", [
    (["--input-shapes", "data:[10000000000,6]"], "has more than 2147483647 elements, TensorRT's most for one tensor"),
    (["--iterations", "1000000000"], "is more than 10000 iterations, the most a check runs"),
    (["--input-shapes", "data:[100000,4000]", "indices:[100000,3]", "updates:[100000,3]"], "more than the 1073741824 the loader generates"),
], ids=["huge shape", "huge iterations", "too many bytes"])
def test_sizes_are_bounded_by_a_named_limit_before_anything_is_allocated(tmp_path, argv, rule):
    path = _saved(tmp_path, onnx_models.scatter_elements_model(["N", "M"], ["N", 3], axis=1))
    assert rule in _one_line(fx.run_tool("trt-scatter", ["check", path, *argv]))


def test_huge_shapes_under_polygraphy_are_its_one_line(tmp_path):
    path = _saved(tmp_path, onnx_models.scatter_elements_model(["N", "M"], ["N", 3], axis=1))
    run = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--trt-scatter-inputs", "--input-shapes", "data:[100000,100000]", "indices:[100000,3]", "updates:[100000,3]"])
    output = run.stdout + run.stderr
    assert run.returncode == 1 and "Traceback" not in output and "[!] --trt-scatter-inputs: input 'data' of shape (100000, 100000) has more than 2147483647 elements" in output


def test_a_timing_cache_that_is_a_folder_is_one_line(tmp_path):
    line = _one_line(fx.run_tool("trt-scatter", ["build", _saved(tmp_path), "--plugins", "--timing-cache", tmp_path]))
    assert line.endswith(f"--timing-cache {str(tmp_path)!r} is a directory: give a file path"), line


@pytest.mark.parametrize("break_graph, rule", [
    (lambda g: g.node.extend([helper.make_node("Relu", ["late"], ["early"]), helper.make_node("Relu", ["early"], ["late"])]), "is read before it is written, by a later node"),
    (lambda g: g.node.append(helper.make_node("Relu", ["data"], ["output"])), "is written by"),
    (lambda g: g.node.append(helper.make_node("Relu", ["nowhere"], ["dangling"])), "is not a graph input, an initializer or an earlier node's output"),
    (lambda g: g.output.append(helper.make_tensor_value_info("ghost", TensorProto.FLOAT, [2])), "graph output 'ghost' of graph"),
], ids=["cycle", "two writers", "dangling", "unwritten output"])
def test_a_broken_graph_is_the_models_mistake_not_tensorrts(tmp_path, break_graph, rule):
    model = _plugin_model()
    break_graph(model.graph)
    line = _one_line(fx.run_tool("trt-scatter", ["build", _saved(tmp_path, model), "--plugins"]))
    assert rule in line, line


# ---- check and the reference ---------------------------------------------------------------------------


def test_a_plugin_node_in_onnxs_own_domain_runs_in_the_reference_and_is_validated(tmp_path):
    model = _plugin_model()
    model.graph.node[0].domain = ""
    del model.opset_import[1:]
    path = _saved(tmp_path, model)
    run = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", "--trt-scatter-inputs"])
    assert run.returncode == 0 and "PASSED" in run.stdout + run.stderr, run.stdout + run.stderr
    bad = _plugin_model(step=0)
    bad.graph.node[0].domain = ""
    del bad.opset_import[1:]
    assert "'step' must not contain 0" in _one_line(fx.run_tool("trt-scatter", ["build", _saved(tmp_path, bad, "bad.onnx"), "--plugins"]))


def test_a_model_onnx_refuses_is_the_models_mistake_in_lower(tmp_path):
    model = _plugin_model()
    model.graph.node.append(helper.make_node("Gemm", ["vector", "w"], ["y"]))
    model.graph.input.append(fx.info("vector", [3]))
    model.graph.initializer.append(numpy_helper.from_array(np.ones((3, 2), np.float32), "w"))
    model.graph.output.append(fx.info("y", [3, 2]))
    line = _one_line(fx.run_tool("trt-scatter", ["lower", _saved(tmp_path, model), tmp_path / "o.onnx"]))
    assert "the model does not pass ONNX's checker" in line and "internal error" not in line


def test_a_data_shape_only_a_run_tells_still_gets_valid_inputs(tmp_path):
    nodes = [helper.make_node("Shape", ["y"], ["ys"]), helper.make_node("Gather", ["ys", "zero"], ["k"], axis=0),
             helper.make_node("TopK", ["x", "k"], ["data", "where"], axis=0, name="topk"),
             helper.make_node("ScatterUpdate", ["data", "indices", "updates", "axis"], ["output"], domain=DOMAIN, name="update")]
    graph = helper.make_graph(nodes, "g", [fx.info("x", [8, 3]), fx.info("y", ["M"]), fx.info("indices", [2], np.int64), fx.info("updates", [2, 3])],
                              [fx.info("output", None)], [numpy_helper.from_array(np.array([0], np.int64), n) for n in ("zero", "axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    result = fx.run_tool("trt-scatter", ["check", _saved(tmp_path, model), "--allow-engine-not-run"])
    assert result.returncode == 0 and "PASS output" in result.stdout, result.stdout + result.stderr


# ---- the Python API ------------------------------------------------------------------------------------


@pytest.mark.parametrize("given", [None, 3, b"\x08\x01", onnx.GraphProto()], ids=["None", "int", "bytes", "GraphProto"])
def test_the_python_api_names_a_wrong_argument(given):
    from trt_scatter.inputs import ScatterDataLoader
    from trt_scatter.passes.lower import LowerTrtScatter, lower
    from trt_scatter.passes.rewrite import rewrite
    from trt_scatter.passes.validate import ValidateTrtScatter, validate
    from trt_scatter.reference import Reference

    for call in (validate, lower, rewrite, Reference, lambda m: ScatterDataLoader(m)[0], lambda m: ValidateTrtScatter(m)(), lambda m: LowerTrtScatter(m)()):
        with pytest.raises(TypeError, match=rf"^model must be a path, an onnx.ModelProto or a trt_scatter.model.Model \(got {type(given).__name__}\)$"):
            call(given)


def test_the_reference_refuses_feeds_of_another_shape_or_type():
    from trt_scatter.reference import Reference

    reference = Reference(onnx_models.scatter_nd_model((4, 3), (2, 1)))
    feeds = {"data": np.zeros((4, 3), np.float32), "indices": np.array([[0], [1]]), "updates": np.ones((2, 3), np.float32)}
    assert reference.run(feeds)["output"].dtype == np.float32
    with pytest.raises(ValueError, match=r"^Reference.run: input 'data' is float64, the model's is float32$"):
        reference.run({**feeds, "data": np.zeros((4, 3))})
    with pytest.raises(ValueError, match=r"^Reference.run: input 'updates' has shape \(3, 3\), which does not fit the model's \(2, 3\)$"):
        reference.run({**feeds, "updates": np.ones((3, 3), np.float32)})
    named = Reference(onnx_models.scatter_nd_model(("N", 3), ("K", 1)))  # a dynamic dimension shown by its name
    with pytest.raises(ValueError, match=r"^Reference.run: input 'data' has shape \(4, 2\), which does not fit the model's \(N, 3\)$"):
        named.run({**feeds, "data": np.zeros((4, 2), np.float32)})


def test_a_shape_given_as_a_string_is_refused_by_name():
    with pytest.raises(TypeError, match=r"^slice_scatter: data_shape must be a sequence of dimensions, e.g. \(4, 6\) or \('batch', 6\) \(got '4,6'\)$"):
        onnx_models.slice_scatter_model("4,6", start=[0], stop=[1], step=[1])


def test_a_model_on_standard_input_is_read(tmp_path):
    import subprocess
    import sys

    model = _saved(tmp_path)
    with open(model, "rb") as stdin:  # `trt-scatter lower /dev/stdin OUT < m.onnx`, and through a pipe
        as_file = subprocess.run([sys.executable, "-m", "trt_scatter.cli", "lower", "/dev/stdin", tmp_path / "a.onnx"], stdin=stdin, capture_output=True, text=True)
    piped = subprocess.run([sys.executable, "-m", "trt_scatter.cli", "lower", "/dev/stdin", tmp_path / "b.onnx"], input=model.read_bytes(), capture_output=True)
    assert as_file.returncode == 0 and piped.returncode == 0, as_file.stderr + piped.stderr.decode()
    assert (tmp_path / "a.onnx").read_bytes() == (tmp_path / "b.onnx").read_bytes()
