"""What `trt-scatter lower` costs on real shapes: nodes, TensorRT layers and index bytes, against the plugin node.

    .venv/bin/python bench/bench_lowered_models.py [--small] [--out bench/results/lowered_models.md]

Each case is a model a user would write (onnx.helper): a KV cache [B, H, S, D] written at a
run-time position ``pos`` (SliceScatter, stop = pos + T computed by an Add) or at a constant one,
and caches updated by ScatterUpdate at run-time indices. For the plugin node and for its lowering
(``trt_scatter.passes.lower``) it reports:

- nodes: the trt_scatter node (1) against the standard nodes that replace it (constants are
  initializers in ONNX, so they are not nodes; "trt layers" counts TensorRT-RTX's parse of the
  lowered model, constants included, plugin node = 1 layer);
- index bytes per updated element: what the op reads beyond data and updates. The plugin reads its
  parameters (start/stop/step: a few int64s; ScatterUpdate's indices, which the model holds
  anyway); the lowering also materialises ScatterND's index tensor, measured here by running the
  lowered model in onnxruntime with that tensor as an extra output (int64 row numbers: 8 bytes
  per row of ``data.shape[k:]``).

Every lowered model's outputs are checked equal to the reference (ONNX's evaluator with the
oracle) on the same inputs. No timing: CPU times say nothing about TensorRT on a GPU.
"""

import argparse
import datetime
import platform

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from trt_scatter.onnx_models import scatter_update_model
from trt_scatter.ops import DOMAIN


def _model(nodes, inputs, outputs, initializers):
    graph = helper.make_graph(nodes, "case", inputs, outputs, initializer=initializers)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17), helper.make_opsetid(DOMAIN, 1)])
    model.ir_version = 8
    return model


