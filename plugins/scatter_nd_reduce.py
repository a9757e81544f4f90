"""ScatterNDReduce on a GPU: its kernel (``scatter_nd_reduce.cu``), how a plugin checks and launches it.

Each index row is one row of the sort and reduction of :mod:`.reductions`: ``R = prod(indices.shape[:-1])``
rows of ``C = prod(data.shape[k:])`` elements into ``T = prod(data.shape[:k])`` target rows. The plan sorts
the index rows (never the elements) by target, stably, then one thread per (target, column) combines its
rows in ascending position: PyTorch's ``index_add``/``index_put(accumulate=True)`` shape, 10M rows of 64
floats included. Deterministic (bit-identical for any grid and block order), no float atomics; the workspace
holds the sort (:func:`workspace_size`, about 20 bytes per index row). A row with an index outside
[-s_j, s_j-1] is skipped and counted once.

The AOT entry (one launch, no workspace) takes int32/int64 data with add, mul, min or max and
``include_self=1`` (integer atomics); :func:`check_aot` refuses the rest in one line. See
:mod:`trt_scatter.plugins.slice_scatter` for the functions every plugin op module has, and
:mod:`.scatter_elements_reduce` for the extra ones of the reduction ops. Importing this module needs neither
TensorRT nor a GPU.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

from trt_scatter.oracle import reductions as semantics
from trt_scatter.oracle.scatter_nd_reduce import OP, check_scatter_nd_reduce

from . import kernels, reductions

if TYPE_CHECKING:
    from collections.abc import Sequence

    import tensorrt.plugin as trtp

    from trt_scatter.model.node import OpNode

KERNEL = "scatter_nd_reduce"
ELEMENT_TYPES = tuple(reductions.ELEMENT_KINDS)  #: the element types the Python plugin's kernel takes (NumPy's names)
AOT_ELEMENT_TYPES = reductions.AOT_ELEMENT_TYPES


def _rows(data_shape, indices_shape):
    """(R, C, T) of the sort: index rows, elements per row, target rows."""
    k = indices_shape[-1]
    return math.prod(indices_shape[:-1]), math.prod(data_shape[k:]), math.prod(data_shape[:k])


# ---- the plugin's view: shapes and sizes of its inputs -------------------------------------------


def check_shapes(shapes: Sequence[Sequence[int]], **attributes: int | str) -> None:
    """Build time: ``shapes`` of (data, indices, updates), -1 for unknown dimensions (ScatterND's rules)."""
    check_scatter_nd_reduce(*shapes)


def launch_args(shapes: Sequence[Sequence[int]], itemsizes: Sequence[int], types: Sequence[str] | None = None, reduction: str = "add", include_self: int = 1, **attributes: object) -> dict[str, Any]:
    """What :func:`launch` needs, from the inputs' shapes, element sizes and types (NumPy's names) and the attributes."""
    return dict(data_shape=shapes[0], indices_shape=shapes[1], element_size=itemsizes[0],
                element_type=reductions.element_type_of(OP, types, itemsizes[0]), index_itemsize=itemsizes[1],
                reduction=reduction, include_self=include_self)


WORKSPACE_INPUTS = reductions.WORKSPACE_INPUTS


def workspace_size(shapes: Sequence[Sequence[int]], itemsizes: Sequence[int | None], chunk: int | None = None, segment: int = reductions.SEGMENT, **attributes: int | str) -> int:
    """Bytes of workspace the launches need for inputs of these (largest) shapes: the sort of the index rows
    (``chunk``/``segment``: as the launch splits it)."""
    rows, _, targets = _rows(shapes[0], shapes[1])
    return reductions.Plan(rows, targets, chunk, segment).workspace_bytes


def launch(args: dict[str, Any], inputs: Sequence[int], output: int, data: int, error_flag: int, stream: int, workspace: int = 0) -> None:
    """One plugin ``enqueue``: ``inputs`` the device pointers in the op's order, ``data`` 0 when in place."""
    launch_scatter_nd_reduce(output=output, data=data, indices=inputs[1], updates=inputs[2], workspace=workspace,
                             error_flag=error_flag, stream=stream, **args)


def describe_errors(count: int, shapes: Sequence[Sequence[int]]) -> str:
    """What a non-zero error count of a launch means."""
    return f"{count} 'indices' row(s) with a value outside [-s, s-1] (data of shape {shapes[0]}) were skipped"


def check_aot(node: OpNode) -> None:
    """A model's node (an OpNode) that the AOT form cannot run, refused in one line (:data:`reductions.AOT_WHY`)."""
    reductions.check_aot_node(OP, node)


def aot_scalars(shapes: dict[str, Sequence[int | trtp.ShapeExpr]], itemsizes: dict[str, int], ops: Any = kernels.IntegerOps, types: dict[str, str] | None = None, reduction: str = "add", include_self: int = 1, **attributes: object) -> list[int | trtp.ShapeExpr]:
    """The int32 scalars of ``scatter_nd_reduce_aot`` (after its three input pointers), in order: the ranks of data,
    indices and updates, the reduction's code, then data's, indices' and updates' 8 dimensions each (0-padded).
    ``types`` by input name."""
    reductions.check_aot(OP, (types or {}).get("data"), reduction, include_self)
    return scalars(data_shape=shapes["data"], indices_shape=shapes["indices"], updates_shape=shapes["updates"], reduction=reduction)


def scalars(*, data_shape: Sequence[int | trtp.ShapeExpr], indices_shape: Sequence[int | trtp.ShapeExpr], updates_shape: Sequence[int | trtp.ShapeExpr],
            reduction: str) -> list[int | trtp.ShapeExpr]:
    """The int32 scalars of ``scatter_nd_reduce_aot`` in order (see :func:`aot_scalars`)."""
    return [len(data_shape), len(indices_shape), len(updates_shape), reductions.REDUCTION_CODES[reduction], *kernels.padded(data_shape),
            *kernels.padded(indices_shape), *kernels.padded(updates_shape)]


# ---- launches --------------------------------------------------------------------------------------


def _geometry(op, data_shape, indices_shape):
    return _checked_geometry(op, tuple(data_shape), tuple(indices_shape))


@functools.lru_cache(maxsize=64)  # every enqueue asks again for the shapes of the one before
def _checked_geometry(op, data_shape, indices_shape):
    data_shape = kernels.checked_shape(op, "data_shape", data_shape)
    indices_shape = kernels.checked_shape(op, "indices_shape", indices_shape)
    k = indices_shape[-1]
    check_scatter_nd_reduce(data_shape, indices_shape, tuple(indices_shape[:-1]) + tuple(data_shape[k:]))
    return data_shape, indices_shape


def launch_scatter_nd_reduce(*, output: int, data: int, indices: int, updates: int, workspace: int, data_shape: Sequence[int], indices_shape: Sequence[int], element_size: int, element_type: str,
                             index_itemsize: int, reduction: str, include_self: int, error_flag: int, stream: int, chunk: int | None = None,
                             segment: int = reductions.SEGMENT) -> None:
    """ScatterNDReduce on ``stream``: ``output`` = ``data`` with the rows of ``updates`` (shape
    ``indices_shape[:-1] + data_shape[k:]``) combined into the slices ``indices`` address, by ``reduction``, in
    ascending row position. Arguments as :func:`~trt_scatter.plugins.scatter_elements_reduce.launch_scatter_elements_reduce`;
    each row with an index out of range is skipped and counted once."""
    op = "launch_scatter_nd_reduce"
    data_shape, indices_shape = _geometry(op, data_shape, indices_shape)
    rows, columns, targets = _rows(data_shape, indices_shape)
    reductions.run(KERNEL, output=output, data=data, indices=indices, updates=updates, workspace=workspace, error_flag=error_flag,
                   stream=stream, data_shape=data_shape, indices_shape=indices_shape, rows=rows, columns=columns, targets=targets,
                   element_size=element_size, element_type=element_type, index_itemsize=index_itemsize, axis=0,
                   reduction=reduction, include_self=include_self, chunk=chunk, segment=segment)


def launch_scatter_nd_reduce_aot(*, output: int, data: int, indices: int, updates: int, data_shape: Sequence[int], indices_shape: Sequence[int], updates_shape: Sequence[int],
                                 element_size: int, element_type: str, index_itemsize: int, reduction: str, include_self: int, stream: int) -> None:
    """:func:`launch_scatter_nd_reduce` through the AOT entry, as an engine built with :mod:`trt_scatter.plugins.aot`
    launches it: int32/int64 with add, mul, min or max and ``include_self=1`` (integer atomics); rows with an
    index out of range are skipped, not counted. As in an engine, nothing here relates the three shapes: the kernel
    writes nothing where they disagree."""
    op = "launch_scatter_nd_reduce_aot"
    data_shape = kernels.checked_shape(op, "data_shape", data_shape)
    indices_shape = kernels.checked_shape(op, "indices_shape", indices_shape)
    updates_shape = kernels.checked_shape(op, "updates_shape", updates_shape, min_rank=0)
    semantics.check_reduction(op, reduction)
    reductions.check_aot(op, element_type, reduction, include_self)
    kernels.choice(op, "element_size", element_size, (reductions.ELEMENT_SIZES[element_type],), " bytes")
    kernels.choice(op, "index_itemsize", index_itemsize, kernels.INDEX_ITEMSIZES, " bytes")
    kernels.check_aot_limits(op, {"data_shape": data_shape, "indices_shape": indices_shape, "updates_shape": updates_shape})
    kernels.needed(op, "output", output, math.prod(data_shape))
    output, indices, updates = kernels.pointers(op, output=output or 0, indices=indices or 0, updates=updates or 0)
    arguments = scalars(data_shape=data_shape, indices_shape=indices_shape, updates_shape=updates_shape, reduction=reduction)
    kernels.launch_aot(KERNEL + kernels.AOT_SUFFIX, element_size, index_itemsize, [output, indices, updates], arguments,
                       output=output, data=data, data_bytes=math.prod(data_shape) * element_size,
                       grid=kernels.aot_grid(updates_shape), stream=stream)
