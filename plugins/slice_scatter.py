"""SliceScatter-15 (OpenVINO) on a GPU: its kernel (``slice_scatter.cu``), how a plugin checks and launches it.

start/stop/step/axes are tensors whose values TensorRT does not show the plugin at build time
(an ONNX initializer becomes a constant input, still only a device buffer), so the build-time
checks (:func:`check_shapes`) cover what shapes decide: 1-D parameters of equal lengths, no more
axes than data has, updates of data's rank matching data on every axis that cannot be sliced.
The kernel computes the slice geometry from the device values and writes nothing (counting an
error) if it does not match updates' shape.

What every plugin op module has (:mod:`trt_scatter.plugins.base` and :mod:`~trt_scatter.plugins.aot`
call it without knowing the op): :func:`check_shapes`, :func:`launch_args`, :func:`launch`,
:func:`describe_errors`, :func:`aot_scalars`. Beside them the two launches tests and the GPU check
call: :func:`launch_slice_scatter` (the Python plugins' entry point) and
:func:`launch_slice_scatter_aot` (the entry an engine built with the AOT plugins launches).

Importing this module needs neither TensorRT nor a GPU.
"""

from __future__ import annotations

import ctypes
import math
import struct
from typing import TYPE_CHECKING, Any

from trt_scatter.oracle import rules
from trt_scatter.oracle.slice_scatter import OP, check_slice_scatter_static

from . import kernels

if TYPE_CHECKING:
    from collections.abc import Sequence

    import tensorrt.plugin as trtp

KERNEL = "slice_scatter"
PARAMS = ("start", "stop", "step", "axes")


class SliceScatterArgs(ctypes.Structure):
    """Mirror of ``SliceScatterArgs`` in scatter_common.cuh (the kernel's one by-value parameter).

    Launches pack it with the equivalent ``struct`` layout below (several times faster than
    building this object); this mirror documents the layout and decodes packed bytes in tests.
    """

    _fields_ = [
        ("output", ctypes.c_void_p),
        ("updates", ctypes.c_void_p),
        ("start", ctypes.c_void_p),
        ("stop", ctypes.c_void_p),
        ("step", ctypes.c_void_p),
        ("axes", ctypes.c_void_p),
        ("error_flag", ctypes.c_void_p),
        ("data_shape", kernels.Shape),
        ("updates_shape", kernels.Shape),
        ("rank", ctypes.c_int32),
        ("num_axes", ctypes.c_int32),
        ("param_itemsize", ctypes.c_int32),
        ("axes_itemsize", ctypes.c_int32),
    ]


_LAYOUT = struct.Struct(f"<7Q{2 * kernels.MAX_RANK}q4i")


# ---- the plugin's view: shapes and sizes of its inputs -------------------------------------------


def check_shapes(shapes: Sequence[Sequence[int]], **attributes: int | str) -> None:
    """Build time: ``shapes`` of (data, updates, start, stop, step[, axes]), -1 for unknown dimensions."""
    data, updates, *params = shapes
    for name, shape in zip(PARAMS, params):
        rules.check_vector(OP, name, shape)
    lengths = [shape[0] for shape in params] + [None] * (4 - len(params))
    check_slice_scatter_static(data, updates, *lengths)


def launch_args(shapes: Sequence[Sequence[int]], itemsizes: Sequence[int], **attributes: object) -> dict[str, Any]:
    """What :func:`launch` needs, from the inputs' shapes and element sizes (bytes) (and the op's attributes: none but inplace)."""
    return dict(
        num_axes=shapes[2][0],
        data_shape=shapes[0],
        updates_shape=shapes[1],
        element_size=itemsizes[0],
        param_itemsize=itemsizes[2],
        axes_itemsize=itemsizes[5] if len(itemsizes) > 5 else itemsizes[2],
    )


def launch(args: dict[str, Any], inputs: Sequence[int], output: int, data: int, error_flag: int, stream: int) -> None:
    """One plugin ``enqueue``: ``inputs`` the device pointers in the op's order, ``data`` 0 when in place."""
    launch_slice_scatter(output=output, data=data, updates=inputs[1], start=inputs[2], stop=inputs[3], step=inputs[4],
                         axes=inputs[5] if len(inputs) > 5 else 0, error_flag=error_flag, stream=stream, **args)