def kv_cache(B, H, S, D, T, runtime=True, dtype=np.float16, runtime_axes=False):
    """cache[B,H,S,D] with k[B,H,T,D] written at pos on axis 2 (stop = pos + T); ``runtime_axes``: the axis a graph input."""
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    nodes = [
        helper.make_node("Add", ["pos", "T"], ["end"], name="end"),
        helper.make_node("SliceScatter", ["cache", "k", "pos", "end", "one", "axes"], ["new_cache"], name="write_kv", domain=DOMAIN, inplace=0),
    ]
    inputs = [helper.make_tensor_value_info("cache", elem, [B, H, S, D]), helper.make_tensor_value_info("k", elem, [B, H, T, D])]
    inits = [numpy_helper.from_array(np.array([v], np.int64), n) for n, v in (("T", T), ("one", 1)) + ((("axes", 2),) if not runtime_axes else ())]
    if runtime_axes:
        inputs.append(helper.make_tensor_value_info("axes", TensorProto.INT64, [1]))
    if runtime:
        inputs.append(helper.make_tensor_value_info("pos", TensorProto.INT64, [1]))
    else:
        inits.append(numpy_helper.from_array(np.array([S - T], np.int64), "pos"))
    model = _model(nodes, inputs, [helper.make_tensor_value_info("new_cache", elem, [B, H, S, D])], inits)
    rng = np.random.default_rng(0)
    feeds = {"cache": rng.standard_normal((B, H, S, D)).astype(dtype), "k": rng.standard_normal((B, H, T, D)).astype(dtype)}
    if runtime:
        feeds["pos"] = np.array([S // 2], np.int64)
    if runtime_axes:
        feeds["axes"] = np.array([-2], np.int64)
    return model, feeds, B * H * T * D


def cache_update(shape, axis, count, dtype=np.float16, runtime_axis=False):
    """ScatterUpdate of ``count`` run-time indices along ``axis`` of a cache of ``shape``; ``runtime_axis``: the axis a graph input."""
    model = scatter_update_model(shape, (count,), axis, dtype=dtype, index_dtype=np.int32, runtime=("axis",) if runtime_axis else ())
    updates = list(shape[:axis]) + [count] + list(shape[axis + 1 :])
    rng = np.random.default_rng(1)
    feeds = {"data": rng.standard_normal(shape).astype(dtype), "indices": rng.choice(shape[axis], count, replace=False).astype(np.int32),
             "updates": rng.standard_normal(updates).astype(dtype)}  # fmt: skip
    if runtime_axis:
        feeds["axis"] = np.array([axis], np.int32)
    return model, feeds, int(np.prod(updates))


CASES = [
    ("KV decode, run-time pos", "1x32x4096x128", lambda: kv_cache(1, 32, 4096, 128, 1)),
    ("KV decode, run-time pos, batch 8", "8x8x2048x128", lambda: kv_cache(8, 8, 2048, 128, 1)),
    ("KV prefill chunk of 512, run-time pos", "1x32x4096x128", lambda: kv_cache(1, 32, 4096, 128, 512)),
    ("KV decode, constant pos", "1x32x4096x128", lambda: kv_cache(1, 32, 4096, 128, 1, runtime=False)),
    ("paged cache: 8 blocks at run-time slots", "1024x16x8x128", lambda: cache_update((1024, 16, 8, 128), 0, 8)),
    ("[B,S,E] cache: 4 positions at run-time slots", "8x2048x1024", lambda: cache_update((8, 2048, 1024), 1, 4)),
    ("KV decode, run-time pos and axes", "1x32x4096x128", lambda: kv_cache(1, 32, 4096, 128, 1, runtime_axes=True)),
    ("KV prefill chunk of 512, run-time pos, axes", "1x32x4096x128", lambda: kv_cache(1, 32, 4096, 128, 512, runtime_axes=True)),
    ("paged cache: 8 blocks, run-time slots, axis", "1024x16x8x128", lambda: cache_update((1024, 16, 8, 128), 0, 8, runtime_axis=True)),
    ("[B,S,E] cache: 4 positions, run-time axis", "8x2048x1024", lambda: cache_update((8, 2048, 1024), 1, 4, runtime_axis=True)),
]
SMALL = {  # --small: the same structures on small shapes (tests)
    "KV decode, run-time pos": lambda: kv_cache(1, 2, 16, 4, 1),
    "KV decode, run-time pos, batch 8": lambda: kv_cache(2, 2, 8, 4, 1),
    "KV prefill chunk of 512, run-time pos": lambda: kv_cache(1, 2, 16, 4, 4),
    "KV decode, constant pos": lambda: kv_cache(1, 2, 16, 4, 1, runtime=False),
    "paged cache: 8 blocks at run-time slots": lambda: cache_update((16, 4, 2, 4), 0, 3),
    "[B,S,E] cache: 4 positions at run-time slots": lambda: cache_update((2, 16, 8), 1, 4),
    "KV decode, run-time pos and axes": lambda: kv_cache(1, 2, 16, 4, 1, runtime_axes=True),
    "KV prefill chunk of 512, run-time pos, axes": lambda: kv_cache(1, 2, 16, 4, 4, runtime_axes=True),
    "paged cache: 8 blocks, run-time slots, axis": lambda: cache_update((16, 4, 2, 4), 0, 3, runtime_axis=True),
    "[B,S,E] cache: 4 positions, run-time axis": lambda: cache_update((2, 16, 8), 1, 4, runtime_axis=True),
}


def plugin_index_bytes(model, feeds):
    """Bytes of the trt_scatter node's index inputs (parameters, ScatterUpdate's indices), constants included."""
    from trt_scatter.ops import OPS

    node = next(n for n in model.graph.node if n.domain == DOMAIN)
    signature = OPS[node.op_type]
    constants = {init.name: numpy_helper.to_array(init) for init in model.graph.initializer}
    total = 0
    for name, tensor in zip(signature.inputs, node.input):
        if name in signature.index_inputs and tensor:
            total += (feeds[tensor] if tensor in feeds else constants.get(tensor, np.zeros(1, np.int64))).nbytes
    return total


def measure(model, feeds, updated):
    import onnxruntime

    from trt_scatter.passes.lower import lower
    from trt_scatter.reference import Reference

    lowered = lower(model)
    onnx.checker.check_model(lowered, full_check=True)
    kept = {n.name for n in model.graph.node if n.domain != DOMAIN}
    new_nodes = [n for n in lowered.graph.node if n.name not in kept]
    scatters = [n for n in new_nodes if n.op_type in ("ScatterND", "ScatterElements")]
    probe = onnx.ModelProto()
    probe.CopyFrom(lowered)
    for scatter in scatters:  # the index tensors as extra outputs, to read their sizes
        probe.graph.output.append(helper.make_tensor_value_info(scatter.input[1], TensorProto.INT64, None))
    session = onnxruntime.InferenceSession(probe.SerializeToString(), providers=["CPUExecutionProvider"])
    names = [o.name for o in session.get_outputs()]
    results = dict(zip(names, session.run(None, feeds)))
    index_bytes = sum(results[s.input[1]].nbytes for s in scatters)
    expected = Reference(model).run(feeds)
    for name, value in expected.items():
        assert np.array_equal(results[name], value), f"lowered output {name} differs from the reference"
    return {
        "lowered nodes": len(new_nodes),
        "trt layers": _trt_layers(lowered),
        "lowered B/elem": index_bytes / updated,
        "plugin B/elem": plugin_index_bytes(model, feeds) / updated,
        "initializer bytes": sum(numpy_helper.to_array(i).nbytes for i in lowered.graph.initializer) - sum(numpy_helper.to_array(i).nbytes for i in model.graph.initializer),
    }


def _trt_layers(model):
    """Layers of TensorRT-RTX's parse of ``model`` (no engine is built), or '-' without TensorRT."""
    try:
        from trt_scatter.backend import tensorrt
        from trt_scatter.backend import trt_logger
        from trt_scatter.backend import new_builder

        trt = tensorrt()
    except ImportError:
        return "-"
    builder = new_builder()
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, trt_logger())
    if not parser.parse(model.SerializeToString()):
        return "parse failed"
    return network.num_layers


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--small", action="store_true", help="small shapes of the same structures (quick)")
    parser.add_argument("--out", help="also write the table to this Markdown file")
    args = parser.parse_args()
    lines = [
        f"machine: {platform.platform()}, {platform.machine()}; onnx {onnx.__version__}; {datetime.date.today()}",
        "",
        f"{'case':46} {'shape':15} {'plugin nodes':>12} {'lowered nodes':>13} {'trt layers':>10} {'plugin B/elem':>13} {'lowered B/elem':>14} {'new initializer B':>17}",
    ]
    for label, shape, build in CASES:
        model, feeds, updated = (SMALL[label] if args.small else build)()
        row = measure(model, feeds, updated)
        lines.append(
            f"{label:46} {shape if not args.small else 'small':15} {1:>12} {row['lowered nodes']:>13} {row['trt layers']!s:>10} "
            f"{row['plugin B/elem']:>13.4g} {row['lowered B/elem']:>14.4g} {row['initializer bytes']:>17}"
        )
    print("\n".join(lines))
    if args.out:
        with open(args.out, "w") as f:
            f.write("# `trt-scatter lower` on real shapes (`python bench/bench_lowered_models.py`)\n\n```\n" + "\n".join(lines) + "\n```\n")


if __name__ == "__main__":
    main()
