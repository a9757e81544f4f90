"""trt_scatter.reference: whole models run by ONNX's evaluator with the trt_scatter ops from the oracle."""

import numpy as np
import pytest
from onnx import TensorProto, helper

import onnx_fixtures as fx
from trt_scatter import oracle
from trt_scatter.ops import DOMAIN, VERSION
from trt_scatter.reference import Reference


def _mixed_model():
    """MatMul -> SliceScatter (plugin node, run-time start) -> Sigmoid: standard ops around a trt_scatter node."""
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["data"]),
        helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step", "axes"], ["written"], domain=DOMAIN, inplace=0),
        helper.make_node("Sigmoid", ["written"], ["y"]),
    ]
    inputs = [
        helper.make_tensor_value_info("x", TensorProto.FLOAT, [3, 4]),
        helper.make_tensor_value_info("w", TensorProto.FLOAT, [4, 6]),
        helper.make_tensor_value_info("updates", TensorProto.FLOAT, [3, 2]),
        helper.make_tensor_value_info("start", TensorProto.INT64, [1]),
    ]
    initializers = [helper.make_tensor(n, TensorProto.INT64, [1], v) for n, v in (("stop", [2**62]), ("step", [2]), ("axes", [-1]))]
    graph = helper.make_graph(nodes, "mixed", inputs, [helper.make_tensor_value_info("y", TensorProto.FLOAT, [3, 6])], initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, VERSION)])


@pytest.mark.parametrize("start", [2, 3, -3, -4])  # each takes 2 of 6 elements with step 2
def test_mixed_model_equals_numpy_and_the_oracle(start):
    rng = np.random.default_rng(start + 4)
    x, w, updates = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 6), (3, 2)))
    feeds = {"x": x, "w": w, "updates": updates, "start": np.array([start])}
    got = Reference(_mixed_model()).run(feeds)["y"]
    written = oracle.slice_scatter(x @ w, updates, [start], [2**62], [2], [-1])
    np.testing.assert_allclose(got, 1 / (1 + np.exp(-written)), rtol=1e-6)


def test_the_oracles_error_reaches_the_caller():
    feeds = {"x": np.ones((3, 4), np.float32), "w": np.ones((4, 6), np.float32), "updates": np.ones((3, 2), np.float32), "start": np.array([0])}
    with pytest.raises(oracle.ScatterInputError, match=r"slice_scatter: 'updates' must have shape \(3, 3\)"):  # start 0 slices 3
        Reference(_mixed_model()).run(feeds)


def test_feeds_that_are_not_a_dict_are_refused_by_name():
    """A list of arrays (inputs by position) is refused, not read as names."""
    with pytest.raises(TypeError, match=r"^Reference.run: feeds must be a dict of input name -> array \(got list\)$"):
        Reference(_mixed_model()).run([np.ones((3, 4), np.float32)])


def test_a_model_that_imports_the_default_domain_as_ai_onnx_runs():
    """ONNX names the default domain "" or "ai.onnx" alike; ONNX's evaluator knows only "" (it refused the model)."""
    nodes = [helper.make_node("ScatterUpdate", ["data", "indices", "updates", "axis"], ["written"], domain=DOMAIN),
             helper.make_node("Relu", ["written"], ["out"]), helper.make_node("Neg", ["out"], ["output"], domain="ai.onnx")]
    graph = helper.make_graph(nodes, "g", [fx.info("data", [5, 3]), fx.info("updates", [2, 3])],
                              [fx.info("output", [5, 3])],
                              [helper.make_tensor("indices", TensorProto.INT64, [2], [4, 1]), helper.make_tensor("axis", TensorProto.INT64, [], [0])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("ai.onnx", 11), helper.make_opsetid(DOMAIN, VERSION)])
    data, updates = np.arange(15, dtype=np.float32).reshape(5, 3) - 7, np.full((2, 3), -2.0, np.float32)
    expected = -np.maximum(oracle.scatter_update(data, np.array([4, 1]), updates, 0), 0)
    assert np.array_equal(Reference(model).run({"data": data, "updates": updates})["output"], expected)


