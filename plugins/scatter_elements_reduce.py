"""ScatterElementsReduce on a GPU: its kernel (``scatter_elements_reduce.cu``), how a plugin checks and launches it.

Each element of ``updates`` is one row of the sort and reduction of :mod:`.reductions` (``C = 1``): the plan
sorts the ``R = indices.size`` positions by their target element, stably, then one thread per target combines
its updates in ascending position. Deterministic (bit-identical for any grid and block order), no float
atomics; the workspace holds the sort (:func:`workspace_size`, about 20 bytes per update). Each index outside
[-s, s-1] is skipped and counted. A write whose rows share one index (PyTorch's ``index_add``, or
``scatter_add`` with an index broadcast over the other axes) sorts only the rows as ScatterNDReduce: the
exporters and ``rewrite`` write it that way.

The AOT entry (one launch, no workspace) takes int32/int64 data with add, mul, min or max and
``include_self=1`` (integer atomics); :func:`check_aot` refuses the rest in one line. The functions every
plugin op module has are described in :mod:`trt_scatter.plugins.slice_scatter`; beside them
:func:`workspace_size` (the plugin's workspace), :data:`ELEMENT_TYPES` (the types its kernel takes),
:func:`check_aot`, :func:`launch_scatter_elements_reduce` and :func:`launch_scatter_elements_reduce_aot`.
Importing this module needs neither TensorRT nor a GPU.
"""

from __future__ import annotations

import functools
import math
from typing import TYPE_CHECKING, Any

from trt_scatter.oracle import reductions as semantics
from trt_scatter.oracle import rules
from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.oracle.scatter_elements_reduce import OP, check_scatter_elements_reduce

from . import kernels, reductions

if TYPE_CHECKING:
    from collections.abc import Sequence

    import tensorrt.plugin as trtp

    from trt_scatter.model.node import OpNode

KERNEL = "scatter_elements_reduce"
ELEMENT_TYPES = tuple(reductions.ELEMENT_KINDS)  #: the element types the Python plugin's kernel takes (NumPy's names)
AOT_ELEMENT_TYPES = reductions.AOT_ELEMENT_TYPES


# ---- the plugin's view: shapes and sizes of its inputs -------------------------------------------


def check_shapes(shapes: Sequence[Sequence[int]], axis: int = 0, **attributes: int | str) -> None:
    """Build time: ``shapes`` of (data, indices, updates), -1 for unknown dimensions: ScatterElements' rules for ``axis``."""
    rules.check_elements_shapes(OP, *shapes, axis)


def launch_args(shapes: Sequence[Sequence[int]], itemsizes: Sequence[int], types: Sequence[str] | None = None, axis: int = 0, reduction: str = "add", include_self: int = 1, **attributes: object) -> dict[str, Any]:
    """What :func:`launch` needs, from the inputs' shapes, element sizes and types (NumPy's names) and the attributes."""
    data, indices = shapes[0], shapes[1]
    return dict(data_shape=data, indices_shape=indices, element_size=itemsizes[0],
                element_type=reductions.element_type_of(OP, types, itemsizes[0]), index_itemsize=itemsizes[1],
                axis=rules.normalize_axis(OP, "axis", axis, len(data)), reduction=reduction, include_self=include_self)


WORKSPACE_INPUTS = reductions.WORKSPACE_INPUTS


def workspace_size(shapes: Sequence[Sequence[int]], itemsizes: Sequence[int | None], chunk: int | None = None, segment: int = reductions.SEGMENT, **attributes: int | str) -> int:
    """Bytes of workspace the launches need for inputs of these (largest) shapes: the sort of the update positions
    (``chunk``/``segment``: as the launch splits it)."""
    return reductions.Plan(math.prod(shapes[1]), math.prod(shapes[0]), chunk, segment).workspace_bytes


def launch(args: dict[str, Any], inputs: Sequence[int], output: int, data: int, error_flag: int, stream: int, workspace: int = 0) -> None:
    """One plugin ``enqueue``: ``inputs`` the device pointers in the op's order, ``data`` 0 when in place."""
    launch_scatter_elements_reduce(output=output, data=data, indices=inputs[1], updates=inputs[2], workspace=workspace,
                                   error_flag=error_flag, stream=stream, **args)


def describe_errors(count: int, shapes: Sequence[Sequence[int]]) -> str:
    """What a non-zero error count of a launch means."""
    return f"{count} 'indices' value(s) outside [-s, s-1] along the axis (data of shape {shapes[0]}) were skipped"


def check_aot(node: OpNode) -> None:
    """A model's node (an OpNode) that the AOT form cannot run, refused in one line (:data:`reductions.AOT_WHY`)."""
    reductions.check_aot_node(OP, node)


def aot_scalars(shapes: dict[str, Sequence[int | trtp.ShapeExpr]], itemsizes: dict[str, int], ops: Any = kernels.IntegerOps, types: dict[str, str] | None = None, axis: int = 0, reduction: str = "add", include_self: int = 1, **attributes: object) -> list[int | trtp.ShapeExpr]:
    """The int32 scalars of ``scatter_elements_reduce_aot`` (after its three input pointers), in order: rank, axis,
    the reduction's code, then data's, indices' and updates' 8 dimensions each (0-padded). ``types`` by input name."""
    reductions.check_aot(OP, (types or {}).get("data"), reduction, include_self)
    rank = len(shapes["data"])
    return scalars(data_shape=shapes["data"], indices_shape=shapes["indices"], updates_shape=shapes["updates"],
                   axis=rules.normalize_axis(OP, "axis", axis, rank), reduction=reduction)


