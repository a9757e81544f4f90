"""`polygraphy run` with trt-scatter installed: the extension is found through its entry point, the
scatter ops run in --pluginref, --trt-scatter-inputs feeds valid inputs, and a corrupted golden file
makes the comparison fail. polygraphy runs as a subprocess, as a user runs it."""

import json
import os
import re
import subprocess
import sys

import numpy as np
import pytest

import onnx_fixtures as fx
from conftest import HAS_GPU, needs_gpu

EXACT = ["--atol", "0", "--rtol", "0"]


def models(tmp_path):
    """Standard-op models and native lowerings of all four ops (static and dynamic shapes)."""
    slice_native, _ = fx.slice_scatter_native_model([7, 8], [-1, 1], [-8, 7], [-2, 3])
    update_native, _ = fx.scatter_update_native_model([4, 5, 6], [[3, 0], [1, 4]], axis=1)
    built = {
        "scatter_elements": fx.scatter_elements_model(["N", 5], ["N", 3], axis=1),
        "scatter_nd": fx.scatter_nd_model([4, 5, 6], [None, 2], [None, 6], dtype=np.int32),
        "slice_scatter_native": slice_native,
        "scatter_update_native": update_native,
    }
    return {name: fx.save(model, tmp_path / f"{name}.onnx") for name, model in built.items()}


@pytest.fixture(scope="module")
def model_paths(tmp_path_factory):
    return models(tmp_path_factory.mktemp("models"))


@pytest.mark.parametrize("name", ["scatter_elements", "scatter_nd", "slice_scatter_native", "scatter_update_native"])
def test_onnxrt_and_pluginref_agree_on_valid_inputs(model_paths, name):
    result = fx.run_tool("polygraphy", ["run", model_paths[name], "--onnxrt", "--pluginref", "--trt-scatter-inputs", "--seed", "7", "--iterations", "2", *EXACT])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "Passed: 2/2 iterations" in result.stdout + result.stderr


def test_a_data_loader_script_of_ones_own_as_polygraphy_documents_it(model_paths, tmp_path):
    """`--data-loader-script` with a script of the user's own that returns the data loader (as the README shows)."""
    import mixed_models

    # project=False: no MatMul, whose float sums onnxruntime and NumPy may round differently (with AVX-512, they do)
    plugin = fx.save(mixed_models.kv_cache(runtime=True, project=False).model, tmp_path / "kv.onnx")
    for path in (model_paths["scatter_nd"], plugin):
        script = tmp_path / "valid_inputs.py"
        script.write_text(f"from trt_scatter.inputs import ScatterDataLoader\n\ndef load_data():\n    return ScatterDataLoader({str(path)!r}, iterations=2)\n")
        result = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", "--data-loader-script", script, *EXACT])
        assert result.returncode == 0, result.stdout + result.stderr
        assert "Passed: 2/2 iterations" in result.stdout + result.stderr
    # A loader of the script's that cannot serve the model: one line before anything runs, not a traceback from the Comparator.
    script.write_text(f"from trt_scatter.inputs import ScatterDataLoader\n\ndef load_data():\n    return ScatterDataLoader({str(plugin)!r}, input_shapes={{'pos': [3]}})\n")
    refused = fx.run_tool("polygraphy", ["run", plugin, "--onnxrt", "--pluginref", "--data-loader-script", script])
    assert refused.returncode == 1 and "Traceback" not in refused.stderr + refused.stdout
    assert "[!] --data-loader-script: input 'pos': the given shape (3,)" in refused.stdout + refused.stderr
    # A loader made for another model: polygraphy fed its inputs by position, cast, or failed inside the Comparator.
    script.write_text(f"from trt_scatter.inputs import ScatterDataLoader\n\ndef load_data():\n    return ScatterDataLoader({str(plugin)!r})\n")
    other = fx.run_tool("polygraphy", ["run", model_paths["scatter_nd"], "--onnxrt", "--pluginref", "--data-loader-script", script])
    assert other.returncode == 1 and "Traceback" not in other.stderr + other.stdout, other.stdout + other.stderr
    assert re.search(r"\[!\] --data-loader-script: its ScatterDataLoader draws inputs for a model whose inputs are .*, and the run's model "
                     r"takes data \(\w+, rank \d\), indices \(int64, rank \d\), updates \(\w+, rank \d\): make the loader for the run's model",
                     other.stdout + other.stderr), other.stdout + other.stderr


def test_drawn_leaves_a_data_loader_of_ones_own_as_it_is(model_paths):
    """What a --data-loader-script returns is drawn early only where it is a ScatterDataLoader, and refused where it is one
    of no iterations (polygraphy ran nothing and said PASSED)."""
    from polygraphy.exception import PolygraphyException

    from trt_scatter.inputs import ScatterDataLoader
    from trt_scatter.polygraphy_ext.loader import drawn

    feeds = iter([{"data": np.zeros(3)}])
    assert drawn(feeds, "--data-loader-script") is feeds and next(feeds)["data"].shape == (3,)
    with pytest.raises(PolygraphyException, match=r"^--data-loader-script: 0 iterations \(--iterations, or ScatterDataLoader's iterations\)"):
        drawn(ScatterDataLoader(model_paths["scatter_nd"], iterations=0), "--data-loader-script")


def test_corrupted_golden_outputs_fail_the_comparison(model_paths, tmp_path):
    path = model_paths["scatter_elements"]
    inputs, golden = tmp_path / "inputs.json", tmp_path / "golden.json"
    saved = fx.run_tool("polygraphy", ["run", path, "--pluginref", "--trt-scatter-inputs", "--save-inputs", inputs, "--save-outputs", golden])
    assert saved.returncode == 0, saved.stdout + saved.stderr
    check = ["run", path, "--onnxrt", "--load-inputs", inputs, "--load-outputs", golden, *EXACT]
    passed = fx.run_tool("polygraphy", check)
    assert passed.returncode == 0, passed.stdout + passed.stderr

    from polygraphy.comparator import RunResults

    results = RunResults.load(str(golden))
    outputs = results[0][1][0]
    corrupted = outputs["output"].copy()
    corrupted.flat[0] += 1
    outputs["output"] = corrupted
    results.save(str(golden))
    failed = fx.run_tool("polygraphy", check)
    assert failed.returncode != 0
    assert "FAILED" in failed.stdout + failed.stderr


def test_random_inputs_are_why_the_data_loader_exists(model_paths):
    # Without --trt-scatter-inputs, polygraphy's random indices hit the oracle's range check.
    result = fx.run_tool("polygraphy", ["run", model_paths["scatter_nd"], "--pluginref", "--val-range", "indices:[5,9]"])
    assert result.returncode != 0
    assert "scatter_nd: 'indices' values in column 0 must be in [-4, 3]" in result.stdout + result.stderr


def test_extension_is_found_through_its_entry_point_in_a_fresh_interpreter():
    probe = (
        "import json, importlib.metadata as m\n"
        "eps = m.entry_points(group='polygraphy.run.plugins')\n"
        "groups = {ep.name: [type(g).__name__ for g in ep.load()()] for ep in eps}\n"
        "print(json.dumps({'eps': {ep.name: ep.value for ep in eps}, 'groups': groups}))\n"
    )
    found = json.loads(subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True).stdout)
    assert found["eps"].get("trt-scatter") == "trt_scatter.polygraphy_ext:get_arg_groups"
    assert found["groups"]["trt-scatter"] == ["TrtScatterArgs"]

    help_text = fx.run_tool("polygraphy", ["run", "--help"]).stdout
    assert "--trt-scatter-plugins" in help_text and "--trt-scatter-inputs" in help_text


