"""PyTorch's writes in ONNX and TensorRT: the stock exports against trt_scatter.torch.export and trt-scatter rewrite.

    .venv/bin/python bench/bench_torch_export.py [--out bench/results/torch_export_<date>.md] [--cases a,b]

For each case of tests/torch_modules.py, with the dynamo and the TorchScript exporter, static and
dynamic: the ONNX nodes (Constant nodes included), the TensorRT layers of the network TensorRT's
ONNX parser makes of it (``network.num_layers``, after which the engine is built too, each in a
forked child process: the TensorRT-RTX 1.7.1 heap bug), and the index bytes per updated element:
the bytes of the index tensors that grow with a write (ScatterND/ScatterElements/ScatterUpdate
indices; SliceScatter has none: its start/stop/step/axes are 8 bytes per sliced axis) over the
elements its updates hold, at the example's shapes. Three models per row: the stock export (``torch.onnx.export``), ``rewrite`` of
it, and ``trt_scatter.torch.export``. Counts are properties of the models, the same on every machine.
"""

import argparse
import datetime
import gc
import io
import logging
import os
import pathlib
import platform
import sys
import traceback
import warnings

ROOT = pathlib.Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "tests"))

# The index tensors that grow with the write (SliceScatter's start/stop/step/axes and ScatterUpdate's
# axis are a few bytes per sliced axis whatever the size, and are left out).
INDEX_INPUTS = {"ScatterND": (1,), "ScatterElements": (1,), "ScatterUpdate": (1,), "SliceScatter": ()}
UPDATES_INPUT = {"ScatterND": 2, "ScatterElements": 2, "ScatterUpdate": 2, "SliceScatter": 1}


def stock_export(case, dynamo, dynamic):
    import onnx
    import torch
    from torch_modules import export_kwargs

    kwargs = export_kwargs(case, dynamo, dynamic)
    args = tuple(t.clone() for t in case.example)
    if dynamo:
        return torch.onnx.export(case.module(), args, dynamo=True, **kwargs).model_proto
    buffer = io.BytesIO()
    torch.onnx.export(case.module(), args, buffer, dynamo=False, **kwargs)
    return onnx.load_from_string(buffer.getvalue())


def index_bytes_per_element(model, feeds):
    """Index bytes of the model's writes per updated element, from the tensors' sizes on ``feeds``; None without writes."""
    import onnx
    from onnx import helper

    writes = [node for node in model.graph.node if node.op_type in INDEX_INPUTS and node.domain in ("", "trt_scatter")]
    if not writes:
        return None
    probe = onnx.ModelProto()
    probe.CopyFrom(model)
    del probe.graph.output[:]
    names = sorted({node.input[i] for node in writes for i in INDEX_INPUTS[node.op_type] + (UPDATES_INPUT[node.op_type],) if i < len(node.input) and node.input[i]})
    initializers = {init.name: init for init in probe.graph.initializer}
    computed = [name for name in names if name not in initializers and name not in feeds]
    probe.graph.output.extend(helper.make_empty_tensor_value_info(name) for name in computed)
    values = dict(zip(computed, _run(probe, feeds, computed))) if computed else {}
    values.update({name: onnx.numpy_helper.to_array(initializers[name]) for name in names if name in initializers})
    values.update({name: feeds[name] for name in names if name in feeds})
    index = sum(values[node.input[i]].nbytes for node in writes for i in INDEX_INPUTS[node.op_type] if i < len(node.input) and node.input[i])
    updated = sum(values[node.input[UPDATES_INPUT[node.op_type]]].size for node in writes)
    return index / updated


def _run(model, feeds, names):
    if any(node.domain == "trt_scatter" for node in model.graph.node):
        from trt_scatter.reference import Reference

        outputs = Reference(model).run(feeds)
        return [outputs[name] for name in names]
    import onnxruntime

    return onnxruntime.InferenceSession(model.SerializeToString()).run(names, feeds)


def tensorrt_layers(model, case, dynamic):
    """``(layers, engine built)`` for a model, parsed and built in a forked child; ``(None, reason)`` if that fails.

    Inputs whose values set shapes (a position the exporter broadcasts to) get the case's value range."""
    read, write = os.pipe()
    pid = os.fork()
    if pid == 0:
        gc.freeze()  # the parent's objects are left out of this process's collections: walking them would copy every page they are on
        os.close(read)
        try:
            message = _layers_in_child(model, case, dynamic)
        except BaseException as err:  # noqa: BLE001 (reported to the parent)
            message = f"error {type(err).__name__}: {str(err).splitlines()[0][:80] if str(err) else ''}"
        message = " ".join(message.split())  # one line: it lands in a table cell
        with os.fdopen(write, "w") as pipe:
            pipe.write(message)
        os._exit(0)
    os.close(write)
    with os.fdopen(read) as pipe:
        message = pipe.read()
    os.waitpid(pid, 0)
    if message.startswith("error") or not message:
        return None, message[len("error: "):] if message else "the build process died"
    layers, built = message.rsplit(" ", 1)
    return layers, built == "1"


