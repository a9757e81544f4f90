"""``trt_scatter.passes.rewrite`` and ``trt-scatter rewrite``: PyTorch's scatter patterns -> plugin nodes.

Every rewritten model is run by ``trt_scatter.reference`` (the oracle for the plugin nodes) against
the original in onnxruntime, and against eager PyTorch's outputs saved with the fixtures. No torch needed.
"""

import collections
import json
import os
import pathlib
import subprocess
import sys
import stat

import hypothesis.strategies as st

import numpy as np
import onnx
import onnxruntime
import pytest
from hypothesis import given
from onnx import TensorProto, helper, numpy_helper

from trt_scatter.cli import main
from trt_scatter.passes.lower import lower
from trt_scatter.passes.rewrite import INT64_MAX, NO_INDEX, RewriteToTrtScatter, extremes_from_zero, rewrite
from trt_scatter.reference import Reference

FIXTURES = pathlib.Path(__file__).resolve().parent / "fixtures" / "torch_exports"
MANIFEST = json.loads((FIXTURES / "manifest.json").read_text())
EXPORTS = sorted(stem for stem, info in MANIFEST["exports"].items() if "error" not in info)
SCATTER_OPS = ("ScatterND", "ScatterElements", "Transpose")

# What the rewrite must leave in PyTorch's own exports, and why:
# - the dynamo exporter's select_scatter with dynamic dims writes updates whose batch dimension has
#   its own symbol: nothing proves that they span data's batch;
# - with dynamic dims, the dynamo exporter broadcasts a per-row write's batch index against its positions to a
#   length only the run time knows, the positions' dimension a symbol of its own (longer than the batch, it would
#   write several positions of one row): nothing proves that it stays in its row (the exporters of trt_scatter.torch
#   write those as one node instead); the TorchScript exporter's positions share the batch's symbol, which proves it.
LEFT = {
    **{f"kv_rows_{form}.dynamo.dynamic": {"ScatterND": 1, "Transpose": 2} for form in ("bhsd", "index_put")},
    "kv_rows_bshd.dynamo.dynamic": {"ScatterND": 1},
    "select_scatter.dynamo.dynamic": {"ScatterElements": 1},
}


def _plugins(model):
    return [node for node in model.graph.node if node.domain == "trt_scatter"]


def _left(model):
    return dict(collections.Counter(node.op_type for node in model.graph.node if node.op_type in SCATTER_OPS))


def test_fixtures_cover_every_export():
    assert len(MANIFEST["writes"]) >= 12 and len(EXPORTS) >= 50  # a dozen modules, both exporters, static and dynamic


@pytest.mark.parametrize("stem", EXPORTS)
def test_rewrites_pytorch_exports_to_the_same_values(stem):
    case = stem.split(".")[0]
    original = onnx.load(FIXTURES / f"{stem}.onnx")
    model, report = rewrite(original)
    onnx.checker.check_model(model, full_check=True)
    assert _left(model) == LEFT.get(stem, {}), "\n".join(report.lines())
    if stem not in LEFT:
        assert len(_plugins(model)) == MANIFEST["writes"][case]
        assert (report.rewritten or not _left(original)) and not report.left  # a stock export may have no scatter (a Where)
    assert len(report.left) == sum(LEFT.get(stem, {}).values()) - LEFT.get(stem, {}).get("Transpose", 0)
    arrays = np.load(FIXTURES / f"{case}.npz")
    names = [graph_input.name for graph_input in original.graph.input if graph_input.name not in {i.name for i in original.graph.initializer}]
    session = onnxruntime.InferenceSession(original.SerializeToString())
    compared = 0
    for which, stock_equals_eager in MANIFEST["exports"][stem]["eager_equal"].items():
        if stock_equals_eager not in (True, False):
            continue  # the stock export itself fails to run in onnxruntime (recorded in the manifest)
        feeds = {name: arrays[f"{which}/{name}"] for name in names}
        rewritten = Reference(model).run(feeds)["output"]
        np.testing.assert_array_equal(rewritten, session.run(["output"], feeds)[0])
        if stock_equals_eager:
            np.testing.assert_array_equal(rewritten, arrays[f"{which}/output"])
        compared += 1
    assert compared or stem.startswith("index_put_columns.torchscript")


@pytest.mark.parametrize("stem", [stem for stem in EXPORTS if stem.endswith(".dynamic") and True in MANIFEST["exports"][stem]["eager_equal"].values()])
def test_the_data_loader_draws_inputs_every_rewritten_dynamic_export_runs_on(stem):
    """``trt-scatter check`` on a rewritten export, without shapes: the loader's inputs run (a strided or open slice
    assignment's value reaches the write through an Expand to a length computed from data's dims) and the rewritten
    model computes on them what onnxruntime computes with PyTorch's own export."""
    from trt_scatter.inputs import ScatterDataLoader

    original = onnx.load(FIXTURES / f"{stem}.onnx")
    model, _ = rewrite(original)
    feeds = ScatterDataLoader(model)[0]
    session = onnxruntime.InferenceSession(original.SerializeToString())
    np.testing.assert_array_equal(Reference(model).run(feeds)["output"], session.run(["output"], feeds)[0])


def test_the_original_model_is_not_changed():
    original = onnx.load(FIXTURES / "assign_middle.dynamo.static.onnx")
    before = original.SerializeToString()
    rewrite(original)
    assert original.SerializeToString() == before


def _row_mask_spread():
    """``mask_full``: the row mask ``mask`` (6,) spread over x's rows, as PyTorch's TorchScript translation writes it."""
    return [helper.make_node("Unsqueeze", ["mask", "one"], ["mask_column"]), helper.make_node("Shape", ["x"], ["shape"]),
            helper.make_node("Expand", ["mask_column", "shape"], ["mask_full"])]


def _stock_masked_scatter(values):
    """The rest of PyTorch's TorchScript translation of a masked write: ``values`` flattened, their first ``count`` elements
    written into x at ``NonZero(mask_full)`` (count: the number of its True elements)."""
    return [
        helper.make_node("NonZero", ["mask_full"], ["nonzero"]),
        helper.make_node("Transpose", ["nonzero"], ["indices"], perm=[1, 0]),
        helper.make_node("Reshape", [values, "flat"], ["values_flat"]),
        helper.make_node("Shape", ["indices"], ["indices_shape"]),
        helper.make_node("Gather", ["indices_shape", "zero_scalar"], ["count"], axis=0),
        helper.make_node("Unsqueeze", ["count", "zero"], ["count_1d"]),
        helper.make_node("Slice", ["values_flat", "zero", "count_1d", "zero"], ["updates"]),
        helper.make_node("ScatterND", ["x", "indices", "updates"], ["output"]),
    ]


def _gathered_rows(source="x"):
    """``rows``, the coordinates of mask's True elements, and ``f0``, ``source``'s masked rows (``x[mask]``)."""
    return [helper.make_node("NonZero", ["mask"], ["rows_nonzero"]), helper.make_node("Transpose", ["rows_nonzero"], ["rows"], perm=[1, 0]),
            helper.make_node("GatherND", [source, "rows"], ["f0"])]


def _stock_row_mask_model(values_shape, element_type=TensorProto.FLOAT):
    """PyTorch's TorchScript translation of ``x[mask] = v`` (x (6, 5), mask (6,)): the mask expanded to x's shape,
    NonZero, and v's elements one per masked element (``Slice(Reshape(v, [-1]), 0, count)``)."""
    nodes = _row_mask_spread() + _stock_masked_scatter("v")
    inputs = [("x", element_type, [6, 5]), ("mask", TensorProto.BOOL, [6]), ("v", element_type, list(values_shape))]
    return _model(nodes, inputs, [("output", element_type, [6, 5])], {"one": [1], "zero": [0], "flat": [-1], "zero_scalar": 0})


@pytest.mark.parametrize("values_shape", [(5,), (1, 5)])
def test_a_row_assigned_through_a_row_mask_is_written_in_every_masked_row(values_shape):
    """The stock form is right while one row is masked and fails with more (too few values); the rewrite's Where gives
    the same where the original runs, and eager PyTorch's values (v in every masked row) where it fails."""
    original = _stock_row_mask_model(values_shape)
    model, report = rewrite(original)
    assert [change.detail for change in report.rewritten] == ["a row in every masked row"] and "NonZero" not in {n.op_type for n in model.graph.node}
    rng = np.random.default_rng(0)
    x, v = rng.standard_normal((6, 5)).astype(np.float32), rng.standard_normal(values_shape).astype(np.float32)
    session = onnxruntime.InferenceSession(original.SerializeToString())
    for rows in ([], [3], [0, 2, 5], list(range(6))):
        mask = np.isin(np.arange(6), rows)
        expected = x.copy()
        expected[mask] = v
        written = Reference(model).run({"x": x, "mask": mask, "v": v})["output"]
        np.testing.assert_array_equal(written, expected)
        if len(rows) <= 1:
            np.testing.assert_array_equal(written, session.run(["output"], {"x": x, "mask": mask, "v": v})[0])


def test_values_one_per_masked_element_are_still_taken_in_order():
    """Values of another shape than a row (here 10 of them, two rows' worth) are a source taken in order."""
    model, report = rewrite(_stock_row_mask_model((10,)))
    assert [change.detail for change in report.rewritten] == ["values in order"]
    x, v, mask = np.zeros((6, 5), np.float32), np.arange(10, dtype=np.float32), np.isin(np.arange(6), [1, 4])
    expected = x.copy()
    expected[mask] = v.reshape(2, 5)
    np.testing.assert_array_equal(Reference(model).run({"x": x, "mask": mask, "v": v})["output"], expected)


def test_values_in_order_at_opset_11_use_only_what_opset_11_has():
    """The TorchScript exporter at opset 11 (Unsqueeze's axes an attribute): the rewrite's nodes must be opset 11's too
    (a Max of int64, opset 12's, made a model onnxruntime and ONNX's checker refuse)."""
    model = _stock_row_mask_model((10,))
    constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Unsqueeze":
            node.attribute.append(helper.make_attribute("axes", constants[node.input[1]].tolist()))
            del node.input[1]
    model.opset_import[0].version = 11
    rewritten, report = rewrite(model)
    assert [change.detail for change in report.rewritten] == ["values in order"]
    onnx.checker.check_model(rewritten, full_check=True)
    x, v, mask = np.zeros((6, 5), np.float32), np.arange(10, dtype=np.float32), np.isin(np.arange(6), [1, 4])
    expected = x.copy()
    expected[mask] = v.reshape(2, 5)
    np.testing.assert_array_equal(onnxruntime.InferenceSession(rewritten.SerializeToString()).run(["output"], {"x": x, "mask": mask, "v": v})[0], expected)


@pytest.mark.parametrize("element_type", [TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.BFLOAT16, TensorProto.INT8])
def test_values_in_order_from_a_source_that_is_empty_when_nothing_is_masked(element_type):
    """The values taken in order come from a source that may have no rows when no element is masked (``x[mask] =
    f(x[mask])``): the gather reads a row of zeros then, never past the source's end, and the Where leaves x as it was."""
    original = _stock_row_mask_model(("k",), element_type)
    model, report = rewrite(original)
    assert [change.detail for change in report.rewritten] == ["values in order"]
    onnx.checker.check_model(model, full_check=True)
    dtype = helper.tensor_dtype_to_np_dtype(element_type)
    x = (np.arange(30) - 7).reshape(6, 5).astype(dtype)
    for rows in ([], [1, 4], list(range(6))):
        mask, v = np.isin(np.arange(6), rows), (np.arange(5 * len(rows)) + 3).astype(dtype)
        expected = x.copy()
        expected[mask] = v.reshape(len(rows), 5)
        written = Reference(model).run({"x": x, "mask": mask, "v": v})["output"]
        assert written.dtype == dtype and np.array_equal(written.astype(np.float64), expected.astype(np.float64)), rows
        if element_type in (TensorProto.FLOAT, TensorProto.FLOAT16):
            session = onnxruntime.InferenceSession(model.SerializeToString())
            np.testing.assert_array_equal(session.run(["output"], {"x": x, "mask": mask, "v": v})[0], expected)


def _masked_update_model(chain, w_shape):
    """PyTorch's TorchScript translation of ``x[mask] = F(x[mask], w)`` (x (6, 5), mask (6,)): ``F`` the ``chain`` of binary
    ops applied to the gathered rows, each with ``w`` as its second input."""
    nodes = [*_gathered_rows(), *[helper.make_node(op, [f"f{i}", "w"], [f"f{i + 1}"]) for i, op in enumerate(chain)],
             *_row_mask_spread(), *_stock_masked_scatter(f"f{len(chain)}")]
    inputs = [("x", FLOAT, [6, 5]), ("mask", TensorProto.BOOL, [6]), ("w", FLOAT, list(w_shape))]
    return _model(nodes, inputs, [("output", FLOAT, [6, 5])], {"one": [1], "zero": [0], "flat": [-1], "zero_scalar": 0})


@pytest.mark.parametrize("chain, w_shape, detail", [
    (["Add"], (5,), "values computed from the masked elements"), (["Mul", "Sub"] * 3, (1, 5), "values computed from the masked elements"),
    (["Add"], (), "values computed from the masked elements"),
    (["Add"], ("k", 5), "values in order"),  # w a row per masked row: varies along the masked elements
    (["Add", "Mul"] * 40, (5,), "values in order")],  # longer than the rewrite follows
    ids=["a-row", "a-chain", "a-scalar", "a-row-per-masked-row", "a-chain-too-long"])
def test_values_computed_from_the_masked_elements_leave_no_nonzero(chain, w_shape, detail):
    """``x[mask] = F(x[mask], w)`` with F elementwise and w the same for every masked row is ``Where(mask, F(x, w), x)``:
    no NonZero is left. Where w varies along the masked rows (or F is too long to follow) the values are taken in order,
    through the NonZero. Every form computes what onnxruntime computes of the original, with no row, some and all masked."""
    original = _masked_update_model(chain, w_shape)
    model, report = rewrite(original)
    assert [change.detail for change in report.rewritten] == [detail]
    assert ("NonZero" in {node.op_type for node in model.graph.node}) == (detail == "values in order")
    session = onnxruntime.InferenceSession(original.SerializeToString())
    x = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32)
    for rows in ([], [1, 4], list(range(6))):
        mask = np.isin(np.arange(6), rows)
        w = np.asarray(np.random.default_rng(1).standard_normal([len(rows) if d == "k" else d for d in w_shape]) / 2 + 1, np.float32)
        feeds = {"x": x, "mask": mask, "w": w}
        np.testing.assert_allclose(Reference(model).run(feeds)["output"], session.run(["output"], feeds)[0], rtol=1e-6)


def test_a_mask_broadcast_over_leading_axes_is_not_the_row_mask_its_values_were_gathered_with():
    """ScatterND through ``Expand(m, [5, 5])`` (m of 5 broadcast on the left: a mask of columns) with values gathered
    through ``NonZero(m)`` (rows): valid ONNX, whose elements take the gathered values in order. They are not the
    columns' own F: the values are taken in order, and the result is onnxruntime's."""
    nodes = [*_gathered_rows(), helper.make_node("Add", ["f0", "w"], ["f"]), helper.make_node("Shape", ["x"], ["shape"]),
             helper.make_node("Expand", ["mask", "shape"], ["mask_full"]), *_stock_masked_scatter("f")]
    inputs = [("x", FLOAT, [5, 5]), ("mask", TensorProto.BOOL, [5]), ("w", FLOAT, [5])]
    original = _model(nodes, inputs, [("output", FLOAT, [5, 5])], {"flat": [-1], "zero": [0], "zero_scalar": 0})
    model, report = rewrite(original)
    assert [change.detail for change in report.rewritten] == ["values in order"]
    session = onnxruntime.InferenceSession(original.SerializeToString())
    x, w = np.arange(25, dtype=np.float32).reshape(5, 5), np.arange(5, dtype=np.float32) * 100
    for mask in (np.isin(np.arange(5), [1, 3]), np.ones(5, bool), np.zeros(5, bool)):
        feeds = {"x": x, "mask": mask, "w": w}
        np.testing.assert_array_equal(Reference(model).run(feeds)["output"], session.run(["output"], feeds)[0])


@pytest.mark.parametrize("reduction, done", [("add", "added to data"), ("mul", "multiplied into data")])
def test_a_masked_scatter_nd_with_a_reduction_is_a_where_that_combines(reduction, done):
    """``index_put((mask,), v, accumulate=True)`` as the dynamo exporter writes it: ScatterND(x, NonZero(mask), v
    expanded, reduction=add). NonZero names each masked element once, so it is ``Where(mask, x + v, x)``: no NonZero."""
    nodes = [
        helper.make_node("NonZero", ["mask"], ["nonzero"]),
        helper.make_node("Transpose", ["nonzero"], ["indices"], perm=[1, 0]),
        helper.make_node("Shape", ["indices"], ["indices_shape"]),
        helper.make_node("Slice", ["indices_shape", "zero", "one"], ["count"]),
        helper.make_node("Expand", ["v", "count"], ["updates"]),
        helper.make_node("ScatterND", ["x", "indices", "updates"], ["output"], reduction=reduction),
    ]
    inputs = [("x", FLOAT, [6, 5]), ("mask", TensorProto.BOOL, [6, 5]), ("v", FLOAT, [])]
    original = _model(nodes, inputs, [("output", FLOAT, [6, 5])], {"one": [1], "zero": [0]})
    model, report = rewrite(original)
    assert [change.detail for change in report.rewritten] == [f"values broadcast, {done}"]
    assert not {"NonZero", "ScatterND"} & {node.op_type for node in model.graph.node} and not _plugins(model)
    session = onnxruntime.InferenceSession(original.SerializeToString())
    x, v = np.random.default_rng(0).standard_normal((6, 5)).astype(np.float32), np.array(1.5, np.float32)
    for mask in (np.zeros((6, 5), bool), np.random.default_rng(1).random((6, 5)) < 0.5, np.ones((6, 5), bool)):
        feeds = {"x": x, "mask": mask, "v": v}
        np.testing.assert_array_equal(Reference(model).run(feeds)["output"], session.run(["output"], feeds)[0])


# ---- models it must leave alone ------------------------------------------------------------------


FLOAT, INT64 = TensorProto.FLOAT, TensorProto.INT64


def _model(nodes, inputs, outputs, initializers=(), value_info=(), opsets=None):
    """A model from ``(name, element type, shape)`` inputs and outputs and ``name -> values`` int64 initializers."""
    graph = helper.make_graph(
        nodes, "g", [helper.make_tensor_value_info(*spec) for spec in inputs], [helper.make_tensor_value_info(*spec) for spec in outputs],
        initializer=[numpy_helper.from_array(np.asarray(values, np.int64), name) for name, values in dict(initializers).items()], value_info=list(value_info))
    return helper.make_model(graph, opset_imports=[helper.make_opsetid(domain, version) for domain, version in (opsets or {"": 18}).items()])


