"""The reduction ops on a CPU: the oracle's ordered combination against NumPy's ``np.add.at`` and eager PyTorch,
and the kernels' plan (launches, workspace, bytes) for the GPU check's shapes.

What can be measured without a GPU:

1. the oracle (``trt_scatter.oracle.reductions.reduce_rows``: a stable sort by target, then one round per rank of
   the updates into a target) on an ``index_add``-shaped input, against ``np.add.at`` (which NumPy documents as
   accumulating, not in which order) and ``torch.Tensor.index_add_`` (eager, CPU), best of ``--repeat``, all three
   interleaved; and whether the three give the same bits;
2. the plan the Python plugin launches (:class:`trt_scatter.plugins.reductions.Plan`) for the GPU check's shapes:
   radix passes, launches per call, workspace bytes, and the bytes the launches move, by the plan's own count.
   These are arithmetic on shapes; the time they take on a GPU is bench/gpu_check.py's to measure.

Usage: ``python bench/bench_reductions.py [--rows 1000000] [--targets 10000] [--columns 16] [--repeat 5]``
"""

from __future__ import annotations

import argparse
import os
import platform
import time

import numpy as np

from trt_scatter.oracle import reductions
from trt_scatter.plugins.reductions import RADIX_BITS, Plan


def best_of(repeat, functions):
    """``{name: best seconds}`` of each function, the functions interleaved so that they see the same load."""
    best = dict.fromkeys(functions, float("inf"))
    for _ in range(repeat):
        for name, function in functions.items():
            started = time.perf_counter()
            function()
            best[name] = min(best[name], time.perf_counter() - started)
    return best


def oracle_against_numpy_and_torch(rows, targets, columns, repeat, seed=0):
    rng = np.random.default_rng(seed)
    data = rng.standard_normal((targets, columns), dtype=np.float32)
    indices = rng.integers(0, targets, size=rows)
    updates = rng.standard_normal((rows, columns), dtype=np.float32)
    outputs = {}

    def oracle():
        outputs["oracle"] = reductions.reduce_rows(data, indices, updates, "add", 1)

    def add_at():
        out = data.copy()
        np.add.at(out, indices, updates)
        outputs["np.add.at"] = out

    functions = {"oracle": oracle, "np.add.at": add_at}
    try:
        import torch

        torch.set_num_threads(1)  # one core, as the oracle and NumPy use
        tensors = torch.from_numpy(data), torch.from_numpy(indices), torch.from_numpy(updates)
        functions["torch index_add_ (CPU)"] = lambda: outputs.__setitem__("torch index_add_ (CPU)", tensors[0].clone().index_add_(0, *tensors[1:]).numpy())
    except ImportError:
        pass
    best = best_of(repeat, functions)
    same = {name: bool(np.array_equal(out.view(np.uint32), outputs["oracle"].view(np.uint32))) for name, out in outputs.items()}
    return best, same


def plan_rows(shapes):
    """The launch plan of ScatterNDReduce for each (what, rows, targets, columns) with float32 elements, int64 indices."""
    records = []
    for what, rows, targets, columns in shapes:
        plan = Plan(rows, targets)
        launches = 2 + plan.passes * (3 + 2 * (len(plan.levels) - 1))
        sort_bytes = plan.passes * (2 * 4 * rows + 2 * 8 * rows + 2 * 4 * plan.levels[0]) + 4 * rows * 2  # keys/rows in and out, counts
        reduce_bytes = 8 * rows + 4 * rows * columns + 2 * 4 * targets * columns  # row numbers and keys, updates, target rows
        records.append({"what": what, "radix passes": plan.passes, "launches": launches, "workspace MB": round(plan.workspace_bytes / 2**20, 1),
                        "index MB": round(8 * rows / 2**20, 1), "sort MB moved": round(sort_bytes / 2**20, 1),
                        "reduce MB moved": round(reduce_bytes / 2**20, 1), "updates MB": round(4 * rows * columns / 2**20, 1)})
    return records


def main(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--rows", type=int, default=1_000_000, help="update rows of the timed add (edges, in a GNN)")
    parser.add_argument("--targets", type=int, default=10_000, help="rows they add into (nodes)")
    parser.add_argument("--columns", type=int, default=16, help="float32 elements per row")
    parser.add_argument("--repeat", type=int, default=5, help="timings of each way (the best is reported)")
    args = parser.parse_args(argv)
    print(f"machine: {platform.platform()}, {os.cpu_count()} cores; numpy {np.__version__}; load {os.getloadavg()[0]:.2f}")
    print(f"\n1. add of {args.rows} rows of {args.columns} float32 into {args.targets} targets (best of {args.repeat}, one core)\n")
    best, same = oracle_against_numpy_and_torch(args.rows, args.targets, args.columns, args.repeat)
    print(f"| {'what':24} | seconds | vs np.add.at | same bits as the oracle |\n|---|---|---|---|")
    for name, seconds in best.items():
        print(f"| {name:24} | {seconds:.3f} | {seconds / best['np.add.at']:.2f} | {same[name]} |")
    print(f"\n2. ScatterNDReduce's plan (radix sort of the index rows, {RADIX_BITS} key bits per pass; float32 rows, int64 indices)\n")
    shapes = [("10M updates into 1M targets of 64", 10_000_000, 1_000_000, 64), ("GNN: 1M edges into 100k nodes of 128", 1_000_000, 100_000, 128),
              ("PyG GCN degree: 1M edges into 100k nodes", 1_000_000, 100_000, 1)]
    records = plan_rows(shapes)
    columns = list(records[0])
    print("| " + " | ".join(columns) + " |\n|" + "---|" * len(columns))
    for record in records:
        print("| " + " | ".join(str(record[c]) for c in columns) + " |")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