def scalars(*, data_shape: Sequence[int | trtp.ShapeExpr], indices_shape: Sequence[int | trtp.ShapeExpr], updates_shape: Sequence[int | trtp.ShapeExpr],
            axis: int, reduction: str) -> list[int | trtp.ShapeExpr]:
    """The int32 scalars of ``scatter_elements_reduce_aot`` in order (see :func:`aot_scalars`)."""
    return [len(data_shape), axis, reductions.REDUCTION_CODES[reduction], *kernels.padded(data_shape), *kernels.padded(indices_shape),
            *kernels.padded(updates_shape)]


# ---- launches --------------------------------------------------------------------------------------


def _geometry(op, data_shape, indices_shape, axis):
    return _checked_geometry(op, tuple(data_shape), tuple(indices_shape), axis)


@functools.lru_cache(maxsize=64)  # every enqueue asks again for the shapes of the one before
def _checked_geometry(op, data_shape, indices_shape, axis):
    data_shape = kernels.checked_shape(op, "data_shape", data_shape)
    indices_shape = kernels.checked_shape(op, "indices_shape", indices_shape)
    axis = check_scatter_elements_reduce(data_shape, indices_shape, indices_shape, axis)
    return data_shape, indices_shape, axis


def launch_scatter_elements_reduce(*, output: int, data: int, indices: int, updates: int, workspace: int, data_shape: Sequence[int], indices_shape: Sequence[int], element_size: int,
                                   element_type: str, index_itemsize: int, axis: int, reduction: str, include_self: int, error_flag: int, stream: int,
                                   chunk: int | None = None, segment: int = reductions.SEGMENT) -> None:
    """ScatterElementsReduce on ``stream``: ``output`` = ``data`` with ``updates`` (of indices' shape) combined at
    ``indices`` along ``axis`` by ``reduction`` (add, mul, min, max, mean), in ascending position.

    ``data == 0``: in place. ``element_type``: NumPy's name of the elements' type (float32, float16, bfloat16,
    int8, uint8, int32, int64). ``workspace``: a device buffer of :func:`workspace_size` bytes. Each index outside
    [-s, s-1] is skipped and counted in ``error_flag`` (a device uint32, or 0). ``chunk``/``segment`` change how
    the sort splits its work (tests show the output does not depend on them).
    """
    op = "launch_scatter_elements_reduce"
    data_shape, indices_shape, axis = _geometry(op, data_shape, indices_shape, axis)
    reductions.run(KERNEL, output=output, data=data, indices=indices, updates=updates, workspace=workspace, error_flag=error_flag,
                   stream=stream, data_shape=data_shape, indices_shape=indices_shape, rows=math.prod(indices_shape), columns=1,
                   targets=math.prod(data_shape), element_size=element_size, element_type=element_type, index_itemsize=index_itemsize,
                   axis=axis, reduction=reduction, include_self=include_self, chunk=chunk, segment=segment)


def launch_scatter_elements_reduce_aot(*, output: int, data: int, indices: int, updates: int, data_shape: Sequence[int], indices_shape: Sequence[int], updates_shape: Sequence[int],
                                       element_size: int, element_type: str, index_itemsize: int, axis: int, reduction: str, include_self: int, stream: int) -> None:
    """:func:`launch_scatter_elements_reduce` through the AOT entry, as an engine built with :mod:`trt_scatter.plugins.aot`
    launches it: int32/int64 with add, mul, min or max and ``include_self=1`` (integer atomics); out-of-range
    indices are skipped, not counted. As in an engine, nothing here relates the three shapes: the kernel writes
    nothing where they disagree."""
    op = "launch_scatter_elements_reduce_aot"
    data_shape = kernels.checked_shape(op, "data_shape", data_shape)
    for name, shape in (("indices_shape", indices_shape), ("updates_shape", updates_shape)):  # ranks are fixed when an engine is built
        if len(kernels.checked_shape(op, name, shape)) != len(data_shape):
            raise ScatterInputError(op, name, f"must have data's rank ({len(data_shape)})", f"shape {tuple(shape)}")
    indices_shape, updates_shape = tuple(indices_shape), tuple(updates_shape)
    axis = rules.normalize_axis(op, "axis", axis, len(data_shape))
    semantics.check_reduction(op, reduction)
    reductions.check_aot(op, element_type, reduction, include_self)
    kernels.choice(op, "element_size", element_size, (reductions.ELEMENT_SIZES[element_type],), " bytes")
    kernels.choice(op, "index_itemsize", index_itemsize, kernels.INDEX_ITEMSIZES, " bytes")
    kernels.check_aot_limits(op, {"data_shape": data_shape, "indices_shape": indices_shape, "updates_shape": updates_shape})
    kernels.needed(op, "output", output, math.prod(data_shape))
    output, indices, updates = kernels.pointers(op, output=output or 0, indices=indices or 0, updates=updates or 0)
    arguments = scalars(data_shape=data_shape, indices_shape=indices_shape, updates_shape=updates_shape, axis=axis, reduction=reduction)
    kernels.launch_aot(KERNEL + kernels.AOT_SUFFIX, element_size, index_itemsize, [output, indices, updates], arguments,
                       output=output, data=data, data_bytes=math.prod(data_shape) * element_size,
                       grid=kernels.aot_grid(updates_shape), stream=stream)
