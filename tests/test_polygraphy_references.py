"""trt-scatter's reference in polygraphy (ReferenceRunner, what `polygraphy run --pluginref` runs), tested against onnxruntime.

Standard-op models run in both; plugin-node models (SliceScatter, ScatterUpdate) run in the reference
and are compared with onnxruntime running a native lowering whose constant indices come from
NumPy's own slicing (tests/onnx_fixtures.py), so the references' wiring is checked differentially.
pluginref's own registry gets the four scatter ops too.
"""

import numpy as np
import onnx
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import helper, numpy_helper

import onnx_fixtures as fx
from trt_scatter import oracle
from trt_scatter.oracle import ScatterInputError
from trt_scatter.polygraphy_ext import ScatterDataLoader


def run_pluginref(model, feed):
    from trt_scatter.polygraphy_ext import ReferenceRunner

    with ReferenceRunner(model) as runner:
        return runner.infer(feed)["output"]


def run_pluginref_registry(model, feed):
    """polygraphy's own PluginRefRunner, node by node with its registry."""
    import onnx_graphsurgeon as gs
    from polygraphy.backend.pluginref import PluginRefRunner

    import trt_scatter.polygraphy_ext  # noqa: F401  (registers the scatter ops)

    with PluginRefRunner(gs.import_onnx(model)) as runner:
        return runner.infer(feed)["output"]


def run_onnxruntime(model, feed):
    import onnxruntime

    session = onnxruntime.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    return session.run(["output"], feed)[0]


@given(
    shape=st.lists(st.integers(1, 5), min_size=1, max_size=4),
    data=st.data(),
    dtype=st.sampled_from([np.float32, np.int32, np.int64, np.float16]),
    index_dtype=st.sampled_from([np.int32, np.int64]),
)
def test_scatter_elements_matches_onnxruntime(shape, data, dtype, index_dtype):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    indices_shape = [data.draw(st.integers(1, d)) for d in shape]
    model = fx.scatter_elements_model(shape, indices_shape, axis=axis, dtype=dtype, index_dtype=index_dtype)
    feed = ScatterDataLoader(model, seed=data.draw(st.integers(0, 99)))[0]
    np.testing.assert_array_equal(run_pluginref(model, feed), run_onnxruntime(model, feed))


@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=4), data=st.data())
def test_scatter_nd_matches_onnxruntime(shape, data):
    k = data.draw(st.integers(1, len(shape)))
    rows = data.draw(st.integers(1, int(np.prod(shape[:k]))))
    model = fx.scatter_nd_model(shape, [rows, k], [rows] + shape[k:])
    feed = ScatterDataLoader(model, seed=data.draw(st.integers(0, 99)))[0]
    np.testing.assert_array_equal(run_pluginref(model, feed), run_onnxruntime(model, feed))


def _slice_bounds(draw, dim):
    return (
        draw(st.integers(-dim - 2, dim + 2)),
        draw(st.integers(-dim - 2, dim + 2)),
        draw(st.sampled_from([1, 2, 3, -1, -2, -3])),
    )


@given(shape=st.lists(st.integers(1, 6), min_size=1, max_size=3), data=st.data())
def test_slice_scatter_plugin_node_matches_native_lowering(shape, data):
    axes = data.draw(st.permutations(range(len(shape))))[: data.draw(st.integers(1, len(shape)))]
    bounds = [_slice_bounds(data.draw, shape[a]) for a in axes]
    start, stop, step = (list(v) for v in zip(*bounds))
    native, updates_shape = fx.slice_scatter_native_model(shape, start, stop, step, axes)
    plugin = fx.slice_scatter_model(shape, updates_shape, start, stop, step, axes)
    rng = np.random.default_rng(0)
    feed = {"data": rng.random(shape, dtype=np.float32), "updates": rng.random(updates_shape, dtype=np.float32)}
    np.testing.assert_array_equal(run_pluginref(plugin, feed), run_onnxruntime(native, feed))


