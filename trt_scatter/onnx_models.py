"""ONNX models of trt-scatter's ops: standard ops, plugin nodes and the native lowerings.

Every model has graph inputs ``data``, ``indices`` (not for SliceScatter) and ``updates``, one
output ``output`` (data's shape and type), and holds the constant inputs (start/stop/step/axes,
axis) as initializers. Dimensions may be ints or symbolic strings (dynamic). Models pass
``onnx.checker.check_model(model, full_check=True)``; opset 17 of the default domain, IR 8.

- :func:`scatter_elements_model`: one ``ScatterElements`` node (``axis`` attribute; ``reduction``, at opset 18,
  where it is not "none": ONNX's own reduction, which the reduction plugins serve under ``--plugins``).
- :func:`scatter_nd_model`: one ``ScatterND`` node (``reduction`` likewise); ONNX's ScatterND takes int64 indices
  only, so int32 ``indices`` go through a ``Cast`` first.
- :func:`tensor_scatter_model`: inputs ``past_cache``, ``update``, ``write_indices``; ``impl="standard"``
  is ONNX's own TensorScatter (opset 24), the other two its ``CacheScatter`` plugin node and lowering.
- :func:`scatter_elements_reduce_model`, :func:`scatter_nd_reduce_model`: the reduction ops (their lowering:
  ScatterElements/ScatterND with a reduction, opset 18).
- ``impl="plugin"``: one ``trt_scatter`` node, which TensorRT's ONNX parser maps onto the plugin
  of the same name (the contract, inputs and attribute: :mod:`trt_scatter.ops`), with its
  ``inplace`` attribute written always (so that the parser need not warn about a default), and
  the model's opset import of the domain (so that the full checker accepts the node).
  start/stop/step/axes are 1-D and axis a 1-element 1-D initializer, all of ``index_dtype``.
- ``impl="native"``: the native lowering of :mod:`trt_scatter.networks` written by its ONNX
  backend: standard ops only, such as Shape, Gather, Add/Sub/Mul/Div/Min/Max/Less, ReduceSum/ReduceProd (run-time
  axes), Where, Concat, Reshape, Cast, Range, Identity and ScatterElements/ScatterND.
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter.networks.graph import INT64, OnnxGraph, Value
from trt_scatter.networks.scatter_elements_reduce import lower_scatter_elements_reduce
from trt_scatter.networks.scatter_nd_reduce import lower_scatter_nd_reduce
from trt_scatter.networks.scatter_update import lower_scatter_update
from trt_scatter.networks.slice_scatter import lower_slice_scatter
from trt_scatter.networks.tensor_scatter import lower_tensor_scatter
from trt_scatter.ops import DOMAIN, INDEX_TYPES, VERSION
from trt_scatter.oracle import ScatterInputError, reductions, rules
from trt_scatter.oracle.scatter_elements import check_scatter_elements
from trt_scatter.oracle.scatter_elements_reduce import check_scatter_elements_reduce
from trt_scatter.oracle.scatter_nd import check_scatter_nd
from trt_scatter.oracle.scatter_nd_reduce import check_scatter_nd_reduce
from trt_scatter.oracle.scatter_update import check_scatter_update
from trt_scatter.oracle.slice_scatter import check_slice_scatter, slice_geometry
from trt_scatter.oracle.tensor_scatter import DEFAULT_AXIS, check_mode, check_tensor_scatter

if TYPE_CHECKING:
    from collections.abc import Collection, Sequence

    import onnx
    from numpy.typing import ArrayLike, DTypeLike

    from trt_scatter.ops import Op

IMPLS = ("plugin", "native")


def scatter_elements_model(data_shape: Sequence[int | str | None], indices_shape: Sequence[int | str | None], axis: int = 0, dtype: DTypeLike = np.float32, index_dtype: DTypeLike = np.int64,
                           reduction: str = "none") -> onnx.ModelProto:
    """ScatterElements(data, indices, updates) with ``axis`` and ONNX's ``reduction`` (opset 18 where it is not
    "none"); updates have indices' shape."""
    data_shape, indices_shape = _check_shape("scatter_elements", "data_shape", data_shape), _check_shape("scatter_elements", "indices_shape", indices_shape)
    _check_types("scatter_elements", dtype, index_dtype)
    reduction = reductions.check_onnx_reduction("scatter_elements", reduction, dtype)
    check_scatter_elements(_known(data_shape), _known(indices_shape), _known(indices_shape), axis)
    graph = OnnxGraph()
    data, indices, updates = _inputs(graph, dtype, index_dtype, data_shape, indices_shape, indices_shape)
    return _standard_model(graph, "ScatterElements", [data, indices, updates], reduction, axis=int(axis))