def _range_slice_model(size, step, dynamic, axes_input=False, step_input=False, positions=(), shape_start=None):
    """The dynamo exporter's slice_scatter: ScatterND(data, Unsqueeze(Slice(Range(0, dim), start, stop, 0, step), -1), updates),
    start and stop given at run time (the Slice's axes and step too, where asked); ``positions`` varies what is sliced:
    ``from_one`` Range(1, dim), ``given`` a graph input, ``squeezed`` Range(0, Squeeze(Shape(data, start=0, end=1)))
    (``shape_start=-1``: Shape(data, start=-1), of dimension 1 instead), ``of_updates`` Range(0, updates' dimension 0)."""
    shape_attributes = {"start": shape_start} if shape_start is not None else {"start": 0, "end": 1} if "squeezed" in positions else {}
    nodes = [
        helper.make_node("Shape", ["updates" if "of_updates" in positions else "data"], ["shape"], **shape_attributes),
        helper.make_node("Squeeze", ["shape"], ["dim"]) if "squeezed" in positions else helper.make_node("Gather", ["shape", "zero"], ["dim"], axis=0),
        helper.make_node("Range", ["one" if "from_one" in positions else "zero", "dim", "one"], ["range"]),
        helper.make_node("Slice", ["given" if "given" in positions else "range", "start", "stop", "axis0", "step"], ["positions"]),
        helper.make_node("Unsqueeze", ["positions", "minus_one"], ["coordinates"]),
        helper.make_node("ScatterND", ["data", "coordinates", "updates"], ["output"]),
    ]
    constants = {"zero": 0, "one": 1, "axis0": [0], "step": [step], "minus_one": [-1]}
    dims = ["n", 3] if dynamic else [size, 3]
    inputs = [("data", FLOAT, dims), ("updates", FLOAT, ["k", 3]), ("start", INT64, [1]), ("stop", INT64, [1])] + ([("given", INT64, [size])] if "given" in positions else [])
    for name, as_input in (("axis0", axes_input), ("step", step_input)):
        if as_input:
            inputs.append((name, INT64, [1]))
            del constants[name]
    return _model(nodes, inputs, [("output", FLOAT, dims)], constants)


def _scatter_model(op, indices, data_shape=(4, 5), updates_shape=None, indices_input=False, **attributes):
    indices = np.asarray(indices, np.int64)
    updates_shape = updates_shape or (indices.shape if op == "ScatterElements" else indices.shape[:-1] + tuple(data_shape[indices.shape[-1]:]))
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, data_shape), helper.make_tensor_value_info("updates", TensorProto.FLOAT, updates_shape)]
    initializers = []
    if indices_input:
        inputs.append(helper.make_tensor_value_info("indices", TensorProto.INT64, indices.shape))
    else:
        initializers.append(numpy_helper.from_array(indices, "indices"))
    node = helper.make_node(op, ["data", "indices", "updates"], ["output"], **attributes)
    graph = helper.make_graph([node], "g", inputs, [helper.make_tensor_value_info("output", TensorProto.FLOAT, data_shape)], initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize(
    "model, reason",
    [
        (_scatter_model("ScatterND", [[0, 1], [2, 3]]), "single points"),
        (_scatter_model("ScatterND", [[1], [1]]), "repeated constant indices"),
        (_scatter_model("ScatterND", [[4], [1]]), "out of range for a dimension of 4"),
        (_scatter_model("ScatterND", [[[0, 1]], [[2, 3]]], indices_input=True), "known only at run time"),
        (_scatter_model("ScatterElements", [[0, 1, 2, 3, 0], [1, 2, 3, 0, 1]], axis=0), "vary along other axes"),
        (_scatter_model("ScatterElements", [[0, 1, 2, 3]], updates_shape=(1, 4), axis=0), "do not span data's other axes"),
        (_scatter_model("ScatterElements", [[1] * 5, [2] * 5], updates_shape=("k", 5), axis=0), "updates of unknown size there"),
        (_scatter_model("ScatterND", [[1], [2]], indices_input=True), "indices known only at run time that are not a slice range"),
        (_model([helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"])], [("data", FLOAT, None), ("updates", FLOAT, [1, 5])],
                [("output", FLOAT, None)], {"indices": [[1] * 5]}), "data or updates of unknown rank"),
        (_scatter_model("ScatterND", [2]), "constant indices of rank < 2"),
        (_scatter_model("ScatterND", [[[0, 1], [2, 3]], [[1, 0], [3, 3]]]), "single points"),  # as many coordinates as axes, not a grid
        (_scatter_model("ScatterND", [[[0, 1], [0, 2]], [[2, 1], [2, 2]], [[3, 1], [3, 2]]]), "slice some axes and list others"),
        (_scatter_model("ScatterND", np.zeros((0, 1), np.int64)), "no index (the node writes nothing)"),
        (_scatter_model("ScatterND", np.zeros((0, 2), np.int64), updates_shape=(0,)), "no index (the node writes nothing)"),
        (_scatter_model("ScatterND", np.zeros((2, 0), np.int64), updates_shape=(2, 4, 5)), "index rows of no coordinate (each writes all of data)"),
        (_scatter_model("ScatterND", [[-1], [0]], data_shape=("n", 5)), "negative and non-negative constant indices into a dimension of unknown size"),
        (_scatter_model("ScatterND", [[-1], [-3], [-2]], data_shape=("n", 5)), "negative constant indices into a dimension of unknown size"),
        (_model([helper.make_node("Transpose", ["data"], ["data_t"], perm=[1, 0]), helper.make_node("Unsqueeze", ["indices", "minus_one"], ["coordinates"]),
                 helper.make_node("ScatterND", ["data_t", "coordinates", "updates_t"], ["written_t"]), helper.make_node("Transpose", ["written_t"], ["output"], perm=[1, 0])],
                [("data", FLOAT, [3, 5]), ("indices", INT64, [2, 2]), ("updates_t", FLOAT, [2, 2, 3])], [("output", FLOAT, [3, 5])], {"minus_one": [-1]}),
         "an index list of rank > 1 under a Transpose"),
        *[(_model([helper.make_node("Foo", ["i"], ["listed"], domain="custom"), helper.make_node("Unsqueeze", ["listed", "minus_one"], ["coordinates"]),
                   helper.make_node("ScatterND", ["data", "coordinates", "updates"], ["output"])],
                  [("data", FLOAT, [4, 5]), ("i", INT64, [2]), ("updates", FLOAT, [2, 5])], [("output", FLOAT, [4, 5])], {"minus_one": [-1]},
                  value_info=[helper.make_tensor_value_info("listed", element_type, [2]), helper.make_tensor_value_info("coordinates", INT64, [2, 1])],
                  opsets={"": 18, "custom": 1}),
           "indices of a type that is not a signed integer") for element_type in (FLOAT, TensorProto.UNDEFINED)],  # declared float; or not known
        (_range_slice_model(5, 1, True, axes_input=True), "a slice range whose Slice axes are not constant"),
        (_range_slice_model(5, -1, True), "a slice range with a step that is not a positive constant"),
        (_range_slice_model(5, 1, True, step_input=True), "a slice range with a step that is not a positive constant"),
        (_model([helper.make_node("Reshape", ["six", "four"], ["listed"]), helper.make_node("ScatterND", ["data", "listed", "updates"], ["output"])],
                [("data", FLOAT, [4, 5]), ("updates", FLOAT, [4, 5])], [("output", FLOAT, [4, 5])], {"six": np.arange(6), "four": [4, 1]}),
         "indices known only at run time"),  # a constant the reference evaluator cannot fold (6 elements into 4) is not guessed at
    ],
)
def test_leaves_what_is_not_a_slice_or_an_index_list(model, reason):
    rewritten, report = rewrite(model)
    assert rewritten.SerializeToString() == model.SerializeToString()
    assert not report.rewritten and len(report.left) == 1
    assert reason in report.left[0].detail
    assert report.left[0].detail in "\n".join(report.lines())


@pytest.mark.parametrize("model, pattern, result, detail", [
    (_scatter_model("ScatterND", [[1], [2], [1]], reduction="add"), "ScatterND", "ScatterNDReduce", "reduction add"),
    (_scatter_model("ScatterND", [[1, 0], [1, 0]], reduction="mul"), "ScatterND", "ScatterNDReduce", "reduction mul"),
    (_scatter_model("ScatterElements", [[1] * 5, [1] * 5], updates_shape=(2, 5), axis=0, reduction="max"), "ScatterElements",
     "ScatterElementsReduce", "reduction max, axis 0"),  # a constant index: not an Expand, each element its own row
    (_scatter_model("ScatterElements", [[3, 0, 3, 1]], updates_shape=(1, 4), axis=-1, reduction="min", indices_input=True),
     "ScatterElements", "ScatterElementsReduce", "reduction min, axis 1"),
])
def test_reductions_become_the_reduction_ops_and_compute_the_same(model, pattern, result, detail):
    rng = np.random.default_rng(0)
    feeds = {value.name: rng.standard_normal([d.dim_value for d in value.type.tensor_type.shape.dim]).astype(np.float32)
             for value in model.graph.input if value.name != "indices"}
    if any(value.name == "indices" for value in model.graph.input):
        feeds["indices"] = np.array([[3, 0, 3, 1]])
    rewritten, report = _run_both(model, feeds)
    assert [(c.pattern, c.result, c.detail) for c in report.rewritten] == [(pattern, result, detail)] and not report.left
    node = next(node for node in rewritten.graph.node if node.op_type == result)
    assert {a.name: helper.get_attribute_value(a) for a in node.attribute}["include_self"] == 1


def test_an_index_broadcast_over_the_other_axes_becomes_rows():
    """PyTorch's scatter_add(0, index.view(-1, 1).expand_as(src), src), as its exporters write it: ScatterNDReduce of rows."""
    nodes = [helper.make_node("Unsqueeze", ["index", "minus_one"], ["column"]), helper.make_node("Shape", ["src"], ["src_shape"]),
             helper.make_node("Expand", ["column", "src_shape"], ["expanded"]),
             helper.make_node("ScatterElements", ["data", "expanded", "src"], ["output"], axis=0, reduction="add")]
    model = _model(nodes, [("data", FLOAT, ["n", 3]), ("index", INT64, ["e"]), ("src", FLOAT, ["e", 3])], [("output", FLOAT, ["n", 3])],
                   {"minus_one": [-1]})
    feeds = {"data": np.zeros((4, 3), np.float32), "index": np.array([3, 0, 3, 3, 1]), "src": np.arange(15, dtype=np.float32).reshape(5, 3)}
    rewritten, report = _run_both(model, feeds)
    assert [(c.result, c.detail) for c in report.rewritten] == [("ScatterNDReduce", "reduction add, rows of an index list broadcast over the other axes")]
    assert [n.op_type for n in rewritten.graph.node] == ["Unsqueeze", "ScatterNDReduce"]


def test_leaves_a_scatter_that_computes_a_shape():
    shape = numpy_helper.from_array(np.array([1, 1], np.int64), "ones")
    nodes = [
        helper.make_node("ScatterElements", ["ones", "position", "size"], ["target"], axis=0),
        helper.make_node("Reshape", ["x", "target"], ["output"]),
    ]
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [6]), helper.make_tensor_value_info("size", TensorProto.INT64, [1])]
    position = numpy_helper.from_array(np.array([0], np.int64), "position")
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("output", TensorProto.FLOAT, None)], initializer=[shape, position])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rewritten, report = rewrite(model)
    assert [n.op_type for n in rewritten.graph.node] == ["ScatterElements", "Reshape"]
    assert "computes a shape" in report.left[0].detail


@pytest.mark.parametrize("columns", [4, 8])
def test_an_expanded_index_list_narrower_than_the_updates_is_left(columns):
    """x.scatter(0, idx[:, None].expand(-1, 4), src) with src 8 columns wide, as the TorchScript exporter writes it:
    ONNX refuses updates of another shape than the indices, and the rewrite made a ScatterUpdate that ran and wrote all 8
    columns where PyTorch writes 4. With src 4 columns wide (data too), it is one ScatterUpdate."""
    nodes = [helper.make_node("Unsqueeze", ["idx", "one"], ["column"]), helper.make_node("Expand", ["column", "shape"], ["indices"]),
             helper.make_node("ScatterElements", ["x", "indices", "src"], ["out"], axis=0, name="write")]
    model = _model(nodes, [("x", FLOAT, [6, columns]), ("idx", TensorProto.INT64, [2]), ("src", FLOAT, [2, 8 if columns == 8 else 4])],
                   [("out", FLOAT, [6, columns])], {"one": [1], "shape": [1, 4]})
    rewritten, report = rewrite(model)
    if columns == 8:
        assert rewritten.SerializeToString() == model.SerializeToString()
        assert list(report.lines()) == ["left       write: ScatterElements: updates of another shape than the indices "
                                        "(which ONNX refuses; a slice write would run)"]
        constant = _model(nodes[2:], [("x", FLOAT, [6, 8]), ("src", FLOAT, [2, 8])], [("out", FLOAT, [6, 8])], {"indices": [[4] * 4, [1] * 4]})
        assert list(rewrite(constant)[1].lines()) == list(report.lines())  # the indices a constant of that shape
        # the TorchScript exporter's shape, [-1, 4] with its -1 made 1 by a Where: shape inference leaves the width unsized
        computed = [helper.make_node("ConstantOfShape", ["two"], ["ones"], value=numpy_helper.from_array(np.ones(1, np.int64))),
                    helper.make_node("Mul", ["ones", "minus_one"], ["minus_ones"]), helper.make_node("Equal", ["asked", "minus_ones"], ["kept"]),
                    helper.make_node("Where", ["kept", "ones", "asked"], ["shape"])]
        exported = _model(computed + nodes, [("x", FLOAT, [6, 8]), ("idx", TensorProto.INT64, [2]), ("src", FLOAT, [2, 8])],
                          [("out", FLOAT, [6, 8])], {"one": [1], "two": [2], "minus_one": -1, "asked": [-1, 4]})
        assert list(rewrite(exported)[1].lines()) == list(report.lines())
        # a 1 in the Expand's shape keeps the input's size: a 2-D index (3, 2) expanded by [1, 1, 4] is (3, 2, 4), as the
        # updates are, and is left for what it is (not an index list), not for a shape it does not have
        matching = _model([helper.make_node("Unsqueeze", ["idx", "last"], ["column"]), nodes[1],
                           helper.make_node("ScatterElements", ["x", "indices", "src"], ["out"], axis=1, name="write")],
                          [("x", FLOAT, [3, 5, 4]), ("idx", TensorProto.INT64, [3, 2]), ("src", FLOAT, [3, 2, 4])], [("out", FLOAT, [3, 5, 4])],
                          {"last": [-1], "shape": [1, 1, 4]})
        assert "updates of another shape" not in "\n".join(rewrite(matching)[1].lines())
    else:
        assert [n.op_type for n in rewritten.graph.node if n.domain == "trt_scatter"] == ["ScatterUpdate"], list(report.lines())
        feeds = {"x": np.zeros((6, 4), np.float32), "idx": np.array([4, 1]), "src": np.ones((2, 4), np.float32)}
        np.testing.assert_array_equal(Reference(rewritten).run(feeds)["out"], Reference(model).run(feeds)["out"])


def test_a_scatter_in_an_if_branch_is_said_to_be_left():
    """torch.cond exports put a write in an If branch: rewrite works on the main graph, and its report says so (it said
    there was no scatter pattern in the model)."""
    write = helper.make_node("ScatterND", ["data", "indices", "updates"], ["written"], name="write")
    branch = helper.make_graph([write], "then", [], [helper.make_tensor_value_info("written", TensorProto.FLOAT, [4, 5])])
    keep = helper.make_graph([helper.make_node("Identity", ["data"], ["kept"])], "else", [], [helper.make_tensor_value_info("kept", TensorProto.FLOAT, [4, 5])])
    model = _model([helper.make_node("If", ["flag"], ["output"], name="choose", then_branch=branch, else_branch=keep)],
                   [("data", FLOAT, [4, 5]), ("updates", FLOAT, [2, 5]), ("flag", TensorProto.BOOL, [])], [("output", FLOAT, [4, 5])], {"indices": [[1], [3]]})
    rewritten, report = rewrite(model)
    assert rewritten.SerializeToString() == model.SerializeToString()
    assert list(report.lines()) == ["left       ScatterND node 'write': ScatterND: lies in a subgraph of If node 'choose'; rewrite works on the main graph only"]


def _rank_guarded_scatter_reduce(data_shape, output_shape=None):
    """PyTorch's TorchScript export of ``x.scatter_reduce(0, i, y, "amax")``: its operands, and then its output, pass
    through ``If(Size(Shape(x)) == 0)`` (a 0-D input is reshaped to 1-D), so shape inference sees no rank past them."""
    def guard(names, outputs, then_node):
        types = {name: INT64 if name == "i" else FLOAT for name in names}
        then = helper.make_graph([then_node(name) for name in names], "then", [], [helper.make_tensor_value_info(f"{name}_then", types[name], None) for name in names])
        other = helper.make_graph([helper.make_node("Identity", [name], [f"{name}_else"]) for name in names], "else", [],
                                  [helper.make_tensor_value_info(f"{name}_else", types[name], None) for name in names])
        return helper.make_node("If", ["is_scalar"], outputs, then_branch=then, else_branch=other)

    flatten = lambda name: helper.make_node("Reshape", [name, "flat"], [f"{name}_then"])  # noqa: E731
    squeeze = lambda name: helper.make_node("Squeeze", [name, "zero_axis"], [f"{name}_then"])  # noqa: E731
    nodes = [helper.make_node("Shape", ["x"], ["x_shape"]), helper.make_node("Size", ["x_shape"], ["x_rank"]),
             helper.make_node("Equal", ["x_rank", "zero"], ["is_scalar"]), guard(["x", "i", "y"], ["x1", "i1", "y1"], flatten),
             helper.make_node("ScatterElements", ["x1", "i1", "y1"], ["written"], axis=0, reduction="max"), guard(["written"], ["output"], squeeze)]
    return _model(nodes, [("x", FLOAT, data_shape), ("i", INT64, [2, 3]), ("y", FLOAT, [2, 3])], [("output", FLOAT, output_shape)],
                  {"zero": 0, "flat": [-1], "zero_axis": [0]})


@pytest.mark.parametrize("data_shape, output_shape", [([4, 3], None), (["n", 3], None),
                                                      ([4, 3], [12])])  # PyTorch declares the output the then-branch's shape: dropped
def test_an_if_the_static_shapes_decide_is_the_branch_it_takes(data_shape, output_shape):
    model = _rank_guarded_scatter_reduce(data_shape, output_shape)
    feeds = {"x": RNG.standard_normal((4, 3), np.float32), "i": np.array([[0, 1, 2], [0, 3, 1]]), "y": RNG.standard_normal((2, 3), np.float32)}
    rewritten, report = _run_both(model, feeds)
    assert [n.op_type for n in rewritten.graph.node if n.op_type in ("If", "ScatterElementsReduce")] == ["ScatterElementsReduce"], list(report.lines())
    lowered = onnxruntime.InferenceSession(lower(rewritten).SerializeToString()).run(None, feeds)[0]  # the rank is known past the Ifs
    np.testing.assert_array_equal(lowered, _outputs(model, feeds)["output"])


def _decided_if(branch_nodes, branch_initializers=(), condition=(), inputs=(), then_output="taken"):
    """If(Size(Shape(x)) == 2) (x (2, 3): true) whose then-branch is ``branch_nodes``, beside a ScatterND that the rewrite
    rewrites (so that the model comes back rewritten, Ifs folded or not)."""
    then = helper.make_graph(list(branch_nodes), "then", [], [helper.make_tensor_value_info(then_output, INT64, None)], list(branch_initializers))
    other = helper.make_graph([helper.make_node("Constant", [], ["not_taken"], value=numpy_helper.from_array(np.array(222)))], "else", [],
                              [helper.make_tensor_value_info("not_taken", INT64, None)])
    nodes = [*(condition or [helper.make_node("Shape", ["x"], ["x_shape"]), helper.make_node("Size", ["x_shape"], ["x_rank"]),
                            helper.make_node("Equal", ["x_rank", "two"], ["decided"])]),
             helper.make_node("If", ["decided"], ["chosen"], then_branch=then, else_branch=other),
             helper.make_node("ScatterND", ["data", "rows", "updates"], ["written"])]
    return _model(nodes, [("x", FLOAT, [2, 3]), ("data", FLOAT, [4, 5]), ("updates", FLOAT, [2, 5]), *inputs], [("chosen", INT64, None), ("written", FLOAT, [4, 5])],
                  {"two": 2, "rows": [[1], [3]]})