def test_the_error_names_the_node_whose_inputs_break_the_rule():
    """Two ScatterElements on one indices input: the one the values do not fit is named, by name or by output."""
    nodes = [helper.make_node("ScatterElements", ["big", "indices", "updates"], ["out_big"], name="wide", axis=0),
             helper.make_node("ScatterElements", ["small", "indices", "updates"], ["out_small"], axis=0)]
    graph = helper.make_graph(nodes, "g", [fx.info("big", [6]), fx.info("small", [3]),
                                           fx.info("indices", [2], TensorProto.INT64), fx.info("updates", [2])],
                              [fx.info("out_big", [6]), fx.info("out_small", [3])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"big": np.zeros(6, np.float32), "small": np.zeros(3, np.float32), "indices": np.array([1, 5]), "updates": np.ones(2, np.float32)}
    with pytest.raises(oracle.ScatterInputError) as caught:
        Reference(model).run(feeds)
    assert str(caught.value) == ("ScatterElements node (output 'out_small'): scatter_elements: 'indices' values must be in [-3, 2] "
                                 "for a dimension of size 3 (got 5)")
    assert caught.value.input_name == "indices"


def test_the_error_names_the_models_input_that_gave_the_broken_input():
    """The rule names the op's input ('indices'); where the model's own input of another name gave it, the line names
    that input too, the one a user's feed file or profile holds; a tensor computed from one input's values (a KV cache's
    position wrapped from the end by the data's shape) names that input as its source; one from several, none."""
    nodes = [helper.make_node("ScatterElements", ["x", "edge_index", "edge_values"], ["out"], name="edges", axis=0),
             helper.make_node("Add", ["edge_index", "one"], ["shifted"]),
             helper.make_node("ScatterElements", ["x", "shifted", "edge_values"], ["out_shifted"], name="shifted_edges", axis=0)]
    graph = helper.make_graph(nodes, "g", [fx.info("x", [3]), fx.info("edge_index", [2], TensorProto.INT64), fx.info("edge_values", [2])],
                              [fx.info("out", [3]), fx.info("out_shifted", [3])], [helper.make_tensor("one", TensorProto.INT64, [], [1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"x": np.zeros(3, np.float32), "edge_index": np.array([0, 4]), "edge_values": np.ones(2, np.float32)}
    with pytest.raises(oracle.ScatterInputError) as caught:
        Reference(model).run(feeds)
    assert str(caught.value) == ("ScatterElements node 'edges': scatter_elements: 'indices' values must be in [-3, 2] for a dimension of "
                                 "size 3 (got 4); 'indices' is the model's input 'edge_index'")
    feeds["edge_index"] = np.array([0, 2])
    with pytest.raises(oracle.ScatterInputError) as caught:
        Reference(model).run(feeds)
    assert str(caught.value).endswith("(got 3); 'indices' is computed from the model's input 'edge_index'"), caught.value
    wrapped = [helper.make_node("Shape", ["x"], ["x_shape"]), helper.make_node("Add", ["edge_index", "x_shape"], ["from_end"]),
               helper.make_node("Add", ["from_end", "offset"], ["moved"]),
               helper.make_node("ScatterElements", ["x", "from_end", "edge_values"], ["out"], name="from_end", axis=0),
               helper.make_node("ScatterElements", ["x", "moved", "edge_values"], ["out_moved"], name="moved", axis=0)]
    graph = helper.make_graph(wrapped, "g", [fx.info("x", [3]), fx.info("edge_index", [2], TensorProto.INT64), fx.info("edge_values", [2]),
                                             fx.info("offset", [1], TensorProto.INT64)], [fx.info("out", [3]), fx.info("out_moved", [3])])
    feeds = {"x": np.zeros(3, np.float32), "edge_index": np.array([-3, 4]), "edge_values": np.ones(2, np.float32), "offset": np.array([-1])}
    with pytest.raises(oracle.ScatterInputError) as caught:  # x reaches it through its shape alone: not a source of its values
        Reference(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])).run(feeds)
    assert str(caught.value).endswith("(got 7); 'indices' is computed from the model's input 'edge_index'"), caught.value
    feeds["edge_index"], feeds["offset"] = np.array([-3, -2]), np.array([-5])
    with pytest.raises(oracle.ScatterInputError) as caught:  # edge_index and offset: no one source
        Reference(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])).run(feeds)
    assert str(caught.value).endswith("'moved': scatter_elements: 'indices' values must be in [-3, 2] for a dimension of size 3 (got -5)"), caught.value
    cast = [helper.make_node("Cast", ["edge_index32"], ["edge_index"], to=TensorProto.INT64),  # int32 indices, as ScatterND needs
            helper.make_node("ScatterElements", ["x", "edge_index", "edge_values"], ["out"], name="edges", axis=0)]
    graph = helper.make_graph(cast, "g", [fx.info("x", [3]), fx.info("edge_index32", [2], TensorProto.INT32), fx.info("edge_values", [2])],
                              [fx.info("out", [3])])
    feeds = {"x": np.zeros(3, np.float32), "edge_index32": np.array([0, 4], np.int32), "edge_values": np.ones(2, np.float32)}
    with pytest.raises(oracle.ScatterInputError) as caught:
        Reference(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])).run(feeds)
    assert str(caught.value).endswith("(got 4); 'indices' is the model's input 'edge_index32'"), caught.value
    cast_like = [helper.make_node("CastLike", ["edge_index32", "like"], ["edge_index"]),  # 'like' gives the type alone
                 helper.make_node("ScatterElements", ["x", "edge_index", "edge_values"], ["out"], name="edges", axis=0)]
    graph = helper.make_graph(cast_like, "g", [fx.info("x", [3]), fx.info("edge_index32", [2], TensorProto.INT32), fx.info("edge_values", [2]),
                                               fx.info("like", [1], TensorProto.INT64)], [fx.info("out", [3])])
    with pytest.raises(oracle.ScatterInputError) as caught:
        Reference(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])).run({**feeds, "like": np.zeros(1, np.int64)})
    assert str(caught.value).endswith("(got 4); 'indices' is the model's input 'edge_index32'"), caught.value