def scatter_nd_model(data_shape: Sequence[int | str | None], indices_shape: Sequence[int | str | None], dtype: DTypeLike = np.float32, index_dtype: DTypeLike = np.int64,
                     reduction: str = "none") -> onnx.ModelProto:
    """ScatterND(data, indices, updates) with ONNX's ``reduction`` (opset 18 where it is not "none"); updates have
    shape ``indices.shape[:-1] + data.shape[k:]``."""
    data_shape, indices_shape = _check_shape("scatter_nd", "data_shape", data_shape), _check_shape("scatter_nd", "indices_shape", indices_shape)
    _check_types("scatter_nd", dtype, index_dtype)
    reduction = reductions.check_onnx_reduction("scatter_nd", reduction, dtype)
    k = indices_shape[-1] if len(indices_shape) else None
    if not isinstance(k, int):
        raise ScatterInputError("scatter_nd", "indices", "last dimension must be a known int", f"shape {tuple(indices_shape)}")
    updates_shape = tuple(indices_shape[:-1]) + tuple(data_shape[k:])
    check_scatter_nd(_known(data_shape), _known(indices_shape), _known(updates_shape))
    graph = OnnxGraph()
    data, indices, updates = _inputs(graph, dtype, index_dtype, data_shape, indices_shape, updates_shape)
    if indices.dtype != INT64:
        indices = graph.cast(indices, INT64)
    return _standard_model(graph, "ScatterND", [data, indices, updates], reduction)


def _standard_model(graph, op_type, inputs, reduction, **attributes):
    """The model of ONNX's own ``op_type`` node; with a reduction, the opset that defines every one (18)."""
    if reduction != "none":
        graph.opset_imports[""] = max(reductions.ONNX_REDUCTIONS.values())
        attributes["reduction"] = reduction
    data = inputs[0]
    return graph.model({"output": graph.node(op_type, inputs, data.dtype, data.shape, **attributes)})


def slice_scatter_model(data_shape: Sequence[int | str | None], start: ArrayLike, stop: ArrayLike, step: ArrayLike, axes: ArrayLike | None = None, dtype: DTypeLike = np.float32, index_dtype: DTypeLike = np.int64, impl: str = "plugin", updates_shape: Sequence[int | str | None] | None = None, inplace: bool = False, runtime: Collection[str] = ()) -> onnx.ModelProto:
    """SliceScatter(data, updates, start, stop, step[, axes]) as a plugin node or the native lowering.

    ``updates_shape`` defaults to the slice's shape where data's dimension is known; a sliced
    dynamic dimension becomes the symbolic dimension ``"updates_<axis>"``. ``runtime`` names the
    parameters (of start, stop, step, axes) that are graph inputs of ``index_dtype`` (their values
    here only shape the updates), the rest are initializers.
    """
    _check_impl("slice_scatter", impl)
    _check_flags("slice_scatter", inplace, runtime, ("start", "stop", "step", "axes"), impl)
    data_shape = _check_shape("slice_scatter", "data_shape", data_shape)
    if updates_shape is not None:
        updates_shape = _check_shape("slice_scatter", "updates_shape", updates_shape)
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
    inputs = [v if isinstance(v, Value) else graph.constant(_parameters(v, index_dtype)) for v in params]
    return graph.model({"output": _plugin_node(graph, "SliceScatter", [data, updates] + inputs, data, inplace)})


def scatter_update_model(data_shape: Sequence[int | str | None], indices_shape: Sequence[int | str | None], axis: int, dtype: DTypeLike = np.float32, index_dtype: DTypeLike = np.int64, impl: str = "plugin", inplace: bool = False, runtime: Collection[str] = ()) -> onnx.ModelProto:
    """ScatterUpdate(data, indices, updates, axis) as a plugin node or the native lowering.

    updates have shape ``data.shape[:axis] + indices.shape + data.shape[axis+1:]``. ``runtime=("axis",)``
    makes ``axis`` a graph input of shape (1,) and ``index_dtype`` (its value here only shapes the updates).
    """
    _check_impl("scatter_update", impl)
    _check_flags("scatter_update", inplace, runtime, ("axis",), impl)
    data_shape, indices_shape = _check_shape("scatter_update", "data_shape", data_shape), _check_shape("scatter_update", "indices_shape", indices_shape)
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


