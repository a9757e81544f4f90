"""Hugging Face decoders' KV-cache writes on every exporter path: how many reach TensorRT as one trt_scatter node each.

    .venv/bin/python bench/bench_hf_kv_cache.py [--out bench/results/hf_kv_cache_<date>.md] [--families llama,qwen2,gpt2]
                                                [--shapes 1x1,1x4,4x1,4x4] [--paths ...] [--no-check]

For each model family (transformers 5.x, random weights from a 2-layer config, ``StaticCache`` of 16 positions whose keys
and values are the module's inputs and outputs: tests/hf_models.py), batch and new tokens (1: a decode step, 4: a
prefill of 4), and exporter path (``trt_scatter.torch.export`` with either exporter; PyTorch's own exporters followed by
``rewrite``): the export's scatter nodes (trt_scatter nodes, and ScatterND/ScatterElements left), whether it equals eager
PyTorch in ``trt_scatter.reference`` (atol 1e-5), and ``trt-scatter check`` (atol 1e-4, rtol 1e-3; it builds the
engine with the plugins on TensorRT, then compares onnxruntime on the lowered model with the reference where no
GPU runs the engine), in a subprocess each. Counts are properties of the models, the same on every machine.
"""

from __future__ import annotations

import argparse
import collections
import datetime
import os
import pathlib
import platform
import subprocess
import sys
import tempfile
import time
import traceback

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

PATHS = ("trt_scatter.torch dynamo", "trt_scatter.torch torchscript", "dynamo + rewrite", "torchscript + rewrite")
WRITES = 4  # 2 layers, keys and values


def run(family, batch, tokens, path, check, folder):
    """One row of the table."""
    import numpy as np
    import onnx

    import hf_models
    from test_hf_kv_cache import export
    from trt_scatter.reference import Reference

    row = {"model": family, "batch": batch, "tokens": tokens, "path": path}
    module = hf_models.cache_writer(family, batch, tokens)
    inputs = module.inputs(position=5)
    expected = module.reference(*inputs)  # before the export: torch.onnx.export (the paths without trt_scatter.torch) leaves the decoder in the wrapper's training mode, dropout on
    started = time.perf_counter()
    try:
        model = export(path, module, tuple(value.clone() for value in inputs))
    except Exception as error:  # noqa: BLE001 (the table says what failed)
        row["export"] = f"failed: {type(error).__name__}: {str(error).splitlines()[0][:120]}"
        return row
    row["export s"] = round(time.perf_counter() - started, 1)
    counts = collections.Counter(node.op_type for node in model.graph.node if node.domain == "trt_scatter" or node.op_type in ("ScatterND", "ScatterElements"))
    row["scatter nodes"] = ", ".join(f"{count} {op}" for op, count in sorted(counts.items())) or "none"
    row["one node per write"] = counts.get("ScatterUpdate", 0) + counts.get("CacheScatter", 0) == WRITES and sum(counts.values()) == WRITES
    outputs = Reference(model).run(hf_models.feeds(module, inputs))
    row["equals eager"] = all(np.allclose(outputs[name], value, atol=1e-5, rtol=1e-4) for name, value in zip(module.output_names(), expected))
    if check:
        path_on_disk = pathlib.Path(folder) / f"{family}-{batch}x{tokens}-{path.replace(' ', '_')}.onnx"
        onnx.save(model, path_on_disk)
        result = subprocess.run([sys.executable, "-m", "trt_scatter.cli", "check", str(path_on_disk), "--atol", "1e-4", "--rtol", "1e-3"],
                                capture_output=True, text=True, timeout=600)
        verdict = result.stdout.strip().splitlines()[-1] if result.stdout.strip() else result.stderr.strip()[-120:]
        row["engine"] = "built" if "engine: built" in result.stdout else "NOT BUILT"
        row["check"] = verdict.split(":")[0]
    return row


def table(rows):
    columns = []
    for row in rows:
        columns += [key for key in row if key not in columns]
    lines = ["| " + " | ".join(columns) + " |", "|" + " --- |" * len(columns)]
    lines += ["| " + " | ".join(str(row.get(column, "")) for column in columns) + " |" for row in rows]
    return lines


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", type=pathlib.Path, help="write the Markdown report here")
    parser.add_argument("--families", default="llama,qwen2,gpt2")
    parser.add_argument("--shapes", default="1x1,1x4,4x1,4x4", help="BATCHxTOKENS, comma-separated")
    parser.add_argument("--paths", default=",".join(PATHS))
    parser.add_argument("--no-check", action="store_true", help="skip `trt-scatter check` (and the engine build)")
    args = parser.parse_args(argv)
    import warnings

    warnings.filterwarnings("ignore")
    import logging

    logging.disable(logging.WARNING)
    import torch
    import transformers

    rows = []
    started = time.perf_counter()
    with tempfile.TemporaryDirectory() as folder:
        for family in args.families.split(","):
            for shape in args.shapes.split(","):
                batch, tokens = (int(v) for v in shape.split("x"))
                for path in args.paths.split(","):
                    try:
                        row = run(family, batch, tokens, path, not args.no_check, folder)
                    except Exception:  # noqa: BLE001
                        row = {"model": family, "batch": batch, "tokens": tokens, "path": path, "error": traceback.format_exc().splitlines()[-1]}
                    rows.append(row)
                    print(" | ".join(f"{k}={v}" for k, v in row.items()), flush=True)
    good = sum(1 for row in rows if row.get("one node per write") and row.get("equals eager") and row.get("check", "PASSED") in ("PASSED", "NOT RUN ON TENSORRT"))
    lines = [
        f"# Hugging Face KV-cache writes on every exporter path ({datetime.date.today().isoformat()})", "",
        f"Machine: {platform.node()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores, Python {platform.python_version()}; "
        f"torch {torch.__version__}, transformers {transformers.__version__}; {round(time.perf_counter() - started)} s in all.", "",
        "Each model: 2 layers, a StaticCache of 16 positions holding 5 tokens, written by `index_copy_` (4 writes: keys and",
        "values of each layer). `check`: `trt-scatter check --atol 1e-4 --rtol 1e-3` (engine built with the plugins on",
        "TensorRT-RTX; without a GPU the engine does not run and onnxruntime on the lowered model is compared instead:",
        "NOT RUN ON TENSORRT).", "",
        *table(rows), "",
        f"{good} of {len(rows)} exports: one trt_scatter node per write, equal to eager PyTorch, check passed or NOT RUN ON TENSORRT.", "",
    ]
    report = "\n".join(lines)
    print(report)
    if args.out:
        args.out.parent.mkdir(parents=True, exist_ok=True)
        args.out.write_text(report)
    return 0 if good == len(rows) else 1


if __name__ == "__main__":
    sys.exit(main())
