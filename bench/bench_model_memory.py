"""The peak memory of each command on a model whose weights dominate it, against the weights and a plain copy.

    .venv/bin/python bench/bench_model_memory.py                 # 256 MB of weights
    .venv/bin/python bench/bench_model_memory.py --weights-mb 600 --external

The model is a small decoder's shape: per layer, key and value projections (MatMul of float32 weights) whose outputs a
SliceScatter writes into a KV cache at a run-time position, then a projection onto a vocabulary that holds most of the
weights. Each command runs in a process of its own, and its peak resident memory (``ru_maxrss``) is read when it ends.
The baseline is what any tool pays to touch the model: ``onnx.load`` then ``onnx.save`` of it, in a process of the
same Python. ``--external`` saves the weights in a ``.data`` file beside the model, as large models are.
"""

import argparse
import os
import platform
import resource
import subprocess
import sys
import tempfile
import time

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from trt_scatter import __version__
from trt_scatter.ops import DOMAIN, VERSION

HIDDEN, CACHE, TOKENS, LAYERS = 256, 64, 4, 2


def decoder(weights_mb):
    """A model of about ``weights_mb`` MB of float32 weights, most of them its vocabulary projection."""
    rng = np.random.default_rng(0)
    vocabulary = max(16, (int(weights_mb * 1e6) - LAYERS * 2 * HIDDEN * HIDDEN * 4) // (HIDDEN * 4))
    initializers = [numpy_helper.from_array(np.array([value], np.int64), name) for name, value in (("tokens", TOKENS), ("one", 1))]
    initializers.append(numpy_helper.from_array(rng.standard_normal((HIDDEN, vocabulary), dtype=np.float32), "vocabulary"))
    inputs = [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, TOKENS, HIDDEN]), helper.make_tensor_value_info("pos", TensorProto.INT64, [1])]
    nodes, outputs = [helper.make_node("Add", ["pos", "tokens"], ["stop"])], []
    for layer in range(LAYERS):
        for kind in ("k", "v"):
            initializers.append(numpy_helper.from_array(rng.standard_normal((HIDDEN, HIDDEN), dtype=np.float32), f"w{kind}{layer}"))
            inputs.append(helper.make_tensor_value_info(f"past_{kind}{layer}", TensorProto.FLOAT, [1, CACHE, HIDDEN]))
            nodes.append(helper.make_node("MatMul", ["x", f"w{kind}{layer}"], [f"{kind}{layer}"]))
            nodes.append(helper.make_node("SliceScatter", [f"past_{kind}{layer}", f"{kind}{layer}", "pos", "stop", "one", "one"],
                                          [f"present_{kind}{layer}"], domain=DOMAIN))
            outputs.append(helper.make_tensor_value_info(f"present_{kind}{layer}", TensorProto.FLOAT, [1, CACHE, HIDDEN]))
    nodes.append(helper.make_node("MatMul", ["x", "vocabulary"], ["logits"]))
    outputs.append(helper.make_tensor_value_info("logits", TensorProto.FLOAT, [1, TOKENS, vocabulary]))
    graph = helper.make_graph(nodes, "decoder", inputs, outputs, initializers)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, VERSION)], ir_version=8)


def peak(argv):
    """``(peak resident MB, seconds)`` of ``argv`` run as a process of its own; stops the benchmark if it fails."""
    start = time.perf_counter()
    process = subprocess.Popen(argv, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE, text=True)
    _, status, usage = os.wait4(process.pid, 0)
    seconds = time.perf_counter() - start
    error = process.stderr.read()
    process.stderr.close()
    code = os.waitstatus_to_exitcode(status)
    if code not in (0, 3):  # check: 3 where no GPU ran the engine, which is what it can do here
        raise SystemExit(f"{' '.join(argv)} exited with {code}: {error.strip()[-500:]}")
    return usage.ru_maxrss / 1024, seconds


def run(weights_mb, external, commands):
    with tempfile.TemporaryDirectory() as folder:
        path = os.path.join(folder, "decoder.onnx")
        onnx.save(decoder(weights_mb), path, save_as_external_data=external, location="decoder.onnx.data" if external else None)
        weights = sum(os.path.getsize(os.path.join(folder, name)) for name in os.listdir(folder)) / 1e6
        tool = [sys.executable, "-c", "from trt_scatter.cli import main; import sys; sys.exit(main(sys.argv[1:]))"]
        runs = {
            "onnx.load + onnx.save (baseline)": [sys.executable, "-c", f"import onnx; onnx.save(onnx.load({path!r}), {os.path.join(folder, 'copy.onnx')!r}"
                                                 + (", save_as_external_data=True, location='copy.onnx.data')" if external else ")")],
            "lower": [*tool, "lower", path, os.path.join(folder, "lowered.onnx")],
            "rewrite": [*tool, "rewrite", path, os.path.join(folder, "rewritten.onnx")],
            "build --plugins": [*tool, "build", path, "--plugins", "-o", os.path.join(folder, "decoder.plan")],
            "check": [*tool, "check", path, "--atol", "1e-3", "--rtol", "1e-3"],
        }
        print(f"trt-scatter {__version__}, Python {platform.python_version()}, {platform.machine()}, {os.cpu_count()} CPUs; "
              f"{weights:.0f} MB of weights, {'in an external .data file' if external else 'in the model file'}")
        print("| command | peak MB | x weights | x baseline | seconds |\n| --- | ---: | ---: | ---: | ---: |")
        baseline = None
        for name, argv in runs.items():
            if name != "onnx.load + onnx.save (baseline)" and name not in commands:
                continue
            megabytes, seconds = peak(argv)
            baseline = baseline or megabytes
            print(f"| {name} | {megabytes:.0f} | {megabytes / weights:.2f} | {megabytes / baseline:.2f} | {seconds:.1f} |", flush=True)


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--weights-mb", type=float, default=256, help="the model's weights in MB")
    parser.add_argument("--external", action="store_true", help="save the weights in an external .data file")
    parser.add_argument("--commands", nargs="+", default=["lower", "rewrite", "build --plugins", "check"],
                        choices=["lower", "rewrite", "build --plugins", "check"], help="the commands to measure")
    args = parser.parse_args(argv)
    if args.weights_mb <= 0:
        parser.error("--weights-mb must be positive")
    run(args.weights_mb, args.external, args.commands)
    return 0


if __name__ == "__main__":
    resource.setrlimit(resource.RLIMIT_CORE, (0, 0))  # a command TensorRT aborts leaves no core file the size of the model
    sys.exit(main())