def _with_default(model):
    """``model`` whose graph input ``flag`` has an initializer too: a default the caller may override (True)."""
    model.graph.initializer.append(numpy_helper.from_array(np.array(True), "flag"))
    return model


_FEEDS = {"x": np.zeros((2, 3), np.float32), "data": np.zeros((4, 5), np.float32), "updates": np.ones((2, 5), np.float32)}
_TAKEN = [helper.make_node("Constant", [], ["taken"], value=numpy_helper.from_array(np.array(111)))]


@pytest.mark.parametrize("model, feeds, ifs", [
    pytest.param(_decided_if(_TAKEN), _FEEDS, 0, id="decided"),
    pytest.param(_decided_if([helper.make_node("Identity", ["weights"], ["taken"])], [numpy_helper.from_array(np.array(7), "weights")]), _FEEDS, 0,
                 id="the-branch's-own-initializer-comes-along"),
    pytest.param(_decided_if(_TAKEN, condition=[helper.make_node("Shape", ["x"], ["x_shape"], start=1), helper.make_node("Size", ["x_shape"], ["x_rank"]),
                                                helper.make_node("Equal", ["x_rank", "two"], ["decided"])]), _FEEDS, 1,
                 id="size-of-a-shape-from-start-1-is-no-rank"),
    pytest.param(_decided_if(_TAKEN, condition=[helper.make_node("Identity", ["flag"], ["decided"])], inputs=[("flag", TensorProto.BOOL, [])]),
                 {**_FEEDS, "flag": np.array(False)}, 1, id="a-run-time-condition"),
    pytest.param(_with_default(_decided_if(_TAKEN, condition=[helper.make_node("Identity", ["flag"], ["decided"])], inputs=[("flag", TensorProto.BOOL, [])])),
                 _FEEDS, 1, id="an-initializer-the-caller-may-override"),
    pytest.param(_decided_if(_TAKEN, condition=[helper.make_node("Constant", [], ["first_axis"], value=numpy_helper.from_array(np.array(0))),
                                                helper.make_node("Shape", ["x"], ["x_shape"]), helper.make_node("Gather", ["x_shape", "first_axis"], ["leading"], axis=0),
                                                helper.make_node("Equal", ["leading", "two"], ["decided"])]), _FEEDS, 0, id="a-static-dimension"),
    pytest.param(_decided_if(_TAKEN, condition=[helper.make_node("Constant", [], ["first_axis"], value=numpy_helper.from_array(np.array(0))),
                                                helper.make_node("Shape", ["y"], ["y_shape"]), helper.make_node("Gather", ["y_shape", "first_axis"], ["leading"], axis=0),
                                                helper.make_node("Equal", ["leading", "two"], ["decided"])], inputs=[("y", FLOAT, ["n", 3])]),
                 {**_FEEDS, "y": np.zeros((2, 3), np.float32)}, 1, id="a-dynamic-dimension"),
])
def test_an_if_is_folded_only_where_the_static_shapes_decide_it(model, feeds, ifs):
    rewritten, report = _run_both(model, feeds)
    assert [n.op_type for n in rewritten.graph.node].count("If") == ifs, list(report.lines())


def test_ifs_whose_branches_reuse_a_name_are_left():
    """Sibling branches may define one name (ONNX scopes them); inlined, the two would clash."""
    branch = lambda value: [helper.make_node("Constant", [], ["taken"], value=numpy_helper.from_array(np.array(value)))]  # noqa: E731
    model = _decided_if(branch(1))
    second = helper.make_node("If", ["decided"], ["chosen_again"], then_branch=helper.make_graph(branch(3), "then2", [], [helper.make_tensor_value_info("taken", INT64, None)]),
                              else_branch=model.graph.node[3].attribute[1].g)
    model.graph.node.insert(4, second)
    model.graph.output.append(helper.make_tensor_value_info("chosen_again", INT64, None))
    rewritten, report = _run_both(model, _FEEDS)
    assert [n.op_type for n in rewritten.graph.node].count("If") == 2, list(report.lines())


def test_a_decided_if_in_a_model_without_scatters_is_left_too():
    model = _decided_if(_TAKEN)
    del model.graph.node[-1]
    del model.graph.output[-1]
    rewritten, report = rewrite(model)
    assert rewritten.SerializeToString() == model.SerializeToString() and list(report.lines()) == ["no scatter pattern in the model"]


def test_an_if_on_a_run_time_value_stays():
    model = _rank_guarded_scatter_reduce([4, 3])
    model.graph.node[2].input[1] = "limit"  # x's rank == an input: not decided by the model
    model.graph.input.append(helper.make_tensor_value_info("limit", INT64, []))
    rewritten, _ = rewrite(model)
    assert [n.op_type for n in rewritten.graph.node].count("If") == 2


def test_a_model_without_scatters_comes_back_as_it_was():
    node = helper.make_node("Relu", ["x"], ["y"])
    graph = helper.make_graph([node], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [2])], [helper.make_tensor_value_info("y", TensorProto.FLOAT, [2])])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rewritten, report = rewrite(model)
    assert [n.op_type for n in rewritten.graph.node] == ["Relu"]
    assert list(report.lines()) == ["no scatter pattern in the model"]
    assert all(o.domain != "trt_scatter" for o in rewritten.opset_import)


# ---- differential: random slices and index lists ------------------------------------------------


def _outputs(model, feeds):
    """Every output of ``model``: onnxruntime's for a standard model, the reference's (the oracle's) where plugin nodes are in it."""
    if _plugins(model):
        return Reference(model).run(feeds)
    session = onnxruntime.InferenceSession(model.SerializeToString())
    return dict(zip([o.name for o in model.graph.output], session.run(None, feeds)))


def _run_both(original, feeds):
    """Rewrites ``original``: a valid model whose every output (the reference's) equals the original's (:func:`_outputs`)."""
    rewritten, report = rewrite(original)
    onnx.checker.check_model(rewritten, full_check=True)
    expected, got = _outputs(original, feeds), Reference(rewritten).run(feeds)
    assert expected.keys() == got.keys()
    for name in expected:
        np.testing.assert_array_equal(got[name], expected[name])
    return rewritten, report


def test_an_index_input_an_initializer_fills_is_folded_and_no_input_of_the_rewritten_model():
    """Constant indices that the model also lists as an input (ONNX lets a run override them; TensorRT's ONNX parser takes
    them as constants): the rewrite writes their rows into the node, so the input goes (onnx-graphsurgeon, which writes the
    rewritten model, lists no constant among the inputs)."""
    model = _scatter_model("ScatterND", [[1], [2]])
    model.graph.input.append(helper.make_tensor_value_info("indices", TensorProto.INT64, [2, 1]))
    rng = np.random.default_rng(0)
    rewritten, report = _run_both(model, {"data": rng.standard_normal((4, 5), np.float32), "updates": rng.standard_normal((2, 5), np.float32)})
    assert [node.op_type for node in _plugins(rewritten)] == ["SliceScatter"] and not report.left
    assert [value.name for value in rewritten.graph.input] == ["data", "updates"]


@st.composite
def _slices(draw):
    """A data shape and a slice (start, stop, step) per sliced axis, each taking at least one element."""
    shape = draw(st.lists(st.integers(1, 5), min_size=1, max_size=4))
    sliced = draw(st.lists(st.booleans(), min_size=len(shape), max_size=len(shape)))
    slices = []
    for size, cut in zip(shape, sliced):
        if not cut:
            slices.append(slice(None))
            continue
        step = draw(st.sampled_from([1, 2, 3, -1, -2]))
        start, stop = draw(st.integers(-size - 2, size + 2)), draw(st.integers(-size - 2, size + 2))
        if not len(range(size)[slice(start, stop, step)]):
            start, stop = (0, size) if step > 0 else (size - 1, None)
        slices.append(slice(start, stop, step))
    return tuple(shape), tuple(slices)


@given(_slices(), st.integers(0, 2**31))
def test_full_coordinate_indices_become_one_slice_scatter(case, seed):
    """The TorchScript exporter's form: ScatterND with every coordinate of the slice (here from NumPy's own slicing)."""
    shape, slices = case
    coordinates = np.indices(shape)  # [rank, *shape]
    indices = np.stack([c[slices] for c in coordinates], axis=-1)
    rng = np.random.default_rng(seed)
    model = _scatter_model("ScatterND", indices, data_shape=shape)
    feeds = {"data": rng.standard_normal(shape, np.float32), "updates": rng.standard_normal(indices.shape[:-1], np.float32)}
    rewritten, report = _run_both(model, feeds)
    assert [n.op_type for n in rewritten.graph.node] in (["SliceScatter"], ["Identity"])  # Identity: every axis whole


@given(st.integers(1, 4), st.data(), st.integers(0, 2**31))
def test_an_index_list_along_one_axis_becomes_one_node(rank, data, seed):
    """ScatterElements (the dynamo exporter's select_scatter) and ScatterND under Transposes (its index_copy), constant indices."""
    shape = tuple(data.draw(st.lists(st.integers(1, 5), min_size=rank, max_size=rank)))
    axis = data.draw(st.integers(0, rank - 1))
    count = data.draw(st.integers(1, shape[axis]))
    listed = np.array(data.draw(st.permutations(range(shape[axis]))))[:count]
    listed = np.where(np.asarray(data.draw(st.lists(st.booleans(), min_size=count, max_size=count))), listed - shape[axis], listed)  # some negative
    rng = np.random.default_rng(seed)
    updates_shape = shape[:axis] + (count,) + shape[axis + 1 :]
    feeds = {"data": rng.standard_normal(shape, np.float32), "updates": rng.standard_normal(updates_shape, np.float32)}
    elements = np.broadcast_to(listed.reshape((1,) * axis + (count,) + (1,) * (rank - axis - 1)), updates_shape)
    rewritten, _ = _run_both(_scatter_model("ScatterElements", elements, data_shape=shape, axis=axis), feeds)
    assert [n.op_type for n in rewritten.graph.node] in (["ScatterUpdate"], ["SliceScatter"], ["Identity"])
    if axis:  # the exporter transposes for other axes than 0 only
        rewritten, _ = _run_both(_transposed_scatter_nd(shape, axis, listed), feeds)
        assert [n.op_type for n in rewritten.graph.node] in (["ScatterUpdate"], ["SliceScatter"], ["Identity"])


