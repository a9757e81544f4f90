"""Hugging Face decoders' cache writes (transformers 5.x ``StaticCache``: ``keys.index_copy_(2, cache_position, k)``) reach
TensorRT as one trt_scatter node per write from every exporter path: ``trt_scatter.torch.export`` with either exporter, and
PyTorch's own exporters followed by ``rewrite``. One model family per path here (they are slow); bench/bench_hf_kv_cache.py
runs every family, batch and step on every path (bench/results/). Each export equals eager PyTorch in the reference, and
passes `trt-scatter check`, which builds its engine with the plugins (TensorRT-RTX, on the CPU here)."""

import io
import warnings

import numpy as np
import onnx
import pytest

torch = pytest.importorskip("torch")
pytest.importorskip("transformers")

import hf_models  # noqa: E402
import onnx_fixtures as fx  # noqa: E402

import trt_scatter.torch as trt_scatter_torch  # noqa: E402
from trt_scatter.passes.rewrite import rewrite  # noqa: E402
from trt_scatter.reference import Reference  # noqa: E402

WRITES = 4  # 2 layers, keys and values


def export(path, module, inputs):
    """The ONNX model of ``module`` by one exporter path."""
    names = dict(input_names=module.input_names(), output_names=module.output_names())
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        if path == "trt_scatter.torch dynamo":
            return trt_scatter_torch.export(module, inputs, dynamo=True, **names)
        if path == "trt_scatter.torch torchscript":
            return trt_scatter_torch.export(module, inputs, dynamo=False, opset_version=17, **names)
        if path == "dynamo + rewrite":
            return rewrite(torch.onnx.export(module, inputs, dynamo=True, **names).model_proto)[0]
        buffer = io.BytesIO()
        torch.onnx.export(module, inputs, buffer, dynamo=False, opset_version=17, **names)
        return rewrite(onnx.load_from_string(buffer.getvalue()))[0]


#: (exporter path, model family, batch, new tokens): one family per path, decode and prefill, batch 1 and 4
PATHS = [
    ("trt_scatter.torch dynamo", "llama", 4, 1),
    ("trt_scatter.torch torchscript", "qwen2", 1, 4),
    ("dynamo + rewrite", "gpt2", 4, 4),
    ("torchscript + rewrite", "llama", 1, 1),
    ("torchscript + rewrite", "gpt_neox", 1, 1),  # its keys and values: a Slice of one projection with run-time ends
]


@pytest.mark.parametrize("path, family, batch, tokens", PATHS, ids=[f"{p}-{f}-b{b}-t{t}" for p, f, b, t in PATHS])
def test_each_cache_write_is_one_trt_scatter_node_that_checks_and_builds(tmp_path, path, family, batch, tokens):
    module = hf_models.cache_writer(family, batch, tokens)
    inputs = module.inputs(position=5)
    eager = module.reference(*inputs)  # before the export: torch.onnx.export (the paths without trt_scatter.torch) leaves the decoder in the wrapper's training mode, dropout on
    model = export(path, module, tuple(value.clone() for value in inputs))
    writes = [node for node in model.graph.node if node.domain == "trt_scatter"]
    assert [node.op_type for node in writes] == ["ScatterUpdate"] * WRITES  # every row at one position: ScatterUpdate
    assert not {"ScatterND", "ScatterElements"} & {node.op_type for node in model.graph.node}
    outputs = Reference(model).run(hf_models.feeds(module, inputs))
    for name, expected in zip(module.output_names(), eager):
        np.testing.assert_allclose(outputs[name], expected, atol=1e-5, rtol=1e-4, err_msg=name)
    onnx.save(model, tmp_path / "model.onnx")
    result = fx.run_tool("trt-scatter", ["check", tmp_path / "model.onnx", "--atol", "1e-4", "--rtol", "1e-3", "--allow-engine-not-run"])
    assert result.returncode == 0, result.stdout + result.stderr
    assert "engine: built" in result.stdout and result.stdout.count("PASS ") == 1 + WRITES  # the logits and every cache written
