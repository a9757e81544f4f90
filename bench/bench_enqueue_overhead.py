"""Python work per plugin ``enqueue``, measured on the CPU (the target is < 20 us per kernel launch it makes).

TensorRT calls a Python plugin's ``enqueue`` once per inference; everything it does in Python
(reading TensorRT's tensor descriptors, checking and packing the kernel's argument struct,
choosing the grid) is host time on every inference. This measures it with TensorRT's real
``PluginTensorDesc`` objects (TensorRT-RTX builds them on the CPU) and the driver calls replaced by
no-ops, because they need a GPU: ``cuLaunchKernel`` / ``cuMemcpyDtoDAsync`` cost comes on top and
``bench/gpu_check.py`` measures the launch path with them on a GPU.

Baseline, measured in the same run: an ``enqueue`` that reads the dims and type of each input
descriptor and does nothing else, as a plugin that does not cache them in ``on_shape_change``
must. The plugins read them once per shape change, so their ratio is below 1. The reduction ops launch
their sort and reduction as 20-odd launches of one kernel: their work is judged per launch.

    python bench/bench_enqueue_overhead.py [--calls 20000]
"""

import argparse
import functools
import platform
import time

import numpy as np

from gpu_check import NoDriver  # beside this file: python puts bench/ on the path
from trt_scatter.backend import tensorrt
from trt_scatter.dtypes import to_tensorrt
from trt_scatter.plugins import kernels
from trt_scatter.ops import SCATTER_ELEMENTS_REDUCE, SCATTER_ND_REDUCE, SCATTER_UPDATE, SLICE_SCATTER
from trt_scatter.plugins.base import plugin_class

TARGET_US = 20


def desc(shape, dtype):
    trt = tensorrt()
    tensor = trt.PluginTensorDesc()
    tensor.dims = trt.Dims(list(shape))
    tensor.type = to_tensorrt(dtype)
    tensor.format = trt.TensorFormat.LINEAR
    return tensor


# name -> (plugin, input descriptors); the shapes only size the grid, no memory is touched.
CASES = {
    "SliceScatter, rank 4, 2 axes": (
        plugin_class(SLICE_SCATTER),
        [desc((8, 16, 224, 224), np.float16), desc((8, 16, 112, 112), np.float16)]
        + [desc((2,), np.int64) for _ in range(4)],
    ),
    "ScatterUpdate, rank 3, 2-D indices": (
        plugin_class(SCATTER_UPDATE),
        [desc((32, 4096, 128), np.float32), desc((4, 64), np.int32), desc((32, 4, 64, 128), np.float32), desc((1,), np.int64)],
    ),
    # The reductions launch their sort and reduction: 23 launches here (3 radix passes, 2 scan levels).
    "ScatterNDReduce, 10M rows into 1M x 64": (
        plugin_class(SCATTER_ND_REDUCE),
        [desc((1_000_000, 64), np.float32), desc((10_000_000, 1), np.int64), desc((10_000_000, 64), np.float32)],
    ),
    "ScatterElementsReduce, 1M into 100k": (
        plugin_class(SCATTER_ELEMENTS_REDUCE),
        [desc((100_000,), np.float32), desc((1_000_000,), np.int64), desc((1_000_000,), np.float32)],
    ),
}


class Counting(NoDriver):
    """NoDriver that counts the launches of an enqueue."""

    launches = 0

    def launch(self, *args):
        self.launches += 1


def per_call_us(function, calls):
    function()
    best = float("inf")
    for _ in range(5):
        started = time.perf_counter()
        for _ in range(calls):
            function()
        best = min(best, (time.perf_counter() - started) / calls)
    return best * 1e6


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--calls", type=int, default=20000, help="enqueue calls per timing (best of 5 timings)")
    args = parser.parse_args(argv)
    trt = tensorrt()
    kernels.device = NoDriver(132)  # an H100's SM count, so the grid is sized as on one
    print(f"machine: {platform.platform()}, {platform.machine()}; python {platform.python_version()}; "
          f"{trt.__name__} {trt.__version__}; best of 5 x {args.calls} calls; driver calls are no-ops")
    print()
    print(f"{'case':40} {'path':8} {'baseline us':>12} {'enqueue us':>11} {'ratio':>6} {'launches':>8} {'us/launch':>9}  "
          f"target < {TARGET_US} us per launch")
    counted = Counting(132)
    worst = 0.0
    for name, (plugin_of_op, input_desc) in CASES.items():
        output_desc = [input_desc[0]]
        inputs = [0x10000 * (i + 1) for i in range(len(input_desc))]

        def baseline(input_desc=input_desc):  # the fastest way we know to read a Dims (iterating one is ~4x slower)
            return [(tuple(map(d.dims.__getitem__, range(len(d.dims)))), d.type) for d in input_desc]

        baseline_us = per_call_us(baseline, args.calls)
        for path, inplace in (("copy", False), ("in place", True)):
            plugin = plugin_of_op(inplace)
            plugin.on_shape_change(input_desc, output_desc)  # as TensorRT does before enqueue with new shapes
            outputs = [inputs[0]] if inplace else [0x900000]
            enqueue_us = per_call_us(functools.partial(plugin.enqueue, input_desc, output_desc, inputs, outputs, 0x800000, 0), args.calls)
            kernels.device = counted
            counted.launches = 0
            plugin.enqueue(input_desc, output_desc, inputs, outputs, 0x800000, 0)
            kernels.device = NoDriver(132)
            per_launch = enqueue_us / counted.launches
            worst = max(worst, per_launch)
            verdict = "ok" if per_launch < TARGET_US else "OVER"
            print(f"{name:40} {path:8} {baseline_us:12.2f} {enqueue_us:11.2f} {enqueue_us / baseline_us:6.2f} {counted.launches:8d} "
                  f"{per_launch:9.2f}  {verdict}")
    print()
    print(f"worst: {worst:.2f} us per launch, Python only (target < {TARGET_US} us with the driver calls, on a GPU)")
    return 0 if worst < TARGET_US else 1


if __name__ == "__main__":
    raise SystemExit(main())
