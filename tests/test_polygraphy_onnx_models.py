"""`polygraphy run` over trt_scatter.onnx_models: for every op, pluginref on the plugin/ONNX-op model
and onnxruntime on the native lowering agree on the data loader's inputs, and both runners agree on
each native lowering."""

import numpy as np
import pytest

import onnx_fixtures as fx
from trt_scatter import onnx_models

EXACT = ["--atol", "0", "--rtol", "0"]

CASES = {
    # name: (reference model (plugin or ONNX op), native lowering or None)
    "scatter_elements": lambda: (onnx_models.scatter_elements_model(["N", 5], ["N", 3], axis=1, index_dtype=np.int32), None),
    "scatter_nd": lambda: (onnx_models.scatter_nd_model([4, 5, 6], [3, 2], index_dtype=np.int32), None),
    "slice_scatter": lambda: tuple(
        onnx_models.slice_scatter_model([7, 8], [-1, 1], [-8, 7], [-2, 3], axes=[0, 1], impl=impl) for impl in ("plugin", "native")
    ),
    "scatter_update": lambda: tuple(
        onnx_models.scatter_update_model([4, 5, 6], [2, 2], axis=-2, index_dtype=np.int32, impl=impl) for impl in ("plugin", "native")
    ),
}


@pytest.mark.parametrize("name", sorted(CASES))
def test_native_lowering_and_plugin_reference_agree_in_polygraphy(name, tmp_path):
    from polygraphy.json import save_json

    from trt_scatter.polygraphy_ext import ScatterDataLoader

    reference, native = CASES[name]()
    reference_path = fx.save(reference, tmp_path / "reference.onnx")
    inputs = tmp_path / "inputs.json"
    save_json(list(ScatterDataLoader(reference, seed=11, iterations=2)), str(inputs))
    if native is None:  # standard ONNX op: onnxruntime and the oracle, directly
        result = fx.run_tool("polygraphy", ["run", reference_path, "--onnxrt", "--pluginref", "--load-inputs", inputs, *EXACT])
        assert result.returncode == 0, result.stdout + result.stderr
        return

    native_path = fx.save(native, tmp_path / "native.onnx")
    both = fx.run_tool("polygraphy", ["run", native_path, "--onnxrt", "--pluginref", "--load-inputs", inputs, *EXACT])
    assert both.returncode == 0, both.stdout + both.stderr

    golden = tmp_path / "plugin_outputs.json"
    plugin = fx.run_tool("polygraphy", ["run", reference_path, "--pluginref", "--load-inputs", inputs, "--save-outputs", golden])
    assert plugin.returncode == 0, plugin.stdout + plugin.stderr
    compared = fx.run_tool("polygraphy", ["run", native_path, "--onnxrt", "--load-inputs", inputs, "--load-outputs", golden, *EXACT])
    assert compared.returncode == 0, compared.stdout + compared.stderr
    assert "Passed: 2/2 iterations" in compared.stdout + compared.stderr