TENSOR_SCATTER_OPSET = 24  #: ONNX's TensorScatter arrives in opset 24


def tensor_scatter_model(cache_shape: Sequence[int | str | None], sequence_length: int | str, axis: int = DEFAULT_AXIS, mode: str = "linear", write_indices: bool = True, dtype: DTypeLike = np.float32,
                         index_dtype: DTypeLike = np.int64, impl: str = "plugin", inplace: bool = False) -> onnx.ModelProto:
    """TensorScatter(past_cache, update[, write_indices]) with ``axis`` and ``mode``: ``impl="plugin"`` a
    ``CacheScatter`` node, ``"native"`` its lowering, ``"standard"`` ONNX's own TensorScatter (int64 write
    indices only; opset 24, IR 10).

    ``update`` has the cache's shape with ``sequence_length`` (an int or a symbolic string) on ``axis``;
    ``write_indices`` (``write_indices=False``: left out) is a graph input of shape ``(batch,)``.
    """
    rules.check_choice("tensor_scatter", "impl", impl, IMPLS + ("standard",))
    _check_flags("tensor_scatter", inplace, (), (), impl)
    cache_shape = _check_shape("tensor_scatter", "cache_shape", cache_shape)
    (sequence_length,) = _check_shape("tensor_scatter", "sequence_length", (sequence_length,))
    _check_types("tensor_scatter", dtype, index_dtype, "write_indices")
    mode = check_mode(mode)
    update_shape = list(cache_shape)
    normalized = check_tensor_scatter(_known(cache_shape), _known(cache_shape), None, axis)
    update_shape[normalized] = sequence_length
    check_tensor_scatter(_known(cache_shape), _known(update_shape), None, axis)
    graph = OnnxGraph()
    cache = graph.add_input("past_cache", dtype, cache_shape)
    update = graph.add_input("update", dtype, update_shape)
    indices = graph.add_input("write_indices", index_dtype, [cache_shape[0]]) if write_indices else None
    if impl == "native":
        return graph.model({"output": lower_tensor_scatter(graph, cache, update, indices, axis, mode)})
    inputs = [cache, update] + ([indices] if indices is not None else [])
    if impl == "plugin":
        graph.opset_imports[DOMAIN] = VERSION
        output = graph.node("CacheScatter", inputs, cache.dtype, cache.shape, domain=DOMAIN, axis=int(axis), mode=mode, inplace=int(inplace))
        return graph.model({"output": output})
    if np.dtype(index_dtype) != INT64:
        raise ScatterInputError("tensor_scatter", "write_indices", "must be int64 in ONNX's TensorScatter", np.dtype(index_dtype))
    graph.opset_imports[""] = TENSOR_SCATTER_OPSET
    model = graph.model({"output": graph.node("TensorScatter", inputs, cache.dtype, cache.shape, axis=int(axis), mode=mode)})
    model.ir_version = 10
    return model


def scatter_elements_reduce_model(data_shape: Sequence[int | str | None], indices_shape: Sequence[int | str | None], axis: int = 0, reduction: str = "add", include_self: int = 1, dtype: DTypeLike = np.float32,
                                  index_dtype: DTypeLike = np.int64, impl: str = "plugin", inplace: bool = False) -> onnx.ModelProto:
    """ScatterElementsReduce(data, indices, updates) as a plugin node or its lowering (standard ScatterElements with a
    reduction); updates have indices' shape."""
    _check_impl("scatter_elements_reduce", impl)
    _check_flags("scatter_elements_reduce", inplace, (), (), impl)
    data_shape, indices_shape = _check_shape("scatter_elements_reduce", "data_shape", data_shape), _check_shape("scatter_elements_reduce", "indices_shape", indices_shape)
    _check_types("scatter_elements_reduce", dtype, index_dtype)
    reduction, include_self = reductions.check_attributes("scatter_elements_reduce", reduction, include_self, dtype)
    check_scatter_elements_reduce(_known(data_shape), _known(indices_shape), _known(indices_shape), axis)
    graph = OnnxGraph()
    data, indices, updates = _inputs(graph, dtype, index_dtype, data_shape, indices_shape, indices_shape)
    if impl == "native":
        return graph.model({"output": lower_scatter_elements_reduce(graph, data, indices, updates, axis, reduction, include_self)})
    attributes = dict(axis=int(axis), reduction=reduction, include_self=int(include_self))
    return graph.model({"output": _plugin_node(graph, "ScatterElementsReduce", [data, indices, updates], data, inplace, **attributes)})


