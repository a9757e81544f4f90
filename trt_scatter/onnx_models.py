"""ONNX models of trt-scatter's ops: standard ops, plugin nodes and the native lowerings.

Every model has graph inputs ``data``, ``indices`` (not for SliceScatter) and ``updates``, one
output ``output`` (data's shape and type), and holds the constant inputs (start/stop/step/axes,
axis) as initializers. Dimensions may be ints or symbolic strings (dynamic). Models pass
``onnx.checker.check_model(model, full_check=True)``; opset 17 of the default domain, IR 8.

- :func:`scatter_elements_model`: one ``ScatterElements`` node (``axis`` attribute).
- :func:`scatter_nd_model`: one ``ScatterND`` node; ONNX's ScatterND takes int64 indices only,
  so int32 ``indices`` go through a ``Cast`` first.
- ``impl="plugin"``: one ``trt_scatter`` node, which TensorRT's ONNX parser maps onto the plugin
  of the same name (the contract, inputs and attribute: :mod:`trt_scatter.ops`), with its
  ``inplace`` attribute written always (so that the parser need not warn about a default), and
  the model's opset import of the domain (so that the full checker accepts the node).
  start/stop/step/axes are 1-D and axis a 1-element 1-D initializer, all of ``index_dtype``.
- ``impl="native"``: the native lowering of :mod:`trt_scatter.networks` written by its ONNX
  backend: standard ops only (Shape, Gather, Add/Sub/Mul/Div/Min/Max/Less, Where, Concat,
  Reshape, Cast, Range, Identity, ScatterElements/ScatterND).
"""

import numpy as np

from trt_scatter.networks.graph import INT64, OnnxGraph, Value
from trt_scatter.networks.scatter_update import lower_scatter_update
from trt_scatter.networks.slice_scatter import lower_slice_scatter
from trt_scatter.ops import DOMAIN, INDEX_TYPES, VERSION
from trt_scatter.oracle import ScatterInputError, rules
from trt_scatter.oracle.scatter_elements import check_scatter_elements
from trt_scatter.oracle.scatter_nd import check_scatter_nd
from trt_scatter.oracle.scatter_update import check_scatter_update
from trt_scatter.oracle.slice_scatter import check_slice_scatter, slice_geometry

IMPLS = ("plugin", "native")


def scatter_elements_model(data_shape, indices_shape, axis=0, dtype=np.float32, index_dtype=np.int64):
    """ScatterElements(data, indices, updates) with ``axis``; updates have indices' shape."""
    _check_types("scatter_elements", dtype, index_dtype)
    check_scatter_elements(_known(data_shape), _known(indices_shape), _known(indices_shape), axis)
    graph = OnnxGraph()
    data, indices, updates = _inputs(graph, dtype, index_dtype, data_shape, indices_shape, indices_shape)
    output = graph.node("ScatterElements", [data, indices, updates], dtype, data.shape, axis=int(axis))
    return graph.model({"output": output})


def scatter_nd_model(data_shape, indices_shape, dtype=np.float32, index_dtype=np.int64):
    """ScatterND(data, indices, updates); updates have shape ``indices.shape[:-1] + data.shape[k:]``."""
    _check_types("scatter_nd", dtype, index_dtype)
    k = indices_shape[-1] if len(indices_shape) else None
    if not isinstance(k, int):
        raise ScatterInputError("scatter_nd", "indices", "last dimension must be a known int", f"shape {tuple(indices_shape)}")
    updates_shape = tuple(indices_shape[:-1]) + tuple(data_shape[k:])
    check_scatter_nd(_known(data_shape), _known(indices_shape), _known(updates_shape))
    graph = OnnxGraph()
    data, indices, updates = _inputs(graph, dtype, index_dtype, data_shape, indices_shape, updates_shape)
    if indices.dtype != INT64:
        indices = graph.cast(indices, INT64)
    output = graph.node("ScatterND", [data, indices, updates], dtype, data.shape)
    return graph.model({"output": output})