@given(shape=st.lists(st.integers(1, 5), min_size=1, max_size=3), data=st.data())
def test_scatter_update_plugin_node_matches_native_lowering(shape, data):
    axis = data.draw(st.integers(-len(shape), len(shape) - 1))
    size = shape[axis]
    count = data.draw(st.integers(1, size))
    indices = np.asarray(data.draw(st.permutations(range(size)))[:count])
    if data.draw(st.booleans()) and count % 2 == 0:
        indices = indices.reshape(2, -1)
    native, updates_shape = fx.scatter_update_native_model(shape, indices, axis)
    plugin = fx.scatter_update_model(shape, list(indices.shape), updates_shape, axis)
    rng = np.random.default_rng(1)
    feed = {"data": rng.random(shape, dtype=np.float32), "updates": rng.random(updates_shape, dtype=np.float32)}
    np.testing.assert_array_equal(run_pluginref(plugin, {**feed, "indices": indices}), run_onnxruntime(native, feed))


def test_standard_ops_run_in_the_reference_and_pluginref_knows_only_its_registry():
    # data + 1 scattered with indices that a Constant -> Reshape -> Cast chain computes
    nodes = [
        helper.make_node("Constant", [], ["flat"], value=numpy_helper.from_array(np.array([2, 0], np.int32))),
        helper.make_node("Constant", [], ["two_by_one"], value=numpy_helper.from_array(np.array([2, 1], np.int64))),
        helper.make_node("Reshape", ["flat", "two_by_one"], ["rows32"]),
        helper.make_node("Cast", ["rows32"], ["rows"], to=onnx.TensorProto.INT64),
        helper.make_node("Shape", ["data"], ["data_shape"]),
        helper.make_node("Constant", [], ["one"], value=numpy_helper.from_array(np.array(1.0, np.float32))),
        helper.make_node("Add", ["data", "one"], ["shifted"]),
        helper.make_node("ScatterND", ["shifted", "rows", "updates"], ["output"]),
    ]
    graph = helper.make_graph(
        nodes, "lowered",
        [helper.make_tensor_value_info("data", onnx.TensorProto.FLOAT, [3, 4]), helper.make_tensor_value_info("updates", onnx.TensorProto.FLOAT, [2, 4])],
        [helper.make_tensor_value_info("output", onnx.TensorProto.FLOAT, [3, 4])],
    )  # fmt: skip
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)], ir_version=8)
    rng = np.random.default_rng(2)
    feed = {"data": rng.random((3, 4), dtype=np.float32), "updates": rng.random((2, 4), dtype=np.float32)}
    np.testing.assert_array_equal(run_pluginref(model, feed), run_onnxruntime(model, feed))
    from polygraphy.exception import PolygraphyException

    with pytest.raises(PolygraphyException, match="Op: Constant does not have a reference implementation registered"):
        run_pluginref_registry(model, feed)


def test_pluginref_registry_runs_the_scatter_ops_with_the_oracle():
    model = fx.scatter_update_model([4, 3], [2], [4, 2], axis=1)
    feed = {"data": np.zeros((4, 3), np.float32), "indices": np.array([2, 0]), "updates": np.arange(8, dtype=np.float32).reshape(4, 2)}
    expected = oracle.scatter_update(feed["data"], feed["indices"], feed["updates"], 1)
    np.testing.assert_array_equal(run_pluginref_registry(model, feed), expected)
    model = fx.slice_scatter_model([4, 3], [2, 3], [-1], [-5], [-2])  # without the optional axes
    feed = {"data": np.zeros((4, 3), np.float32), "updates": np.arange(6, dtype=np.float32).reshape(2, 3)}
    np.testing.assert_array_equal(run_pluginref_registry(model, feed), oracle.slice_scatter(feed["data"], feed["updates"], [-1], [-5], [-2]))
    elements = fx.scatter_elements_model([4], [3])
    elements.graph.node[0].attribute.append(helper.make_attribute("reduction", "max"))
    feed = {"data": np.zeros(4, np.float32), "indices": np.array([0, 1, 0]), "updates": np.array([3, -1, 2], np.float32)}
    np.testing.assert_array_equal(run_pluginref_registry(elements, feed), [3, 0, 0, 0])
    elements.graph.node[0].attribute[-1].s = b"none2"
    with pytest.raises(ScatterInputError, match="scatter_elements: 'reduction' must be one of 'add', 'mul', 'min', 'max'"):
        run_pluginref_registry(elements, feed)