def describe_errors(count: int, shapes: Sequence[Sequence[int]]) -> str:
    """What a non-zero error count of a launch means."""
    return (
        f"the slice that start/stop/step/axes select does not have updates' shape {shapes[1]} for data of shape "
        f"{shapes[0]}, so nothing was written (error count {count})"
    )


def aot_scalars(shapes: dict[str, Sequence[int | trtp.ShapeExpr]], itemsizes: dict[str, int], ops: Any = kernels.IntegerOps, **attributes: object) -> list[int | trtp.ShapeExpr]:
    """The int32 scalars of ``slice_scatter_aot`` (after its six input pointers, before the output), in
    order: rank, axes_count, param_itemsize, axes_itemsize, data's 8 dimensions, updates' 8 (0-padded).
    ``shapes``: the inputs' shapes by name (ints or TensorRT's shape expressions, ``ops`` their arithmetic);
    ``itemsizes``: the inputs' element sizes by name."""
    return scalars(data_shape=shapes["data"], updates_shape=shapes["updates"], param_itemsize=itemsizes["start"],
                   axes_count=axes_count_scalar([shapes[name][0] for name in PARAMS], ops), axes_itemsize=itemsizes["axes"])


def scalars(*, data_shape: Sequence[int | trtp.ShapeExpr], updates_shape: Sequence[int | trtp.ShapeExpr], axes_count: int | trtp.ShapeExpr, param_itemsize: int, axes_itemsize: int) -> list[int | trtp.ShapeExpr]:
    """The int32 scalars of ``slice_scatter_aot`` in order (see :func:`aot_scalars`); shapes of ints or expressions."""
    return [len(data_shape), axes_count, param_itemsize, axes_itemsize, *kernels.padded(data_shape), *kernels.padded(updates_shape)]


def axes_count_scalar(lengths: Sequence[int | trtp.ShapeExpr], ops: Any = kernels.IntegerOps) -> int | trtp.ShapeExpr:
    """The ``axes_count`` scalar of the AOT entry, from the lengths of start, stop, step and axes: 1 + their
    common length, or 0 when they differ at run time (the kernel then writes nothing). TensorRT cannot
    check dynamic lengths before the launch (the Python plugin checks them on the host), and its shape
    expressions are sizes, so the code has no negative value."""
    count = lengths[0]
    same = 1
    for length in lengths[1:]:
        same = ops.mul(same, ops.eq(length, count))
    return ops.mul(same, ops.add(count, 1))


# ---- launches --------------------------------------------------------------------------------------


def _checked(op, *, output, updates, start, stop, step, axes, num_axes, data_shape, updates_shape,
             element_size, param_itemsize, axes_itemsize, error_flag=0):
    """Checks the host-known arguments of a launch; returns (pointers, data_shape, updates_shape)."""
    kernels.choice(op, "element_size", element_size, kernels.ELEMENT_SIZES, " bytes")
    kernels.choice(op, "param_itemsize", param_itemsize, kernels.INDEX_ITEMSIZES, " bytes")
    if axes:
        kernels.choice(op, "axes_itemsize", axes_itemsize, kernels.INDEX_ITEMSIZES, " bytes")
    data_shape = kernels.checked_shape(op, "data_shape", data_shape)
    updates_shape = kernels.checked_shape(op, "updates_shape", updates_shape)
    if len(updates_shape) != len(data_shape):
        raise rules.ScatterInputError(op, "updates_shape", f"must have the rank of data_shape ({len(data_shape)})", f"shape {updates_shape}")
    if isinstance(num_axes, bool) or not isinstance(num_axes, int) or num_axes < 0:
        raise rules.ScatterInputError(op, "num_axes", "must be a non-negative int", num_axes)
    if num_axes and not (start and stop and step):
        raise rules.ScatterInputError(op, "start/stop/step", "must be device addresses when num_axes > 0", (start, stop, step))
    kernels.needed(op, "output", output, math.prod(data_shape))
    kernels.needed(op, "updates", updates, math.prod(updates_shape))
    pointers = kernels.pointers(op, output=output or 0, updates=updates or 0, start=start or 0, stop=stop or 0, step=step or 0,
                                axes=axes or 0, error_flag=error_flag or 0)
    return pointers, data_shape, updates_shape


