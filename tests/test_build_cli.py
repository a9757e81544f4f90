"""``trt-scatter build``: engines from ONNX files and example networks, profiles, and one-line errors."""

import logging
import re

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper

import onnx_fixtures as fx
import plugin_models
from trt_scatter import backend, engine, onnx_models, ops
from trt_scatter.cli import main
from trt_scatter.cli.build import parse_profile


def _scatter_elements_onnx(path, batch="n", index_type=TensorProto.INT32):
    shape = [batch, 3, 4, 5]
    inputs = [
        helper.make_tensor_value_info("data", TensorProto.FLOAT, shape),
        helper.make_tensor_value_info("indices", index_type, shape),
        helper.make_tensor_value_info("updates", TensorProto.FLOAT, shape),
    ]
    node = helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"], axis=2)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)
    return str(path)


def _profile_args(low, opt, high):
    args = []
    for flag, batch in (("--min", low), ("--opt", opt), ("--max", high)):
        args += [flag] + [f"{name}:[{batch},3,4,5]" for name in ("data", "indices", "updates")]
    return args


def test_builds_dynamic_onnx_with_profile_and_prints_summary(tmp_path, capsys):
    model = _scatter_elements_onnx(tmp_path / "se.onnx")
    engine = tmp_path / "out" / "se.engine"
    assert main(["build", model, "-o", str(engine), "--progress"] + _profile_args(1, 2, 4)) == 0
    out = capsys.readouterr().out
    assert engine.stat().st_size > 0
    assert "network  se: 1 layers" in out
    assert "input    indices: int32 [?, 3, 4, 5]" in out
    assert "output   output: float32 [?, 3, 4, 5]" in out
    assert "Building engine" in out  # the progress monitor printed TensorRT's phases


def test_builds_static_onnx_into_out_dir_with_timing_cache(tmp_path, capsys):
    model = _scatter_elements_onnx(tmp_path / "static.onnx", batch=2)
    cache = tmp_path / "timing.cache"
    assert main(["build", model, "--out-dir", str(tmp_path / "e"), "--timing-cache", str(cache)]) == 0
    out, err = capsys.readouterr()
    assert "Building engine with configuration" not in out  # quiet by default
    assert (tmp_path / "e" / "static.engine").stat().st_size > 0
    assert cache.stat().st_size > 0  # saved after the build (TensorRT-RTX fills it with nothing useful)
    assert not (tmp_path / "timing.cache.lock").exists()  # polygraphy's lock while it read it
    from conftest import HAS_GPU

    # where no CUDA driver runs, the next build will not read it: said now, not only then
    assert err == ("" if HAS_GPU else f"trt-scatter build: warning: --timing-cache {str(cache)!r} holds no timings: TensorRT times "
                   "tactics and reads a timing cache only where a CUDA driver runs, and none runs here\n")


@pytest.mark.parametrize("content", [b"my notes\n", b"ftrt" + bytes(range(256)) * 40], ids=["a text file", "some binary file"])
def test_a_timing_cache_tensorrt_cannot_read_is_left_as_it_was(tmp_path, capsys, content):
    """TensorRT takes any file for an empty timing cache (with a warning on its log): the build then wrote its own
    cache over the user's file. Here (no GPU) TensorRT-RTX reads no timing cache at all, so even its own is kept."""
    cache = tmp_path / "notes.txt"
    cache.write_bytes(content)
    assert main(["build", "slice_scatter", "-o", str(tmp_path / "e.engine"), "--timing-cache", str(cache)]) == 0
    assert cache.read_bytes() == content
    assert sorted(path.name for path in tmp_path.iterdir()) == ["e.engine", "notes.txt"]  # no lock file left beside it
    out, err = capsys.readouterr()
    from conftest import HAS_GPU

    why = ("is not a timing cache TensorRT can read here:" if HAS_GPU else  # where no CUDA driver runs, TensorRT reads no cache
           "was not read: TensorRT reads a timing cache only where a CUDA driver runs, and none runs here;")
    assert err == f"trt-scatter build: warning: --timing-cache {str(cache)!r} {why} the engine was built without it, and the file is left as it was\n"
    assert "timing cache" not in out and "cudaError" not in out  # TensorRT's own lines about it are not replayed


def test_build_engine_refuses_a_loader_that_gives_no_builder_and_network():
    """A loader that returns nothing, the pair the other way round, or the network alone: one line naming what it
    gave (a TypeError inside build_engine, an AttributeError of the Builder, polygraphy's own words)."""
    from trt_scatter.engine import build_engine, network_from_example

    builder, network = network_from_example("slice_scatter", {})()
    for load, got in ((lambda: None, "NoneType"), (lambda: (network, builder), "(INetworkDefinition, Builder)"), (lambda: network, "INetworkDefinition")):
        with pytest.raises(TypeError) as raised:
            build_engine(load)
        assert str(raised.value) == ("build_engine: the loader must return (builder, network), or (builder, network, parser) as "
                                     f"polygraphy's NetworkFromOnnxPath does (got {got})")
    network.unmark_output(network.get_output(0))  # a network without outputs: TensorRT's 'Invalid Engine' and its log
    with pytest.raises(ValueError, match=r"^build_engine: the network marks no output \(network\.mark_output\(tensor\)\): TensorRT builds no engine without one$"):
        build_engine(lambda: (builder, network))


@pytest.mark.parametrize("profile, message", [
    ({"datta": ((1, 8), (1, 8), (1, 8))}, r"^shape profile names no input of the network: datta$"),
    ({"data": ((2, 5, 1), (2, 5, 1), (2, 5, 1))}, r"^input .data.: rank 2 in the model, the profile.s shapes have rank 3$"),
])
def test_a_dynamic_example_leaves_a_profile_its_network_refuses_to_the_network(profile, message):
    """The example's rules judge only profiles that fit its network's inputs: a misspelt name or another rank is
    refused once, by the network, not by the example's derived shapes."""
    from trt_scatter.engine import build_engine, network_from_example
    from trt_scatter.networks.examples import check_profile

    assert check_profile("slice_scatter", profile) is None
    with pytest.raises(ValueError, match=message):
        build_engine(network_from_example("slice_scatter", profile, dynamic=True), profile)


def test_build_engines_timing_cache_leaves_a_file_tensorrt_cannot_read_as_it_was(tmp_path, caplog):
    """build_engine(..., timing_cache=path) saved TensorRT's new cache over whatever the path held: a model given there
    by mistake was left a corrupt file of 172 bytes (the command line kept it; the Python API did not)."""
    from conftest import HAS_GPU
    from trt_scatter.engine import build_engine, network_from_example

    model = tmp_path / "model.onnx"
    model.write_bytes(b"\x08\x09model bytes" * 50)
    with caplog.at_level(logging.WARNING, logger="trt_scatter"):
        plan, _ = build_engine(network_from_example("slice_scatter", {}), timing_cache=model)
    assert plan and model.read_bytes() == b"\x08\x09model bytes" * 50
    assert [record.getMessage() for record in caplog.records if "timing_cache" in record.getMessage()] == [
        f"timing_cache {str(model)!r} was not read ({'it is not a timing cache this TensorRT can read' if HAS_GPU else 'TensorRT reads a timing cache only where a CUDA driver runs'}): "
        "the engine was built without it, and the file is left as it was"]
    fresh = tmp_path / "new.cache"
    build_engine(network_from_example("slice_scatter", {}), timing_cache=fresh)  # none yet: TensorRT's is saved there
    assert fresh.exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["build"], "give an example network name or an .onnx file, or --all"),
        (["build", ""], "the target is an empty word: give an example network name or an .onnx file, or --all"),
        (["build", "no_such_network"], "unknown example network 'no_such_network'"),
        (["build", "missing.onnx"], "cannot read ONNX model 'missing.onnx': No such file or directory"),
        (["build", "--all", "scatter_nd"], "--all builds every example network"),
        (["build", "x.onnx", "--min", "data:1x3"], "--min 'data:1x3' is not NAME:[D,...]"),
        # the model after a shape flag is one of its words: said so, not "give an example network name or an .onnx file"
        (["build", "--max", "data:[8,5]", "x.onnx"], "--max 'x.onnx' is not NAME:[D,...] (e.g. data:[1,3,4,5]) (is it the model? --max "
                                                     "takes every word after it: give the model first)"),
        (["build", "slice_scatter", "--dynamic", "--min", "data:[1,3]"], "input 'data' has no --opt/--max shape"),
        (["build", "scatter_nd", "--dtype", "float17"], "--dtype 'float17' is not a NumPy element type name"),
        (["build", "scatter_nd", "--dtype", "float64"], "example 'scatter_nd': dtype float64: TensorRT has no element type for float64"),
        # the build runs in a child process, which sends its error back pickled
        (["build", "scatter_update", "--dtype", "uint8"], "scatter_update: 'data' must not be uint8 for TensorRT's own layers"),
        (["build", "slice_scatter", "--aot"], "--aot applies to ONNX models (their trt_scatter nodes); give an .onnx file"),
        (["build", "x.onnx", "--aot", "--plugins"], "--aot builds the trt_scatter nodes with the AOT plugins and --plugins with the Python ones"),
    ],
)
def test_bad_arguments_fail_with_one_line(argv, message, capsys):
    assert main(argv) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith("trt-scatter build: error: ")
    assert message in err


@pytest.mark.skipif(not backend.always_strongly_typed(), reason="full TensorRT 10.x has BuilderFlag.FP16/BF16")
@pytest.mark.parametrize("flag, dtype", [("--fp16", "float16"), ("--bf16", "bfloat16")])
def test_precision_flags_without_builder_flags_point_to_typed_inputs(tmp_path, capsys, flag, dtype):
    """TensorRT 11.x and TensorRT-RTX have no FP16/BF16 builder flags: their networks are strongly typed."""
    model = _scatter_elements_onnx(tmp_path / "static.onnx", batch=2)
    assert main(["build", model, flag]) == 2
    err = capsys.readouterr().err
    assert f"has no BuilderFlag.{flag[2:].upper()}: its networks are strongly typed, so give the tensors that type instead (an example network: --dtype {dtype}; an ONNX model: its inputs and weights in that type)" in err


def test_dynamic_onnx_without_profile_names_the_inputs(tmp_path, capsys):
    model = _scatter_elements_onnx(tmp_path / "se.onnx")
    assert main(["build", model]) == 2
    assert capsys.readouterr().err == ("trt-scatter build: error: dynamic input(s) data, indices, updates need --min/--opt/--max shapes (from "
                                       "Python: (min, opt, max) for each in profile_shapes)\n")  # an example network's hint left out


def test_profile_for_unknown_input_is_rejected(tmp_path, capsys):
    model = _scatter_elements_onnx(tmp_path / "se.onnx", batch=2)
    assert main(["build", model, "--min", "x:[1]", "--opt", "x:[1]", "--max", "x:[1]"]) == 2
    assert "the shape profile names 'x', which is not an input of the model (its inputs: data, indices, updates)" in capsys.readouterr().err


def test_parse_profile_orders_bounds():
    assert parse_profile(["a:[1,2]"], ["a:[2,2]"], ["a:[4, 2]"]) == {"a": ((1, 2), (2, 2), (4, 2))}
    with pytest.raises(ValueError, match="min <= opt <= max"):
        parse_profile(["a:[4,2]"], ["a:[2,2]"], ["a:[4,2]"])
    with pytest.raises(ValueError, match="min <= opt <= max"):
        parse_profile(["a:[1,2]"], ["a:[2,2]"], ["a:[4]"])


def test_build_all_builds_every_example_static_and_dynamic(tmp_path, capsys):
    from trt_scatter.networks.examples import EXAMPLES

    assert main(["build", "--all", "--out-dir", str(tmp_path)]) == 0
    table = capsys.readouterr().out.strip().splitlines()
    assert table[0].split() == ["network", "layers", "build", "s", "engine", "KiB", "file"]
    built = {row.split()[0] for row in table[1:]}
    assert built == {f"{name}{suffix}" for name in EXAMPLES for suffix in ("", "_dynamic")}
    assert sorted(p.stem for p in tmp_path.glob("*.engine")) == sorted(built)
    assert all(p.stat().st_size > 0 for p in tmp_path.glob("*.engine"))


@pytest.mark.parametrize("dtype, index_dtype", [("float16", "int64"), ("bfloat16", "int32"), ("int8", "int32")])
def test_example_with_dtypes_and_dynamic_profile(tmp_path, capsys, dtype, index_dtype):
    argv = ["build", "scatter_update", "--dynamic", "--dtype", dtype, "--index-dtype", index_dtype, "-o", str(tmp_path / "e.engine")]
    assert main(argv) == 0
    out = capsys.readouterr().out
    assert f"input    data: {dtype} [?, ?]" in out
    assert f"input    indices: {index_dtype} " in out
    assert (tmp_path / "e.engine").stat().st_size > 0


def test_plugin_models_build_with_plugins_in_place_too(tmp_path):
    import subprocess
    import sys

    import onnx as onnx_lib

    from trt_scatter.onnx_models import scatter_update_model, slice_scatter_model

    slice_model, update_model = tmp_path / "slice.onnx", tmp_path / "update.onnx"
    onnx_lib.save(slice_scatter_model((2, 5), [-25], [25], [2], [1], inplace=True), slice_model)
    onnx_lib.save(scatter_update_model((3, 5), (2,), 1, index_dtype="int32"), update_model)
    for model in (slice_model, update_model):
        # A subprocess each: TensorRT-RTX 1.7 can corrupt the heap of a process that goes on
        # creating Python plugins after a parsed network is gone (scripts/rtx_plugin_heap_bug.py).
        result = subprocess.run(
            [sys.executable, "-m", "trt_scatter.cli", "build", str(model), "--plugins", "--out-dir", str(tmp_path)],
            capture_output=True, text=True, timeout=300,
        )
        assert result.returncode == 0, result.stderr
        assert "output   output: float32" in result.stdout
        assert "layers" in result.stdout and (tmp_path / f"{model.stem}.engine").stat().st_size > 0


def test_plugin_model_without_plugins_names_the_flag(tmp_path, capsys):
    import onnx as onnx_lib

    from trt_scatter.onnx_models import scatter_update_model

    onnx_lib.save(scatter_update_model((3, 5), (2,), 1), tmp_path / "update.onnx")
    assert main(["build", str(tmp_path / "update.onnx")]) == 2
    assert ("has trt-scatter plugin nodes (ScatterUpdate): register the plugins (--plugins; from Python, plugins=True), or, for a runtime "
            "without them, make standard ONNX ops of them (trt-scatter lower)\n") in capsys.readouterr().err