def _transposed_scatter_nd(shape, axis, listed, indices_input=False):
    """Transpose(ScatterND(Transpose(data), indices[..., None], Transpose(updates))): a write on ``axis`` the dynamo way."""
    perm = list(range(len(shape)))
    perm[0], perm[axis] = perm[axis], perm[0]
    nodes = [
        helper.make_node("Transpose", ["data"], ["data_t"], perm=perm),
        helper.make_node("Transpose", ["updates"], ["updates_t"], perm=perm),
        helper.make_node("Unsqueeze", ["indices", "minus_one"], ["coordinates"]),
        helper.make_node("ScatterND", ["data_t", "coordinates", "updates_t"], ["written_t"]),
        helper.make_node("Transpose", ["written_t"], ["output"], perm=perm),
    ]
    updates_shape = list(shape)
    updates_shape[axis] = len(listed)
    inputs = [helper.make_tensor_value_info("data", TensorProto.FLOAT, shape), helper.make_tensor_value_info("updates", TensorProto.FLOAT, updates_shape)]
    initializers = [numpy_helper.from_array(np.array([-1], np.int64), "minus_one")]
    if indices_input:
        inputs.append(helper.make_tensor_value_info("indices", TensorProto.INT64, [len(listed)]))
    else:
        initializers.append(numpy_helper.from_array(np.asarray(listed, np.int64), "indices"))
    graph = helper.make_graph(nodes, "g", inputs, [helper.make_tensor_value_info("output", TensorProto.FLOAT, shape)], initializer=initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


def test_run_time_index_lists_wrap_negative_indices():
    """ScatterND reads -1 as the last row; ScatterUpdate takes [0, s-1] only, so the rewrite adds s first."""
    model = _transposed_scatter_nd((3, 5), 1, [0, 0], indices_input=True)
    rewritten, report = rewrite(model)
    assert "negative indices wrapped" in report.rewritten[0].detail
    assert "Transpose" not in [n.op_type for n in rewritten.graph.node]
    rng = np.random.default_rng(0)
    for indices in ([-1, 0], [4, -5], [-2, 3]):
        feeds = {"data": rng.standard_normal((3, 5), np.float32), "updates": rng.standard_normal((3, 2), np.float32), "indices": np.array(indices)}
        expected = onnxruntime.InferenceSession(model.SerializeToString()).run(["output"], feeds)[0]
        np.testing.assert_array_equal(Reference(rewritten).run(feeds)["output"], expected)


@given(st.integers(1, 7), st.integers(1, 3), st.integers(-10, 10), st.integers(-10, 10), st.booleans(), st.integers(0, 2**31))
def test_run_time_slice_bounds_clamp_as_onnx_slice_does(size, step, start, stop, dynamic, seed):
    """ONNX Slice's clamping (what the ScatterND writes) and SliceScatter-15's (the oracle) agree for positive steps."""
    count = len(range(size)[slice(start, stop, step)])
    rng = np.random.default_rng(seed)
    feeds = {"data": rng.standard_normal((size, 3), np.float32), "updates": rng.standard_normal((count, 3), np.float32),
             "start": np.array([start]), "stop": np.array([stop])}
    rewritten, report = _run_both(_range_slice_model(size, step, dynamic), feeds)
    assert [n.op_type for n in rewritten.graph.node if n.op_type not in ("Shape", "Gather")] == ["SliceScatter"]


def _grid_model(shape, columns, dynamic, layout=None, target="where"):
    """The TorchScript exporter's ``x[:, a:b, index] = v``: ScatterND(data, Concat(Unsqueeze(Expand(C_i, G), -1), ...), updates),
    column i of ``columns`` ``(kind, values)``: ``whole`` (a constant arange, or Range(0, dim) where ``dynamic``), ``slice``
    (a Slice of it, constant bounds ``values``), ``run_time_slice`` (bounds the inputs ``start{i}``/``stop{i}``), ``list`` (the
    input ``index``), each reshaped to vary along grid axis i, or as ``layout[i]`` says: ``flat`` (1-D as it is), ``swapped``
    (Reshape [1, -1, 1...]). G (``target``): ``Shape(C_0 + ... + C_k-1)`` in the exporter's ``Where(Equal(s, -1s), 1s, s)``
    (``where``) or alone (``shape``), or ``larger``: the grid's shape with axis 0 one longer (positions written twice)."""
    k = len(columns)
    nodes = [helper.make_node("Shape", ["data"], ["shape"])]
    constants = {"zero": 0, "one": 1, "axis0": [0], "minus_one": [-1], "negative_one": -1}
    inputs = [("data", FLOAT, [f"d{a}" for a in range(len(shape))] if dynamic else list(shape)), ("updates", FLOAT, [f"u{a}" for a in range(len(shape))])]
    grid, sources = [], []
    for i, (kind, values) in enumerate(columns):
        if dynamic:
            nodes += [helper.make_node("Gather", ["shape", f"axis_{i}"], [f"dim_{i}"], axis=0), helper.make_node("Range", ["zero", f"dim_{i}", "one"], [f"whole_{i}"])]
            constants[f"axis_{i}"] = i
        else:
            constants[f"whole_{i}"] = np.arange(shape[i])
        column = f"whole_{i}"
        if kind == "slice":
            start, stop, step = values
            constants.update({f"start{i}": [start], f"stop{i}": [stop], f"step{i}": [step]})
        if kind == "run_time_slice":
            inputs += [(f"start{i}", INT64, [1]), (f"stop{i}", INT64, [1])]
            constants[f"step{i}"] = [1]
        if kind in ("slice", "run_time_slice"):
            nodes.append(helper.make_node("Slice", [column, f"start{i}", f"stop{i}", "axis0", f"step{i}"], [f"sliced_{i}"]))
            column = f"sliced_{i}"
        if kind == "list":
            inputs.append(("index", INT64, ["m"]))
            column = "index"
        grid.append(len(range(shape[i])[slice(*values)]) if kind in ("slice", "run_time_slice") else len(values) if kind == "list" else shape[i])
        how = (layout or {}).get(i, "flat" if i == k - 1 else "column")
        if how != "flat":
            constants[f"column_shape_{i}"] = [-1] + [1] * (k - 1 - i) if how == "column" else [1, -1] + [1] * (k - 2 - i)
            nodes.append(helper.make_node("Reshape", [column, f"column_shape_{i}"], [f"reshaped_{i}"]))
            column = f"reshaped_{i}"
        sources.append(column)
    total = sources[0]
    for i, source in enumerate(sources[1:]):
        nodes.append(helper.make_node("Add", [total, source], [f"sum_{i}"]))
        total = f"sum_{i}"
    nodes.append(helper.make_node("Shape", [total], ["grid" if target == "shape" else "grid_shape"]))
    if target == "where":
        nodes += [helper.make_node("Shape", ["grid_shape"], ["grid_rank"]), helper.make_node("ConstantOfShape", ["grid_rank"], ["ones"], value=numpy_helper.from_array(np.array([1], np.int64))),
                  helper.make_node("Mul", ["ones", "negative_one"], ["negative_ones"]), helper.make_node("Equal", ["grid_shape", "negative_ones"], ["unknown"]),
                  helper.make_node("Where", ["unknown", "ones", "grid_shape"], ["grid"])]
    elif target == "larger":
        constants["one_more"] = [1] + [0] * (k - 1)
        nodes.append(helper.make_node("Add", ["grid_shape", "one_more"], ["grid"]))
        grid[0] += 1
    coordinates = []
    for i, source in enumerate(sources):
        nodes += [helper.make_node("Expand", [source, "grid"], [f"expanded_{i}"]), helper.make_node("Unsqueeze", [f"expanded_{i}", "minus_one"], [f"coordinates_{i}"])]
        coordinates.append(f"coordinates_{i}")
    if k > 1:
        nodes.append(helper.make_node("Concat", coordinates, ["indices"], axis=-1))
    nodes.append(helper.make_node("ScatterND", ["data", "indices" if k > 1 else coordinates[0], "updates"], ["output"]))
    return _model(nodes, inputs, [("output", FLOAT, inputs[0][2])], constants), tuple(grid)


@st.composite
def _grid_writes(draw):
    """A data shape, k <= rank, and a column per indexed axis (see :func:`_grid_model`) taking at least one element."""
    shape = tuple(draw(st.lists(st.integers(1, 5), min_size=1, max_size=4)))
    k = draw(st.integers(1, len(shape)))
    columns = []
    for i in range(k):
        size = shape[i]
        kind = draw(st.sampled_from(["whole", "slice", "run_time_slice"] + (["list"] if i == k - 1 else [])))
        if kind == "list":
            listed = np.array(draw(st.permutations(range(size))))[: draw(st.integers(1, size))]
            values = np.where(np.asarray(draw(st.lists(st.booleans(), min_size=len(listed), max_size=len(listed)))), listed - size, listed)
        elif kind == "whole":
            values = None
        else:
            step = draw(st.sampled_from([1, 2, 3])) if kind == "slice" else 1
            start, stop = draw(st.integers(-size - 2, size + 2)), draw(st.integers(-size - 2, size + 2))
            values = (start, stop, step) if len(range(size)[start:stop:step]) else (0, size, step)
        columns.append((kind, values))
    return shape, columns


@given(_grid_writes(), st.booleans(), st.sampled_from(["where", "shape"]), st.integers(0, 2**31))
def test_a_coordinate_grid_of_slices_becomes_one_node(case, dynamic, target, seed):
    """Whole axes, slices (constant or run-time bounds) and a last index list, static or dynamic shapes: one node, whose
    values (the oracle's) are onnxruntime's for the original; a list after a sliced axis is left (no one op writes both)."""
    shape, columns = case
    model, grid = _grid_model(shape, columns, dynamic, target=target)
    rng = np.random.default_rng(seed)
    feeds = {"data": rng.standard_normal(shape, np.float32), "updates": rng.standard_normal(grid + shape[len(columns):], np.float32)}
    for i, (kind, values) in enumerate(columns):
        if kind == "run_time_slice":
            feeds[f"start{i}"], feeds[f"stop{i}"] = np.array([values[0]]), np.array([values[1]])
        if kind == "list":
            feeds["index"] = np.asarray(values, np.int64)
    sliced = [kind == "run_time_slice" or kind == "slice" and (dynamic or len(range(size)[slice(*values)]) < size)  # static: folded
              for size, (kind, values) in zip(shape, columns[:-1])]
    listed_after_a_slice = columns[-1][0] == "list" and any(sliced)
    if listed_after_a_slice:
        _, report = rewrite(model)
        assert report.left and not report.rewritten
        return
    rewritten, report = _run_both(model, feeds)
    assert [n.op_type for n in rewritten.graph.node if n.op_type in {"SliceScatter", "ScatterUpdate", "Identity", *SCATTER_OPS}] in (
        ["SliceScatter"], ["ScatterUpdate"], ["Identity"]), "\n".join(report.lines())


@pytest.mark.parametrize("shape, columns, layout", [
    ((3, 3, 2), [("whole", None), ("run_time_slice", (0, 3, 1))], {0: "swapped"}),
    ((2, 3, 3), [("whole", None), ("whole", None), ("run_time_slice", (0, 3, 1))], {0: "swapped"}),
    ((3, 3, 2), [("whole", None), ("run_time_slice", (0, 3, 1))], "larger"),  # Expanded past the grid: positions twice
])
@pytest.mark.parametrize("dynamic", [False, True])  # False: the exporter's folded constants; True: Range(0, dim) columns
def test_a_grid_whose_columns_do_not_each_vary_along_their_own_axis_is_left(shape, columns, layout, dynamic):
    model, _ = _grid_model(shape, columns, dynamic=dynamic, **({"target": layout} if isinstance(layout, str) else {"layout": layout}))
    _, report = rewrite(model)
    assert not report.rewritten and "known only at run time" in report.left[0].detail


def _range_of_a_dimension(limit_nodes, shape_attributes=None, dims=("n", 3)):
    """ScatterND(x, Unsqueeze(Range(0, limit, 1), -1), u), ``limit`` what ``limit_nodes`` compute from ``Shape(x)`` (``shape``)."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"], **(shape_attributes or {})), *limit_nodes,
             helper.make_node("Range", ["zero", "limit", "one"], ["rows"]), helper.make_node("Unsqueeze", ["rows", "minus_one"], ["indices"]),
             helper.make_node("ScatterND", ["x", "indices", "u"], ["out"])]
    return _model(nodes, [("x", FLOAT, list(dims)), ("u", FLOAT, ["k", *dims[1:]])], [("out", FLOAT, list(dims))],
                  {"zero": 0, "one": 1, "minus_one": [-1], "first": 0, "last": -1})


@pytest.mark.parametrize("model, feeds", [
    # x.shape[0] through a Cast to bool and back is 1, not x.shape[0]: a Range of it is one row, not the whole axis
    (_range_of_a_dimension([helper.make_node("Gather", ["shape", "first"], ["dim"], axis=0), helper.make_node("Cast", ["dim"], ["flag"], to=TensorProto.BOOL),
                            helper.make_node("Cast", ["flag"], ["limit"], to=TensorProto.INT64)]),
     {"x": np.arange(12, dtype=np.float32).reshape(4, 3), "u": -np.ones((1, 3), np.float32)}),
    # Gather(Shape(x, start=1), -1) is x's last dimension (1 here), not its first
    (_range_of_a_dimension([helper.make_node("Gather", ["shape", "last"], ["limit"], axis=0)], {"start": 1}, ("n", "h", "w")),
     {"x": np.zeros((5, 1, 2), np.float32), "u": np.ones((2, 1, 2), np.float32)}),
])
def test_a_range_that_only_looks_like_a_whole_axis_is_written_as_the_rows_it_holds(model, feeds):
    _run_both(model, feeds)


def test_nested_slice_writes_fuse_into_one_node():
    """SliceScatter(D, SliceScatter(Slice(D, 1:3 on axis 0), Y, 0:4:2 on axis 1), 1:3 on axis 0): one write over both axes."""
    model = _nested()
    rewritten, report = rewrite(model)
    assert [n.op_type for n in rewritten.graph.node] == ["SliceScatter"]
    expected = NESTED_FEEDS["data"].copy()
    expected[1:3, 0:4:2] = NESTED_FEEDS["updates"]
    np.testing.assert_array_equal(Reference(rewritten).run(NESTED_FEEDS)["output"], expected)
    assert report.rewritten[0].pattern == "SliceScatter of a SliceScatter"


def test_slices_of_negative_indices_run_to_the_end():
    from trt_scatter.passes.rewrite import INT64_MIN, _progression

    assert _progression(np.array([-3, -2, -1])) == (-3, INT64_MAX, 1)
    assert _progression(np.array([2, 1, 0])) == (2, INT64_MIN, -1)
    assert _progression(np.array([-1, -3])) == (-1, -5, -2)
    assert _progression(np.array([0, 2, 3])) is None


# ---- the loader and the command ------------------------------------------------------------------


def test_polygraphy_loader_composes_with_onnx_from_path():
    from polygraphy.backend.onnx import OnnxFromPath

    loader = RewriteToTrtScatter(OnnxFromPath(str(FIXTURES / "kv_cache_bhsd.dynamo.dynamic.onnx")))
    model = loader()
    assert [n.op_type for n in _plugins(model)] == ["SliceScatter"]
    assert loader.report.rewritten[0].result == "SliceScatter"
    assert [n.op_type for n in _plugins(RewriteToTrtScatter(str(FIXTURES / "index_copy_last.dynamo.static.onnx"))())] == ["ScatterUpdate"]


def test_cli_rewrites_and_reports(tmp_path, capsys):
    output = tmp_path / "out.onnx"
    assert main(["rewrite", str(FIXTURES / "two_writes.torchscript.dynamic.onnx"), str(output), "--report"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert any(line.startswith("rewritten  ") and "-> ScatterUpdate" in line for line in lines)
    assert lines[-1] == f"saved    {output} (2 rewritten, 0 left)"
    assert sorted(n.op_type for n in _plugins(onnx.load(output))) == ["ScatterUpdate", "SliceScatter"]
    assert main(["rewrite", str(FIXTURES / "kv_rows_bshd.dynamo.dynamic.onnx"), str(output), "--report"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("left       ") and "indices known only at run time" in lines[0]
    assert lines[-1] == f"saved    {output} (0 rewritten, 1 left)"


def test_cli_without_report_prints_the_summary_only(tmp_path, capsys):
    assert main(["rewrite", str(FIXTURES / "assign_first.dynamo.static.onnx"), str(tmp_path / "out.onnx")]) == 0
    assert capsys.readouterr().out.splitlines() == [f"saved    {tmp_path / 'out.onnx'} (1 rewritten, 0 left)"]


@pytest.mark.parametrize("setup, message", [
    (lambda tmp: tmp / "missing.onnx", "cannot read ONNX model"),
    (lambda tmp: (tmp / "junk.onnx").write_bytes(b"\xff\xfe not a model") and tmp / "junk.onnx", "is not an ONNX model"),
])
def test_cli_bad_input_fails_with_one_line(tmp_path, capsys, setup, message):
    path = setup(tmp_path)
    assert main(["rewrite", str(path), str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err.strip()
    assert err.count("\n") == 0 and err.startswith("trt-scatter rewrite: error: ") and message in err


def test_cli_rewrites_what_the_function_rewrites_and_validates_what_it_writes(tmp_path, capsys):
    """PyTorch's TorchScript export at opset 16 or 17 writes scatter_reduce('amax') as ScatterElements with reduction 'max',
    which arrives in opset 18: the command refused the file that rewrite() turns into a valid ScatterElementsReduce node.
    What the command writes is validated: a trt_scatter node it keeps as it was is refused as before."""
    value = helper.make_tensor_value_info
    inputs = [value("data", TensorProto.FLOAT, [4, 3]), value("indices", TensorProto.INT64, [2, 3]), value("updates", TensorProto.FLOAT, [2, 3])]
    graph = helper.make_graph([helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"], name="w", axis=0, reduction="max")],
                              "g", inputs, [value("output", TensorProto.FLOAT, [4, 3])])
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]), tmp_path / "max17.onnx")
    assert main(["rewrite", str(tmp_path / "max17.onnx"), str(tmp_path / "out.onnx")]) == 0, capsys.readouterr().err
    assert [node.op_type for node in onnx.load(tmp_path / "out.onnx").graph.node] == ["ScatterElementsReduce"]
    from trt_scatter.onnx_models import slice_scatter_model

    broken = slice_scatter_model((4, 6), [1], [4], [1], [1])
    step = broken.graph.node[0].input[4]
    next(init for init in broken.graph.initializer if init.name == step).CopyFrom(numpy_helper.from_array(np.array([0]), step))
    onnx.save(broken, tmp_path / "step0.onnx")
    assert main(["rewrite", str(tmp_path / "step0.onnx"), str(tmp_path / "out2.onnx")]) == 2
    assert "'step' must not contain 0" in capsys.readouterr().err
    assert not (tmp_path / "out2.onnx").exists()
    short = helper.make_graph([helper.make_node("ScatterElements", ["data", "indices"], ["output"], name="w")], "g", inputs[:2],
                              [value("output", TensorProto.FLOAT, [4, 3])])
    onnx.save(helper.make_model(short, opset_imports=[helper.make_opsetid("", 18)]), tmp_path / "short.onnx")
    assert main(["rewrite", str(tmp_path / "short.onnx"), str(tmp_path / "out3.onnx")]) == 2  # the rewrite cannot read it: the model's mistake
    assert capsys.readouterr().err == ("trt-scatter rewrite: error: ScatterElements node 'w': ScatterElements takes 3 inputs and gives 1 output "
                                       "(got 2 inputs, 1 outputs)\n")
    # a mistake the rewrite mends (the reduction before its opset) and one it keeps (step 0): the one left is named
    both = onnx.load(tmp_path / "step0.onnx")
    both.graph.input.extend([value("d2", TensorProto.FLOAT, [4, 3]), value("i2", TensorProto.INT64, [2, 3]), value("u2", TensorProto.FLOAT, [2, 3])])
    both.graph.output.append(value("o2", TensorProto.FLOAT, [4, 3]))
    both.graph.node.insert(0, helper.make_node("ScatterElements", ["d2", "i2", "u2"], ["o2"], name="w", axis=0, reduction="max"))
    next(opset for opset in both.opset_import if opset.domain == "").version = 17
    onnx.save(both, tmp_path / "both.onnx")
    assert main(["rewrite", str(tmp_path / "both.onnx"), str(tmp_path / "out4.onnx")]) == 2
    assert "'step' must not contain 0" in capsys.readouterr().err


def test_cli_unwritable_output_fails_with_one_line_before_any_work(tmp_path, capsys):
    (tmp_path / "file").write_text("")
    target = tmp_path / "file" / "out.onnx"  # a folder that is a file
    assert main(["rewrite", str(FIXTURES / "assign_first.dynamo.static.onnx"), str(target)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == f"trt-scatter rewrite: error: output {str(target)!r} cannot be written: {str(tmp_path / 'file')!r} is not a directory"


def _cli_input(command):
    """A model ``trt-scatter COMMAND`` works on: PyTorch's export for rewrite, its rewritten form (plugin nodes) for lower."""
    model = onnx.load(FIXTURES / "assign_first.dynamo.static.onnx")
    return rewrite(model)[0] if command == "lower" else model


@pytest.mark.parametrize("dtype", [np.float32, np.int64])  # int64: read with the index constants, still kept outside
@pytest.mark.parametrize("command", ["rewrite", "lower"])
def test_cli_writes_the_weights_a_model_keeps_in_external_files(tmp_path, command, dtype):
    """The written model keeps its weights as the input did, in a file beside it (not references to the input's)."""
    source = tmp_path / "in" / "model.onnx"
    source.parent.mkdir()
    model = _cli_input(command)
    model.graph.initializer.append(numpy_helper.from_array(np.arange(1000, dtype=dtype), "weights"))
    model.graph.node.append(helper.make_node("Identity", ["weights"], ["weights_out"]))
    model.graph.output.append(helper.make_tensor_value_info("weights_out", helper.np_dtype_to_tensor_dtype(np.dtype(dtype)), [1000]))
    # Only the weights are over the threshold: the model's other tensors stay in it.
    onnx.save(model, source, save_as_external_data=True, all_tensors_to_one_file=True, location="weights.bin", size_threshold=1024)
    output = tmp_path / "out" / "model.onnx"
    umask = os.umask(0o022)
    try:
        assert main([command, str(source), str(output)]) == 0
    finally:
        os.umask(umask)
    assert (output.parent / "model.onnx.data").is_file()
    # Both files get the permissions a new file gets (0o666 less the umask), not the temporary ones' 0o600.
    assert [stat.S_IMODE((output.parent / name).stat().st_mode) for name in ("model.onnx", "model.onnx.data")] == [0o644, 0o644]
    (source.parent / "weights.bin").unlink()  # the written model must not need the input's file
    written = onnx.load(output)
    weights = next(init for init in written.graph.initializer if init.name == "weights")
    np.testing.assert_array_equal(numpy_helper.to_array(weights), np.arange(1000, dtype=dtype))


@pytest.mark.parametrize("command", ["rewrite", "lower"])
def test_cli_writes_external_data_beside_the_output_whatever_the_working_directory(tmp_path, capsys, monkeypatch, command):
    """The output's tensors go to ``<output>.data`` beside it: where that is the input's own data file the command
    refuses (it overwrote it, and the input could no longer be read); a file of that name in the working directory
    neither blocks the write nor a second run into the same path (onnx looked for it there)."""
    source = tmp_path / "in" / "a.onnx"
    source.parent.mkdir()
    model = _cli_input(command)
    model.graph.initializer.append(numpy_helper.from_array(np.arange(1000, dtype=np.float32), "weights"))
    model.graph.node.append(helper.make_node("Identity", ["weights"], ["weights_out"]))
    model.graph.output.append(helper.make_tensor_value_info("weights_out", TensorProto.FLOAT, [1000]))
    onnx.save(model, source, save_as_external_data=True, all_tensors_to_one_file=True, location="b.onnx.data", size_threshold=1024)
    before = (source.parent / "b.onnx.data").read_bytes()
    assert main([command, str(source), str(source.parent / "b.onnx")]) == 2
    assert capsys.readouterr().err.startswith(f"trt-scatter {command}: error: output {str(source.parent / 'b.onnx')!r} keeps its tensors in ")
    assert (source.parent / "b.onnx.data").read_bytes() == before and onnx.load(source) is not None
    monkeypatch.chdir(source.parent)
    (source.parent / "z.onnx.data").write_bytes(b"unrelated")
    for _ in range(2):
        assert main([command, str(source), str(tmp_path / "out" / "z.onnx")]) == 0, capsys.readouterr().err
    assert (source.parent / "z.onnx.data").read_bytes() == b"unrelated"
    written = onnx.load(tmp_path / "out" / "z.onnx")
    weights = next(init for init in written.graph.initializer if init.name == "weights")
    np.testing.assert_array_equal(numpy_helper.to_array(weights), np.arange(1000, dtype=np.float32))


@pytest.mark.parametrize("command", ["rewrite", "lower"])
def test_cli_refuses_weights_kept_outside_the_models_folder_in_one_line(tmp_path, capsys, command):
    """onnx reads external data only from the model's folder: a location like '../w.bin' is one error line, not a traceback."""
    source = tmp_path / "in" / "model.onnx"
    source.parent.mkdir()
    model = _cli_input(command)
    onnx.save(model, source, save_as_external_data=True, all_tensors_to_one_file=True, location="w.bin", size_threshold=0)
    (source.parent / "w.bin").rename(tmp_path / "w.bin")
    moved = onnx.load(source, load_external_data=False)
    for tensor in moved.graph.initializer:
        for entry in tensor.external_data:
            if entry.key == "location":
                entry.value = "../w.bin"
    onnx.save(moved, source)
    assert main([command, str(source), str(tmp_path / "out.onnx")]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and err.startswith(f"trt-scatter {command}: error: {str(source)!r} keeps tensor ")
    assert err.rstrip().endswith("in '../w.bin': an external data location must be a file in the model's folder (relative, no '..')")
    assert not (tmp_path / "out.onnx").exists()


# ---- rewrite then lower: the inverse passes ------------------------------------------------------


@pytest.mark.parametrize("stem", EXPORTS)
def test_rewrite_then_lower_computes_what_the_original_does(stem):
    """``trt-scatter rewrite`` then ``trt-scatter lower`` gives a standard-ONNX model that onnxruntime
    runs to the original's values, on the inputs saved with the fixtures (other shapes and positions
    included)."""
    from trt_scatter.passes.lower import lower

    case = stem.split(".")[0]
    original = onnx.load(FIXTURES / f"{stem}.onnx")
    lowered = lower(rewrite(original)[0])
    onnx.checker.check_model(lowered, full_check=True)
    assert not _plugins(lowered)
    arrays = np.load(FIXTURES / f"{case}.npz")
    names = [graph_input.name for graph_input in original.graph.input if graph_input.name not in {i.name for i in original.graph.initializer}]
    want = onnxruntime.InferenceSession(original.SerializeToString())
    got = onnxruntime.InferenceSession(lowered.SerializeToString())
    compared = 0
    for which, stock_runs in MANIFEST["exports"][stem]["eager_equal"].items():
        if stock_runs not in (True, False):
            continue  # the stock export itself fails to run in onnxruntime
        feeds = {name: arrays[f"{which}/{name}"] for name in names}
        np.testing.assert_array_equal(got.run(["output"], feeds)[0], want.run(["output"], feeds)[0])
        compared += 1
    assert compared or stem.startswith("index_put_columns.torchscript")


# ---- less common forms: rewritten to the same values, or left as they are ------------------------


def _transposed_write(updates_node=None, back_perm=True, extra_outputs=(), consumer=None, extra_inputs=()):
    """ScatterND(Transpose(data (3, 5)), [[1], [3]], updates_t) on axis 1 the dynamo way, with variations."""
    nodes = [helper.make_node("Transpose", ["data"], ["data_t"], perm=[1, 0])]
    nodes += [updates_node] if updates_node else [helper.make_node("Transpose", ["updates"], ["updates_t"], perm=[1, 0])]
    nodes.append(helper.make_node("ScatterND", ["data_t", "indices", "updates_t"], ["written_t"]))
    nodes += [consumer] if consumer else [helper.make_node("Transpose", ["written_t"], ["output"], **({"perm": [1, 0]} if back_perm else {}))]
    inputs = [("data", FLOAT, [3, 5]), ("updates", FLOAT, [3, 2] if updates_node is None else [3]), *extra_inputs]
    constants = {"indices": [[1], [3]], "shape": [2, 3]}
    opsets = {"": 18, "trt_scatter": 1} if consumer and consumer.domain == "trt_scatter" else None
    return _model(nodes, inputs, [("output", FLOAT, None), *extra_outputs], constants, opsets=opsets)


def _nested(view_inputs=("data", "s0", "e0", "a0", "st0"), outer_start="s0", inner_axes="a1", extra_nodes=(), extra_inputs=(), constants=None, opsets=None,
            view_attributes=None, int32=(), outer=("e0", "st0", "a0"), value_info=()):
    """SliceScatter(D, SliceScatter(Slice(D, 1:3 on axis 0), Y, 0:4:2 on axis 1), 1:3 on axis 0), the model of
    :func:`test_nested_slice_writes_fuse_into_one_node`, with variations (``int32``: the constants of that type)."""
    constants = {"s0": [1], "e0": [3], "a0": [0], "st0": [1], "s1": [0], "e1": [4], "a1": [1], "st1": [2], **(constants or {})}
    nodes = [
        *extra_nodes,
        helper.make_node("Slice", list(view_inputs), ["rows"], **(view_attributes or {})),
        helper.make_node("SliceScatter", ["rows", "updates", "s1", "e1", "st1", inner_axes], ["inner"], domain="trt_scatter", inplace=0),
        helper.make_node("SliceScatter", ["data", "inner", outer_start, *outer], ["output"], domain="trt_scatter", inplace=0),
    ]
    inputs = [("data", FLOAT, [4, 5]), ("updates", FLOAT, [2, 2]), *extra_inputs]
    model = _model(nodes, inputs, [("output", FLOAT, [4, 5])], {k: v for k, v in constants.items() if k not in {i[0] for i in extra_inputs}},
                   value_info=value_info, opsets=opsets or {"": 18, "trt_scatter": 1})
    for initializer in model.graph.initializer:
        if initializer.name in int32:
            initializer.CopyFrom(numpy_helper.from_array(numpy_helper.to_array(initializer).astype(np.int32), initializer.name))
    return model


NESTED_FEEDS = {"data": np.arange(20, dtype=np.float32).reshape(4, 5), "updates": -np.ones((2, 2), np.float32)}  # for _nested()
_POSITION = [helper.make_node("Reshape", ["position", "one_element"], ["position_reshaped"])]  # the dynamo exporter's SymInt, as a SliceScatter takes it


@pytest.mark.parametrize("model, feeds", [
    (_nested(view_inputs=("data", "position", "e0", "a0", "st0"), outer_start="position_reshaped", extra_nodes=_POSITION,
             extra_inputs=[("position", INT64, [1])], constants={"one_element": [1]}), {"position": np.array([1])}),
    (_nested(view_inputs=("data", "position", "e0", "a0", "st0"), outer_start="position_reshaped", extra_nodes=_POSITION,
             extra_inputs=[("position", TensorProto.INT32, [1])], constants={"one_element": [1]}, int32=("e0", "a0", "st0")), {"position": np.array([1], np.int32)}),
])
def test_nested_slice_writes_at_a_run_time_position_fuse_into_one_node(model, feeds):
    rewritten, report = rewrite(model)
    onnx.checker.check_model(rewritten, full_check=True)
    assert [n.op_type for n in _plugins(rewritten)] == ["SliceScatter"], "\n".join(report.lines())
    feeds = {**NESTED_FEEDS, **feeds}
    np.testing.assert_array_equal(Reference(rewritten).run(feeds)["output"], Reference(model).run(feeds)["output"])


@pytest.mark.parametrize("model", [
    pytest.param(_nested(view_inputs=("other", "s0", "e0", "a0", "st0"), extra_inputs=[("other", FLOAT, [4, 5])]), id="a-view-of-another-tensor"),
    pytest.param(_nested(view_inputs=("data", "zero", "e0", "a0", "st0"), constants={"zero": [0]}), id="a-view-of-other-rows"),
    pytest.param(_nested(inner_axes="a0"), id="both-on-one-axis"),
    pytest.param(_nested(view_inputs=("data", "position", "e0", "a0", "st0"), outer_start="position", extra_inputs=[("position", INT64, ["m"])]),
                 id="a-start-of-unknown-length"),
    pytest.param(_nested(view_inputs=("data", "s0", "e0", "a0", "back"), constants={"back": [-1]}), id="a-negative-step"),
    pytest.param(_nested(view_inputs=("data", "two", "e2", "a2", "st2"), outer_start="two", outer=("e2", "st2", "a2"),
                         constants={"e2": [3, 5], "a2": [0, 2], "st2": [1, 1]}, extra_inputs=[("two", INT64, [2])]), id="two-run-time-starts"),
    pytest.param(_nested(view_inputs=("data", "position", "e0", "a0", "st0"), outer_start="position", extra_nodes=[helper.make_node("Foo", ["p"], ["position"], domain="custom")],
                         extra_inputs=[("p", INT64, [1])], opsets={"": 18, "trt_scatter": 1, "custom": 1},
                         value_info=[helper.make_tensor_value_info("position", TensorProto.UNDEFINED, [1])]), id="a-start-of-unknown-type"),
    pytest.param(_nested(view_inputs=("data",), view_attributes={"starts": [1], "ends": [3], "axes": [0]}, opsets={"": 9, "trt_scatter": 1}), id="an-opset-9-slice"),
])
def test_nested_slice_writes_that_cannot_fuse_are_left(model):
    """Each refuses one condition of the fusion: nothing changes, and there is no write the report would name."""
    rewritten, report = rewrite(model)
    assert rewritten.SerializeToString() == model.SerializeToString()
    assert list(report.lines()) == ["no scatter pattern in the model"]


RNG = np.random.default_rng(0)


def _range_feeds(start, stop, **more):
    """Feeds for :func:`_range_slice_model` (5, 3) writing rows start:stop."""
    count = len(range(5)[start:stop])
    return {"data": RNG.standard_normal((5, 3), np.float32), "updates": RNG.standard_normal((count, 3), np.float32),
            "start": np.array([start]), "stop": np.array([stop]), **more}
DATA, UPDATES = RNG.standard_normal((3, 5), np.float32), RNG.standard_normal((3, 2), np.float32)


@pytest.mark.parametrize("model, feeds, ops", [
    pytest.param(_model([helper.make_node("Transpose", ["data"], ["data_t"], perm=[0, 1]), helper.make_node("ScatterND", ["data_t", "indices", "updates"], ["output"])],
                        [("data", FLOAT, [4, 5]), ("updates", FLOAT, [2, 5])], [("output", FLOAT, [4, 5])], {"indices": [[1], [3]]}),
                 {"data": RNG.standard_normal((4, 5), np.float32), "updates": RNG.standard_normal((2, 5), np.float32)}, ["SliceScatter"], id="identity-transpose"),
    pytest.param(_scatter_model("ScatterND", [[[0], [3]], [[2], [1]]]), {"data": np.zeros((4, 5), np.float32), "updates": RNG.standard_normal((2, 2, 5), np.float32)},
                 ["ScatterUpdate"], id="constant-index-list-of-rank-2"),
    pytest.param(_transposed_write(helper.make_node("Expand", ["updates", "shape"], ["updates_t"])), {"data": DATA, "updates": UPDATES[:, 0].copy()},
                 ["Expand", "Transpose", "SliceScatter"], id="updates-broadcast-from-a-lower-rank-under-the-transposes"),
    pytest.param(_model([helper.make_node("Transpose", ["data"], ["data_t"], perm=[1, 0]), helper.make_node("Expand", ["updates", "shape"], ["updates_t"]),
                         helper.make_node("ScatterND", ["data_t", "indices", "updates_t"], ["written_t"]), helper.make_node("Transpose", ["written_t"], ["output"], perm=[1, 0])],
                        [("data", FLOAT, [3, 5]), ("updates", FLOAT, [2, 3])], [("output", FLOAT, [3, 5])], {"indices": [[1], [3]], "shape": [3]}),
                 {"data": DATA, "updates": UPDATES.T.copy()}, ["Expand", "Transpose", "SliceScatter"],
                 id="updates-expanded-by-a-shorter-shape-under-the-transposes"),  # Expand broadcasts it from the left: not permuted (an IndexError)
    pytest.param(_transposed_write(back_perm=False), {"data": DATA, "updates": UPDATES}, ["SliceScatter", "Transpose", "Transpose"],
                 id="transpose-back-without-a-perm-attribute"),
    pytest.param(_transposed_write(extra_outputs=[("written_t", FLOAT, [5, 3])]), {"data": DATA, "updates": UPDATES}, ["SliceScatter", "Transpose", "Identity"],
                 id="the-transposed-write-is-an-output-too"),
    pytest.param(_transposed_write(consumer=helper.make_node("SliceScatter", ["written_t", "rows", "s", "e", "st", "a"], ["output"], domain="trt_scatter", inplace=0),
                                   extra_inputs=[("rows", FLOAT, [1, 3]), *[(name, INT64, [1]) for name in ("s", "e", "st", "a")]]),
                 {"data": DATA, "updates": UPDATES, "rows": np.ones((1, 3), np.float32), "s": np.array([4]), "e": np.array([5]), "st": np.array([1]), "a": np.array([0])},
                 ["SliceScatter", "SliceScatter", "Transpose"], id="a-slice-write-into-the-transposed-write"),  # the Transposes sink past both writes
    pytest.param(_transposed_write(consumer=helper.make_node("SliceScatter", ["written_t", "rows", "s", "e", "st"], ["output"], domain="trt_scatter", inplace=0),
                                   extra_inputs=[("rows", FLOAT, [1, 3]), *[(name, INT64, ["m"]) for name in ("s", "e", "st")]]),
                 {"data": DATA, "updates": UPDATES, "rows": np.ones((1, 3), np.float32), "s": np.array([4]), "e": np.array([5]), "st": np.array([1])},
                 ["SliceScatter", "Transpose", "SliceScatter"], id="a-slice-write-of-unknown-rank-into-the-transposed-write"),
    pytest.param(_transposed_write(consumer=helper.make_node("ScatterND", ["written_t", "rows", "rows_values"], ["output"], reduction="add"),
                                   extra_inputs=[("rows", INT64, [2, 1]), ("rows_values", FLOAT, [2, 3])]),
                 {"data": DATA, "updates": UPDATES, "rows": np.array([[4], [4]]), "rows_values": np.ones((2, 3), np.float32)},
                 ["SliceScatter", "ScatterNDReduce", "Transpose"], id="a-reduction-into-the-transposed-write"),  # the Transpose stays: no axes to move
    pytest.param(_transposed_scatter_nd((3, 5), 1, [0, 3, 1]), {"data": DATA, "updates": RNG.standard_normal((3, 3), np.float32)}, ["ScatterUpdate"],
                 id="a-constant-index-list-under-the-transposes"),
    pytest.param(_range_slice_model(5, 1, True, positions=["from_one"]), _range_feeds(1, 3), ["ScatterUpdate"],
                 id="a-range-from-1-is-an-index-list"),
    pytest.param(_range_slice_model(5, 1, True, positions=["given"]), _range_feeds(1, 3, given=np.array([4, 0, 3, 1, 2])),
                 ["ScatterUpdate"], id="a-slice-of-positions-given-is-an-index-list"),
    pytest.param(_range_slice_model(5, 1, True, positions=["squeezed"]), _range_feeds(1, 4), ["SliceScatter"],
                 id="a-range-to-a-squeezed-dimension-is-a-slice"),
    pytest.param(_range_slice_model(5, 1, True, positions=["squeezed"], shape_start=-1), _range_feeds(0, 2), ["ScatterUpdate"],
                 id="a-range-to-another-dimension-is-an-index-list"),
    pytest.param(_range_slice_model(5, 1, True, positions=["of_updates"]), _range_feeds(0, 2), ["ScatterUpdate"],
                 id="a-range-to-another-tensor's-dimension-is-an-index-list"),
    pytest.param(_model([helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"], name="write"), helper.make_node("Relu", ["write_SliceScatter"], ["other"])],
                        [("data", FLOAT, [4, 5]), ("updates", FLOAT, [2, 5]), ("write_SliceScatter", FLOAT, [2])], [("output", FLOAT, [4, 5]), ("other", FLOAT, [2])],
                        {"indices": [[1], [2]]}),
                 {"data": RNG.standard_normal((4, 5), np.float32), "updates": RNG.standard_normal((2, 5), np.float32), "write_SliceScatter": np.array([-1, 1], np.float32)},
                 ["SliceScatter", "Relu"], id="a-name-the-model-uses-already"),
    pytest.param(_model([helper.make_node("Transpose", ["data"], ["data_t"], perm=[1, 0]), helper.make_node("Transpose", ["updates"], ["updates_t"], perm=[1, 0]),
                         helper.make_node("Unsqueeze", ["indices"], ["coordinates"], axes=[-1]), helper.make_node("ScatterND", ["data_t", "coordinates", "updates_t"], ["written_t"]),
                         helper.make_node("Transpose", ["written_t"], ["output"], perm=[1, 0])],
                        [("data", FLOAT, [3, 5]), ("updates", FLOAT, [3, 2]), ("indices", INT64, [2])], [("output", FLOAT, [3, 5])], opsets={"": 11}),
                 {"data": DATA, "updates": UPDATES, "indices": np.array([-1, 2])}, ["ScatterUpdate", "Less", "Less", "Add", "Where", "Where"], id="opset-11-unsqueeze-axes-attribute"),
    pytest.param(_model([helper.make_node("ScatterND", ["data", "indices", "updates"], ["written"]), helper.make_node("Relu", ["written"], ["a"]),
                         helper.make_node("Neg", ["written"], ["b"]), helper.make_node("Add", ["a", "b"], ["output"])],
                        [("data", FLOAT, [4, 5]), ("updates", FLOAT, [2, 5])], [("output", FLOAT, [4, 5])], {"indices": [[1], [3]]}),
                 {"data": RNG.standard_normal((4, 5), np.float32), "updates": RNG.standard_normal((2, 5), np.float32)}, ["SliceScatter", "Relu", "Neg", "Add"],
                 id="a-write-read-twice-downstream"),
    pytest.param(_model([helper.make_node("ScatterND", ["data", "indices", "updates"], ["written"]),
                         helper.make_node("SliceScatter", ["written", "row", "s", "e", "st"], ["output"], domain="trt_scatter", inplace=0)],
                        [("data", FLOAT, [4, 5]), ("updates", FLOAT, [2, 5]), ("row", FLOAT, [1, 5])], [("output", FLOAT, [4, 5])],
                        {"indices": [[1], [3]], "s": [0], "e": [1], "st": [1]}),  # no opset import for trt_scatter: ONNX cannot infer shapes
                 {"data": RNG.standard_normal((4, 5), np.float32), "updates": RNG.standard_normal((2, 5), np.float32), "row": np.ones((1, 5), np.float32)},
                 ["SliceScatter", "SliceScatter"], id="a-model-onnx-cannot-infer"),
])
def test_rewrites_less_common_forms_to_the_same_values(model, feeds, ops):
    rewritten, report = _run_both(model, feeds)
    counted = {*ops, "SliceScatter", "ScatterUpdate", "Transpose", "Identity", *SCATTER_OPS}  # the rest computes indices as the original did
    assert sorted(n.op_type for n in rewritten.graph.node if n.op_type in counted) == sorted(ops), "\n".join(report.lines())
    assert report.rewritten and not report.left


@pytest.mark.parametrize("limit", [2, 4])  # 2: not even the Shape is folded; 4: the Range's bounds are, not the Range
def test_tensors_too_large_to_fold_are_read_from_their_nodes(monkeypatch, limit):
    """The Range over a static dimension, too large to fold: still a slice, known from its bounds."""
    from trt_scatter.model import tensors

    monkeypatch.setattr(tensors, "FOLD_LIMIT", limit)
    rewritten, report = _run_both(_range_slice_model(5, 1, False), _range_feeds(1, 4))
    assert [n.op_type for n in _plugins(rewritten)] == ["SliceScatter"], "\n".join(report.lines())


def _accumulation(fill=None, read_twice=False, rows=None):
    """Add(x, ScatterND(ConstantOfShape(Shape(x)), index rows, values)) as PyTorch's TorchScript exporter writes
    index_put(accumulate=True); ``fill``: ConstantOfShape's value; ``read_twice``: the scatter is an output too; ``rows``:
    constant index rows (else a graph input)."""
    value = {} if fill is None else {"value": numpy_helper.from_array(np.array([fill], np.float32))}
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("ConstantOfShape", ["shape"], ["zeros"], **value),
             helper.make_node("ScatterND", ["zeros", "rows", "values"], ["scattered"], name="scatter"), helper.make_node("Add", ["x", "scattered"], ["y"])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, ["n", 2])]
    if read_twice:
        outputs.append(helper.make_tensor_value_info("scattered", TensorProto.FLOAT, ["n", 2]))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2]), helper.make_tensor_value_info("values", TensorProto.FLOAT, [3, 2])]
    if rows is None:
        inputs.append(helper.make_tensor_value_info("rows", TensorProto.INT64, [3, 1]))
    graph = helper.make_graph(nodes, "g", inputs, outputs, [] if rows is None else [numpy_helper.from_array(np.array(rows), "rows")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("fill, read_twice, rows, accumulated", [
    (None, False, None, True), (0.0, False, None, True), (1.0, False, None, False), (None, True, None, False),
    (None, False, [[3], [0], [1]], False), (None, False, [[3], [0], [3]], True)],
    ids=["zeros", "zeros-given", "ones", "the-scatter-read-elsewhere", "constant-distinct-rows", "constant-repeated-rows"])
def test_an_add_of_a_scatter_of_zeros_becomes_a_sum_only_where_it_is_one(fill, read_twice, rows, accumulated):
    """Add(x, ScatterND(zeros, I, U)) is x with U added at I: ScatterNDReduce(x, I, U, add), which sums repeated rows as
    PyTorch does. Not where the scatter starts from other values, nor where another reader needs the scatter itself,
    nor where constant rows repeat nothing (a write of those rows then, as before: a slice or an index list)."""
    model = _accumulation(fill, read_twice, rows)
    rewritten, report = rewrite(model)
    assert any(change.pattern == "Add(ScatterND of zeros)" for change in report.rewritten) == accumulated, report.lines()
    x, values = np.arange(8, dtype=np.float32).reshape(4, 2), np.arange(1, 7, dtype=np.float32).reshape(3, 2)
    feeds = {"x": x, "values": values} | ({"rows": np.array([[3], [0], [-3]])} if rows is None else {})
    got = Reference(rewritten).run(feeds)
    if rows == [[3], [0], [3]]:  # repeated: PyTorch's sum (ONNX leaves the original undefined)
        np.testing.assert_array_equal(got["y"], x + np.array([[3, 4], [0, 0], [0, 0], [6, 8]], np.float32))
        return
    names = [value.name for value in model.graph.output]
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(names, feeds)  # distinct rows: defined in ONNX, and kept
    for name, value in zip(names, expected):
        np.testing.assert_array_equal(got[name], value, err_msg=name)


def test_an_add_of_a_scatter_of_zeros_with_rows_of_no_index_is_a_sum():
    """ScatterND indices of shape (3, 0): each row writes all of data, so the rows repeat every target (it was an internal
    error): the Add becomes the sum of the three into x."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("ConstantOfShape", ["shape"], ["zeros"]),
             helper.make_node("ScatterND", ["zeros", "rows", "values"], ["scattered"]), helper.make_node("Add", ["x", "scattered"], ["y"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 2]),
                                           helper.make_tensor_value_info("values", TensorProto.FLOAT, [3, 4, 2])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [4, 2])], [numpy_helper.from_array(np.zeros((3, 0), np.int64), "rows")])
    rewritten, report = rewrite(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]))
    assert [change.pattern for change in report.rewritten] == ["Add(ScatterND of zeros)"], report.lines()
    x, values = np.arange(8, dtype=np.float32).reshape(4, 2), np.ones((3, 4, 2), np.float32)
    np.testing.assert_array_equal(Reference(rewritten).run({"x": x, "values": values})["y"], x + 3)


def test_a_per_row_write_broadcast_at_run_time_is_one_node_only_where_the_positions_are_as_many_as_the_batch():
    """The TorchScript exporter with a dynamic batch computes a per-row write's coordinates as Expand(arange(B)) and
    Expand(pos) to the shape of their broadcast: one CacheScatter where pos's length is the batch's symbol; where it has
    a symbol of its own, one row and several positions would be a write of several positions of that row, so it is left."""
    original = onnx.load(FIXTURES / "kv_rows_bshd.torchscript.dynamic.onnx")
    model, report = rewrite(original)
    assert [node.op_type for node in _plugins(model)] == ["CacheScatter"] and not report.left
    other = onnx.ModelProto()
    other.CopyFrom(original)
    (pos,) = [value for value in other.graph.input if value.name == "pos"]
    pos.type.tensor_type.shape.dim[0].dim_param = "positions"
    model, report = rewrite(other)
    assert not _plugins(model) and [(change.pattern, change.detail) for change in report.left] == [("ScatterND", "indices known only at run time that are not a slice range or an index list")]


@pytest.mark.parametrize("positions", [1, 3, "P"])
def test_a_position_broadcast_to_every_batch_row_stays_broadcast_in_the_cache_write(positions):
    """ScatterND rows (b, Expand(pos, [3])[b]): with one position for the batch of 3 the Expand repeats it, so the write
    indices are the Expand's 3 values, not pos (a CacheScatter of write_indices (1,), which the spec refuses); also where
    a value_info claims pos has 3 (``P``: an Identity said to give (3,), fed one)."""
    from onnx import TensorProto, helper, numpy_helper

    def constant(name, value):
        return helper.make_node("Constant", [], [name], value=numpy_helper.from_array(np.asarray(value, np.int64), name))

    nodes = [constant("rows", np.arange(3).reshape(3, 1)), constant("shape", [3]), constant("last", [-1]),
             helper.make_node("Identity", ["pos"], ["claimed"]),
             helper.make_node("Expand", ["claimed", "shape"], ["expanded"]), helper.make_node("Unsqueeze", ["expanded", "last"], ["column"]),
             helper.make_node("Concat", ["rows", "column"], ["indices"], axis=-1), helper.make_node("ScatterND", ["cache", "indices", "new"], ["output"])]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("cache", TensorProto.FLOAT, (3, 6, 2, 4)),
                                           helper.make_tensor_value_info("new", TensorProto.FLOAT, (3, 2, 4)),
                                           helper.make_tensor_value_info("pos", TensorProto.INT64, (positions,))],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, (3, 6, 2, 4))],
                              value_info=[helper.make_tensor_value_info("claimed", TensorProto.INT64, (3,))] if positions == "P" else [])
    original = onnx.shape_inference.infer_shapes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)]))
    model, report = rewrite(original)
    assert [node.op_type for node in _plugins(model)] == ["CacheScatter"] and not report.left
    rng = np.random.default_rng(0)
    feeds = {"cache": rng.standard_normal((3, 6, 2, 4)).astype(np.float32), "new": rng.standard_normal((3, 2, 4)).astype(np.float32),
             "pos": np.array([2, 5, 0][:1 if positions == "P" else positions])}
    np.testing.assert_array_equal(Reference(model).run(feeds)["output"], onnxruntime.InferenceSession(original.SerializeToString()).run(None, feeds)[0])


@pytest.mark.parametrize("data, indices", [([5], [0]), ([5, 0], [2, 0]), ([5, 3], [0, 3])])
def test_a_scatter_elements_of_no_index_is_left(data, indices):
    """Constant indices with no element: the node writes nothing, and is left as it is (numpy's reshape of an
    empty array raised from inside the pass)."""
    nodes = [helper.make_node("ScatterElements", ["x", "indices", "src"], ["out"], axis=0, name="write")]
    model = _model(nodes, [("x", FLOAT, data), ("src", FLOAT, indices)], [("out", FLOAT, data)],
                   {"indices": np.zeros(indices, np.int64)})
    rewritten, report = rewrite(model)
    assert rewritten.SerializeToString() == model.SerializeToString()
    assert list(report.lines()) == ["left       write: ScatterElements: no index (the node writes nothing)"]


def test_a_rewritten_model_keeps_its_doc_strings_domain_and_version():
    """onnx-graphsurgeon's round trip dropped the model's doc string, domain and version and every node's doc string."""
    nodes = [helper.make_node("Relu", ["x"], ["data"], doc_string="the input, rectified"),
             helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"], doc_string="a slice write")]
    model = _model(nodes, [("x", FLOAT, [4, 5]), ("updates", FLOAT, [2, 5])], [("output", FLOAT, [4, 5])], {"indices": [[1], [2]]})
    model.doc_string, model.domain, model.model_version, model.graph.doc_string = "a model", "org.example", 7, "its graph"
    rewritten, report = rewrite(model)
    assert report.rewritten
    assert (rewritten.doc_string, rewritten.domain, rewritten.model_version, rewritten.graph.doc_string) == ("a model", "org.example", 7, "its graph")
    assert {node.op_type: node.doc_string for node in rewritten.graph.node}["Relu"] == "the input, rectified"


def test_a_rewritten_model_keeps_the_metadata_of_its_nodes_graph_and_initializers():
    """The dynamo exporter writes metadata_props on every node (its namespace, class hierarchy, stack trace) and a
    value_info with metadata for each initializer: onnx-graphsurgeon's round trip dropped them all, unrelated nodes'
    too, whenever anything was rewritten."""
    nodes = [helper.make_node("Add", ["x", "bias"], ["data"]), helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])]
    model = _model(nodes, [("x", FLOAT, [4, 5]), ("updates", FLOAT, [2, 5])], [("output", FLOAT, [4, 5])], {"indices": [[1], [2]]})
    model.graph.initializer.append(numpy_helper.from_array(np.ones((4, 5), np.float32), "bias"))
    helper.set_metadata_props(model.graph.node[0], {"namespace": "encoder.layer0", "stack_trace": "model.py:12"})
    bias = helper.make_tensor_value_info("bias", TensorProto.FLOAT, [4, 5])
    helper.set_metadata_props(bias, {"pkg.torch.export.graph_signature.InputSpec.kind": "PARAMETER"})
    model.graph.value_info.append(bias)
    helper.set_metadata_props(model.graph, {"exporter": "dynamo"})
    rewritten, report = rewrite(model)
    assert report.rewritten
    [add] = [node for node in rewritten.graph.node if node.op_type == "Add"]
    assert {p.key: p.value for p in add.metadata_props} == {"namespace": "encoder.layer0", "stack_trace": "model.py:12"}
    assert [{p.key: p.value for p in v.metadata_props} for v in rewritten.graph.value_info if v.name == "bias"] == [
        {"pkg.torch.export.graph_signature.InputSpec.kind": "PARAMETER"}]
    assert {p.key: p.value for p in rewritten.graph.metadata_props} == {"exporter": "dynamo"}


def test_doc_strings_go_back_to_the_nodes_that_had_them_when_a_first_output_is_left_out():
    """Two nodes whose first output is empty (an LSTM's Y left out) both got the first one's doc string."""
    nodes = [helper.make_node("Split", ["x"], ["", "first"], axis=0, num_outputs=2, doc_string="one"),
             helper.make_node("Split", ["x"], ["", "second"], axis=0, num_outputs=2, doc_string="two"),
             helper.make_node("Add", ["first", "second"], ["data"]),
             helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])]
    model = _model(nodes, [("x", FLOAT, [8, 5]), ("updates", FLOAT, [2, 5])], [("output", FLOAT, [4, 5])], {"indices": [[1], [2]]})
    rewritten, report = rewrite(model)
    assert report.rewritten
    assert [node.doc_string for node in rewritten.graph.node if node.op_type == "Split"] == ["one", "two"]


