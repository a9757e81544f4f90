"""ScatterDataLoader: for random models of the four ops (dynamic dims, constant or fed parameters),
every generated feed passes the oracle's validation and has the distinct indices the specs need."""

import re

import numpy as np
import onnx
import pytest
from hypothesis import given, note
from hypothesis import strategies as st

import onnx_fixtures as fx
from onnx_fixtures import info
from trt_scatter import onnx_models, oracle
from trt_scatter.polygraphy_ext import ScatterDataLoader
from trt_scatter.inputs import DEFAULT_DIM
from trt_scatter.reference import Reference


def _declared(draw, dims, names):
    """Each dim stays, becomes unknown (None) or becomes its shared name."""
    return [draw(st.sampled_from([d, d, None, name])) for d, name in zip(dims, names)]


@st.composite
def scatter_models(draw):
    op = draw(st.sampled_from(["ScatterElements", "ScatterND", "ScatterUpdate", "SliceScatter"]))
    rank = draw(st.integers(1, 3))
    shape = [draw(st.integers(1, 6)) for _ in range(rank)]
    names = [f"d{i}" for i in range(rank)]
    dtype = draw(st.sampled_from([np.float32, np.int32, np.float16]))
    index_dtype = draw(st.sampled_from([np.int32, np.int64]))
    if op == "ScatterElements":
        axis = draw(st.integers(-rank, rank - 1))
        indices = [draw(st.integers(1, d)) for d in shape]
        # a shared name only where indices and data agree, so the model stays consistent
        indices_decl = [draw(st.sampled_from([i, None])) if i != d else draw(st.sampled_from([i, None, n])) for i, d, n in zip(indices, shape, names)]
        model = fx.scatter_elements_model(_declared(draw, shape, names), indices_decl, axis, dtype, index_dtype)
        return op, model, {"axis": axis}
    if op == "ScatterND":
        k = draw(st.integers(1, rank))
        rows = draw(st.integers(1, int(np.prod(shape[:k]))))
        data_decl = _declared(draw, shape, names)
        indices_decl = [draw(st.sampled_from([rows, None, "rows"])), draw(st.sampled_from([k, k, None]))]
        updates_decl = [indices_decl[0] if isinstance(indices_decl[0], str) else draw(st.sampled_from([rows, None]))]
        updates_decl += [d if isinstance(d, str) else None for d in data_decl[k:]] if indices_decl[1] is None else data_decl[k:]
        if indices_decl[1] is None:  # the loader picks k = rank: updates has no data dims then
            updates_decl = updates_decl[:1]
        return op, fx.scatter_nd_model(data_decl, indices_decl, updates_decl, dtype, np.int64), {}  # ONNX: int64 only
    if op == "ScatterUpdate":
        axis = draw(st.integers(-rank, rank - 1))
        count = draw(st.integers(1, shape[axis]))
        indices_decl = draw(st.sampled_from([[], [count], [None], ["count"]])) if count == 1 else draw(st.sampled_from([[count], [None], ["count"]]))
        data_decl = _declared(draw, shape, names)
        a = axis % rank
        updates_decl = [d if d is not None and not (isinstance(d, int) and isinstance(data_decl[i], (str, type(None)))) else None
                        for i, d in enumerate(data_decl)]
        updates_decl = updates_decl[:a] + [draw(st.sampled_from([i, None])) if i is not None else None for i in indices_decl] + updates_decl[a + 1 :]
        updates_decl = [d if not isinstance(d, str) or d != "count" else None for d in updates_decl]
        return op, fx.scatter_update_model(data_decl, indices_decl, updates_decl, axis, dtype, index_dtype), {"axis": axis}
    # SliceScatter: constants fixed by the model (static data), or start/stop/step[/axes] fed
    sliced = draw(st.integers(1, rank))
    axes = draw(st.permutations(range(rank)))[:sliced]
    with_axes = draw(st.booleans())
    if draw(st.booleans()):
        start = [draw(st.integers(-shape[a] - 2, shape[a] + 2)) for a in axes]
        stop = [draw(st.integers(-shape[a] - 2, shape[a] + 2)) for a in axes]
        step = [draw(st.sampled_from([1, 2, 3, -1, -2, -3])) for _ in axes]
        per_axis = [np.arange(d) for d in shape]
        for a, b, e, s in zip(axes, start, stop, step):
            per_axis[a] = per_axis[a][b:e:s]
        updates_decl = [draw(st.sampled_from([len(p), None])) for p in per_axis]
        model = fx.slice_scatter_model(shape, updates_decl, start, stop, step, axes if with_axes else None, dtype, index_dtype)
        if not with_axes and axes != list(range(sliced)):  # default axes are 0..n-1: rebuild for those
            axes = list(range(sliced))
            per_axis = [np.arange(d) for d in shape]
            for a, b, e, s in zip(axes, start, stop, step):
                per_axis[a] = per_axis[a][b:e:s]
            model = fx.slice_scatter_model(shape, [len(p) for p in per_axis], start, stop, step, None, dtype, index_dtype)
        return op, model, {}
    data_decl = _declared(draw, shape, names)
    constant = draw(st.sampled_from([(), ("step",), ("start",), ("stop",), ("start", "step"), ("stop", "step"), ("start", "stop")]))
    if constant:  # mixed: the loader searches the fed values that fit the constants
        data_decl = shape
        updates_decl = [None] * rank
        values = {"start": [draw(st.integers(-d - 2, d + 2)) for d in shape[:sliced]], "stop": [draw(st.integers(-d - 2, d + 2)) for d in shape[:sliced]],
                  "step": [draw(st.sampled_from([1, 2, 3, -1, -2, -3])) for _ in range(sliced)]}
        with_axes = False
    else:
        updates_decl = [draw(st.sampled_from([None, d])) if isinstance(d, int) else None for d in data_decl]
        values = {key: [0] * sliced for key in ("start", "stop", "step")}
    model = fx.slice_scatter_model(data_decl, updates_decl, values["start"], values["stop"], values["step"], axes if with_axes else None,
                                   dtype, index_dtype, constant_params=constant)  # fmt: skip
    return op, model, {}


def describe(model):
    def dims(value):
        return [d.dim_value if d.HasField("dim_value") else (d.dim_param or "?") for d in value.type.tensor_type.shape.dim]

    inputs = ", ".join(f"{v.name}{dims(v)}" for v in model.graph.input)
    constants = ", ".join(f"{i.name}={__import__('onnx').numpy_helper.to_array(i).tolist()}" for i in model.graph.initializer)
    return f"{model.graph.node[0].op_type}({inputs}; {constants})"


def assert_valid(op, feed, constants, model):
    initializers = {init.name: init for init in model.graph.initializer}
    if op == "ScatterElements":
        oracle.scatter_elements(feed["data"], feed["indices"], feed["updates"], constants["axis"])
        targets = feed["indices"] % max(feed["data"].shape[constants["axis"]], 1)  # -1 and s-1 are one target
        line_sorted = np.sort(targets, axis=constants["axis"])
        assert not (np.diff(line_sorted, axis=constants["axis"]) == 0).any(), "two writes to one element"
    elif op == "ScatterND":
        oracle.scatter_nd(feed["data"], feed["indices"], feed["updates"])
        k = feed["indices"].shape[-1]
        rows = (feed["indices"] % np.maximum(feed["data"].shape[:k], 1)).reshape(-1, k)  # -1 and s-1 are one target
        assert len(np.unique(rows, axis=0)) == len(rows), "two rows address one place"
    elif op == "ScatterUpdate":
        oracle.scatter_update(feed["data"], feed["indices"], feed["updates"], constants["axis"])
        assert len(np.unique(feed["indices"])) == feed["indices"].size, "repeated index"
    else:
        from onnx import numpy_helper

        params = {name: feed[name] if name in feed else numpy_helper.to_array(initializers[name]) for name in ("start", "stop", "step")}
        axes = feed.get("axes", numpy_helper.to_array(initializers["axes"]) if "axes" in initializers else None)
        oracle.slice_scatter(feed["data"], feed["updates"], params["start"], params["stop"], params["step"], axes)


@given(case=scatter_models(), seed=st.integers(0, 2**32 - 1))
def test_generated_inputs_pass_the_oracle_and_are_distinct(case, seed):
    op, model, constants = case
    note(describe(model))
    loader = ScatterDataLoader(model, seed=seed, iterations=2)
    feeds = list(loader)
    assert len(feeds) == 2
    for feed in feeds:
        assert set(feed) == {value.name for value in model.graph.input if value.name not in {i.name for i in model.graph.initializer}}
        for value in model.graph.input:
            if value.name in feed:
                declared = [d.dim_value if d.HasField("dim_value") else None for d in value.type.tensor_type.shape.dim]
                assert len(feed[value.name].shape) == len(declared)
                assert all(d is None or d == s for d, s in zip(declared, feed[value.name].shape)), (value.name, declared)
        assert_valid(op, feed, constants, model)
        assert {name: array.shape for name, array in feed.items()} == ScatterDataLoader(model, seed=seed, iterations=0).shapes()
    # same seed, same inputs
    again = ScatterDataLoader(model, seed=seed, iterations=2)[1]
    for name, array in feeds[1].items():
        np.testing.assert_array_equal(again[name], array)


def test_scatter_elements_and_nd_indices_come_in_both_forms():
    from trt_scatter.onnx_models import scatter_elements_model, scatter_nd_model

    for model in (scatter_elements_model((6, 50), (6, 40), axis=1), scatter_nd_model((30, 20), (25, 1))):
        indices = ScatterDataLoader(model, seed=3)[0]["indices"]
        assert (indices < 0).any() and (indices >= 0).any()


def test_named_dims_get_one_value_and_given_shapes_win():
    model = fx.scatter_elements_model(["N", 6], ["N", 2], axis=1)
    feed = ScatterDataLoader(model)[0]
    assert feed["data"].shape == (DEFAULT_DIM, 6) and feed["indices"].shape == (DEFAULT_DIM, 2) == feed["updates"].shape
    feed = ScatterDataLoader(model, input_shapes={"data": (7, 6), "indices": (7, 2), "updates": (7, 2)})[0]
    assert feed["data"].shape == (7, 6) and feed["indices"].shape == (7, 2)


def test_an_input_without_a_declared_shape_takes_the_given_one():
    model = fx.slice_scatter_model([4, 6], [4, 3], [1], [6], [2], axes=[1])
    model.graph.input[0].type.tensor_type.ClearField("shape")
    with pytest.raises(ValueError, match=r"^input 'data' has no shape in the model: give it one"):
        ScatterDataLoader(model)[0]
    feed = ScatterDataLoader(model, input_shapes={"data": (4, 6)})[0]
    assert feed["data"].shape == (4, 6)
    oracle.slice_scatter(feed["data"], feed["updates"], [1], [6], [2], [1])  # inputs the oracle accepts


def test_fed_slice_parameters_cover_negative_forms():
    model = fx.slice_scatter_model([9, 8], [None, None], [0, 0], [0, 0], [0, 0], constant_params=False)
    feeds = list(ScatterDataLoader(model, seed=3, iterations=30))
    steps = np.concatenate([f["step"] for f in feeds])
    starts = np.concatenate([f["start"] for f in feeds])
    stops = np.concatenate([f["stop"] for f in feeds])
    assert (steps < 0).any() and (steps > 1).any() and (starts < 0).any() and (stops < -9).any()
    assert len({f["updates"].shape for f in feeds}) == 1, "the updates' shape is fixed per loader (engine profiles)"
    for feed in feeds:
        oracle.slice_scatter(feed["data"], feed["updates"], feed["start"], feed["stop"], feed["step"])


def test_mixed_constant_and_fed_slice_parameters_keep_the_constants():
    model = fx.slice_scatter_model([9], [3], [0], [0], [-2], constant_params=("step",))
    feeds = list(ScatterDataLoader(model, seed=2, iterations=10))
    assert all(feed["updates"].shape == (3,) for feed in feeds)
    assert len({(int(f["start"][0]), int(f["stop"][0])) for f in feeds}) > 1
    for feed in feeds:
        oracle.slice_scatter(feed["data"], feed["updates"], feed["start"], feed["stop"], [-2])
    impossible = fx.slice_scatter_model([9], [6], [0], [0], [2], constant_params=("step",))
    with pytest.raises(ValueError, match=r"slice_scatter: 'start/stop/step' constants \{'step': 2\} cannot take 6 elements"):
        ScatterDataLoader(impossible)[0]


def test_too_many_indices_for_distinct_values_is_an_error_naming_the_input():
    with pytest.raises(ValueError, match=r"scatter_elements: 'indices' dimension 0 must be at most data's \(3\) for distinct indices"):
        ScatterDataLoader(fx.scatter_elements_model([3, 4], [4, 4], axis=0))[0]
    with pytest.raises(ValueError, match=r"scatter_update: 'indices' must have at most 2 elements"):
        ScatterDataLoader(fx.scatter_update_model([4, 2], [3], [4, 3], axis=1))[0]
    with pytest.raises(ValueError, match=r"scatter_nd: 'indices' must have at most 6 rows"):
        ScatterDataLoader(fx.scatter_nd_model([2, 3], [7, 2], [7]))[0]


