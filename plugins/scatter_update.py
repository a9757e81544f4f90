"""ScatterUpdate-3 (OpenVINO) on a GPU: its kernel (``scatter_update.cu``), how a plugin checks and launches it.

``axis`` is a tensor whose value TensorRT does not show the plugin at build time, so the
build-time check (:func:`check_shapes`) accepts shapes that fit the spec for at least one axis of
data. The kernel normalizes the axis on the device and skips (and counts) indices outside [0, s-1].

The functions every plugin op module has are described in :mod:`trt_scatter.plugins.slice_scatter`;
beside them :func:`launch_scatter_update` and :func:`launch_scatter_update_aot`, for tests and the
GPU check. Importing this module needs neither TensorRT nor a GPU.
"""

from __future__ import annotations

import ctypes
import math
import struct
from typing import TYPE_CHECKING, Any

from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.oracle.scatter_update import check_axis_shape, check_scatter_update_static

from . import kernels

if TYPE_CHECKING:
    from collections.abc import Sequence

    import tensorrt.plugin as trtp

KERNEL = "scatter_update"


class ScatterUpdateArgs(ctypes.Structure):
    """Mirror of ``ScatterUpdateArgs`` in scatter_common.cuh."""

    _fields_ = [
        ("output", ctypes.c_void_p),
        ("updates", ctypes.c_void_p),
        ("indices", ctypes.c_void_p),
        ("axis", ctypes.c_void_p),
        ("error_flag", ctypes.c_void_p),
        ("data_shape", kernels.Shape),
        ("indices_shape", kernels.Shape),
        ("updates_shape", kernels.Shape),
        ("data_rank", ctypes.c_int32),
        ("indices_rank", ctypes.c_int32),
        ("updates_rank", ctypes.c_int32),
        ("axis_itemsize", ctypes.c_int32),
    ]


_LAYOUT = struct.Struct(f"<5Q{3 * kernels.MAX_RANK}q4i")


# ---- the plugin's view: shapes and sizes of its inputs -------------------------------------------


def check_shapes(shapes: Sequence[Sequence[int]], **attributes: int | str) -> None:
    """Build time: ``shapes`` of (data, indices, updates, axis), -1 for unknown dimensions."""
    data, indices, updates, axis = shapes
    check_axis_shape(axis)
    check_scatter_update_static(data, indices, updates)  # axis: a device value, not known here


def launch_args(shapes: Sequence[Sequence[int]], itemsizes: Sequence[int], **attributes: object) -> dict[str, Any]:
    """What :func:`launch` needs, from the inputs' shapes and element sizes (bytes) (and the op's attributes: none but inplace)."""
    return dict(
        data_shape=shapes[0],
        indices_shape=shapes[1],
        updates_shape=shapes[2],  # lets the kernel refuse a device axis that does not fit
        element_size=itemsizes[0],
        index_itemsize=itemsizes[1],
        axis_itemsize=itemsizes[3],
    )


def launch(args: dict[str, Any], inputs: Sequence[int], output: int, data: int, error_flag: int, stream: int) -> None:
    """One plugin ``enqueue``: ``inputs`` the device pointers in the op's order, ``data`` 0 when in place."""
    launch_scatter_update(output=output, data=data, indices=inputs[1], updates=inputs[2], axis=inputs[3],
                          error_flag=error_flag, stream=stream, **args)


def describe_errors(count: int, shapes: Sequence[Sequence[int]]) -> str:
    """What a non-zero error count of a launch means."""
    return f"{count} 'indices' value(s) outside [0, s-1] along 'axis' (data of shape {shapes[0]}) were skipped"


def aot_scalars(shapes: dict[str, Sequence[int | trtp.ShapeExpr]], itemsizes: dict[str, int], ops: Any = kernels.IntegerOps, **attributes: object) -> list[int | trtp.ShapeExpr]:
    """The int32 scalars of ``scatter_update_aot`` (after its four input pointers), in order: the ranks
    of data, indices and updates, axis_itemsize, then the three shapes, 8 dimensions each (0-padded).
    ``shapes`` (ints or shape expressions) and ``itemsizes`` by input name."""
    return scalars(data_shape=shapes["data"], indices_shape=shapes["indices"], updates_shape=shapes["updates"],
                   axis_itemsize=itemsizes["axis"])


def scalars(*, data_shape: Sequence[int | trtp.ShapeExpr], indices_shape: Sequence[int | trtp.ShapeExpr], updates_shape: Sequence[int | trtp.ShapeExpr], axis_itemsize: int) -> list[int | trtp.ShapeExpr]:
    """The int32 scalars of ``scatter_update_aot`` in order (see :func:`aot_scalars`)."""
    return [len(data_shape), len(indices_shape), len(updates_shape), axis_itemsize,
            *kernels.padded(data_shape), *kernels.padded(indices_shape), *kernels.padded(updates_shape)]


# ---- launches --------------------------------------------------------------------------------------