def _dynamo_scatter_reduce_without_self(reduction, fill):
    """``x.scatter_reduce(1, i, s, reduction, include_self=False)`` as the dynamo exporter writes it: a plain
    ScatterElements of the reduction's identity at every index (a ConstantOfShape like the indices), then the
    ScatterElements that reduces into it."""
    nodes = [helper.make_node("ConstantOfShape", ["shape"], ["fill"], value=numpy_helper.from_array(np.array([fill], np.float32))),
             helper.make_node("ScatterElements", ["x", "i", "fill"], ["filled"], axis=1, reduction="none"),
             helper.make_node("ScatterElements", ["filled", "i", "s"], ["out"], axis=1, reduction=reduction)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6]),
                                           helper.make_tensor_value_info("i", TensorProto.INT64, [4, 7]),
                                           helper.make_tensor_value_info("s", TensorProto.FLOAT, [4, 7])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 6])],
                              [numpy_helper.from_array(np.array([4, 7], np.int64), "shape")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])


@pytest.mark.parametrize("reduction, fill, combine", [("add", 0.0, np.add), ("mul", 1.0, np.multiply),
                                                      ("max", -np.inf, np.maximum), ("min", np.inf, np.minimum)])
def test_a_fill_of_the_identity_then_a_reduction_is_one_reduction_without_self(reduction, fill, combine):
    """7 indices into 6 columns repeat targets: the plain fill was left to TensorRT's IScatterLayer, which refuses more
    indices than data on the axis ("Indices dimensions must be less than data dimensions"), and the data loader found
    no distinct indices. The pair is PyTorch's include_self=False: one ScatterElementsReduce."""
    model = _dynamo_scatter_reduce_without_self(reduction, fill)
    rewritten, report = rewrite(model)
    [node] = [node for node in rewritten.graph.node if node.op_type.startswith("Scatter")]
    assert (node.op_type, {a.name: helper.get_attribute_value(a) for a in node.attribute if a.name != "inplace"}) == (
        "ScatterElementsReduce", {"axis": 1, "reduction": reduction.encode(), "include_self": 0}), report.lines()
    rng = np.random.default_rng(3)
    feeds = {"x": rng.standard_normal((4, 6)).astype(np.float32), "i": rng.integers(0, 6, (4, 7)), "s": rng.standard_normal((4, 7)).astype(np.float32)}
    expected = feeds["x"].copy()  # PyTorch's include_self=False, written out: each hit target combines its updates only
    for row in range(4):
        for column in set(feeds["i"][row].tolist()):
            expected[row, column] = combine.reduce(feeds["s"][row][feeds["i"][row] == column])
    np.testing.assert_allclose(Reference(rewritten).run(feeds)["out"], expected, rtol=1e-6)
    np.testing.assert_allclose(onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)[0], expected, rtol=1e-6)