def test_shapes_that_break_the_model_are_errors():
    model = fx.scatter_elements_model(["N", 5], ["N", 3], axis=1)
    with pytest.raises(ValueError, match=r"input 'indices': the given shape \(3, 2\) does not fit the model's \(N, 3\)"):
        ScatterDataLoader(model, input_shapes={"indices": (3, 2)})[0]
    with pytest.raises(ValueError, match=r"slice_scatter: 'updates' must have shape \(2,\)"):
        model = fx.slice_scatter_model([4], [3], [0], [4], [1], constant_params=True)
        model.graph.initializer[2].CopyFrom(__import__("onnx").numpy_helper.from_array(np.array([2], np.int64), "step"))
        ScatterDataLoader(model)[0]


def test_fed_axis_is_refused():
    model = fx.scatter_update_model([4, 3], [2], [2, 3], axis=0)
    axis = model.graph.initializer.pop()
    model.graph.input.append(__import__("onnx").helper.make_tensor_value_info("axis", axis.data_type, []))
    with pytest.raises(ValueError, match="scatter_update: 'axis' must be a constant"):
        ScatterDataLoader(model)[0]


def test_loader_is_a_sequence_of_the_same_feeds_for_the_same_seed(tmp_path):
    path = fx.save(fx.scatter_nd_model([5, 2], [3, 1], [3, 2]), tmp_path / "nd.onnx")
    loader = ScatterDataLoader(path, iterations=2)
    assert len(loader) == 2
    with pytest.raises(IndexError):
        loader[2]
    feeds = list(ScatterDataLoader(path, seed=0, iterations=3))
    assert len(feeds) == 3
    assert all(np.array_equal(a["indices"], b["indices"]) for a, b in zip(feeds, ScatterDataLoader(path, seed=0, iterations=3)))
    oracle.scatter_nd(feeds[0]["data"], feeds[0]["indices"], feeds[0]["updates"])


def test_fed_axes_are_distinct_and_every_element_type_gets_values():
    model = fx.slice_scatter_model([5, 6, 7], [None, None, None], [0, 0], [0, 0], [0, 0], axes=[0, 0], constant_params=False)
    loader = ScatterDataLoader(model, seed=5, iterations=3)
    for feed in loader:
        assert len(set(feed["axes"].tolist())) == 2 and feed["updates"].shape == loader.shapes()["updates"]
        oracle.slice_scatter(feed["data"], feed["updates"], feed["start"], feed["stop"], feed["step"], feed["axes"])
    for dtype in (np.bool_, np.uint8, np.int8, np.float16):
        feed = ScatterDataLoader(fx.scatter_elements_model([3, 4], [3, 2], axis=1, dtype=dtype))[0]
        assert feed["data"].dtype == dtype and feed["updates"].dtype == dtype
        oracle.scatter_elements(feed["data"], feed["indices"], feed["updates"], 1)


def test_constant_nodes_and_initializers_listed_as_inputs_are_constants():
    from onnx import helper, numpy_helper

    model = fx.scatter_update_model([4, 3], ["K"], [4, "K"], axis=1)
    axis = model.graph.initializer.pop()
    model.graph.node.insert(0, helper.make_node("Constant", [], ["axis"], value=numpy_helper.from_array(numpy_helper.to_array(axis), "axis")))
    model.graph.initializer.append(numpy_helper.from_array(np.zeros((4, 3), np.float32), "data"))  # old-IR style input default
    feed = ScatterDataLoader(model)[0]
    assert set(feed) == {"indices", "updates"}
    oracle.scatter_update(np.zeros((4, 3), np.float32), feed["indices"], feed["updates"], 1)


def test_a_batch_of_positions_the_model_moves_is_found_where_random_rows_rarely_all_fit():
    """write_indices = pos + 1 into a cache of 4 positions and an update whose free length is 4 too: each row's update
    fits only at 0, so pos is -1 in all 4 rows, which 100 random draws of 4 rows from 10 values missed (1 in 10**4 each):
    tries of one value for every row find it."""
    from onnx import helper

    from trt_scatter.onnx_models import tensor_scatter_model

    model = tensor_scatter_model(["B", 2, 4, 4], "T")
    model.graph.input[2].name = "pos"
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array(1, np.int64), "one"))
    model.graph.node.insert(0, helper.make_node("Add", ["pos", "one"], [model.graph.node[0].input[2]]))
    for feed in ScatterDataLoader(model, iterations=2):
        assert feed["past_cache"].shape == (4, 2, 4, 4) and feed["pos"].tolist() == [-1] * 4
        oracle.tensor_scatter(feed["past_cache"], feed["update"], feed["pos"] + 1, 2)


@pytest.mark.parametrize("mode, cache", [("linear", 8), ("circular", 4)])
def test_a_free_cache_length_holds_two_updates_so_that_linear_positions_vary(mode, cache):
    """A cache and an update of free lengths were both 4: the one position that fits, 0, in every row and iteration, so
    the check proved nothing of the positions. A free cache now holds two updates in linear mode (circular wraps)."""
    from trt_scatter.onnx_models import tensor_scatter_model

    positions = set()
    for feed in ScatterDataLoader(tensor_scatter_model(["B", 3, "M", 4], "T", mode=mode), iterations=3):
        assert feed["past_cache"].shape == (4, 3, cache, 4) and feed["update"].shape == (4, 3, 4, 4)
        oracle.tensor_scatter(feed["past_cache"], feed["update"], feed["write_indices"], mode=mode)
        positions |= set(feed["write_indices"].tolist())
    assert len(positions) > 2
    static = ScatterDataLoader(tensor_scatter_model(["B", 3, 4, 4], "T"))[0]  # a static cache: the update is not shrunk to make room
    assert static["update"].shape == (4, 3, 4, 4) and static["write_indices"].tolist() == [0] * 4
    shared = ScatterDataLoader(tensor_scatter_model(["B", 3, "S", 4], "S"))[0]  # one length named for both: not shrunk to 0
    assert shared["past_cache"].shape == shared["update"].shape == (4, 3, 4, 4)


def test_inputs_reaching_index_inputs_through_other_ops_get_values_the_reference_accepts():
    """A start computed by an Add, indices negated: random values until the oracle accepts them with distinct targets."""
    from onnx import helper

    computed_start = fx.slice_scatter_model([6], [3], [1], [5], [1])
    computed_start.graph.initializer.pop(0)  # start
    computed_start.graph.input.append(helper.make_tensor_value_info("half", onnx.TensorProto.INT64, [1]))
    computed_start.graph.node.insert(0, helper.make_node("Add", ["half", "half"], ["start"]))
    for feed in ScatterDataLoader(computed_start, seed=4, iterations=5):
        oracle.slice_scatter(feed["data"], feed["updates"], 2 * feed["half"], [5], [1])

    negated = fx.scatter_nd_model([4, 2], [3, 1], [3, 2])
    negated.graph.node.insert(0, helper.make_node("Neg", ["indices"], ["negated"]))
    negated.graph.node[1].input[1] = "negated"
    for feed in ScatterDataLoader(negated, seed=2, iterations=5):
        rows = -feed["indices"]
        oracle.scatter_nd(feed["data"], rows, feed["updates"])
        assert len(np.unique(rows % 4)) == 3, "distinct rows"

    hopeless = fx.scatter_update_model([4, 3], [2], [4, 2], axis=1)
    hopeless.graph.node.insert(0, helper.make_node("Add", ["indices", "far"], ["shifted"]))
    hopeless.graph.node[1].input[1] = "shifted"
    hopeless.graph.initializer.append(onnx.numpy_helper.from_array(np.array(1000, np.int64), "far"))
    with pytest.raises(ValueError, match=r"^ScatterUpdate node #1 \(output 'output'\): input 'indices' gives 'indices', and none of 100 random values of it, nor 10 values alike in every element, gave valid inputs \(last: ScatterUpdate node \(output 'output'\): scatter_update: 'indices' values must be in \[0, 2\]"):
        ScatterDataLoader(hopeless)[0]

    # A node that fails whatever the index values (as PyTorch's TorchScript export of x[:, idx] = v, whose Reshape keeps a
    # shape of its example, fails): said at once, not as 100 failed draws of the index input.
    broken = fx.scatter_update_model([4, 3], [2], [4, 2], axis=1)
    broken.graph.node.insert(0, helper.make_node("Add", ["indices", "zero"], ["shifted"]))
    broken.graph.node.insert(1, helper.make_node("Gather", ["bias", "past_the_end"], ["picked"], axis=0))
    broken.graph.node.insert(2, helper.make_node("Add", ["updates", "picked"], ["biased"]))
    broken.graph.node[3].input[1:3] = ["shifted", "biased"]
    broken.graph.initializer.extend([onnx.numpy_helper.from_array(np.array(v), k) for k, v in
                                     (("zero", 0), ("past_the_end", 10), ("bias", np.ones(3, np.float32)))])
    with pytest.raises(ValueError, match=r"^ScatterUpdate node #3 \(output 'output'\): a run fails whatever the values drawn for 'indices': Gather node "):
        ScatterDataLoader(broken)[0]

    # A shape that follows from the index values (NonZero's count): a node failing for some draws only is searched past.
    counted = fx.scatter_update_model([4, 3], [2], [4, 2], axis=1)
    counted.graph.node.insert(0, helper.make_node("Add", ["indices", "zero"], ["shifted"]))
    counted.graph.node.insert(1, helper.make_node("NonZero", ["indices"], ["nonzero"]))
    counted.graph.node.insert(2, helper.make_node("Shape", ["nonzero"], ["count"], start=1))
    counted.graph.node.insert(3, helper.make_node("Reshape", ["two", "count"], ["two_rows"]))  # runs where both indices are nonzero
    counted.graph.node.insert(4, helper.make_node("Add", ["updates", "two_rows"], ["biased"]))
    counted.graph.node[5].input[1:3] = ["shifted", "biased"]
    counted.graph.initializer.extend([onnx.numpy_helper.from_array(np.array(0, np.int64), "zero"), onnx.numpy_helper.from_array(np.ones(2, np.float32), "two")])
    for seed in range(3):
        assert np.count_nonzero(ScatterDataLoader(counted, seed=seed)[0]["indices"]) == 2


def test_indices_read_inside_an_if_branch_are_drawn_valid():
    """A scatter in an If branch that reads the model's inputs: its indices were drawn as plain integers (out of range,
    repeated), so the run failed in whichever branch it took."""
    from onnx import TensorProto, helper

    def branch(name, reduction):
        node = helper.make_node("ScatterND", ["data", "idx", "upd"], [f"{name}_out"], reduction=reduction)
        return helper.make_graph([node], name, [], [helper.make_tensor_value_info(f"{name}_out", TensorProto.FLOAT, [4, 3])])

    node = helper.make_node("If", ["cond"], ["out"], then_branch=branch("then", "none"), else_branch=branch("else", "max"))
    inputs = [helper.make_tensor_value_info("cond", TensorProto.BOOL, []), info("data", [4, 3]),
              helper.make_tensor_value_info("idx", TensorProto.INT64, [3, 1]), info("upd", [3, 3])]
    model = helper.make_model(helper.make_graph([node], "g", inputs, [info("out", [4, 3])]), opset_imports=[helper.make_opsetid("", 18)])
    for feed in ScatterDataLoader(model, seed=0, iterations=8):
        rows = feed["idx"][:, 0] % 4
        assert ((feed["idx"] >= -4) & (feed["idx"] < 4)).all() and len(np.unique(rows)) == 3, feed["idx"]
        Reference(model).run(feed)


def test_a_write_inside_a_loop_into_a_value_named_like_a_model_input_is_not_drawn_for_that_input():
    """A Loop body's carried value named ``data`` as the model's input ``data`` is: the body's write reads the carried
    value, so the loader must not plan it against the model's ``data`` (it did, by name, where its other inputs are the
    main graph's); named otherwise, it is planned on the carried value."""
    from trt_scatter.inputs import _Plan
    from trt_scatter.model import as_model

    model = fx.loop_carrying_a_value_named_like_an_input(body_shape=(2, 5), input_shape=(3, 4), column=4, outer_constants=True)
    assert [node.label for node in _Plan(as_model(model), {}, np.random.default_rng(0), {}).nodes] == []
    model.graph.node[0].attribute[0].g.input[2].name = "carried"  # a name of its own: planned, on the carried value
    model.graph.node[0].attribute[0].g.node[1].input[0] = "carried"
    (node,) = _Plan(as_model(model), {}, np.random.default_rng(0), {}).nodes
    assert node.label == "ScatterElements node 'write' in Loop node 'repeat'" and node.inputs["data"] == "carried" and node.shape("data") == (2, 5)
    feeds = ScatterDataLoader(model, seed=0)[0]
    assert feeds["data"].shape == (3, 4) and feeds["x0"].shape == (2, 5)
    Reference(model).run(feeds)