def slice_scatter_args(*, output: int, updates: int, start: int, stop: int, step: int, axes: int, num_axes: int, data_shape: Sequence[int], updates_shape: Sequence[int],
                       element_size: int, param_itemsize: int, axes_itemsize: int, error_flag: int) -> bytes:
    """Checks the host-known arguments of a launch; returns the kernel's parameter (the bytes of a
    :class:`SliceScatterArgs`)."""
    pointers, data_shape, updates_shape = _checked(
        "launch_slice_scatter", output=output, updates=updates, start=start, stop=stop, step=step, axes=axes,
        num_axes=num_axes, data_shape=data_shape, updates_shape=updates_shape, element_size=element_size,
        param_itemsize=param_itemsize, axes_itemsize=axes_itemsize, error_flag=error_flag)
    return _LAYOUT.pack(*pointers, *kernels.padded(data_shape), *kernels.padded(updates_shape), len(data_shape),
                        num_axes, param_itemsize, axes_itemsize if axes else 0)


def launch_slice_scatter(*, output: int, data: int, updates: int, start: int, stop: int, step: int, axes: int, num_axes: int, data_shape: Sequence[int], updates_shape: Sequence[int],
                         element_size: int, param_itemsize: int, axes_itemsize: int, error_flag: int, stream: int) -> None:
    """SliceScatter on ``stream``: ``output`` = ``data`` with ``updates`` in the slice start:stop:step over axes.

    ``data == 0``: in place (``output`` already holds data). ``start``/``stop``/``step`` point at
    ``num_axes`` ints of ``param_itemsize`` bytes, ``axes`` at as many of ``axes_itemsize`` bytes
    (``axes == 0``: axes 0..num_axes-1). If the slice they describe (clamped as
    ``oracle.slice_geometry`` does) does not have ``updates_shape``, or the axes or steps are
    invalid, nothing is written and ``error_flag`` (a device uint32, or 0) counts 1.
    """
    args = slice_scatter_args(output=output, updates=updates, start=start, stop=stop, step=step, axes=axes,
                              num_axes=num_axes, data_shape=data_shape, updates_shape=updates_shape,
                              element_size=element_size, param_itemsize=param_itemsize,
                              axes_itemsize=axes_itemsize, error_flag=error_flag)
    kernels.launch(KERNEL, element_size, None, args, output=output, data=data,
                   data_bytes=math.prod(data_shape) * element_size, work=math.prod(updates_shape), error_flag=error_flag,
                   stream=stream)


def launch_slice_scatter_aot(*, output: int, data: int, updates: int, start: int, stop: int, step: int, axes: int, num_axes: int, data_shape: Sequence[int], updates_shape: Sequence[int],
                             element_size: int, param_itemsize: int, axes_itemsize: int, stream: int) -> None:
    """:func:`launch_slice_scatter` through the AOT entry point ``slice_scatter_aot``, launched as an engine
    built with :mod:`trt_scatter.plugins.aot` launches it (same arguments, no ``error_flag``: invalid
    geometry writes nothing and counts nothing). Shapes must fit :data:`~trt_scatter.plugins.kernels.AOT_LIMITS`."""
    op = "launch_slice_scatter_aot"
    (output, updates, start, stop, step, axes, _), data_shape, updates_shape = _checked(
        op, output=output, updates=updates, start=start, stop=stop, step=step, axes=axes, num_axes=num_axes,
        data_shape=data_shape, updates_shape=updates_shape, element_size=element_size,
        param_itemsize=param_itemsize, axes_itemsize=axes_itemsize)
    kernels.check_aot_limits(op, {"data_shape": data_shape, "updates_shape": updates_shape})
    arguments = scalars(data_shape=data_shape, updates_shape=updates_shape, axes_count=num_axes + 1,
                        param_itemsize=param_itemsize, axes_itemsize=axes_itemsize if axes else 0)
    kernels.launch_aot(KERNEL + kernels.AOT_SUFFIX, element_size, None, [output, updates, start, stop, step, axes], arguments,
                       output=output, data=data, data_bytes=math.prod(data_shape) * element_size,
                       grid=kernels.aot_grid(updates_shape), stream=stream)