def test_a_fill_of_another_value_or_read_elsewhere_or_at_other_indices_is_not_fused():
    """A fill of 2 before an add is not the identity, nor is a fill given at run time; a fill that the graph gives out, or
    that another node reads, must stay as it is; a fill at other indices zeroes targets the reduction does not reach."""
    given_out = _dynamo_scatter_reduce_without_self("add", 0.0)
    given_out.graph.output.append(helper.make_tensor_value_info("filled", TensorProto.FLOAT, [4, 6]))
    read_twice = _dynamo_scatter_reduce_without_self("add", 0.0)
    read_twice.graph.node.append(helper.make_node("Relu", ["filled"], ["relu"]))
    read_twice.graph.output.append(helper.make_tensor_value_info("relu", TensorProto.FLOAT, [4, 6]))
    elsewhere = _dynamo_scatter_reduce_without_self("add", 0.0)
    elsewhere.graph.input.append(helper.make_tensor_value_info("j", TensorProto.INT64, [4, 7]))
    elsewhere.graph.node[1].input[1] = "j"
    given = _dynamo_scatter_reduce_without_self("add", 0.0)
    given.graph.input.append(helper.make_tensor_value_info("f", TensorProto.FLOAT, [4, 7]))
    given.graph.node[1].input[2] = "f"
    for model in (_dynamo_scatter_reduce_without_self("add", 2.0), given_out, read_twice, elsewhere, given):
        rewritten, _ = rewrite(model)
        assert [node.op_type for node in rewritten.graph.node if node.op_type.startswith("Scatter")] == ["ScatterElements", "ScatterElementsReduce"]
        reducing = next(node for node in rewritten.graph.node if node.op_type == "ScatterElementsReduce")
        assert {a.name: helper.get_attribute_value(a) for a in reducing.attribute}["include_self"] == 1


def test_dynamos_mean_is_left_with_its_reason():
    """The dynamo exporter's scatter_reduce(mean): zeros at the indices, then a plain ScatterElements, the last update of
    a target winning. The report said "indices known only at run time", which told nothing of the wrong mean."""
    _, report = rewrite(_dynamo_scatter_reduce_without_self("none", 0.0))
    assert [change.detail for change in report.left if change.pattern == "ScatterElements"][-1] == (
        "a plain write into zeros at the same indices, as the dynamo exporter writes scatter_reduce(mean): the last update of a "
        "target wins where PyTorch's mean averages them (trt_scatter.torch.export writes the mean)")


def test_dynamos_mean_over_an_expanded_index_list_is_left_whole():
    """The same mean along axis 0 of an index list expanded over the columns (PyG's form) with static shapes: the fill,
    an index list the rewrite reads, became a ScatterUpdate first, so the write after it no longer looked like the
    mean and became one too, without a word (ScatterUpdate's repeated indices are undefined; PyTorch averages them)."""
    nodes = [helper.make_node("Unsqueeze", ["dst", "one"], ["column"]), helper.make_node("Expand", ["column", "shape"], ["i"]),
             helper.make_node("ConstantOfShape", ["shape"], ["fill"], value=numpy_helper.from_array(np.array([0.0], np.float32))),
             helper.make_node("ScatterElements", ["x", "i", "fill"], ["filled"], axis=0),
             helper.make_node("ScatterElements", ["filled", "i", "m"], ["out"], axis=0)]
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [4, 6]), helper.make_tensor_value_info("dst", TensorProto.INT64, [7]),
                                           helper.make_tensor_value_info("m", TensorProto.FLOAT, [7, 6])],
                              [helper.make_tensor_value_info("out", TensorProto.FLOAT, [4, 6])],
                              [numpy_helper.from_array(np.array([1], np.int64), "one"), numpy_helper.from_array(np.array([7, 6], np.int64), "shape")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    rewritten, report = rewrite(model)
    assert not _plugins(rewritten) and not report.rewritten, list(report.lines())
    assert [change.node for change in report.left if "PyTorch's mean averages them" in change.detail] == ["filled", "out"], list(report.lines())


def test_a_bfloat16_model_is_rewritten_without_onnx_graphsurgeons_note():
    """onnx-graphsurgeon, which the rewrite reads the model with, noted on its first bfloat16 tensor (once per process,
    hence a fresh interpreter) that it keeps ONNX's type for it: a line of its own in every bfloat16 export."""
    code = (
        "from onnx import TensorProto, helper\n"
        "from trt_scatter.passes.rewrite import rewrite\n"
        "x = helper.make_tensor_value_info('x', TensorProto.BFLOAT16, [2])\n"
        "y = helper.make_tensor_value_info('y', TensorProto.BFLOAT16, [2])\n"
        "model = helper.make_model(helper.make_graph([helper.make_node('Identity', ['x'], ['y'])], 'g', [x], [y]))\n"
        "print(list(rewrite(model)[1].lines()))\n"
    )
    result = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, timeout=120)
    assert result.returncode == 0 and result.stderr == "" and result.stdout.strip() == "['no scatter pattern in the model']", result.stdout + result.stderr


def test_an_attribute_onnx_graphsurgeon_drops_is_refused_not_dropped():
    """A Constant's sparse_value: onnx-graphsurgeon skips that attribute type (in a warning), and the rewritten model held
    a Constant without a value, which ONNX's checker and onnxruntime refuse, while rewrite exited 0."""
    from trt_scatter import onnx_models
    from trt_scatter.model import ModelError

    model = onnx_models.scatter_elements_model([4, 6], [2, 6], 0, reduction="add")
    sparse = helper.make_sparse_tensor(helper.make_tensor("values", TensorProto.FLOAT, [1], [5.0]), helper.make_tensor("at", TensorProto.INT64, [1], [1]), [3])
    model.graph.node.append(helper.make_node("Constant", [], ["sparse"], sparse_value=sparse))
    model.graph.output.append(helper.make_tensor_value_info("sparse", TensorProto.FLOAT, [3]))
    with pytest.raises(ModelError, match=r"^Constant node \(output 'sparse'\): attribute 'sparse_value' is of type SPARSE_TENSOR, which trt-scatter "
                                         r"rewrite cannot carry into the model it writes \(onnx-graphsurgeon, which it rewrites with, drops it\): "
                                         r"give that value another form \(a Constant's dense 'value'\)$"):
        rewrite(model)
    del model.graph.node[-1], model.graph.output[-1]
    assert [node.op_type for node in rewrite(model)[0].graph.node] == ["ScatterElementsReduce"]


@pytest.mark.parametrize("opset", [11, 13, 16])
def test_updates_that_an_old_reshape_leaves_unshaped_are_declared_so_the_rewrite_lowers(opset):
    """``x[idx] = y`` as PyTorch's TorchScript exporter writes it: y reshaped to Concat(Shape(idx), Shape(x)[1:]). ONNX's
    Reshape before opset 14 infers no shape from a computed one, so the ScatterUpdate of the rewrite had updates of no
    known rank, and lower and check refused it; the rule of the ScatterND it replaces gives that shape."""
    from trt_scatter.passes.lower import lower

    axes = {"axes": [1]} if opset < 13 else {}
    unsqueeze = helper.make_node("Unsqueeze", ["idx"] + ([] if opset < 13 else ["one"]), ["rows"], **axes)
    nodes = [helper.make_node("Shape", ["idx"], ["n"]), unsqueeze, helper.make_node("Shape", ["x"], ["xs"]),
             helper.make_node("Slice", ["xs", "one", "end"], ["tail"]), helper.make_node("Concat", ["n", "tail"], ["shape"], axis=0),
             helper.make_node("Reshape", ["y", "shape"], ["values"]), helper.make_node("ScatterND", ["x", "rows", "values"], ["output"])]
    graph = helper.make_graph(nodes, "put", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [5, 3]),
                                             helper.make_tensor_value_info("idx", TensorProto.INT64, [2]),
                                             helper.make_tensor_value_info("y", TensorProto.FLOAT, [2, 3])],
                              [helper.make_tensor_value_info("output", TensorProto.FLOAT, [5, 3])],
                              [numpy_helper.from_array(np.array([1], np.int64), "one"), numpy_helper.from_array(np.array([9], np.int64), "end")])
    original = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model, report = rewrite(original)
    assert [node.op_type for node in model.graph.node if node.domain == "trt_scatter"] == ["ScatterUpdate"], list(report.lines())
    feeds = {"x": np.arange(15, dtype=np.float32).reshape(5, 3), "idx": np.array([4, 1]), "y": -np.ones((2, 3), np.float32)}
    expected = onnxruntime.InferenceSession(original.SerializeToString()).run(["output"], feeds)[0]
    lowered = lower(model)
    np.testing.assert_array_equal(onnxruntime.InferenceSession(lowered.SerializeToString()).run(["output"], feeds)[0], expected)
    np.testing.assert_array_equal(Reference(model).run(feeds)["output"], expected)


# ---- guards of the matchers: forms that come close to a pattern ----------------------------------