@pytest.mark.skipif(not backend.is_rtx(), reason="with full TensorRT >= 10.9 --aot builds (tests/test_aot_tensorrt.py)")
def test_aot_on_tensorrt_rtx_says_what_it_needs_in_one_line(tmp_path, capsys):
    import onnx as onnx_lib

    from trt_scatter.onnx_models import scatter_update_model

    onnx_lib.save(scatter_update_model((3, 5), (2,), 1), tmp_path / "update.onnx")
    assert main(["build", str(tmp_path / "update.onnx"), "--aot"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith("trt-scatter build: error: the AOT plugins need full TensorRT >= 10.9 with its tensorrt.plugin package; "
                          "TensorRT-RTX ships tensorrt_rtx.plugin only as stubs")


def test_aot_names_what_the_model_cannot_be_in_that_form_before_what_tensorrt_lacks(tmp_path, capsys):
    """A float reduction has no AOT form whatever TensorRT is installed: the node and the rule come first."""
    import onnx as onnx_lib

    from trt_scatter.onnx_models import scatter_elements_reduce_model

    onnx_lib.save(scatter_elements_reduce_model((4, 3), (2, 3), reduction="mean"), tmp_path / "mean.onnx")
    assert main(["build", str(tmp_path / "mean.onnx"), "--aot", "-o", str(tmp_path / "e.engine")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("trt-scatter build: error: ScatterElementsReduce node ")
    assert "'data' must be int32 or int64 for the AOT form" in err


def test_model_tensorrt_cannot_parse_fails_with_one_line(tmp_path, capsys):
    shape = [2, 3]
    node = helper.make_node("NoSuchOp", ["data"], ["output"])
    graph = helper.make_graph(
        [node], "g", [helper.make_tensor_value_info("data", TensorProto.FLOAT, shape)], [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)]
    )
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "bad.onnx")
    assert main(["build", str(tmp_path / "bad.onnx")]) == 1
    captured = capsys.readouterr()
    err = captured.err.strip()
    assert err.count("\n") == 0 and err.startswith("trt-scatter build: error: TensorRT could not build bad: ")
    assert "NoSuchOp" in err  # TensorRT's own reason, from the log it no longer prints
    assert "[E]" not in captured.out + captured.err


def test_a_quiet_build_prints_no_tensorrt_warning_and_a_verbose_one_does(tmp_path, capsys):
    """TensorRT's parser warns on every int64 index input ("Make sure input indices has Int64 binding"): nothing a user
    acts on, so only -v shows it."""
    model = _scatter_elements_onnx(tmp_path / "int64.onnx", batch=2, index_type=TensorProto.INT64)
    assert main(["build", model, "--out-dir", str(tmp_path)]) == 0
    quiet = capsys.readouterr()
    assert "[W]" not in quiet.out + quiet.err and quiet.out.startswith("network ")
    try:
        assert main(["build", model, "-v", "--out-dir", str(tmp_path)]) == 0
    finally:
        main(["build", model, "--out-dir", str(tmp_path)])  # back to quiet for the tests after this one
        import logging

        logging.getLogger("trt_scatter").setLevel(logging.NOTSET)
    assert "Int64 binding" in capsys.readouterr().out


@pytest.mark.skipif(not backend.is_rtx(), reason="what TensorRT-RTX 1.7.1 cannot build; full TensorRT may")
def test_a_plugin_node_in_an_if_branch_that_tensorrt_rtx_cannot_build_is_named(tmp_path, capsys):
    """TensorRT-RTX fails such a build saying only that a workspace tensor has no type: the error line names the node."""
    model = fx.slice_scatter_in_if_branch()
    onnx.save(model, tmp_path / "branch.onnx")
    assert main(["build", str(tmp_path / "branch.onnx"), "--plugins", "-o", str(tmp_path / "e.engine")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.endswith(")"), err  # the cause first, TensorRT's own words after it
    assert err.startswith("trt-scatter build: error: TensorRT could not build branch: SliceScatter node 'in_branch' lies in a subgraph of "
                          "If node 'choice', where TensorRT-RTX builds no plugin (TensorRT-RTX said: "), err


@pytest.mark.skipif(not backend.is_rtx(), reason="what TensorRT-RTX 1.7.1 cannot build; full TensorRT may")
def test_another_failure_of_a_model_with_a_plugin_in_an_if_branch_keeps_tensorrts_words(tmp_path, capsys):
    """The nested plugin is named the cause only where TensorRT-RTX's words are its known ones (a workspace without a
    type): a Unique node of the main graph, which TensorRT refuses, was blamed on the plugin in the branch."""
    model = fx.slice_scatter_in_if_branch()
    model.graph.input.append(helper.make_tensor_value_info("q", TensorProto.FLOAT, [5]))
    model.graph.node.append(helper.make_node("Unique", ["q"], ["uq"], name="uniq"))
    model.graph.output.append(helper.make_tensor_value_info("uq", TensorProto.FLOAT, None))
    onnx.save(model, tmp_path / "unique.onnx")
    assert main(["build", str(tmp_path / "unique.onnx"), "--plugins", "-o", str(tmp_path / "e.engine")]) == 1
    err = capsys.readouterr().err.strip()
    assert err.startswith("trt-scatter build: error: TensorRT could not build unique: In node ") and "uniq" in err, err
    assert "lies in a subgraph" not in err, err


@pytest.mark.skipif(not backend.is_rtx(), reason="what TensorRT-RTX 1.7.1 cannot build; full TensorRT may")
def test_onnxs_own_node_that_a_plugin_serves_in_an_if_branch_is_named_too(tmp_path, capsys):
    """ONNX's TensorScatter of a 3-D cache, which --plugins hands to CacheScatter inside the branch: the build failed
    with TensorRT's words alone, as the user's node is no trt_scatter node."""
    cache = [helper.make_tensor_value_info(name, TensorProto.FLOAT, shape) for name, shape in (("cache", [2, 8, 4]), ("new", [2, 1, 4]))]
    branch = helper.make_graph([helper.make_node("TensorScatter", ["cache", "new"], ["written"], name="write", axis=1)], "then",
                               [], [helper.make_tensor_value_info("written", TensorProto.FLOAT, [2, 8, 4])])
    other = helper.make_graph([helper.make_node("Identity", ["cache"], ["kept"])], "else", [], [helper.make_tensor_value_info("kept", TensorProto.FLOAT, [2, 8, 4])])
    node = helper.make_node("If", ["flag"], ["out"], name="choice", then_branch=branch, else_branch=other)
    graph = helper.make_graph([node], "g", [*cache, helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 8, 4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)]), tmp_path / "ts_branch.onnx")
    assert main(["build", str(tmp_path / "ts_branch.onnx"), "--plugins", "-o", str(tmp_path / "e.engine")]) == 1
    err = capsys.readouterr().err.strip()
    cause = "TensorScatter node 'write', which a plugin serves, lies in a subgraph of If node 'choice', where TensorRT-RTX builds no plugin"
    assert err.count("\n") == 0 and err.startswith(f"trt-scatter build: error: TensorRT could not build ts_branch: {cause} (TensorRT-RTX said: "), err
    main(["check", str(tmp_path / "ts_branch.onnx")])  # check names it on its engine line
    engine_line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("engine: "))
    assert engine_line.startswith(f"engine: FAIL: engine build failed: {cause} (TensorRT-RTX said: "), engine_line


def test_verbose_build_shows_tensorrt_and_polygraphy_logs(tmp_path, capsys):
    import logging

    model = _scatter_elements_onnx(tmp_path / "static.onnx", batch=2)
    try:
        assert main(["build", model, "-v", "--out-dir", str(tmp_path)]) == 0
        assert logging.getLogger("trt_scatter").level == logging.DEBUG
    finally:
        main(["build", model, "--out-dir", str(tmp_path)])  # back to quiet for the tests after this one
        logging.getLogger("trt_scatter").setLevel(logging.NOTSET)
    assert "Building engine with configuration" in capsys.readouterr().out  # polygraphy's [I] lines, hidden when quiet


def test_aliased_plugin_io_enables_that_preview_feature_and_keeps_the_defaults():
    from polygraphy.backend.trt import CreateConfig

    from trt_scatter.engine import with_aliased_plugin_io
    from trt_scatter.backend import new_builder

    trt = backend.tensorrt()
    builder = new_builder()
    network = builder.create_network(0)
    defaults = builder.create_builder_config()
    enabled = {f for f in trt.PreviewFeature.__members__.values() if defaults.get_preview_feature(f)}
    assert trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03 not in enabled
    config = with_aliased_plugin_io(CreateConfig())(builder, network)
    now = {f for f in trt.PreviewFeature.__members__.values() if config.get_preview_feature(f)}
    assert now == enabled | {trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03}


def _shape_setting_model(path):
    """``pos`` (int64 [1]) sets the output's shape through Add and ConstantOfShape; ``x`` has a dynamic dim."""
    nodes = [helper.make_node("Add", ["pos", "two"], ["stop"]), helper.make_node("ConstantOfShape", ["stop"], ["output"]),
             helper.make_node("Relu", ["x"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("pos", TensorProto.INT64, [1]),
                                           helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [None]),
                               helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 3])],
                              initializer=[onnx.numpy_helper.from_array(__import__("numpy").array([2], "int64"), "two")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), path)


def test_input_that_sets_shapes_needs_its_value_range(tmp_path, capsys):
    """Without one, polygraphy would pin the input's values to 1 in the engine (a KV cache's position, say)."""
    _shape_setting_model(tmp_path / "shape.onnx")
    x = ["--min", "x:[1,3]", "--opt", "x:[2,3]", "--max", "x:[4,3]"]
    assert main(["build", str(tmp_path / "shape.onnx"), "--out-dir", str(tmp_path), *x]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and "input(s) pos set shapes in the network: give the range of their values" in err
    assert main(["build", str(tmp_path / "shape.onnx"), "--out-dir", str(tmp_path), "--min", "pos:[0]", "--opt", "pos:[3]", "--max", "pos:[9]", *x]) == 0


def test_fed_inputs_give_the_profile_shapes_and_the_values_of_inputs_that_set_shapes(tmp_path, monkeypatch):
    """trt-scatter check builds through build_engine(feeds=...): the engine must take exactly those feeds."""
    import numpy as np
    from polygraphy.backend import trt as polygraphy_trt

    from trt_scatter import engine

    recorded = {}

    class RecordingProfile(polygraphy_trt.Profile):
        def add(self, name, min, opt, max):
            recorded[name] = (tuple(min), tuple(opt), tuple(max))
            return super().add(name, min=min, opt=opt, max=max)

    monkeypatch.setattr(polygraphy_trt, "Profile", RecordingProfile)
    _shape_setting_model(tmp_path / "shape.onnx")
    feeds = [{"pos": np.array([7]), "x": np.ones((5, 3), np.float32)}, {"pos": np.array([3]), "x": np.ones((2, 3), np.float32)}]
    plan, _ = engine.build_engine(engine.network_from_onnx(tmp_path / "shape.onnx"), feeds=feeds)
    assert plan and recorded == {"pos": ((3,), (7,), (7,)), "x": ((2, 3), (5, 3), (5, 3))}


@pytest.mark.parametrize("flags", [["--plugins"], []], ids=["plugins", "no-flag"])
def test_a_model_for_the_aot_plugins_without_aot_names_the_flag_in_one_line(tmp_path, capsys, flags):
    """trt_scatter.torch.export(aot=True) writes nodes that only the AOT plugins serve; --plugins would end in
    TensorRT's 'Plugin not found' after parsing."""
    import onnx as onnx_lib

    from trt_scatter.onnx_models import scatter_update_model
    from trt_scatter.passes.aot import to_aot

    onnx_lib.save(to_aot(scatter_update_model((3, 5), (2,), 1)), tmp_path / "update_aot.onnx")
    assert main(["build", str(tmp_path / "update_aot.onnx"), *flags]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith("trt-scatter build: error: ") and "ScatterUpdate" in err
    assert ("names trt-scatter's AOT plugins (plugin_namespace='trt_scatter', aot=1): build it with --aot (full TensorRT >= 10.9), or, for the "
            "Python plugins, build the model as it was before the AOT form (to_aot, export's aot=True) with --plugins") in err


@pytest.mark.parametrize("profile, message", [
    (_profile_args(1, 2, 4), "input 'data': dimension 0 is 2 in the model, the profile's min shape has 1 (got min [1, 3, 4, 5], opt [2, 3, 4, 5], max [4, 3, 4, 5])"),
    (["--min", "data:[2,3,4]", "--opt", "data:[2,3,4]", "--max", "data:[2,3,4]"], "input 'data': rank 4 in the model, the profile's shapes have rank 3"),
], ids=["static-dim", "rank"])
def test_a_profile_that_contradicts_the_models_static_shape_names_the_input_and_dim(tmp_path, capsys, profile, message):
    """TensorRT would say 'API Usage Error (Input tensor data has static dimensions that don't match kMIN ...)' after
    parsing, as a TensorRT failure (exit 1); it is a bad argument (exit 2)."""
    model = _scatter_elements_onnx(tmp_path / "static.onnx", batch=2)
    assert main(["build", model, "--out-dir", str(tmp_path)] + profile) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err == f"trt-scatter build: error: {message}"


def test_a_value_range_for_a_scalar_that_sets_no_shapes_says_so(tmp_path, capsys):
    """``--min pos:[0]`` is the range of a shape input's values (a KV position that PyTorch's broadcast makes one); a
    scalar position that sets no shapes (the plugin reads its value) needs none, and was told its rank was wrong."""
    from onnx import TensorProto, helper, numpy_helper

    nodes = [helper.make_node("Unsqueeze", ["pos", "zero"], ["start"]), helper.make_node("Add", ["start", "two"], ["stop"]),
             helper.make_node("SliceScatter", ["cache", "new", "start", "stop", "one", "one"], ["out"], domain="trt_scatter")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cache", TensorProto.FLOAT, [2, 8]), helper.make_tensor_value_info("new", TensorProto.FLOAT, [2, 2]),
                                           helper.make_tensor_value_info("pos", TensorProto.INT64, [])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [2, 8])],
                              [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in (("zero", [0]), ("one", [1]), ("two", [2]))])
    onnx.save(_model(graph), tmp_path / "kv.onnx")
    assert main(["build", str(tmp_path / "kv.onnx"), "--plugins", "--out-dir", str(tmp_path), "--min", "pos:[0]", "--opt", "pos:[3]", "--max", "pos:[6]"]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0
    assert err.startswith("trt-scatter build: error: input 'pos': a scalar whose values set no shapes in this network") and "leave it out of --min/--opt/--max" in err


def test_a_profile_that_repeats_the_static_shape_builds(tmp_path):
    model = _scatter_elements_onnx(tmp_path / "static.onnx", batch=2)
    assert main(["build", model, "--out-dir", str(tmp_path)] + _profile_args(2, 2, 2)) == 0


def test_plugin_nodes_in_subgraphs_count_as_the_models(tmp_path, capsys):
    """A plugin node in an If branch needs --plugins (and, with inplace=1, aliased plugin I/O) as one in the main graph does."""
    from trt_scatter.engine import needs_aliased_plugin_io

    onnx.save(fx.slice_scatter_in_an_if_branch(), tmp_path / "if.onnx")
    assert main(["build", str(tmp_path / "if.onnx")]) == 2
    assert "has trt-scatter plugin nodes (SliceScatter): register the plugins (--plugins; from Python, plugins=True)" in capsys.readouterr().err
    assert needs_aliased_plugin_io(fx.slice_scatter_in_an_if_branch(inplace=1))
    assert not needs_aliased_plugin_io(fx.slice_scatter_in_an_if_branch(inplace=0))


@pytest.mark.parametrize("setup", ["unknown backend name", "no TensorRT importable"])
def test_an_unusable_tensorrt_is_a_one_line_error_not_an_internal_one(tmp_path, setup):
    """A bad TRT_SCATTER_BACKEND or no TensorRT is the user's setup, not a trt-scatter bug: 'error:', exit 2."""
    if setup == "unknown backend name":
        env, line = {"TRT_SCATTER_BACKEND": "foo"}, "TRT_SCATTER_BACKEND='foo' is not one of tensorrt, tensorrt_rtx\n"
    else:  # a sitecustomize that makes `import tensorrt` and `import tensorrt_rtx` fail
        (tmp_path / "sitecustomize.py").write_text("import sys\nsys.modules['tensorrt'] = sys.modules['tensorrt_rtx'] = None\n")
        env = {"PYTHONPATH": str(tmp_path), "TRT_SCATTER_BACKEND": "", "POLYGRAPHY_USE_TENSORRT_RTX": "0"}  # neither forced: both tried
        line = "trt-scatter needs TensorRT. Install 'trt-scatter[trt]'"
    result = fx.run_tool("trt-scatter", ["build", "slice_scatter", "-o", tmp_path / "e.engine"], env=env, fresh=True)  # a backend not yet chosen
    assert result.returncode == 2, result.stderr
    assert result.stderr.startswith(f"trt-scatter build: error: {line}") and result.stderr.count("\n") == 1, result.stderr
    assert not (tmp_path / "e.engine").exists()


@pytest.mark.parametrize(
    "flags, message",
    [
        (["--dtype", "float16"], "--dtype applies to example networks; an ONNX model's inputs keep the types it declares"),
        (["--index-dtype", "int64"], "--index-dtype applies to example networks; an ONNX model's inputs keep the types it declares"),
        (["--dynamic"], "--dynamic applies to example networks; an ONNX model's dynamic dimensions get --min/--opt/--max"),
    ],
)
def test_example_network_flags_on_an_onnx_model_are_refused_not_ignored(tmp_path, capsys, flags, message):
    model = _scatter_elements_onnx(tmp_path / "static.onnx", batch=2)
    assert main(["build", model, "-o", str(tmp_path / "e.engine")] + flags) == 2
    assert capsys.readouterr().err == f"trt-scatter build: error: {message}\n"
    assert not (tmp_path / "e.engine").exists()


@pytest.mark.parametrize(
    "argv, message",
    [
        (["build", "slice_scatter", "--plugins"], "--plugins applies to ONNX models (their trt_scatter nodes); the example networks use the native lowerings"),
        (["build", "--all", "--min", "data:[1,5]", "--opt", "data:[2,5]", "--max", "data:[4,5]"],
         "--all builds the example networks with their own profiles; give no --min/--opt/--max"),
        (["build", "slice_scatter", "-o", "x1.engine"], "-o names the engine file and --out-dir the folder of <target>.engine: give one of them"),
    ],
)
def test_flags_that_would_do_nothing_on_example_networks_are_refused(tmp_path, capsys, argv, message):
    assert main(argv + ["--out-dir", str(tmp_path)]) == 2
    assert capsys.readouterr().err == f"trt-scatter build: error: {message}\n"
    assert not list(tmp_path.glob("*.engine"))


def test_dtype_names_are_numpys_or_tensorrts_own():
    from trt_scatter.dtypes import tensorrt_name as dtype_name

    trt = backend.tensorrt()
    assert [dtype_name(t) for t in (trt.float32, trt.float16, trt.bfloat16, trt.int64, trt.bool)] == ["float32", "float16", "bfloat16", "int64", "bool"]
    assert dtype_name(trt.DataType.FP8) == "fp8" and dtype_name(trt.DataType.INT4) == "int4"  # no NumPy type: TensorRT's name


def test_no_garbage_collection_starts_while_tensorrt_creates_a_builder_or_builds(monkeypatch):
    """TensorRT(-RTX) calls the Python logger while it holds a lock of its own: a collection starting there that frees an
    earlier builder left in a reference cycle waits on that lock forever (seen in a process that had built before). The
    loaders and the build run TensorRT with automatic collection off, and turn it back on after."""
    import gc

    import polygraphy.backend.trt as polygraphy_trt

    from trt_scatter import engine

    seen = []

    def recording(real):
        class Recording:
            def __init__(self, *args, **kwargs):
                self.loader = real(*args, **kwargs)

            def __call__(self, *args, **kwargs):
                seen.append((real.__name__, gc.isenabled()))
                return self.loader(*args, **kwargs)

        return Recording

    for name in ("CreateNetwork", "EngineBytesFromNetwork"):
        monkeypatch.setattr(polygraphy_trt, name, recording(getattr(polygraphy_trt, name)))
    assert gc.isenabled()
    plan, _ = engine.build_engine(engine.network_from_example("scatter_nd", {}))
    assert len(plan) > 0 and seen == [("CreateNetwork", False), ("EngineBytesFromNetwork", False)] and gc.isenabled()
    with pytest.raises(RuntimeError), engine.no_collection_inside_tensorrt():
        raise RuntimeError("a failed build")
    assert gc.isenabled()


def _inplace_model(extra, outputs, data="data", body_reader=False):
    """SliceScatter 'w' with inplace=1 on ``data`` (4, 6), after the nodes ``extra``; graph outputs ``outputs``."""
    import numpy as np
    from onnx import numpy_helper

    node = helper.make_node("SliceScatter", [data, "updates", "start", "stop", "step", "axes"], ["output"], domain="trt_scatter", name="w", inplace=1)
    params = [numpy_helper.from_array(np.array([value]), name) for name, value in (("start", 0), ("stop", 6), ("step", 3), ("axes", 1))]
    nodes = list(extra) + [node]
    if body_reader:  # an If whose branches read data by name
        branch = lambda op: helper.make_graph([helper.make_node(op, ["data"], [f"{op}_out"])], op, [], [helper.make_tensor_value_info(f"{op}_out", TensorProto.FLOAT, None)])
        nodes.insert(0, helper.make_node("Constant", [], ["flag"], value=numpy_helper.from_array(np.array(True))))
        nodes.insert(1, helper.make_node("If", ["flag"], ["branch"], then_branch=branch("Neg"), else_branch=branch("Abs")))
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 6]), helper.make_tensor_value_info("updates", TensorProto.FLOAT, [4, 2])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info(name, TensorProto.FLOAT, None) for name in outputs], initializer=params)
    return _model(graph)