@pytest.mark.parametrize("holder", ["Loop", "Scan"])
def test_a_write_inside_a_body_into_its_own_value_at_the_models_indices_gets_valid_indices(holder):
    """A Loop body that writes into its carried value (a Scan body: into its state), declared (3, 6), at the model's
    ``indices`` with the model's ``updates`` (ScatterElements along axis 1): the indices are drawn for it, in range and
    distinct in each row. They were drawn without its rules (the loader planned only a body's writes whose every input is
    the main graph's), so `trt-scatter check` failed the model in one line for every seed tried."""
    from onnx import TensorProto, helper

    write = [helper.make_node("ScatterElements", ["d", "indices", "updates"], ["d2"], axis=1), helper.make_node("Add", ["d2", "d2"], ["dd"])]
    if holder == "Loop":
        body = helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]), *write], "body",
                                 [info("i", [], np.int64), info("c", [], np.bool_), info("d", [3, 6], np.int32)],
                                 [info("c2", [], np.bool_), info("dd", [3, 6], np.int32), info("d2", [3, 6], np.int32)])
        node, steps = helper.make_node("Loop", ["n", "", "data"], ["out", "scan"], body=body), info("n", [], np.int64)
    else:
        body = helper.make_graph(write, "body", [info("d", [3, 6], np.int32), info("step", [], np.int32)],
                                 [info("dd", [3, 6], np.int32), info("d2", [3, 6], np.int32)])
        node, steps = helper.make_node("Scan", ["data", "n"], ["out", "scan"], body=body, num_scan_inputs=1), info("n", [3], np.int32)
    graph = helper.make_graph([node], "g", [steps, info("data", [3, 6], np.int32), info("indices", [3, 2], TensorProto.INT64),
                                            info("updates", [3, 2], np.int32)], [info("out", [3, 6], np.int32), info("scan", None, np.int32)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    for seed in range(1, 6):
        feeds = ScatterDataLoader(model, seed=seed)[0]
        indices = feeds["indices"]
        assert ((-6 <= indices) & (indices < 6)).all() and all(len(set(row % 6)) == 2 for row in indices), indices
        Reference(model).run(feeds)


def test_a_slice_write_into_data_of_a_shape_inference_cannot_tell_names_data():
    """SliceScatter into a Loop's output that the body leaves unshaped, at a start the model's input gives: the loader
    cannot tell the sliced axes without data's rank, and named ``updates``, an input of shape (1, 5), for it."""
    from onnx import TensorProto, helper

    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]), helper.make_node("Relu", ["v"], ["v2"])], "body",
                             [info("i", [], np.int64), info("c", [], np.bool_), info("v", None)], [info("c2", [], np.bool_), info("v2", None)])
    nodes = [helper.make_node("Loop", ["n", "", "x"], ["looped"], body=body),
             helper.make_node("SliceScatter", ["looped", "updates", "start", "stop", "step"], ["out"], domain="trt_scatter")]
    graph = helper.make_graph(nodes, "g", [info("n", [], np.int64), info("x", [4, 5]), info("updates", [1, 5]), info("start", [1], TensorProto.INT64)],
                              [info("out", None)], [onnx.numpy_helper.from_array(np.array([2**62]), "stop"), onnx.numpy_helper.from_array(np.array([3]), "step")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    with pytest.raises(ValueError, match=r"^SliceScatter node #1 \(output 'out'\): slice_scatter: 'data' must have a shape the loader can tell"):
        ScatterDataLoader(model, seed=1)[0]


def test_models_the_loader_cannot_serve_are_one_line_errors_naming_node_and_rule():
    from onnx import helper

    for model, op_type, op in ((fx.scatter_elements_model([4], [2]), "ScatterElements", "scatter_elements"),
                               (fx.scatter_nd_model([4, 2], [3, 1], [3, 2]), "ScatterND", "scatter_nd"),
                               (fx.scatter_update_model([4, 3], [2], [2, 3], axis=0), "ScatterUpdate", "scatter_update"),
                               (fx.slice_scatter_model([6], [3], [0], [6], [2]), "SliceScatter", "slice_scatter")):
        model.graph.node.insert(0, helper.make_node("Mystery", ["data"], ["mystery"], domain="elsewhere"))
        model.graph.node[1].input[0] = "mystery"
        with pytest.raises(ValueError, match=rf"^{op_type} node #1 \(output 'output'\): {op}: 'data' must have a shape the loader can tell"):
            ScatterDataLoader(model)[0]

    too_wide = fx.slice_scatter_model([3], [5], [0], [0], [0], constant_params=False)
    with pytest.raises(ValueError, match=r"^SliceScatter node #0 \(output 'output'\): slice_scatter: 'updates' dimension 0 must be at most data's \(3\)"):
        ScatterDataLoader(too_wide)[0]

    zero_step = fx.slice_scatter_model([6], [3], [0], [6], [0])
    two_d = fx.slice_scatter_model([6, 4], [3, 4], [[0]], [[6]], [[2]], constant_params=("stop", "step"))
    lengths = fx.slice_scatter_model([6, 4], [3, 2], [0, 0], [6], [2, 2], constant_params=False)
    rank0 = fx.scatter_elements_model([], [])
    missing = fx.scatter_nd_model([4, 2], [3, 1], [3, 2])
    missing.graph.node[0].input[2] = "nowhere"
    expected = {
        "zero step": (zero_step, r"^SliceScatter node #0 \(output 'output'\): slice_scatter: 'step' must not contain 0 \(got \[0\]\)$"),
        "2-D start": (two_d, r"^SliceScatter node #0 \(output 'output'\): slice_scatter: 'stop' must be a 1-D tensor \(got shape \(1, 1\)\)$"),
        "lengths": (lengths, r"^SliceScatter node #0 \(output 'output'\): slice_scatter: 'start/stop/step' must have equal lengths"),
        "rank 0": (rank0, r"^ScatterElements node #0 \(output 'output'\): scatter_elements: 'data' must have rank >= 1 \(got shape \(\)\)$"),
        "missing input": (missing, r"^ScatterND node #0 \(output 'output'\): input 2 'nowhere' is not a graph input, an initializer or an earlier node's output$"),
    }
    for what, (model, message) in expected.items():
        with pytest.raises(ValueError) as refused:
            ScatterDataLoader(model)[0]
        assert "\n" not in str(refused.value), what
        assert re.match(message, str(refused.value)), (what, str(refused.value))


@pytest.mark.parametrize("seed", range(8))
def test_fed_axes_fit_the_updates_static_dims(seed):
    """The generated axes slice the axis whose static updates dim differs from data's, whatever the seed,
    with start/stop/step fed or constant; axes that cannot fit are an error naming them."""
    fed = fx.slice_scatter_model([4, 6], [2, 6], [0], [0], [0], axes=[0], constant_params=False)
    feed = ScatterDataLoader(fed, seed=seed)[0]
    assert feed["axes"].tolist() == [0]
    oracle.slice_scatter(feed["data"], feed["updates"], feed["start"], feed["stop"], feed["step"], feed["axes"])
    constant = fx.slice_scatter_model([4, 6], [None, None], [0], [2], [1], axes=[0], constant_params=("start", "stop", "step"))
    feed = ScatterDataLoader(constant, seed=seed)[0]
    oracle.slice_scatter(feed["data"], feed["updates"], [0], [2], [1], feed["axes"])
    constant_fixed = fx.slice_scatter_model([4, 6], [4, 2], [0], [2], [1], axes=[0], constant_params=("start", "stop", "step"))
    assert ScatterDataLoader(constant_fixed, seed=seed)[0]["axes"].tolist() == [1]
    unfit = fx.slice_scatter_model([4, 6], [2, 3], [0], [0], [0], axes=[0], constant_params=False)
    with pytest.raises(ValueError, match=r"slice_scatter: 'axes' cannot be chosen for 1 sliced axes of data \(4, 6\)"):
        ScatterDataLoader(unfit, seed=seed)[0]


@pytest.mark.parametrize("seed", range(8))
def test_fed_axes_with_constant_parameters_slice_an_axis_whose_dims_may_differ(seed):
    """data (b, n, 5), updates (b, u, 5), a constant slice 1:9:3 on a fed axis: only axis 1, where two free dims may
    differ, takes it (b is one dim of both, so a slice of it would be all of it; 5 and 5 likewise). The loader drew
    any axis and refused its own draw, for every seed."""
    from trt_scatter.onnx_models import slice_scatter_model

    model = slice_scatter_model(("b", "n", 5), start=[1], stop=[9], step=[3], axes=[1], runtime=["axes"])
    feed = ScatterDataLoader(model, seed=seed)[0]
    assert feed["axes"].tolist() == [1]
    oracle.slice_scatter(feed["data"], feed["updates"], [1], [9], [3], feed["axes"])


def test_a_model_with_external_data_is_served_from_any_directory(tmp_path, monkeypatch):
    import mixed_models

    (tmp_path / "elsewhere").mkdir()
    path = tmp_path / "kv.onnx"
    onnx.save(mixed_models.kv_cache(runtime=True).model, path, save_as_external_data=True, location="kv.bin", size_threshold=0)
    monkeypatch.chdir(tmp_path / "elsewhere")
    feed = ScatterDataLoader(path)[0]
    assert feed["x"].shape == (2, 1, 6) and feed["cache"].shape == (2, 3, 8, 4) and feed["pos"].shape == (1,)


def _shared_indices(first_rows, second_rows, rows=2):
    """Two ScatterElements (axis 0) that take the same indices input, on data of ``first_rows`` and ``second_rows`` rows."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("ScatterElements", [f"data{i}", "indices", f"updates{i}"], [f"output{i}"], axis=0, name=f"write{i}") for i in (1, 2)]
    inputs = [info("data1", [first_rows, 2]), info("data2", [second_rows, 2]), info("indices", [rows, 2], TensorProto.INT64),
              info("updates1", [rows, 2]), info("updates2", [rows, 2])]
    graph = helper.make_graph(nodes, "g", inputs, [info("output1", [first_rows, 2]), info("output2", [second_rows, 2])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def test_indices_taken_by_two_nodes_fit_both():
    """The same positions written into two tensors of different sizes: the indices are valid, and distinct, for both."""
    for feed in ScatterDataLoader(_shared_indices(6, 3), seed=3, iterations=5):
        for i, rows in ((1, 6), (2, 3)):
            oracle.scatter_elements(feed[f"data{i}"], feed["indices"], feed[f"updates{i}"], axis=0)
            targets = np.sort(feed["indices"] % rows, axis=0)
            assert not (np.diff(targets, axis=0) == 0).any(), "distinct targets"
    with pytest.raises(ValueError, match=r"^ScatterElements node 'write2': scatter_elements: 'indices' dimension 0 must be at most data's \(2\) for distinct indices"):
        ScatterDataLoader(_shared_indices(6, 2, rows=3))[0]


@pytest.mark.parametrize("between", ["Squeeze", "Reshape", "Unsqueeze"])
def test_indices_that_reach_a_second_node_through_another_op_fit_it_too(between):
    """One position input written into a [1, 5] tensor by ScatterElements and, through a Squeeze (Reshape, Unsqueeze),
    into the rows of a [3, 4] tensor by ScatterUpdate: drawn for one node, it must fit the other too."""
    from onnx import TensorProto, helper

    shape = {"Squeeze": [0], "Reshape": [2], "Unsqueeze": [0]}[between]
    nodes = [helper.make_node("ScatterElements", ["a", "idx", "u"], ["out_a"], axis=1, name="write"),
             helper.make_node(between, ["idx", "shape"], ["rows"]),
             helper.make_node("ScatterUpdate", ["b", "rows", "v", "axis"], ["out_b"], domain="trt_scatter", name="update")]
    v_shape = {"Squeeze": [2, 4], "Reshape": [2, 4], "Unsqueeze": [1, 1, 2, 4]}[between]
    graph = helper.make_graph(nodes, "g", [info("a", [1, 5]), info("idx", [1, 2], TensorProto.INT64), info("u", [1, 2]), info("b", [3, 4]),
                                           info("v", v_shape)], [info("out_a", [1, 5]), info("out_b", [3, 4])],
                              [onnx.numpy_helper.from_array(np.array(shape), "shape"), onnx.numpy_helper.from_array(np.array(0), "axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    for seed in range(10):
        feed = ScatterDataLoader(model, seed=seed)[0]
        assert set(feed["idx"].ravel() % 3) <= {0, 1, 2} and ((-3 <= feed["idx"]) & (feed["idx"] < 3)).all(), feed["idx"]
        assert len(set(feed["idx"].ravel() % 3)) == 2, "distinct rows"
        oracle.scatter_elements(feed["a"], feed["idx"], feed["u"], axis=1)


def test_indices_that_cannot_fit_both_nodes_taking_them_are_one_line_naming_both():
    """ScatterElements draws indices distinct per column; the ScatterUpdate that takes them too needs all four distinct in [0, 3]."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("ScatterElements", ["a", "indices", "u"], ["out_a"], axis=0, name="write"),
             helper.make_node("ScatterUpdate", ["b", "indices", "v", "axis"], ["out_b"], domain="trt_scatter", name="update")]
    graph = helper.make_graph(nodes, "g", [info("a", [3, 2]), info("b", [4]), info("indices", [2, 2], TensorProto.INT64), info("u", [2, 2]), info("v", [2, 2])],
                              [info("out_a", [3, 2]), info("out_b", [4])], [onnx.numpy_helper.from_array(np.array(0), "axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    with pytest.raises(ValueError, match=r"^ScatterUpdate node 'update': input 'indices' is drawn for ScatterElements node 'write' too, "
                                         r"and none of 100 draws fit both \(last: .*\); give valid inputs instead \(--load-inputs\)$"):
        ScatterDataLoader(model)[0]


def test_edge_cases_users_meet_get_inputs_or_one_line():
    """Paths no random model reaches: an empty slice, a given shape for no input, axes computed from
    another input."""
    from onnx import helper

    empty = ScatterDataLoader(fx.slice_scatter_model([5, 2], [0, 2], [0], [0], [0], constant_params=False), seed=1, iterations=4)
    for feed in empty:
        assert feed["updates"].shape == (0, 2)
        oracle.slice_scatter(feed["data"], feed["updates"], feed["start"], feed["stop"], feed["step"])
    with pytest.raises(ValueError, match=r"^input 'nope' of the given shapes is not an input of the model \(its inputs: data, indices, updates\)$"):
        ScatterDataLoader(fx.scatter_elements_model([4], [2]), input_shapes={"nope": (1,)})[0]
    computed_axes = fx.slice_scatter_model([4, 6], [2, 6], [0], [0], [0], axes=[0], constant_params=False)
    computed_axes.graph.node.insert(0, helper.make_node("Neg", ["axes"], ["negated"]))
    computed_axes.graph.node[1].input[5] = "negated"
    with pytest.raises(ValueError, match=r"^SliceScatter node #1 \(output 'output'\): slice_scatter: 'axes' must be a constant or a graph input for generated inputs \(got negated\)$"):
        ScatterDataLoader(computed_axes)[0]


@pytest.mark.parametrize("updates_shape", [[3], ["T"]], ids=["fixed-updates", "free-updates"])
def test_constant_and_fed_slice_parameters_on_a_dimension_too_large_to_search_are_one_line(updates_shape):
    """Constant and fed slice parameters mixed on a dimension too large to search: refused in one line that
    names the node, also when reached while sizing a free updates dimension (shape solving): the loader
    wraps every per-node step, not only the planners."""
    large = fx.slice_scatter_model([400], updates_shape, [0], [0], [1], constant_params=("step",))
    with pytest.raises(ValueError, match=r"^SliceScatter node #0 \(output 'output'\): slice_scatter: 'start/stop/step' mix constants and fed values on too large a dimension to search; feed all three \(got 400\)$"):
        ScatterDataLoader(large)[0]


def _named_batch_model():
    """data, idx (B, 4), x (B, 3) -> updates through a MatMul, z (B,) beside it: every input names its first dimension B."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("MatMul", ["x", "W"], ["u"]), helper.make_node("ScatterElements", ["data", "idx", "u"], ["y"], axis=1),
             helper.make_node("Relu", ["z"], ["zz"])]
    graph = helper.make_graph(nodes, "g", [info("data", ["B", 4]), info("idx", ["B", 4], TensorProto.INT64), info("x", ["B", 3]), info("z", ["B"])],
                              [info("y", ["B", 4]), info("zz", ["B"])], [onnx.numpy_helper.from_array(np.ones((3, 4), np.float32), "W")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("given", ["data", "x", "z"])
def test_a_given_shape_sets_its_named_dimensions_in_every_input_that_names_them(given):
    """Giving one input's shape gives the dimension names it holds: B is 2 in every input, whichever input says so (the
    others kept the default 4, and the engine's profile failed, or the loader blamed the values it drew)."""
    shape = {"data": (2, 4), "x": (2, 3), "z": (2,)}[given]
    feed = next(iter(ScatterDataLoader(_named_batch_model(), input_shapes={given: shape})))
    assert {name: value.shape for name, value in feed.items()} == {"data": (2, 4), "idx": (2, 4), "x": (2, 3), "z": (2,)}


def test_given_shapes_that_give_one_named_dimension_two_sizes_are_one_error_naming_both():
    with pytest.raises(ValueError, match=r"dimension 'B' is 2 in the given shape of input 'data' and 3 in that of input 'z': the model "
                                         r"names them one dimension"):
        next(iter(ScatterDataLoader(_named_batch_model(), input_shapes={"data": (2, 4), "z": (3,)})))


def test_the_values_the_search_throws_away_are_not_warned_of(caplog):
    """Indices the loader cannot trace (a Concat of two inputs) are searched: a try with a repeated target is thrown away,
    and nothing is said of it; the feed it keeps has distinct targets."""
    import logging

    from onnx import TensorProto, helper

    nodes = [helper.make_node("Concat", ["a", "b"], ["ab"], axis=0), helper.make_node("ScatterElements", ["d", "ab", "u"], ["y"], axis=0)]
    graph = helper.make_graph(nodes, "g", [info("d", ["N"]), info("a", [2], TensorProto.INT64), info("b", [2], TensorProto.INT64), info("u", [4])],
                              [info("y", ["N"])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with caplog.at_level(logging.WARNING, logger="trt_scatter"):
        feeds = list(ScatterDataLoader(model, iterations=5))
    assert not [record for record in caplog.records if "undefined" in record.getMessage()]
    for feed in feeds:
        targets = np.concatenate([feed["a"], feed["b"]]) % len(feed["d"])
        assert len(set(targets.tolist())) == 4


def test_slice_updates_whose_shape_only_a_run_tells_get_inputs():
    """PyTorch's TorchScript export of ``x[:, 2:5] = y`` reshapes the updates by a shape computed from shapes: static
    inference gives them no rank, a run of that part of the model does (the loader refused it: "'updates' must have a
    shape the loader can tell"), and the constant axes need no updates' shape to be known."""
    from onnx import TensorProto, helper, numpy_helper

    from trt_scatter.reference import Reference

    constants = [numpy_helper.from_array(np.array(v, np.int64), k) for k, v in
                 (("one", [1]), ("two", [2]), ("zero", [0]), ("minus", [-1]), ("s", [2]), ("e", [5]), ("st", [1]), ("ax", [1]))]
    nodes = [helper.make_node("Shape", ["y"], ["y_shape"]), helper.make_node("Slice", ["y_shape", "one", "two", "zero"], ["tail"]),
             helper.make_node("Concat", ["minus", "tail"], ["shape"], axis=0), helper.make_node("Reshape", ["y", "shape"], ["u"]),
             helper.make_node("SliceScatter", ["x", "u", "s", "e", "st", "ax"], ["out"], domain="trt_scatter")]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 8]), helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 3])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, None)], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13), helper.make_opsetid("trt_scatter", 1)])
    feed = ScatterDataLoader(model)[0]
    assert feed["x"].shape == (4, 8) and feed["y"].shape == (4, 3)
    np.testing.assert_array_equal(Reference(model).run(feed)["out"], oracle.slice_scatter(feed["x"], feed["y"], [2], [5], [1], [1]))