def slice_scatter_model(data_shape, start, stop, step, axes=None, dtype=np.float32, index_dtype=np.int64, impl="plugin", updates_shape=None, inplace=False, runtime=()):
    """SliceScatter(data, updates, start, stop, step[, axes]) as a plugin node or the native lowering.

    ``updates_shape`` defaults to the slice's shape where data's dimension is known; a sliced
    dynamic dimension becomes the symbolic dimension ``"updates_<axis>"``. ``runtime`` names the
    parameters (of start, stop, step, axes) that are graph inputs of ``index_dtype`` (their values
    here only shape the updates), the rest are initializers.
    """
    _check_impl("slice_scatter", impl)
    _check_types("slice_scatter", dtype, index_dtype, "start/stop/step/axes")
    start, stop, step = (rules.as_int_vector("slice_scatter", n, v) for n, v in (("start", start), ("stop", stop), ("step", step)))
    if axes is not None:
        axes = rules.as_int_vector("slice_scatter", "axes", axes)
    if updates_shape is None:
        normalized = check_slice_scatter(_known(data_shape), (-1,) * len(data_shape), start, stop, step, axes)
        updates_shape = list(data_shape)
        for axis, begin, end, stride in zip(normalized, start, stop, step):
            dim = data_shape[axis]
            updates_shape[axis] = slice_geometry(begin, end, stride, dim)[1] if isinstance(dim, int) and dim >= 0 else f"updates_{axis}"
    check_slice_scatter(_known(data_shape), _known(updates_shape), start, stop, step, axes)
    graph = OnnxGraph()
    data = graph.add_input("data", dtype, data_shape)
    updates = graph.add_input("updates", dtype, updates_shape)
    params = {"start": start, "stop": stop, "step": step}
    if "axes" in runtime:
        if axes is None:
            raise ScatterInputError("slice_scatter", "axes", "must be given to be a graph input", None)
        axes = graph.add_input("axes", index_dtype, [len(axes)])
    for name in runtime:
        if name != "axes":
            params[name] = graph.add_input(name, index_dtype, [len(params[name])])
    if impl == "native":
        return graph.model({"output": lower_slice_scatter(graph, data, updates, *params.values(), axes)})
    params = list(params.values()) + ([] if axes is None else [axes])
    inputs = [v if isinstance(v, Value) else graph.constant(np.array(v, dtype=index_dtype)) for v in params]
    return graph.model({"output": _plugin_node(graph, "SliceScatter", [data, updates] + inputs, data, inplace)})


def scatter_update_model(data_shape, indices_shape, axis, dtype=np.float32, index_dtype=np.int64, impl="plugin", inplace=False, runtime=()):
    """ScatterUpdate(data, indices, updates, axis) as a plugin node or the native lowering.

    updates have shape ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``. ``runtime=("axis",)``
    makes ``axis`` a graph input of shape (1,) and ``index_dtype`` (its value here only shapes the updates).
    """
    _check_impl("scatter_update", impl)
    _check_types("scatter_update", dtype, index_dtype)
    axis = rules.normalize_axis("scatter_update", "axis", axis, len(data_shape))
    updates_shape = tuple(data_shape[:axis]) + tuple(indices_shape) + tuple(data_shape[axis + 1 :])
    check_scatter_update(_known(data_shape), _known(indices_shape), _known(updates_shape), axis)
    graph = OnnxGraph()
    data, indices, updates = _inputs(graph, dtype, index_dtype, data_shape, indices_shape, updates_shape)
    if "axis" in runtime:
        axis = graph.add_input("axis", index_dtype, [1])
    if impl == "native":
        return graph.model({"output": lower_scatter_update(graph, data, indices, updates, axis)})
    axis_input = axis if "axis" in runtime else graph.constant(np.array([axis], dtype=index_dtype))
    return graph.model({"output": _plugin_node(graph, "ScatterUpdate", [data, indices, updates, axis_input], data, inplace)})


def _plugin_node(graph, op_type, inputs, data, inplace):
    graph.opset_imports[DOMAIN] = VERSION
    return graph.node(op_type, inputs, data.dtype, data.shape, domain=DOMAIN, inplace=int(inplace))


def _inputs(graph, dtype, index_dtype, data_shape, indices_shape, updates_shape):
    return (
        graph.add_input("data", dtype, data_shape),
        graph.add_input("indices", index_dtype, indices_shape),
        graph.add_input("updates", dtype, updates_shape),
    )


def _check_types(op, dtype, index_dtype, index_name="indices"):
    rules.check_data_type(op, "data", dtype)
    rules.check_type_in(op, index_name, index_dtype, INDEX_TYPES)


def _check_impl(op, impl):
    if impl not in IMPLS:
        raise ValueError(f"{op}: impl must be one of {', '.join(IMPLS)} (got {impl!r})")


def _known(shape):
    """A shape with symbolic (string) or None dimensions as -1, for the oracle's check_* rules."""
    return tuple(d if isinstance(d, (int, np.integer)) and d >= 0 else -1 for d in shape)