def _layers_in_child(model, case, dynamic):
    from torch_modules import profile as case_profile

    from trt_scatter.backend import tensorrt
    from trt_scatter.backend import trt_logger
    from trt_scatter.backend import new_builder

    trt = tensorrt()
    if any(node.domain == "trt_scatter" for node in model.graph.node):
        from trt_scatter.plugins import register

        register()
    builder = new_builder()
    network = builder.create_network(0)
    parser = trt.OnnxParser(network, trt_logger())
    if not parser.parse(model.SerializeToString()):
        return f"error: TensorRT cannot parse it ({parser.get_error(0).desc().splitlines()[0][:60]})"
    config = builder.create_builder_config()
    config.set_preview_feature(trt.PreviewFeature.ALIASED_PLUGIN_IO_10_03, True)
    shape_inputs = [network.get_input(i).name for i in range(network.num_inputs) if network.get_input(i).is_shape_tensor]
    profile = case_profile(case, dynamic, shape_inputs)
    if profile:
        optimization_profile = builder.create_optimization_profile()
        for name, shapes in profile.items():
            (optimization_profile.set_shape_input if name in shape_inputs else optimization_profile.set_shape)(name, *shapes)
        config.add_optimization_profile(optimization_profile)
    plan = builder.build_serialized_network(network, config)
    computing = sum(network.get_layer(i).type != trt.LayerType.CONSTANT for i in range(network.num_layers))
    return f"{network.num_layers}/{computing}{'*' if shape_inputs else ''} {int(plan is not None)}"


def measure(case, dynamo, dynamic):
    """The row of one export: stock, rewrite(stock), trt_scatter.torch.export -> (nodes, layers, index bytes/element) each."""
    import trt_scatter.torch
    from torch_modules import export_kwargs

    from trt_scatter.passes.rewrite import rewrite

    feeds = case.feeds("example")
    models = {}
    try:
        models["stock"] = stock_export(case, dynamo, dynamic)
        models["rewrite"] = rewrite(models["stock"])[0]
    except Exception as err:  # noqa: BLE001 (the stock exporter's failures are part of the result)
        models["stock"] = f"export fails ({type(err).__name__})"
    models["trt_scatter.torch"] = trt_scatter.torch.export(case.module(), tuple(t.clone() for t in case.example), dynamo=dynamo,
                                                           **export_kwargs(case, dynamo, dynamic))
    row = {}
    for kind, model in models.items():
        if isinstance(model, str):
            row[kind] = (model, "", "")
            continue
        names = {i.name for i in model.graph.input}
        try:
            per_element = index_bytes_per_element(model, {k: v for k, v in feeds.items() if k in names})
        except Exception:  # noqa: BLE001 (a stock export onnxruntime cannot run)
            per_element = "fails to run"
        layers, built = tensorrt_layers(model, case, dynamic)
        layers = layers if layers is not None else built
        if layers is not None and built is False:
            layers = f"{layers} (no engine)"
        row[kind] = (len(model.graph.node), layers, per_element)
    return row


def _cell(value):
    if isinstance(value, float):
        return f"{value:.3g}"
    return "-" if value is None else str(value)


def main():
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--out", help="also write the table (markdown) to this file")
    parser.add_argument("--cases", help="comma-separated case names (default: all)")
    args = parser.parse_args()
    warnings.filterwarnings("ignore")
    logging.disable(logging.WARNING)
    import onnxscript
    import torch
    from torch_modules import CASES

    from trt_scatter.backend import tensorrt

    trt = tensorrt()
    names = args.cases.split(",") if args.cases else list(CASES)
    lines = [
        f"# PyTorch writes in ONNX and TensorRT ({datetime.date.today().isoformat()})",
        "",
        f"Machine: {_cpu()}, {os.cpu_count()} cores, no GPU; Python {platform.python_version()}, torch {torch.__version__}, "
        f"onnxscript {onnxscript.__version__}, {trt.__name__} {trt.__version__} (layers counted and engines built on the CPU).",
        "Command: `.venv/bin/python bench/bench_torch_export.py`. Nodes include Constant nodes. Layers: `network.num_layers` of",
        "TensorRT's ONNX parser / those that are not IConstantLayer (`*`: an input sets shapes, the KV position PyTorch",
        "broadcasts the new tokens to; its value range is in the profile). B/elem: bytes of the index tensors that grow with",
        "a write per updated element, at the example's shapes (SliceScatter has none: 8 bytes per sliced axis in all).",
        "",
        "| case | exporter | shapes | stock nodes | stock layers | stock B/elem | rewrite nodes | rewrite layers | rewrite B/elem | trt_scatter.torch nodes | layers | B/elem |",
        "| --- | --- | --- | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: | ---: |",
    ]
    print("\n".join(lines), flush=True)
    for name in names:
        for dynamo in (True, False):
            for dynamic in (False, True):
                try:
                    row = measure(CASES[name], dynamo, dynamic)
                except Exception:  # noqa: BLE001 (one case failing must not hide the others)
                    traceback.print_exc()
                    continue
                cells = [name, "dynamo" if dynamo else "torchscript", "dynamic" if dynamic else "static"]
                for kind in ("stock", "rewrite", "trt_scatter.torch"):
                    cells += [_cell(v) for v in row.get(kind, ("-", "-", "-"))]
                line = "| " + " | ".join(cells) + " |"
                lines.append(line)
                print(line, flush=True)
    if args.out:
        pathlib.Path(args.out).write_text("\n".join(lines) + "\n")


def _cpu():
    try:
        for line in pathlib.Path("/proc/cpuinfo").read_text().splitlines():
            if line.startswith("model name"):
                return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or platform.machine()


if __name__ == "__main__":
    main()