def test_generated_script_registers_plugins_before_parsing_and_imports_the_references(model_paths):
    result = fx.run_tool(
        "polygraphy",
        ["run", model_paths["scatter_elements"], "--trt", "--pluginref", "--trt-scatter-plugins", "--gen-script", "-"],
        env={"POLYGRAPHY_USE_TENSORRT_RTX": "1"} if not _has_full_tensorrt() else None,
    )
    assert result.returncode == 0, result.stderr
    script = result.stdout
    assert "from trt_scatter.polygraphy_ext import ReferenceRunner, RegisterTrtScatterPlugins, ValidateTrtScatter" in script
    assert "ReferenceRunner(load_onnx" in script and "PluginRefRunner" not in script  # --pluginref: the whole-model reference
    validate = script.index(f"validate_trt_scatter = ValidateTrtScatter({str(model_paths['scatter_elements'])!r})")
    register = script.index("RegisterTrtScatterPlugins(validate_trt_scatter, debug=True)")
    assert validate < register < script.index("NetworkFromOnnxPath(register_trt_scatter_plugins")
    assert script.count("ValidateTrtScatter(") == 1  # the model path only, not the network or engine loaders


def test_trt_scatter_plugins_hand_onnxs_own_nodes_to_the_plugins_as_build_does(tmp_path, monkeypatch):
    """ScatterElements with a reduction, which TensorRT-RTX's parser refuses ("Unsupported reduction type") and full
    TensorRT builds with NVIDIA's atomics: ``trt-scatter build --plugins`` hands it to ScatterElementsReduce, and
    ``--trt-scatter-plugins`` left it to TensorRT."""
    from trt_scatter.onnx_models import scatter_elements_model

    import tempfile

    path = fx.save(scatter_elements_model((6, 4), (9, 4), reduction="add"), tmp_path / "reduce.onnx")
    env = {"POLYGRAPHY_USE_TENSORRT_RTX": "1"} if not _has_full_tensorrt() else None
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))  # the changed model's folder, which a forked run ending in os._exit leaves
    script = fx.run_tool("polygraphy", ["run", path, "--trt", "--trt-scatter-plugins", "--gen-script", "-"], env=env).stdout
    validate = script.index(f"validate_trt_scatter = ValidateTrtScatter({str(path)!r})")
    served = script.index("UsePluginsForParser(validate_trt_scatter)")
    assert validate < served < script.index("RegisterTrtScatterPlugins(use_plugins_for_parser, debug=True)")
    run = fx.run_tool("polygraphy", ["run", path, "--trt", "--trt-scatter-plugins", "--trt-scatter-inputs"], env=env)
    assert "Unsupported reduction type" not in run.stdout + run.stderr, run.stdout + run.stderr
    assert ("PASSED" in run.stdout + run.stderr) if HAS_GPU else "Finished engine building" in run.stdout + run.stderr, run.stdout + run.stderr
    plain = fx.run_tool("polygraphy", ["run", model_path := fx.save(fx.slice_scatter_model((4, 6), [1], [4], [1], [1]), tmp_path / "ss.onnx"),
                                       "--trt", "--trt-scatter-plugins", "--gen-script", "-"], env=env).stdout
    assert "UsePluginsForParser" not in plain, model_path  # no node a plugin serves: the script as before


def test_generated_inputs_set_the_tensorrt_profile_unless_the_user_did(model_paths):
    path = model_paths["scatter_elements"]  # data ["N", 5]: N is generated as 4
    env = {"POLYGRAPHY_USE_TENSORRT_RTX": "1"} if not _has_full_tensorrt() else None
    generated = fx.run_tool("polygraphy", ["run", path, "--trt", "--trt-scatter-inputs", "--gen-script", "-"], env=env)
    assert generated.returncode == 0, generated.stderr
    assert "Profile().add('data', min=[4, 5], opt=[4, 5], max=[4, 5])" in generated.stdout
    given = ["--input-shapes", "data:[6,5]", "indices:[6,3]", "updates:[6,3]"]
    user = fx.run_tool("polygraphy", ["run", path, "--trt", "--trt-scatter-inputs", *given, "--gen-script", "-"], env=env)
    assert user.returncode == 0, user.stderr
    assert "Profile().add('data', min=[6, 5], opt=[6, 5], max=[6, 5])" in user.stdout


def test_generated_inputs_take_the_users_tensorrt_profile(model_paths):
    """A profile of the user's own: the data loader generates its opt shapes (outside it, TensorRT refuses them)."""
    path = model_paths["scatter_elements"]
    env = {"POLYGRAPHY_USE_TENSORRT_RTX": "1"} if not _has_full_tensorrt() else None
    profile = ["--trt-min-shapes", "data:[2,5]", "--trt-opt-shapes", "data:[7,5]", "--trt-max-shapes", "data:[9,5]"]
    generated = fx.run_tool("polygraphy", ["run", path, "--trt", "--trt-scatter-inputs", *profile, "--gen-script", "-"], env=env)
    assert generated.returncode == 0, generated.stderr
    assert "input_shapes={'data': [7, 5]}" in generated.stdout, generated.stdout
    # the inputs the profile leaves out take the shapes generated for them (polygraphy's would pin their dims at 1)
    from trt_scatter.inputs import ScatterDataLoader

    shapes = ScatterDataLoader(path, input_shapes={"data": [7, 5]}).shapes()
    added = "".join(f".add({name!r}, min={list(shapes[name])}, opt={list(shapes[name])}, max={list(shapes[name])})" for name in ("indices", "updates"))
    assert f"Profile().add('data', min=[2, 5], opt=[7, 5], max=[9, 5]){added}" in generated.stdout, generated.stdout


def test_a_seed_with_no_valid_values_for_a_later_iteration_fails_in_one_line_before_anything_runs(tmp_path, monkeypatch):
    """Indices computed from an input (raw + 1) are searched for; every iteration is drawn while the command is read,
    so the one that finds none fails as the first would, not with a traceback in the middle of the run. (One random
    try per iteration, in the forked run too, so that a seed finds values for one iteration and not for the next.)"""
    from onnx import TensorProto, helper

    from trt_scatter import inputs

    monkeypatch.setattr(inputs, "TRIES", 1)

    nodes = [helper.make_node("Add", ["raw", "one"], ["indices"]), helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"], axis=1)]
    graph = helper.make_graph(nodes, "g", [fx.info("data", ("N", 5), np.float32), fx.info("raw", ("N", 2), np.int64), fx.info("updates", ("N", 2), np.float32)],
                              [fx.info("output", ("N", 5), np.float32)], initializer=[helper.make_tensor("one", TensorProto.INT64, [], [1])])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "computed.onnx")
    args = ["run", path, "--onnxrt", "--pluginref", "--trt-scatter-inputs", "--input-shapes", "data:[2,5]", "--seed", "3"]
    first = fx.run_tool("polygraphy", args)  # seed 3 finds values for iteration 0, not for iteration 1
    assert first.returncode == 0, first.stdout + first.stderr
    two = fx.run_tool("polygraphy", [*args, "--iterations", "2"])
    output = two.stdout + two.stderr
    assert two.returncode != 0 and "Traceback" not in output, output
    assert "--trt-scatter-inputs: ScatterElements node #1 (output 'output'): input 'raw' gives 'indices', and none of 1 random values" in output, output
    assert "onnxrt-runner" not in output  # refused before any run