@pytest.mark.parametrize("drop, extra, message", [
    ("start", None, r"^Reference\.run: no feed for the model's input 'start' \(its inputs: x, w, updates, start\)$"),
    (None, "strat", r"^Reference\.run: 'strat' is not an input of the model \(its inputs: x, w, updates, start\)$"),
])
def test_a_missing_or_unknown_feed_is_named(drop, extra, message):
    """A feed dict that misses an input, or names one the model lacks (a typo would otherwise be
    ignored and the input left to an initializer, or to onnx.reference's message), is one line."""
    feeds = {"x": np.ones((3, 4), np.float32), "w": np.ones((4, 6), np.float32), "updates": np.ones((3, 2), np.float32), "start": np.array([0])}
    feeds.pop(drop, None)
    if extra:
        feeds[extra] = np.array([0])
    with pytest.raises(ValueError, match=message):
        Reference(_mixed_model()).run(feeds)


def test_a_model_is_read_from_its_path(tmp_path):
    import onnx

    onnx.save(_mixed_model(), tmp_path / "mixed.onnx")
    rng = np.random.default_rng(0)
    x, w, updates = (rng.standard_normal(s).astype(np.float32) for s in ((3, 4), (4, 6), (3, 2)))
    feeds = {"x": x, "w": w, "updates": updates, "start": np.array([2])}
    written = oracle.slice_scatter(x @ w, updates, [2], [2**62], [2], [-1])
    for source in (str(tmp_path / "mixed.onnx"), tmp_path / "mixed.onnx"):
        np.testing.assert_allclose(Reference(source).run(feeds)["y"], 1 / (1 + np.exp(-written)), rtol=1e-6)


def test_a_file_that_is_no_model_is_refused_in_one_line(tmp_path):
    from trt_scatter.passes.validate import ModelError

    (tmp_path / "junk.onnx").write_bytes(b"\xff\xfe not a model")
    with pytest.raises(ModelError, match=r"^'.*junk\.onnx' is not an ONNX model \([^\n]*\)$"):
        Reference(tmp_path / "junk.onnx")


