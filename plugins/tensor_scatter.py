"""TensorScatter-24 (ONNX) on a GPU, the CacheScatter plugin: its kernel (``tensor_scatter.cu``), how a
plugin checks and launches it.

``axis`` and ``mode`` are attributes (plugin fields), so the build-time check (:func:`check_shapes`) is
the oracle's full shape rule; the write indices are device values, which the kernel checks (each batch
row whose index is below 0, or in linear mode leaves the update no room, writes nothing and is counted).
The kernel also checks the shapes it is launched with, as dynamic dimensions of the three inputs may
disagree at run time.

Bytes moved per call: in place, the update's bytes read and written once (2 x |update|) and the B write
indices read; with the copy path, 2 x |past_cache| more. One launch (two with the copy, three in debug
mode with the counter's reset).

The functions every plugin op module has are described in :mod:`trt_scatter.plugins.slice_scatter`;
beside them :func:`launch_tensor_scatter` and :func:`launch_tensor_scatter_aot`, for tests and the GPU
check. Importing this module needs neither TensorRT nor a GPU.
"""

from __future__ import annotations

import ctypes
import math
import struct
from typing import TYPE_CHECKING, Any

from trt_scatter.oracle.rules import ScatterInputError
from trt_scatter.oracle.tensor_scatter import DEFAULT_AXIS, MODES, check_mode, check_tensor_scatter

from . import kernels

if TYPE_CHECKING:
    from collections.abc import Sequence

    import tensorrt.plugin as trtp

KERNEL = "tensor_scatter"


class TensorScatterArgs(ctypes.Structure):
    """Mirror of ``TensorScatterArgs`` in scatter_common.cuh."""

    _fields_ = [
        ("output", ctypes.c_void_p),
        ("update", ctypes.c_void_p),
        ("write_indices", ctypes.c_void_p),
        ("error_flag", ctypes.c_void_p),
        ("cache_shape", kernels.Shape),
        ("update_shape", kernels.Shape),
        ("index_count", ctypes.c_int64),
        ("rank", ctypes.c_int32),
        ("axis", ctypes.c_int32),
        ("circular", ctypes.c_int32),
        ("index_itemsize", ctypes.c_int32),
    ]


_LAYOUT = struct.Struct(f"<4Q{2 * kernels.MAX_RANK + 1}q4i")


# ---- the plugin's view: shapes and sizes of its inputs -------------------------------------------


def check_shapes(shapes: Sequence[Sequence[int]], axis: int = DEFAULT_AXIS, **attributes: int | str) -> None:
    """Build time: ``shapes`` of (past_cache, update[, write_indices]), -1 for unknown dimensions."""
    cache, update, *indices = shapes
    check_tensor_scatter(cache, update, indices[0] if indices else None, axis)


def launch_args(shapes: Sequence[Sequence[int]], itemsizes: Sequence[int], axis: int = DEFAULT_AXIS, mode: str = "linear", **attributes: object) -> dict[str, Any]:
    """What :func:`launch` needs, from the inputs' shapes and element sizes (bytes) and the op's attributes."""
    return dict(
        data_shape=shapes[0],
        update_shape=shapes[1],
        index_count=shapes[2][0] if len(shapes) > 2 else 0,
        axis=axis % len(shapes[0]),
        mode=mode,
        element_size=itemsizes[0],
        write_index_itemsize=itemsizes[2] if len(itemsizes) > 2 else 8,
    )


def launch(args: dict[str, Any], inputs: Sequence[int], output: int, data: int, error_flag: int, stream: int) -> None:
    """One plugin ``enqueue``: ``inputs`` the device pointers in the op's order, ``data`` 0 when in place."""
    launch_tensor_scatter(output=output, data=data, update=inputs[1], write_indices=inputs[2] if len(inputs) > 2 else 0,
                          error_flag=error_flag, stream=stream, **args)


def describe_errors(count: int, shapes: Sequence[Sequence[int]]) -> str:
    """What a non-zero error count of a launch means."""
    return (f"{count} batch row(s) of 'write_indices' below 0, or (linear mode) leaving the update of shape {shapes[1]} "
            f"no room in past_cache of shape {shapes[0]}, were skipped (or the inputs' shapes disagree: nothing written)")


def aot_scalars(shapes: dict[str, Sequence[int | trtp.ShapeExpr]], itemsizes: dict[str, int], ops: Any = kernels.IntegerOps, axis: int = DEFAULT_AXIS, mode: str = "linear", **attributes: object) -> list[int | trtp.ShapeExpr]:
    """The int32 scalars of ``tensor_scatter_aot`` (after its three input pointers), in order: rank, axis
    (in [0, rank-1]), circular (0 or 1), index_itemsize, index_count, then past_cache's and update's shapes,
    8 dimensions each (0-padded). ``shapes`` (ints or shape expressions) and ``itemsizes`` by input name."""
    rank = len(shapes["past_cache"])
    return scalars(data_shape=shapes["past_cache"], update_shape=shapes["update"], index_count=shapes["write_indices"][0],
                   axis=axis % rank if -rank <= axis < rank else axis, mode=mode, index_itemsize=itemsizes["write_indices"])


def scalars(*, data_shape: Sequence[int | trtp.ShapeExpr], update_shape: Sequence[int | trtp.ShapeExpr], index_count: int | trtp.ShapeExpr, axis: int, mode: str, index_itemsize: int) -> list[int | trtp.ShapeExpr]:
    """The int32 scalars of ``tensor_scatter_aot`` in order (see :func:`aot_scalars`)."""
    return [len(data_shape), axis, int(check_mode(mode) == "circular"), index_itemsize, index_count,
            *kernels.padded(data_shape), *kernels.padded(update_shape)]