def test_a_first_iteration_without_valid_values_fails_in_one_line_before_anything_runs(tmp_path):
    """Indices that two nodes take and no draw fits both: the first iteration, too, is drawn while the command is read."""
    from onnx import helper

    nodes = [helper.make_node("ScatterElements", ["a", "indices", "u"], ["out_a"], axis=0, name="write"),
             helper.make_node("ScatterUpdate", ["b", "indices", "v", "axis"], ["out_b"], domain="trt_scatter", name="update")]
    graph = helper.make_graph(nodes, "g", [fx.info("a", (3, 2), np.float32), fx.info("b", (4,), np.float32), fx.info("indices", (2, 2), np.int64),
                                           fx.info("u", (2, 2), np.float32), fx.info("v", (2, 2), np.float32)],
                              [fx.info("out_a", (3, 2), np.float32), fx.info("out_b", (4,), np.float32)], [helper.make_tensor("axis", 7, [], [0])])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)]), tmp_path / "both.onnx")
    result = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", "--trt-scatter-inputs"])
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in output, output
    assert "--trt-scatter-inputs: ScatterUpdate node 'update': input 'indices' is drawn for ScatterElements node 'write' too" in output, output
    assert "onnxrt-runner" not in output  # refused before any run


def test_bfloat16_inputs_are_one_line_before_any_run(tmp_path):
    """polygraphy's runners take no bfloat16 NumPy arrays: with --trt-scatter-inputs the run is refused in the line
    `trt-scatter check` gives, not in polygraphy's type error twice and a FAILED."""
    import ml_dtypes

    from trt_scatter.onnx_models import slice_scatter_model

    path = fx.save(slice_scatter_model((4, 6), [1], [6], [2], [1], dtype=ml_dtypes.bfloat16), tmp_path / "bf16.onnx")
    result = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", "--trt-scatter-inputs"])
    output = result.stdout + result.stderr
    assert result.returncode != 0 and "Traceback" not in output and "Could not convert" not in output, output
    assert "--trt-scatter-inputs: input 'data' is bfloat16: polygraphy's runners" in output and "onnxrt-runner" not in output, output


def test_a_value_range_sets_the_inputs_no_rule_draws_and_is_said_to_be_ignored_for_the_others(model_paths, tmp_path):
    from polygraphy.json import load_json

    result = fx.run_tool("polygraphy", ["run", model_paths["scatter_elements"], "--pluginref", "--trt-scatter-inputs", "--iterations", "2",
                                        "--val-range", "data:[10,20]", "indices:[0,1]", "--save-inputs", tmp_path / "inputs.json"])
    output = result.stdout + result.stderr
    assert result.returncode == 0, output
    assert "[W] the value range for input 'indices' (--val-range, value_ranges) is ignored: its values are drawn by the rules of the scatter nodes it reaches" in output
    feeds = load_json(tmp_path / "inputs.json")
    assert len(feeds) == 2 and all(np.all((feed["data"] >= 10) & (feed["data"] <= 20)) for feed in feeds)
    assert all(np.all(np.abs(feed["updates"]) <= 1) for feed in feeds)  # no range given for it: the loader's own


def test_a_model_the_loader_cannot_serve_fails_in_one_line(tmp_path):
    path = fx.save(fx.scatter_elements_model([3, 4], [4, 4], axis=0), tmp_path / "too_many.onnx")
    result = fx.run_tool("polygraphy", ["run", path, "--pluginref", "--trt-scatter-inputs"])
    assert result.returncode != 0
    assert "--trt-scatter-inputs: ScatterElements node #0 (output 'output'): scatter_elements: 'indices' dimension 0 must be at most data's (3) for distinct indices" in result.stdout + result.stderr
    assert "Traceback" not in result.stdout + result.stderr


@pytest.mark.parametrize("broken, line", [
    ("unknown op", "SliceScatterX node 'scatter': domain 'trt_scatter' has no op 'SliceScatterX'"),
    ("unknown attribute", "SliceScatter node 'scatter': attribute 'foo' is not an attribute of SliceScatter"),
    ("missing file", "cannot read ONNX model"),
])
def test_the_reference_runs_only_a_model_that_passes_validation(tmp_path, broken, line):
    """``--pluginref`` alone (no trt-scatter option) runs the oracle on the model: a model it refuses ends the run in
    polygraphy's one line, not in a traceback, nor in a PASSED run of what the model cannot mean."""
    from onnx import helper

    from trt_scatter.onnx_models import slice_scatter_model

    model = slice_scatter_model((4, 6), [1], [4], [1], [1])
    model.graph.node[0].name = "scatter"
    if broken == "unknown op":
        model.graph.node[0].op_type = "SliceScatterX"
    elif broken == "unknown attribute":
        model.graph.node[0].attribute.append(helper.make_attribute("foo", 1))
    path = fx.save(model, tmp_path / "model.onnx") if broken != "missing file" else tmp_path / "missing.onnx"
    result = fx.run_tool("polygraphy", ["run", path, "--pluginref"])
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output and "PASSED" not in output, output
    assert f"[!] --pluginref: {line}" in output


def test_register_loader_registers_then_passes_through(monkeypatch, debug_env_unset):
    import trt_scatter.plugins
    from trt_scatter.polygraphy_ext import RegisterTrtScatterPlugins

    calls = []
    monkeypatch.setattr(trt_scatter.plugins, "register", lambda: calls.append("register"), raising=False)
    assert RegisterTrtScatterPlugins("model.onnx")() == "model.onnx"
    assert RegisterTrtScatterPlugins(lambda: calls.append("parse") or "network")() == "network"
    assert calls == ["register", "register", "parse"]
    from trt_scatter.plugins.kernels import DEBUG_ENV

    RegisterTrtScatterPlugins("model.onnx", debug=True)()  # what polygraphy's script asks for: the kernels' bounds checks on
    assert os.environ[DEBUG_ENV] == "1"


def test_the_extension_takes_missing_or_unreadable_files_as_not_its_own(tmp_path):
    """What polygraphy names may not be there or not be a model: polygraphy's own loaders report that, not the extension."""
    import onnx

    from trt_scatter import onnx_models
    assert _parsed([str(tmp_path / "model.engine")])._model_to_lower() is None  # no ONNX model
    (tmp_path / "junk.onnx").write_bytes(b"not a model")
    assert _parsed([str(tmp_path / "junk.onnx")])._model_to_lower() is None
    onnx.save(onnx_models.scatter_nd_model((4, 3), (2, 1)), tmp_path / "standard.onnx")
    assert _parsed([str(tmp_path / "standard.onnx")])._model_to_lower() is None  # nothing for the extension to lower
    onnx.save(onnx_models.scatter_update_model((4, 3), (2,), 0), tmp_path / "plugin.onnx")
    model = _parsed([str(tmp_path / "plugin.onnx")])._model_to_lower()
    assert [node.op_type for node in model.proto.graph.node] == ["ScatterUpdate"]  # read once, handed to the lowering check