def scatter_nd_reduce_model(data_shape: Sequence[int | str | None], indices_shape: Sequence[int | str | None], reduction: str = "add", include_self: int = 1, dtype: DTypeLike = np.float32, index_dtype: DTypeLike = np.int64,
                            impl: str = "plugin", inplace: bool = False) -> onnx.ModelProto:
    """ScatterNDReduce(data, indices, updates) as a plugin node or its lowering (standard ScatterND with a reduction);
    updates have shape ``indices.shape[:-1] + data.shape[k:]``."""
    _check_impl("scatter_nd_reduce", impl)
    _check_flags("scatter_nd_reduce", inplace, (), (), impl)
    data_shape, indices_shape = _check_shape("scatter_nd_reduce", "data_shape", data_shape), _check_shape("scatter_nd_reduce", "indices_shape", indices_shape)
    _check_types("scatter_nd_reduce", dtype, index_dtype)
    reduction, include_self = reductions.check_attributes("scatter_nd_reduce", reduction, include_self, dtype)
    k = indices_shape[-1] if len(indices_shape) else None
    if not isinstance(k, int):
        raise ScatterInputError("scatter_nd_reduce", "indices", "last dimension must be a known int", f"shape {tuple(indices_shape)}")
    updates_shape = tuple(indices_shape[:-1]) + tuple(data_shape[k:])
    check_scatter_nd_reduce(_known(data_shape), _known(indices_shape), _known(updates_shape))
    graph = OnnxGraph()
    data, indices, updates = _inputs(graph, dtype, index_dtype, data_shape, indices_shape, updates_shape)
    if impl == "native":
        return graph.model({"output": lower_scatter_nd_reduce(graph, data, indices, updates, reduction, include_self)})
    attributes = dict(reduction=reduction, include_self=int(include_self))
    return graph.model({"output": _plugin_node(graph, "ScatterNDReduce", [data, indices, updates], data, inplace, **attributes)})


def _plugin_node(graph, op_type, inputs, data, inplace, **attributes):
    graph.opset_imports[DOMAIN] = VERSION
    return graph.node(op_type, inputs, data.dtype, data.shape, domain=DOMAIN, inplace=int(inplace), **attributes)


def _inputs(graph, dtype, index_dtype, data_shape, indices_shape, updates_shape):
    return (
        graph.add_input("data", dtype, data_shape),
        graph.add_input("indices", index_dtype, indices_shape),
        graph.add_input("updates", dtype, updates_shape),
    )


def _check_types(op, dtype, index_dtype, index_name="indices"):
    for name, given in (("dtype", dtype), ("index_dtype", index_dtype)):
        if given is None:  # NumPy reads None as float64; a model would get ONNX's UNDEFINED
            raise TypeError(f"{op}: {name} must be a type, e.g. np.float32 (got None)")
    rules.check_data_type(op, "data", dtype)
    rules.check_type_in(op, index_name, index_dtype, INDEX_TYPES)


def _check_flags(op, inplace, runtime, allowed, impl):
    """``inplace`` a bool (or 0, 1), True only for the plugin node (``impl``), and ``runtime`` a collection of names of
    ``allowed`` (not one name as a str)."""
    if not (isinstance(inplace, (bool, np.bool_)) or (isinstance(inplace, (int, np.integer)) and inplace in (0, 1))):
        raise TypeError(f"{op}: inplace must be True or False (got {inplace!r})")
    if inplace and impl != "plugin":
        raise ValueError(f"{op}: inplace=True is the plugin node's attribute (impl='plugin'): the {impl!r} model has no node that writes in place")
    if isinstance(runtime, (str, bytes)) or not hasattr(runtime, "__iter__") or not set(runtime) <= set(allowed):
        names = ", ".join(repr(name) for name in allowed) or "none"
        raise ValueError(f"{op}: runtime must be a collection of the names {names} (got {runtime!r})")