@pytest.mark.parametrize("gather", ["GatherND", "Gather"])
def test_a_gather_index_input_is_drawn_in_range(gather):
    """A message-passing layer as PyTorch exports it (``zeros_like(x).index_add(0, dst, x[src])``): ``src`` only gives a
    gather's indices (through an Unsqueeze for GatherND); drawn in [-6, 5] for 6 nodes, not in the default [-8, 7]."""
    from onnx import TensorProto, helper

    gathered = [helper.make_node("Unsqueeze", ["src", "last"], ["src_rows"]), helper.make_node("GatherND", ["x", "src_rows"], ["messages"])] \
        if gather == "GatherND" else [helper.make_node("Gather", ["x", "src"], ["messages"], axis=0)]
    nodes = [*gathered, helper.make_node("Unsqueeze", ["dst", "last"], ["dst_rows"]),
             helper.make_node("ScatterNDReduce", ["x", "dst_rows", "messages"], ["out"], domain="trt_scatter", name="aggregate")]
    graph = helper.make_graph(nodes, "g", [info("x", [6, 4]), info("src", [10], TensorProto.INT64), info("dst", [10], TensorProto.INT64)],
                              [info("out", [6, 4])], [onnx.numpy_helper.from_array(np.array([-1]), "last")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    from trt_scatter.reference import Reference

    for seed in range(5):
        feed = ScatterDataLoader(model, seed=seed)[0]
        assert ((-6 <= feed["src"]) & (feed["src"] < 6)).all() and (feed["src"] < 0).any(), feed["src"]
        Reference(model).run(feed)


@pytest.mark.parametrize("through", ["", "Cast", "Identity"])
@pytest.mark.parametrize("nested", [False, True])
def test_a_loops_trip_count_input_is_drawn_not_negative(through, nested):
    """A Loop's trip count M given by an input (directly, or through a Cast or an Identity; the Loop in the main graph
    or in an If branch) is drawn in [0, 7]: onnxruntime runs no iteration for a negative count, but TensorRT builds no
    profile with one for a Loop with a scan output, so `trt-scatter check` failed a valid model on the inputs it drew.
    A range the caller gives the input is kept."""
    from onnx import TensorProto, helper

    from test_reference import _loop_with_a_scan_output

    model = _loop_with_a_scan_output("declared")
    loop = model.graph.node[0]
    if through:
        model.graph.input[0].type.tensor_type.elem_type = TensorProto.INT32 if through == "Cast" else TensorProto.INT64
        model.graph.input[0].name, loop.input[0] = "count", "n"
        model.graph.node.insert(0, helper.make_node(through, ["count"], ["n"], **({"to": TensorProto.INT64} if through == "Cast" else {})))
    if nested:
        model.graph.node.remove(loop)
        branch = helper.make_graph([loop], "then", [], [info("out", (2, 5)), info("scan", None)])
        other = helper.make_graph([helper.make_node("Identity", ["x"], ["same"]), helper.make_node("Unsqueeze", ["x", "first"], ["one"])], "else", [],
                                  [info("same", (2, 5)), info("one", None)], [onnx.numpy_helper.from_array(np.array([0]), "first")])
        model.graph.node.append(helper.make_node("If", ["cond"], ["out", "scan"], then_branch=branch, else_branch=other))
    name = model.graph.input[0].name
    drawn = [ScatterDataLoader(model, seed=seed)[0][name] for seed in range(12)]
    assert all(0 <= value <= 7 for value in drawn) and len(set(map(int, drawn))) > 3, drawn
    given = ScatterDataLoader(model, seed=0, value_ranges={name: (-3, -1)})[0][name]
    assert -3 <= given <= -1
    Reference(model).run(ScatterDataLoader(model, seed=1)[0])


@pytest.mark.parametrize("input_shapes", [{"x": (7, 6), "src": (20,), "dst": (20,)}, None])
def test_a_gather_of_a_computed_tensor_is_drawn_within_its_rows(input_shapes):
    """``zeros_like(x).index_add(0, dst, lin(x)[src])`` with dynamic node and edge counts: the gather's data is computed
    (a MatMul), its rows as many as x's, which the given shapes (or the loader's own) set; ``src`` is drawn within them
    (it was drawn in the default range, past 7 rows, and every try failed, blamed on ``dst``)."""
    from onnx import TensorProto, helper

    from trt_scatter.reference import Reference

    nodes = [helper.make_node("MatMul", ["x", "weight"], ["lin"]), helper.make_node("Gather", ["lin", "src"], ["messages"], axis=0),
             helper.make_node("Unsqueeze", ["dst", "last"], ["dst_rows"]),
             helper.make_node("ScatterNDReduce", ["x", "dst_rows", "messages"], ["out"], domain="trt_scatter", name="aggregate")]
    graph = helper.make_graph(nodes, "g", [info("x", ["n", 6]), info("src", ["e"], TensorProto.INT64), info("dst", ["e"], TensorProto.INT64)],
                              [info("out", ["n", 6])], [onnx.numpy_helper.from_array(np.array([-1]), "last"),
                                                        onnx.numpy_helper.from_array(np.ones((6, 6), np.float32), "weight")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    for seed in range(3):
        feed = ScatterDataLoader(model, seed=seed, input_shapes=input_shapes)[0]
        rows = len(feed["x"])
        assert ((-rows <= feed["src"]) & (feed["src"] < rows)).all(), (rows, feed["src"])
        Reference(model).run(feed)


def test_a_gather_of_rows_the_loader_cannot_count_names_its_index_input():
    """``x[first:][src]`` with ``first`` an input: the gather's rows are not known before a run, so ``src`` is drawn as any
    integer input is; where those values fail the run, the error names ``src``, not the scatter's index input."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Slice", ["x", "first", "end"], ["rest"]), helper.make_node("Gather", ["rest", "src"], ["messages"], axis=0),
             helper.make_node("Unsqueeze", ["dst", "last"], ["dst_rows"]),
             helper.make_node("ScatterNDReduce", ["x", "dst_rows", "messages"], ["out"], domain="trt_scatter", name="aggregate")]
    graph = helper.make_graph(nodes, "g", [info("x", ["n", 4]), info("src", [12], TensorProto.INT64), info("dst", [12], TensorProto.INT64),
                                           info("first", [1], TensorProto.INT64)],
                              [info("out", ["n", 4])], [onnx.numpy_helper.from_array(np.array(v), k) for k, v in (("last", [-1]), ("end", [2**62]))])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    with pytest.raises(ValueError, match=r"a run fails at values drawn for 'src', whose valid values the loader cannot tell: Gather node "):
        ScatterDataLoader(model, input_shapes={"x": (3, 4)})[0]


def test_index_inputs_of_several_columns_are_drawn_within_every_column():
    """``x.index_put((i, j), v, accumulate=True)`` as dynamo exports it: rows Concat(i, j) of a [4, 5] tensor; i and j are
    each one column, so both are drawn below 4 (the product, 20, let i reach past the rows in every try)."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("Unsqueeze", ["i", "last"], ["i_col"]), helper.make_node("Unsqueeze", ["j", "last"], ["j_col"]),
             helper.make_node("Concat", ["i_col", "j_col"], ["rows"], axis=-1),
             helper.make_node("ScatterNDReduce", ["x", "rows", "v"], ["out"], domain="trt_scatter", name="accumulate")]
    graph = helper.make_graph(nodes, "g", [info("x", [4, 5]), info("i", [3], TensorProto.INT64), info("j", [3], TensorProto.INT64), info("v", [3])],
                              [info("out", [4, 5])], [onnx.numpy_helper.from_array(np.array([-1]), "last")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    for seed in range(5):
        feed = ScatterDataLoader(model, seed=seed)[0]
        assert (0 <= feed["i"]).all() and (feed["i"] < 4).all() and (0 <= feed["j"]).all() and (feed["j"] < 4).all(), feed


@pytest.mark.parametrize("case", ["a-gather-and-a-scatter", "a-small-gather-and-a-scatter", "two-gathers", "a-table-initializer"])
def test_gather_indices_fit_every_reader(case):
    """One index input read by a Gather of a 100-row table and the rows of a 3-row ScatterNDReduce (it is searched for the
    scatter, below 3), by a Gather of 3 rows and a 100-row scatter (searched, within the gather's 3), by Gathers of 100
    and of 3 rows (below the least), or a Gather of a 3-row initializer."""
    from onnx import TensorProto, helper

    from trt_scatter.reference import Reference

    table = [onnx.numpy_helper.from_array(np.ones((3, 2), np.float32), "table")] if case == "a-table-initializer" else []
    small_gather = case == "a-small-gather-and-a-scatter"
    inputs = [info("big", [3 if small_gather else 100, 2]), info("x", [100 if small_gather else 3, 2]), info("i", [4], TensorProto.INT64)] + \
        ([info("table", [3, 2])] if not table else [])
    nodes = [helper.make_node("Gather", ["big", "i"], ["looked_up"], axis=0)]
    outputs = [info("looked_up", [4, 2])]
    if case in ("a-gather-and-a-scatter", "a-small-gather-and-a-scatter"):
        nodes += [helper.make_node("Unsqueeze", ["i", "last"], ["rows"]),
                  helper.make_node("ScatterNDReduce", ["x", "rows", "looked_up"], ["out"], domain="trt_scatter")]
        outputs.append(info("out", [100 if small_gather else 3, 2]))
    else:
        nodes.append(helper.make_node("Gather", ["table" if table else "x", "i"], ["small"], axis=0))
        outputs.append(info("small", [4, 2]))
    graph = helper.make_graph(nodes, "g", inputs if case != "a-table-initializer" else [v for v in inputs if v.name != "table"], outputs,
                              [onnx.numpy_helper.from_array(np.array([-1]), "last"), *table])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    for seed in range(5):
        feed = ScatterDataLoader(model, seed=seed)[0]
        assert ((-3 <= feed["i"]) & (feed["i"] < 3)).all(), feed["i"]
        Reference(model).run(feed)


@pytest.mark.parametrize("op_type, reduction, indices, expected", [
    ("ScatterElements", None, [[5, 0]], (4, 6)), ("ScatterElements", "add", [[5, 0]], (4, 6)),
    ("ScatterND", None, [[1, 7]], (4, 8)), ("ScatterND", "max", [[1, 7]], (4, 8)), ("ScatterUpdate", None, [6], (7, 3)), ("ScatterElements", None, [[-7, 0]], (4, 7))])
def test_free_dims_grow_to_take_a_constant_index(op_type, reduction, indices, expected):
    """A constant index past the free dims' default (4) grows the dimension it addresses to the least that takes it
    (7 for 6, or for -7 where the op counts it from the end), and the whole-model reference runs on the inputs: before, the loader drew 4 and every run failed."""
    from onnx import helper

    indices = np.array(indices, np.int64)
    updates = {"ScatterElements": [1, 2], "ScatterND": [1], "ScatterUpdate": [1, 3]}[op_type]
    attributes = ({"axis": 1} if op_type == "ScatterElements" else {}) | ({"reduction": reduction} if reduction else {})
    node = helper.make_node(op_type, ["data", "indices", "updates"] + (["axis"] if op_type == "ScatterUpdate" else []), ["output"],
                            domain="trt_scatter" if op_type == "ScatterUpdate" else "", name="write", **attributes)
    graph = helper.make_graph([node], "g", [info("data", ["r", 3 if op_type == "ScatterUpdate" else "c"]), info("updates", updates)],
                              [info("output", None)], [onnx.numpy_helper.from_array(indices, "indices"),
                                                       onnx.numpy_helper.from_array(np.array(0, np.int64), "axis")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("trt_scatter", 1)])
    feed = ScatterDataLoader(model)[0]
    assert feed["data"].shape == expected
    Reference(model).run(feed)


def test_a_chain_of_bounds_settles_however_long():
    """Writes of e(k-1) fed indices into e(k) rows (e0 <= e1 <= ... <= e5), listed from the far end, and a constant index 5
    into e0 rows: each pass of the bounds carries the growth one link on. Four passes stopped at e4, and the loader
    refused e4's write ("at most 4 elements") for a model whose dims can all be sized."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("ScatterUpdate", [f"x{k}", f"p{k}", f"v{k}", "axis"], [f"y{k}"], domain="trt_scatter") for k in range(5, 0, -1)]
    nodes.append(helper.make_node("ScatterElements", ["x0", "index", "u"], ["y0"], axis=1))
    inputs = [value for k in range(5, 0, -1) for value in (info(f"x{k}", [1, f"e{k}"]), info(f"p{k}", [f"e{k - 1}"], TensorProto.INT64),
                                                           info(f"v{k}", [1, f"e{k - 1}"]))]
    graph = helper.make_graph(nodes, "chain", inputs + [info("x0", [1, "e0"]), info("u", [1, 1])], [info(f"y{k}", None) for k in range(6)],
                              [onnx.numpy_helper.from_array(np.array(1, np.int64), "axis"), onnx.numpy_helper.from_array(np.array([[5]], np.int64), "index")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("trt_scatter", 1)])
    feed = ScatterDataLoader(model)[0]
    dims = [feed[f"x{k}"].shape[1] for k in range(6)]
    assert dims[0] == 6 and all(e <= f for e, f in zip(dims, dims[1:])), dims  # e0 takes the index 5; each e(k) its e(k-1) indices
    Reference(model).run(feed)


def test_a_constant_index_no_dimension_can_take_is_one_line_without_a_warning():
    """Index 2**63 - 1: the dimension it needs is counted in Python ints (a NumPy sum overflowed, with a RuntimeWarning)."""
    import warnings

    from onnx import helper

    node = helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"], axis=1)
    graph = helper.make_graph([node], "g", [info("data", [1, "c"]), info("updates", [1, 1])], [info("output", None)],
                              [onnx.numpy_helper.from_array(np.array([[2**63 - 1]], np.int64), "indices")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        with pytest.raises(ValueError, match=r"^input 'data' of shape \(1, 9223372036854775808\) has more than 2147483647 elements"):
            ScatterDataLoader(model)[0]


@pytest.mark.parametrize("given, folded, rows", [([-6], True, 6), ([5, -1], False, 6), ([-2], False, DEFAULT_DIM), ([-6, 2], "n = 100", 95)])
def test_free_rows_grow_to_take_an_index_as_given_to_pytorchs_wrap(given, folded, rows):
    """``x.index_fill(0, given, 0)`` as both exporters write it: ``Where(i + n < 0, i, Where(i < 0, i + n, i))``, the inner
    test folded to a constant by the dynamo exporter. -6 needs 6 rows, [5, -1] 6, -2 the default 4; before, the wrap
    of a negative index was read as nothing and the rows stayed 4. A wrap over a constant (100) is its folded values
    (94 for -6): 95 rows."""
    from onnx import helper

    def constant(name, value, dtype=np.int64):
        return onnx.numpy_helper.from_array(np.array(value, dtype), name)

    test = [] if folded is True else [helper.make_node("Less", ["given", "zero"], ["negative"])]
    dimension = helper.make_node("Constant", [], ["n"], value=constant("n", [100])) if folded == "n = 100" else helper.make_node("Shape", ["data"], ["n"], start=0, end=1)
    nodes = [dimension, helper.make_node("Add", ["given", "n"], ["plus_n"]), *test,
             helper.make_node("Where", ["negative", "plus_n", "given"], ["inner"]), helper.make_node("Less", ["plus_n", "zero"], ["below"]),
             helper.make_node("Where", ["below", "given", "inner"], ["index"]),
             helper.make_node("ScatterUpdate", ["data", "index", "fill", "axis"], ["output"], domain="trt_scatter", name="fill")]
    initializers = [constant("axis", 0), constant("given", given), constant("zero", [0]), constant("fill", np.zeros((len(given), 3)), np.float32)]
    initializers += [constant("negative", np.array(given) < 0, bool)] if folded is True else []
    graph = helper.make_graph(nodes, "wrap", [info("data", ["n", 3])], [info("output", None)], initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    feed = ScatterDataLoader(model)[0]
    assert feed["data"].shape == (rows, 3)
    Reference(model).run(feed)


@pytest.mark.parametrize("start, stop, step, length, size", [(5, 6, 1, 1, 6), (-6, -5, 1, 1, 6), (7, 2, -1, 5, 8), (1, 9, 3, 3, 8),
                                                              (-3, 2**62, 1, 3, DEFAULT_DIM), (-3, 2, 1, 1, DEFAULT_DIM),
                                                              (0, 2**31 - 1, 1, 4, DEFAULT_DIM)])
def test_free_dims_grow_to_hold_a_slice_of_constant_positions(start, stop, step, length, size):
    """``x[:, 5] = v`` (a SliceScatter from 5 to 6): data's free dim grows to hold the farthest position the slice reaches,
    counted from either end (0:9:3 reaches 6, not 8); a slice to the end (INT32_MAX or more is an end), or one whose start and
    stop count from different ends, leaves it be."""
    from trt_scatter.onnx_models import slice_scatter_model

    model = slice_scatter_model((2, "n"), [start], [stop], [step], [1], updates_shape=(2, length))
    feed = ScatterDataLoader(model)[0]
    assert feed["data"].shape == (2, size)
    oracle.slice_scatter(feed["data"], feed["updates"], [start], [stop], [step], [1])


@pytest.mark.parametrize("cache, update, mode, expected", [
    ("S", "T", "linear", ((2, 1, 10, 4), (2, 1, 4, 4))),  # the cache grows to fit the update past position 6
    (8, "T", "linear", ((2, 1, 8, 4), (2, 1, 2, 4))),  # a static cache: the update shrinks to fit
    ("S", "T", "circular", ((2, 1, 4, 4), (2, 1, 4, 4))),  # positions wrap: nothing to fit
])
def test_constant_write_indices_make_the_cache_fit_the_update_past_them(cache, update, mode, expected):
    """TensorScatter's constant write indices [6, 0] in linear mode need max_sequence_length >= 6 + sequence_length; the
    loader drew 4 and 4 and every run failed with the rule ("values must be at most ... 4 - 4")."""
    from onnx import helper

    node = helper.make_node("TensorScatter", ["cache", "update", "positions"], ["out"], axis=2, mode=mode)
    graph = helper.make_graph([node], "g", [info("cache", ["B", 1, cache, 4]), info("update", ["B", 1, update, 4])], [info("out", None)],
                              [onnx.numpy_helper.from_array(np.array([6, 0], np.int64), "positions")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 24)])
    feed = ScatterDataLoader(model)[0]
    assert (feed["cache"].shape, feed["update"].shape) == expected
    Reference(model).run(feed)


def test_a_gather_into_an_empty_dimension_is_refused_by_name():
    """x[g] with x given 0 rows: no value of g is valid, and random ones were drawn (onnxruntime: 'idx=-2 must be within the
    inclusive range [0,-1]'); an empty g has nothing to draw."""
    from onnx import helper

    node = helper.make_node("Gather", ["x", "g"], ["out"], axis=0)
    graph = helper.make_graph([node], "g", [info("x", ["N", 4]), helper.make_tensor_value_info("g", onnx.TensorProto.INT64, ["G"])], [info("out", None)])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    with pytest.raises(ValueError, match=r"^input 'g' gives a Gather's indices into a dimension of size 0 at these input shapes, so no value of it is valid"):
        ScatterDataLoader(model, input_shapes={"x": (0, 4)})[0]
    assert ScatterDataLoader(model, input_shapes={"x": (0, 4), "g": (0,)})[0]["g"].shape == (0,)


def _unknown_op_before_searched_indices():
    """``MyGelu`` (a custom domain's op) feeding a ScatterElements whose indices are computed from a graph input: the
    loader draws the input's values with the reference, which has no MyGelu."""
    from onnx import TensorProto, helper

    nodes = [helper.make_node("MyGelu", ["x"], ["g"], domain="my.ops"), helper.make_node("Add", ["i", "one"], ["idx"]),
             helper.make_node("ScatterElements", ["g", "idx", "u"], ["y"], axis=0)]
    value = helper.make_tensor_value_info
    graph = helper.make_graph(nodes, "g", [value("x", TensorProto.FLOAT, [4, 3]), value("i", TensorProto.INT64, [2, 3]), value("u", TensorProto.FLOAT, [2, 3])],
                              [value("y", TensorProto.FLOAT, [4, 3])], [onnx.numpy_helper.from_array(np.array(1, np.int64), "one")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("my.ops", 1)])


def test_a_model_the_reference_cannot_run_is_one_line_when_inputs_are_drawn(tmp_path, capsys):
    """ONNX's evaluator raised NotImplementedError for the op it does not know: check said "internal error" (exit 70) and
    polygraphy's --trt-scatter-inputs printed a traceback, where --load-inputs said it in one line."""
    from trt_scatter.cli import main
    from trt_scatter.model import ModelError

    message = "the reference cannot run this model: Node type 'MyGelu' from domain 'my.ops' is unknown, known functions: []."
    with pytest.raises(ModelError) as refused:
        list(ScatterDataLoader(_unknown_op_before_searched_indices()))
    assert str(refused.value) == message
    onnx.save(_unknown_op_before_searched_indices(), tmp_path / "unknown.onnx")
    assert main(["check", str(tmp_path / "unknown.onnx")]) == 2
    assert capsys.readouterr().err.splitlines()[-1] == f"trt-scatter check: error: cannot generate valid inputs: {message} (or give inputs of your own: --load-inputs)"


@pytest.mark.parametrize("build, indices_shape", [("scatter_nd_reduce_model", (10, 1)), ("scatter_elements_reduce_model", (10, 3))])
def test_inputs_are_drawn_for_a_lowered_reduction_whose_identity_fill_repeats_targets(caplog, build, indices_shape):
    """include_self=0 lowers to a plain scatter of the reduction's identity at every index, then the reducing scatter:
    10 indices into 6 rows repeat targets in the plain one, each time with the same value, which is defined. The
    loader searched for indices without repeats (there are none) and gave up; the reference warned of each run."""
    import logging

    import onnxruntime

    from trt_scatter import onnx_models
    from trt_scatter.passes.lower import lower

    model = getattr(onnx_models, build)((6, 3), indices_shape, reduction="max", include_self=0)
    lowered = lower(model)
    with caplog.at_level(logging.WARNING, logger="trt_scatter"):
        feed = ScatterDataLoader(lowered, seed=2)[0]
        got = Reference(lowered).run(feed)["output"]
    assert any(len(np.unique(column)) < len(column) for column in (feed["indices"] % 6).T), feed["indices"]  # repeated targets
    np.testing.assert_array_equal(got, onnxruntime.InferenceSession(lowered.SerializeToString()).run(None, feed)[0])
    assert "undefined" not in caplog.text, caplog.text


def _two_independently_computed_indices():
    """``x`` reaches a ScatterND's indices as ``2 * (x + 1) - 3``, ``y`` a ScatterElements' as ``Concat(y, y + 1)``:
    two inputs the loader searches values for, neither feeding the other's scatter."""
    from onnx import TensorProto, helper, numpy_helper

    constants = [numpy_helper.from_array(np.array(v, np.int64), name) for name, v in (("one", 1), ("two", 2), ("three", 3), ("last", [1]))]
    nodes = [helper.make_node("Cast", ["x"], ["x64"], to=TensorProto.INT64), helper.make_node("Add", ["x64", "one"], ["a1"]),
             helper.make_node("Mul", ["a1", "two"], ["a2"]), helper.make_node("Sub", ["a2", "three"], ["a3"]),
             helper.make_node("Unsqueeze", ["a3", "last"], ["rows"]), helper.make_node("ScatterND", ["d", "rows", "u"], ["o"]),
             helper.make_node("Add", ["y", "one"], ["y1"]), helper.make_node("Concat", ["y", "y1"], ["yc"], axis=0),
             helper.make_node("ScatterElements", ["d2", "yc", "u2"], ["o2"], axis=0)]
    value = helper.make_tensor_value_info
    inputs = [value("x", TensorProto.INT32, [3]), value("d", TensorProto.FLOAT, [16, 2]), value("u", TensorProto.FLOAT, [3, 2]),
              value("y", TensorProto.INT64, [2]), value("d2", TensorProto.FLOAT, [7]), value("u2", TensorProto.FLOAT, [4])]
    graph = helper.make_graph(nodes, "g", inputs, [value("o", TensorProto.FLOAT, [16, 2]), value("o2", TensorProto.FLOAT, [7])], constants)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("seed", range(8))
def test_inputs_searched_for_independent_scatters_are_kept_once_they_fit(seed):
    """Each try drew both inputs again, so 100 tries had to fit both at once: most seeds (the command's default, 1,
    among them) gave up, though each input alone was found every time. A try now keeps the inputs that fed no failing
    node."""
    model = _two_independently_computed_indices()
    feed = ScatterDataLoader(model, seed=seed)[0]
    rows = 2 * (feed["x"].astype(np.int64) + 1) - 3
    elements = np.concatenate([feed["y"], feed["y"] + 1])
    for values, size in ((rows, 16), (elements, 7)):  # in range, each target written once (negative ones from the end)
        assert ((-size <= values) & (values < size)).all() and len(np.unique(values % size)) == len(values), (values, size)


def test_an_input_no_value_of_which_fits_is_the_one_named():
    """``Concat(y, y)`` writes each target twice, whatever ``y`` holds, while ``x`` fits at once: the message named
    ``x``, the first input searched, as the one none of whose values fit."""
    model = _two_independently_computed_indices()
    add = next(node for node in model.graph.node if node.output[0] == "y1")
    add.input[:] = ["y", "zero"]  # y + 0: Concat(y, y)
    model.graph.initializer.append(onnx.numpy_helper.from_array(np.array(0, np.int64), "zero"))
    with pytest.raises(ValueError, match=r"input 'y' gives 'indices', and none of 100 random values of it"):
        ScatterDataLoader(model, seed=1)[0]


def test_values_alike_in_every_element_are_tried_for_all_searched_inputs_at_once():
    """``x + 1`` and ``x - y - 1`` index a dimension of 1: only ``x = y = -1`` in every element fits both, which random
    tries never find and the tries of one value for all do, each input taking that value together."""
    from onnx import TensorProto, helper, numpy_helper

    constants = [numpy_helper.from_array(np.array(1, np.int64), "one"), numpy_helper.from_array(np.array([0], np.int64), "first")]
    nodes = [helper.make_node("Add", ["x", "one"], ["xa"]), helper.make_node("Unsqueeze", ["xa", "first"], ["ia"]),
             helper.make_node("ScatterElements", ["da", "ia", "ua"], ["oa"], axis=0),
             helper.make_node("Sub", ["x", "y"], ["d"]), helper.make_node("Sub", ["d", "one"], ["d1"]),
             helper.make_node("Unsqueeze", ["d1", "first"], ["ib"]), helper.make_node("ScatterElements", ["db", "ib", "ub"], ["ob"], axis=0)]
    value = helper.make_tensor_value_info
    inputs = [value("x", TensorProto.INT64, [20]), value("y", TensorProto.INT64, [20])]
    inputs += [value(name, TensorProto.FLOAT, [1, 20]) for name in ("da", "ua", "db", "ub")]
    graph = helper.make_graph(nodes, "g", inputs, [value("oa", TensorProto.FLOAT, [1, 20]), value("ob", TensorProto.FLOAT, [1, 20])], constants)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    for seed in range(3):
        feed = ScatterDataLoader(model, seed=seed)[0]
        assert (feed["x"] == -1).all() and (feed["y"] == -1).all(), feed


@pytest.mark.parametrize("op, rule", [
    ("ScatterUpdate", "'indices' has 17 elements for the 16 rows of data's axis 0, so some repeat whatever their values: give shapes that "
                         "fit (--input-shapes), or valid inputs (--load-inputs)"),
    ("ScatterElements", "'indices' has 17 elements on axis 0 for data's 16, so some repeat whatever their values: give shapes that "
                              "fit (--input-shapes), or valid inputs (--load-inputs)"),
])
def test_more_computed_indices_than_targets_is_named_as_the_shapes_rule(op, rule):
    """A decoder's positions pos + arange(tokens) with more tokens than the cache has rows: no position fits, and the
    loader said only that none of 100 random values did (last: an index out of range), and to give valid inputs. (Not
    refused before the search: repeats that write equal values are valid, as a lowered reduction's identity fill.)"""
    from onnx import helper

    from trt_scatter.ops import DOMAIN

    nodes = [helper.make_node("Add", ["pos", "steps"], ["rows"])]
    if op == "ScatterUpdate":
        nodes.append(helper.make_node("ScatterUpdate", ["cache", "rows", "new", "axis"], ["out"], domain=DOMAIN))
        new_shape = [17, 4]
    else:
        nodes.append(helper.make_node("ScatterElements", ["cache", "rows", "new"], ["out"]))
        new_shape = [17]
    cache_shape = [16, 4] if op == "ScatterUpdate" else [16]
    constants = [onnx.numpy_helper.from_array(np.arange(17, dtype=np.int64), "steps"), onnx.numpy_helper.from_array(np.array([0], np.int64), "axis")]
    graph = helper.make_graph(nodes, "g", [info("cache", cache_shape, np.float32), info("pos", [1], np.int64), info("new", new_shape, np.float32)],
                              [info("out", cache_shape, np.float32)], constants if op == "ScatterUpdate" else constants[:1])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid(DOMAIN, 1)])
    with pytest.raises(ValueError) as refused:
        list(ScatterDataLoader(model))
    assert str(refused.value).endswith(rule), str(refused.value)


@pytest.mark.parametrize("seed", range(1, 6))
def test_inputs_are_drawn_for_a_lowered_write_of_as_many_rows_as_data_has(seed):
    """ScatterUpdate of 4 rows into the 4 rows of a (4, 16) data, lowered: the indices reach a standard ScatterND
    through the lowering's clamp, so the loader searches them, drawing in [-17, 17) by data's largest dimension: a
    permutation of the 4 rows came by chance alone, and every seed failed ("two writes to one element")."""
    from trt_scatter.onnx_models import scatter_update_model
    from trt_scatter.passes.lower import lower

    lowered = lower(scatter_update_model((4, 16), (4,), axis=0))
    feed = ScatterDataLoader(lowered, seed=seed)[0]
    written = Reference(lowered).run({**feed, "data": np.zeros((4, 16), np.float32), "updates": np.ones((4, 16), np.float32)})["output"]
    assert written.all(), feed["indices"]  # every row written once: four targets, none repeated


def test_a_failed_search_names_the_shared_input_not_an_independent_one_that_fits():
    """Indices two nodes take, which no draw fits both, beside an independent input pos + 1 searched for a third node:
    the tries where no searched input fed the failure blamed every searched one, and the message named pos."""
    from onnx import helper

    nodes = [helper.make_node("ScatterElements", ["a", "indices", "u"], ["out_a"], axis=0, name="write"),
             helper.make_node("ScatterUpdate", ["b", "indices", "v", "axis"], ["out_b"], domain="trt_scatter", name="update"),
             helper.make_node("Add", ["pos", "one"], ["rows"]), helper.make_node("ScatterElements", ["c", "rows", "w"], ["out_c"], axis=0, name="other")]
    graph = helper.make_graph(nodes, "g", [info("a", (3, 2), np.float32), info("b", (4,), np.float32), info("indices", (2, 2), np.int64),
                                           info("u", (2, 2), np.float32), info("v", (2, 2), np.float32), info("c", (8,), np.float32),
                                           info("pos", (1,), np.int64), info("w", (1,), np.float32)],
                              [info("out_a", (3, 2), np.float32), info("out_b", (4,), np.float32), info("out_c", (8,), np.float32)],
                              [onnx.numpy_helper.from_array(np.array(0), "axis"), onnx.numpy_helper.from_array(np.array([1]), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    with pytest.raises(ValueError, match=r"^ScatterUpdate node 'update': input 'indices' is drawn for ScatterElements node 'write' too"):
        ScatterDataLoader(model)[0]


def _searched_indices_model(op, data_shape, raw_shape, **attributes):
    """``op(data, raw + 0, updates)``: indices a node computes, which the loader searches for (no rule draws them)."""
    from onnx import helper

    updates_shape = raw_shape if op == "ScatterElements" else tuple(raw_shape[:-1]) + tuple(data_shape[raw_shape[-1]:])
    nodes = [helper.make_node("Add", ["raw", "zero"], ["indices"]), helper.make_node(op, ["data", "indices", "updates"], ["output"], **attributes)]
    graph = helper.make_graph(nodes, "g", [info("data", data_shape, np.float32), info("raw", raw_shape, np.int64), info("updates", updates_shape, np.float32)],
                              [info("output", data_shape, np.float32)], [onnx.numpy_helper.from_array(np.array(0), "zero")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("seed", range(4))
@pytest.mark.parametrize("op, data_shape, raw_shape, attributes", [
    ("ScatterElements", (4, 3), (4, 3), {"axis": 0}),  # each column a permutation of the 4 rows: found for 1 seed in 40
    ("ScatterND", (1, 4, 8), (2, 2), {}),  # pairs (0 or -1, j): the row axis holds coordinates, which may repeat
    ("ScatterND", (4, 16), (4, 1), {}),  # every row of data, once
    ("ScatterND", (300, 8), (256, 1), {}),  # 256 distinct rows: a window as wide as data's rows (one of 32 at most was tried)
], ids=["columns", "coordinate pairs", "rows", "many rows"])
def test_searched_indices_are_found_where_they_must_be_distinct_along_any_axis(seed, op, data_shape, raw_shape, attributes):
    feed = ScatterDataLoader(_searched_indices_model(op, data_shape, raw_shape, **attributes), seed=seed)[0]
    assert feed["raw"].shape == raw_shape


def test_value_ranges_set_the_inputs_no_rule_draws_and_leave_the_ruled_ones_valid(caplog):
    """``value_ranges`` (polygraphy's ``--val-range``: per input, ``""`` for every other) sets the values of the inputs
    the loader draws at random (data, updates: integers within both bounds, floats from low up to high), never those a
    scatter's rule draws, which stay valid; ``ruled_inputs`` names those, and a range given for one is said to be ignored
    (once, in Python too: not only by polygraphy run's flag)."""
    model = fx.scatter_elements_model([6, 5], [2, 5], axis=0, dtype=np.int32)
    loader = ScatterDataLoader(model, seed=3, iterations=4, value_ranges={"data": (100, 102), "indices": (50, 60), "": (-3, -3)})
    with caplog.at_level("WARNING", logger="trt_scatter"):
        feeds = list(loader)
    assert [r.getMessage() for r in caplog.records] == ["the value range for input 'indices' (--val-range, value_ranges) is ignored: its "
                                                        "values are drawn by the rules of the scatter nodes it reaches"]
    for feed in feeds:
        assert set(np.unique(feed["data"])) <= {100, 101, 102} and len(np.unique(feed["data"])) > 1
        assert np.all(feed["updates"] == -3)
        assert np.all((feed["indices"] >= -6) & (feed["indices"] < 6))  # the rule's, not 50-60
        Reference(model).run(feed)
    assert loader.ruled_inputs() == ["indices"]
    floats = ScatterDataLoader(fx.scatter_elements_model([6, 5], [2, 5], axis=0), value_ranges={"": (10.0, 20.0)})[0]
    assert floats["data"].dtype == np.float32 and np.all((floats["data"] >= 10) & (floats["data"] <= 20)) and floats["data"].std() > 1


@pytest.mark.parametrize("ranges, dtype, message", [
    ({"dtaa": (0, 1)}, "float16", r"^ScatterDataLoader: value_ranges names 'dtaa', which is not an input of the model \(its inputs: data, indices, updates\)$"),
    ({"data": (2, 1)}, "float16", r"^ScatterDataLoader: value_ranges\['data'\] must be \(low, high\) with low <= high \(got \(2, 1\)\)$"),
    ({"data": 5}, "float16", r"^ScatterDataLoader: value_ranges\['data'\] must be \(low, high\) with low <= high \(got 5\)$"),
    ([0, 1], "float16", r"^ScatterDataLoader: value_ranges must be a dict of input name -> \(low, high\) \(got \[0, 1\]\)$"),
    ({"data": ("0", "1")}, "float16", r"^ScatterDataLoader: value_ranges\['data'\] must be \(low, high\) with low <= high \(got \('0', '1'\)\)$"),
    ({"": (-1, 70000)}, "float16", r"^ScatterDataLoader: value_ranges gives input 'data' \(float16\) the range \(-1, 70000\), which holds no float16 "
                                   r"value or some past its limits \[-65504\.0, 65504\.0\]$"),
    ({"data": (0.2, 0.8)}, "int8", r"^ScatterDataLoader: value_ranges gives input 'data' \(int8\) the range \(0\.2, 0\.8\), which holds no int8 value "),
    ({"data": (-1, 200)}, "uint8", r"^ScatterDataLoader: value_ranges gives input 'data' \(uint8\) the range \(-1, 200\), which holds no uint8 value or "
                                   r"some past its limits \[0, 255\]$"),
    ({"data": (1e38, 1e39)}, "bfloat16", r"^ScatterDataLoader: value_ranges gives input 'data' \(bfloat16\) the range \(1e\+38, 1e\+39\), which holds no "),
    ({"data": (0, 1)}, "bool", r"^ScatterDataLoader: value_ranges gives bool input 'data' a range: bool values have none$"),
], ids=["no-input", "high-below-low", "no-pair", "no-dict", "no-numbers", "past-float16", "no-int8", "past-uint8", "past-bfloat16", "bool"])
def test_value_ranges_that_name_no_input_or_no_range_are_refused_by_name(ranges, dtype, message):
    import ml_dtypes

    dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
    with pytest.raises((ValueError, TypeError), match=message):
        ScatterDataLoader(fx.scatter_elements_model([6, 5], [2, 5], axis=0, dtype=dtype), value_ranges=ranges)[0]


def test_a_range_for_every_input_leaves_the_indices_to_their_rule_and_takes_the_whole_of_a_type():
    """``""`` ranges every input: one that holds no index (0.2 to 0.8) is no refusal, as the indices' rule draws them;
    the whole range of uint64 is drawn (it raised NumPy's "high is out of bounds for int64")."""
    model = fx.scatter_elements_model([6, 5], [2, 5], axis=0)
    feed = ScatterDataLoader(model, value_ranges={"": (0.2, 0.8)})[0]
    assert np.all((feed["data"] >= 0.2) & (feed["data"] <= 0.8)) and Reference(model).run(feed)
    widest = ScatterDataLoader(fx.scatter_elements_model([6, 5], [2, 5], axis=0, dtype=np.uint64), value_ranges={"": (0, 2**64 - 1)})[0]
    assert widest["data"].dtype == np.uint64 and widest["data"].max() > 2**63


def test_a_slice_placed_at_run_time_moves_within_a_free_data_dim_twice_its_length():
    """cache[B, L, 8] written with upd[B, T, 8] at a run-time position (start = pos, stop = pos + T), L and T free: both
    took 4, so every valid position was 0, and a model that ignored pos passed its golden check. A free L now holds
    two updates, and the drawn positions reach past 0."""
    from onnx import helper, numpy_helper

    nodes = [helper.make_node("Shape", ["upd"], ["shape"]), helper.make_node("Gather", ["shape", "one"], ["length"], axis=0),
             helper.make_node("Add", ["pos", "length"], ["stop"]),
             helper.make_node("SliceScatter", ["cache", "upd", "pos", "stop", "one", "one"], ["y"], domain="trt_scatter")]
    graph = helper.make_graph(nodes, "kv", [info("cache", ["B", "L", 8]), info("upd", ["B", "T", 8]), info("pos", [1], np.int64)],
                              [info("y", ["B", "L", 8])], [numpy_helper.from_array(np.array([1]), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    loader = ScatterDataLoader(model, iterations=8)
    assert loader.shapes()["cache"] == (DEFAULT_DIM, 2 * DEFAULT_DIM, 8) and loader.shapes()["upd"] == (DEFAULT_DIM, DEFAULT_DIM, 8)
    starts = {int(feed["pos"][0]) % (2 * DEFAULT_DIM) for feed in loader}
    assert len(starts) > 1 and starts != {0}, starts
    for feed in loader:
        Reference(model).run(feed)
    given = ScatterDataLoader(model, input_shapes={"cache": [2, 5, 8], "upd": [2, 5, 8]})  # given shapes are kept
    assert given.shapes()["cache"] == (2, 5, 8)


@pytest.mark.parametrize("build", [
    lambda: fx.scatter_elements_model(["N", "C"], ["K", "J"], axis=0),
    lambda: onnx_models.scatter_update_model(("N", "C"), ("K",), 0),
    lambda: fx.scatter_nd_model(["N", "C"], ["K", 1], ["K", "C"]),
], ids=["scatter_elements", "scatter_update", "scatter_nd"])
def test_free_dims_leave_some_of_data_unwritten(build):
    """Every dim free: data took as many rows as the indices, so every row was written and data's values never reached
    the output; a model that dropped data (a scatter into zeros) passed its golden check. data's indexed dim now has
    room for the indices twice."""
    model = build()
    for feed in ScatterDataLoader(model, iterations=3):
        output = Reference(model).run(feed)["output"]
        kept = np.isclose(output, feed["data"]) & ~np.isclose(feed["data"], 0)
        assert feed["data"].shape[0] == 2 * DEFAULT_DIM and kept.any(), feed["data"].shape


def _one_dim_model(nodes, inputs):
    from onnx import helper

    values = [info(name, [dim], np.int64 if name.startswith(("I", "J", "idx")) else np.float32) for name, dim in inputs]
    outputs = [info(node.output[0], None) for node in nodes]
    return helper.make_model(helper.make_graph(nodes, "m", values, outputs), opset_imports=[helper.make_opsetid("", 18)])


def test_room_for_data_is_a_preference_that_costs_no_other_dim_and_no_run():
    """The room is given up where it would cost something: a later node that makes data's dim the indices' shrank the
    indices to 0 elements (the scatter then wrote nothing, and passed), two writes that tie a and b only together were
    refused, and a bias that an Add ties to data's dim by position alone (each input's dims named apart, as
    TorchScript's dynamic_axes names them) failed the run at 8 against 4."""
    from onnx import helper

    elements = lambda data, indices, updates, out: helper.make_node("ScatterElements", [data, indices, updates], [out], axis=0)  # noqa: E731
    models = {
        "tied by a later node": _one_dim_model([elements("X", "I", "U", "s1"), elements("Z", "I", "X", "s2")],
                                               [("X", "a"), ("I", "b"), ("U", "b"), ("Z", "c")]),
        "a cycle": _one_dim_model([elements("X", "I", "U", "s1"), elements("Y", "J", "V", "s2")],
                                  [("X", "a"), ("I", "b"), ("U", "b"), ("Y", "b"), ("J", "a"), ("V", "a")]),
        "tied by an Add": _one_dim_model([elements("data", "idx", "upd", "s"), helper.make_node("Add", ["s", "bias"], ["y"])],
                                         [("data", "n"), ("idx", "k"), ("upd", "k"), ("bias", "m")]),
    }
    for what, model in models.items():
        loader = ScatterDataLoader(model, iterations=2)
        assert all(min(shape) > 0 for shape in loader.shapes().values()), (what, loader.shapes())
        for feed in loader:
            Reference(model).run(feed)
    assert ScatterDataLoader(models["tied by an Add"]).shapes()["bias"] == ScatterDataLoader(models["tied by an Add"]).shapes()["data"]


def test_given_shapes_that_a_constant_index_cannot_fit_are_named_before_any_value_is_drawn():
    """Constant indices [2] into data's dim 0, given as 2: the loader drew inputs, and the run failed in the reference
    ("values must be in [0, 1]"), after check had built the engine and without a word of the given shapes."""
    from onnx import numpy_helper

    model = onnx_models.scatter_update_model(("N", 3), (1,), 0)
    kept = [value for value in model.graph.input if value.name != "indices"]
    del model.graph.input[:]
    model.graph.input.extend(kept)
    model.graph.initializer.append(numpy_helper.from_array(np.array([2], np.int64), "indices"))
    with pytest.raises(ValueError, match=r"^ScatterUpdate node '[^']+': scatter_update: its constant indices need dimension 0 of 'data' to be "
                                         r"at least 3, and the given shapes \(data \[2, 3\]\) make it 2: give shapes where they fit "
                                         r"\(input_shapes, --input-shapes\)$"):
        ScatterDataLoader(model, input_shapes={"data": [2, 3]}).shapes()
    assert ScatterDataLoader(model, input_shapes={"data": [3, 3]}).shapes()["data"] == (3, 3)
    # data of no declared rank, and a named dim that another input's given shape sets: the same line
    unranked = onnx.ModelProto()
    unranked.CopyFrom(model)
    unranked.graph.input[0].type.tensor_type.ClearField("shape")
    with pytest.raises(ValueError, match=r"make it 2: give shapes where they fit"):
        ScatterDataLoader(unranked, input_shapes={"data": [2, 3]}).shapes()
    named = onnx.ModelProto()
    named.CopyFrom(model)
    named.graph.input.append(info("x", ["N"]))
    with pytest.raises(ValueError, match=r"the given shapes \(x \[2\]\) make it 2: give shapes where they fit"):
        ScatterDataLoader(named, input_shapes={"x": [2]}).shapes()


def test_the_try_at_roomy_shapes_keeps_the_room_where_no_run_works_and_hides_no_warning_of_the_real_run():
    """The room was dropped where the reference cannot run the model at all (an op of another domain after the write),
    though no shape would help; and the try's NumPy warnings (a Log of negative values) were shown during planning, so
    Python, which shows one once per line, said nothing in the run that counts."""
    import warnings

    from onnx import helper

    write = helper.make_node("ScatterElements", ["data", "idx", "upd"], ["written"], axis=0)
    inputs = [("data", "n"), ("idx", "k"), ("upd", "k")]
    custom = _one_dim_model([write, helper.make_node("Mystery", ["written"], ["out"], domain="vendor.ops")], inputs)
    custom.opset_import.append(helper.make_opsetid("vendor.ops", 1))
    assert ScatterDataLoader(custom).shapes()["data"] == (2 * DEFAULT_DIM,)
    logged = _one_dim_model([write, helper.make_node("Log", ["written"], ["out"])], inputs)
    loader = ScatterDataLoader(logged)
    assert loader.shapes()["data"] == (2 * DEFAULT_DIM,)  # planned (and tried) here
    with warnings.catch_warnings(record=True) as caught:
        warnings.simplefilter("default")
        Reference(logged).run(loader[0])
    assert any(issubclass(w.category, RuntimeWarning) and "log" in str(w.message) for w in caught), [str(w.message) for w in caught]


def test_an_index_input_that_a_scatternd_and_a_scatterupdate_take_fits_both_for_any_seed():
    """idx (9, 1) gives a ScatterND's indices and, squeezed, a ScatterUpdate's: the loader drew it for the ScatterND, about
    half of the values negative, which ScatterUpdate's rule refuses, and drew again until all of 9 were not (1 in 512):
    "none of 100 draws fit both" for most seeds. Every other draw keeps the indices in [0, s-1], which both take."""
    from onnx import helper

    graph = helper.make_graph(
        [helper.make_node("ScatterND", ["x", "idx", "u"], ["y"]), helper.make_node("Squeeze", ["idx", "one"], ["rows"]),
         helper.make_node("ScatterUpdate", ["x", "rows", "u2", "zero"], ["z"], domain="trt_scatter")],
        "shared", [info("x", ("B", 6), np.float32), info("idx", ("K", 1), np.int64), info("u", ("K", 6), np.float32), info("u2", ("K", 6), np.float32)],
        [info("y", ("B", 6), np.float32), info("z", ("B", 6), np.float32)],
        [onnx.numpy_helper.from_array(np.array([1], np.int64), "one"), onnx.numpy_helper.from_array(np.array([0], np.int64), "zero")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    for seed in range(10):
        feed = ScatterDataLoader(model, seed=seed, input_shapes={"idx": (9, 1)})[0]
        assert feed["x"].shape[0] >= 9 and len(set(feed["idx"].ravel() % feed["x"].shape[0])) == 9, seed
        Reference(model).run(feed)


def test_the_loader_takes_a_model_loader_as_polygraphys_loaders_do(tmp_path):
    """ScatterDataLoader(OnnxFromPath(path)): every other trt-scatter piece takes a loader of a model, this one raised
    "model must be a path, an onnx.ModelProto or a trt_scatter.model.Model (got OnnxFromPath)" on first use."""
    from polygraphy.backend.onnx import OnnxFromPath

    path = fx.save(fx.scatter_elements_model([5, 3], [2, 3], axis=0), tmp_path / "se.onnx")
    feed = ScatterDataLoader(OnnxFromPath(str(path)), seed=4)[0]
    np.testing.assert_array_equal(feed["indices"], ScatterDataLoader(str(path), seed=4)[0]["indices"])


@pytest.mark.parametrize("view", [[-1], [1, -1]])
def test_a_value_reshaped_before_its_expand_gets_the_length_the_expand_gives_it(view):
    """``x[2:, ::3] = y`` with y (1, b) as PyTorch's dynamo exporter writes it: y.view(-1) expanded to (n - 2, (m + 2) // 3),
    both computed from x's dims. The loader followed an Expand's input through Cast and Identity only, drew b = 4 where
    (m + 2) // 3 = 2, and every run failed on the Expand."""
    from onnx import helper

    const = lambda name, values: onnx.numpy_helper.from_array(np.array(values, np.int64), name)  # noqa: E731
    nodes = [helper.make_node("Reshape", ["y", "view"], ["row"]), helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Gather", ["xs", "zero"], ["n"]), helper.make_node("Gather", ["xs", "one"], ["m"]),
             helper.make_node("Sub", ["n", "two"], ["rows"]), helper.make_node("Add", ["m", "two"], ["m2"]), helper.make_node("Div", ["m2", "three"], ["cols"]),
             helper.make_node("Concat", ["rows", "cols"], ["shape"], axis=0), helper.make_node("Expand", ["row", "shape"], ["values"]),
             helper.make_node("SliceScatter", ["x", "values", "start", "stop", "step", "axes"], ["out"], domain="trt_scatter")]
    graph = helper.make_graph(nodes, "bcast", [info("x", ("n", "m"), np.float32), info("y", (1, "b"), np.float32)], [info("out", ("n", "m"), np.float32)],
                              [const("view", view), const("zero", [0]), const("one", [1]), const("two", [2]), const("three", [3]),
                               const("start", [2, 0]), const("stop", [2**63 - 1, 2**63 - 1]), const("step", [1, 3]), const("axes", [0, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    feed = ScatterDataLoader(model)[0]
    assert feed["y"].shape == (1, (feed["x"].shape[1] + 2) // 3), {name: value.shape for name, value in feed.items()}
    Reference(model).run(feed)


def test_an_expand_to_a_length_that_an_inputs_values_set_is_left_to_the_run():
    """y (1, b).view(-1) expanded to (n - 2, k), k an input whose values set the length: the loader took k's length from
    one random run (negative) and failed in NumPy ("negative dimensions are not allowed") on inputs that, with k's
    range given, work. Two runs disagree on such a length, so it is not taken."""
    from onnx import TensorProto, helper

    const = lambda name, values: onnx.numpy_helper.from_array(np.array(values, np.int64), name)  # noqa: E731
    nodes = [helper.make_node("Reshape", ["y", "view"], ["row"]), helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Gather", ["xs", "zero"], ["n"]), helper.make_node("Sub", ["n", "two"], ["rows"]),
             helper.make_node("Concat", ["rows", "k"], ["shape"], axis=0), helper.make_node("Expand", ["row", "shape"], ["values"]),
             helper.make_node("SliceScatter", ["x", "values", "start", "stop", "step", "axes"], ["out"], domain="trt_scatter")]
    graph = helper.make_graph(nodes, "b", [info("x", ("n", "m"), np.float32), info("y", (1, "b"), np.float32), info("k", (1,), TensorProto.INT64)],
                              [info("out", ("n", "m"), np.float32)],
                              [const("view", [-1]), const("zero", [0]), const("two", [2]), const("start", [2, 0]), const("stop", [2**63 - 1, 2**63 - 1]),
                               const("step", [1, 1]), const("axes", [0, 1])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid("trt_scatter", 1)])
    feed = ScatterDataLoader(model, value_ranges={"k": (1, 2)})[0]
    assert feed["y"].shape[0] == 1 and feed["y"].shape[1] >= 1


def test_a_loader_that_drew_its_inputs_pickles_and_draws_the_same_again():
    """polygraphy run --use-subprocess pickles the data loader for its runner's child: one that had drawn inputs held
    its plan, the rules' functions in it, which do not pickle ("Could not send data loader cache to runner subprocess")."""
    import pickle

    loader = ScatterDataLoader(fx.scatter_elements_model([6, 5], [2, 5], axis=0), seed=4, iterations=2)
    first = list(loader)
    again = pickle.loads(pickle.dumps(loader))
    for feed, other in zip(first, again):
        assert feed.keys() == other.keys() and all(np.array_equal(feed[name], other[name]) for name in feed)


@pytest.mark.parametrize("updates_shape", [(1, 6, 5), ("k", 6, 5)])
def test_a_scatternd_whose_row_length_is_free_takes_the_length_the_updates_rank_sets(updates_shape):
    """indices [1, k] with k free: updates of rank 3 into data of rank 3 set k = 1 (indices.shape[:-1] + data.shape[k:]),
    so the model has valid inputs; the loader took k = rank of data (3) and refused it ('updates' must have shape (1,))."""
    model = fx.scatter_nd_model([3, 6, 5], [1, "k"], list(updates_shape))
    for feed in ScatterDataLoader(model, seed=0, iterations=2):
        assert feed["indices"].shape == (1, 1) and feed["updates"].shape == (1, 6, 5)
        Reference(model).run(feed)


def test_run_time_slice_axes_take_the_order_the_constant_slices_fit():
    """start [0, 1], stop [4, -3], step [1, -2] with run-time axes: data [2, 4] and updates [1, 4] fit axes [1, 0]
    only; the loader kept the default order [0, 1] and refused the model ('updates' must have shape (2, 0))."""
    model = fx.slice_scatter_model([2, 4], [1, 4], [0, 1], [4, -3], [1, -2], axes=[1, 0], constant_params=("start", "stop", "step"))
    for feed in ScatterDataLoader(model, seed=0, iterations=2):
        Reference(model).run(feed)


def test_a_free_dim_sliced_by_a_run_time_step_grows_to_fit_the_constant_start_and_stop():
    """start 5, stop -7 with a run-time step and updates of 3: data of 5 takes them (step -2: 4, 2, 0), data of 4
    takes no step; the loader left the free dim at 4 and refused the model."""
    model = fx.slice_scatter_model(["d"], [3], [5], [-7], [-2], constant_params=("start", "stop"))
    for feed in ScatterDataLoader(model, seed=0, iterations=2):
        Reference(model).run(feed)


def test_a_free_dim_grown_for_one_slice_is_taken_by_another_slice_derived_before_it():
    """Two SliceScatters on data [d]: the first (in node order) slices all of it into free updates [u], the second takes
    3 of d with start 5, stop -7 and a run-time step, which d = 5 fits (step -2) and d = 4 does not. The second grew d to 5
    after the first had set u = 4 from d's old value, and the loader refused the valid model ('updates' must have shape (5,))."""
    from onnx import helper, numpy_helper

    from trt_scatter.ops import DOMAIN, VERSION

    def constant(name, values):
        return numpy_helper.from_array(np.asarray(values, np.int64), name)

    whole = helper.make_node("SliceScatter", ["x", "u_all", "zero", "end", "one"], ["whole"], domain=DOMAIN)
    three = helper.make_node("SliceScatter", ["x", "u_three", "five", "minus_seven", "step"], ["three"], domain=DOMAIN)
    graph = helper.make_graph([whole, three], "g",
                              [info("x", ["d"]), info("u_all", ["u"]), info("u_three", [3]), info("step", [1], np.int64)],
                              [info("whole", ["d"]), info("three", ["d"])],
                              initializer=[constant("zero", [0]), constant("end", [2**62]), constant("one", [1]), constant("five", [5]),
                                           constant("minus_seven", [-7])])
    model = onnx.helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, VERSION)], ir_version=8)
    for feed in ScatterDataLoader(model, seed=0, iterations=2):
        assert feed["u_all"].shape == feed["x"].shape
        Reference(model).run(feed)


def test_a_free_dim_grown_for_a_slice_stays_within_another_nodes_data():
    """A SliceScatter takes 3 of data [d] with start 10, stop 13 and a run-time step (d of 13 or more), and d is also the
    count of a ScatterUpdate's distinct indices into data [m]: m had settled to fit d's old value, the growth went past it,
    and the loader refused the valid model ('indices' must have at most 8 elements)."""
    from onnx import helper, numpy_helper

    from trt_scatter.ops import DOMAIN, VERSION

    def constant(name, values):
        return numpy_helper.from_array(np.asarray(values, np.int64), name)

    sliced = helper.make_node("SliceScatter", ["x", "u_three", "ten", "thirteen", "step"], ["sliced"], domain=DOMAIN)
    updated = helper.make_node("ScatterUpdate", ["z", "indices", "rows", "zero"], ["updated"], domain=DOMAIN)
    graph = helper.make_graph([sliced, updated], "g",
                              [info("x", ["d"]), info("u_three", [3]), info("step", [1], np.int64), info("z", ["m"]),
                               info("indices", ["d"], np.int64), info("rows", ["d"])],
                              [info("sliced", ["d"]), info("updated", ["m"])],
                              initializer=[constant("ten", [10]), constant("thirteen", [13]), constant("zero", 0)])
    model = onnx.helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, VERSION)], ir_version=8)
    for feed in ScatterDataLoader(model, seed=0, iterations=2):
        assert feed["x"].shape[0] >= 13 and feed["z"].shape[0] >= feed["indices"].shape[0]
        Reference(model).run(feed)
