"""SliceScatter-15 in a TensorRT network: native lowering to stock layers, or the plugin.

Native lowering (``impl="native"``, runs on any TensorRT, including TensorRT-RTX, which cannot
add plugin layers from Python): with ``k = max(axes) + 1``, data is seen as rows of shape
``data.shape[k:]`` (a reshape), each updated row gets its flat row number ``sum_j (first_j +
i_j * step_j) * stride_j`` (``arange`` and elementwise layers, broadcast over the slice's grid),
and one ``IScatterLayer`` in ND mode writes the rows; a reshape restores data's shape. Index
bytes per updated element: ``8 / prod(data.shape[k:])`` (int64 row numbers), so 8 when the
last axis is sliced and far less when only leading axes are.

Slice geometry follows OpenVINO (:func:`trt_scatter.oracle.slice_geometry`), computed where it
is known: on the host for constant start/stop/step and a dimension known when the network is
built (the coordinates are a constant); with shape layers for constants on a dynamic dimension;
with elementwise layers on int64 values for run-time start/stop/step (tensors: graph inputs or
computed, such as a KV cache's write position). Constants are clamped to +-2**62 first on the
host, which changes no slice (every dimension is smaller) and keeps ``dim + start`` and
``span + |step| - 1`` from overflowing int64 for INT64_MIN/INT64_MAX; run-time values need no
clamp, as the layers add ``dim`` to negative values only and take the length from updates.

How many elements a run-time slice takes is read from ``updates`` (its dimension on the sliced
axis), never from the values, as TensorRT's own KV-cache layer does: the network's shapes then
never depend on tensor values, so the values may come from any layer. The spec makes the two
equal; for values whose slice has another length (which the oracle rejects, but no layer can
reject at run time) the coordinates are clamped into the dimension, so the engine never writes
outside its output, and the result is unspecified (the plugin writes nothing and counts it).

Run-time ``axes`` (a tensor) decide which axes are sliced, so no row of data can be formed when
the network is built: :func:`_lower_runtime_axes` then gives every element of ``updates`` its own
flat destination in data (8 index bytes per updated element, against ``8 / prod(data.shape[k:])``
above), with the same clamping and the same slice lengths (updates'). It is used only for a
run-time ``axes``; constant axes keep the row lowering.

The updates' shape is checked at build time where it is known (the oracle's rule); at run time
TensorRT rejects updates whose shape differs from the computed slice for constant start/stop/step,
since the index tensor is shaped from the computed geometry, never from updates.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

import numpy as np

from trt_scatter.networks.example import Example
from trt_scatter.networks.graph import INT64, TensorRTGraph, is_tensor
from trt_scatter.oracle import rules
from trt_scatter.oracle.slice_scatter import OP, check_node, check_slice_scatter, check_slice_scatter_static, slice_geometry, slice_shape

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    import tensorrt as trt
    from numpy.typing import ArrayLike

    from trt_scatter.model.node import OpNode
    from trt_scatter.networks.graph import OnnxGraph, Value

LIMIT = 2**62
IMPLS = ("native", "plugin")


def add_slice_scatter(network: trt.INetworkDefinition, data: trt.ITensor, updates: trt.ITensor, start: ArrayLike | trt.ITensor, stop: ArrayLike | trt.ITensor, step: ArrayLike | trt.ITensor, axes: ArrayLike | trt.ITensor | None = None, impl: str = "native") -> trt.ITensor:
    """Adds SliceScatter(data, updates, start, stop, step[, axes]) to ``network``; returns the output ITensor.

    ``start``/``stop``/``step``/``axes`` are 1-D integer constants (lists or arrays) or 1-D integer
    ITensors (values known at run time only; the native lowering casts them to int64, the plugin takes int32/int64; a run-time ``axes`` costs the native lowering one
    int64 destination per updated element, see :func:`_lower_runtime_axes`).
    The native lowering takes a run-time slice's length from ``updates``, never from ``stop``: a ``stop`` ITensor
    is read by no layer (TensorRT drops a network input that nothing reads, and warns).
    ``impl="plugin"`` adds the SliceScatter plugin (needs full TensorRT's ``add_plugin_v3``):
    ITensors are its inputs as they are, constants keep the arrays' int32/int64 type (lists become int64).
    """
    graph = TensorRTGraph(network, OP)
    graph.check_arguments(OP, dict(data=data, updates=updates), parameters=dict(start=start, stop=stop, step=step, axes=axes))
    graph.check_fixed_values(check_node, dict(data=data, updates=updates, start=start, stop=stop, step=step, axes=axes))
    rules.check_choice(OP, "impl", impl, IMPLS)
    if impl == "native":
        return lower_slice_scatter(graph, data, updates, start, stop, step, axes)
    checked = check(graph, data, updates, start, stop, step, axes)
    params = [start, stop, step] + ([] if axes is None else [axes])
    values = list(checked[:3]) + ([] if axes is None else [axes if is_tensor(axes) else rules.as_int_vector(OP, "axes", axes)])
    from trt_scatter.plugins import add_plugin_layer, require_plugin_layers

    graph.check_plugin_index_types(OP, dict(zip(("start", "stop", "step", "axes"), params)))
    require_plugin_layers(network, "SliceScatter")  # before any constant: a refusal leaves the network as it was
    _assert_lengths(graph, *checked)
    inputs = [value if is_tensor(value) else graph.constant(index_constant(param, value)) for param, value in zip(params, values)]
    return add_plugin_layer(network, "SliceScatter", [data, updates] + inputs)


def index_constant(original: ArrayLike, values: Sequence[int]) -> np.ndarray:
    """``values`` (checked Python ints) as a 1-D array of ``original``'s type if that is int32 or
    int64, else int64. Values beyond int64 (from uint64 or Python ints) clamp to its bounds,
    which selects the same slice, instead of wrapping around into another value."""
    dtype = np.asarray(original).dtype
    bounds = np.iinfo(INT64)
    return np.array([min(max(v, bounds.min), bounds.max) for v in values], dtype=dtype if dtype in (np.int32, np.int64) else INT64)


def check(graph: TensorRTGraph | OnnxGraph, data: trt.ITensor | Value, updates: trt.ITensor | Value, start: ArrayLike | trt.ITensor | Value, stop: ArrayLike | trt.ITensor | Value, step: ArrayLike | trt.ITensor | Value, axes: ArrayLike | trt.ITensor | Value | None = None) -> tuple[list[int] | trt.ITensor | Value, list[int] | trt.ITensor | Value, list[int] | trt.ITensor | Value, list[int] | trt.ITensor | Value]:
    """The oracle's rules on what is known at build time.

    Returns start, stop, step (each an int list, or the tensor itself where its values are known
    at run time only) and axes (in [0, r-1], or the tensor itself for run-time ``axes``, for which
    non-empty updates are refused where a static dimension of data is 0: whichever axes are sliced,
    updates are then empty).
    """
    rules.check_data_type(OP, "data", graph.dtype_of(data))
    rules.check_same_type(OP, "updates", graph.dtype_of(updates), graph.dtype_of(data))
    params = {"start": start, "stop": stop, "step": step, "axes": axes}
    for name, value in params.items():
        if is_tensor(value):
            rules.check_index_type(OP, name, graph.dtype_of(value))
            rules.check_vector(OP, name, graph.shape_of(value))
        elif value is not None or name != "axes":  # axes alone may be left out
            params[name] = rules.as_int_vector(OP, name, value)
    data_shape, updates_shape = graph.shape_of(data), graph.shape_of(updates)
    if not any(is_tensor(value) for value in params.values()):
        return (*(params[name] for name in ("start", "stop", "step")), check_slice_scatter(data_shape, updates_shape, **params))
    known = {name: graph.shape_of(value)[0] if is_tensor(value) else value for name, value in params.items() if value is not None}
    check_slice_scatter_static(data_shape, updates_shape, **known)
    start, stop, step, axes = (params[name] for name in ("start", "stop", "step", "axes"))
    if is_tensor(axes):
        rules.check_indices_can_exist(OP, "updates", updates_shape, list(enumerate(data_shape)))
        return start, stop, step, axes
    if axes is None:
        count = max(len(v) if isinstance(v, list) else v for v in known.values())  # equal where known (checked), else -1
        if count < 0:
            raise rules.ScatterInputError(OP, "start", "must have a static length: it is the number of sliced axes", "shape (?,)")
        axes = range(count)
    return start, stop, step, [axis % len(data_shape) for axis in axes]


def _assert_lengths(graph, start, stop, step, axes):
    """The run-time half of "start, stop, step (and axes) have one length" (as :func:`check` returns them), for those
    whose length is known at run time only: each against one whose length is known, else start's. Called once every
    rule known when the network is built has passed: a refusal leaves the network as it was."""
    params = {"start": start, "stop": stop, "step": step} | ({} if axes is None else {"axes": axes})
    lengths = {name: graph.shape_of(value)[0] if is_tensor(value) else len(value) for name, value in params.items()}
    known = [(name, n) for name, n in lengths.items() if rules.is_known(n)]
    name, length = known[0] if known else ("start", graph.dim(start, 0))
    for other, value in params.items():
        if other != name and not rules.is_known(lengths[other]):
            graph.assert_length(OP, other, value, length, f"must have as many entries as '{name}'")


def lower_slice_scatter(graph: TensorRTGraph | OnnxGraph, data: trt.ITensor | Value, updates: trt.ITensor | Value, start: ArrayLike | trt.ITensor | Value, stop: ArrayLike | trt.ITensor | Value, step: ArrayLike | trt.ITensor | Value, axes: ArrayLike | trt.ITensor | Value | None = None) -> trt.ITensor | Value:
    """The native lowering on ``graph`` (a :class:`~trt_scatter.networks.graph.TensorRTGraph` or ``OnnxGraph``)."""
    start, stop, step, axes = check(graph, data, updates, start, stop, step, axes)
    graph.check_scatter_type(OP, data)
    _assert_lengths(graph, start, stop, step, axes)
    if is_tensor(axes):
        return _lower_runtime_axes(graph, data, updates, start, step, axes)
    if not axes:  # no sliced axis: updates replace all of data, i.e. a full slice of axis 0
        start, stop, step, axes = [0], [LIMIT], [1], [0]
    if any(is_tensor(values) for values in (start, stop, step)):
        stop = [None] * len(axes)  # a run-time slice's length is updates': stop is not needed
    entries = [_entries(graph, values, len(axes)) for values in (start, stop, step)]
    slices = {axis: params for axis, *params in zip(axes, *entries)}
    pieces = []
    for axis in range(max(slices) + 1):
        if axis in slices:
            coordinates, count = _coordinates(graph, data, updates, axis, *slices[axis])
        else:
            count = graph.dim(data, axis)
            coordinates = graph.arange(count)
        pieces.append((coordinates, [count]))
    if stop[0] is not None:  # a slice's length that data's dimension sets at run time: updates must fit it
        graph.assert_shape(OP, "updates", updates, lambda: [count for _, (count,) in pieces] + graph.dims(data)[len(pieces) :],
                           "must have data's shape with each sliced axis cut to its slice's length")
    return graph.scatter_rows(data, pieces, updates)


def lower_node(graph: TensorRTGraph | OnnxGraph, node: OpNode, tensor: Callable[[str], trt.ITensor | Value]) -> trt.ITensor | Value:
    """A model's SliceScatter node (a :class:`trt_scatter.model.node.OpNode`) lowered on ``graph``: parameters
    the model holds as constants give constant geometry; ``tensor(name)``: the graph's value of an input."""
    data, updates = tensor("data"), tensor("updates")
    params = {name: node.constant(name) if node.constant(name) is not None else tensor(name) for name in ("start", "stop", "step", "axes") if name in node.inputs}
    return lower_slice_scatter(graph, data, updates, params["start"], params["stop"], params["step"], params.get("axes"))


def _entries(graph, values, count):
    """The ``count`` entries of start, stop or step: ints for a list (clamped to +-LIMIT, which
    keeps the host geometry's ``span + |step| - 1`` in int64), 1-element int64 tensors for a tensor
    (the run-time geometry computes nothing that could overflow)."""
    if not is_tensor(values):
        return [v if v is None else min(max(v, -LIMIT), LIMIT) for v in values]
    if graph.dtype_of(values) != INT64:
        values = graph.cast(values, INT64)
    return [values] if count == 1 else [graph.gather(values, [i]) for i in range(count)]


def _coordinates(graph, data, updates, axis, start, stop, step):
    """The int64 coordinates ``first + i*step`` of the slice along ``axis``, and their count (a dimension).

    ``start``/``stop``/``step`` are ints, or 1-element int64 tensors known at run time only (then
    ``stop`` is None: the count is updates').
    """
    dim = graph.dim(data, axis)
    runtime = stop is None
    if not runtime and isinstance(dim, int):
        first, count = slice_geometry(start, stop, step, dim)
        return graph.constant(first + step * np.arange(count, dtype=INT64)), count

    first = _clamped(graph, start, dim, step)
    if runtime:  # the count from updates; coordinates clamped, for values whose slice is not updates'
        count = graph.dim(updates, axis)
        rules.check_indices_can_exist(OP, "updates", graph.shape_of(updates), [(axis, dim if isinstance(dim, int) else -1)])
        coordinates = graph.as_tensor(_arith(graph, "add", _offsets(graph, count, step), first))
        return graph.indices_in_range(OP, coordinates, data, [axis], negative=False), count
    last = _clamped(graph, stop, dim, step)
    count = _arith(graph, "max", _arith(graph, "sub", last, first) if step > 0 else _arith(graph, "sub", first, last), 0)
    if abs(step) != 1:  # ceil(span / |step|) of a non-negative span
        count = _arith(graph, "div", _arith(graph, "add", count, abs(step) - 1), abs(step))
    return graph.as_tensor(_arith(graph, "add", _offsets(graph, count, step), first)), count


def _offsets(graph, count, step):
    """``i * step`` for ``i < count``: a constant where both are ints (nothing for one element)."""
    if not is_tensor(count) and not is_tensor(step):
        return 0 if count == 1 else graph.constant(step * np.arange(count, dtype=INT64))
    return _arith(graph, "mul", graph.arange(count), step)


def _clamped(graph, value, dim, step):
    """oracle.slice_geometry's clamp of start or stop: negative values count from the end, then
    [0, dim] for a positive step, [-1, dim-1] for a negative one. Any of the three may be a tensor.
    Written so that no intermediate overflows int64 for any int64 ``value``."""
    if not is_tensor(step):
        low = 0 if step > 0 else -1
        if not is_tensor(value):  # one side of the clamp holds already: dim + value <= high, value >= 0 >= low
            return _arith(graph, "max", _arith(graph, "add", dim, value), low) if value < 0 else _arith(graph, "min", value, dim if step > 0 else _arith(graph, "sub", dim, 1))
        high = dim if step > 0 else _arith(graph, "sub", dim, 1)
    else:
        negative = graph.binary("less", step, graph.as_tensor(0))
        low = graph.where(negative, graph.as_tensor(-1), graph.as_tensor(0))
        high = _arith(graph, "sub", dim, graph.where(negative, graph.as_tensor(1), graph.as_tensor(0)))
    if is_tensor(value):  # dim is added to negative values only, so the sum stays within int64
        shifted = graph.binary("add", value, graph.where(graph.binary("less", value, graph.as_tensor(0)), graph.as_tensor(dim), graph.as_tensor(0)))
    else:
        shifted = _arith(graph, "add", value, dim) if value < 0 else value
    return _arith(graph, "min", _arith(graph, "max", shifted, low), high)


_PYTHON = {"add": lambda a, b: a + b, "sub": lambda a, b: a - b, "mul": lambda a, b: a * b, "div": lambda a, b: a // b, "min": min, "max": max}


def _arith(graph, op, a, b):
    """``a op b`` on ints (computed here) or int64 tensors of shape (1,) or (n,) (a layer); adding 0 or
    multiplying by 1 adds no layer."""
    if not is_tensor(a) and not is_tensor(b):
        return _PYTHON[op](a, b)
    if (op in ("add", "sub") and not is_tensor(b) and b == 0) or (op in ("mul", "div") and not is_tensor(b) and b == 1):
        return a
    if op in ("add", "mul") and not is_tensor(a) and a == (0 if op == "add" else 1):
        return b
    return graph.binary(op, graph.as_tensor(a), graph.as_tensor(b))


def _lower_runtime_axes(graph, data, updates, start, step, axes):
    """The lowering for run-time ``axes``: every element of ``updates`` scattered to its flat position in data.

    Which axes are sliced is known at run time only, so no row of data can be formed at build
    time: data is seen as 1-D and each element gets its own destination (8 index bytes per
    updated element, :meth:`~trt_scatter.networks.graph._Composites.scatter_flat`). Every shape
    still comes from data's and updates' shapes, never from a value:

    1. per-dimension vectors of length r: the axes (negative ones normalized, out-of-range ones
       clamped) scatter start and step into the defaults 0 and 1 (one ND scatter each); each step
       is clamped to [-max(d, 1), max(d, 1)], which changes no slice (a larger one takes at most
       one element) and keeps ``step * stride`` from overflowing int64;
    2. ``first`` from start with OpenVINO's clamping (:func:`_clamped`, on the whole vector); as
       for run-time start/stop/step, each slice takes as many elements as updates has on its axis;
    3. element ``e`` of updates has multi-index ``i`` (updates' strides ``u``) and destination
       ``sum_d (first_d + i_d * step_d) * s_d`` (data's strides ``s``). With ``q_d = e div u_d``,
       ``i_d = q_d - n_d * q_{d-1}`` (``n``: updates' shape), so the destination is
       ``base + sum_d q_d * c_d`` with ``base = sum_d first_d * s_d``, ``w_d = step_d * s_d`` and
       ``c_d = w_d - n_{d+1} * w_{d+1}``: per axis, one division, one product and one sum of
       N-element int64 tensors (all element-wise, so TensorRT can fuse them; no intermediate is
       larger than the destinations themselves).

    Repeated or out-of-range axes (the spec forbids them; a constant ``axes`` is refused, a run-time
    one cannot be) and slices whose length differs from updates' give an unspecified result, never
    a write outside the output: destinations are clamped into data.
    """
    rank = len(graph.shape_of(data))
    dims, strides = graph.shape_vector(data), graph.vector(graph.strides(data))
    first, steps = graph.constant(np.zeros(rank, INT64)), graph.constant(np.ones(rank, INT64))
    if graph.shape_of(axes)[0] != 0:  # no axis: nothing sliced, updates replace data
        rows = graph.reshape(graph.axes_in_range(axes, rank), (-1, 1))
        first = graph.scatter(first, rows, _as_int64_vector(graph, start), "nd")
        steps = graph.scatter(steps, rows, _as_int64_vector(graph, step), "nd")
        bound = graph.binary("max", dims, graph.as_tensor(1))
        steps = graph.binary("min", graph.binary("max", steps, graph.binary("sub", graph.as_tensor(0), bound)), bound)
    first = _clamped(graph, first, dims, steps)
    weights = graph.binary("mul", steps, strides)
    coefficients = weights
    if rank > 1:
        trailing = graph.vector([graph.dim(updates, axis) for axis in range(1, rank)])
        following = graph.binary("mul", trailing, graph.gather(weights, list(range(1, rank))))
        coefficients = graph.binary("sub", weights, graph.concat([following, graph.constant(np.zeros(1, INT64))]))
    elements = graph.arange(graph.as_tensor(graph.volume(updates)))
    destinations = graph.reduce("sum", graph.binary("mul", first, strides))  # base
    for axis, stride in enumerate(graph.strides(updates)):
        quotients = elements if axis == rank - 1 else graph.binary("div", elements, graph.as_tensor(_arith(graph, "max", stride, 1)))  # stride 0: no element
        destinations = graph.binary("add", graph.binary("mul", quotients, graph.gather(coefficients, [axis])), destinations)
    destinations = graph.reshape(destinations, (-1, 1))
    return graph.scatter_flat(OP, "updates", data, destinations, updates)


def _as_int64_vector(graph, values):
    """start or step as a 1-D int64 tensor: a constant (values beyond int64 clamped to its bounds) or the tensor cast."""
    if not is_tensor(values):
        return graph.constant(index_constant(np.int64(0), values))
    return values if graph.dtype_of(values) == INT64 else graph.cast(values, INT64)


# ---- the example network (trt_scatter.networks.examples) ---------------------------------------


def _example_shapes(params):
    data_shape = params["data_shape"]
    start, stop, step = (rules.as_int_vector(OP, key, params[key]) for key in ("start", "stop", "step"))
    axes = None if params["axes"] is None else rules.as_int_vector(OP, "axes", params["axes"])
    axes = check_slice_scatter(data_shape, (-1,) * len(data_shape), start, stop, step, axes)
    return {"data": data_shape, "updates": slice_shape(data_shape, start, stop, step, axes)}


def _example_updates(params, shapes):
    # 10, 20, 30, ...: with the defaults, the values of SliceScatter-15's example 2.
    updates_shape = shapes["updates"]
    return {"updates": 10 * (1 + np.arange(int(np.prod(updates_shape)))).reshape(updates_shape)}


def _add_example(network, inputs, params, index_dtype, impl="native"):
    start, stop, step = (np.array(params[key], dtype=index_dtype) for key in ("start", "stop", "step"))
    axes = None if params["axes"] is None else np.array(params["axes"], dtype=index_dtype)
    return add_slice_scatter(network, inputs["data"], inputs["updates"], start, stop, step, axes, impl=impl)


#: The defaults are SliceScatter-15's example 2; ``impl`` picks the builder's implementation.
EXAMPLE = Example(
    defaults={"data_shape": (2, 5), "start": (-25,), "stop": (25,), "step": (2,), "axes": (1,)},
    shapes=_example_shapes, values=_example_updates, add=_add_example, options=("impl",),
)