def _parsed(argv, *groups):
    """The extension's argument group after polygraphy's ModelArgs, ``groups`` (more of polygraphy's
    argument group classes) and it parsed ``argv``, in this process."""
    import argparse

    from polygraphy.tools.args import ModelArgs

    from trt_scatter.polygraphy_ext.run_args import TrtScatterArgs

    groups = {group: group() for group in (ModelArgs, *groups, TrtScatterArgs)}
    for group in groups.values():
        group.register(groups)
    parser = argparse.ArgumentParser()
    for group in groups.values():
        group.add_parser_args(parser)
    args = parser.parse_args(argv)
    for group in groups.values():
        group.parse(args)
    return groups[TrtScatterArgs]


def test_onnxrt_and_plugins_flags_read_the_model_once(tmp_path, monkeypatch):
    """The lowering check (--onnxrt) and the validation (--trt-scatter-plugins) look at one read of the model."""
    import onnx
    from polygraphy.tools.args import OnnxInferShapesArgs, OnnxLoadArgs, OnnxrtRunnerArgs, OnnxrtSessionArgs, RunnerSelectArgs

    from trt_scatter import onnx_models
    from trt_scatter.model import Model

    path = tmp_path / "plugin.onnx"
    onnx.save(onnx_models.scatter_update_model((4, 3), (2,), 0), path)
    reads, read = [], Model.read.__func__
    monkeypatch.setattr(Model, "read", classmethod(lambda cls, *args, **kwargs: reads.append(args) or read(cls, *args, **kwargs)))
    run = _parsed([str(path), "--onnxrt", "--trt-scatter-plugins"],
                  OnnxInferShapesArgs, OnnxLoadArgs, OnnxrtSessionArgs, OnnxrtRunnerArgs, RunnerSelectArgs)  # fmt: skip
    assert run.register_plugins and reads == [(str(path),)]


def test_plugins_flag_validates_onnx_models_and_leaves_engines_to_tensorrt(tmp_path):
    from polygraphy.exception import PolygraphyException

    engine_run = _parsed([str(tmp_path / "model.engine"), "--trt-scatter-plugins"])  # no ONNX model: nothing to validate
    assert engine_run.register_plugins and engine_run._onnx_model() is None
    with pytest.raises(PolygraphyException, match=r"^--trt-scatter-plugins: cannot read ONNX model '.*model\.onnx': No such file or directory$"):
        _parsed([str(tmp_path / "model.onnx"), "--trt-scatter-plugins"])


def test_generated_inputs_come_for_as_many_iterations_as_asked(model_paths):
    """``--iterations 0`` is refused: polygraphy would run nothing and say PASSED (it used to run one iteration)."""
    from polygraphy.exception import PolygraphyException
    from polygraphy.tools.args import DataLoaderArgs
    from polygraphy.tools.script import Script

    run = _parsed([model_paths["scatter_nd"], "--trt-scatter-inputs", "--iterations", "3"], DataLoaderArgs)
    script = Script()
    run.arg_groups[DataLoaderArgs].add_to_script(script)
    assert "iterations=3" in str(script)
    with pytest.raises(PolygraphyException, match=r"^--trt-scatter-inputs: 0 iterations \(--iterations, or ScatterDataLoader's iterations\) "
                       r"give no inputs, so nothing would run or be compared: give 1 or more$"):
        _parsed([model_paths["scatter_nd"], "--trt-scatter-inputs", "--iterations", "0"], DataLoaderArgs)


def test_conflicting_data_options_are_refused(model_paths, tmp_path):
    result = fx.run_tool("polygraphy", ["run", model_paths["scatter_nd"], "--pluginref", "--trt-scatter-inputs", "--load-inputs", tmp_path / "x.json"])
    assert result.returncode != 0
    assert "--trt-scatter-inputs cannot be combined with --load-inputs" in result.stdout + result.stderr


def test_a_loader_for_the_same_inputs_in_another_order_is_taken_and_one_of_no_model_is_one_line(model_paths, tmp_path):
    """polygraphy feeds by name: a loader made for a copy of the model that lists its inputs in another order serves the
    run. A loader of no model is one line (the inputs' check raised a TypeError from inside the script)."""
    import onnx

    model = onnx.load(model_paths["scatter_nd"])
    inputs = list(model.graph.input)
    del model.graph.input[:]
    model.graph.input.extend(reversed(inputs))
    reordered = fx.save(model, tmp_path / "reordered.onnx")
    script = tmp_path / "loader.py"
    script.write_text(f"from trt_scatter.inputs import ScatterDataLoader\n\ndef load_data():\n    return ScatterDataLoader({str(reordered)!r})\n")
    taken = fx.run_tool("polygraphy", ["run", model_paths["scatter_nd"], "--onnxrt", "--pluginref", "--data-loader-script", script, *EXACT])
    assert taken.returncode == 0, taken.stdout + taken.stderr
    script.write_text("from trt_scatter.inputs import ScatterDataLoader\n\ndef load_data():\n    return ScatterDataLoader(None)\n")
    refused = fx.run_tool("polygraphy", ["run", model_paths["scatter_nd"], "--onnxrt", "--pluginref", "--data-loader-script", script])
    assert refused.returncode == 1 and "Traceback" not in refused.stdout + refused.stderr, refused.stdout + refused.stderr
    assert "[!] --data-loader-script: model must be a path, an onnx.ModelProto or a trt_scatter.model.Model (got NoneType)" in refused.stdout + refused.stderr


def test_a_missing_model_or_none_with_the_inputs_flag_is_one_line(tmp_path):
    """As the other flags say it: a missing file ended in a traceback, and no model in "model must be a path ... (got
    NoneType)"."""
    missing = tmp_path / "nosuch.onnx"
    result = fx.run_tool("polygraphy", ["run", missing, "--onnxrt", "--trt-scatter-inputs"])
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert f"[!] --trt-scatter-inputs: cannot read ONNX model '{missing}': No such file or directory" in result.stdout + result.stderr
    result = fx.run_tool("polygraphy", ["run", "--trt-scatter-inputs"])
    assert result.returncode != 0 and "Traceback" not in result.stderr, result.stderr
    assert "[!] --trt-scatter-inputs draws inputs for an ONNX model, and this run has none (no model, or an engine)" in result.stdout + result.stderr


def _has_full_tensorrt():
    from conftest import HAS_FULL_TENSORRT

    return HAS_FULL_TENSORRT


@needs_gpu
def test_tensorrt_matches_the_oracle_on_the_gpu(model_paths, tmp_path):
    plugin = fx.save(fx.slice_scatter_model([7, 8], [4, 2], [-1, 1], [-8, 7], [-2, 3]), tmp_path / "slice_scatter_plugin.onnx")
    cases = [
        (model_paths["scatter_elements"], ["--input-shapes", "data:[4,5]", "indices:[4,3]", "updates:[4,3]"]),
        (model_paths["scatter_nd"], ["--input-shapes", "indices:[4,2]", "updates:[4,6]"]),
        (model_paths["slice_scatter_native"], []),
        (plugin, []),
    ]
    for path, shapes in cases:
        result = fx.run_tool("polygraphy", ["run", path, "--trt", "--pluginref", "--trt-scatter-plugins", "--trt-scatter-inputs", *shapes, *EXACT])
        assert result.returncode == 0, result.stdout + result.stderr


