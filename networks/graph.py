"""A tiny graph-building interface with two backends: a TensorRT network and an ONNX graph.

Every lowering in :mod:`trt_scatter.networks` is written once against this interface, so the
code that adds TensorRT layers to an ``INetworkDefinition`` is the same code that writes the
ONNX graph that onnxruntime executes in the tests (no machine here can run a TensorRT engine).
One primitive is one TensorRT layer and one ONNX node (``arange`` on a run-time length adds a
reshape in ONNX, because ONNX's ``Range`` takes scalars):

=============  ===============================  ============================
primitive      TensorRT layer                   ONNX node
=============  ===============================  ============================
constant       IConstantLayer                   initializer
shape          IShapeLayer (int64)              Shape
gather         IGatherLayer (DEFAULT mode)      Gather
binary         IElementWiseLayer                Add/Sub/Mul/Div/Min/Max/Less
reduce (all)   IReduceLayer (SUM / PROD)        ReduceSum / ReduceProd
where          ISelectLayer                     Where
concat         IConcatenationLayer              Concat
reshape        IShuffleLayer                    Reshape (allowzero=1)
cast           ICastLayer                       Cast
arange         IFillLayer (LINSPACE)            Range
scatter        IScatterLayer (ELEMENT / ND)     ScatterElements / ScatterND
  + reduction  (none: IScatterLayer has none)   the same, ``reduction`` add/mul/min/max
assertion      IAssertionLayer                  (none: ONNX has no assertion)
=============  ===============================  ============================

Tensors are what the backend hands out (``ITensor``, or :class:`Value` for ONNX); lowerings
only pass them back and ask :meth:`shape_of` / :meth:`dtype_of`. Static shapes use -1 for a
dimension not known when the graph is built. Shape arithmetic is int64 in both backends
(TensorRT's ``IShapeLayer`` and ONNX's ``Shape`` both produce int64), and binary operations
need operands of equal rank (TensorRT broadcasts only dimensions of size 1 at equal rank).
"""

from __future__ import annotations

import dataclasses
import functools
import itertools
import numbers
from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter import dtypes
from trt_scatter.oracle.reductions import ONNX_REDUCTIONS

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Sequence

    import onnx
    import tensorrt as trt
    from numpy.typing import ArrayLike, DTypeLike

INT64 = np.dtype(np.int64)
MAX_DIMS = 8  #: the most dimensions a TensorRT tensor has (Dims.MAX_DIMS)


def grid_is_too_deep(grid: Sequence[object]) -> bool:
    """Whether ScatterND's indices over ``grid`` (``grid + [1]``) would pass TensorRT's most dimensions: such a grid is
    written as one axis (:meth:`TensorRTGraph.grid_as_one_axis`)."""
    return len(grid) >= MAX_DIMS


#: binary operation name -> (TensorRT ``ElementWiseOperation`` name, ONNX op type)
BINARY_OPS = {
    "add": ("SUM", "Add"),
    "sub": ("SUB", "Sub"),
    "mul": ("PROD", "Mul"),
    "div": ("DIV", "Div"),  # only on non-negative integers: the backends round negative quotients differently
    "min": ("MIN", "Min"),
    "max": ("MAX", "Max"),
    "less": ("LESS", "Less"),
}

#: reduction name -> (TensorRT ``ReduceOperation`` name, ONNX op type, NumPy function)
REDUCE_OPS = {"sum": ("SUM", "ReduceSum", np.sum), "prod": ("PROD", "ReduceProd", np.prod)}

_NUMPY_OPS = {"add": np.add, "sub": np.subtract, "mul": np.multiply, "div": np.floor_divide, "min": np.minimum, "max": np.maximum, "less": np.less}


def _as_int64(values):
    return np.asarray(values, dtype=INT64)


