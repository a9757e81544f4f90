"""Where a ScatterNDReduce run spends its GPU time: each launch of the plan timed on its own (the keys, the sort's
count, scan and place launches of every radix pass, then the reduction), for the shapes of gpu_check.py's reduction
benchmarks and several sort splits (``chunk``: the keys one thread counts and places in order), so that the plugin's
default split is a measured choice.

Runs from the checkout on a machine with a CUDA GPU, NumPy and cuda-bindings (no TensorRT, no install):

    python3 bench/bench_reduce_phases.py --out DIR [--size-mb 256] [--chunks 256,128,64,32,16] [--reps 5]

A chunk of c keys needs about 4 * 256 * R / c bytes of workspace for R rows (160 MiB for R = 10M at c = 64).

Writes reduce_phases.{json,md} to DIR: per shape and chunk, the median over ``--reps`` runs of each phase's summed
launch times, their total, the launches, and the workspace. The values are float32 updates of one bit pattern (the
time of a sort and of an in-order combination does not depend on them); the indices are uniform over the targets.
"""

from __future__ import annotations

import argparse
import json
import statistics
import sys
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
import gpu_check  # noqa: E402

PHASE_GROUPS = {"keys": "keys_ms", "count": "count_ms", "scan_up": "scan_ms", "scan_top": "scan_ms", "scan_down": "scan_ms",
                "place": "place_ms", "reduce": "reduce_ms"}


def parse_args(argv=None):
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0], formatter_class=argparse.ArgumentDefaultsHelpFormatter)
    parser.add_argument("--out", type=Path, required=True, default=argparse.SUPPRESS, help="folder for reduce_phases.json and reduce_phases.md")
    parser.add_argument("--size-mb", type=int, default=256, help="scales the shapes as gpu_check.py's --size-mb does")
    parser.add_argument("--chunks", default="256,128,64,32,16", help="sort splits to time, comma-separated")
    parser.add_argument("--reps", type=int, default=5, help="runs per configuration (the median is reported)")
    args = parser.parse_args(argv)
    try:
        args.chunks = [int(chunk) for chunk in args.chunks.split(",")]
    except ValueError:
        parser.error(f"--chunks must be integers separated by commas, got {args.chunks!r}")
    for name, value in (("--chunks", min(args.chunks)), ("--reps", args.reps), ("--size-mb", args.size_mb)):
        if value < 1:
            parser.error(f"{name} must be at least 1, got {value}")
    return args


def shapes(size_mb):
    """(what, rows, targets, columns) of gpu_check.py's reduction benchmarks, scaled as it scales them."""
    seen = []
    for entry in gpu_check.reduction_plan(size_mb):
        shape = (entry["what"], entry["rows"], entry["targets"], entry["columns"])
        if shape not in seen:
            seen.append(shape)
    return seen


def time_phases(kernels, cuda, stream, memory, what, rows, targets, columns, chunks, reps, rng):
    from trt_scatter.plugins import reductions

    indices = rng.integers(0, targets, size=(rows, 1))
    buffers = dict(output=memory.alloc(targets * columns * 4, fill=0), indices=memory.put(indices),
                   updates=memory.alloc(rows * columns * 4, fill=0x3C))
    workspace = memory.alloc(max(reductions.Plan(rows, targets, chunk).workspace_bytes for chunk in chunks))
    device, records = kernels.device, []
    for chunk in chunks:
        runs = []
        for _ in range(reps):
            kernels.device = events = gpu_check.PhaseEvents(device, cuda, stream)
            try:
                reductions.run("scatter_nd_reduce", output=buffers["output"], data=0, indices=buffers["indices"], updates=buffers["updates"],
                               workspace=workspace, error_flag=0, stream=stream, data_shape=(targets, columns), indices_shape=(rows, 1),
                               rows=rows, columns=columns, targets=targets, element_size=4, element_type="float32", index_itemsize=8,
                               axis=0, reduction="add", include_self=1, chunk=chunk, segment=reductions.SEGMENT)
            finally:
                kernels.device = device
            runs.append(events.phase_ms())
        record = {"what": what, "chunk": chunk}
        for group in dict.fromkeys(PHASE_GROUPS.values()):
            record[group] = round(statistics.median(sum(ms for phase, ms in run.items() if PHASE_GROUPS[phase] == group) for run in runs), 4)
        record["total_ms"] = round(statistics.median(sum(run.values()) for run in runs), 4)
        plan = reductions.Plan(rows, targets, chunk)
        record["launches"] = len(plan.launches(lambda **fields: b"", 0, columns))
        record["workspace_MB"] = round(plan.workspace_bytes / 2**20, 1)
        records.append(record)
        print(json.dumps(record), flush=True)
    return records


def checkout_commit():
    """The checkout's commit, with "+ changes" when its tracked files differ from it (or "unknown" without git)."""
    import subprocess

    root = Path(__file__).resolve().parents[1]
    try:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], cwd=root, capture_output=True, text=True, check=True).stdout.strip()
        changed = subprocess.run(["git", "diff", "--quiet", "HEAD"], cwd=root).returncode != 0
    except (OSError, subprocess.CalledProcessError):
        return "unknown"
    return commit + (" + changes" if changed else "")


def main(argv=None):
    args = parse_args(argv)
    kernels = gpu_check.import_kernels()
    cuda = kernels.cuda
    try:
        machine = gpu_check.machine_info(cuda, kernels, with_torch=False)
    except cuda.CudaUnavailableError as error:
        print(f"bench_reduce_phases.py: needs a CUDA GPU: {error}", file=sys.stderr)
        return 2
    results = {"machine": {**machine, "commit": checkout_commit()}, "arguments": {k: str(v) for k, v in vars(args).items()}}
    stream = int(cuda.check(cuda.driver().cuStreamCreate(0), "cuStreamCreate"))
    rng = np.random.default_rng(0)
    results["phases"] = []
    for what, rows, targets, columns in shapes(args.size_mb):
        memory = gpu_check.DeviceMemory(cuda)
        try:
            results["phases"] += time_phases(kernels, cuda, stream, memory, what, rows, targets, columns, args.chunks, args.reps, rng)
        finally:
            memory.free()
    args.out.mkdir(parents=True, exist_ok=True)
    (args.out / "reduce_phases.json").write_text(json.dumps(results, indent=2, default=str))
    lines = ["# ScatterNDReduce: GPU time per phase (ms, median of summed launch times)", ""]
    lines += [f"- {key}: {value}" for key, value in results["machine"].items()] + [""]
    lines += gpu_check._table(results["phases"])
    (args.out / "reduce_phases.md").write_text("\n".join(lines) + "\n")
    print("\n".join(lines), flush=True)
    return results


if __name__ == "__main__":
    sys.exit(0 if isinstance(main(), dict) else 2)
