"""Times each oracle op on large inputs against the plain NumPy way of doing the same scatter.

The oracle adds input checks (types, shapes, index ranges) and the general formulation of each op
on top of one NumPy assignment; this measures what that costs. Baselines, same inputs, same run:

- slice_scatter:    ``out = data.copy(); out[slices] = updates``
- scatter_elements: ``out = data.copy(); np.put_along_axis(out, indices, updates, axis)``
- scatter_nd:       ``out = data.copy(); out[tuple(idx.T)] = upd``
- scatter_update:   ``out = data.copy(); out[:, idx] = upd``

Timing is best of ``--repeat`` runs with ``time.perf_counter``, oracle and baseline interleaved so
that both see the same machine load; ``ratio`` is oracle best / baseline best, ``paired`` the median
of the ratios of each interleaved pair. The goal is every ratio <= 1.3.

The machine's load average is printed before and after: on a shared machine, rerun when it is
high (ratios near 1 swing by +-0.3 under a load of twice the core count).

Usage: ``python bench/bench_oracle.py [--data-mb 64] [--repeat 11] [--ops slice_scatter,scatter_nd]``
"""

import argparse
import gc
import os
import platform
import time

import numpy as np

from trt_scatter import oracle

GOAL = 1.3


def _square(data_mb, dtype):
    """A square 2-D shape of about ``data_mb`` MB (at least) of ``dtype``."""
    side = int(np.ceil(np.sqrt(data_mb * 2**20 / np.dtype(dtype).itemsize)))
    return side, side


def slice_scatter_cases(data_mb, rng):
    n, m = _square(data_mb, np.float32)
    data = rng.standard_normal((n, m), dtype=np.float32)
    for name, start, stop, step in (
        ("every 2nd row, every 3rd column", [1, 0], [2**31 - 1, -1], [2, 3]),
        ("half the rows, backwards", [-1], [-(2**63)], [-2]),
        ("a contiguous block", [n // 4, m // 4], [3 * n // 4, 3 * m // 4], [1, 1]),
    ):
        slices = [slice(a, b, c) for a, b, c in zip(start, stop, step)]
        updates = rng.standard_normal(data[tuple(slices)].shape, dtype=np.float32)
        start, stop, step = (np.array(v, np.int64) for v in (start, stop, step))

        def baseline(data=data, updates=updates, slices=tuple(slices)):
            out = data.copy()
            out[slices] = updates
            return out

        def run(data=data, updates=updates, start=start, stop=stop, step=step):
            return oracle.slice_scatter(data, updates, start, stop, step)

        yield name, data, baseline, run


def scatter_elements_cases(data_mb, rng):
    n, m = _square(data_mb, np.float32)
    data = rng.standard_normal((n, m), dtype=np.float32)
    updates = rng.standard_normal((n, m), dtype=np.float32)
    # Full-size indices (so put_along_axis applies), a different rotation of range(n) in each column:
    # a permutation along the axis, so no duplicate targets.
    for index_type in (np.int64, np.int32):
        for axis in (0, 1):
            rotation = (np.arange(n)[:, None] + np.arange(m)[None, :]) % (n if axis == 0 else m)
            indices = (rotation if axis == 0 else rotation.T.copy()).astype(index_type)

            def baseline(data=data, indices=indices, updates=updates, axis=axis):
                out = data.copy()
                np.put_along_axis(out, indices, updates, axis)
                return out

            def run(data=data, indices=indices, updates=updates, axis=axis):
                return oracle.scatter_elements(data, indices, updates, axis)

            yield f"full-size {np.dtype(index_type).name} indices, axis {axis}", data, baseline, run


def scatter_nd_cases(data_mb, rng):
    n, m = _square(data_mb, np.float32)
    data = rng.standard_normal((n, m), dtype=np.float32)
    elements = rng.choice(n * m, size=n * m // 4, replace=False)
    for name, idx in (
        ("k=2, a quarter of the elements", np.stack(np.unravel_index(elements, (n, m)), axis=-1)),
        ("k=1, half the rows", rng.permutation(n)[: n // 2, None]),
    ):
        idx = idx.astype(np.int64)
        upd = rng.standard_normal(idx.shape[:-1] + data.shape[idx.shape[-1] :], dtype=np.float32)

        def baseline(data=data, idx=idx, upd=upd):
            out = data.copy()
            out[tuple(idx.T)] = upd
            return out

        def run(data=data, idx=idx, upd=upd):
            return oracle.scatter_nd(data, idx, upd)

        yield name, data, baseline, run


def scatter_update_cases(data_mb, rng):
    n, m = _square(data_mb, np.float32)
    data = rng.standard_normal((n, m), dtype=np.float32)
    idx = rng.permutation(m)[: m // 2].astype(np.int64)
    upd = rng.standard_normal((n, idx.size), dtype=np.float32)

    def baseline(data=data, idx=idx, upd=upd):
        out = data.copy()
        out[:, idx] = upd
        return out

    def run(data=data, idx=idx, upd=upd):
        return oracle.scatter_update(data, idx, upd, 1)

    yield "axis 1, half the columns", data, baseline, run


OPS = {
    "slice_scatter": slice_scatter_cases,
    "scatter_elements": scatter_elements_cases,
    "scatter_nd": scatter_nd_cases,
    "scatter_update": scatter_update_cases,
}


def _load():
    return ", ".join(f"{x:.2f}" for x in os.getloadavg()) if hasattr(os, "getloadavg") else "n/a"


def timed(function):
    gc.collect()
    begin = time.perf_counter()
    function()
    return time.perf_counter() - begin


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--data-mb", type=float, default=64, help="size of 'data' in MB (default 64)")
    parser.add_argument("--repeat", type=int, default=11, help="runs per measurement; the best counts (default 11)")
    parser.add_argument("--ops", default=",".join(OPS), help="comma-separated ops (default: all)")
    args = parser.parse_args()

    print(f"machine: {platform.platform()}, {platform.processor() or platform.machine()}, {os.cpu_count()} cores")
    print(f"python {platform.python_version()}, numpy {np.__version__}; best of {args.repeat}, interleaved")
    print(f"load average before: {_load()}\n")
    header = f"{'op':<17} {'case':<34} {'data MB':>8} {'baseline ms':>12} {'oracle ms':>10} {'ratio':>6} {'paired':>7}  goal<={GOAL}"
    print(header)
    print("-" * len(header))
    worst = 0.0
    rng = np.random.default_rng(0)
    for op in args.ops.split(","):
        for case, data, baseline, run in OPS[op](args.data_mb, rng):
            expected, actual = baseline(), run()  # warm up, and the two must agree
            assert actual.dtype == expected.dtype and np.array_equal(actual, expected), f"{op} {case}: oracle != baseline"
            del expected, actual
            times = [(timed(baseline), timed(run)) for _ in range(args.repeat)]  # interleaved: same load for both
            base, mine = (min(column) for column in zip(*times))
            ratio = mine / base
            paired = float(np.median([o / b for b, o in times]))  # a second view, robust to load drifting
            worst = max(worst, ratio)
            verdict = "ok" if ratio <= GOAL else "MISSED"
            print(f"{op:<17} {case:<34} {data.nbytes / 2**20:>8.0f} {base * 1e3:>12.1f} {mine * 1e3:>10.1f} {ratio:>6.2f} {paired:>7.2f}  {verdict}")
    print(f"\nworst ratio {worst:.2f} (goal <= {GOAL}); load average after: {_load()}")


if __name__ == "__main__":
    main()