class _Composites:
    """What lowerings build from the primitives, the same way on both backends.

    A *dimension* here is an int when it is known at build time, else a 1-element 1-D int64
    tensor computed from a shape at run time.

    Constants fold: ``binary`` and ``reshape`` of tensors made by ``constant`` compute their
    result on the host (NumPy, the same integer arithmetic) and add a constant instead of a layer.
    """

    #: element types the graph's scatter lacks: a lowering refuses them before it adds a layer
    SCATTER_LACKS = ()

    def check_scatter_type(self, op: str, data: trt.ITensor | Value, name: str = "data") -> None:
        """Refuses, by name and before any layer is added, data of a type this graph's scatter lacks."""
        from trt_scatter.oracle.rules import ScatterInputError

        dtype = self.dtype_of(data)
        if dtype in self.SCATTER_LACKS:
            raise ScatterInputError(op, name, f"must not be {dtype} for TensorRT's own layers (IScatterLayer has no {dtype}): cast "
                                    "the element inputs to int32 and the output back", str(dtype))

    def check_scatter_reduction(self, op: str, reduction: str) -> None:
        """Refuses, naming ``impl``, a scatter with a reduction on a graph whose scatter has none (TensorRT's layers)."""
        from trt_scatter.oracle.rules import ScatterInputError

        if not self.SCATTER_REDUCTIONS:
            raise ScatterInputError(op, "impl", f"'native' has no TensorRT layer (IScatterLayer has no reduction, {reduction!r} "
                                    "included): build the node as the plugin (impl='plugin', trt-scatter build --plugins)", "'native'")

    def _constant_value(self, tensor):
        return self._constants.get(self._key(tensor)) if is_tensor(tensor) else None

    def _folded(self, op, a, b):
        """The constant result of ``op`` (a binary operation, or "reshape" to ``b``) when ``a`` and
        ``b`` are constants, else None."""
        x = self._constant_value(a)
        y = self._constant_value(b) if is_tensor(b) else b if op == "reshape" else None
        if x is None or y is None:
            return None
        if op == "reshape":
            try:
                return self.constant(x.reshape(tuple(int(d) for d in np.asarray(y).reshape(-1))))
            except ValueError:  # -1 next to a 0: left to the backend's reshape
                return None
        return self.constant(_NUMPY_OPS[op](x, y).astype(bool if op == "less" else x.dtype))

    def _folded_reduce(self, op, tensor):
        """The constant result of ``reduce(op, tensor)`` when ``tensor`` is a constant, else None."""
        x = self._constant_value(tensor)
        if x is None:
            return None
        return self.constant(REDUCE_OPS[op][2](x, keepdims=True).astype(x.dtype))

    def dim(self, tensor: trt.ITensor | Value, axis: int) -> int | trt.ITensor | Value:
        """Dimension ``axis`` of ``tensor``: its static size, or a gather from its shape (both cached)."""
        size = self.shape_of(tensor)[axis]
        if size >= 0:
            return size
        key = (self._key(tensor), axis)
        if key not in self._shapes:
            self._shapes[key] = self.gather(self.shape_tensor(tensor), [axis])
        return self._shapes[key]

    def as_tensor(self, dim: int | trt.ITensor | Value) -> trt.ITensor | Value:
        """A dimension as a 1-element 1-D int64 tensor."""
        return self.constant(_as_int64([dim])) if isinstance(dim, (int, np.integer)) else dim

    def shape_from(self, dims: Sequence[int | trt.ITensor | Value], infer: bool = True) -> tuple[int, ...] | trt.ITensor | Value:
        """A shape from dimensions: a tuple if all are ints, or (``infer``, for a reshape) if at
        most one is not (it becomes -1); else a concat of 1-element tensors."""
        known = [int(d) for d in dims if isinstance(d, (int, np.integer))]
        if len(dims) - len(known) <= (1 if infer and 0 not in known else 0):  # -1 cannot be inferred next to a 0
            return tuple(-1 if not isinstance(d, (int, np.integer)) else int(d) for d in dims)
        if len(dims) == 1:  # a dimension is a 1-element 1-D tensor already
            return dims[0]
        return self.concat([self.as_tensor(d) for d in dims])

    def indices_in_range(self, op: str, indices: trt.ITensor | Value, data: trt.ITensor | Value, axes: Sequence[int], negative: bool) -> trt.ITensor | Value:
        """``indices`` mapped into [0, s-1] for each dimension s of ``data`` along ``axes``, in their own type.

        ``negative``: first add s to negative values (ONNX's [-s, s-1] -> [0, s-1]). Then clamp
        to [0, s-1]: values the spec forbids (which the oracle and onnxruntime reject but no
        TensorRT layer can raise on at run time) then write to a valid place, never outside the
        output; their result is as unspecified as the spec leaves it. ``axes`` has one axis per
        column of ``indices``' last axis, or one for all of ``indices``. Clamping cannot help
        where s is 0, so there :meth:`_assert_indices_can_exist` guards it (``op`` names the op);
        constant indices into a dimension known at run time only are asserted to fit it
        (:meth:`_assert_constant_indices_in_range`), not clamped to a place the spec does not define.
        """
        dims = [self.dim(data, axis) for axis in axes]
        self._assert_indices_can_exist(op, indices, list(zip(axes, dims)))
        self._assert_constant_indices_in_range(op, indices, list(zip(axes, dims)), negative)
        dtype = self.dtype_of(indices)
        rank = len(self.shape_of(indices))
        shape = (1,) * (rank - 1) + (len(dims),) if rank else ()
        sizes = self.shape_from(dims, infer=False)
        if isinstance(sizes, tuple):
            sizes = np.array(sizes, dtype=dtype).reshape(shape)
            highest = self.constant(sizes - 1)
            sizes = self.constant(sizes) if negative else None
        else:
            sizes = sizes if dtype == INT64 else self.cast(sizes, dtype)
            sizes = sizes if self.shape_of(sizes) == shape else self.reshape(sizes, shape)
            highest = self.binary("sub", sizes, self.constant(np.ones((1,) * len(shape), dtype=dtype)))
        zero = self.constant(np.zeros((1,) * len(shape), dtype=dtype))
        if negative:
            indices = self.where(self.binary("less", indices, zero), self.binary("add", indices, sizes), indices)
        return self.binary("min", self.binary("max", indices, zero), highest)

    def _assert_constant_indices_in_range(self, op, indices, dims, negative):
        """The run-time half of the index range rule for ``indices`` whose values the network fixes, along each
        dimension of ``dims`` ((axis of data, dimension) pairs) known at run time only (the oracle's check decides the
        others when the network is built): the clamp of :meth:`indices_in_range` would write such a value out of range
        to a place the spec does not define, so the graph asserts that the dimension takes it. TensorRT then rejects a
        profile whose bound breaks it at build time, and reports a run's shapes that do."""
        made_here = self._key(indices) in self._constants  # positions the builder computed (a cache's 0..S-1): its own rules hold them
        values = self.fixed_value(indices) if self.RUNTIME_ASSERTIONS and not made_here else None
        if values is None or values.size == 0:
            return
        columns = values.reshape(-1, len(dims)) if len(dims) > 1 else values.reshape(-1, 1)
        for column, (axis, dim) in enumerate(dims):
            if isinstance(dim, (int, np.integer)):
                continue
            low, high = int(columns[:, column].min()), int(columns[:, column].max())
            needed = max(high, -low - 1) if negative else high  # the dimension must exceed it
            span = "[-s, s-1]" if negative else "[0, s-1]"
            self.assertion(self.binary("less", self.constant(np.full(1, needed, INT64)), dim),
                           f"{op}: 'indices' values must be in {span} where s is data's dimension {axis} when the network runs "
                           f"(its constant values lie in [{low}, {high}])")

    def _assert_indices_can_exist(self, op, indices, dims):
        """The run-time half of :func:`~trt_scatter.oracle.rules.check_indices_can_exist`, which
        decides what is known at build time: ``indices`` must be empty if a dimension among
        ``dims`` ((axis of data, dimension) pairs) that is only known at run time is 0 (indices
        with a last axis of k > 0 columns are empty exactly when they have no rows). Clamping
        indices into [0, s-1] cannot make a write into a dimension of size 0 safe, so the graph
        asserts instead: TensorRT rejects the network at build time where the optimization profile
        decides the assertion, else reports an error at run time for the shapes supplied (as
        ``IAssertionLayer`` documents). Backends without assertions (ONNX) add nothing.
        """
        # A size known to be 0 counts too when the number of indices is known at run time only.
        unknown = [(axis, dim) for axis, dim in dims if not isinstance(dim, (int, np.integer)) or dim == 0]
        shape = self.shape_of(indices)
        if not unknown or not self.RUNTIME_ASSERTIONS or 0 in shape:
            return
        smallest = functools.reduce(lambda a, b: self.binary("min", a, b), [self.as_tensor(dim) for _, dim in unknown])
        if any(d < 0 for d in shape):  # empty indices at run time: any size will do
            count = self.shape(self.reshape(indices, (-1,)))  # shape layers only: the reshape is never run
            one = self.constant(np.ones(1, INT64))
            smallest = self.binary("max", smallest, self.binary("sub", one, self.binary("min", count, one)))
        axes = " or ".join(str(axis) for axis, _ in unknown)
        rule = f"must be empty when data's dimension {axes} has size 0 at run time: no index is then in range"
        self.assertion(self.binary("less", self.constant(np.zeros(1, INT64)), smallest), f"{op}: 'indices' {rule}")

    def assert_shape_at_most(self, op: str, name: str, tensor: trt.ITensor | Value, bound: trt.ITensor | Value, axes: Sequence[int], rule: str) -> None:
        """The run-time half of a rule "``tensor``'s dimension ``a`` is at most ``bound``'s", for each of ``axes`` where
        one of the two is known at run time only (the oracle's check decides the others when the network is built):
        one assertion over all of them, naming ``op``, the input ``name`` and the ``rule``. Backends without assertions
        (ONNX) add nothing."""
        shape, bounds = self.shape_of(tensor), self.shape_of(bound)
        axes = [axis for axis in axes if shape[axis] < 0 or bounds[axis] < 0]
        if not axes or not self.RUNTIME_ASSERTIONS:
            return
        excess = self.binary("sub", self.gather(self.shape_vector(tensor), axes), self.gather(self.shape_vector(bound), axes))
        self.assertion(self.binary("less", excess, self.constant(np.ones(len(axes), INT64))), f"{op}: '{name}' {rule}")

    def assert_length(self, op: str, name: str, vector: trt.ITensor | Value, length: int | trt.ITensor | Value, rule: str) -> None:
        """The run-time half of a rule "the 1-D ``vector`` has ``length`` entries" (an int, or a 1-element tensor),
        where either is known at run time only: one assertion naming ``op``, the input ``name`` and the ``rule``.
        Backends without assertions (ONNX) add nothing."""
        self.assert_shape(op, name, vector, [length], rule)

    def assert_shape(self, op: str, name: str, tensor: trt.ITensor | Value, dims: Sequence[int | trt.ITensor | Value] | Callable[[], Sequence[int | trt.ITensor | Value]], rule: str) -> None:
        """The run-time half of a rule "``tensor`` has the shape ``dims``" (ints, or 1-element tensors; or a function
        that gives them, called only where the backend asserts, so that the rule's dimensions add no Shape or Gather
        nodes to an ONNX graph), where some dimension of either is known at run time only (the oracle's check decides
        the rest when the network is built): one assertion naming ``op``, the input ``name`` and the ``rule``. Backends
        without assertions (ONNX) add nothing."""
        if not self.RUNTIME_ASSERTIONS:
            return
        dims = dims() if callable(dims) else dims
        if min(self.shape_of(tensor), default=0) >= 0 and not any(is_tensor(dim) for dim in dims):
            return
        given, wanted = self.shape_vector(tensor), self.as_tensor(dims[0]) if len(dims) == 1 else self.vector(dims)
        distance = self.binary("sub", self.binary("max", given, wanted), self.binary("min", given, wanted))
        self.assertion(self.binary("less", distance, self.constant(np.ones(len(dims), INT64))), f"{op}: '{name}' {rule}")

    def shape_tensor(self, tensor: trt.ITensor | Value) -> trt.ITensor | Value:
        """``tensor``'s run-time shape, one shape layer per tensor."""
        key = self._key(tensor)
        if key not in self._shapes:
            self._shapes[key] = self.shape(tensor)
        return self._shapes[key]

    def product(self, dims: Sequence[int | trt.ITensor | Value]) -> int | trt.ITensor | Value:
        """The product of dimensions: an int if all are known, else a 1-element tensor."""
        known = int(np.prod([d for d in dims if isinstance(d, (int, np.integer))], dtype=np.int64))
        unknown = [d for d in dims if not isinstance(d, (int, np.integer))]
        if not unknown:
            return known
        result = unknown[0]
        for d in unknown[1:]:
            result = self.binary("mul", result, d)
        return result if known == 1 else self.binary("mul", result, self.as_tensor(known))

    def scatter_rows(self, data: trt.ITensor | Value, pieces: Sequence[tuple[trt.ITensor | Value, Sequence[int | trt.ITensor | Value]]], updates: trt.ITensor | Value) -> trt.ITensor | Value:
        """ND scatter of ``updates`` into the rows of ``data`` flattened over its first ``len(pieces)`` axes.

        ``pieces[j]`` is ``(coordinates, dims)``: int64 coordinates along data's axis j, of shape
        ``dims`` (a list of dimensions). The pieces span the grid ``dims_0 + dims_1 + ...`` side by
        side, so ``updates`` has shape ``grid + data.shape[k:]``. Instead of k coordinates per row
        (ND mode on data as it is), each row gets its one flat row number ``sum_j coordinates_j *
        stride_j`` (strides of data's first k axes): k times fewer index bytes, at the price of a
        reshape (IShuffleLayer) of data before the scatter and one of the output after it.
        """
        k, rank = len(pieces), len(self.shape_of(data))
        lead = [self.dim(data, j) for j in range(k)] if k > 1 else []
        grid = [d for _, dims in pieces for d in dims]
        one_axis = grid_is_too_deep(grid)
        rows, offset = None, 0
        for j, (coordinates, dims) in enumerate(pieces):
            stride = self.product(lead[j + 1 :])
            if not (isinstance(stride, int) and stride == 1):
                coordinates = self.binary("mul", coordinates, self._broadcastable(stride, len(dims)))
            placed = self.reshape(coordinates, self.shape_from([1] * offset + list(dims) + [1] * (len(grid) - offset - len(dims) + (not one_axis))))
            rows = placed if rows is None else self.binary("add", rows, placed)
            offset += len(dims)
        if one_axis:
            rows, updates = self.grid_as_one_axis(rows, grid, updates, [self.dim(data, j) for j in range(k, rank)])
        if k == 1:
            return self.scatter(data, rows, updates, "nd")
        tail = [self.dim(data, j) for j in range(k, rank)]
        if all(isinstance(d, int) and d > 0 for d in tail):
            flat_shape = (-1,) + tuple(tail)
        else:  # -1 cannot be inferred next to a 0 (an empty row)
            flat_shape = self.shape_from([self.product(lead)] + tail, infer=False)
        written = self.scatter(self.reshape(data, flat_shape), rows, updates, "nd")
        data_shape = self.shape_of(data)
        return self.reshape(written, data_shape if all(d >= 0 for d in data_shape) else self.shape_tensor(data))

    def grid_as_one_axis(self, rows: trt.ITensor | Value, grid: Sequence[int | trt.ITensor | Value], updates: trt.ITensor | Value,
                         tail: Sequence[int | trt.ITensor | Value]) -> tuple[trt.ITensor | Value, trt.ITensor | Value]:
        """ScatterND's row numbers ``rows`` (over ``grid``) and ``updates`` (``grid + tail``) with the grid as one axis:
        ``(n, 1)`` and ``(n,) + tail``. For a grid of :data:`MAX_DIMS` axes (:func:`grid_is_too_deep`), where ``grid + [1]`` would pass TensorRT's
        most dimensions."""
        count = rows_of_updates = self.product(grid)
        if not self.RUNTIME_ASSERTIONS and (min(self.shape_of(updates), default=0) < 0 or any(is_tensor(d) for d in [*grid, *tail])):
            # ONNX asserts no shape, and a Reshape checks the count alone: updates of another shape would be written. One
            # row more where any dimension differs fails the Reshape, as ScatterND's shape check does on a smaller grid.
            given, wanted = self.shape_vector(updates), self.vector([*grid, *tail])
            distance = self.reduce("sum", self.binary("sub", self.binary("max", given, wanted), self.binary("min", given, wanted)))
            rows_of_updates = self.binary("add", self.as_tensor(count), self.binary("min", distance, self.constant(_as_int64([1]))))
        return (self.reshape(rows, self.shape_from([count, 1], infer=False)),
                self.reshape(updates, self.shape_from([rows_of_updates, *tail], infer=False)))

    def _broadcastable(self, dim, rank):
        """A dimension as an int64 tensor of shape (1,)*rank, to multiply a rank-``rank`` tensor by."""
        if isinstance(dim, (int, np.integer)):
            return self.constant(np.full((1,) * rank, dim, dtype=INT64))
        return self.reshape(dim, (1,) * rank)

    # -- scatters with a reduction (ScatterElementsReduce, ScatterNDReduce)

    def full_like(self, tensor: trt.ITensor | Value, value: float, dtype: DTypeLike) -> trt.ITensor | Value:
        """A tensor of ``tensor``'s shape (static or run-time) filled with ``value`` of ``dtype``: a Where of two
        equal constants under ``tensor < tensor`` (false for every element, NaN included), with the primitives
        both backends have."""
        rank = len(self.shape_of(tensor))
        fill = self.constant(np.full((1,) * rank, value, dtype=dtype))
        return self.where(self.binary("less", tensor, tensor), fill, fill)

    def scatter_reduce(self, data: trt.ITensor | Value, indices: trt.ITensor | Value, updates: trt.ITensor | Value, mode: str, reduction: str, include_self: int, axis: int = 0) -> trt.ITensor | Value:
        """``data`` with ``updates`` combined at ``indices`` (``mode`` "element" or "nd", indices in range) by
        ``reduction`` (add, mul, min, max, mean), ``include_self`` 0 or 1: trt_scatter.oracle.reductions'
        semantics from the scatter primitive's reductions (add/mul/min/max with data's value first).

        - ``include_self=0``: a plain scatter first writes the reduction's identity into every element some
          update reaches (-0.0 for float add, which leaves every first update as it is, 1, +-inf or the
          integer extremes; repeated targets all write that one value), then the reduction runs on that.
          (Not a Where of data and the identity: onnxruntime's Where turns a -0.0 it takes from its first
          branch into 0.0.)
        - ``mean``: an add, divided by the number of updates per element (a second scatter adds int64 ones),
          plus 1 with ``include_self``; elements no update reaches divide by 1. Floats by true division, the
          count cast to the element type through float32 below it; integers by floor division in 64 bits
          (ONNX's Div truncates: one less where the quotient times the count exceeds the sum).

        The scatter's order for repeated targets is the backend's: onnxruntime's CPU kernels combine in
        ascending position, the order the oracle defines (their min/max settle ties of -0.0 and 0.0, and
        NaN payloads, their own way).
        """
        dtype = np.dtype(self.dtype_of(data))
        if not include_self:
            data = self.scatter(data, indices, self.full_like(updates, _identity(reduction, dtype), dtype), mode, axis)
        combined = self.scatter(data, indices, updates, mode, axis, reduction="add" if reduction == "mean" else reduction)
        if reduction != "mean":
            return combined
        rank = len(self.shape_of(data))
        counts = self.scatter(self.full_like(data, 0, INT64), indices, self.full_like(updates, 1, INT64), mode, axis, reduction="add")
        one = self.constant(np.ones((1,) * rank, INT64))
        count = self.binary("max", self.binary("add", counts, one) if include_self else counts, one)
        if dtype.kind not in "iu":
            divisor = self.cast(count, np.float32) if dtype.itemsize < 4 else count
            return self.binary("div", combined, self.cast(divisor, dtype))
        wide = np.dtype(np.int64 if dtype.kind == "i" else np.uint64)
        total = self.cast(combined, wide) if dtype != wide else combined
        count = self.cast(count, wide) if wide != INT64 else count
        quotient = self.binary("div", total, count)
        if dtype.kind == "i":  # truncated toward zero: floor is one less where the remainder is negative
            below = self.binary("less", total, self.binary("mul", quotient, count))
            quotient = self.binary("sub", quotient, self.cast(below, wide))
        return self.cast(quotient, dtype) if dtype != wide else quotient

    # -- element-wise scatters, for geometry that only the run time knows (run-time axes)

    def shape_vector(self, tensor: trt.ITensor | Value) -> trt.ITensor | Value:
        """``tensor``'s shape as a 1-D int64 tensor: a constant where it is static, else its shape layer."""
        shape = self.shape_of(tensor)
        return self.constant(_as_int64(shape)) if all(d >= 0 for d in shape) else self.shape_tensor(tensor)

    def volume(self, tensor: trt.ITensor | Value) -> int | trt.ITensor | Value:
        """The number of elements of ``tensor``: an int where its shape is static, else a 1-element
        tensor (one reduction of its shape)."""
        shape = self.shape_of(tensor)
        if all(d >= 0 for d in shape):
            return int(np.prod(shape, dtype=np.int64))
        key = ("volume", self._key(tensor))
        if key not in self._shapes:
            self._shapes[key] = self.reduce("prod", self.shape_tensor(tensor))
        return self._shapes[key]

    def dims(self, tensor: trt.ITensor | Value) -> list[int | trt.ITensor | Value]:
        """Every dimension of ``tensor`` (:meth:`dim`: static sizes as ints)."""
        return [self.dim(tensor, axis) for axis in range(len(self.shape_of(tensor)))]

    def strides(self, tensor: trt.ITensor | Value) -> list[int | trt.ITensor | Value]:
        """The C-order strides of ``tensor`` (in elements), one dimension (int or 1-element tensor) per axis."""
        dims = self.dims(tensor)
        strides = [1]
        for dim in reversed(dims[1:]):
            strides.insert(0, self.product([strides[0], dim]))
        return strides

    def vector(self, dims: Sequence[int | trt.ITensor | Value]) -> trt.ITensor | Value:
        """Dimensions as one 1-D int64 tensor: a constant where all are ints, else a concat."""
        if not any(is_tensor(dim) for dim in dims):
            return self.constant(_as_int64(dims))
        return self.concat([self.as_tensor(dim) for dim in dims])

    def axes_in_range(self, axes: trt.ITensor | Value, rank: int) -> trt.ITensor | Value:
        """Run-time ``axes`` (any integer type, 0-D or 1-D) as a 1-D int64 tensor of axes in [0, rank-1].

        Negative axes count from the end (adds ``rank``); then values are clamped into [0, rank-1]:
        an axis out of range (which the spec forbids and no layer can refuse at run time) then
        names some axis of data, so what it writes stays inside the output, unspecified.
        """
        axes = axes if self.dtype_of(axes) == INT64 else self.cast(axes, INT64)
        axes = axes if len(self.shape_of(axes)) == 1 else self.reshape(axes, (-1,))
        zero = self.constant(np.zeros(1, INT64))
        axes = self.where(self.binary("less", axes, zero), self.binary("add", axes, self.constant(_as_int64([rank]))), axes)
        return self.binary("min", self.binary("max", axes, zero), self.constant(_as_int64([rank - 1])))

    def scatter_flat(self, op: str, name: str, data: trt.ITensor | Value, destinations: trt.ITensor | Value, updates: trt.ITensor | Value) -> trt.ITensor | Value:
        """Writes element ``m`` of ``updates`` (in C order) to element ``destinations[m]`` of ``data``
        flattened (``destinations``: int64 of shape (N, 1), N = updates' size); returns data's shape.

        One ND scatter (k = 1) on data seen as 1-D: 8 index bytes per updated element, the price of
        a geometry that only the run time knows (no shape may depend on a tensor's values, so rows
        of a run-time length cannot be formed). Destinations are clamped into [0, size-1], so
        whatever the run-time values, nothing is written outside the output. That cannot help when
        data is empty at run time: there the graph asserts that ``updates`` is empty too (``name``
        is the input the oracle names for that rule), as :meth:`_assert_indices_can_exist` does.
        """
        size = self.volume(data)
        if isinstance(size, int) and size > 0:
            highest = self.constant(_as_int64([[size - 1]]))
        else:
            highest = self.reshape(self.binary("sub", self.as_tensor(size), self.constant(_as_int64([1]))), (1, 1))
            self._assert_not_empty(op, name, size, updates)
        destinations = self.binary("min", self.binary("max", destinations, self.constant(np.zeros((1, 1), INT64))), highest)
        written = self.scatter(self.reshape(data, (-1,)), destinations, self.reshape(updates, (-1,)), "nd")
        data_shape = self.shape_of(data)
        return self.reshape(written, data_shape if all(d >= 0 for d in data_shape) else self.shape_tensor(data))

    def _assert_not_empty(self, op, name, size, updates):
        """``updates`` must be empty where ``size`` (data's, an int or a 1-element tensor) is 0 at run time."""
        count = self.volume(updates) if self.RUNTIME_ASSERTIONS else 0
        if isinstance(count, int) and count == 0:
            return
        one = self.constant(np.ones(1, INT64))
        nothing_to_write = one if isinstance(count, int) else self.binary("sub", one, self.binary("min", self.as_tensor(count), one))
        fits = self.binary("less", self.constant(np.zeros(1, INT64)), self.binary("max", self.as_tensor(size), nothing_to_write))
        self.assertion(fits, f"{op}: '{name}' must be empty when 'data' is empty at run time: no element of data is then in range")