@pytest.mark.skipif(not backend.is_rtx(), reason="the refusal is TensorRT-RTX's: full TensorRT copies data where another node reads it")
@pytest.mark.parametrize("model, why", [
    (lambda: _inplace_model([helper.make_node("Neg", ["data"], ["n"])], ["output", "n"]), r"is read by Neg node #0 \(output 'n'\) too"),
    (lambda: _inplace_model([], ["output", "data"]), "is a graph output"),
    (lambda: _inplace_model([helper.make_node("Relu", ["data"], ["r"]), helper.make_node("Neg", ["r"], ["n"])], ["output", "n"], "r"),
     r"is read by Neg node #1 \(output 'n'\) too"),
    (lambda: _inplace_model([], ["output", "branch"], body_reader=True), r"is read by If node #1 \(output 'branch'\) too"),
])
def test_inplace_where_data_is_read_elsewhere_is_refused_on_rtx_in_one_line(model, why):
    """TensorRT-RTX fails such a build with an internal assertion or an invalid engine; validation accepts the model
    (full TensorRT builds it, copying data)."""
    from trt_scatter import engine
    from trt_scatter.passes.validate import validate

    model = model()
    validate(model)
    with pytest.raises(ValueError) as caught:
        engine.network_from_onnx(model, plugins=True)
    assert re.fullmatch(rf"g: SliceScatter node 'w': inplace=1 writes into data \('\w+'\), which {why}: TensorRT-RTX cannot build that "
                        r"\(full TensorRT copies data there\); set inplace=0", str(caught.value)), str(caught.value)


def test_inplace_where_only_shapes_or_types_are_read_elsewhere_builds(tmp_path):
    shape = helper.make_node("Shape", ["data"], ["shape"])
    cast = helper.make_node("CastLike", ["updates", "data"], ["cast"])  # reads data's type only
    path = tmp_path / "inplace.onnx"
    onnx.save(_inplace_model([shape, cast], ["output", "shape", "cast"]), path)
    assert main(["build", str(path), "--plugins", "--output", str(tmp_path / "inplace.engine")]) == 0


@pytest.mark.parametrize("dynamic", [False, True])
def test_input_names_that_are_patterns_to_polygraphy_build(tmp_path, capsys, dynamic):
    """polygraphy's Profile matches its keys to input names as fnmatch patterns: 'past_key_values[0]' matched no input
    (TensorRT could not build it: "Invalid inputs were provided to the optimization profile")."""
    import onnx

    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model(("n" if dynamic else 4, 6), [0], [4], [2], axes=[1])
    name = "past_key_values[0]"
    for node in model.graph.node:
        node.input[:] = [name if i == "data" else i for i in node.input]
    model.graph.input[0].name = name
    onnx.save(model, tmp_path / "model.onnx")
    argv = ["build", str(tmp_path / "model.onnx"), "--plugins", "-o", str(tmp_path / "m.engine")]
    for which in ("min", "opt", "max") if dynamic else ():
        argv += [f"--{which}", f"{name}:[4,6]", "updates:[4,2]"]
    assert main(argv) == 0, capsys.readouterr().err


@pytest.mark.parametrize("change", ["a-write-nothing-reads", "a-write-only-a-dead-node-reads", "an-optional-input-given-as-empty"])
def test_valid_models_tensorrt_mishandles_build(tmp_path, capsys, change):
    """A trt_scatter node whose output nothing reads (TensorRT-RTX aborted: its plugin freed twice) and one that gives
    its left-out optional axes as "" (the parser's INVALID_NODE) are valid models: they build."""
    import onnx
    from onnx import helper

    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model((4, 6), [0], [4], [2])
    write = model.graph.node[-1]
    if change != "an-optional-input-given-as-empty":
        write.output[0] = "unread"
        model.graph.node.append(helper.make_node("Relu", ["data"], ["output"]))
        if change == "a-write-only-a-dead-node-reads":
            model.graph.node.append(helper.make_node("Identity", ["unread"], ["unread_too"]))
    else:
        write.input.append("")
    onnx.save(model, tmp_path / "model.onnx")
    assert main(["build", str(tmp_path / "model.onnx"), "--plugins", "-o", str(tmp_path / "m.engine")]) == 0, capsys.readouterr().err


def test_a_graph_input_of_a_type_tensorrt_has_not_is_named(tmp_path, capsys):
    """TensorRT's parser refuses uint32 (uint16, uint64, int16...) without naming the input: exit 1 and its own words."""
    import onnx
    from onnx import TensorProto

    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model((4, 6), [0], [4], [2], axes=[1])
    for value in (*model.graph.input, *model.graph.output):
        value.type.tensor_type.elem_type = TensorProto.UINT32
    onnx.save(model, tmp_path / "model.onnx")
    assert main(["build", str(tmp_path / "model.onnx"), "--plugins", "-o", str(tmp_path / "m.engine")]) == 2
    assert capsys.readouterr().err == "trt-scatter build: error: graph input 'data' is uint32, which TensorRT has no type for\n"