def _checked(op, *, output, indices, updates, axis, data_shape, indices_shape, element_size,
             index_itemsize, axis_itemsize, updates_shape, error_flag=0):
    """Checks the host-known arguments of a launch; returns (pointers, data, indices, updates shapes)."""
    kernels.choice(op, "element_size", element_size, kernels.ELEMENT_SIZES, " bytes")
    kernels.choice(op, "index_itemsize", index_itemsize, kernels.INDEX_ITEMSIZES, " bytes")
    kernels.choice(op, "axis_itemsize", axis_itemsize, kernels.INDEX_ITEMSIZES, " bytes")
    data_shape = kernels.checked_shape(op, "data_shape", data_shape)
    indices_shape = kernels.checked_shape(op, "indices_shape", indices_shape, min_rank=0)
    updates_shape = kernels.checked_shape(op, "updates_shape", updates_shape, min_rank=0)
    if not axis:
        raise ScatterInputError(op, "axis", "must be a device address", axis)
    kernels.needed(op, "indices", indices, math.prod(indices_shape))
    kernels.needed(op, "output", output, math.prod(data_shape))
    kernels.needed(op, "updates", updates, math.prod(updates_shape))
    pointers = kernels.pointers(op, output=output or 0, updates=updates or 0, indices=indices or 0, axis=axis,
                                error_flag=error_flag or 0)
    return pointers, data_shape, indices_shape, updates_shape


def scatter_update_args(*, output: int, indices: int, updates: int, axis: int, data_shape: Sequence[int], indices_shape: Sequence[int], element_size: int,
                        index_itemsize: int, axis_itemsize: int, error_flag: int, updates_shape: Sequence[int]) -> bytes:
    """Checks the host-known arguments of a launch; returns the kernel's parameter (the bytes of a
    :class:`ScatterUpdateArgs`)."""
    pointers, data_shape, indices_shape, updates_shape = _checked(
        "launch_scatter_update", output=output, indices=indices, updates=updates, axis=axis, data_shape=data_shape,
        indices_shape=indices_shape, element_size=element_size, index_itemsize=index_itemsize,
        axis_itemsize=axis_itemsize, updates_shape=updates_shape, error_flag=error_flag)
    return _LAYOUT.pack(*pointers, *kernels.padded(data_shape), *kernels.padded(indices_shape), *kernels.padded(updates_shape),
                        len(data_shape), len(indices_shape), len(updates_shape), axis_itemsize)


def launch_scatter_update(*, output: int, data: int, indices: int, updates: int, axis: int, data_shape: Sequence[int], indices_shape: Sequence[int], element_size: int,
                          index_itemsize: int, axis_itemsize: int, error_flag: int, stream: int, updates_shape: Sequence[int]) -> None:
    """ScatterUpdate on ``stream``: ``output`` = ``data`` with the slices at ``indices`` along ``axis`` replaced.

    ``data == 0``: in place. ``axis`` points at one int of ``axis_itemsize`` bytes (in [-r, r-1],
    normalized on the device). Each index outside [0, data_shape[axis]-1] is skipped and counted
    in ``error_flag``. The kernel checks ``updates_shape`` against
    ``data_shape[:axis] + indices_shape + data_shape[axis+1:]`` for the device's axis and writes
    nothing (counting 1) if it differs, so a wrong axis can never make it read past ``updates``.
    """
    args = scatter_update_args(output=output, indices=indices, updates=updates, axis=axis, data_shape=data_shape,
                               indices_shape=indices_shape, element_size=element_size,
                               index_itemsize=index_itemsize, axis_itemsize=axis_itemsize, error_flag=error_flag,
                               updates_shape=updates_shape)
    # Any grid is correct (the kernel grid-strides); the work only sizes it.
    kernels.launch(KERNEL, element_size, index_itemsize, args, output=output, data=data,
                   data_bytes=math.prod(data_shape) * element_size, work=math.prod(updates_shape), error_flag=error_flag,
                   stream=stream)


def launch_scatter_update_aot(*, output: int, data: int, indices: int, updates: int, axis: int, data_shape: Sequence[int], indices_shape: Sequence[int], element_size: int,
                              index_itemsize: int, axis_itemsize: int, stream: int, updates_shape: Sequence[int]) -> None:
    """:func:`launch_scatter_update` through the AOT entry point ``scatter_update_aot`` (see
    :func:`~trt_scatter.plugins.slice_scatter.launch_slice_scatter_aot`): out-of-range indices are skipped, not counted."""
    op = "launch_scatter_update_aot"
    (output, updates, indices, axis, _), data_shape, indices_shape, updates_shape = _checked(
        op, output=output, indices=indices, updates=updates, axis=axis, data_shape=data_shape,
        indices_shape=indices_shape, element_size=element_size, index_itemsize=index_itemsize,
        axis_itemsize=axis_itemsize, updates_shape=updates_shape)
    kernels.check_aot_limits(op, {"data_shape": data_shape, "indices_shape": indices_shape, "updates_shape": updates_shape})
    arguments = scalars(data_shape=data_shape, indices_shape=indices_shape, updates_shape=updates_shape, axis_itemsize=axis_itemsize)
    kernels.launch_aot(KERNEL + kernels.AOT_SUFFIX, element_size, index_itemsize, [output, indices, updates, axis], arguments,
                       output=output, data=data, data_bytes=math.prod(data_shape) * element_size,
                       grid=kernels.aot_grid(updates_shape), stream=stream)