class TensorRTGraph(_Composites):
    """Adds layers to a TensorRT ``INetworkDefinition`` (``tensorrt`` or ``tensorrt_rtx``)."""

    #: index types ``scatter(mode="nd")`` takes
    ND_INDEX_TYPES = (np.dtype(np.int32), INT64)
    #: ``scatter(mode="element")`` needs indices no longer than data on the axis too (ONNX does not)
    ELEMENT_INDICES_WITHIN_DATA_ON_AXIS = True
    RUNTIME_ASSERTIONS = True
    SCATTER_REDUCTIONS = False  # IScatterLayer has no reduction (TensorRT 10.x, 11.x, TensorRT-RTX)
    SCATTER_LACKS = (np.dtype(np.uint8),)  # else the build fails later, far from the call

    def __init__(self, network: trt.INetworkDefinition, op: str = "trt_scatter") -> None:
        from trt_scatter.backend import tensorrt
        from trt_scatter.oracle.rules import ScatterInputError

        self.trt = tensorrt()
        if not hasattr(network, "add_constant"):  # an INetworkDefinition, or an object that passes its calls on to one
            raise ScatterInputError(op, "network", "must be a TensorRT INetworkDefinition", type(network).__name__)
        self.network = network
        self._shapes, self._constants, self._producers = {}, {}, {}

    def _key(self, tensor):
        return tensor.name

    def check_arguments(self, op: str, tensors: dict[str, object], constants: dict[str, object] | None = None,
                        parameters: dict[str, object] | None = None) -> None:
        """The network builders take ITensors for an op's tensors and Python or NumPy integers for its ``constants``
        (an axis attribute; ``parameters``: lists, arrays or ITensors of this network): the other way round TensorRT
        would fail far from the call, so refuse it by name."""
        from trt_scatter.oracle.rules import ScatterInputError

        for name, value in tensors.items():
            if not isinstance(value, self.trt.ITensor):
                rule = "must be an ITensor of the network (an array becomes one with network.add_constant(shape, array).get_output(0))"
                raise ScatterInputError(op, name, rule, describe(value))
        for name, value in {**tensors, **(parameters or {})}.items():
            if not isinstance(value, self.trt.ITensor):
                continue
            if not self._owns(value):  # TensorRT would log a usage error and return no layer, failing far from here
                raise ScatterInputError(op, name, "must be an ITensor of this network (it is another network's)", describe(value))
            try:
                self.dtype_of(value)
            except TypeError:  # fp8, fp4, int4, e8m0: no NumPy type, so no rule of the oracle's can speak of it
                raise ScatterInputError(op, name, "must have an element type NumPy has (bool, integers, floats, bfloat16)", value.dtype) from None
        for name, value in (constants or {}).items():
            if isinstance(value, self.trt.ITensor):
                rule = "must be an int (a Python or NumPy integer): its value is used when the network is built"
                raise ScatterInputError(op, name, rule, describe(value))

    def check_plugin_index_types(self, op: str, tensors: dict[str, object]) -> None:
        """The plugins' kernels read index inputs of int32 or int64 only (as validation requires of a model's node):
        refuse another type by name before any layer is added. Constants are written in one of those."""
        from trt_scatter.oracle.rules import check_type_in

        for name, value in tensors.items():
            if isinstance(value, self.trt.ITensor):
                check_type_in(op, name, self.dtype_of(value), dtypes.INDEX_TYPES)

    def check_fixed_values(self, check_node: Callable[[Any], None], inputs: dict[str, object], attributes: dict[str, object] | None = None) -> None:
        """The oracle's rules on a node (``check_node``, an op's oracle module's) over a builder's arguments by input name,
        where one of them is an integer ITensor whose values the network fixes (``network.add_constant``'s): validation
        reads a model's initializers so, and the lowering's clamp would turn constant indices out of range into writes
        the spec does not define; here they are refused by name. Other arguments are left to the builder's own checks."""
        node = _BuilderNode(self, inputs, attributes or {})
        if any(is_tensor(value) and node.constant(name) is not None for name, value in node.inputs.items()):
            check_node(node)

    def fixed_value(self, tensor: trt.ITensor) -> np.ndarray | None:
        """The values of ``tensor`` where a constant layer of the network makes it and they are integers (indices and
        parameters, what the rules read), else None."""
        if tensor.name in self._constants:
            return self._constants[tensor.name]
        if self.dtype_of(tensor).kind not in "iu":  # bfloat16 weights are no NumPy array; floats set no rule's value
            return None
        layer = self._producer(tensor)
        if layer is None or layer.type != self.trt.LayerType.CONSTANT:
            return None
        layer.__class__ = self.trt.IConstantLayer  # as TensorRT's Python API casts a layer it lists (polygraphy does too)
        weights = layer.weights
        values = weights.numpy() if hasattr(weights, "numpy") else np.asarray(weights)  # TensorRT 10.x: Weights; TensorRT-RTX: an array
        return values.reshape(tuple(layer.shape))

    def _producer(self, tensor):
        """The layer of the network whose output ``tensor`` is (looked for from the last layer back: a builder's tensors
        are mostly recent; found once per builder call), or None for a network input or another network's tensor."""
        network = self.network
        if id(tensor) not in self._producers:  # by identity, as TensorRT's bindings hand out one object per tensor: names repeat
            found = None
            if not tensor.is_network_input:
                for index in reversed(range(getattr(network, "num_layers", 0))):
                    layer = network.get_layer(index)
                    if any(layer.get_output(j) is tensor for j in range(layer.num_outputs)):
                        found = layer
                        break
            self._producers[id(tensor)] = found
        return self._producers[id(tensor)]

    def _owns(self, tensor):
        """True if ``tensor`` is an input of the network or the output of one of its layers. A stand-in network that
        lists no layers owns every tensor."""
        network = self.network
        if not hasattr(network, "num_layers") or not hasattr(network, "num_inputs"):
            return True
        return any(network.get_input(i) is tensor for i in range(network.num_inputs)) or self._producer(tensor) is not None

    def _strongly_typed(self):
        from trt_scatter.backend import always_strongly_typed

        if always_strongly_typed():  # 11.x ignores the creation flag: get_flag would not tell
            return True
        flag = getattr(self.trt.NetworkDefinitionCreationFlag, "STRONGLY_TYPED", None)
        return flag is not None and bool(self.network.get_flag(flag))

    # -- introspection
    def shape_of(self, tensor: trt.ITensor) -> tuple[int, ...]:
        return tuple(int(d) for d in tensor.shape)

    def dtype_of(self, tensor: trt.ITensor) -> np.dtype:
        return dtypes.from_tensorrt(tensor.dtype)

    # -- primitives
    def constant(self, values: ArrayLike, dtype: DTypeLike | None = None) -> trt.ITensor:
        array = np.array(values, dtype=dtype, order="C")  # a copy: TensorRT keeps a reference, the caller may not
        if array.size == 0:  # TensorRT refuses empty weights: a one-element constant sliced with stride 0 (as onnx-tensorrt expands)
            one = self.network.add_constant((1,) * array.ndim, np.zeros((1,) * array.ndim, array.dtype)).get_output(0)
            tensor = self.network.add_slice(one, (0,) * array.ndim, array.shape, (0,) * array.ndim).get_output(0)
        else:
            tensor = self.network.add_constant(array.shape, array).get_output(0)
        self._constants[tensor.name] = array
        return tensor

    def shape(self, tensor: trt.ITensor) -> trt.ITensor:
        return self.network.add_shape(tensor).get_output(0)

    def gather(self, tensor: trt.ITensor, indices: trt.ITensor | Sequence[int], axis: int = 0) -> trt.ITensor:
        if not is_tensor(indices):
            indices = self.constant(_as_int64(indices))
        return self.network.add_gather(tensor, indices, axis).get_output(0)

    def binary(self, op: str, a: trt.ITensor, b: trt.ITensor) -> trt.ITensor:
        folded = self._folded(op, a, b)
        if folded is not None:
            return folded
        return self.network.add_elementwise(a, b, getattr(self.trt.ElementWiseOperation, BINARY_OPS[op][0])).get_output(0)

    def reduce(self, op: str, tensor: trt.ITensor) -> trt.ITensor:
        """``op`` ("sum" or "prod") over every element; the reduced axes stay (size 1)."""
        folded = self._folded_reduce(op, tensor)
        if folded is not None:
            return folded
        axes = (1 << len(self.shape_of(tensor))) - 1
        return self.network.add_reduce(tensor, getattr(self.trt.ReduceOperation, REDUCE_OPS[op][0]), axes, True).get_output(0)

    def where(self, condition: trt.ITensor, a: trt.ITensor, b: trt.ITensor) -> trt.ITensor:
        return self.network.add_select(condition, a, b).get_output(0)

    def concat(self, tensors: Iterable[trt.ITensor], axis: int = 0) -> trt.ITensor:
        layer = self.network.add_concatenation(list(tensors))
        layer.axis = axis
        return layer.get_output(0)

    def reshape(self, tensor: trt.ITensor, shape: Sequence[int] | trt.ITensor) -> trt.ITensor:
        """``shape``: a tuple (-1 inferred) or a 1-D int64 tensor; a 0 is a dimension of size 0, never "copy"."""
        folded = self._folded("reshape", tensor, shape)
        if folded is not None:
            return folded
        layer = self.network.add_shuffle(tensor)
        layer.zero_is_placeholder = False
        if is_tensor(shape):
            layer.set_input(1, shape)
        else:
            layer.reshape_dims = tuple(int(d) for d in shape)
        return layer.get_output(0)

    def cast(self, tensor: trt.ITensor, dtype: DTypeLike) -> trt.ITensor:
        return self.network.add_cast(tensor, dtypes.to_tensorrt(dtype)).get_output(0)

    def arange(self, count: int | trt.ITensor) -> trt.ITensor:
        """int64 ``[0, 1, ..., count-1]``; ``count`` is an int or a 1-element 1-D int64 tensor."""
        if not is_tensor(count):
            return self.constant(np.arange(count, dtype=INT64))
        layer = self.network.add_fill((0,), self.trt.FillOperation.LINSPACE, self.trt.int64)
        layer.set_input(0, count)
        layer.set_input(1, self.constant(np.array(0, dtype=INT64)))
        layer.set_input(2, self.constant(np.array([1], dtype=INT64)))
        return layer.get_output(0)

    def scatter(self, data: trt.ITensor, indices: trt.ITensor, updates: trt.ITensor, mode: str, axis: int = 0, reduction: str = "none") -> trt.ITensor:
        if reduction != "none":
            raise TypeError(f"TensorRT's IScatterLayer has no reduction (asked for {reduction!r}): the reduction ops build as plugins")
        if indices.dtype == self.trt.int64 and not self._strongly_typed():
            # As TensorRT's own ONNX parser does: weakly typed networks (full TensorRT's default)
            # scatter with int32 indices; no index can exceed int32, TensorRT's volume limit.
            indices = self.cast(indices, np.int32)
        modes = {"element": self.trt.ScatterMode.ELEMENT, "nd": self.trt.ScatterMode.ND}
        layer = self.network.add_scatter(data, indices, updates, modes[mode])
        layer.axis = axis
        return layer.get_output(0)

    def assertion(self, condition: trt.ITensor, message: str) -> None:
        """A build-time or run-time TensorRT error that says ``message`` unless ``condition``, a
        bool shape tensor, is true."""
        self.network.add_assertion(condition, message)


