"""Small ONNX models of the four scatter ops, written with onnx.helper after the node contract
(trt_scatter.ops), independently of trt_scatter.onnx_models: graph inputs "data", "indices",
"updates"; constants as initializers; output "output". Shapes may hold strings (named dynamic dims)
or None.
The native lowerings here compute their constant ScatterND indices with NumPy's own slicing and
np.indices, never with the oracle, so comparing them with the oracle is a real differential test.
"""

import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

PLUGIN_DOMAIN = "trt_scatter"
OPSET = 17


def info(name, shape, dtype=np.float32):
    """A value_info; ``dtype`` a NumPy dtype or an ONNX element type (``TensorProto.INT64``, ``TensorProto.UNDEFINED``,
    ...); ``shape`` None: rank not known."""
    elem_type = dtype if isinstance(dtype, int) else helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    return helper.make_tensor_value_info(name, elem_type, None if shape is None else list(shape))


def slice_scatter_in_an_if_branch(inplace=0):
    """A SliceScatter node 'inner' (with ``inplace``) in the then-branch of If node 'branch'; data (4,), updates (2,)."""
    node = helper.make_node("SliceScatter", ["data", "updates", "start", "stop", "step"], ["written"], domain=PLUGIN_DOMAIN, name="inner", inplace=inplace)
    then_branch = helper.make_graph([node], "then", [], [info("written", [4])])
    else_branch = helper.make_graph([helper.make_node("Identity", ["data"], ["kept"])], "else", [], [info("kept", [4])])
    graph = helper.make_graph([helper.make_node("If", ["flag"], ["output"], name="branch", then_branch=then_branch, else_branch=else_branch)], "g",
                              [info("flag", [], onnx.TensorProto.BOOL), info("data", [4]), info("updates", [2])], [info("output", [4])],
                              [numpy_helper.from_array(np.array([v]), n) for n, v in (("start", 0), ("stop", 4), ("step", 2))])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET), helper.make_opsetid(PLUGIN_DOMAIN, 1)])


def _model(nodes, inputs, output, initializers=(), plugin=False):
    graph = helper.make_graph(nodes, "scatter", inputs, [output], initializer=list(initializers))
    opsets = [helper.make_opsetid("", OPSET)] + ([helper.make_opsetid(PLUGIN_DOMAIN, 1)] if plugin else [])
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    onnx.checker.check_model(model, full_check=not plugin)
    return model


def scatter_elements_model(data_shape, indices_shape, axis=0, dtype=np.float32, index_dtype=np.int64):
    node = helper.make_node("ScatterElements", ["data", "indices", "updates"], ["output"], axis=axis)
    inputs = [info("data", data_shape, dtype), info("indices", indices_shape, index_dtype), info("updates", indices_shape, dtype)]
    return _model([node], inputs, info("output", data_shape, dtype))


def scatter_nd_model(data_shape, indices_shape, updates_shape, dtype=np.float32, index_dtype=np.int64):
    node = helper.make_node("ScatterND", ["data", "indices", "updates"], ["output"])
    inputs = [info("data", data_shape, dtype), info("indices", indices_shape, index_dtype), info("updates", updates_shape, dtype)]
    return _model([node], inputs, info("output", data_shape, dtype))


def slice_scatter_model(data_shape, updates_shape, start, stop, step, axes=None, dtype=np.float32, param_dtype=np.int64,
                        constant_params=True):
    """A SliceScatter plugin node; start/stop/step/axes are initializers (constant_params=True), graph inputs
    (False), or initializers for the names in constant_params and graph inputs for the others."""
    names = ["start", "stop", "step"] + (["axes"] if axes is not None else [])
    values = [start, stop, step] + ([axes] if axes is not None else [])
    node = helper.make_node("SliceScatter", ["data", "updates"] + names, ["output"], domain=PLUGIN_DOMAIN)
    inputs = [info("data", data_shape, dtype), info("updates", updates_shape, dtype)]
    initializers = []
    for name, value in zip(names, values):
        if constant_params is True or (constant_params is not False and name in constant_params):
            initializers.append(numpy_helper.from_array(np.asarray(value, dtype=param_dtype), name))
        else:
            inputs.append(info(name, [len(value)], param_dtype))
    return _model([node], inputs, info("output", data_shape, dtype), initializers, plugin=True)