def _index_copy(shape_of="data", where_factor=None, unsqueeze_axes=(1,), index_type=INT64, data_dims=(4, 5), updates_dims=("k", "m")):
    """The TorchScript exporter's ``x.index_copy(0, I, u)``: ScatterElements(x, Expand(Unsqueeze(I, [1]), S), u) with
    S = ScatterElements(Shape(x), [0], Shape(I)); ``shape_of``: whose Shape S writes into (``"const"``: a constant shape),
    ``where_factor``: S behind ``Where(Equal(S, f * c), c, S)`` (c ones; f = -1 is the exporter's, which changes nothing)."""
    nodes = [helper.make_node("Shape", ["index"], ["index_shape"]), helper.make_node("Unsqueeze", ["index", "axes"], ["column"])]
    if shape_of != "const":
        nodes.append(helper.make_node("Shape", [shape_of], ["data_shape"]))
    nodes.append(helper.make_node("ScatterElements", ["data_shape", "zero", "index_shape"], ["shape"], axis=0))
    expanded_to = "shape"
    if where_factor is not None:
        nodes += [helper.make_node("ConstantOfShape", ["two"], ["ones"], value=numpy_helper.from_array(np.array([1], np.int64))),
                  helper.make_node("Mul", ["ones", "factor"], ["negated"]), helper.make_node("Equal", ["shape", "negated"], ["unknown"]),
                  helper.make_node("Where", ["unknown", "ones", "shape"], ["shape_kept"])]
        expanded_to = "shape_kept"
    nodes += [helper.make_node("Expand", ["column", expanded_to], ["indices"]), helper.make_node("ScatterElements", ["data", "indices", "u"], ["output"], axis=0)]
    constants = {"zero": [0], "axes": list(unsqueeze_axes), "two": [2], "factor": where_factor or 0, **({"data_shape": list(data_dims)} if shape_of == "const" else {})}
    inputs = [("data", FLOAT, list(data_dims)), ("index", index_type, ["k"]), ("u", FLOAT, list(updates_dims)), ("other", FLOAT, [3, 3])]
    return _model(nodes, inputs, [("output", FLOAT, list(data_dims))], constants)


@pytest.mark.parametrize("model, reason", [
    pytest.param(_index_copy(), None, id="the-exporter's-form"),
    pytest.param(_index_copy(where_factor=-1), None, id="behind-the-exporter's-where"),
    pytest.param(_index_copy(index_type=TensorProto.INT32, data_dims=("n", 5)), None, id="int32-into-a-dynamic-axis"),
    pytest.param(_index_copy(shape_of="other"), "updates not shown to span data's other axes", id="the-shape-of-another-tensor"),
    pytest.param(_index_copy(shape_of="const"), "updates not shown to span data's other axes", id="a-constant-shape"),
    pytest.param(_index_copy(where_factor=2), "updates not shown to span data's other axes", id="behind-a-where-that-changes-a-dimension"),
    pytest.param(_index_copy(unsqueeze_axes=(0,)), "not an index list expanded along the axis", id="unsqueezed-on-the-written-axis"),
    pytest.param(_index_copy(shape_of="const", updates_dims=(3, 5)), "an index list whose length is not the updates'", id="as-long-as-nothing-says"),
])
def test_an_index_copy_is_an_index_list_only_where_its_shape_spans_data(model, reason):
    """ScatterElements of an index list expanded to data's shape with the list's length on the axis: one ScatterUpdate
    (an int32 list into a dynamic axis wraps against the axis's size cast to int32). Where the Expand's shape is another
    tensor's, a constant, or behind a Where that may change a dimension, nothing says that the updates span data's other
    axes; an index list unsqueezed on the written axis, or of a length nothing ties to the updates', is left too."""
    rewritten, report = rewrite(model)
    if reason is not None:
        assert rewritten.SerializeToString() == model.SerializeToString() and not report.rewritten
        assert [reason in change.detail for change in report.left if change.node == "output"] == [True], list(report.lines())
        return
    assert [node.op_type for node in _plugins(rewritten)] == ["ScatterUpdate"], list(report.lines())
    index_type = helper.tensor_dtype_to_np_dtype(model.graph.input[1].type.tensor_type.elem_type)
    feeds = {"data": RNG.standard_normal((4, 5), np.float32), "index": np.array([3, -4, 1], index_type), "u": RNG.standard_normal((3, 5), np.float32),
             "other": np.zeros((3, 3), np.float32)}
    np.testing.assert_array_equal(Reference(rewritten).run(feeds)["output"], _outputs(model, feeds)["output"])


def _masked_row_write(values="broadcast", mask_dims=(4,), opset=18, gather="rows"):
    """``x[mask] = ...`` into x (4, 5), the values ``U`` of ScatterND(x, Transpose(NonZero(mask)), U): ``"broadcast"``
    Expand(v (5,), Shape(x[mask])), ``"unshaped"`` the same of a v of unknown shape, ``"computed"`` x[mask] + w with w of
    unknown shape, or x[mask] + w (w (5,)) with x[mask] ``gather``-ed another way (``"given"``: at rows given as an input,
    ``"other"``: from y of another shape, ``"unshaped"``: from y of unknown shape, ``"batched"``: with batch_dims 1)."""
    nodes = [helper.make_node("NonZero", ["mask"], ["nonzero"]), helper.make_node("Transpose", ["nonzero"], ["rows"], perm=[1, 0])]
    inputs = [("x", FLOAT, [4, 5]), ("mask", TensorProto.BOOL, list(mask_dims))]
    if values in ("broadcast", "unshaped"):
        nodes += [helper.make_node("GatherND", ["x", "rows"], ["picked"]), helper.make_node("Shape", ["picked"], ["picked_shape"]),
                  helper.make_node("Expand", ["v", "picked_shape"], ["updates"])]
        inputs.append(("v", FLOAT, [5] if values == "broadcast" else None))
    else:
        source, index = {"given": ("x", "given"), "other": ("y", "rows"), "unshaped": ("y", "rows")}.get(gather, ("x", "rows"))
        attributes = {"batch_dims": 1} if gather == "batched" else {}
        nodes += [helper.make_node("GatherND", [source, index], ["picked"], **attributes), helper.make_node("Add", ["picked", "w"], ["updates"])]
        inputs.append(("w", FLOAT, None if values == "computed" else [5]))
        inputs += {"given": [("given", INT64, ["n", 1])], "other": [("y", FLOAT, [6, 5])], "unshaped": [("y", FLOAT, None)]}.get(gather, [])
    nodes.append(helper.make_node("ScatterND", ["x", "rows", "updates"], ["output"]))
    return _model(nodes, inputs, [("output", FLOAT, [4, 5])], opsets={"": opset})


NEITHER = "a masked write whose values are neither broadcast, nor computed element by element from the masked elements, nor a source's first rows"


@pytest.mark.parametrize("model, detail", [
    pytest.param(_masked_row_write(), "values broadcast", id="a-row-broadcast-through-a-row-mask"),
    pytest.param(_masked_row_write(opset=11), "values broadcast", id="at-opset-11"),
    pytest.param(_masked_row_write("unshaped"), None, id="an-expand-of-values-of-unknown-shape"),
    pytest.param(_masked_row_write("computed"), None, id="computed-with-a-tensor-of-unknown-shape"),
    pytest.param(_masked_row_write("gathered", gather="given"), None, id="gathered-at-other-rows"),
    pytest.param(_masked_row_write("gathered", gather="other"), None, id="gathered-from-another-shape"),
    pytest.param(_masked_row_write("gathered", gather="unshaped"), None, id="gathered-from-an-unknown-shape"),
    pytest.param(_masked_row_write("gathered", gather="batched"), None, id="gathered-with-batch-dims"),
])
def test_a_masked_row_write_computes_from_the_masked_rows_only_where_it_gathers_them(model, detail):
    """A row mask (4,) over x (4, 5): broadcast values are a Where on the mask unsqueezed over the rows (an attribute's
    axes at opset 11), equal to onnxruntime's with every row and one row masked. Values of unknown shape, values computed
    from rows that are not x's masked rows (gathered at other rows, from a tensor of another or an unknown shape, with
    batch dims), or with a tensor of unknown shape, are none of the forms: the write is left, with the reason."""
    rewritten, report = rewrite(model)
    if detail is None:
        assert rewritten.SerializeToString() == model.SerializeToString() and [change.detail for change in report.left] == [NEITHER]
        return
    assert [change.detail for change in report.rewritten] == [detail], list(report.lines())
    onnx.checker.check_model(rewritten, full_check=True)
    for rows in ([0, 1, 2, 3], [2], []):
        feeds = {"x": RNG.standard_normal((4, 5), np.float32), "mask": np.isin(np.arange(4), rows), "v": RNG.standard_normal(5).astype(np.float32)}
        np.testing.assert_array_equal(onnxruntime.InferenceSession(rewritten.SerializeToString()).run(None, feeds)[0], _outputs(model, feeds)["output"])


RUN_TIME = "indices known only at run time that are not a slice range or an index list"


def _custom_valued_row_mask_model():
    """PyTorch's TorchScript translation of ``x[mask] = v`` with v an op's output of no known type or shape."""
    model = _stock_row_mask_model((5,))
    model.graph.node.insert(0, helper.make_node("Foo", ["v"], ["v_custom"], domain="custom"))
    next(node for node in model.graph.node if node.op_type == "Reshape").input[0] = "v_custom"
    model.opset_import.append(helper.make_opsetid("custom", 1))
    return model


def _unshaped_updates(index_dims):
    """ScatterND(x (5, 3), indices of ``index_dims``, Reshape(y, Shape(y))): at opset 13 the Reshape infers no shape."""
    nodes = [helper.make_node("Shape", ["y"], ["y_shape"]), helper.make_node("Reshape", ["y", "y_shape"], ["values"]),
             helper.make_node("ScatterND", ["x", "indices", "values"], ["output"])]
    return _model(nodes, [("x", FLOAT, [5, 3]), ("indices", INT64, list(index_dims)), ("y", FLOAT, [2, 3])], [("output", FLOAT, [5, 3])], opsets={"": 13})


@pytest.mark.parametrize("model, reason", [
    pytest.param(_model([helper.make_node("Concat", ["a", "b"], ["indices"], axis=-1), helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])],
                        [("data", FLOAT, [3, 5]), ("a", INT64, [3, 1]), ("b", INT64, [3, 1]), ("updates", FLOAT, [3])], [("output", FLOAT, [3, 5])]),
                 RUN_TIME, id="rows-of-two-columns-given"),
    pytest.param(_model([helper.make_node("Concat", ["a", "b"], ["indices"], axis=-1), helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])],
                        [("data", FLOAT, [3, 5, 4]), ("a", INT64, [3, 2, 1]), ("b", INT64, [3, 2, 1]), ("updates", FLOAT, [3, 2, 4])], [("output", FLOAT, [3, 5, 4])]),
                 RUN_TIME, id="a-grid-of-two-columns-given"),
    pytest.param(_model([helper.make_node("Expand", ["first", "grid"], ["first_grid"]), helper.make_node("Expand", ["columns", "grid"], ["second_grid"]),
                         helper.make_node("Unsqueeze", ["first_grid", "minus_one"], ["first_column"]),
                         helper.make_node("Unsqueeze", ["second_grid", "minus_one"], ["second_column"]),
                         helper.make_node("Concat", ["first_column", "second_column"], ["indices"], axis=-1),
                         helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])],
                        [("data", FLOAT, [4, 5]), ("columns", INT64, [5]), ("updates", FLOAT, [3, 5])], [("output", FLOAT, [4, 5])],
                        {"first": [[3], [0], [1]], "grid": [3, 5], "minus_one": [-1]}),
                 RUN_TIME, id="a-grid-whose-constant-first-column-is-no-slice"),
    pytest.param(_model([helper.make_node("Transpose", ["pairs"], ["indices"], perm=[1, 0]), helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])],
                        [("data", FLOAT, [4, 5]), ("pairs", INT64, [2, 3]), ("updates", FLOAT, [3])], [("output", FLOAT, [4, 5])]),
                 RUN_TIME, id="a-transpose-of-no-nonzero"),
    *[pytest.param(_model([helper.make_node("NonZero", ["mask"], ["nonzero"]), helper.make_node("Transpose", ["nonzero"], ["indices"], perm=[1, 0]),
                           helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])],
                          [("data", FLOAT, [4, 5]), ("mask", TensorProto.BOOL, mask), ("updates", FLOAT, ["n"])], [("output", FLOAT, [4, 5])]),
                   "a masked write whose mask does not span data's leading axes", id=f"a-mask-of-shape-{mask}") for mask in ([3], [4, 5, 2])],
    pytest.param(_custom_valued_row_mask_model(), NEITHER, id="a-row-mask-write-of-values-of-no-known-type"),
    pytest.param(_model([helper.make_node("Expand", ["none", "length"], ["listed"]), helper.make_node("Unsqueeze", ["listed", "minus_one"], ["coordinates"]),
                         helper.make_node("ScatterND", ["data", "coordinates", "updates"], ["output"])],
                        [("data", FLOAT, [4, 5]), ("length", INT64, [1]), ("updates", FLOAT, [0, 5])], [("output", FLOAT, [4, 5])],
                        {"none": np.zeros(0, np.int64), "minus_one": [-1]}), NO_INDEX, id="an-empty-list-expanded-at-run-time"),
    pytest.param(_scatter_model("ScatterND", [[1], [2]], reduction="foo"), "reduction=foo (not one of ONNX's)", id="an-unknown-reduction"),
    pytest.param(_unshaped_updates([2, "k"]), RUN_TIME, id="unshaped-updates-and-indices-of-unknown-row-length"),
    pytest.param(_model([helper.make_node("Foo", ["i"], ["listed"], domain="custom"), helper.make_node("Unsqueeze", ["listed", "minus_one"], ["coordinates"]),
                         helper.make_node("ScatterND", ["data", "coordinates", "updates"], ["output"])],
                        [("data", FLOAT, [4, 5]), ("i", INT64, [2]), ("updates", FLOAT, [2, 5])], [("output", FLOAT, [4, 5])], {"minus_one": [-1]},
                        value_info=[helper.make_value_info("listed", helper.make_optional_type_proto(helper.make_tensor_type_proto(INT64, [2]))),
                                    helper.make_tensor_value_info("coordinates", INT64, [2, 1])], opsets={"": 18, "custom": 1}),
                 "indices of a type that is not a signed integer", id="indices-declared-optional"),
])
def test_leaves_forms_close_to_a_pattern(model, reason):
    """Index rows given as columns (no arange of the batch), a constant grid column that is no progression, a Transpose of
    something other than NonZero, a mask that does not span data, values of no known type, a reduction ONNX does not
    have, indices of unknown row length or of no declared type: each is left with its reason."""
    test_leaves_what_is_not_a_slice_or_an_index_list(model, reason)


def _cache_rows(perm):
    """A per-row write ScatterND(Transpose(cache (2, 3, 4, 5), perm), Concat(arange(2), pos), updates) at each batch row's
    position along the transposed axis 1."""
    shape = [[2, 3, 4, 5][p] for p in perm]
    nodes = [helper.make_node("Transpose", ["cache"], ["cache_t"], perm=list(perm)), helper.make_node("Unsqueeze", ["pos", "minus_one"], ["pos_column"]),
             helper.make_node("Concat", ["batch", "pos_column"], ["indices"], axis=-1),
             helper.make_node("ScatterND", ["cache_t", "indices", "updates"], ["written_t"]),
             helper.make_node("Transpose", ["written_t"], ["output"], perm=[int(p) for p in np.argsort(perm)])]
    return _model(nodes, [("cache", FLOAT, [2, 3, 4, 5]), ("pos", INT64, [2]), ("updates", FLOAT, [2, *shape[2:]])], [("output", FLOAT, [2, 3, 4, 5])],
                  {"batch": [[0], [1]], "minus_one": [-1]})


def _index_rows(data_dims, src_dims, unsqueeze_axes):
    """PyTorch's scatter_add(0, index.view(-1, 1, ...).expand_as(src), src) into data of ``data_dims``."""
    nodes = [helper.make_node("Unsqueeze", ["index", "axes"], ["column"]), helper.make_node("Shape", ["src"], ["src_shape"]),
             helper.make_node("Expand", ["column", "src_shape"], ["expanded"]),
             helper.make_node("ScatterElements", ["data", "expanded", "src"], ["output"], axis=0, reduction="add")]
    return _model(nodes, [("data", FLOAT, data_dims), ("index", INT64, ["e"]), ("src", FLOAT, src_dims)], [("output", FLOAT, data_dims)],
                  {"axes": list(unsqueeze_axes)})


def _feeds(**arrays):
    return {name: np.asarray(value, np.float32) if np.asarray(value).dtype.kind == "f" else np.asarray(value) for name, value in arrays.items()}


