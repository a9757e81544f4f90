"""Size of the native lowerings: layers added and index-tensor bytes per updated element.

    .venv/bin/python bench/bench_lowering_size.py

For each case it adds the op to a fresh TensorRT network (static shapes, then every dimension
dynamic) and prints: the layers of the network (all, and without constants), and the bytes of
the IScatterLayer's index tensor per element of ``updates`` (the memory a lowering spends
beyond data and updates; the plugins need none). No engine is built: the numbers are
properties of the network, the same on every machine.
"""

import argparse

import numpy as np

from trt_scatter.backend import tensorrt
from trt_scatter.backend import new_builder
from trt_scatter.networks import add_scatter_elements, add_scatter_nd, add_scatter_update, add_slice_scatter
from trt_scatter.dtypes import to_tensorrt
from trt_scatter.oracle import slice_geometry

# (op, label, data shape, parameters)
CASES = [
    ("slice_scatter", "spec ex.2: last axis, step 2", (2, 5), dict(start=[-25], stop=[25], step=[2], axes=[1])),
    ("slice_scatter", "spec ex.3: 2 axes", (3, 5), dict(start=[0, 1], stop=[3, 5], step=[2, 2], axes=[0, 1])),
    ("slice_scatter", "NCHW, axis 0 (N), step 2", (8, 16, 32, 32), dict(start=[0], stop=[8], step=[2], axes=[0])),
    ("slice_scatter", "NCHW, axis 1 (C), reversed", (8, 16, 32, 32), dict(start=[-1], stop=[-(2**63)], step=[-1], axes=[1])),
    ("slice_scatter", "NCHW, axes 2,3 (H,W), step 2", (8, 16, 32, 32), dict(start=[0, 0], stop=[32, 32], step=[2, 2], axes=[2, 3])),
    ("slice_scatter", "NCHW, axis 3 (W) only", (8, 16, 32, 32), dict(start=[1], stop=[2**31 - 1], step=[3], axes=[3])),
    ("scatter_update", "spec ex.2: axis 1", (3, 5), dict(indices=(2,), axis=1)),
    ("scatter_update", "spec ex.1: axis 1, 2-D indices", (1000, 256, 10, 15), dict(indices=(125, 20), axis=1)),
    ("scatter_update", "rows: axis 0", (1000, 256), dict(indices=(100,), axis=0)),
    ("scatter_update", "last axis", (64, 256), dict(indices=(16,), axis=1)),
    # run-time axes / axis (an input of the network): one destination per updated element
    ("slice_scatter", "spec ex.2, run-time axes", (2, 5), dict(start=[-25], stop=[25], step=[2], axes=[1], runtime_axes=True)),
    ("slice_scatter", "NCHW, axis 0 (N), run-time axes", (8, 16, 32, 32), dict(start=[0], stop=[8], step=[2], axes=[0], runtime_axes=True)),
    ("slice_scatter", "NCHW, axes 2,3, run-time axes", (8, 16, 32, 32), dict(start=[0, 0], stop=[32, 32], step=[2, 2], axes=[2, 3], runtime_axes=True)),
    ("scatter_update", "spec ex.2, run-time axis", (3, 5), dict(indices=(2,), axis=1, runtime_axes=True)),
    ("scatter_update", "spec ex.1, run-time axis", (1000, 256, 10, 15), dict(indices=(125, 20), axis=1, runtime_axes=True)),
    ("scatter_update", "rows: axis 0, run-time axis", (1000, 256), dict(indices=(100,), axis=0, runtime_axes=True)),
    ("scatter_elements", "builder (wrap + clamp)", (1, 3, 4, 5), dict(indices=(1, 3, 4, 5), axis=2)),
    ("scatter_nd", "builder (wrap + clamp)", (1000, 256), dict(indices=(100, 1))),
]


def _updates_shape(op, shape, params):
    if op == "slice_scatter":
        out = list(shape)
        for axis, start, stop, step in zip(params["axes"], params["start"], params["stop"], params["step"]):
            out[axis] = slice_geometry(start, stop, step, shape[axis])[1]
        return tuple(out)
    if op == "scatter_update":
        axis = params["axis"]
        return shape[:axis] + params["indices"] + shape[axis + 1 :]
    if op == "scatter_elements":
        return params["indices"]
    k = params["indices"][-1]
    return params["indices"][:-1] + shape[k:]


def measure(op, shape, params, dynamic):
    trt = tensorrt()
    network = new_builder().create_network(0)
    updates_shape = _updates_shape(op, shape, params)

    def add(name, dtype, dims, static_last=False):
        if dynamic:
            dims = tuple(-1 for _ in dims[:-1]) + (dims[-1:] if static_last else tuple(-1 for _ in dims[-1:]))
        return network.add_input(name, to_tensorrt(dtype), dims)

    data = add("data", np.float32, shape)
    indices = add("indices", np.int32, params["indices"], static_last=op == "scatter_nd") if "indices" in params else None  # ND's k is static
    updates = add("updates", np.float32, updates_shape)
    axes = params.get("axes", params.get("axis"))
    if params.get("runtime_axes"):
        axes = network.add_input("axes", trt.int64, (len(np.atleast_1d(axes)),))
    base = network.num_layers
    if op == "slice_scatter":
        add_slice_scatter(network, data, updates, params["start"], params["stop"], params["step"], axes)
    elif op == "scatter_update":
        add_scatter_update(network, data, indices, updates, axes)
    elif op == "scatter_elements":
        add_scatter_elements(network, data, indices, updates, params["axis"])
    else:
        add_scatter_nd(network, data, indices, updates)
    layers = [network.get_layer(i) for i in range(base, network.num_layers)]
    non_constant = [layer for layer in layers if layer.type != trt.LayerType.CONSTANT]
    # the scatter that writes data (run-time axes add two that place start and step at the axes)
    (scatter,) = [layer for layer in layers if layer.type == trt.LayerType.SCATTER and layer.get_input(2).dtype == trt.float32]
    scatter.__class__ = trt.IScatterLayer
    mode = "ELEMENT" if scatter.mode == trt.ScatterMode.ELEMENT else "ND"
    index = scatter.get_input(1)
    index_bytes = None
    if not dynamic:  # a run-time length (arange of updates' size) shows as -1: one row per updated element
        rows = int(np.prod([d if d >= 0 else np.prod(updates_shape) for d in index.shape]))
        index_bytes = rows * np.dtype(np.int64 if index.dtype == trt.int64 else np.int32).itemsize
    return len(layers), len(non_constant), mode, index_bytes, int(np.prod(updates_shape))


def main():
    argparse.ArgumentParser(description=__doc__.splitlines()[0]).parse_args()
    header = ("op", "case", "data shape", "mode", "layers static (non-const)", "layers dynamic (non-const)", "index B / updated elem")
    rows = [header]
    for op, label, shape, params in CASES:
        static = measure(op, shape, params, dynamic=False)
        dynamic = measure(op, shape, params, dynamic=True)
        per_element = static[3] / static[4] if static[4] else float("nan")
        rows.append((op, label, "x".join(map(str, shape)), static[2], f"{static[0]} ({static[1]})", f"{dynamic[0]} ({dynamic[1]})", f"{per_element:.4g}"))
    widths = [max(len(str(row[i])) for row in rows) for i in range(len(header))]
    for row in rows:
        print("  ".join(str(cell).ljust(width) for cell, width in zip(row, widths)).rstrip())
    print(f"\nTensorRT backend: {tensorrt().__name__} {tensorrt().__version__}; indices int32 in, lowering index tensors int64.")


if __name__ == "__main__":
    main()
