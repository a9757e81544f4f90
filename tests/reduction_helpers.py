"""Shared pieces of the reduction ops' tests: the order of combination written as the plain loop it defines,
element types, random inputs with repeated targets, and a NaN-aware bitwise comparison.

:func:`sequential` is an independent statement of trt_scatter.oracle.reductions' definition (one update at a
time, ascending position, NumPy scalars of the element type): the oracle is checked against it, against
eager PyTorch, ONNX's evaluator and onnxruntime, never against itself.
"""

import ml_dtypes
import numpy as np

BFLOAT16 = np.dtype(ml_dtypes.bfloat16)
#: Every element type the reductions take that TensorRT carries, and some only the oracle does.
KERNEL_TYPES = [np.dtype(t) for t in (np.float32, np.float16, np.int8, np.uint8, np.int32, np.int64)] + [BFLOAT16]
ORACLE_TYPES = KERNEL_TYPES + [np.dtype(t) for t in (np.float64, np.int16, np.uint64)]
REDUCTIONS = ("add", "mul", "min", "max", "mean")
TORCH_REDUCE = {"add": "sum", "mul": "prod", "min": "amin", "max": "amax", "mean": "mean"}

_OPS = {"add": lambda a, b: a + b, "mul": lambda a, b: a * b, "mean": lambda a, b: a + b,
        "min": lambda there, value: value if value != value or value < there else there,  # a NaN wins; ties keep what is there
        "max": lambda there, value: value if value != value or value > there else there}


def sequential(data, targets, updates, reduction, include_self):
    """The definition as a loop: ``data`` (T, C), ``targets`` (R,) rows of data, ``updates`` (R, C); update rows
    combine one at a time in ascending row order, element by element."""
    out = np.array(data, copy=True)
    count = np.zeros(out.shape[0], np.int64)
    op = _OPS[reduction]
    with np.errstate(all="ignore"):
        for row, target in enumerate(np.asarray(targets).reshape(-1)):
            for column in range(out.shape[1]):
                value = updates[row, column]
                out[target, column] = value if count[target] == 0 and not include_self else op(out[target, column], value)
            count[target] += 1
        if reduction == "mean":
            for target in np.flatnonzero(count):
                n = count[target] + include_self
                if out.dtype.kind in "iu":  # floor division of the sum as the type holds it
                    wide = np.int64 if out.dtype.kind == "i" else np.uint64
                    out[target] = (out[target].astype(wide) // wide(n)).astype(out.dtype)
                else:  # true division by the count in the element type (through float32 below it)
                    divisor = np.asarray(n, np.float32 if out.dtype.itemsize < 4 else out.dtype).astype(out.dtype)
                    out[target] = (out[target] / divisor).astype(out.dtype)
    return out


def values(rng, shape, dtype, small=False):
    """Random values of ``dtype``: integers over their whole range (``small``: within +-3, so that products and
    sums stay exact in every type), floats with sign and scale."""
    dtype = np.dtype(dtype)
    if dtype.kind in "iu":
        if small:
            low = 0 if dtype.kind == "u" else -3
            return rng.integers(low, 4, size=shape).astype(dtype)
        info = np.iinfo(dtype)
        return rng.integers(info.min, info.max, size=shape, dtype=dtype, endpoint=True)
    scale = 4.0 if small else 100.0
    return (rng.standard_normal(size=shape) * scale).astype(np.float32).astype(dtype)


def assert_same(actual, expected):
    """Bitwise equal, except that any NaN equals any NaN (payloads are not part of the definition)."""
    actual, expected = np.asarray(actual), np.asarray(expected)
    assert actual.dtype == expected.dtype and actual.shape == expected.shape, (actual.dtype, actual.shape, expected.dtype, expected.shape)
    bits = np.dtype(f"u{actual.dtype.itemsize}")
    same = np.ascontiguousarray(actual).view(bits) == np.ascontiguousarray(expected).view(bits)
    if actual.dtype.kind == "f" or actual.dtype == BFLOAT16:
        same |= np.isnan(actual.astype(np.float64)) & np.isnan(expected.astype(np.float64))
    assert same.all(), f"{(~same).sum()} of {same.size} differ; first at {np.argwhere(~same)[0]}: {actual[~same][:4]} vs {expected[~same][:4]}"