class _BuilderNode:
    """A network builder's arguments as a model's node shows them to an oracle module's ``check_node`` (the questions of
    :class:`trt_scatter.model.node.OpNode`): a Python or NumPy argument is a constant, an ITensor one where the network
    fixes its values (:meth:`TensorRTGraph.fixed_value`)."""

    def __init__(self, graph, inputs, attributes):
        self.graph, self._attributes = graph, attributes
        self.inputs = {name: value for name, value in inputs.items() if value is not None}
        self._fixed = {name: graph.fixed_value(value) for name, value in self.inputs.items() if is_tensor(value)}

    def constant(self, name: str) -> np.ndarray | None:
        value = self.inputs.get(name)
        if value is None:
            return None
        return self._fixed[name] if is_tensor(value) else np.asarray(value)

    def shape(self, name: str) -> tuple[int, ...] | None:
        value = self.inputs.get(name)
        if value is None:
            return None
        return self.graph.shape_of(value) if is_tensor(value) else np.shape(value)

    def dtype(self, name: str) -> np.dtype | None:
        value = self.inputs.get(name)
        if value is None:
            return None
        return self.graph.dtype_of(value) if is_tensor(value) else np.asarray(value).dtype

    def attribute(self, name: str, default: Any = None) -> Any:
        return self._attributes.get(name, default)