def scatter_update_model(data_shape, indices_shape, updates_shape, axis, dtype=np.float32, index_dtype=np.int64):
    """A ScatterUpdate plugin node with indices and updates as graph inputs and a constant axis."""
    node = helper.make_node("ScatterUpdate", ["data", "indices", "updates", "axis"], ["output"], domain=PLUGIN_DOMAIN)
    inputs = [info("data", data_shape, dtype), info("indices", indices_shape, index_dtype), info("updates", updates_shape, dtype)]
    axis_init = numpy_helper.from_array(np.asarray(axis, dtype=index_dtype), "axis")
    return _model([node], inputs, info("output", data_shape, dtype), [axis_init], plugin=True)


def _native_scatter_nd(data_shape, updates_shape, coordinates, dtype):
    """ScatterND(data, constant coordinates, updates) with coordinates of shape updates_shape + [rank]."""
    node = helper.make_node("ScatterND", ["data", "scatter_indices", "updates"], ["output"])
    inputs = [info("data", data_shape, dtype), info("updates", updates_shape, dtype)]
    init = numpy_helper.from_array(coordinates.astype(np.int64), "scatter_indices")
    return _model([node], inputs, info("output", data_shape, dtype), [init])


def slice_scatter_native_model(data_shape, start, stop, step, axes=None, dtype=np.float32):
    """SliceScatter with constant parameters lowered to one ScatterND (static shapes)."""
    axes = list(range(len(start))) if axes is None else [a % len(data_shape) for a in axes]
    per_axis = [np.arange(d) for d in data_shape]
    for axis, begin, end, stride in zip(axes, start, stop, step):
        per_axis[axis] = np.arange(data_shape[axis])[begin:end:stride]
    updates_shape = [len(p) for p in per_axis]
    grids = np.meshgrid(*per_axis, indexing="ij")
    coordinates = np.stack(grids, axis=-1) if grids else np.zeros((0,), np.int64)
    return _native_scatter_nd(data_shape, updates_shape, coordinates, dtype), updates_shape


def scatter_update_native_model(data_shape, indices, axis, dtype=np.float32):
    """ScatterUpdate with constant indices and axis lowered to one ScatterND (static shapes)."""
    indices = np.asarray(indices)
    axis %= len(data_shape)
    updates_shape = list(data_shape[:axis]) + list(indices.shape) + list(data_shape[axis + 1 :])
    positions = np.indices(updates_shape)  # one coordinate array per updates dimension
    before = list(positions[:axis])
    at_axis = indices[tuple(positions[axis : axis + indices.ndim])]
    after = list(positions[axis + indices.ndim :])
    coordinates = np.stack(before + [at_axis] + after, axis=-1)
    return _native_scatter_nd(data_shape, updates_shape, coordinates, dtype), updates_shape


def save(model, path):
    onnx.save(model, str(path))
    return str(path)


# Command lines of this environment's tools, for tests that run them as a user does.


def _console_script(name, module_main):
    script = Path(sys.executable).parent / name
    if script.exists():
        return [str(script)]
    return [sys.executable, "-c", f"import sys; from {module_main} import main; sys.argv[0] = {name!r}; sys.exit(main())"]


def run_tool(name, args, env=None, cwd=None):
    """Runs ``polygraphy`` or ``trt-scatter`` with ``args``; returns the CompletedProcess (text, both streams)."""
    command = _console_script(name, {"polygraphy": "polygraphy.tools", "trt-scatter": "trt_scatter.cli"}[name])
    return subprocess.run(
        command + [str(a) for a in args],
        capture_output=True,
        text=True,
        env={**os.environ, **(env or {})},
        cwd=cwd,
        timeout=300,
    )


__all__ = [
    "run_tool",
    "save",
    "scatter_elements_model",
    "scatter_nd_model",
    "scatter_update_model",
    "scatter_update_native_model",
    "slice_scatter_model",
    "slice_scatter_native_model",
]