def _parameters(values, index_dtype):
    """A parameter's values as an array of ``index_dtype``, values beyond it clamped to its bounds: OpenVINO clamps
    start and stop to the dimension and a step beyond it takes one element either way, so the slice is the same."""
    bounds = np.iinfo(index_dtype)
    return np.array([min(max(int(v), bounds.min), bounds.max) for v in values], dtype=index_dtype)


def _check_impl(op, impl):
    if impl == "standard" and op.endswith("_reduce"):  # tensor_scatter_model's third impl; here a standard model of its own
        standard = op.removesuffix("_reduce")
        raise ScatterInputError(op, "impl", f"must be one of {', '.join(repr(c) for c in IMPLS)}; ONNX's own node with a reduction "
                                f"is {standard}_model(..., reduction=...)", repr(impl))
    rules.check_choice(op, "impl", impl, IMPLS)


def _check_shape(op, name, shape):
    """A shape argument is a sequence of dims (ints >= 0, symbolic strings, None): not a string, not a number."""
    if isinstance(shape, (str, bytes)) or not hasattr(shape, "__iter__"):
        raise TypeError(f"{op}: {name} must be a sequence of dimensions, e.g. (4, 6) or ('batch', 6) (got {shape!r})")
    for dim in shape:
        if not (dim is None or isinstance(dim, str) or (isinstance(dim, (int, np.integer)) and not isinstance(dim, bool) and dim >= 0)):
            raise TypeError(f"{op}: {name} must hold ints >= 0, symbolic names or None (got {tuple(shape)!r})")
    return tuple(int(dim) if isinstance(dim, np.integer) else dim for dim in shape)


def _known(shape):
    """A shape with symbolic (string) or None dimensions as -1, for the oracle's check_* rules."""
    return tuple(d if isinstance(d, (int, np.integer)) and d >= 0 else -1 for d in shape)


def node_model(op: Op, inputs: dict[str, np.ndarray | tuple[Sequence[int | str | None] | None, DTypeLike]], attributes: dict[str, Any] | None = None, dtype: DTypeLike = np.float32, output_shape: Sequence[int | str | None] | None = None) -> onnx.ModelProto:
    """A model of one node of ``op`` (a :class:`trt_scatter.ops.Op`), as it is given: nothing is checked, so
    tests can hand in what a rule refuses. ``inputs`` in the op's order, by name: an array (an initializer)
    or ``(shape, dtype)`` (a graph input; dims ints, symbolic strings or None; shape None: rank unknown).
    ``attributes``: the node's. The output ``output`` has ``dtype`` and data's shape (or ``output_shape``).
    Opset 17 of the default domain and, for a ``trt_scatter`` op, its own; IR 8."""
    from onnx import helper, numpy_helper

    from trt_scatter import dtypes

    graph_inputs, initializers = [], []
    for name, value in inputs.items():
        if isinstance(value, np.ndarray):
            initializers.append(numpy_helper.from_array(value, name))
        else:
            shape, input_dtype = value
            graph_inputs.append(helper.make_tensor_value_info(name, dtypes.to_onnx(input_dtype), None if shape is None else list(shape)))
    if output_shape is None:
        data = inputs.get("data")
        output_shape = data.shape if isinstance(data, np.ndarray) else data[0] if data is not None else None
    node = helper.make_node(op.name, [name if name in inputs else "" for name in op.inputs[: max(op.inputs.index(n) for n in inputs) + 1]],
                            ["output"], domain=op.domain, **(attributes or {}))
    output = helper.make_tensor_value_info("output", dtypes.to_onnx(dtype), None if output_shape is None else list(output_shape))
    opsets = [helper.make_opsetid("", OnnxGraph.OPSET)] + ([helper.make_opsetid(DOMAIN, VERSION)] if op.is_plugin else [])
    graph = helper.make_graph([node], op.key, graph_inputs, [output], initializer=initializers)
    return helper.make_model(graph, opset_imports=opsets, ir_version=8, producer_name="trt-scatter")