@pytest.mark.parametrize("at_max_only", [False, True], ids=["every-bound", "max-only"])
def test_a_profile_that_breaks_a_plugins_shape_rule_names_the_rule(tmp_path, capsys, at_max_only):
    """TensorRT says only that the plugin's "output shape computation failed with a non-zero return code": the build
    names the plugin, the shapes it got and the rule (exit 2, the profile is the user's to mend). Where only the max
    shapes break it, TensorRT said nothing and built an engine that writes nothing there. The command, and build_engine
    from Python, refuse the profile before TensorRT builds."""
    import onnx

    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model(("N", "W"), [0], [1], [1], axes=[1])  # a slice one column wide
    model.graph.input[1].type.tensor_type.shape.dim[1].dim_param = "U"  # updates' columns: their own size
    onnx.save(model, tmp_path / "model.onnx")
    small = 1 if at_max_only else 3
    profile = {"data": ((1, 2), (2, 2), (4, 2)), "updates": ((1, small), (2, small), (4, 3))}
    bound, rows = ("largest", 4) if at_max_only else ("smallest", 1)
    message = (f"the profile's {bound} shapes break a plugin's rule: SliceScatter node 'SliceScatter_4', input shapes "
               f"[({rows}, 2), ({rows}, 3), (1,), (1,), (1,), (1,)]: slice_scatter: 'updates' dimension 1 must be at most data's (2) "
               "to be a slice of it (got 3)")
    with pytest.raises(ValueError) as refused:  # from Python as from the command: before TensorRT builds, naming the bound
        engine.build_engine(engine.network_from_onnx(model, plugins=True), profile)
    assert str(refused.value) == message
    shapes = "[(4, 2), (4, 3), (1,), (1,), (1,), (1,)]" if at_max_only else "[(-1, 2), (-1, 3), (1,), (1,), (1,), (1,)]"
    loader = engine.network_from_onnx(model, plugins=True)
    with pytest.raises(ValueError) as refused:  # a loader of the user's own, no model to check: the plugin's refusal, as TensorRT met it
        engine.build_engine(lambda: loader(), profile)
    assert str(refused.value) == (f"the profile's {'largest ' if at_max_only else ''}shapes break a plugin's rule: SliceScatter plugin of node "
                                  f"'SliceScatter_4', input shapes {shapes}: slice_scatter: 'updates' dimension 1 must be at most data's (2) "
                                  "to be a slice of it (got 3)")
    capsys.readouterr()
    arguments = [argument for flag, bound in (("--min", 0), ("--opt", 1), ("--max", 2))
                 for argument in (flag, *(f"{name}:{list(bounds[bound])}".replace(" ", "") for name, bounds in profile.items()))]
    assert main(["build", str(tmp_path / "model.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *arguments]) == 2
    assert capsys.readouterr().err == f"trt-scatter build: error: {message}\n"


@pytest.mark.parametrize("indices, smallest_rows, message", [
    ([6, 7], 1, "in every run the profile allows, as at its largest data and smallest other inputs (data [4, 3]): ScatterUpdate node "
                "'ScatterUpdate_1': scatter_update: 'indices' values must be in [0, 3] for a dimension of size 4 (got 7)"),
    ([0, 3], 1, None),  # in range from 4 rows on: the runs with fewer are the user's to avoid (the plugin counts what it skips)
    ([0, 1], 2, None),
], ids=["out-of-range-for-every-shape", "out-of-range-for-the-smallest", "in-range"])
def test_constant_indices_a_profile_puts_out_of_range_are_one_line(tmp_path, capsys, indices, smallest_rows, message):
    """Constant indices into a dimension only the profile bounds, out of range even at its largest shapes: the plugin
    would skip them in every run, and the build said nothing."""
    from trt_scatter import onnx_models

    model = onnx_models.scatter_update_model(("N", 3), (2,), 0)
    kept = [value for value in model.graph.input if value.name != "indices"]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array(indices, np.int64), "indices"))
    onnx.save(model, tmp_path / "model.onnx")
    profile = ["--min", f"data:[{smallest_rows},3]", "--opt", "data:[3,3]", "--max", "data:[4,3]"]
    code = main(["build", str(tmp_path / "model.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *profile])
    assert (code, capsys.readouterr().err) == ((2, f"trt-scatter build: error: {message}\n") if message else (0, ""))
    if message:  # the Python API's build refuses it as the command does (it built an engine that skipped the writes)
        from trt_scatter.passes.validate import ModelError

        @plugin_models.forked
        def build():
            with pytest.raises(ModelError, match=re.escape(message)):
                engine.build_engine(engine.network_from_onnx(tmp_path / "model.onnx", plugins=True), {"data": ((smallest_rows, 3), (3, 3), (4, 3))})

        build()


def _scatter_elements_of_constant_indices(indices, updates_shape, data_shape):
    node = helper.make_node("ScatterElements", ["data", "idx", "upd"], ["y"], axis=1)
    graph = helper.make_graph([node], "se", [helper.make_tensor_value_info("data", TensorProto.FLOAT, data_shape),
                                             helper.make_tensor_value_info("upd", TensorProto.FLOAT, updates_shape)],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, data_shape)],
                              [onnx.numpy_helper.from_array(np.array(indices, np.int64), "idx")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("indices, updates_shape, data_shape, profile, message", [
    ([[4]], ["N", 1], ["N", "W"], (("data:[1,3]", "upd:[1,1]"), ("data:[1,8]", "upd:[1,1]"), ("data:[1,16]", "upd:[1,1]")),
     "the profile's smallest shapes break the op's rule: ScatterElements node #0 (output 'y'), input shapes [(1, 3), (1, 1), (1, 1)]: "
     "scatter_elements: 'indices' values must be in [-3, 2] for a dimension of size 3 (got 4)"),
    ([[0, 1]], ["N", 2], ["N", 5], (("data:[1,5]", "upd:[1,2]"), ("data:[2,5]", "upd:[2,2]"), ("data:[4,5]", "upd:[4,2]")),
     "the profile's opt shapes break the op's rule: ScatterElements node #0 (output 'y'), input shapes [(2, 5), (1, 2), (2, 2)]: "
     "scatter_elements: 'updates' must have shape (1, 2) (the shape of 'indices') (got shape (2, 2))"),
    ([[0, 0]], ["N", 2], ["N", "W"], (("data:[1,1]", "upd:[1,2]"), ("data:[1,4]", "upd:[1,2]"), ("data:[1,8]", "upd:[1,2]")),
     "the profile's smallest shapes break TensorRT's layer's rule: ScatterElements node #0 (output 'y'), input shapes [(1, 1), (1, 2), (1, 2)]: "
     "scatter_elements: 'indices' dimension 1 (the axis) must be at most data's (1) in TensorRT's IScatterLayer, which ONNX allows "
     "only with repeated targets (got shape (1, 2))"),
    ([[0, 0]], ["N", 2], ["N", None], (("data:[1,1]", "upd:[1,2]"), ("data:[1,4]", "upd:[1,2]"), ("data:[1,8]", "upd:[1,2]")),
     "the profile's smallest shapes break TensorRT's layer's rule: ScatterElements node #0 (output 'y'), input shapes [(1, 1), (1, 2), (1, 2)]: "
     "scatter_elements: 'indices' dimension 1 (the axis) must be at most data's (1) in TensorRT's IScatterLayer, which ONNX allows "
     "only with repeated targets (got shape (1, 2))"),  # a graph input's unnamed dim is the profile's bound as a named one is
    ([[4]], ["N", 1], ["N", "W"], (("data:[1,5]", "upd:[1,1]"), ("data:[1,8]", "upd:[1,1]"), ("data:[1,16]", "upd:[1,1]")), None),
], ids=["index-out-of-range-at-the-smallest", "updates-unlike-indices-from-opt-on", "more-indices-than-data-on-the-axis",
        "more-indices-than-data-of-an-unnamed-dim", "in-range-at-every-bound"])
def test_tensorrts_own_scatter_layer_is_held_to_the_ops_rules_at_each_bound(tmp_path, capsys, indices, updates_shape, data_shape,
                                                                            profile, message):
    """ONNX's ScatterElements that TensorRT's importer builds, with constant indices and a profile the rule breaks at one
    bound only: the build said nothing, and TensorRT's scatter layer checks no index when it runs (a plugin skips and
    counts what it cannot write; this layer would read or write out of bounds). The command and build_engine refuse it."""
    onnx.save(_scatter_elements_of_constant_indices(indices, updates_shape, data_shape), tmp_path / "se.onnx")
    arguments = [argument for flag, shapes in zip(("--min", "--opt", "--max"), profile) for argument in (flag, *shapes)]
    code = main(["build", str(tmp_path / "se.onnx"), "-o", str(tmp_path / "se.engine"), *arguments])
    assert (code, capsys.readouterr().err) == ((2, f"trt-scatter build: error: {message}\n") if message else (0, ""))
    if message:
        bounds = {name: tuple(tuple(int(v) for v in shape.split(":")[1].strip("[]").split(",")) for shape in shapes)
                  for name, shapes in zip(("data", "upd"), zip(*profile))}
        with pytest.raises(ValueError) as refused:
            engine.build_engine(engine.network_from_onnx(tmp_path / "se.onnx"), bounds)
        assert str(refused.value) == message


def _scatter_nd_at_the_past_length():
    """A KV cache of 16 rows written by ONNX's ScatterND at rows Range(len(past), len(past) + len(new)): indices computed
    from two inputs' shapes, which a profile's largest shapes of both would put past the cache, though no run has both."""
    nodes = [helper.make_node("Shape", ["past"], ["ps"], start=0, end=1), helper.make_node("Shape", ["new"], ["ns"], start=0, end=1),
             helper.make_node("Squeeze", ["ps"], ["start"]), helper.make_node("Squeeze", ["ns"], ["length"]),
             helper.make_node("Add", ["start", "length"], ["stop"]), helper.make_node("Range", ["start", "stop", "one"], ["rows"]),
             helper.make_node("Unsqueeze", ["rows", "last"], ["idx"]), helper.make_node("ScatterND", ["cache", "idx", "new"], ["out"])]
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [rows, 4]) for name, rows in (("cache", 16), ("past", "P"), ("new", "T"))]
    constants = [onnx.numpy_helper.from_array(np.array(1, np.int64), "one"), onnx.numpy_helper.from_array(np.array([1], np.int64), "last")]
    graph = helper.make_graph(nodes, "kv", inputs, [helper.make_tensor_value_info("out", TensorProto.FLOAT, [16, 4])], constants)
    return _model(graph)


def test_tensorrts_own_scatter_layer_with_indices_from_shapes_builds_and_checks(tmp_path, capsys):
    """The bound check of TensorRT's own scatter layers folded indices computed from shapes at the largest past and new
    lengths together and refused a profile whose runs all fit; trt-scatter check did so with a profile of its feeds."""
    onnx.save(_scatter_nd_at_the_past_length(), tmp_path / "kv.onnx")
    profile = [argument for flag, (past, new) in (("--min", (0, 1)), ("--opt", (8, 1)), ("--max", (15, 16)))
               for argument in (flag, f"past:[{past},4]", f"new:[{new},4]")]
    assert main(["build", str(tmp_path / "kv.onnx"), "-o", str(tmp_path / "kv.engine"), *profile]) == 0, capsys.readouterr().err
    rng = np.random.default_rng(0)
    feeds = [{"cache": rng.random((16, 4), np.float32), "past": rng.random((past, 4), np.float32), "new": rng.random((new, 4), np.float32)}
             for past, new in ((15, 1), (0, 16))]
    plan, _ = engine.build_engine(engine.network_from_onnx(tmp_path / "kv.onnx"), feeds=feeds)  # no plugin: in this process
    assert len(plan) > 0


def test_a_profile_whose_largest_shapes_make_no_run_together_builds(tmp_path, capsys):
    """A KV cache written at the past length: past up to 15 (decode) and new up to 16 (prefill) never come together, so the
    rule that the largest shapes of both break holds in every run (the profile check refused it)."""
    nodes = [helper.make_node("Shape", ["past"], ["start"], start=2, end=3), helper.make_node("Shape", ["new"], ["length"], start=2, end=3),
             helper.make_node("Add", ["start", "length"], ["stop"]),
             helper.make_node("SliceScatter", ["cache", "new", "start", "stop", "step", "axes"], ["output"], domain="trt_scatter")]
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT, [1, 2, length, 4]) for name, length in (("cache", 16), ("past", "P"), ("new", "T"))]
    constants = [onnx.numpy_helper.from_array(np.array([value], np.int64), name) for name, value in (("step", 1), ("axes", 2))]
    graph = helper.make_graph(nodes, "kv", inputs, [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 2, 16, 4])], constants)
    onnx.save(_model(graph), tmp_path / "kv.onnx")
    profile = [argument for flag, (past, new) in (("--min", (0, 1)), ("--opt", (8, 1)), ("--max", (15, 16)))
               for argument in (flag, f"past:[1,2,{past},4]", f"new:[1,2,{new},4]")]
    assert main(["build", str(tmp_path / "kv.onnx"), "--plugins", "-o", str(tmp_path / "kv.engine"), *profile]) == 0, capsys.readouterr().err


def _profile_arguments(profile):
    return [argument for flag, bound in (("--min", 0), ("--opt", 1), ("--max", 2))
            for argument in (flag, *(f"{name}:{list(bounds[bound])}".replace(" ", "") for name, bounds in profile.items()))]


def _model(graph, opset=17):
    """``graph`` as a model of ONNX's opset ``opset`` and the trt_scatter domain."""
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset), helper.make_opsetid("trt_scatter", 1)])


def _float(name, shape):
    return helper.make_tensor_value_info(name, TensorProto.FLOAT, shape)


def _constant(name, values, dtype=np.int64):
    return onnx.numpy_helper.from_array(np.array(values, dtype), name)


@pytest.mark.parametrize("case", ["constant write index, longer updates", "constant index into a difference of two inputs",
                                  "index computed from another input's length", "index computed from two inputs' lengths",
                                  "update of ones in the shape of another write's data", "update declared one row long"])