@pytest.mark.parametrize("model, feeds, plugins, detail", [
    pytest.param(_scatter_model("ScatterND", [[0, 2], [1, -1], [2, 0]], data_shape=(3, 5, 4)), _feeds(data=RNG.standard_normal((3, 5, 4)), updates=RNG.standard_normal((3, 4))),
                 ["CacheScatter"], "axis 1, one position per batch row", id="constant-rows-one-per-batch-row"),
    pytest.param(_scatter_model("ScatterND", [[1, 2], [0, 1], [2, 0]], data_shape=(3, 5, 4)), None, [], "single points", id="constant-rows-out-of-batch-order"),
    pytest.param(_scatter_model("ScatterND", [[0, 2], [1, -6], [2, 0]], data_shape=(3, 5, 4)), None, [], "single points", id="constant-rows-out-of-range"),
    pytest.param(_cache_rows([0, 2, 3, 1]), _feeds(cache=RNG.standard_normal((2, 3, 4, 5)), pos=[3, -1], updates=RNG.standard_normal((2, 5, 3))),
                 ["CacheScatter"], "axis 2, one position per batch row, negative positions wrapped", id="per-row-under-a-transpose-that-reorders-the-rest"),
    pytest.param(_cache_rows([0, 2, 1, 3]), _feeds(cache=RNG.standard_normal((2, 3, 4, 5)), pos=[3, -1], updates=RNG.standard_normal((2, 3, 5))),
                 ["CacheScatter"], "axis 2, one position per batch row, negative positions wrapped", id="per-row-under-a-transpose-that-keeps-the-rest"),
    pytest.param(_model([helper.make_node("Unsqueeze", ["index", "minus_one"], ["coordinates"]), helper.make_node("ScatterND", ["data", "coordinates", "updates"], ["output"])],
                        [("data", FLOAT, None), ("index", INT64, [2]), ("updates", FLOAT, None)], [("output", FLOAT, None)], {"minus_one": [-1]}),
                 _feeds(data=RNG.standard_normal((4, 5)), index=[-1, 1], updates=RNG.standard_normal((2, 5))), ["ScatterUpdate"], "axis 0, negative indices wrapped",
                 id="an-index-list-into-data-of-unknown-rank"),
    pytest.param(_model([helper.make_node("Shape", ["data"], ["shape"]), helper.make_node("Gather", ["shape", "zero"], ["n"], axis=0),
                         helper.make_node("CastLike", ["zero", "n"], ["start"]), helper.make_node("Range", ["start", "n", "one"], ["range"]),
                         helper.make_node("Slice", ["range", "begin", "end"], ["positions"]), helper.make_node("Unsqueeze", ["positions", "minus_one"], ["coordinates"]),
                         helper.make_node("ScatterND", ["data", "coordinates", "updates"], ["output"])],
                        [("data", FLOAT, ["n", 3]), ("updates", FLOAT, [2, 3])], [("output", FLOAT, ["n", 3])],
                        {"zero": 0, "one": 1, "begin": [1], "end": [3], "minus_one": [-1]}),
                 _feeds(data=RNG.standard_normal((5, 3)), updates=RNG.standard_normal((2, 3))), ["SliceScatter"], "axes 0",
                 id="a-slice-of-a-range-from-a-castlike-of-0"),
    pytest.param(_model([helper.make_node("Shape", ["y"], ["y_shape"]), helper.make_node("Reshape", ["y", "y_shape"], ["values"]),
                         helper.make_node("ScatterElements", ["x", "indices", "values"], ["output"], axis=0)],
                        [("x", FLOAT, [5, 3]), ("y", FLOAT, [2, 3])], [("output", FLOAT, [5, 3])], {"indices": [[1, 1, 1], [3, 3, 3]]}, opsets={"": 13}),
                 _feeds(x=RNG.standard_normal((5, 3)), y=RNG.standard_normal((2, 3))), ["SliceScatter"], "axes 0", id="scatter-elements-of-updates-an-old-reshape-leaves-unshaped"),
    pytest.param(_model([helper.make_node("Expand", ["index", "three"], ["listed"]), helper.make_node("Unsqueeze", ["listed", "minus_one"], ["coordinates"]),
                         helper.make_node("ScatterND", ["data", "coordinates", "updates"], ["output"])],
                        [("data", FLOAT, [4, 5]), ("index", INT64, ["k"]), ("updates", FLOAT, [3, 5])], [("output", FLOAT, [4, 5])], {"three": [3], "minus_one": [-1]}),
                 _feeds(data=RNG.standard_normal((4, 5)), index=[2, -1, 0], updates=RNG.standard_normal((3, 5))), ["ScatterUpdate"], "axis 0, negative indices wrapped",
                 id="an-index-list-of-unknown-length-expanded-to-a-constant-one"),
    pytest.param(_index_rows([4, 3, 2], ["e", 3, 2], [1, 2]), _feeds(data=RNG.standard_normal((4, 3, 2)), index=[3, 0, 3], src=RNG.standard_normal((3, 3, 2))),
                 ["ScatterNDReduce"], "reduction add, rows of an index list broadcast over the other axes", id="index-rows-of-rank-3"),
    pytest.param(_index_rows([4, 5], ["e", 3], [1]), _feeds(data=RNG.standard_normal((4, 5)), index=[3, 0, 3], src=RNG.standard_normal((3, 3))),
                 ["ScatterElementsReduce"], "reduction add, axis 0", id="index-rows-narrower-than-data"),
    pytest.param(_index_rows(None, ["e", 3], [1]), _feeds(data=RNG.standard_normal((4, 3)), index=[3, 0, 3], src=RNG.standard_normal((3, 3))),
                 ["ScatterElementsReduce"], "reduction add, axis 0", id="index-rows-into-data-of-unknown-rank"),
])
def test_forms_close_to_a_pattern_are_rewritten_as_what_they_are(model, feeds, plugins, detail):
    """Constant rows (b, pos[b]) are a per-row write (an out-of-order or out-of-range one is left); a per-row write under a
    Transpose that reorders data's other axes unsqueezes the updates before transposing them back; a run-time index list
    into data of unknown rank wraps against the size read at run time; a Range whose start is a CastLike of 0 (the dynamo
    exporter's Python number) is data's whole axis; index rows unsqueezed to rank 3 are reshaped to rows, and rows that do not span data (or data of unknown
    rank) stay a ScatterElementsReduce. Each computes what the original computes."""
    if feeds is None:
        test_leaves_what_is_not_a_slice_or_an_index_list(model, detail)
        return
    rewritten, report = rewrite(model)
    if all(value.type.tensor_type.HasField("shape") for value in model.graph.input):
        onnx.checker.check_model(rewritten, full_check=True)
    np.testing.assert_array_equal(Reference(rewritten).run(feeds)["output"], _outputs(model, feeds)["output"])
    assert [node.op_type for node in _plugins(rewritten)] == plugins and [change.detail for change in report.rewritten] == [detail], list(report.lines())


def _row_loop(rows=(0, 1, 2), stop_row=None, stop_add="one", unsqueeze_axes=(0, 2), gathered=None, positions_length=3, new_shape=(3, 2, 4),
              constant_starts=False, wrap="full", outer_zero="zero", inner_op="Less", inner_zero="zero", size_axis=2):
    """``for b in rows: cache[b, :, pos[b]] = new[b]`` as :mod:`trt_scatter.torch` writes it with the TorchScript exporter
    (cache (3, 2, 8, 4)): one SliceScatter per row, at ``w = wrap(pos[b])`` from ``Concat([b], w)`` to ``Concat([b + 1],
    w + 1)``, with variations of each part (``stop_row``: write -> the row its stop names, ``gathered``: write -> the row
    of pos and new it reads)."""
    nodes = [helper.make_node("Shape", ["cache"], ["cache_shape"]), helper.make_node("Gather", ["cache_shape", f"c{size_axis}"], ["size"], axis=0)]
    data = "cache"
    for step, b in enumerate(rows):
        read = (gathered or {}).get(step, b)
        g, w = f"g{step}", f"w{step}"
        nodes += [helper.make_node("Gather", ["pos", f"c{read}"], [g], axis=0), helper.make_node("Add", [g, "size"], [f"added{step}"]),
                  helper.make_node(inner_op, [g, inner_zero], [f"negative{step}"]),
                  helper.make_node("Where", [f"negative{step}", f"added{step}", g], [f"inner{step}"]),
                  helper.make_node("Less", [f"added{step}", outer_zero], [f"below{step}"]),
                  helper.make_node("Where", [f"below{step}", g, f"inner{step}"], [f"wrapped{step}"])]
        position = {"full": f"wrapped{step}", "inner": f"inner{step}", "none": g}[wrap]
        nodes += [helper.make_node("Identity", [position], [w]), helper.make_node("Reshape", [w, "one_element"], [f"start_at{step}"]),
                  helper.make_node("Add", [w, stop_add], [f"after{step}"]), helper.make_node("Reshape", [f"after{step}", "one_element"], [f"stop_at{step}"]),
                  helper.make_node("Concat", [f"r{b}", f"start_at{step}"], [f"starts{step}"], axis=0),
                  helper.make_node("Concat", [f"r{(stop_row or {}).get(step, b + 1)}", f"stop_at{step}"], [f"stops{step}"], axis=0),
                  helper.make_node("Gather", ["new", f"c{read}"], [f"row{step}"], axis=0),
                  helper.make_node("Unsqueeze", [f"row{step}", "unsqueeze_axes"], [f"update{step}"]),
                  helper.make_node("SliceScatter", [data, f"update{step}", "constant_starts" if constant_starts and step == 0 else f"starts{step}", f"stops{step}", "steps", "axes"],
                                   [f"written{step}" if step < len(rows) - 1 else "output"], domain="trt_scatter", inplace=0)]
        data = f"written{step}"
    constants = {**{f"c{i}": i for i in range(4)}, **{f"r{i}": [i] for i in range(4)}, "zero": 0, "one": 1, "one_element": [1], "unsqueeze_axes": list(unsqueeze_axes),
                 "steps": [1, 1], "axes": [0, 2], "constant_starts": [0, 3]}
    inputs = [("cache", FLOAT, [3, 2, 8, 4]), ("new", FLOAT, list(new_shape)), ("pos", INT64, [positions_length])]
    return _model(nodes, inputs, [("output", FLOAT, [3, 2, 8, 4])], constants, opsets={"": 18, "trt_scatter": 1})


@pytest.mark.parametrize("model, fused", [
    pytest.param(_row_loop(), True, id="every-row-once"),
    pytest.param(_row_loop(rows=(0, 1, 1)), False, id="a-row-twice"),
    pytest.param(_row_loop(stop_row={1: 3}), False, id="a-stop-two-rows-on"),
    pytest.param(_row_loop(stop_add="zero"), False, id="a-stop-at-the-position"),
    pytest.param(_row_loop(unsqueeze_axes=(0, 1)), False, id="updates-unsqueezed-on-other-axes"),
    pytest.param(_row_loop(gathered={0: 1}), False, id="a-row-at-another-row's-position"),
    pytest.param(_row_loop(positions_length=4), False, id="positions-of-another-length"),
    pytest.param(_row_loop(new_shape=(3, 2, 5)), False, id="rows-of-another-shape"),
    pytest.param(_row_loop(constant_starts=True), False, id="a-constant-start"),
    pytest.param(_row_loop(wrap="none"), False, id="positions-not-wrapped"),
    pytest.param(_row_loop(wrap="inner"), True, id="positions-wrapped-by-the-inner-where-alone"),
    pytest.param(_row_loop(outer_zero="one"), False, id="an-outer-where-of-another-bound"),
    pytest.param(_row_loop(inner_op="Greater"), False, id="an-inner-where-of-another-comparison"),
    pytest.param(_row_loop(inner_zero="one"), False, id="an-inner-where-of-another-bound"),
    pytest.param(_row_loop(size_axis=1), False, id="wrapped-by-another-axis's-size"),
])
def test_per_row_slice_writes_fuse_only_where_each_writes_its_own_row_at_its_position(model, fused):
    """The chain of per-row SliceScatters is one CacheScatter where each row is written once, one position wide, with
    ``new[b]`` at ``pos[b]`` wrapped against the cache's length; every other chain is left as it was."""
    rewritten, report = rewrite(model)
    if not fused:
        assert rewritten.SerializeToString() == model.SerializeToString() and not report.rewritten, list(report.lines())
        return
    assert [node.op_type for node in _plugins(rewritten)] == ["CacheScatter"], list(report.lines())
    for positions in ([1, -5, 7], [0, 0, 7]):
        feeds = {"cache": RNG.standard_normal((3, 2, 8, 4), np.float32), "new": RNG.standard_normal((3, 2, 4), np.float32), "pos": np.array(positions)}
        np.testing.assert_array_equal(Reference(rewritten).run(feeds)["output"], Reference(model).run(feeds)["output"])


def _accumulated(zeros="shape", indices=None, x_dims=(4, 2), op="ScatterND"):
    """Add(x, Scatter(zeros, indices, values)), PyTorch's TorchScript index_put(accumulate=True) and index_add: the zeros
    ``ConstantOfShape(Shape(x))`` or a constant; ``indices`` constant (else a graph input of 3 rows)."""
    nodes = [helper.make_node("Shape", ["x"], ["shape"]), helper.make_node("ConstantOfShape", ["shape"], ["zeros_of_x"]),
             helper.make_node(op, ["zeros_of_x" if zeros == "shape" else "zeros", "indices", "values"], ["scattered"]),
             helper.make_node("Add", ["x", "scattered"], ["y"])]
    values_dims = [2, 2] if op == "ScatterElements" else [3, 2]
    inputs = [("x", FLOAT, list(x_dims)), ("values", FLOAT, values_dims)] + ([("indices", INT64, [3, 1])] if indices is None else [])
    model = _model(nodes, inputs, [("y", FLOAT, list(x_dims))], {} if indices is None else {"indices": indices}, opsets={"": 17})
    if zeros == "constant":
        model.graph.initializer.append(numpy_helper.from_array(np.zeros(x_dims, np.float32), "zeros"))
    return model


@pytest.mark.parametrize("model, feeds_indices, accumulated", [
    pytest.param(_accumulated("constant"), [[3], [0], [1]], True, id="constant-zeros"),
    pytest.param(_accumulated("constant"), [[3], [0], [3]], True, id="constant-zeros-repeated-rows"),
    pytest.param(_accumulated(indices=[[3], [0], [-1]], x_dims=("n", 2)), None, True, id="a-negative-row-into-a-dynamic-axis"),
    pytest.param(_accumulated(indices=[[3], [0], [-1]]), None, True, id="a-negative-row-that-repeats-another"),
    pytest.param(_accumulated(indices=[[2], [0], [-1]]), None, False, id="a-negative-row-that-repeats-none"),
    pytest.param(_accumulated(indices=[[3, 1], [0, 2]], op="ScatterElements"), None, False, id="scatter-elements-repeating-none"),
    pytest.param(_accumulated(indices=[[3, 1], [3, 2]], op="ScatterElements"), None, True, id="scatter-elements-repeating-a-target"),
])
def test_an_add_of_a_scatter_of_zeros_is_a_sum_where_targets_may_repeat(model, feeds_indices, accumulated):
    """The zeros may be a constant of x's static shape; constant indices that repeat no target (negative ones read against
    x's static dims; against a dynamic dim, where they land is not known) stay a write. The values are onnxruntime's where no target repeats, PyTorch's sum where one does."""
    rewritten, report = rewrite(model)
    assert any(change.pattern.startswith("Add(") for change in report.rewritten) == accumulated, list(report.lines())
    x_dims = [d.dim_value or 5 for d in model.graph.input[0].type.tensor_type.shape.dim]
    x, values = np.arange(np.prod(x_dims), dtype=np.float32).reshape(x_dims), RNG.standard_normal([d.dim_value for d in model.graph.input[1].type.tensor_type.shape.dim]).astype(np.float32)
    feeds = {"x": x, "values": values} | ({} if feeds_indices is None else {"indices": np.array(feeds_indices)})
    indices = feeds.get("indices", next((numpy_helper.to_array(i) for i in model.graph.initializer if i.name == "indices"), None))
    scatter_elements = model.graph.node[2].op_type == "ScatterElements"
    targets = np.stack([indices, np.broadcast_to(np.arange(indices.shape[1]), indices.shape)], -1).reshape(-1, 2) if scatter_elements else indices % x_dims[0]
    if len(np.unique(targets, axis=0)) == len(targets):  # no target repeats: ONNX defines the original
        expected = _outputs(model, feeds)["y"]
    else:  # PyTorch's sum of the repeated targets
        expected = x.copy()
        np.add.at(expected, tuple(targets.T), values.reshape(len(targets), -1).squeeze(-1) if scatter_elements else values)
    np.testing.assert_allclose(Reference(rewritten).run(feeds)["y"], expected, rtol=1e-6)


def test_values_of_two_masks_gathered_together_are_taken_in_order():
    """``x[mask] = x[mask_full] + x[mask]``, gathers through the row mask and through the element mask it spreads to: no
    single mask says which elements F runs on, so the values are taken in order (onnxruntime runs it with one row masked)."""
    nodes = [*_gathered_rows(), *_row_mask_spread(), helper.make_node("NonZero", ["mask_full"], ["elements_nonzero"]),
             helper.make_node("Transpose", ["elements_nonzero"], ["elements"], perm=[1, 0]), helper.make_node("GatherND", ["x", "elements"], ["e0"]),
             helper.make_node("Add", ["e0", "f0"], ["f"]), *_stock_masked_scatter("f")]
    original = _model(nodes, [("x", FLOAT, [6, 5]), ("mask", TensorProto.BOOL, [6])], [("output", FLOAT, [6, 5])],
                      {"one": [1], "zero": [0], "flat": [-1], "zero_scalar": 0})
    model, report = rewrite(original)
    assert [change.detail for change in report.rewritten] == ["values in order"], list(report.lines())
    feeds = {"x": RNG.standard_normal((6, 5), np.float32), "mask": np.isin(np.arange(6), [4])}
    np.testing.assert_array_equal(Reference(model).run(feeds)["output"], _outputs(original, feeds)["output"])


@pytest.mark.parametrize("zeros, hops, warned", [("initializer", 0, True), ("constant_of_shape", 0, True), ("initializer", 6, False)])
def test_extremes_from_zero_names_torch_geometrics_export_branch(zeros, hops, warned):
    """torch_geometric's ONNX-export ``scatter(reduce="max")``: a max into zeros of ReduceMin(src) broadcast, then of src
    itself, by the same index. The zeros as an initializer or a ConstantOfShape; an extreme more nodes away than the
    warning follows is not named."""
    reduce = lambda data, updates, output: helper.make_node("ScatterElementsReduce", [data, "index", updates], [output], domain="trt_scatter",  # noqa: E731
                                                            axis=0, reduction="max", include_self=1, inplace=0)
    nodes = [helper.make_node("ReduceMin", ["src"], ["smallest0"], keepdims=0)]
    nodes += [helper.make_node("Neg", [f"smallest{i}"], [f"smallest{i + 1}"]) for i in range(hops)]
    nodes += [helper.make_node("Expand", [f"smallest{hops}", "src_shape"], ["fill"]), reduce("zeros", "fill", "first"), reduce("first", "src", "output")]
    initializers = [numpy_helper.from_array(np.array([4, 3], np.int64), "src_shape")]
    if zeros == "initializer":
        initializers.append(numpy_helper.from_array(np.zeros((5, 3), np.float32), "zeros"))
    else:
        nodes.insert(0, helper.make_node("ConstantOfShape", ["data_shape"], ["zeros"], value=numpy_helper.from_array(np.zeros(1, np.float32))))
        initializers.append(numpy_helper.from_array(np.array([5, 3], np.int64), "data_shape"))
    graph = helper.make_graph(nodes, "g", [helper.make_tensor_value_info("src", FLOAT, [4, 3]), helper.make_tensor_value_info("index", INT64, [4, 3])],
                              [helper.make_tensor_value_info("output", FLOAT, [5, 3])], initializers)
    lines = list(extremes_from_zero(graph))
    assert len(lines) == warned and all("negative maximum" in line for line in lines), lines


def _run_three_ways(model, feeds):
    """onnxruntime on the original, Reference on the rewritten model, onnxruntime on its lowering."""
    expected = onnxruntime.InferenceSession(model.SerializeToString()).run(None, feeds)[0]
    rewritten, _ = rewrite(model)
    onnx.checker.check_model(rewritten)
    np.testing.assert_array_equal(Reference(rewritten).run(feeds)[model.graph.output[0].name], expected)
    lowered = onnxruntime.InferenceSession(lower(rewritten).SerializeToString()).run(None, feeds)[0]
    np.testing.assert_array_equal(lowered, expected)


def test_empty_constant_index_rows_into_an_empty_batch_write_nothing():
    """ScatterND with constant indices of shape (0, 2) into data (0, 0): nothing is written (onnxruntime gives the empty
    data back); the rewrite took it for a CacheScatter, which Reference and lower refuse (1 entry > 0)."""
    graph = helper.make_graph(
        [helper.make_node("ScatterND", ["X", "I", "U"], ["Y"])], "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [0, 0]), helper.make_tensor_value_info("U", TensorProto.FLOAT, [0])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [0, 0])],
        [numpy_helper.from_array(np.zeros((0, 2), np.int64), "I")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18)])
    model.ir_version = 8
    _run_three_ways(model, {"X": np.zeros((0, 0), np.float32), "U": np.zeros((0,), np.float32)})


def test_masked_write_in_order_over_an_empty_trailing_axis():
    """x[mask] = s[:mask.sum()] with x and mask of shape (1, 0): nothing is masked, onnxruntime returns x; the rewritten
    Where's values Reshape read the 0 as 'copy that dim' (Reference failed, onnxruntime refused the lowering)."""
    nodes = [helper.make_node("NonZero", ["M"], ["nz"]), helper.make_node("Transpose", ["nz"], ["I"], perm=[1, 0]),
             helper.make_node("Shape", ["I"], ["sh"]), helper.make_node("Slice", ["sh", "zero", "one"], ["n"]),
             helper.make_node("Slice", ["S", "zero", "n", "zero"], ["U"]), helper.make_node("ScatterND", ["X", "I", "U"], ["Y"])]
    graph = helper.make_graph(
        nodes, "g",
        [helper.make_tensor_value_info("X", TensorProto.FLOAT, [1, 0]), helper.make_tensor_value_info("M", TensorProto.BOOL, [1, 0]),
         helper.make_tensor_value_info("S", TensorProto.FLOAT, [0])],
        [helper.make_tensor_value_info("Y", TensorProto.FLOAT, [1, 0])],
        [numpy_helper.from_array(np.array([0], np.int64), "zero"), numpy_helper.from_array(np.array([1], np.int64), "one")])
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    model.ir_version = 8
    _run_three_ways(model, {"X": np.zeros((1, 0), np.float32), "M": np.zeros((1, 0), bool), "S": np.zeros((0,), np.float32)})