@dataclasses.dataclass(frozen=True)
class Value:
    """A tensor of an :class:`OnnxGraph`: its name, element type and static shape (-1 = unknown)."""

    name: str
    dtype: np.dtype
    shape: tuple


class OnnxGraph(_Composites):
    """Collects ONNX nodes, initializers and graph inputs; :meth:`model` makes the ``ModelProto``.

    Graph inputs are added with :meth:`add_input` (dimensions may be ints, -1/None or symbolic
    strings); :meth:`model` names the graph outputs. To add to an existing graph instead (the
    lower pass), give ``prefix`` (the names of new nodes and tensors start with it) and ``taken``
    (a set of the names in use, which new names avoid and join), and name the result with
    :meth:`bind`.
    """

    OPSET = 17
    ND_INDEX_TYPES = (INT64,)  # ONNX's ScatterND takes int64 indices only
    ELEMENT_INDICES_WITHIN_DATA_ON_AXIS = False
    RUNTIME_ASSERTIONS = False  # no ONNX op asserts; onnxruntime's ScatterElements/ScatterND check indices themselves
    SCATTER_REDUCTIONS = True  # ScatterElements/ScatterND's reduction attribute (opsets 16, 18)

    def __init__(self, prefix: str = "", taken: set[str] | None = None) -> None:
        self.nodes, self.initializers, self.inputs = [], [], []
        self._names = itertools.count()
        self.prefix, self.taken = prefix, set() if taken is None else taken
        self.opset_imports = {"": self.OPSET}
        self._shapes, self._constants = {}, {}

    def _key(self, value):
        return value.name

    # -- graph I/O
    def add_input(self, name: str, dtype: DTypeLike, shape: Sequence[int | str | None]) -> Value:
        from onnx import helper

        dims = [d if isinstance(d, str) else (None if d is None or d < 0 else int(d)) for d in shape]
        self.inputs.append(helper.make_tensor_value_info(name, dtypes.to_onnx(dtype), dims))
        return Value(name, np.dtype(dtype), tuple(d if isinstance(d, int) else -1 for d in dims))

    def model(self, outputs: dict[str, Value], name: str = "trt_scatter") -> onnx.ModelProto:
        """A ``ModelProto`` whose outputs are ``outputs`` (a dict: name -> Value), renamed to those names."""
        from onnx import helper

        graph_outputs = []
        for output_name, value in outputs.items():
            value = self.bind(value, output_name)
            dims = [d if d >= 0 else None for d in value.shape]
            graph_outputs.append(helper.make_tensor_value_info(output_name, dtypes.to_onnx(value.dtype), dims))
        graph = helper.make_graph(self.nodes, name, self.inputs, graph_outputs, initializer=self.live_initializers())
        opsets = [helper.make_opsetid(domain, version) for domain, version in self.opset_imports.items()]
        # IR 8 (opset 17's) rather than onnx's newest, so older parsers and runtimes load the model too.
        return helper.make_model(graph, opset_imports=opsets, ir_version=8, producer_name="trt-scatter")

    def live_initializers(self) -> list[onnx.TensorProto]:
        """The initializers some node reads (a folded constant's operands are left unread)."""
        read = {name for node in self.nodes for name in node.input}
        return [init for init in self.initializers if init.name in read]

    def bind(self, value: Value, name: str) -> Value:
        """Names ``value`` ``name`` (a node's output is renamed; an initializer or an input gets an Identity node)."""
        if not any(value.name in node.output for node in self.nodes):
            value = self.node("Identity", [value], value.dtype, value.shape)
        self._rename(value.name, name)
        return Value(name, value.dtype, value.shape)

    def _rename(self, old, new):
        for node in self.nodes:
            for i, name in enumerate(node.output):
                if name == old:
                    node.output[i] = new
            for i, name in enumerate(node.input):
                if name == old:
                    node.input[i] = new

    def node(self, op_type: str, inputs: Sequence[Value | str], dtype: DTypeLike, shape: Sequence[int], domain: str = "", **attributes: Any) -> Value:
        """Adds one node with one output; returns the output as a Value (``dtype``/``shape`` say what it is)."""
        from onnx import helper

        output = self._fresh(op_type)
        names = [value.name if isinstance(value, Value) else value for value in inputs]
        self.nodes.append(helper.make_node(op_type, names, [output], name=output, domain=domain, **attributes))
        return Value(output, np.dtype(dtype), tuple(shape))

    def _fresh(self, hint):
        name = f"{self.prefix}{hint}_{next(self._names)}"
        while name in self.taken:
            name = f"{self.prefix}{hint}_{next(self._names)}"
        self.taken.add(name)
        return name

    # -- introspection
    def shape_of(self, value: Value) -> tuple[int, ...]:
        return value.shape

    def dtype_of(self, value: Value) -> np.dtype:
        return value.dtype

    # -- primitives
    def constant(self, values: ArrayLike, dtype: DTypeLike | None = None) -> Value:
        from onnx import numpy_helper

        array = np.asarray(values, dtype=dtype)
        name = self._fresh("const")
        self.initializers.append(numpy_helper.from_array(array, name))
        self._constants[name] = array
        return Value(name, array.dtype, array.shape)

    def shape(self, value: Value) -> Value:
        return self.node("Shape", [value], INT64, (len(value.shape),))

    def gather(self, value: Value, indices: Value | Sequence[int], axis: int = 0) -> Value:
        if not isinstance(indices, Value):
            indices = self.constant(_as_int64(indices))
        shape = value.shape[:axis] + indices.shape + value.shape[axis + 1 :]
        return self.node("Gather", [value, indices], value.dtype, shape, axis=axis)

    def binary(self, op: str, a: Value, b: Value) -> Value:
        folded = self._folded(op, a, b)
        if folded is not None:
            return folded
        dtype = np.dtype(bool) if op == "less" else a.dtype
        return self.node(BINARY_OPS[op][1], [a, b], dtype, _broadcast(a.shape, b.shape))

    def reduce(self, op: str, value: Value) -> Value:
        """``op`` over every element, kept dims. No ``axes``: ReduceProd takes them as an attribute
        before opset 18 and as an input from it, and the lowered node must suit the model's opset."""
        folded = self._folded_reduce(op, value)
        if folded is not None:
            return folded
        return self.node(REDUCE_OPS[op][1], [value], value.dtype, (1,) * len(value.shape), keepdims=1)

    def where(self, condition: Value, a: Value, b: Value) -> Value:
        return self.node("Where", [condition, a, b], a.dtype, _broadcast(condition.shape, _broadcast(a.shape, b.shape)))

    def concat(self, values: Iterable[Value], axis: int = 0) -> Value:
        values = list(values)
        along = [v.shape[axis] for v in values]
        shape = list(values[0].shape)
        shape[axis] = sum(along) if all(d >= 0 for d in along) else -1
        return self.node("Concat", values, values[0].dtype, shape, axis=axis)

    def reshape(self, value: Value, shape: Sequence[int] | Value) -> Value:
        folded = self._folded("reshape", value, shape)
        if folded is not None:
            return folded
        if isinstance(shape, Value):
            return self.node("Reshape", [value, shape], value.dtype, (-1,) * shape.shape[0], allowzero=1)
        out = tuple(int(d) for d in shape)
        if out.count(-1) == 1 and all(d >= 0 for d in value.shape) and 0 not in out:
            known = int(np.prod([d for d in out if d >= 0]))
            out = tuple(int(np.prod(value.shape)) // known if d == -1 else d for d in out)
        return self.node("Reshape", [value, self.constant(_as_int64(shape))], value.dtype, out, allowzero=1)

    def cast(self, value: Value, dtype: DTypeLike) -> Value:
        return self.node("Cast", [value], dtype, value.shape, to=dtypes.to_onnx(dtype))

    def arange(self, count: int | Value) -> Value:
        if not isinstance(count, Value):
            return self.constant(np.arange(count, dtype=INT64))
        limit = self.node("Reshape", [count, self.constant(np.zeros(0, dtype=INT64))], INT64, ())
        return self.node("Range", [self.constant(np.array(0, INT64)), limit, self.constant(np.array(1, INT64))], INT64, (-1,))

    def scatter(self, data: Value, indices: Value, updates: Value, mode: str, axis: int = 0, reduction: str = "none") -> Value:
        attributes = {}
        if reduction != "none":  # ONNX has add and mul from opset 16, min and max from 18
            attributes["reduction"] = reduction
            self.opset_imports[""] = max(self.opset_imports[""], ONNX_REDUCTIONS[reduction])
        if mode == "element":
            return self.node("ScatterElements", [data, indices, updates], data.dtype, data.shape, axis=axis, **attributes)
        return self.node("ScatterND", [data, indices, updates], data.dtype, data.shape, **attributes)


def _identity(reduction, dtype):
    """The value ``x`` for which ``reduction(x, u)`` is ``u`` itself, bit for bit, for every ``u`` of ``dtype``."""
    floating = dtype.kind not in "iu"
    info = np.iinfo(dtype) if not floating else None
    return {"add": -0.0 if floating else 0, "mean": -0.0 if floating else 0, "mul": 1,
            "min": np.inf if floating else info.max, "max": -np.inf if floating else info.min}[reduction]


def describe(value: object) -> str:
    """What was passed, for an error message: ``ITensor 'name'``, ``ndarray float32 (4, 5)``, ``list``."""
    if isinstance(value, np.ndarray):
        return f"ndarray {value.dtype} {value.shape}"
    if type(value).__name__ == "ITensor":
        return f"ITensor {value.name!r}"
    if isinstance(value, Value):
        return f"run-time tensor {value.name!r}"
    return type(value).__name__



def is_tensor(x: object) -> bool:
    """True for a tensor of a graph (an ``ITensor`` or a :class:`Value`); False for None, numbers, strings, lists, tuples
    and arrays."""
    return x is not None and not isinstance(x, (numbers.Number, np.generic, tuple, list, range, np.ndarray, str, bytes))


def _broadcast(a, b):
    if len(a) != len(b):
        raise ValueError(f"binary operands need equal ranks (got shapes {a} and {b})")
    return tuple(y if x == 1 else x if y == 1 else (x if x == y else -1) for x, y in zip(a, b))