def test_another_ops_failure_names_the_node():
    """ONNX's evaluator raises a Gather's IndexError naming no node: the reference leads it with the node's label."""
    import onnx
    from onnx import TensorProto, helper

    from trt_scatter.reference import NodeRunError, Reference

    graph = helper.make_graph([helper.make_node("Gather", ["table", "ids"], ["out"], name="embed")], "g",
                              [helper.make_tensor_value_info("table", TensorProto.FLOAT, [4, 2]), helper.make_tensor_value_info("ids", TensorProto.INT64, [1])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [1, 2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    onnx.checker.check_model(model)
    with pytest.raises(NodeRunError, match=r"^Gather node 'embed': index 9 is out of bounds"):
        Reference(model).run({"table": np.zeros((4, 2), np.float32), "ids": np.array([9])})


@pytest.mark.parametrize("count", [0, 1, 3])
def test_a_loop_without_a_cond_input_runs_its_count(count):
    """The spec: a Loop whose cond input is left out runs M times (ONNX's own evaluator ran it zero times, so
    `trt-scatter check` said FAILED against onnxruntime on a correct model)."""
    import onnxruntime

    body = helper.make_graph([helper.make_node("Identity", ["cond_in"], ["cond_out"]), helper.make_node("Add", ["value_in", "step"], ["value_out"])], "body",
                             [helper.make_tensor_value_info("i", TensorProto.INT64, []), helper.make_tensor_value_info("cond_in", TensorProto.BOOL, []),
                              helper.make_tensor_value_info("value_in", TensorProto.FLOAT, [2])],
                             [helper.make_tensor_value_info("cond_out", TensorProto.BOOL, []), helper.make_tensor_value_info("value_out", TensorProto.FLOAT, [2])])
    graph = helper.make_graph([helper.make_node("Loop", ["count", "", "start"], ["output"], body=body)], "g",
                              [helper.make_tensor_value_info("start", TensorProto.FLOAT, [2]), helper.make_tensor_value_info("step", TensorProto.FLOAT, [2]),
                               helper.make_tensor_value_info("count", TensorProto.INT64, [])], [helper.make_tensor_value_info("output", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds = {"start": np.array([1, 2], np.float32), "step": np.array([1, 2], np.float32), "count": np.array(count, np.int64)}
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_array_equal(Reference(model).run(feeds)["output"], expected)
    assert expected.tolist() == [1 + count, 2 + 2 * count]


def _loop_with_a_scan_output(scan):
    """A Loop carrying ``v`` (2, 5) whose body writes 9 at row 0, column ``i`` of it (ScatterElements), and scans ``s``: the
    written value (declared (2, 5), or undeclared for inference to find), its sum (a scalar) or the written value reshaped
    to the model's input ``shape`` (rank 2, sizes that no inference knows)."""
    from onnx import numpy_helper

    made = {"declared": ("Identity", [2, 5]), "inferred": ("Identity", None), "scalar": ("ReduceSum", []), "reshaped": ("Reshape", None)}[scan]
    nodes = [helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Reshape", ["i", "column_shape"], ["column"]),
             helper.make_node("Concat", ["row", "column"], ["at"], axis=1), helper.make_node("ScatterND", ["v", "at", "nine"], ["v2"]),
             helper.make_node(made[0], ["v2", "shape"] if scan == "reshaped" else ["v2"], ["s"], **({"keepdims": 0} if scan == "scalar" else {}))]
    body = helper.make_graph(nodes, "body", [fx.info("i", [], np.int64), fx.info("c", [], np.bool_), fx.info("v", (2, 5))],
                             [fx.info("c2", [], np.bool_), fx.info("v2", (2, 5)), fx.info("s", made[1])],
                             [numpy_helper.from_array(np.array([1, 1], np.int64), "column_shape"), numpy_helper.from_array(np.array([[0]], np.int64), "row"),
                              numpy_helper.from_array(np.array([9.0], np.float32), "nine")])
    graph = helper.make_graph([helper.make_node("Loop", ["n", "cond", "x"], ["out", "scan"], body=body)], "g",
                              [fx.info("n", [], np.int64), fx.info("cond", [], np.bool_), fx.info("x", (2, 5)), fx.info("shape", [2], np.int64)],
                              [fx.info("out", (2, 5)), fx.info("scan", None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("count, cond", [(0, True), (1, True), (3, True), (4, False)])
@pytest.mark.parametrize("scan", ["declared", "inferred", "scalar", "reshaped"])
def test_a_loops_scan_output_stacks_its_iterations_as_onnxruntime_does(scan, count, cond):
    """The spec: scan outputs are the iterations' values stacked on a new first axis, empty after no iteration. ONNX's
    evaluator concatenated them instead ((2, 5) each gave (6, 5) for 3 iterations, scalars gave (3, 1)) and failed after
    no iteration. With none, onnxruntime gives the per-iteration shape that inference finds, 0 for each size it does
    not, and no sizes where it finds no rank."""
    import onnxruntime

    model = _loop_with_a_scan_output(scan)
    feeds = {"n": np.array(count, np.int64), "cond": np.array(cond), "x": np.zeros((2, 5), np.float32), "shape": np.array([5, 2], np.int64)}
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(["out", "scan"], feeds)
    got = Reference(model).run(feeds)
    iterations = count if cond else 0
    assert expected[1].shape[0] == iterations and expected[0][0, : iterations].tolist() == [9.0] * iterations
    for name, value in zip(["out", "scan"], expected):
        assert got[name].shape == value.shape and got[name].dtype == value.dtype, name
        np.testing.assert_array_equal(got[name], value)


@pytest.mark.parametrize("scan, shape", [("declared", (0, 2, 5)), ("inferred", (0,)), ("scalar", (0,))])
def test_a_loops_scan_output_after_no_iteration_in_an_evaluator_without_the_reference_has_the_declared_shape(scan, shape):
    """``REFERENCE_OPS`` in ONNX's evaluator, without :class:`Reference` and the model's inferred shapes: the body's
    declared per-iteration shape and type, 0 for each size it leaves out."""
    from onnx.reference import ReferenceEvaluator

    from trt_scatter.reference import REFERENCE_OPS

    feeds = {"n": np.array(0, np.int64), "cond": np.array(True), "x": np.zeros((2, 5), np.float32), "shape": np.array([5, 2], np.int64)}
    out, scanned = ReferenceEvaluator(_loop_with_a_scan_output(scan), new_ops=REFERENCE_OPS).run(None, feeds)
    assert scanned.shape == shape and scanned.dtype == np.float32 and out.shape == (2, 5)


def _scan_writing_rows(input_axes, input_directions, output_axes, output_directions):
    """A Scan over ``xs`` (4 x 3 along its scan axis, the other axis 3) and ``ids`` (4 row numbers, along axis 0): its state
    (3, 3) gets the slice of ``xs`` written at row ``ids[t]`` (ScatterND) each step, and it scans the state's sum over rows
    and the slice doubled."""
    from onnx import numpy_helper

    body = helper.make_graph([helper.make_node("Reshape", ["row", "at_shape"], ["at"]), helper.make_node("Unsqueeze", ["x", "zero"], ["x_row"]),
                              helper.make_node("ScatterND", ["state", "at", "x_row"], ["state2"]),
                              helper.make_node("ReduceSum", ["state2", "zero"], ["total"], keepdims=0), helper.make_node("Add", ["x", "x"], ["twice"])],
                             "body", [fx.info("state", (3, 3)), fx.info("x", (3,)), fx.info("row", [], np.int64)],
                             [fx.info("state2", (3, 3)), fx.info("total", (3,)), fx.info("twice", (3,))],
                             [numpy_helper.from_array(np.array([1, 1], np.int64), "at_shape"), numpy_helper.from_array(np.array([0], np.int64), "zero")])
    node = helper.make_node("Scan", ["init", "xs", "ids"], ["final", "totals", "doubled"], body=body, num_scan_inputs=2,
                            scan_input_axes=[input_axes, 0], scan_input_directions=[input_directions, 0],
                            scan_output_axes=output_axes, scan_output_directions=output_directions)
    graph = helper.make_graph([node], "g", [fx.info("init", (3, 3)), fx.info("xs", None), fx.info("ids", (4,), np.int64)],
                              [fx.info("final", (3, 3)), fx.info("totals", None), fx.info("doubled", None)])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("input_axis, input_direction, output_axes, output_directions", [
    (0, 0, [0, 0], [0, 0]), (1, 0, [0, 0], [0, 0]), (-1, 0, [0, 0], [0, 0]), (0, 1, [0, 0], [0, 0]),
    (0, 0, [1, -1], [0, 0]), (0, 0, [0, 0], [1, 0]), (1, 1, [1, 0], [0, 1])])
def test_a_scan_runs_along_its_axes_and_directions_as_onnxruntime_does(input_axis, input_direction, output_axes, output_directions):
    """The spec's Scan: each scan input sliced along its axis, forward or in reverse, and each scan output stacked along
    its axis, in its direction. ONNX's evaluator refused every axis and direction but the first's (the reference could
    not check such a model)."""
    import onnxruntime

    model = _scan_writing_rows(input_axis, input_direction, output_axes, output_directions)
    xs = np.arange(12, dtype=np.float32).reshape(4, 3)
    feeds = {"init": np.zeros((3, 3), np.float32), "xs": xs if input_axis == 0 else xs.T.copy(), "ids": np.array([2, 0, 2, 1])}
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)
    got = Reference(model).run(feeds)
    for name, value in zip(["final", "totals", "doubled"], expected):
        assert got[name].shape == value.shape, name
        np.testing.assert_array_equal(got[name], value, err_msg=name)


@pytest.mark.parametrize("input_axis, output_axes, message", [
    (2, [0, 0], r"'scan_input_axes' value 2 must be in \[-2, 1\] for scan input 0 \(of rank 2\)"),
    (-3, [0, 0], r"'scan_input_axes' value -3 must be in \[-2, 1\] for scan input 0 \(of rank 2\)"),
    (0, [0, 2], r"'scan_output_axes' value 2 must be in \[-2, 1\] for scan output 1 \(of rank 2\)")])
def test_a_scan_axis_past_the_rank_is_one_line_naming_the_node(input_axis, output_axes, message):
    """onnxruntime refuses an axis past the rank ("Invalid value in scan_input_axes"); the reference wrapped it (axis 2 of
    a rank-2 input was taken for axis 0) and gave an answer for an invalid model."""
    model = _scan_writing_rows(input_axis, 0, output_axes, [0, 0])
    feeds = {"init": np.zeros((3, 3), np.float32), "xs": np.zeros((4, 3), np.float32), "ids": np.array([2, 0, 2, 1])}
    with pytest.raises(Exception, match=r"^Scan node \(output 'final'\): Scan: " + message + "$"):
        Reference(model).run(feeds)


def test_a_scan_over_inputs_of_different_lengths_or_none_is_one_line_naming_the_node():
    model = _scan_writing_rows(0, 0, [0, 0], [0, 0])
    feeds = {"init": np.zeros((3, 3), np.float32), "xs": np.zeros((5, 3), np.float32), "ids": np.array([2, 0, 2, 1])}
    with pytest.raises(Exception, match=r"^Scan node \(output 'final'\): Scan: its scan inputs must have one length along their scan axes \(got 5, 4\)$"):
        Reference(model).run(feeds)
    model.graph.input[2].type.tensor_type.shape.dim[0].dim_param = "steps"
    feeds |= {"xs": np.zeros((0, 3), np.float32), "ids": np.zeros(0, np.int64)}
    with pytest.raises(Exception, match=r"^Scan node \(output 'final'\): Scan: its scan inputs are empty along their scan axes, so no step runs"):
        Reference(model).run(feeds)


@pytest.mark.parametrize("rows, static, warned", [(3, False, True), (4, False, False), (3, True, False)])
def test_constant_indices_that_repeat_a_target_at_the_runs_shapes_only_are_warned_of_by_the_run(caplog, rows, static, warned):
    """[[2], [-1]] into a dimension of 3 write row 2 twice: where the model's shapes say 3, validation warns (so the run
    does not again); where the dimension is dynamic, only the run can tell, and it said nothing (constant indices)."""
    import logging

    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph([helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])], "g",
                              [helper.make_tensor_value_info("data", TensorProto.FLOAT, [3 if static else "n", 2]),
                               helper.make_tensor_value_info("updates", TensorProto.FLOAT, [2, 2])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)],
                              [numpy_helper.from_array(np.array([[2], [-1]]), "indices")])
    reference = Reference(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    with caplog.at_level(logging.WARNING, logger="trt_scatter"):
        reference.run({"data": np.zeros((rows, 2), np.float32), "updates": np.arange(4, dtype=np.float32).reshape(2, 2)})
    assert ("rows 0 and 1 of 'indices' both write (2,) (in the inputs of a run): the result is undefined" in caplog.text) == warned, caplog.text


@pytest.mark.parametrize("elem_type, name", [(TensorProto.COMPLEX64, "complex64"), (TensorProto.FLOAT8E4M3FN, "float8_e4m3fn"), (TensorProto.STRING, "object")])
def test_a_scatter_of_values_the_oracle_does_not_compute_is_refused_when_the_reference_is_made(tmp_path, capsys, elem_type, name):
    """ONNX's ScatterElements takes any element type; the oracle computes numbers only. The reference said so only on a run,
    and ``check`` before it failed in polygraphy's words ("'int' object has no attribute 'is_integral'") and blamed the
    generated inputs."""
    from trt_scatter.cli import main
    from trt_scatter.model import ModelError

    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"], name="write")], "g",
                              [value("data", elem_type, [4]), value("indices", TensorProto.INT64, [2]), value("updates", elem_type, [2])],
                              [value("output", elem_type, [4])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    message = (f"the reference cannot run this model: ScatterElements node 'write': scatter_elements: 'data' must have one of the element "
               f"types bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64 (got {name})")
    with pytest.raises(ModelError) as refused:
        Reference(model)
    assert str(refused.value) == message
    import onnx

    onnx.save(model, tmp_path / "model.onnx")
    assert main(["check", str(tmp_path / "model.onnx")]) == 2
    assert capsys.readouterr().err == f"trt-scatter check: error: {message}\n"  # no blame on the generated inputs


def test_a_scatter_of_complex_values_in_an_if_branch_is_refused_when_the_reference_is_made():
    """The scatters of If and Loop bodies too: the main graph's alone were checked."""
    from trt_scatter.model import ModelError

    value = helper.make_tensor_value_info
    branch = [helper.make_graph([helper.make_node("ScatterElements", ["data", "indices", "updates"], [f"{name}_out"], name=f"{name}_write")],
                                name, [], [value(f"{name}_out", TensorProto.COMPLEX64, [4])]) for name in ("then", "else")]
    graph = helper.make_graph([helper.make_node("If", ["cond"], ["output"], name="choice", then_branch=branch[0], else_branch=branch[1])], "g",
                              [value("cond", TensorProto.BOOL, []), value("data", TensorProto.COMPLEX64, [4]), value("indices", TensorProto.INT64, [2]),
                               value("updates", TensorProto.COMPLEX64, [2])], [value("output", TensorProto.COMPLEX64, [4])])
    with pytest.raises(ModelError, match=r"^the reference cannot run this model: ScatterElements node '(then|else)_write': scatter_elements: 'data' must "
                                         r"have one of the element types bool, int8 to int64, uint8 to uint64, float16, bfloat16, float32 and float64 \(got complex64\)$"):
        Reference(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))


@pytest.mark.parametrize("elem_type, name", [(TensorProto.COMPLEX64, "complex64"), (TensorProto.STRING, "string")])
def test_check_refuses_inputs_it_cannot_draw_or_compare_by_name(tmp_path, capsys, elem_type, name):
    """A model with no scatter: polygraphy's words ("'int' object has no attribute 'is_integral'") blamed the drawn inputs."""
    import onnx

    from trt_scatter.cli import main

    value = helper.make_tensor_value_info
    graph = helper.make_graph([helper.make_node("Identity", ["x"], ["y"])], "g", [value("x", elem_type, [4])], [value("y", elem_type, [4])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "identity.onnx")
    assert main(["check", str(tmp_path / "identity.onnx")]) == 2
    assert capsys.readouterr().err == (f"trt-scatter check: error: graph input 'x' is {name}: check draws and compares numbers and bools "
                                       "(TensorRT has no such type either)\n")


@pytest.mark.parametrize("data_shape, indices_shape, axis", [((1, 64), (1, 4), 1), ((2, 100), (2, 7), -1), ((70, 3), (5, 2), 0), ((3, 40, 2), (3, 9, 2), 1)],
                         ids=["bert-token-types", "negative-axis", "smaller-off-the-axis", "rank-3"])
def test_gather_elements_along_a_long_axis_computes_what_onnxruntime_does(data_shape, indices_shape, axis):
    """ONNX's evaluator gathers with np.choose, which takes at most 32 choices (64 in NumPy 2): along a longer axis its
    fallback failed ('cannot reshape array of size 1 into shape (1,4)'), so every check of a BERT model (a gather of
    its 512 token types) failed. Negative indices count from the end."""
    import onnxruntime

    node = helper.make_node("GatherElements", ["data", "indices"], ["output"], axis=axis)
    graph = helper.make_graph([node], "g", [fx.info("data", list(data_shape)), fx.info("indices", list(indices_shape), TensorProto.INT64)],
                              [fx.info("output", list(indices_shape))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rng = np.random.default_rng(0)
    size = data_shape[axis]
    feeds = {"data": rng.standard_normal(data_shape).astype(np.float32), "indices": rng.integers(-size, size, indices_shape)}
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    np.testing.assert_array_equal(Reference(model).run(feeds)["output"], expected)
    feeds["indices"] = feeds["indices"].copy()
    feeds["indices"].reshape(-1)[0] = size  # one past the end: refused, not wrapped to the first
    with pytest.raises(Exception, match=rf"GatherElements node \(output 'output'\): GatherElements: 'indices' values must be in \[{-size}, {size - 1}\] along data's axis {axis % len(data_shape)} \(got {size}\)"):
        Reference(model).run(feeds)


@pytest.mark.parametrize("data_shape, indices_shape, axis, message", [
    ((3, 1), (2, 2), 0, r"'indices' must be no longer than data \(3, 1\) off axis 0 \(got shape \(2, 2\)\)"),
    ((0, 3), (1, 3), 1, r"'indices' must be no longer than data \(0, 3\) off axis 1 \(got shape \(1, 3\)\)"),
    ((2, 3), (2, 1), 2, r"'axis' must be in \[-2, 1\] \(got 2\)"),
    ((2, 3), (2,), 0, r"'indices' must have data's rank \(2\) \(got rank 1\)")], ids=["broadcast-1", "empty-off-axis", "axis-past-rank", "rank"])
def test_gather_elements_refuses_what_onnxruntime_refuses(data_shape, indices_shape, axis, message):
    """onnxruntime refuses indices longer than data off the axis, an axis outside [-r, r-1] and a rank that differs;
    np.take_along_axis would broadcast a data dim of 1 (or 0) to them and a modulo would wrap the axis: answers ONNX has none for."""
    node = helper.make_node("GatherElements", ["data", "indices"], ["output"], axis=axis)
    graph = helper.make_graph([node], "g", [fx.info("data", None), fx.info("indices", None, TensorProto.INT64)], [fx.info("output", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    feeds = {"data": np.zeros(data_shape, np.float32), "indices": np.zeros(indices_shape, np.int64)}
    with pytest.raises(Exception, match=r"GatherElements node \(output 'output'\): GatherElements: " + message):
        Reference(model).run(feeds)


def test_a_loop_body_input_named_like_a_model_input_is_the_bodys_own():
    """A Loop body's carried value named ``data`` as the model's input ``data`` is: the body writes into the carried
    value, as onnxruntime runs it (ONNX's own evaluator gave the body the model's input instead)."""
    import onnxruntime

    model = fx.loop_carrying_a_value_named_like_an_input(body_shape=(2, 5), input_shape=(3, 4), column=4)
    feeds = {"n": np.array(2, np.int64), "cond": np.array(True), "x0": np.ones((2, 5), np.float32), "data": np.zeros((3, 4), np.float32)}
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(["out", "z"], feeds)
    got = Reference(model).run(feeds)
    np.testing.assert_array_equal(got["out"], expected[0])
    np.testing.assert_array_equal(got["z"], expected[1])
    assert expected[0][0, 4] == 9 and expected[0].sum() == 9 + 9


@pytest.mark.parametrize("holder", ["If", "Loop"])
def test_a_subgraph_initializer_named_like_a_main_graph_one_is_the_subgraphs_own(holder):
    """The subgraph's ``idx`` [[3]] and the main graph's ``idx`` [[1]]: the subgraph's write reads its own, as
    onnxruntime runs it (ONNX's evaluator fed it the main graph's over its initializer)."""
    import onnxruntime
    from onnx import helper, numpy_helper

    inner = [helper.make_node("ScatterElements", ["v", "idx", "upd"], ["y"], axis=1)]
    if holder == "If":
        branch = helper.make_graph([helper.make_node("Identity", ["data"], ["v"]), *inner], "then", [], [fx.info("y", (3, 4))],
                                   [numpy_helper.from_array(np.array([[3]], np.int64), "idx")])
        node = helper.make_node("If", ["cond"], ["out"], then_branch=branch, else_branch=helper.make_graph(
            [helper.make_node("Identity", ["data"], ["e"])], "else", [], [fx.info("e", (3, 4))]))
        inputs, feeds = [fx.info("cond", [], np.bool_)], {"cond": np.array(True)}
    else:
        body = helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]), *inner], "body",
                                 [fx.info("i", [], np.int64), fx.info("c", [], np.bool_), fx.info("v", (3, 4))],
                                 [fx.info("c2", [], np.bool_), fx.info("y", (3, 4))], [numpy_helper.from_array(np.array([[3]], np.int64), "idx")])
        node = helper.make_node("Loop", ["n", "cond", "data"], ["out"], body=body)
        inputs, feeds = [fx.info("n", [], np.int64), fx.info("cond", [], np.bool_)], {"n": np.array(1, np.int64), "cond": np.array(True)}
    graph = helper.make_graph([node, helper.make_node("ScatterElements", ["data", "idx", "upd"], ["w"], axis=1)], "g",
                              [*inputs, fx.info("data", (3, 4))], [fx.info("out", (3, 4)), fx.info("w", (3, 4))],
                              [numpy_helper.from_array(np.array([[1]], np.int64), "idx"), numpy_helper.from_array(np.array([[9.0]], np.float32), "upd")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    feeds["data"] = np.zeros((3, 4), np.float32)
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(["out", "w"], feeds)
    got = Reference(model).run(feeds)
    assert expected[0][0, 3] == 9 and expected[1][0, 1] == 9
    np.testing.assert_array_equal(got["out"], expected[0])
    np.testing.assert_array_equal(got["w"], expected[1])


def test_a_loop_after_no_iteration_in_sibling_bodies_takes_its_own_bodys_shape():
    # two Loop bodies each make an inner Loop's scan output named "s", of 2 and of 3 per iteration: the model's tensors,
    # one table of names, know one of them; onnxruntime gives (2, 0, 2) and (2, 0, 3)
    from onnx import TensorProto as T, helper as h

    def inner(width):
        return h.make_graph([h.make_node("Identity", ["c_in"], ["c_out"]),
                             h.make_node("ConstantOfShape", ["shape"], ["s_out"], value=h.make_tensor("v", T.FLOAT, [1], [1.0]))],
                            f"inner{width}", [h.make_tensor_value_info("i", T.INT64, []), h.make_tensor_value_info("c_in", T.BOOL, [])],
                            [h.make_tensor_value_info("c_out", T.BOOL, []), h.make_tensor_value_info("s_out", T.FLOAT, [width])],
                            [h.make_tensor("shape", T.INT64, [1], [width])])

    def outer(width):
        return h.make_graph([h.make_node("Loop", ["n", ""], ["s"], body=inner(width)), h.make_node("Identity", ["oc"], ["oc_out"])],
                            f"outer{width}", [h.make_tensor_value_info("oi", T.INT64, []), h.make_tensor_value_info("oc", T.BOOL, [])],
                            [h.make_tensor_value_info("oc_out", T.BOOL, []), h.make_tensor_value_info("s", T.FLOAT, [None, None])])

    graph = h.make_graph([h.make_node("Loop", ["m", ""], ["A"], body=outer(2)), h.make_node("Loop", ["m", ""], ["B"], body=outer(3))], "g",
                         [h.make_tensor_value_info("m", T.INT64, []), h.make_tensor_value_info("n", T.INT64, [])],
                         [h.make_tensor_value_info(name, T.FLOAT, [None] * 3) for name in "AB"])
    model = h.make_model(graph, opset_imports=[h.make_opsetid("", 17)])
    got = Reference(model).run({"m": np.array(2, np.int64), "n": np.array(0, np.int64)})
    assert (got["A"].shape, got["B"].shape) == ((2, 0, 2), (2, 0, 3))