# ---- launches --------------------------------------------------------------------------------------


def _checked(op, *, output, update, write_indices, data_shape, update_shape, index_count, axis, mode, element_size,
             write_index_itemsize, error_flag=0):
    """Checks the host-known arguments of a launch; returns (pointers, data_shape, update_shape)."""
    kernels.choice(op, "element_size", element_size, kernels.ELEMENT_SIZES, " bytes")
    kernels.choice(op, "write_index_itemsize", write_index_itemsize, kernels.INDEX_ITEMSIZES, " bytes")
    kernels.choice(op, "mode", mode, MODES)
    data_shape = kernels.checked_shape(op, "data_shape", data_shape, min_rank=2)
    update_shape = kernels.checked_shape(op, "update_shape", update_shape, min_rank=2)
    if isinstance(axis, bool) or not isinstance(axis, int) or not 1 <= axis < len(data_shape):
        raise ScatterInputError(op, "axis", f"must be an int in [1, {len(data_shape) - 1}] (not the batch axis)", axis)
    if isinstance(index_count, bool) or not isinstance(index_count, int) or index_count < 0:
        raise ScatterInputError(op, "index_count", "must be a non-negative int", index_count)
    kernels.needed(op, "output", output, math.prod(data_shape))
    kernels.needed(op, "update", update, math.prod(update_shape))
    kernels.needed(op, "write_indices", write_indices, index_count)
    pointers = kernels.pointers(op, output=output or 0, update=update or 0, write_indices=write_indices or 0, error_flag=error_flag or 0)
    return pointers, data_shape, update_shape


def tensor_scatter_args(*, output: int, update: int, write_indices: int, data_shape: Sequence[int], update_shape: Sequence[int], index_count: int, axis: int, mode: str, element_size: int,
                        write_index_itemsize: int, error_flag: int) -> bytes:
    """Checks the host-known arguments of a launch; returns the kernel's parameter (the bytes of a
    :class:`TensorScatterArgs`)."""
    pointers, data_shape, update_shape = _checked(
        "launch_tensor_scatter", output=output, update=update, write_indices=write_indices, data_shape=data_shape,
        update_shape=update_shape, index_count=index_count, axis=axis, mode=mode, element_size=element_size,
        write_index_itemsize=write_index_itemsize, error_flag=error_flag)
    return _LAYOUT.pack(*pointers, *kernels.padded(data_shape), *kernels.padded(update_shape), index_count if write_indices else 0,
                        len(data_shape), axis, int(mode == "circular"), write_index_itemsize)


def launch_tensor_scatter(*, output: int, data: int, update: int, write_indices: int, data_shape: Sequence[int], update_shape: Sequence[int], index_count: int, axis: int, mode: str,
                          element_size: int, write_index_itemsize: int, error_flag: int, stream: int) -> None:
    """TensorScatter on ``stream``: ``output`` = ``data`` (past_cache) with ``update`` written on ``axis`` from each
    batch row's write index.

    ``data == 0``: in place. ``write_indices`` points at ``index_count`` ints of ``write_index_itemsize`` bytes
    (0: every row writes from position 0); ``axis`` in [1, rank-1]; ``mode`` "linear" or "circular". A
    batch row whose write index is below 0 (or, linear, above M - S) writes nothing and counts 1 in
    ``error_flag``; shapes that disagree (the update's off the axis, or ``index_count`` against the batch)
    write nothing and count 1. Any grid is correct (the kernel grid-strides); the update's size sizes it.
    """
    args = tensor_scatter_args(output=output, update=update, write_indices=write_indices, data_shape=data_shape,
                               update_shape=update_shape, index_count=index_count, axis=axis, mode=mode,
                               element_size=element_size, write_index_itemsize=write_index_itemsize, error_flag=error_flag)
    kernels.launch(KERNEL, element_size, None, args, output=output, data=data, data_bytes=math.prod(data_shape) * element_size,
                   work=max(math.prod(update_shape), data_shape[0]), error_flag=error_flag, stream=stream)


def launch_tensor_scatter_aot(*, output: int, data: int, update: int, write_indices: int, data_shape: Sequence[int], update_shape: Sequence[int], index_count: int, axis: int, mode: str,
                              element_size: int, write_index_itemsize: int, stream: int) -> None:
    """:func:`launch_tensor_scatter` through the AOT entry point ``tensor_scatter_aot`` (see
    :func:`~trt_scatter.plugins.slice_scatter.launch_slice_scatter_aot`): rows skipped, not counted. The AOT form
    always takes write indices (an AOT plugin's inputs are fixed)."""
    op = "launch_tensor_scatter_aot"
    (output, update, write_indices, _), data_shape, update_shape = _checked(
        op, output=output, update=update, write_indices=write_indices, data_shape=data_shape, update_shape=update_shape,
        index_count=index_count, axis=axis, mode=mode, element_size=element_size, write_index_itemsize=write_index_itemsize)
    kernels.check_aot_limits(op, {"data_shape": data_shape, "update_shape": update_shape, "write_indices": (index_count,)})
    arguments = scalars(data_shape=data_shape, update_shape=update_shape, index_count=index_count, axis=axis, mode=mode,
                        index_itemsize=write_index_itemsize)
    kernels.launch_aot(KERNEL + kernels.AOT_SUFFIX, element_size, None, [output, update, write_indices], arguments,
                       output=output, data=data, data_bytes=math.prod(data_shape) * element_size,
                       grid=kernels.aot_grid(update_shape), stream=stream)