def test_plugin_models_run_in_onnxrt_lowered_and_a_saved_script_runs_alone(tmp_path):
    """--onnxrt runs the model with its trt_scatter nodes lowered (and says so); --gen-script writes the
    lowering and trt-scatter's data loader into the script, which then runs in a fresh interpreter."""
    import mixed_models

    path = fx.save(mixed_models.kv_cache(runtime=True, dynamic=True, project=False).model, tmp_path / "kv.onnx")
    script = tmp_path / "check.py"
    shapes = ["--input-shapes", "cache:[2,3,8,4]", "k:[2,3,1,4]"]
    result = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", "--trt-scatter-inputs", "--seed", "5", *shapes, *EXACT, "--gen-script", script])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "onnxrt runs the model with its trt_scatter nodes lowered to standard ONNX ops" in result.stdout + result.stderr
    text = script.read_text()
    assert "LowerTrtScatter(load_onnx)" in text and f"ScatterDataLoader({str(path)!r}, seed=5, input_shapes={{'cache': [2, 3, 8, 4], 'k': [2, 3, 1, 4]}}" in text
    alone = subprocess.run([sys.executable, str(script)], capture_output=True, text=True, timeout=300, env=fx.without_torch())
    assert alone.returncode == 0 and "PASSED" in alone.stdout + alone.stderr, alone.stdout + alone.stderr


def _kv_cache_with(change):
    import mixed_models

    model = mixed_models.kv_cache(runtime=True, project=False).model  # compared exactly: no MatMul (see above)
    change(model)
    return model


def _step_0(model):
    from onnx import numpy_helper

    next(init for init in model.graph.initializer if init.name == "one").CopyFrom(numpy_helper.from_array(np.array([0]), "one"))


def _runtime_axes(model):
    from onnx import TensorProto, helper

    model.graph.initializer.remove(next(init for init in model.graph.initializer if init.name == "axes"))
    model.graph.input.append(helper.make_tensor_value_info("axes", TensorProto.INT64, [1]))


@pytest.mark.parametrize(
    "change, options, line",
    [
        (_step_0, ["--onnxrt"], "[!] --onnxrt: SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 (got [0])"),
        # the reference's rule, not onnxruntime's, though its lowering comes first on the command line
        (_step_0, ["--onnxrt", "--pluginref"], "[!] --pluginref: SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 (got [0])"),
        (_step_0, ["--pluginref", "--trt-scatter-inputs"],  # the model is validated before the loader plans inputs
         "[!] --pluginref: SliceScatter node 'write_kv': slice_scatter: 'step' must not contain 0 (got [0])"),
        (lambda model: None, ["--pluginref", "--val-range", "pos:[20,30]"],
         "[!] SliceScatter node 'write_kv': slice_scatter: 'updates' must have shape (2, 3, 0, 4) (data's shape with each sliced axis cut to its slice's length; axis 2's slice (start 20, stop 21, step 1) takes 0 of its 8) "
         "(got shape (2, 3, 1, 4)); 'updates' is the model's input 'k'"),
    ],
    ids=["onnxrt_lowering", "onnxrt_and_reference", "trt_scatter_inputs", "reference_on_random_inputs"],
)
def test_what_trt_scatter_refuses_in_polygraphy_run_is_one_line_without_a_traceback(tmp_path, change, options, line):
    path = fx.save(_kv_cache_with(change), tmp_path / "kv.onnx")
    result = fx.run_tool("polygraphy", ["run", path, *options])
    output = result.stdout + result.stderr
    assert result.returncode == 1, output
    assert "Traceback" not in output, output
    assert line in output.splitlines(), output


def test_run_time_axes_run_lowered_in_onnxrt_against_the_reference(tmp_path):
    """SliceScatter axes fed as a graph input: --onnxrt runs the run-time-axes lowering, --pluginref the oracle."""
    path = fx.save(_kv_cache_with(_runtime_axes), tmp_path / "kv.onnx")
    result = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", "--trt-scatter-inputs", "--atol", "0", "--rtol", "0"])
    output = result.stdout + result.stderr
    assert result.returncode == 0 and "PASSED" in output, output


def test_the_reference_runner_refuses_a_model_onnx_cannot_evaluate_in_one_line():
    """polygraphy prints a PolygraphyException as one line; anything else raised while activating was a traceback."""
    from onnx import TensorProto, helper
    from polygraphy.exception import PolygraphyException

    from trt_scatter.polygraphy_ext.references import ReferenceRunner

    graph = helper.make_graph([helper.make_node("If", ["flag"], ["y"])], "g", [helper.make_tensor_value_info("flag", TensorProto.BOOL, [])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [1])])
    runner = ReferenceRunner(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    with pytest.raises(PolygraphyException, match=r"^the reference cannot run this model: Attribute 'else_branch' is expected"):
        runner.activate()


@pytest.mark.parametrize("op_type, domain, lowered", [("ScatterElementsReduce", "trt_scatter", True), ("ScatterElements", "", False)])
def test_a_model_onnxruntime_has_no_kernel_for_is_one_line_saying_nothing_was_compared(tmp_path, op_type, domain, lowered):
    """onnxruntime's CPU ScatterElements has no float16 'mul', in a plugin node's lowering or in ONNX's own node: the
    run failed inside the runner, which was a traceback; the --gen-script script wraps the session likewise."""
    from onnx import helper

    node = helper.make_node(op_type, ["data", "indices", "updates"], ["output"], domain=domain, reduction="mul")
    graph = helper.make_graph([node], "g", [fx.info("data", (4, 3), np.float16), fx.info("indices", (2, 3), np.int64),
                                            fx.info("updates", (2, 3), np.float16)], [fx.info("output", (4, 3), np.float16)])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("trt_scatter", 1)]), tmp_path / "f16.onnx")
    script = tmp_path / "run.py"
    fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", "--trt-scatter-inputs", "--gen-script", script])
    assert f"ExplainOnnxrtErrors(build_onnxrt_session, lowered={lowered})" in script.read_text() and "OnnxrtRunner(explain_onnxrt_errors" in script.read_text()
    result = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", "--trt-scatter-inputs"])
    output = result.stdout + result.stderr
    if result.returncode == 0:
        pytest.skip("this onnxruntime runs float16 ScatterElements with reduction 'mul'")
    assert "Traceback" not in output, output
    (line,) = [line for line in output.splitlines() if line.startswith("[!]")]
    what = "the model with its trt_scatter nodes lowered" if lowered else "the model"
    assert line.startswith(f"[!] --onnxrt: onnxruntime's CPU kernels cannot run {what} on this machine, so nothing was compared "
                           "(compare --trt with --pluginref where a GPU runs the engine): [ONNXRuntimeError]"), output


def test_an_input_onnxruntime_refuses_is_one_line_that_does_not_blame_the_lowering(tmp_path):
    """A Gather after a plugin node, fed a row past the end: onnxruntime's own line, not 'cannot run ... nothing was
    compared' (the input is wrong, not the machine)."""
    from onnx import helper
    from polygraphy.json import save_json

    nodes = [helper.make_node("ScatterElementsReduce", ["data", "indices", "updates"], ["summed"], domain="trt_scatter"),
             helper.make_node("Gather", ["summed", "rows"], ["output"], axis=0)]
    graph = helper.make_graph(nodes, "g", [fx.info("data", (4, 3), np.float32), fx.info("indices", (2, 3), np.int64),
                                           fx.info("updates", (2, 3), np.float32), fx.info("rows", (1,), np.int64)], [fx.info("output", (1, 3), np.float32)])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("trt_scatter", 1)]), tmp_path / "gather.onnx")
    feeds = {"data": np.zeros((4, 3), np.float32), "indices": np.array([[3, 0, 0], [1, 1, 1]]), "updates": np.ones((2, 3), np.float32), "rows": np.array([9])}
    save_json([feeds], tmp_path / "inputs.json")
    result = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--load-inputs", tmp_path / "inputs.json"])
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output, output
    (line,) = [line for line in output.splitlines() if line.startswith("[!]")]
    assert line.startswith("[!] --onnxrt: onnxruntime failed to run the model with its trt_scatter nodes lowered: [ONNXRuntimeError]") and "Gather" in line, output