def test_constant_indices_a_rule_breaks_only_at_every_inputs_largest_shapes_build(tmp_path, capsys, case):
    """The largest shapes of every input at once break a rule of a constant index, but no run does: a write of a longer
    update leaves fewer places to start it; data's rows X - Y are fewest where both inputs are largest; an index of
    6 - Y rows is largest where Y is smallest; 6 + Y - Z rows is 6 where both are smallest or largest, and 2 at Y 1, Z 5;
    an update of Y's shape (Y itself written into, so at its largest) or computed from Y but declared 1 row long, at 12
    of 16 cache rows, fits every run of Y at most 4 rows."""
    value_info = []
    if case == "index computed from another input's length":
        nodes = [helper.make_node("Shape", ["y"], ["y_rows"], start=0, end=1), helper.make_node("Sub", ["six", "y_rows"], ["index"]),
                 helper.make_node("ScatterUpdate", ["data", "index", "updates", "axis"], ["output"], domain="trt_scatter")]
        inputs, outputs = [_float("data", ["N", 3]), _float("y", ["Y", 3]), _float("updates", [1, 3])], [_float("output", ["N", 3])]
        constants = [_constant("six", [6]), _constant("axis", [0])]
        profile = {"data": ((1, 3), (4, 3), (4, 3)), "y": ((1, 3), (3, 3), (5, 3))}  # 4 rows and y 5: a write into row 1
    elif case.startswith("update"):  # an int32 cache: integers computed from shapes are what folding makes constants
        ones = onnx.numpy_helper.from_array(np.array([1], np.int32))
        nodes = [helper.make_node("ScatterElements", ["y", "zeros", "ones"], ["y_out"], reduction="add"),
                 helper.make_node("CacheScatter", ["cache", "new", "at"], ["output"], domain="trt_scatter", axis=2)]
        nodes[1:1] = ([helper.make_node("Shape", ["y"], ["y_shape"]), helper.make_node("ConstantOfShape", ["y_shape"], ["new"], value=ones)]
                      if case.startswith("update of ones") else [helper.make_node("Cast", ["y"], ["new"], to=TensorProto.INT32)])
        cache = lambda name: helper.make_tensor_value_info(name, TensorProto.INT32, [1, 2, "S", 4])
        inputs, outputs = [cache("cache"), _float("y", [1, 2, "T", 4])], [cache("output"), _float("y_out", [1, 2, "T", 4])]
        constants = [_constant("at", [12]), _constant("zeros", np.zeros((1, 1, 1, 1))), onnx.numpy_helper.from_array(np.ones((1, 1, 1, 1), np.float32), "ones")]
        profile = {"cache": ((1, 2, 4, 4), (1, 2, 16, 4), (1, 2, 16, 4)), "y": ((1, 2, 1, 4), (1, 2, 1, 4), (1, 2, 16, 4))}
        if case.endswith("declared one row long"):
            value_info = [helper.make_tensor_value_info("new", TensorProto.INT32, [1, 2, 1, 4])]
    elif case.startswith("index computed"):
        nodes = [helper.make_node("Shape", ["y"], ["y_rows"], start=0, end=1), helper.make_node("Shape", ["z"], ["z_rows"], start=0, end=1),
                 helper.make_node("Add", ["six", "y_rows"], ["plus_y"]), helper.make_node("Sub", ["plus_y", "z_rows"], ["index"]),
                 helper.make_node("ScatterUpdate", ["data", "index", "updates", "axis"], ["output"], domain="trt_scatter")]
        inputs = [_float("data", ["N", 3]), _float("y", ["Y", 3]), _float("z", ["Z", 3]), _float("updates", [1, 3])]
        outputs, constants = [_float("output", ["N", 3])], [_constant("six", [6]), _constant("axis", [0])]
        profile = {"data": ((1, 3), (4, 3), (4, 3)), "y": ((1, 3), (1, 3), (8, 3)), "z": ((1, 3), (5, 3), (8, 3))}
    elif case.startswith("constant write"):
        nodes = [helper.make_node("CacheScatter", ["cache", "new", "at"], ["output"], domain="trt_scatter", axis=2)]
        inputs, outputs, constants = [_float("cache", [1, 2, 16, 4]), _float("new", [1, 2, "T", 4])], [_float("output", [1, 2, 16, 4])], [_constant("at", [4])]
        profile = {"new": ((1, 2, 1, 4), (1, 2, 4, 4), (1, 2, 16, 4))}  # every run with at most 12 new rows is valid
    else:
        nodes = [helper.make_node("Shape", ["x"], ["x_rows"], start=0, end=1), helper.make_node("Shape", ["y"], ["y_rows"], start=0, end=1),
                 helper.make_node("Sub", ["x_rows", "y_rows"], ["rows"]), helper.make_node("Concat", ["rows", "three"], ["shape"], axis=0),
                 helper.make_node("Expand", ["row", "shape"], ["data"]),
                 helper.make_node("ScatterUpdate", ["data", "index", "updates", "axis"], ["output"], domain="trt_scatter")]
        inputs, outputs = [_float("x", ["X", 3]), _float("y", ["Y", 3]), _float("updates", [1, 3])], [_float("output", ["R", 3])]
        constants = [_constant("three", [3]), _constant("axis", [0]), _constant("index", [0]), onnx.numpy_helper.from_array(np.zeros((1, 3), np.float32), "row")]
        profile = {"x": ((2, 3), (4, 3), (8, 3)), "y": ((1, 3), (1, 3), (8, 3))}  # a run of x 8 and y 1 rows writes row 0 of 7
    graph = helper.make_graph(nodes, "g", inputs, outputs, constants, value_info=value_info)
    onnx.save(_model(graph), tmp_path / "m.onnx")
    code = main(["build", str(tmp_path / "m.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *_profile_arguments(profile)])
    assert code == 0, capsys.readouterr().err


@pytest.mark.parametrize("case", ["updates a graph input", "after a node whose rule only every input's largest shapes break",
                                  "a standard ScatterND with a reduction", "updates broadcast to data's shape",
                                  "the index wrapped as PyTorch's exporters wrap it", "the index wrapped, then cast to int32",
                                  "a second write into the first one's output", "a wrap of the index over a first write's output",
                                  "the index wrapped, -6: left as given by every size up to 4",
                                  "a wrap of -6 over a first write's output: left as given by every size up to 4"])
def test_a_constant_index_out_of_range_in_every_run_is_refused(tmp_path, capsys, case):
    """Index 6 into data of at most 4 rows: refused wherever the write is, whatever else the node or the model reads (updates
    computed from data's shape, as PyTorch's exporters write ``index_fill``, were left to the plugin). So is -6 wrapped
    as PyTorch's exporters wrap it: below minus every size the profile allows, the wrap leaves it as given."""
    inputs, outputs, profile = [_float("data", ["N", 3])], [_float("output", ["N", 3])], {"data": ((1, 3), (2, 3), (4, 3))}
    constants = [_constant("index", [6]), _constant("axis", [0]), _constant("row", np.ones((1, 3)), np.float32)]
    nodes = [helper.make_node("ScatterUpdate", ["data", "index", "row", "axis"], ["output"], domain="trt_scatter")]
    if case == "updates a graph input":
        inputs.append(_float("row_in", ["U", 3]))
        nodes[0].input[2] = "row_in"
        profile["row_in"] = ((1, 3),) * 3
    elif case.startswith("after a node"):  # a write at 4 of up to 16 new rows into 16: every run of at most 12 is valid
        inputs += [_float("cache", [1, 2, 16, 4]), _float("new", [1, 2, "T", 4])]
        outputs.append(_float("cache_out", [1, 2, 16, 4]))
        nodes.insert(0, helper.make_node("CacheScatter", ["cache", "new", "at"], ["cache_out"], domain="trt_scatter", axis=2))
        constants.append(_constant("at", [4]))
        profile["new"] = ((1, 2, 1, 4), (1, 2, 4, 4), (1, 2, 16, 4))
    elif case.startswith("updates broadcast"):  # PyTorch's index_fill: the value expanded to (1, columns of data)
        inputs[0], outputs[0], profile["data"] = _float("data", ["N", "M"]), _float("output", ["N", "M"]), ((1, 1), (2, 3), (4, 3))
        nodes[:0] = [helper.make_node("Shape", ["data"], ["columns"], start=1, end=2),
                     helper.make_node("Concat", ["one", "columns"], ["row_shape"], axis=0), helper.make_node("Expand", ["value", "row_shape"], ["row"])]
        constants[2:] = [_constant("one", [1]), _constant("value", 1.0, np.float32)]
    elif case.startswith("the index wrapped"):  # Where(i + n < 0, i, Where(i < 0, i + n, i)): 6 in every run, computed from n
        nodes[:0] = [helper.make_node("Shape", ["data"], ["n"], start=0, end=1), helper.make_node("Add", ["given", "n"], ["plus_n"]),
                     helper.make_node("Less", ["plus_n", "zero"], ["below"]), helper.make_node("Less", ["given", "zero"], ["negative"]),
                     helper.make_node("Where", ["negative", "plus_n", "given"], ["wrapped"]),
                     helper.make_node("Where", ["below", "given", "wrapped"], ["index"])]
        constants[0:1] = [_constant("given", [-6 if "-6" in case else 6]), _constant("zero", [0])]
        if case.endswith("cast to int32"):
            nodes[5].output[0] = "index64"
            nodes.insert(6, helper.make_node("Cast", ["index64"], ["index"], to=TensorProto.INT32))
    elif case.startswith("a wrap of"):  # x[0] = row; x.index_fill(0, [6], 1) as dynamo writes it: n of the first's output
        nodes[:0] = [helper.make_node("ScatterUpdate", ["data", "zero", "row", "axis"], ["first"], domain="trt_scatter"),
                     helper.make_node("Shape", ["first"], ["n"], start=0, end=1), helper.make_node("Add", ["given", "n"], ["plus_n"]),
                     helper.make_node("Less", ["plus_n", "zero"], ["below"]), helper.make_node("Where", ["negative", "plus_n", "given"], ["wrapped"]),
                     helper.make_node("Where", ["below", "given", "wrapped"], ["index"])]
        nodes[-1].input[0] = "first"
        constants[0:1] = [_constant("given", [-6 if "-6" in case else 6]), _constant("zero", [0]),
                          onnx.numpy_helper.from_array(np.array(["-6" in case]), "negative")]  # the test i < 0, folded
    elif case.startswith("a second write"):  # x[0] = row; x[6] = row
        nodes[0].input[0] = "first"
        nodes.insert(0, helper.make_node("ScatterUpdate", ["data", "zero", "row", "axis"], ["first"], domain="trt_scatter"))
        constants.append(_constant("zero", [0]))
    else:
        nodes = [helper.make_node("ScatterND", ["data", "rows", "row"], ["output"], reduction="add")]
        constants.append(_constant("rows", [[6]]))
    graph = helper.make_graph(nodes, "g", inputs, outputs, constants)
    onnx.save(_model(graph, 18), tmp_path / "m.onnx")
    assert main(["build", str(tmp_path / "m.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *_profile_arguments(profile)]) == 2
    error = capsys.readouterr().err
    assert error.startswith("trt-scatter build: error: in every run the profile allows, as at its largest data and smallest other inputs (") \
        and error.endswith(f"'indices' values must be in [0, 3] for a dimension of size 4 (got {-6 if '-6' in case else 6})\n" if "ScatterND" not in case
                           else "'indices' values must be in [-4, 3] for a dimension of size 4 (got 6)\n"), error
    assert ("): ScatterND node #0 (output 'output'): scatter_nd: " in error) == ("ScatterND" in case), error  # the user's op, not the plugin


@pytest.mark.parametrize("profile, message", [
    ({"data": ((4, 1), (4, 2), (4, 4))}, "input 'data': dimension 0 is 8 in the model, the profile's min shape has 4 (got min [4, 1], opt [4, 2], max [4, 4])"),
    ({"data": ((4, 2),) * 3}, "input 'data': dimension 0 is 8 in the model, the profile's min shape has 4 (got min [4, 2], opt [4, 2], max [4, 2])"),
    ({"data": ((8, 1, 1), (8, 2, 1), (8, 4, 1))}, "input 'data': rank 2 in the model, the profile's shapes have rank 3"),
], ids=["a static dimension", "pinned", "the rank"])
def test_a_profile_the_model_contradicts_is_named_before_its_indices(tmp_path, capsys, profile, message):
    """Row 6 of data [8, N] is valid; a profile of 4 rows contradicts the model, and that is the refusal (the profile check
    put data at the profile's shape and blamed the index)."""
    nodes = [helper.make_node("ScatterUpdate", ["data", "index", "row", "axis"], ["output"], domain="trt_scatter")]
    constants = [onnx.numpy_helper.from_array(np.array([6], np.int64), "index"), onnx.numpy_helper.from_array(np.array([0], np.int64), "axis")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [8, "N"]),
                                           helper.make_tensor_value_info("row", TensorProto.FLOAT, [1, "N"])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [8, "N"])], constants)
    onnx.save(_model(graph), tmp_path / "m.onnx")
    assert main(["build", str(tmp_path / "m.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *_profile_arguments(profile)]) == 2
    assert capsys.readouterr().err == f"trt-scatter build: error: {message}\n"


@pytest.mark.parametrize("held_as", ["Constant node", "initializer", "initializer and input", "ConstantOfShape", "initializer read in a branch"])
def test_an_int8_value_broadcast_into_an_int8_write_builds(tmp_path, capsys, held_as):
    """As PyTorch's exporters write ``cache[i] = 5`` or ``scatter(1, index, 5)`` into an int8 tensor: TensorRT took the int8
    constant that the Expand reads (or a ConstantOfShape makes) for a quantized one ("only allowed before DQ or a
    plugin") and refused the build."""
    five = onnx.numpy_helper.from_array(np.array(5, np.int8), "five")
    nodes = [helper.make_node("Expand", ["five", "shape"], ["rows"]),
             helper.make_node("ScatterUpdate", ["cache", "index", "rows", "axis"], ["output"], domain="trt_scatter")]
    constants = [onnx.numpy_helper.from_array(np.array(values, np.int64), name) for name, values in (("shape", [1, 2]), ("index", [1]), ("axis", [0]))]
    inputs = [helper.make_tensor_value_info("cache", TensorProto.INT8, [3, 2])]
    if held_as == "Constant node":
        nodes.insert(0, helper.make_node("Constant", [], ["five"], value=five))
    elif held_as == "ConstantOfShape":
        nodes[0] = helper.make_node("ConstantOfShape", ["shape"], ["rows"], value=onnx.numpy_helper.from_array(np.array([5], np.int8)))
    else:
        constants.append(five)
        inputs += [helper.make_tensor_value_info("five", TensorProto.INT8, [])] if held_as == "initializer and input" else []
    if held_as.endswith("in a branch"):
        branch = lambda: helper.make_graph([helper.make_node("Expand", ["five", "shape"], ["taken"])], "branch", [],
                                           [helper.make_tensor_value_info("taken", TensorProto.INT8, [1, 2])])
        condition = onnx.numpy_helper.from_array(np.array(True), "condition")
        nodes[0] = helper.make_node("If", ["condition"], ["rows"], then_branch=branch(), else_branch=branch())
        constants.append(condition)
    graph = helper.make_graph(nodes, "g", inputs,
                              [helper.make_tensor_value_info("output", TensorProto.INT8, [3, 2])], constants)
    onnx.save(_model(graph), tmp_path / "m.onnx")
    assert main(["build", str(tmp_path / "m.onnx"), "--plugins", "-o", str(tmp_path / "m.engine")]) == 0, capsys.readouterr().err
    from trt_scatter.engine import _for_the_parser
    from trt_scatter.reference import Reference

    model, cache = onnx.load(tmp_path / "m.onnx"), {"cache": np.arange(6, dtype=np.int8).reshape(3, 2)}
    np.testing.assert_array_equal(Reference(_for_the_parser(model)).run(cache)["output"], Reference(model).run(cache)["output"])


def test_a_loop_whose_condition_is_left_out_builds(tmp_path, capsys):
    """A Loop without its optional ``cond`` input (true, by the spec) whose body passes its condition on, as a Loop
    written for a fixed count does: TensorRT's parser did not register the body's condition input ("Node input was not
    registered") and the build failed. It builds with a constant true condition, which computes the same."""
    from onnx_fixtures import loop_carrying_a_value_named_like_an_input

    from trt_scatter.engine import _for_the_parser
    from trt_scatter.reference import Reference

    model = loop_carrying_a_value_named_like_an_input(body_shape=(2, 5), input_shape=(3, 4), column=4)
    model.graph.node[0].input[1] = ""
    model.graph.input.remove(next(value for value in model.graph.input if value.name == "cond"))
    onnx.save(model, tmp_path / "m.onnx")
    assert main(["build", str(tmp_path / "m.onnx"), "-o", str(tmp_path / "m.engine")]) == 0, capsys.readouterr().err
    feeds = {"n": np.array(3, np.int64), "x0": np.ones((2, 5), np.float32), "data": np.zeros((3, 4), np.float32)}
    np.testing.assert_array_equal(Reference(_for_the_parser(model)).run(feeds)["out"], Reference(model).run(feeds)["out"])


@pytest.mark.parametrize("second_index, message", [
    ([0, 1], "at the one shape the profile gives X [2, 2]: ScatterUpdate node #0 (output 'o1'): scatter_update: 'updates' must have shape "
             "(1, 2) (data.shape[:axis] + indices.shape + data.shape[axis+1:]) (got shape (1, 4))"),
    ([0, 9], "in every run the profile allows, as at its largest data and smallest other inputs (D [2, 8], X [2, 2]): ScatterUpdate node #1 "
             "(output 'o2'): scatter_update: 'indices' values must be in [0, 7] for a dimension of size 8 (got 9)"),
], ids=["a shape rule at a pinned shape", "an index into data whose updates are pinned"])
def test_an_input_the_profile_gives_one_shape_is_checked_as_static(tmp_path, capsys, second_index, message):
    """X is dynamic in the model, but its min and max are one shape: the first write's constant updates (1, 4) never fit
    it (left to the plugin, TensorRT-RTX corrupted its heap where X is another node's updates too), and the second's
    index 9 is out of range of D's 8 columns (X being another node's data left the check off)."""
    updates = np.ones((1, 4 if second_index == [0, 1] else 2), np.float32)
    nodes = [helper.make_node("ScatterUpdate", ["X", "index", "updates", "axis"], ["o1"], domain="trt_scatter"),
             helper.make_node("ScatterUpdate", ["D", "second_index", "X", "axis1"], ["o2"], domain="trt_scatter")]
    constants = [_constant("index", [0]), _constant("axis", [0]), _constant("updates", updates, np.float32), _constant("second_index", second_index),
                 _constant("axis1", [1])]
    graph = helper.make_graph(nodes, "g", [_float("X", [2, "K"]), _float("D", [2, "L"])], [_float("o1", [2, "K"]), _float("o2", [2, "L"])], constants)
    onnx.save(_model(graph), tmp_path / "m.onnx")
    profile = {"X": ((2, 2),) * 3, "D": ((2, 2), (2, 4), (2, 8))}
    assert main(["build", str(tmp_path / "m.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *_profile_arguments(profile)]) == 2
    assert capsys.readouterr().err == f"trt-scatter build: error: {message}\n"


def test_a_pinned_input_with_shapes_declared_at_another_size_builds(tmp_path, capsys):
    """value_info written at the export's size (16) is stale at the one shape the profile gives (8): shape inference
    conflicted with it, and the stale size became the rule that refused a model every run of which is right."""
    nodes = [helper.make_node("Identity", ["cache"], ["copy"]),
             helper.make_node("ScatterUpdate", ["copy", "index", "cache", "axis"], ["output"], domain="trt_scatter")]
    constants = [onnx.numpy_helper.from_array(np.array([0], np.int64), name) for name in ("index", "axis")]
    graph = helper.make_graph(nodes, "g", [_float("cache", [1, "S", 4])], [_float("output", [1, 16, 4])], constants, value_info=[_float("copy", [1, 16, 4])])
    onnx.save(_model(graph), tmp_path / "m.onnx")
    profile = _profile_arguments({"cache": ((1, 8, 4),) * 3})
    assert main(["build", str(tmp_path / "m.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *profile]) == 0, capsys.readouterr().err


@pytest.mark.parametrize("pinned", ["k", "cache"])
def test_a_pinned_input_where_constants_have_declared_shapes_builds(tmp_path, capsys, pinned):
    """PyTorch's dynamo exporter declares its initializers' shapes in value_info: with those dropped too, ONNX's shape
    inference read a Slice's axes as absent, and the wrong updates shape refused a model every run of which is right."""
    nodes = [helper.make_node("Slice", ["k", "zero", "one", "one"], ["row"]),
             helper.make_node("ScatterUpdate", ["cache", "slot", "row", "one"], ["output"], domain="trt_scatter")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cache", TensorProto.FLOAT, [2, "S", 4]),
                                            helper.make_tensor_value_info("k", TensorProto.FLOAT, [2, "T", 4])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [2, "S", 4])],
                              [_constant("zero", [0]), _constant("one", [1]), _constant("slot", [2])],
                              value_info=[helper.make_tensor_value_info(name, TensorProto.INT64, [1]) for name in ("zero", "one", "slot")])
    onnx.save(_model(graph, 18), tmp_path / "m.onnx")
    profile = ({"cache": ((2, 4, 4), (2, 16, 4), (2, 64, 4)), "k": ((2, 3, 4),) * 3} if pinned == "k"
               else {"cache": ((2, 16, 4),) * 3, "k": ((2, 1, 4), (2, 3, 4), (2, 8, 4))})
    assert main(["build", str(tmp_path / "m.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *_profile_arguments(profile)]) == 0, capsys.readouterr().err


def _shape_tensorrt_cannot_bound(op, **attributes):
    """``op``(x (4, 6), indices, updates) whose updates (and, for a reduction, indices) take their shape from a
    ScatterElements on Shape(x), as PyTorch's TorchScript exporter writes index_fill: TensorRT bounds such a dimension by
    INT64_MIN and INT64_MAX, though the run's shape is (2, 6) or (4, 2)."""
    axis = attributes.get("axis", 0)
    reduce = op != "ScatterUpdate"
    nodes = [helper.make_node("Shape", ["x"], ["x_shape"]), helper.make_node("Shape", ["k"], ["k_shape"]),
             helper.make_node("ScatterElements", ["x_shape", "at", "k_shape"], ["shape"]),
             helper.make_node("Expand", ["fill", "shape"], ["updates"])]
    nodes += [helper.make_node("Expand", ["one", "shape"], ["indices"])] if reduce else []
    nodes += [helper.make_node(op, ["x", "indices" if reduce else "k", "updates"] + ([] if reduce else ["axis"]), ["y"], domain="trt_scatter",
                               **({"axis": axis} if reduce else {}))]
    constants = {"at": np.array([axis], np.int64), "fill": np.array(-2.0, np.float32), "one": np.array(1, np.int64),
                 "axis": np.array([axis], np.int64)}
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6]), helper.make_tensor_value_info("k", TensorProto.INT64, [2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 6])],
                              [onnx.numpy_helper.from_array(value, name) for name, value in constants.items() if name != "axis" or not reduce])
    return _model(graph, 18)


def test_a_shape_tensorrt_cannot_bound_is_checked_at_run_time(tmp_path, capsys):
    """The build checked INT64_MAX as the largest updates, and refused a model every run of which is right."""
    onnx.save(_shape_tensorrt_cannot_bound("ScatterUpdate", axis=1), tmp_path / "model.onnx")
    assert main(["build", str(tmp_path / "model.onnx"), "--plugins", "-o", str(tmp_path / "m.engine")]) == 0, capsys.readouterr().err
    assert (tmp_path / "m.engine").stat().st_size > 0


def test_a_reduction_whose_indices_tensorrt_cannot_bound_is_one_line(tmp_path, capsys):
    """Its sort's workspace is sized from the largest indices: from INT64_MAX it was a size no allocation meets (TensorRT
    logged the exception of get_workspace_size and built the engine all the same)."""
    onnx.save(_shape_tensorrt_cannot_bound("ScatterElementsReduce", axis=0), tmp_path / "model.onnx")
    assert main(["build", str(tmp_path / "model.onnx"), "--plugins", "-o", str(tmp_path / "m.engine")]) == 2
    assert capsys.readouterr().err == (
        "trt-scatter build: error: ScatterElementsReduce plugin: TensorRT cannot bound the shape of 'indices' (computed from values, e.g. "
        "by a ScatterElements on a Shape), so the workspace its sort needs cannot be sized: give it a shape TensorRT can bound (a graph "
        "input, a Shape, a Concat of Shape slices)\n")


def test_a_plugin_node_writing_uint8_data_is_one_line(tmp_path, capsys):
    """TensorRT takes uint8 only at a network's inputs and outputs: a byte cache written by ScatterUpdate was refused by
    TensorRT's network check (exit 1, its own words), and an identity layer after the plugin is no way out."""
    import onnx
    from onnx import TensorProto, helper

    node = helper.make_node("ScatterUpdate", ["cache", "pos", "new", "axis"], ["out"], domain="trt_scatter", name="write")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("cache", TensorProto.UINT8, [4, 3]),
                                            helper.make_tensor_value_info("pos", TensorProto.INT64, [1]),
                                            helper.make_tensor_value_info("new", TensorProto.UINT8, [1, 3])],
                              [helper.make_tensor_value_info("out", TensorProto.UINT8, [4, 3])], [helper.make_tensor("axis", TensorProto.INT64, [], [0])])
    onnx.save(_model(graph), tmp_path / "bytes.onnx")
    assert main(["build", str(tmp_path / "bytes.onnx"), "--plugins", "-o", str(tmp_path / "m.engine")]) == 2
    assert capsys.readouterr().err == (f"trt-scatter build: error: {tmp_path / 'bytes.onnx'}: ScatterUpdate node 'write' writes uint8 data, which TensorRT takes only at "
                                       "the network's inputs and outputs, and there only from an identity or a cast, not a plugin: keep the tensor as int8 (the same bytes)\n")


def test_a_profile_whose_smallest_data_is_empty_is_refused_with_the_rule_before_tensorrt_runs(tmp_path, capsys):
    """Three ScatterND reductions (served by the plugin) and at least one index row into data of 0 rows: the plugin's rule
    refuses it, and with three such nodes TensorRT-RTX aborted the build process after the plugin's refusal, so the
    command said only that TensorRT crashed. The profile is checked against the plugins' rules first."""
    nodes = [helper.make_node("ScatterND", ["x", "indices", "updates"], [f"y{k}"], reduction=reduction) for k, reduction in enumerate(("add", "mul", "add"))]
    graph = helper.make_graph(nodes, "g", [_float("x", ["N", 4]), helper.make_tensor_value_info("indices", TensorProto.INT64, ["E", 1]),
                                           _float("updates", ["E", 4])], [_float(f"y{k}", ["N", 4]) for k in range(3)])
    onnx.save(_model(graph), tmp_path / "m.onnx")
    profile = {"x": ((0, 4), (8, 4), (64, 4)), "indices": ((1, 1), (16, 1), (256, 1)), "updates": ((1, 4), (16, 4), (256, 4))}
    assert main(["build", str(tmp_path / "m.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *_profile_arguments(profile)]) == 2
    assert capsys.readouterr().err == ("trt-scatter build: error: the profile's smallest shapes break a plugin's rule: ScatterND node #0 (output 'y0'), "
                                       "input shapes [(0, 4), (1, 1), (1, 4)]: scatter_nd_reduce: 'indices' must be empty: data's "
                                       "dimension 0 has size 0, so no index is in range (got shape (1, 1))\n")


def test_a_profile_that_gives_one_named_dimension_two_sizes_is_named_so_before_any_plugin_rule(tmp_path, capsys):
    """Cache and new tokens both name their batch 'B', and --min gives them 1 and 2: the plugin's rule breaks there too,
    but the profile's own mistake is the one to name."""
    node = helper.make_node("CacheScatter", ["cache", "new"], ["out"], domain="trt_scatter", axis=-2)
    graph = helper.make_graph([node], "g", [_float("cache", ["B", 2, 16, 4]), _float("new", ["B", 2, "L", 4])], [_float("out", ["B", 2, 16, 4])])
    onnx.save(_model(graph), tmp_path / "m.onnx")
    profile = {"cache": ((1, 2, 16, 4), (2, 2, 16, 4), (4, 2, 16, 4)), "new": ((2, 2, 1, 4), (2, 2, 4, 4), (4, 2, 16, 4))}
    assert main(["build", str(tmp_path / "m.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *_profile_arguments(profile)]) == 2
    assert capsys.readouterr().err == ("trt-scatter build: error: dimension 'B' is 1 in cache's --min shape [1, 2, 16, 4] and 2 in new's "
                                       "[2, 2, 1, 4]: the model names both 'B', so they must be equal\n")


def test_opt_shapes_that_break_a_plugins_rule_are_refused(tmp_path, capsys):
    """Updates no wider than data: the profile's smallest (1 and 1 columns) and largest (2 and 2) keep the rule, its opt
    (2 columns into 1) breaks it. TensorRT checks plugins at the bounds only and built an engine tuned for shapes the
    plugin refuses in every run."""
    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model(("N", "W"), [0], [1], [1], axes=[1])
    model.graph.input[1].type.tensor_type.shape.dim[1].dim_param = "U"
    onnx.save(model, tmp_path / "model.onnx")
    profile = {"data": ((1, 1), (2, 1), (4, 2)), "updates": ((1, 1), (2, 2), (4, 2))}
    assert main(["build", str(tmp_path / "model.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *_profile_arguments(profile)]) == 2
    assert capsys.readouterr().err == ("trt-scatter build: error: the profile's opt shapes break a plugin's rule: SliceScatter node 'SliceScatter_4', "
                                       "input shapes [(2, 1), (2, 2), (1,), (1,), (1,), (1,)]: slice_scatter: 'updates' dimension 1 must be "
                                       "at most data's (1) to be a slice of it (got 2)\n")


@pytest.mark.parametrize("columns, message", [
    (2, "the profile's opt shapes break a plugin's rule: SliceScatter node 'SliceScatter_4', input shapes [(2, 8), (2, 2), (1,), (1,), "
        "(1,), (1,)]: slice_scatter: 'updates' must have shape (2, 4) (data's shape with each sliced axis cut to its slice's length; "
        "axis 1's slice (start 0, stop 4, step 1) takes 4 of its 8) (got shape (2, 2))"),
    (4, None),
], ids=["updates-unlike-the-slice-at-every-bound", "updates-like-the-slice"])
def test_constant_slices_that_a_profiles_updates_never_fit_are_refused(tmp_path, capsys, columns, message):
    """A slice of constant bounds, 4 columns wide in every run the profile allows, and updates of 2 columns: the plugin
    would write nothing in every run (it checks the slice's shape as it runs), and the build said nothing. The command and
    build_engine refuse the profile at its opt shapes, the runs the engine is tuned to."""
    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model(("B", "N"), [0], [4], [1], axes=[1], updates_shape=("B", "K"))
    onnx.save(model, tmp_path / "model.onnx")
    profile = {"data": ((1, 8), (2, 8), (4, 8)), "updates": ((1, columns), (2, columns), (4, columns))}
    code = main(["build", str(tmp_path / "model.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *_profile_arguments(profile)])
    assert (code, capsys.readouterr().err) == ((2, f"trt-scatter build: error: {message}\n") if message else (0, ""))
    if message:
        with pytest.raises(ValueError) as refused:
            engine.build_engine(engine.network_from_onnx(model, plugins=True), profile)
        assert str(refused.value) == message


@pytest.mark.parametrize("data, message", [
    (([8, 5], [4, 5], [1, 5]), "input 'data' needs min <= opt <= max of equal rank, got [8, 5], [4, 5], [1, 5]"),
    (([1, 5], [4, 5]), "input 'data': a profile gives (min, opt, max), three shapes, or for an input whose values set shapes three lists "
                       "of values (got ([1, 5], [4, 5]))"),
    (([-1, 5], [2, 5], [4, 5]), "input 'data': a profile's dimensions are sizes, at least 0 (got min [-1, 5], opt [2, 5], max [4, 5])"),
    (([1, 5], [2.5, 5], [4, 5]), "input 'data': a profile's shapes hold integers (got [1, 5], [2.5, 5], [4, 5])"),
    ((1, 4, 8), "input 'data': a profile gives (min, opt, max), three shapes, or for an input whose values set shapes three lists of values "
                "(got (1, 4, 8))"),
    (([1, 5], [4, 5], [2**31, 5]), "input 'data': the profile's max shape has more than 2147483647 elements, TensorRT's most for one "
                                   "tensor (got min [1, 5], opt [4, 5], max [2147483648, 5])"),
], ids=["min above max", "two shapes", "a negative size", "a float", "three numbers", "past 2**31 - 1 elements"])
def test_build_engine_refuses_a_profile_it_cannot_use_in_one_line(data, message):
    """What the command line's parser refuses, build_engine refuses from Python too: polygraphy said "Profile is not
    valid" with the object's address, an unpacking error, or that min was "inconsistent with other shapes"."""
    from trt_scatter.networks import add_slice_scatter

    def network():
        trt = backend.tensorrt()
        builder = backend.new_builder()
        net = builder.create_network(0)
        out = add_slice_scatter(net, net.add_input("data", trt.float32, (-1, 5)), net.add_input("updates", trt.float32, (-1, 3)), [0], [5], [2], [1])
        net.mark_output(out)
        return builder, net

    with pytest.raises(ValueError) as refused:
        engine.build_engine(network, {"data": data, "updates": ([1, 3], [2, 3], [4, 3])})
    assert str(refused.value) == message


@pytest.mark.parametrize("profile, message", [
    ({"data": ([8, 5], [4, 5], [1, 5])}, "input 'data' needs min <= opt <= max of equal rank, got [8, 5], [4, 5], [1, 5]"),
    ({"data": ([1, 5], [4, 5])}, "input 'data': a profile gives (min, opt, max), three shapes"),
    ({"data": "1x1"}, "input 'data': a profile gives (min, opt, max), three shapes"),
], ids=["min above max", "two shapes", "a string"])
def test_an_examples_profile_is_held_to_its_own_rules_before_the_examples(profile, message):
    """network_from_example checked the relations between an example's inputs first: a min above max for data was reported
    as updates needing shapes of their own, and a string failed comparing it with an int."""
    with pytest.raises(ValueError) as refused:
        engine.network_from_example("slice_scatter", profile, dynamic=True)
    assert str(refused.value).startswith(message)


@pytest.mark.parametrize("params, message", [
    (dict(data_shape=(2, -5)), "example 'slice_scatter': data_shape is a shape, a sequence of sizes (integers, at least 0) (got (2, -5))"),
    (dict(data_shape="2,5"), "example 'slice_scatter': data_shape is a shape, a sequence of sizes (integers, at least 0) (got '2,5')"),
    (dict(data_shape=(2, 5.0)), "example 'slice_scatter': data_shape is a shape, a sequence of sizes (integers, at least 0) (got (2, 5.0))"),
    (dict(dtype="float33"), "example 'slice_scatter': dtype 'float33' is not a NumPy element type"),
], ids=["a negative size", "a string", "a float", "no element type"])
def test_an_examples_parameters_are_named_where_they_are_wrong(params, message):
    """A negative size ended in 'data' must be an ITensor (got NoneType), after TensorRT's own error; a string in a
    comparison of str and int; a float in pybind's list of signatures; a dtype in NumPy's TypeError."""
    with pytest.raises(ValueError) as refused:
        engine.build_engine(engine.network_from_example("slice_scatter", {}, **params))
    assert str(refused.value) == message


def test_build_engine_names_its_arguments_mistakes(tmp_path):
    """A model where a loader belongs, a folder as the timing cache, an example's profile left out: one line each, naming
    the argument (a TypeError that the object is not callable; polygraphy's IsADirectoryError from deep inside)."""
    with pytest.raises(TypeError, match=r"^build_engine: load_network is a network loader, such as network_from_onnx\(model\) .*\(got ModelProto\)$"):
        engine.build_engine(fx.slice_scatter_model((4, 6), [0], [4], [2], [1]))
    with pytest.raises(ValueError, match=r"^timing_cache '.*' is not a regular file: it is read, then written: give a file path$"):
        engine.build_engine(engine.network_from_example("slice_scatter", {}), timing_cache=tmp_path)
    with pytest.raises(ValueError, match=r"^dynamic input\(s\) .* need --min/--opt/--max shapes \(from Python: \(min, opt, max\) for each in "
                       r"profile_shapes; for an example network, pass build_engine the dict given to network_from_example, which its "
                       r"loader fills in\)$"):
        engine.build_engine(engine.network_from_example("slice_scatter", {}, dynamic=True), {})
    with pytest.raises(ValueError, match=r"^timing_cache '.*/missing/t.cache': its folder does not exist, and the timing cache is saved there"):
        engine.build_engine(engine.network_from_example("slice_scatter", {}), timing_cache=tmp_path / "missing" / "t.cache")
    with pytest.raises(TypeError, match=r"^build_engine: timing_cache is a file path \(got int\)$"):
        engine.build_engine(engine.network_from_example("slice_scatter", {}), timing_cache=3)
    with pytest.raises(TypeError, match=r"^build_engine: profile_shapes maps input names to \(min, opt, max\) shapes \(got str\)$"):
        engine.build_engine(engine.network_from_example("slice_scatter", {}), "x")
    assert not (tmp_path / "missing").exists()
    with pytest.raises(ValueError, match=r"^graph '' has no outputs: nothing would be computed"):  # was TensorRT's error, then polygraphy's
        engine.network_from_onnx(onnx.ModelProto())


@pytest.mark.parametrize("op, inputs, plugins, message", [
    ("SliceScatter", dict(data=((4, 5), np.float32), updates=((4, 3), np.float32), start=np.array([0]), stop=np.array([5]),
                          step=np.array([0]), axes=np.array([1])), True,
     "SliceScatter node #0 (output 'output'): slice_scatter: 'step' must not contain 0 (got [0])"),
    ("ScatterUpdate", dict(data=((4, 3), np.float32), indices=np.array([0, 7]), updates=((2, 3), np.float32), axis=np.array(0)), True,
     "ScatterUpdate node #0 (output 'output'): scatter_update: 'indices' values must be in [0, 3] for a dimension of size 4 (got 7)"),
    ("ScatterElements", dict(data=((4, 3), np.float32), indices=np.array([[4, 0, 1]]), updates=((1, 3), np.float32)), False,
     "ScatterElements node #0 (output 'output'): scatter_elements: 'indices' values must be in [-4, 3] for a dimension of size 4 (got 4)"),
], ids=["plugin-step-0", "plugin-index", "tensorrt-layer-index"])
def test_network_from_onnx_validates_the_model_as_the_commands_do(op, inputs, plugins, message):
    """From Python, a model the commands refuse built into an engine that skipped its writes (the plugins), or one whose
    TensorRT scatter layer reads an index out of range (it checks none when it runs): network_from_onnx validates it."""
    from trt_scatter.passes.validate import ModelError

    with pytest.raises(ModelError) as refused:
        engine.network_from_onnx(onnx_models.node_model(ops.OPS.get(op) or ops.STANDARD_OPS[op], inputs), plugins=plugins)
    assert str(refused.value) == message


def test_a_refusal_before_tensorrt_aborts_the_build_is_the_line_not_the_crash(tmp_path, capsys):
    """global_mean_pool as the dynamo exporter writes it: two reductions into data sized by a value (the largest graph
    index + 1), which TensorRT cannot bound, so the sort's workspace cannot be sized. The plugin refuses it, and with two
    such nodes TensorRT-RTX then aborts the build process: the command said only that TensorRT crashed (SIGABRT)."""
    onnx.save(plugin_models.mean_pool_model(), tmp_path / "pool.onnx")
    profile = {"x": ((1, 4), (100, 4), (1000, 4)), "batch": ((1,), (100,), (1000,))}
    assert main(["build", str(tmp_path / "pool.onnx"), "--plugins", "-o", str(tmp_path / "pool.engine"), *_profile_arguments(profile)]) == 2
    err = capsys.readouterr().err
    assert err.startswith("trt-scatter build: error: ScatterNDReduce plugin: TensorRT cannot bound the shape of 'data'") and err.count("\n") == 1, err


def test_a_timing_cache_that_is_no_regular_file_is_refused_before_the_build(tmp_path, capsys):
    """The cache is read before it is written: /dev/zero (or a fifo) never ends, and the build was killed after half a minute
    with 'TensorRT crashed (SIGKILL)'."""
    assert main(["build", "slice_scatter", "--out-dir", str(tmp_path), "--timing-cache", "/dev/zero"]) == 2
    assert capsys.readouterr().err == ("trt-scatter build: error: --timing-cache '/dev/zero' is not a regular file: it is read, then written: "
                                       "give a file path\n")
    assert not list(tmp_path.iterdir())


def test_an_examples_engines_in_other_types_have_names_of_their_own(tmp_path, capsys):
    """`build scatter_update --dynamic --dtype float16` replaced the float32 engine `build --all` had written under the same name."""
    for flags in ([], ["--dtype", "float16"], ["--dtype", "float16", "--index-dtype", "int64"], ["--dtype", "float32", "--index-dtype", "int32"]):
        assert main(["build", "scatter_update", "--dynamic", "--out-dir", str(tmp_path), *flags]) == 0, capsys.readouterr()
    assert sorted(path.name for path in tmp_path.iterdir()) == ["scatter_update_dynamic.engine", "scatter_update_dynamic_float16.engine",
                                                                "scatter_update_dynamic_float16_int64_indices.engine"]


@pytest.mark.parametrize("values, given", [("[0,1]", 2), ("[]", 0)])
def test_an_input_that_sets_shapes_gets_one_value_per_element(tmp_path, capsys, values, given):
    """pos (int64 [1]) takes one value: two of them (or none) went to TensorRT, which failed in its own words (Error Code 4,
    exit 1) or polygraphy's ('inconsistent with other inputs'), neither naming the rule."""
    _shape_setting_model(tmp_path / "shape.onnx")
    x = ["--min", "x:[1,3]", "--opt", "x:[2,3]", "--max", "x:[4,3]"]
    flags = ["--min", f"pos:{values}", "--opt", f"pos:{values}", "--max", f"pos:{values}"]
    assert main(["build", str(tmp_path / "shape.onnx"), "--out-dir", str(tmp_path), *flags, *x]) == 2
    assert capsys.readouterr().err == (f"trt-scatter build: error: input 'pos': its values set shapes, so --min/--opt/--max give its values, one "
                                       f"for each of its 1 element (shape (1,)): --min gives {given}\n")


def test_a_negative_profile_number_is_named_for_what_it_is(tmp_path, capsys):
    """A negative dimension was refused as if the flag were mistyped ('is not NAME:[D,...]'); it is a size below 0. A negative
    value of an input whose values set shapes (a position counted from the end) is a value like any other."""
    _shape_setting_model(tmp_path / "shape.onnx")
    flags = ["--min", "x:[-1,3]", "--opt", "x:[2,3]", "--max", "x:[4,3]", "--min", "pos:[-2]", "--opt", "pos:[3]", "--max", "pos:[9]"]
    assert main(["build", str(tmp_path / "shape.onnx"), "--out-dir", str(tmp_path), *flags]) == 2
    assert capsys.readouterr().err == ("trt-scatter build: error: input 'x': a profile's dimensions are sizes, at least 0 (got min [-1, 3], "
                                       "opt [2, 3], max [4, 3])\n")
    flags[1] = "x:[1,3]"
    assert main(["build", str(tmp_path / "shape.onnx"), "--out-dir", str(tmp_path), *flags]) == 0, capsys.readouterr()
    # An example network: the size is named before the example's relations between its inputs (updates' from data's)
    assert main(["build", "scatter_update", "--dynamic", "--out-dir", str(tmp_path), "--min", "data:[-1,5]", "--opt", "data:[2,5]", "--max", "data:[4,5]"]) == 2
    assert capsys.readouterr().err == ("trt-scatter build: error: input 'data': a profile's dimensions are sizes, at least 0 (got min [-1, 5], "
                                       "opt [2, 5], max [4, 5])\n")


def test_an_onnx_op_this_tensorrt_builds_only_with_a_plugin_it_lacks_is_said_to_be_onnxs(tmp_path, capsys):
    """TensorRT-RTX's parser builds NonZero (PyG's add_remaining_self_loops exports one) with a plugin it does not have, in
    words that read as if a trt-scatter plugin were missing: a note says that the op is ONNX's own."""
    if not backend.is_rtx():
        pytest.skip("full TensorRT builds NonZero (INonZeroLayer)")
    nodes = [helper.make_node("NonZero", ["x"], ["where"]), helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"])]
    graph = helper.make_graph(nodes, "g", [fx.info("x", (4,), np.float32), fx.info("data", (4,), np.float32), fx.info("indices", (2,), np.int64),
                                           fx.info("updates", (2,), np.float32)],
                              [fx.info("output", (4,), np.float32), helper.make_tensor_value_info("where", TensorProto.INT64, None)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "nonzero.onnx")
    assert main(["build", str(tmp_path / "nonzero.onnx"), "-o", str(tmp_path / "nonzero.engine")]) == 1
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "NonZero plugin creator version 1 was not found" in err, err
    assert err.endswith(" (NonZero is ONNX's own op, not trt-scatter's: this TensorRT-RTX builds it only with a plugin it does not have, "
                        "so the model cannot be built here as it is)\n")


def test_a_missing_trt_scatter_plugin_gets_no_note_of_onnxs_ops():
    from trt_scatter.cli.common import _foreign_plugin_note

    words = "In node 0 with name: n and operator: {0} ({1}): {0} plugin creator version 1 was not found"
    assert _foreign_plugin_note(words.format("SliceScatter", "importFallbackPluginImporter")) == ""
    assert _foreign_plugin_note(words.format("Foo", "importFallbackPluginImporter")) == ""  # a custom op: no importer of the parser's own
    assert _foreign_plugin_note(words.format("Unique", "importUnique")).startswith(" (Unique is ONNX's own op, not trt-scatter's")


@pytest.mark.parametrize("mode, whose", [("linear", "the op"), ("circular", "a plugin")])
def test_a_tensor_scatter_tensorrts_own_layer_builds_is_held_to_its_shape_rules_at_the_bounds(tmp_path, capsys, mode, whose):
    """ONNX's TensorScatter in the form TensorRT's importer takes (linear, axis -2, 4-D) was not checked at the profile's
    bounds, where the circular one (served by the plugin) was: three constant write indices for a batch of 1 to 4 built."""
    node = helper.make_node("TensorScatter", ["past_cache", "update", "write_indices"], ["output"], mode=mode)
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("past_cache", TensorProto.FLOAT, ["B", 3, 8, 4]),
                                            helper.make_tensor_value_info("update", TensorProto.FLOAT, ["B", 3, 2, 4])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, ["B", 3, 8, 4])],
                              [onnx.numpy_helper.from_array(np.array([1, 0, 2]), "write_indices")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    model.ir_version = 10
    onnx.save(model, tmp_path / "cache.onnx")
    profile = {"past_cache": ((1, 3, 8, 4), (3, 3, 8, 4), (4, 3, 8, 4)), "update": ((1, 3, 2, 4), (3, 3, 2, 4), (4, 3, 2, 4))}
    assert main(["build", str(tmp_path / "cache.onnx"), "--plugins", "-o", str(tmp_path / "c.engine"), *_profile_arguments(profile)]) == 2
    assert capsys.readouterr().err == (f"trt-scatter build: error: the profile's smallest shapes break {whose}'s rule: TensorScatter node #0 "
                                       "(output 'output'), input shapes [(1, 3, 8, 4), (1, 3, 2, 4), (3,)]: tensor_scatter: 'write_indices' must "
                                       "have shape (1,) (one write index per batch row: (batch_size,)) (got shape (3,))\n")
    three = {name: (shapes[1],) * 3 for name, shapes in profile.items()}  # a batch of 3: every run fits
    assert main(["build", str(tmp_path / "cache.onnx"), "--plugins", "-o", str(tmp_path / "c.engine"), *_profile_arguments(three)]) == 0


@pytest.mark.parametrize("name, profile, message", [
    ("scatter_elements", {"data": ((1, 3, 4, 5), (1, 3, 4, 5), (2, 6, 8, 10)), "indices": ((1, 3, 4, 5), (1, 3, 4, 5), (2, 6, 8, 11)),
                          "updates": ((1, 3, 4, 5), (1, 3, 4, 5), (2, 6, 8, 11))},
     "the --max shapes (data [2, 6, 8, 10], indices [2, 6, 8, 11], updates [2, 6, 8, 11]) break the scatter_elements example's rule: "
     "scatter_elements: 'indices' dimension 3 must be at most data's (10) off the axis (got shape (2, 6, 8, 11))"),
    ("scatter_nd", {"data": ((0,), (4,), (8,)), "indices": ((2, 1),) * 3, "updates": ((2,),) * 3},
     "the --min shapes (data [0], indices [2, 1], updates [2]) break the scatter_nd example's rule: scatter_nd: 'indices' must be empty: "
     "data's dimension 0 has size 0, so no index is in range (got shape (2, 1))"),
    ("scatter_update", {"data": ((3, 0), (3, 4), (3, 8)), "indices": ((2,),) * 3},
     "the --min shapes (data [3, 0], indices [2]; built-in: updates [3, 2]) break the scatter_update example's rule: scatter_update: "
     "'indices' must be empty: data's dimension 1 has size 0, so no index is in range (got shape (2,))"),
    ("scatter_elements", {"data": ((1, 3, 4, 5), (1, 3, 4, 5), (2, 6, 8, 10)), "indices": ((1, 3, 4, 5), (1, 3, 4, 5), (2, 6, 9, 10)),
                          "updates": ((1, 3, 4, 5), (1, 3, 4, 5), (2, 6, 9, 10))},
     "the --max shapes (data [2, 6, 8, 10], indices [2, 6, 9, 10], updates [2, 6, 9, 10]) break the scatter_elements example's rule: "
     "scatter_elements: 'indices' dimension 2 (the axis) must be at most data's (8) in TensorRT's IScatterLayer, which ONNX allows only "
     "with repeated targets (got shape (2, 6, 9, 10))"),
], ids=["elements wider than data at max", "nd rows into 0 rows", "update indices into 0 columns", "elements wider on the axis at max"])
def test_an_examples_profile_is_held_to_the_oracles_shape_rules_at_each_bound(tmp_path, capsys, name, profile, message):
    """Only the slice_scatter example checked the oracle's rules at the bounds: these built (exit 0), TensorRT saying in a
    warning, shown with -v alone, that the profile was not self-consistent."""
    assert main(["build", name, "--dynamic", "-o", str(tmp_path / "e.engine"), *_profile_arguments(profile)]) == 2
    assert capsys.readouterr().err == f"trt-scatter build: error: {message}\n"
    assert not (tmp_path / "e.engine").exists()


@pytest.mark.parametrize("name, params, message", [
    ("scatter_elements", dict(indices_shape=()), "scatter_elements: 'indices' must have the rank of 'data' (4) (got shape ())"),
    ("scatter_nd", dict(indices_shape=()), "scatter_nd: 'indices' must have rank >= 1 (got shape ())"),
    ("scatter_update", dict(data_shape=()), "scatter_update: 'data' must have rank >= 1 (got shape ())"),
])
def test_an_examples_parameters_of_rank_0_are_named_for_what_they_are(name, params, message):
    """indices_shape=() was read as data's shape (and then refused for its axis), an IndexError, an axis range [0, -1]."""
    with pytest.raises(ValueError) as refused:
        engine.network_from_example(name, {}, **params)()
    assert str(refused.value) == message


@plugin_models.forked
def test_plugin_nodes_that_leave_attributes_out_build_without_the_parsers_warnings(capfd):
    """TensorRT's parser warned, for each attribute a trt_scatter node leaves to its default, "Attribute include_self not
    found in plugin node! ... the engine may fail to build": the plugins' defaults are the op's, so nothing was wrong.
    The parser is given the defaults."""
    node = helper.make_node("ScatterElementsReduce", ["data", "indices", "updates"], ["output"], domain=ops.DOMAIN, reduction="max")
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 3]),
                                            helper.make_tensor_value_info("indices", TensorProto.INT64, [2, 3]),
                                            helper.make_tensor_value_info("updates", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [4, 3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(ops.DOMAIN, 1)])
    capfd.readouterr()
    plan = engine.build_engine(engine.network_from_onnx(model, plugins=True), {})
    output = "".join(capfd.readouterr())
    assert plan and "not found in plugin node" not in output, output
    assert list(model.graph.node[0].attribute) == [helper.make_attribute("reduction", "max")]  # the user's model is left as it was


@pytest.mark.parametrize("profile", [
    {"data": ((1, 1), (2, 5), (4, 9)), "updates": ((1, 1), (2, 4), (4, 8))},  # at the smallest, a slice of 0 columns and updates of 1
    {"data": ((1, 2), (2, 5), (4, 9)), "updates": ((1, 1), (2, 4), (4, 4))},  # at the largest, a slice of 8 columns and updates of 4
], ids=["smallest", "largest"])
def test_a_slice_whose_length_follows_data_is_not_refused_where_bounds_alone_break_its_rule(tmp_path, capsys, profile):
    """data[:, 0:-1] is one column shorter than data: updates fit at opt (4 of 5) and in the runs of equal growth, though
    the bounds taken alone (a smallest data of 1 column, updates of 1) break the rule. The engine builds."""
    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model(("B", "N"), [0], [-1], [1], axes=[1], updates_shape=("B", "K"))
    onnx.save(model, tmp_path / "model.onnx")
    code = main(["build", str(tmp_path / "model.onnx"), "--plugins", "-o", str(tmp_path / "m.engine"), *_profile_arguments(profile)])
    assert (code, capsys.readouterr().err) == (0, "")


def test_a_profile_names_inputs_whose_names_hold_colons_and_spaces(tmp_path, capsys):
    """TensorFlow's exports name inputs ``input:0``: the name is everything before the last ':', as ``check --input-shapes``
    reads it, and spaces inside it are kept (they were dropped, so 'my data' named no input)."""
    shape = ["n", 3]
    names = ["input:0", "my data", "updates"]
    inputs = [helper.make_tensor_value_info(names[0], TensorProto.FLOAT, shape), helper.make_tensor_value_info(names[1], TensorProto.INT64, shape),
              helper.make_tensor_value_info(names[2], TensorProto.FLOAT, shape)]
    node = helper.make_node("ScatterElements", names, ["output"], axis=1)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "names.onnx")
    flags = [word for flag, n in (("--min", 1), ("--opt", 2), ("--max", 4)) for word in (flag, *(f"{name}:[{n}, 3]" for name in names))]
    assert main(["build", str(tmp_path / "names.onnx"), "-o", str(tmp_path / "names.engine"), *flags]) == 0, capsys.readouterr().err
    flags[1] = "input:0[1,3]"
    assert main(["build", str(tmp_path / "names.onnx"), "-o", str(tmp_path / "names.engine"), *flags]) == 2
    assert capsys.readouterr().err == "trt-scatter build: error: --min 'input:0[1,3]' is not NAME:[D,...] (e.g. data:[1,3,4,5])\n"


def test_an_input_of_more_dimensions_than_tensorrt_has_is_named(tmp_path, capsys):
    """TensorRT's tensors have at most Dims.MAX_DIMS (8) dimensions: a rank-9 input failed the build in the parser's
    words ("convertOnnxDims ... Failed to convert ONNX dimensions"), exit 1 as if TensorRT had failed a valid model."""
    shape = [2] * 9
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT if name != "indices" else TensorProto.INT64, shape)
              for name in ("data", "indices", "updates")]
    graph = helper.make_graph([helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"])], "g", inputs,
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "rank9.onnx")
    assert main(["build", str(tmp_path / "rank9.onnx"), "-o", str(tmp_path / "e.engine")]) == 2
    assert capsys.readouterr().err == ("trt-scatter build: error: input 'data' has 9 dimensions, and TensorRT's tensors have at most 8 "
                                       "(shape [2, 2, 2, 2, 2, 2, 2, 2, 2])\n")
    flat = [2 ** 9]  # a rank-9 output of rank-1 inputs
    inputs = [helper.make_tensor_value_info(name, TensorProto.FLOAT if name != "indices" else TensorProto.INT64, flat) for name in ("data", "indices", "updates")]
    nodes = [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["written"]), helper.make_node("Reshape", ["written", "shape"], ["output"])]
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)],
                              [onnx.numpy_helper.from_array(np.array(shape, np.int64), "shape")])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "out9.onnx")
    assert main(["build", str(tmp_path / "out9.onnx"), "-o", str(tmp_path / "e.engine")]) == 2
    assert capsys.readouterr().err == ("trt-scatter build: error: output 'output' has 9 dimensions, and TensorRT's tensors have at most 8 "
                                       "(shape [2, 2, 2, 2, 2, 2, 2, 2, 2])\n")


def test_the_help_names_every_example_network(capsys):
    """The examples are named in build's help (from the registry of examples: a new one must be added there too)."""
    from trt_scatter.networks.examples import EXAMPLES

    with pytest.raises(SystemExit):
        main(["build", "--help"])
    line = next(line for line in capsys.readouterr().out.splitlines() if line.startswith("The example networks: "))
    assert line.split(": ", 1)[1].split(" (")[0].split(", ") == sorted(EXAMPLES)


def test_build_engines_timing_cache_that_tensorrt_read_is_replaced_through_a_link(tmp_path, monkeypatch):
    """Where TensorRT read the cache (a GPU machine; here its reading is taken as read), the new cache replaces the
    file a link names, the link kept: it was written over the link, from a temporary folder that may be on another
    device (os.replace moves no file across devices)."""
    from trt_scatter.engine import build_engine, network_from_example

    monkeypatch.setattr(engine, "timing_cache_unread", lambda heard: None)
    (tmp_path / "caches").mkdir()
    target = tmp_path / "caches" / "real.cache"
    target.write_bytes(b"an old cache")
    link = tmp_path / "link.cache"
    link.symlink_to(target)
    build_engine(network_from_example("slice_scatter", {}), timing_cache=link)
    assert link.is_symlink() and target.read_bytes() != b"an old cache" and target.stat().st_size > 0
    assert not [path for path in (tmp_path / "caches").iterdir() if path.is_dir()]  # no temporary folder left


def _cache_at_a_position_input():
    """A KV cache of 16 rows written at rows [pos, pos + T) of an input pos, the update cut to the rows left (Min):
    pos sets shapes in the network (a slice of length Min(pos + T, 16) - pos, negative past the cache)."""
    const = lambda name, values: onnx.numpy_helper.from_array(np.array(values, np.int64), name)  # noqa: E731
    nodes = [helper.make_node("Shape", ["new"], ["shape"]), helper.make_node("Gather", ["shape", "one"], ["t"], axis=0),
             helper.make_node("Add", ["pos", "t"], ["stop"]), helper.make_node("Min", ["stop", "rows"], ["kept"]),
             helper.make_node("Sub", ["kept", "pos"], ["length"]), helper.make_node("Concat", ["one", "length", "eight"], ["updates_shape"], axis=0),
             helper.make_node("Expand", ["new", "updates_shape"], ["updates"]),
             helper.make_node("SliceScatter", ["cache", "updates", "pos", "stop", "one", "one"], ["out"], domain="trt_scatter")]
    graph = helper.make_graph(nodes, "kv", [fx.info("cache", (1, 16, 8), np.float32), fx.info("new", (1, "T", 8), np.float32), fx.info("pos", (1,), np.int64)],
                              [fx.info("out", (1, 16, 8), np.float32)], [const("one", [1]), const("eight", [8]), const("rows", [16])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("trt_scatter", 1)])


@pytest.mark.parametrize("highest, message", [
    (20, "the profile's largest shapes break a rule of the network: "),
    (15, None),
])
def test_a_position_range_past_the_cache_is_refused_in_an_onnx_models_build(tmp_path, highest, message):
    """TensorRT logs a rule a profile's bound breaks through the logger of the builder that made the network: for a
    network of TensorRT's ONNX parser, polygraphy's, which build_engine did not read, so pos up to 20 into a cache of
    16 built without a word (TensorRT-RTX only warns). The rule now ends the build in one line, as for the builders'
    networks."""
    onnx.save(_cache_at_a_position_input(), tmp_path / "kv.onnx")

    @plugin_models.forked
    def build():
        from trt_scatter.engine import build_engine, network_from_onnx

        profile = {"new": ((1, 1, 8),) * 3, "pos": ((0,), (5,), (highest,))}
        if message is None:
            assert build_engine(network_from_onnx(tmp_path / "kv.onnx", plugins=True), profile)[0]
            return
        with pytest.raises(ValueError) as refused:
            build_engine(network_from_onnx(tmp_path / "kv.onnx", plugins=True), profile)
        assert str(refused.value).startswith(message) and "ISliceLayer" in str(refused.value) and "\n" not in str(refused.value), str(refused.value)

    build()


@pytest.mark.parametrize("depth", ["main graph", "in a Loop body"])
def test_a_loops_condition_that_a_graph_input_gives_keeps_the_inputs_name(depth):
    """A Loop whose ``cond`` is a graph input: TensorRT-RTX's parser named the network's input after the body's condition
    input ("c", not "cond"), so the engine had no input of the model's name to feed. The Loop reads it through an
    Identity, which computes the same; the network's inputs are the model's."""
    from onnx_fixtures import loop_carrying_a_value_named_like_an_input

    from trt_scatter.engine import _for_the_parser
    from trt_scatter.reference import Reference

    model = loop_carrying_a_value_named_like_an_input(body_shape=(2, 5), input_shape=(3, 4), column=4)
    if depth == "in a Loop body":  # the Loop inside a one-iteration Loop whose body carries x0 through it
        inner = model.graph.node[0]
        value = helper.make_tensor_value_info
        outer_body = helper.make_graph([helper.make_node("Identity", ["oc"], ["oc2"]), inner], "outer",
                                       [value("oi", TensorProto.INT64, []), value("oc", TensorProto.BOOL, [])], [value("oc2", TensorProto.BOOL, []),
                                                                                                              value("out", TensorProto.FLOAT, [2, 5])])
        one = onnx.numpy_helper.from_array(np.array(1, np.int64), "one")
        model.graph.initializer.append(one)
        model.graph.node[0].CopyFrom(helper.make_node("Loop", ["one", "", ], ["out_scan"], body=outer_body))
        model.graph.node.append(helper.make_node("Squeeze", ["out_scan", "zero"], ["out"]))
        model.graph.initializer.append(onnx.numpy_helper.from_array(np.array([0], np.int64), "zero"))
    onnx.checker.check_model(model, full_check=True)
    _, network, _ = engine.network_from_onnx(model)()
    assert sorted(network.get_input(i).name for i in range(network.num_inputs)) == sorted(v.name for v in model.graph.input if v.name != "one" and v.name != "zero")
    for cond in (True, False):
        feeds = {"n": np.array(3, np.int64), "cond": np.array(cond), "x0": np.ones((2, 5), np.float32), "data": np.zeros((3, 4), np.float32)}
        np.testing.assert_array_equal(Reference(_for_the_parser(model)).run(feeds)["out"], Reference(model).run(feeds)["out"])


@pytest.mark.parametrize("count", ["left out", "int64 max", "int32 max", "given"])
def test_a_loop_without_a_trip_count_that_reads_its_iteration_number_builds(count):
    """A while loop (``cond`` decides; the trip count left out, or int64's or int32's largest, as exporters write "no
    count") whose body reads its iteration number: TensorRT's parser takes such a count for none and then does not
    register the body's iteration number ("Node input was not registered"). It gets a count of 2**31 - 2, the most a
    trip count TensorRT keeps in int32 can hold below what the parser takes for none, which computes the same."""
    from trt_scatter.engine import _for_the_parser
    from trt_scatter.reference import Reference

    limit = {"left out": None, "int64 max": 2**63 - 1, "int32 max": 2**31 - 1, "given": 6}[count]
    body = helper.make_graph([helper.make_node("Cast", ["i"], ["f"], to=TensorProto.FLOAT), helper.make_node("Add", ["acc", "f"], ["acc_out"]),
                              helper.make_node("Less", ["i", "stop"], ["going"])], "body",
                             [fx.info("i", [], np.int64), fx.info("c", [], np.bool_), fx.info("acc", (3,))],
                             [fx.info("going", [], np.bool_), fx.info("acc_out", (3,))])
    initializers = [] if limit is None else [onnx.numpy_helper.from_array(np.array(limit, np.int64), "count")]
    graph = helper.make_graph([helper.make_node("Loop", ["" if limit is None else "count", "go", "x"], ["y"], body=body)], "g",
                              [fx.info("go", [], np.bool_), fx.info("x", (3,)), fx.info("stop", [], np.int64)], [fx.info("y", (3,))], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    engine.network_from_onnx(model)()
    for go, stop in ((True, 4), (True, 9), (False, 4)):
        feeds = {"go": np.array(go), "x": np.zeros(3, np.float32), "stop": np.array(stop, np.int64)}
        np.testing.assert_array_equal(Reference(_for_the_parser(model)).run(feeds)["y"], Reference(model).run(feeds)["y"])


@pytest.mark.parametrize("where", ["main graph", "If branch"])
@pytest.mark.parametrize("steps", [False, True])
def test_a_slice_without_axes_whose_starts_are_fewer_than_the_rank_builds(where, steps):
    """ONNX's Slice without ``axes`` slices the first len(starts) axes; TensorRT-RTX's parser took every axis of the
    data and refused the node ("starts misaligns with axes") in a valid model. It gets its axes written out."""
    from trt_scatter.engine import _for_the_parser
    from trt_scatter.reference import Reference

    names = ["x", "starts", "ends", "", "step"] if steps else ["x", "starts", "ends"]
    cut = helper.make_node("Slice", names, ["u"])
    if where == "main graph":
        nodes, inputs = [cut], [fx.info("x", (3, 5))]
    else:
        then = helper.make_graph([cut], "then", [], [fx.info("u", (2, 5))])
        other = helper.make_graph([helper.make_node("Slice", names, ["v"])], "else", [], [fx.info("v", (2, 5))])
        nodes, inputs = [helper.make_node("If", ["flag"], ["u"], then_branch=then, else_branch=other)], [fx.info("x", (3, 5)), fx.info("flag", [], np.bool_)]
    constants = [onnx.numpy_helper.from_array(np.array(v), n) for n, v in (("starts", [0]), ("ends", [2]), ("step", [1]))]
    graph = helper.make_graph(nodes, "g", inputs, [fx.info("u", (2, 5))], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    engine.network_from_onnx(model)()
    feeds = {"x": np.arange(15, dtype=np.float32).reshape(3, 5)} | ({"flag": np.array(True)} if where == "If branch" else {})
    np.testing.assert_array_equal(Reference(_for_the_parser(model)).run(feeds)["u"], Reference(model).run(feeds)["u"])