def test_scatter_reductions_run_with_the_oracle_as_onnxruntime_does():
    """Reductions run in the oracle's order of combination; onnxruntime (and ONNX's evaluator) agree."""
    model = fx.scatter_elements_model([4], [3])
    model.graph.node[0].attribute.append(helper.make_attribute("reduction", "add"))
    feed = {"data": np.ones(4, np.float32), "indices": np.array([0, 1, 0]), "updates": np.full(3, 2.0, np.float32)}
    np.testing.assert_array_equal(run_pluginref(model, feed), [5, 3, 1, 1])
    np.testing.assert_array_equal(run_pluginref(model, feed), run_onnxruntime(model, feed))


def test_out_of_range_indices_fail_in_pluginref_with_the_oracle_message():
    model = fx.scatter_update_model([4, 3], [2], [2, 3], axis=0)
    feed = {"data": np.zeros((4, 3), np.float32), "indices": np.array([0, 4]), "updates": np.ones((2, 3), np.float32)}
    with pytest.raises(ScatterInputError, match=r"scatter_update: 'indices' values must be in \[0, 3\]"):
        run_pluginref(model, feed)


def test_constant_inputs_from_constant_nodes_reach_the_references():
    # SliceScatter's start/stop/step and ScatterUpdate's axis as Constant nodes instead of initializers
    def constants_as_nodes(model):
        for init in list(model.graph.initializer):
            model.graph.node.insert(0, helper.make_node("Constant", [], [init.name], value=init))
        del model.graph.initializer[:]
        return model

    rng = np.random.default_rng(3)
    native, updates_shape = fx.slice_scatter_native_model([6, 5], [5, 1], [0, 5], [-2, 2])
    plugin = constants_as_nodes(fx.slice_scatter_model([6, 5], updates_shape, [5, 1], [0, 5], [-2, 2]))
    feed = {"data": rng.random((6, 5), dtype=np.float32), "updates": rng.random(updates_shape, dtype=np.float32)}
    np.testing.assert_array_equal(run_pluginref(plugin, feed), run_onnxruntime(native, feed))

    native, updates_shape = fx.scatter_update_native_model([3, 4], [2, 0], axis=1)
    plugin = constants_as_nodes(fx.scatter_update_model([3, 4], [2], updates_shape, axis=1))
    feed = {"data": rng.random((3, 4), dtype=np.float32), "updates": rng.random(updates_shape, dtype=np.float32)}
    np.testing.assert_array_equal(run_pluginref(plugin, {**feed, "indices": np.array([2, 0])}), run_onnxruntime(native, feed))


def test_pluginref_registry_runs_standard_scatters_with_the_oracle():
    """polygraphy's registry runs ScatterElements and ScatterND (with a reduction too) with the oracle, as onnxruntime does."""
    model = fx.scatter_elements_model([4, 3], [2, 3], axis=0)
    feed = {"data": np.zeros((4, 3), np.float32), "indices": np.array([[3, 0, 1], [1, 2, 0]]), "updates": np.arange(6, dtype=np.float32).reshape(2, 3)}
    np.testing.assert_array_equal(run_pluginref_registry(model, feed), run_onnxruntime(model, feed))
    model = fx.scatter_nd_model([4, 3], [2, 1], [2, 3])
    feed = {"data": np.zeros((4, 3), np.float32), "indices": np.array([[3], [1]]), "updates": np.arange(6, dtype=np.float32).reshape(2, 3)}
    np.testing.assert_array_equal(run_pluginref_registry(model, feed), run_onnxruntime(model, feed))
    model.graph.node[0].attribute.append(helper.make_attribute("reduction", "mul"))
    feed["indices"] = np.array([[3], [3]])
    feed["data"] = np.full((4, 3), 2, np.float32)
    np.testing.assert_array_equal(run_pluginref_registry(model, feed), run_onnxruntime(model, feed))