@pytest.mark.parametrize("dynamic", [False, True])
def test_profile_keys_that_name_inputs_match_them_alone(tmp_path, dynamic):
    """polygraphy's Profile matches keys as fnmatch patterns: 'past_key_values[0]' (PyTorch's KV-cache names) named no
    input, given in --input-shapes or filled in by polygraphy ("Invalid inputs were provided to the optimization profile")."""
    import onnx
    from polygraphy.tools.args import RunnerSelectArgs, TrtConfigArgs, TrtRunnerArgs

    from trt_scatter import onnx_models

    model = onnx_models.slice_scatter_model(("n" if dynamic else 4, 6), [0], [4], [2], axes=[1])
    for node in model.graph.node:
        node.input[:] = ["past_key_values[0]" if name == "data" else name for name in node.input]
    model.graph.input[0].name = "past_key_values[0]"
    onnx.save(model, tmp_path / "model.onnx")
    shapes = ["--input-shapes", "past_key_values[0]:[4,6]", "updates:[4,2]"] if dynamic else []
    run = _parsed([str(tmp_path / "model.onnx"), "--trt", "--trt-scatter-plugins", *shapes], TrtRunnerArgs, RunnerSelectArgs, TrtConfigArgs)
    (profile,) = run.arg_groups[TrtConfigArgs].profile_dicts
    assert "past_key_values[[]0[]]" in profile and "past_key_values[0]" not in profile
    assert [list(shape) for shape in profile["past_key_values[[]0[]]"]] == [[4, 6]] * 3


def test_runs_whose_trt_part_cannot_work_or_does_nothing_say_so(model_paths, tmp_path, capsys):
    """--trt-scatter-plugins without --trt (it did nothing, silently); --trt on a plugin model without it (TensorRT's
    parser dump); --trt where no GPU is (polygraphy: 'Could not deserialize engine'). A warning each, before the run."""
    from polygraphy.logger import G_LOGGER
    from polygraphy.tools.args import RunnerSelectArgs, TrtConfigArgs, TrtRunnerArgs

    from trt_scatter import onnx_models
    from trt_scatter.engine import has_gpu

    import onnx

    onnx.save(onnx_models.scatter_update_model((4, 5), (2,), axis=0), tmp_path / "su.onnx")
    path = str(tmp_path / "su.onnx")
    groups = (TrtRunnerArgs, RunnerSelectArgs, TrtConfigArgs)
    with G_LOGGER.verbosity(G_LOGGER.WARNING):
        _parsed([path, "--trt-scatter-plugins"], *groups)
        assert "[W] --trt-scatter-plugins registers the plugins for a --trt runner, and this run has none: it only validated the model" in capsys.readouterr().out
        _parsed([path, "--trt"], *groups)
        said = capsys.readouterr().out
        assert ("[W] the model has trt_scatter nodes, which TensorRT's ONNX parser builds only with their plugins registered: add "
                "--trt-scatter-plugins") in said
        assert ("[W] --trt: no CUDA GPU here" in said) != has_gpu()
        _parsed([path, "--trt", "--trt-scatter-plugins"], *groups)
        said = capsys.readouterr().out
        assert "--trt-scatter-plugins registers" not in said and "add --trt-scatter-plugins" not in said
        _parsed([model_paths["scatter_nd"], "--trt"], *groups)  # standard ops alone: nothing to register
        assert "add --trt-scatter-plugins" not in capsys.readouterr().out
        from trt_scatter.passes.aot import to_aot

        onnx.save(to_aot(onnx.load(path)), tmp_path / "aot.onnx")  # its plugins: nothing in polygraphy run registers them
        _parsed([str(tmp_path / "aot.onnx"), "--trt", "--trt-scatter-plugins"], *groups)
        said = capsys.readouterr().out
        assert ("[W] the model's trt_scatter nodes are for the AOT plugins, which polygraphy run does not register: build the engine "
                "with trt-scatter build --aot, and give polygraphy run the engine") in said and "add --trt-scatter-plugins" not in said


def test_an_inplace_models_preview_features_are_tensorrts_defaults_and_aliased_io(tmp_path):
    """The extension gave polygraphy a list of one feature, ALIASED_PLUGIN_IO_10_03, and polygraphy turns off every
    feature its list leaves out (TensorRT-RTX's RUNTIME_ACTIVATION_RESIZE_10_10): trt-scatter build only adds the one."""
    import onnx
    from polygraphy.tools.args import RunnerSelectArgs, TrtConfigArgs, TrtRunnerArgs

    from trt_scatter import backend, onnx_models

    trt = backend.tensorrt()
    defaults = {name for name, feature in trt.PreviewFeature.__members__.items()
                if backend.new_builder().create_builder_config().get_preview_feature(feature)}
    onnx.save(onnx_models.scatter_update_model((4, 5), (2,), axis=0, inplace=True), tmp_path / "inplace.onnx")
    run = _parsed([str(tmp_path / "inplace.onnx"), "--trt", "--trt-scatter-plugins"], TrtRunnerArgs, RunnerSelectArgs, TrtConfigArgs)
    features = {str(feature).rpartition(".")[2] for feature in run.arg_groups[TrtConfigArgs].preview_features}
    assert features == defaults | {"ALIASED_PLUGIN_IO_10_03"}
    if backend.is_rtx():  # what polygraphy showed TensorRT-RTX 1.7.1 enabling when no list is given
        assert "RUNTIME_ACTIVATION_RESIZE_10_10" in features
    given = _parsed([str(tmp_path / "inplace.onnx"), "--trt", "--trt-scatter-plugins", "--preview-features"], TrtRunnerArgs, RunnerSelectArgs, TrtConfigArgs)
    assert [str(feature).rpartition(".")[2] for feature in given.arg_groups[TrtConfigArgs].preview_features] == ["ALIASED_PLUGIN_IO_10_03"]


def test_onnxruntimes_refusals_are_told_apart_by_what_would_help():
    """A kernel or an op this onnxruntime lacks (a newer one may have it), a model it refuses for its own types or graph,
    and what else it says (the inputs: another run may pass)."""
    from trt_scatter.polygraphy_ext.loader import lacks_a_kernel, refuses_the_model

    kernel = "[ONNXRuntimeError] : 9 : NOT_IMPLEMENTED : Could not find an implementation for ScatterND(18) node with name ''"
    newer = "[ONNXRuntimeError] : 10 : INVALID_GRAPH : This is an invalid model. In Node, (...) : No Op registered for TensorScatter with domain_version of 24"
    types = "[ONNXRuntimeError] : 1 : FAIL : Type Error: Type parameter (Tind) of Optype (Slice) bound to different types"
    inputs = "[ONNXRuntimeError] : 1 : FAIL : Non-zero status code returned while running Div node. Integer division by zero"
    assert [lacks_a_kernel(reason) for reason in (kernel, newer, types, inputs)] == [True, True, False, False]
    assert [refuses_the_model(reason) for reason in (types, inputs)] == [True, False]


