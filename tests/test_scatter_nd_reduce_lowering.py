"""ScatterNDReduce's lowering (standard ONNX ScatterND with a reduction) in onnxruntime against the oracle; its TensorRT
network form (the plugin only)."""

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from lowering_support import add_input, new_network, plugin_calls, run_onnx, symbolic  # noqa: F401 (fixture)

from reduction_helpers import REDUCTIONS, assert_same, values
from trt_scatter.networks import add_scatter_nd_reduce
from trt_scatter.onnx_models import scatter_nd_reduce_model
from trt_scatter.oracle import ScatterInputError
from trt_scatter.oracle.scatter_nd_reduce import scatter_nd_reduce

# onnxruntime 1.32's CPU ScatterND reductions take no float16, and no bfloat16 comes from Python.
DTYPES = [np.float32, np.float64, np.int8, np.uint8, np.int32, np.int64]


@st.composite
def cases(draw):
    rank = draw(st.integers(1, 3))
    shape = tuple(draw(st.lists(st.integers(1, 4), min_size=rank, max_size=rank)))
    k = draw(st.integers(0, rank))
    rng = np.random.default_rng(draw(st.integers(0, 2**32 - 1)))
    rows = draw(st.integers(0, 7))
    lead = np.array(shape[:k], np.int64)
    indices = rng.integers(-lead, lead, size=(rows, k)) if k else np.zeros((rows, 0), np.int64)
    dtype = draw(st.sampled_from(DTYPES))
    dynamic = draw(st.lists(st.booleans(), min_size=rank, max_size=rank))
    return (values(rng, shape, dtype, small=True), indices.astype(draw(st.sampled_from([np.int32, np.int64]))),
            values(rng, (rows,) + shape[k:], dtype, small=True), draw(st.sampled_from(REDUCTIONS)), draw(st.sampled_from([0, 1])), dynamic)


@settings(max_examples=40)
@given(case=cases())
def test_lowering_matches_the_oracle_in_onnxruntime(case):
    data, indices, updates, reduction, include_self, dynamic = case
    data_shape, _ = symbolic(data.shape, dynamic, "d")
    model = scatter_nd_reduce_model(data_shape, (symbolic((indices.shape[0],), [dynamic[0]], "r")[0][0], indices.shape[1]), reduction,
                                    include_self, dtype=data.dtype, index_dtype=indices.dtype, impl="native")
    got = run_onnx(model, {"data": data, "indices": indices, "updates": updates})
    assert_same(got, scatter_nd_reduce(data, indices, updates, reduction, include_self))


def test_tensorrt_has_no_layer_for_it_and_the_plugin_is_added(plugin_calls):
    builder, network = new_network()
    data = add_input(network, "data", np.int32, (4, 3))
    indices = add_input(network, "indices", np.int32, (6, 1))
    updates = add_input(network, "updates", np.int32, (6, 3))
    with pytest.raises(ScatterInputError, match=r"^scatter_nd_reduce: 'impl' 'native' has no TensorRT layer \(IScatterLayer has no reduction, 'add' included\): .* \(got 'native'\)$"):
        add_scatter_nd_reduce(network, data, indices, updates, impl="native")
    add_scatter_nd_reduce(network, data, indices, updates, reduction="min")
    assert plugin_calls == [("ScatterNDReduce", [data, indices, updates], {"reduction": "min", "include_self": 1})]
    with pytest.raises(ScatterInputError, match="scatter_nd_reduce: 'reduction' must be one of"):
        add_scatter_nd_reduce(network, data, indices, updates, reduction="sum")


def test_lower_raises_the_models_opset_to_what_the_reductions_need():
    """A model at opset 17 with a ScatterNDReduce node: the lowered model imports opset 18 (ScatterND's max) and computes
    the reference's values in onnxruntime."""
    from trt_scatter.onnx_models import scatter_nd_reduce_model
    from trt_scatter.passes.lower import lower
    from trt_scatter.reference import Reference

    model = scatter_nd_reduce_model(("n", 3), ("e", 1), "max", 0)
    for opset in model.opset_import:
        if opset.domain == "":
            opset.version = 17
    lowered = lower(model)
    assert {o.domain: o.version for o in lowered.opset_import} == {"": 18}
    assert "ScatterNDReduce" not in {node.op_type for node in lowered.graph.node}
    rng = np.random.default_rng(0)
    feeds = {"data": rng.standard_normal((4, 3)).astype(np.float32), "indices": rng.integers(-4, 4, (9, 1)),
             "updates": rng.standard_normal((9, 3)).astype(np.float32)}
    assert_same(run_onnx(lowered, feeds), Reference(model).run(feeds)["output"])
