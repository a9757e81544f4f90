"""How the time of ``trt-scatter lower`` and ``trt-scatter build --plugins`` grows with a model's scatter nodes.

    .venv/bin/python bench/bench_model_size.py                  # chains of 300 and 3000 SliceScatter nodes
    .venv/bin/python bench/bench_model_size.py --nodes 30 300 --repeat 1

Each model is a chain: every SliceScatter writes into the output of the one before it (a write of two rows
into data [4, 6]), the shape a decoder's per-layer cache writes take. The commands run in this process
(``trt_scatter.cli.main``), best of ``--repeat``; the ratio column is the time against the smallest
chain's, beside the ratio of node counts: validation, lowering and the engine's network grow linearly
with the nodes when the ratios match. ``--build`` also builds each chain's engine with the plugins
(TensorRT-RTX on a CPU; slower).
"""

import argparse
import contextlib
import io
import os
import platform
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from trt_scatter import __version__
from trt_scatter.cli import main
from trt_scatter.ops import DOMAIN, VERSION


def chain(nodes):
    """A model of ``nodes`` SliceScatter nodes in a chain (each writes rows 0:2 of the previous one's output)."""
    initializers = [numpy_helper.from_array(np.array([value], np.int64), name) for name, value in (("start", 0), ("stop", 2), ("step", 1))]
    graph_nodes, previous = [], "data"
    for index in range(nodes):
        output = f"written_{index}"
        graph_nodes.append(helper.make_node("SliceScatter", [previous, "updates", "start", "stop", "step"], [output], name=f"write_{index}", domain=DOMAIN))
        previous = output
    graph = helper.make_graph(graph_nodes, "chain", [helper.make_tensor_value_info("data", TensorProto.FLOAT, [4, 6]),
                              helper.make_tensor_value_info("updates", TensorProto.FLOAT, [2, 6])],
                              [helper.make_tensor_value_info(previous, TensorProto.FLOAT, [4, 6])], initializer=initializers)  # fmt: skip
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, VERSION)], ir_version=8)


def seconds(argv, repeat):
    """The best wall time of ``trt-scatter <argv>`` over ``repeat`` runs (its output kept quiet)."""
    best = float("inf")
    for _ in range(repeat):
        start = time.perf_counter()
        with contextlib.redirect_stdout(io.StringIO()):
            code = main(argv)
        best = min(best, time.perf_counter() - start)
        if code != 0:
            raise SystemExit(f"trt-scatter {' '.join(argv)} exited with {code}")
    return best


def run(nodes, repeat, build):
    commands = ["lower"] + (["build --plugins"] if build else [])
    print(f"trt-scatter {__version__}, Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; best of {repeat}")
    print()
    print("| command | nodes | seconds | x nodes | x time |")
    print("| --- | ---: | ---: | ---: | ---: |")
    with tempfile.TemporaryDirectory() as folder:
        for command in commands:
            first = None
            for count in nodes:
                path = os.path.join(folder, f"chain_{count}.onnx")
                onnx.save(chain(count), path)
                target = os.path.join(folder, f"chain_{count}.out")
                argv = ["lower", path, target] if command == "lower" else ["build", path, "--plugins", "-o", target]
                took = seconds(argv, repeat)
                first = first or (count, took)
                print(f"| {command} | {count} | {took:.2f} | {count / first[0]:.0f} | {took / first[1]:.1f} |")


if __name__ == "__main__":
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--nodes", type=int, nargs="+", default=[300, 3000], help="chain lengths (the first is the baseline)")
    parser.add_argument("--repeat", type=int, default=3, help="runs per chain (the best counts)")
    parser.add_argument("--build", action="store_true", help="also build each chain's engine with --plugins")
    args = parser.parse_args()
    run(args.nodes, args.repeat, args.build)