def test_use_plugins_for_parser_keeps_the_form_it_is_given_and_the_weights(tmp_path):
    """A path gives a path (the changed model, its external weights with it, in a temporary folder), bytes give bytes,
    and a model no plugin serves gives its own path back."""
    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from trt_scatter.onnx_models import scatter_elements_model
    from trt_scatter.polygraphy_ext import UsePluginsForParser

    model = scatter_elements_model((6, 4), (9, 4), reduction="add")
    weights = np.arange(4096, dtype=np.float32)
    model.graph.initializer.append(numpy_helper.from_array(weights, "weights"))
    model.graph.node.append(helper.make_node("Identity", ["weights"], ["weights_out"]))
    model.graph.output.append(helper.make_tensor_value_info("weights_out", TensorProto.FLOAT, [4096]))
    onnx.save(model, tmp_path / "m.onnx", save_as_external_data=True, location="m.data", size_threshold=1024)
    served = UsePluginsForParser(str(tmp_path / "m.onnx"))()
    assert served != str(tmp_path / "m.onnx") and not served.startswith(str(tmp_path))
    loaded = onnx.load(served)
    assert [node.op_type for node in loaded.graph.node] == ["ScatterElementsReduce", "Identity"]
    assert numpy_helper.to_array(next(i for i in loaded.graph.initializer if i.name == "weights")).tolist() == weights.tolist()
    as_bytes = UsePluginsForParser(lambda: scatter_elements_model((6, 4), (9, 4), reduction="max").SerializeToString())()
    assert [node.op_type for node in onnx.load_from_string(as_bytes).graph.node] == ["ScatterElementsReduce"]
    plain = fx.save(scatter_elements_model((6, 4), (2, 4)), tmp_path / "plain.onnx")
    assert UsePluginsForParser(plain)() == plain
    from polygraphy.backend.onnx import OnnxFromPath

    for given in (OnnxFromPath(str(tmp_path / "m.onnx")), scatter_elements_model((6, 4), (9, 4), reduction="add")):  # a ModelProto: bytes
        assert onnx.load_from_string(UsePluginsForParser(given)()).graph.node[0].op_type == "ScatterElementsReduce"
    with pytest.raises(TypeError, match=r"^UsePluginsForParser takes a path, serialized bytes or an onnx\.ModelProto, or a loader of one \(got int\)$"):
        UsePluginsForParser(3)()


def test_use_plugins_for_parser_writes_a_model_protobuf_cannot_hold_with_external_weights(tmp_path, monkeypatch):
    """Past protobuf's 2 GiB (model.tensors.SERIALIZE_LIMIT, the one limit; a few bytes here) the served model keeps its
    weights in a .data file beside it, and reads back the same."""
    import os

    import onnx
    from onnx import TensorProto, helper, numpy_helper

    from trt_scatter.model import tensors
    from trt_scatter.onnx_models import scatter_elements_model
    from trt_scatter.polygraphy_ext import UsePluginsForParser

    model = scatter_elements_model((6, 4), (9, 4), reduction="add")
    weights = np.arange(4096, dtype=np.float32)
    model.graph.initializer.append(numpy_helper.from_array(weights, "weights"))
    model.graph.node.append(helper.make_node("Identity", ["weights"], ["weights_out"]))
    model.graph.output.append(helper.make_tensor_value_info("weights_out", TensorProto.FLOAT, [4096]))
    path = fx.save(model, tmp_path / "m.onnx")
    monkeypatch.setattr(tensors, "SERIALIZE_LIMIT", 1024)
    served = UsePluginsForParser(path)()
    assert sorted(os.listdir(os.path.dirname(served))) == ["m.onnx", "m.onnx.data"]
    assert os.path.getsize(served) < weights.nbytes
    loaded = onnx.load(served)
    assert numpy_helper.to_array(next(i for i in loaded.graph.initializer if i.name == "weights")).tolist() == weights.tolist()


def _serve_in_a_child(path, answer):
    from trt_scatter.polygraphy_ext import UsePluginsForParser

    answer.put(UsePluginsForParser(path)())


@pytest.mark.parametrize("context", ["fork", "spawn"])
def test_use_plugins_for_parsers_folder_goes_when_a_multiprocessing_child_ends(tmp_path, context):
    """polygraphy run --use-subprocess serves the model in a multiprocessing child, which ends without running atexit:
    the changed model's temporary folder was left behind after every such run."""
    import multiprocessing
    import os

    from trt_scatter.onnx_models import scatter_elements_model

    path = fx.save(scatter_elements_model((6, 4), (9, 4), reduction="add"), tmp_path / "m.onnx")
    processes = multiprocessing.get_context(context)
    answer = processes.Queue()
    child = processes.Process(target=_serve_in_a_child, args=(path, answer))
    child.start()
    served = answer.get(timeout=120)
    child.join(timeout=120)
    assert child.exitcode == 0 and served != path and not os.path.exists(os.path.dirname(served))


@pytest.mark.parametrize("source", ["--load-inputs", "--data-loader-script"])
def test_a_fed_value_for_an_input_the_model_fills_is_refused_not_dropped(tmp_path, source):
    """An input the model also fills with an initializer is a constant to every runner (TensorRT's ONNX parser,
    onnxruntime, the reference), and polygraphy drops a value fed for it without a word: the run would pass on values
    nobody fed. It ends in one line naming the input and the option that fed it."""
    from onnx import helper, numpy_helper
    from polygraphy.json import save_json

    nodes = [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"], axis=0)]
    graph = helper.make_graph(nodes, "g", [fx.info("data", (4, 3), np.float32), fx.info("indices", (1, 3), np.int64),
                                           fx.info("updates", (1, 3), np.float32)], [fx.info("output", (4, 3), np.float32)],
                              [numpy_helper.from_array(np.array([[0, 2, 1]]), "indices")])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "constant_indices.onnx")
    feeds = {"data": np.zeros((4, 3), np.float32), "indices": np.array([[3, 3, 3]]), "updates": np.ones((1, 3), np.float32)}
    if source == "--load-inputs":
        save_json([feeds], tmp_path / "inputs.json")
        given = [source, tmp_path / "inputs.json"]
    else:
        (tmp_path / "inputs.py").write_text(f"import numpy as np\n\ndef load_data():\n    yield {{name: np.array(value) for name, value in {({k: v.tolist() for k, v in feeds.items()})!r}.items()}}\n"
                                            "    yield {'data': np.ones((4, 3), np.float32), 'indices': np.array([[1, 1, 1]]), 'updates': np.ones((1, 3), np.float32)}\n")
        given = [source, tmp_path / "inputs.py"]
    result = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", *given])
    output = result.stdout + result.stderr
    assert result.returncode == 1 and "Traceback" not in output and "PASSED" not in output, output
    (line,) = [line for line in output.splitlines() if line.startswith("[!]")]
    assert line == (f"[!] {source}: input 'indices' has an initializer, so its value is a constant (as TensorRT's ONNX parser takes "
                    "it): leave it out of the inputs, or remove the initializer to feed it"), output
    without = {name: value for name, value in feeds.items() if name != "indices"}  # the constant's own value: it runs
    save_json([without], tmp_path / "without.json")
    assert fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", "--load-inputs", tmp_path / "without.json"]).returncode == 0


def test_the_references_warnings_are_polygraphys_log_lines(tmp_path):
    """A warning of trt-scatter's in a polygraphy run (inputs whose result is undefined: two rows write one element) is a
    line of polygraphy's log, with its [W] mark, in its --log-file and under its -q flags, not a bare line on stderr."""
    from onnx import helper
    from polygraphy.json import save_json

    nodes = [helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"], name="twice")]
    graph = helper.make_graph(nodes, "g", [fx.info("data", (4, 3), np.float32), fx.info("indices", (2, 1), np.int64),
                                           fx.info("updates", (2, 3), np.float32)], [fx.info("output", (4, 3), np.float32)])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "twice.onnx")
    save_json([{"data": np.zeros((4, 3), np.float32), "indices": np.array([[1], [1]]), "updates": np.arange(6, dtype=np.float32).reshape(2, 3)}],
              tmp_path / "inputs.json")
    result = fx.run_tool("polygraphy", ["run", path, "--pluginref", "--load-inputs", tmp_path / "inputs.json", "--log-file", tmp_path / "log.txt"])
    assert result.returncode == 0, result.stdout + result.stderr
    warned = [line for line in (tmp_path / "log.txt").read_text().splitlines() if "ScatterND node 'twice'" in line]
    assert len(warned) == 1 and warned[0].startswith("[W] ScatterND node 'twice': ") and "undefined" in warned[0], warned
    assert "ScatterND node 'twice'" not in result.stderr.replace(warned[0], ""), result.stderr  # once, as polygraphy's line
    quiet = fx.run_tool("polygraphy", ["run", path, "--pluginref", "--load-inputs", tmp_path / "inputs.json", "-qqqq"])  # errors only
    assert quiet.returncode == 0 and "ScatterND node 'twice'" not in quiet.stdout + quiet.stderr, quiet.stdout + quiet.stderr


def test_the_polygraphy_feeds_wrapper_pickles_and_copies_for_a_subprocess_run(tmp_path):
    """polygraphy's --use-subprocess sends the data loader to a child by pickle: the wrapper went into endless recursion
    there, looking up the loader it wraps before it had one."""
    import copy
    import pickle

    from onnx import helper, numpy_helper
    from polygraphy.json import save_json

    from trt_scatter.polygraphy_ext.loader import PolygraphyFeeds

    feeds = PolygraphyFeeds([{"data": np.ones(2)}], "--load-inputs", ["indices"])
    for again in (pickle.loads(pickle.dumps(feeds)), copy.copy(feeds), copy.deepcopy(feeds)):
        assert list(again)[0]["data"].tolist() == [1, 1]
    nodes = [helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"], axis=0)]
    graph = helper.make_graph(nodes, "g", [fx.info("data", (4, 3), np.float32), fx.info("indices", (1, 3), np.int64),
                                           fx.info("updates", (1, 3), np.float32)], [fx.info("output", (4, 3), np.float32)],
                              [numpy_helper.from_array(np.array([[0, 2, 1]]), "indices")])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "constant_indices.onnx")
    save_json([{"data": np.zeros((4, 3), np.float32), "updates": np.ones((1, 3), np.float32)}], tmp_path / "inputs.json")
    result = fx.run_tool("polygraphy", ["run", path, "--onnxrt", "--pluginref", "--load-inputs", tmp_path / "inputs.json",
                                        "--use-subprocess", "--sequential-runners"])
    assert result.returncode == 0, result.stdout + result.stderr
    # the loader itself, once it has drawn its inputs (its plan holds the rules' functions, which do not pickle)
    ruled = fx.save(fx.scatter_elements_model([6, 5], [2, 5], axis=0), tmp_path / "ruled.onnx")  # indices the loader draws
    drawn = fx.run_tool("polygraphy", ["run", ruled, "--onnxrt", "--pluginref", "--trt-scatter-inputs", "--use-subprocess", "--sequential-runners"])
    assert drawn.returncode == 0 and "PASSED" in drawn.stdout + drawn.stderr, drawn.stdout + drawn.stderr


def test_a_warning_of_the_data_loaders_validation_is_one_polygraphy_line(tmp_path):
    """Constant indices that repeat a target: validation warns when the run's options read the model and again when the
    script's ScatterDataLoader reads it; polygraphy shows it once, as a [W] line, and -qqqq (errors only) not at all."""
    from onnx import helper, numpy_helper

    nodes = [helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"], name="twice")]
    graph = helper.make_graph(nodes, "g", [fx.info("data", (4, 3), np.float32), fx.info("updates", (2, 3), np.float32)],
                              [fx.info("output", (4, 3), np.float32)], [numpy_helper.from_array(np.array([[1], [1]]), "indices")])
    path = fx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "twice.onnx")
    options = ["--pluginref", "--trt-scatter-inputs"]
    result = fx.run_tool("polygraphy", ["run", path, *options], fresh=True)  # not a fork: pytest's log handlers would hold a bare line
    output = result.stdout + result.stderr
    warned = [line for line in output.splitlines() if "ScatterND node 'twice'" in line]
    assert result.returncode == 0 and len(warned) == 1 and warned[0].startswith("[W] "), output
    quiet = fx.run_tool("polygraphy", ["run", path, *options, "-qqqq"], fresh=True)
    assert quiet.returncode == 0 and "twice" not in quiet.stdout + quiet.stderr, quiet.stdout + quiet.stderr


def test_blocks_of_polygraphy_logging_in_overlapping_threads_leave_the_logger_as_it_was(monkeypatch):
    """Comparator runs in two threads: the first thread's block ended while the second's went on, taking polygraphy's
    handler from under it and restoring the logger the second had changed, which was left with no handler and no
    propagation (a script's logging setup never heard trt-scatter again)."""
    import threading

    from polygraphy.logger import G_LOGGER

    from trt_scatter.log import logger, warn
    from trt_scatter.polygraphy_ext.references import logged_by_polygraphy

    lines = []
    monkeypatch.setattr(G_LOGGER, "warning", lambda message, mode=None: lines.append(message))
    handlers, propagate = list(logger.handlers), logger.propagate
    first_in, second_in, first_out = threading.Event(), threading.Event(), threading.Event()

    def first():
        with logged_by_polygraphy():
            first_in.set()
            second_in.wait(10)
        first_out.set()

    def second():
        first_in.wait(10)
        with logged_by_polygraphy():
            second_in.set()
            first_out.wait(10)
            warn("heard after the first block ended")

    threads = [threading.Thread(target=first), threading.Thread(target=second)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(20)
    assert lines == ["heard after the first block ended"]
    assert logger.handlers == handlers and logger.propagate == propagate


def test_in_a_polygraphy_run_trt_scatters_warnings_go_to_polygraphy_alone_and_once(monkeypatch):
    """Within logged_by_polygraphy, a warning is polygraphy's line and not also a record of the handlers a script gave
    Python's root logger (it was printed twice after logging.basicConfig()); a block within another adds nothing."""
    import logging

    from polygraphy.logger import G_LOGGER

    from trt_scatter.log import warn
    from trt_scatter.polygraphy_ext.references import logged_by_polygraphy

    lines = []
    monkeypatch.setattr(G_LOGGER, "warning", lambda message, mode=None: lines.append(message))  # whatever its severity here
    records = []
    handler = logging.Handler()
    handler.emit = records.append
    logging.getLogger().addHandler(handler)
    try:
        with logged_by_polygraphy(), logged_by_polygraphy():
            warn("a warning of trt-scatter's, nested")
        warn("a warning of trt-scatter's, outside")
    finally:
        logging.getLogger().removeHandler(handler)
    assert lines == ["a warning of trt-scatter's, nested"]
    assert [record.getMessage() for record in records] == ["a warning of trt-scatter's, outside"]
