"""One example network per op, for ``trt-scatter build``, polygraphy and the tests.

``EXAMPLES[name](network, *, dtype=np.float32, index_dtype=np.int32, dynamic=False, **op_params)``
adds the inputs (``data``, ``indices`` where the op has it, ``updates``), the op and the marked
output ``output`` to ``network``, and returns ``{input name: (min, opt, max)}`` for its dynamic
inputs (empty when static). Constants (start/stop/step/axes, axis) are built in, of
``index_dtype`` where the op keeps them as tensors. With ``dynamic=True`` every dimension is -1
(except the last of ScatterND's indices, which TensorRT needs) and the profile runs from the
example's shapes (min = opt) to the shapes of the example with data's dimensions doubled.

:func:`example_inputs` gives the input values for the same parameters: the seeds' examples
by default (OpenVINO's SliceScatter-15 example 2, ScatterUpdate-3 example 2, ScatterNDUpdate-3
example 1; the TensorRT cookbook's ELEMENT-mode example), generated values otherwise (unique
scatter targets, so the result is defined).

Op parameters (all optional):

- ``scatter_elements``: ``data_shape``, ``indices_shape``, ``axis``
- ``scatter_nd``: ``data_shape``, ``indices_shape``
- ``slice_scatter``: ``data_shape``, ``start``, ``stop``, ``step``, ``axes``, ``impl`` ("native" or "plugin")
- ``scatter_update``: ``data_shape``, ``indices_shape``, ``axis``, ``impl``

``impl`` defaults to "native"; "plugin" needs full TensorRT (TensorRT-RTX has no
``add_plugin_v3``: there the plugins come in through ONNX, :mod:`trt_scatter.onnx_models`).
"""

import numpy as np

from trt_scatter.networks.graph import trt_dtype
from trt_scatter.networks.scatter_elements import add_scatter_elements
from trt_scatter.networks.scatter_nd import add_scatter_nd
from trt_scatter.networks.scatter_update import add_scatter_update
from trt_scatter.networks.slice_scatter import add_slice_scatter
from trt_scatter.oracle.rules import as_int_vector, normalize_axis
from trt_scatter.oracle.slice_scatter import check_slice_scatter, slice_shape

DEFAULTS = {
    "scatter_elements": {"data_shape": (1, 3, 4, 5), "indices_shape": None, "axis": 2},
    "scatter_nd": {"data_shape": (8,), "indices_shape": (4, 1)},
    "slice_scatter": {"data_shape": (2, 5), "start": (-25,), "stop": (25,), "step": (2,), "axes": (1,)},
    "scatter_update": {"data_shape": (3, 5), "indices_shape": (2,), "axis": 1},
}

# The seeds' example values, used when the parameters are the defaults.
_SEED_VALUES = {
    "scatter_nd": {
        "data": np.arange(1, 9),
        "indices": np.array([[4], [3], [1], [7]]),
        "updates": np.array([9, 10, 11, 12]),
    },
    "scatter_update": {
        "data": np.array([[-1, 1, -1, 3, 4], [-1, 6, -1, 8, 9], [-1, 11, 1, 13, 14]]),
        "indices": np.array([0, 2]),
        "updates": np.array([[1, 1], [1, 1], [1, 2]]),
    },
}


def _params(name, op_params):
    unknown = set(op_params) - set(DEFAULTS[name])
    if unknown:
        raise TypeError(f"example {name!r} has no parameter(s) {', '.join(sorted(unknown))}; it has {', '.join(DEFAULTS[name])}")
    params = {**DEFAULTS[name], **op_params}
    params["data_shape"] = tuple(params["data_shape"])
    return params


def _shapes(name, params):
    """The input shapes of example ``name`` with ``params``."""
    data_shape = params["data_shape"]
    if name == "scatter_elements":
        indices_shape = tuple(params["indices_shape"] or data_shape)
        return {"data": data_shape, "indices": indices_shape, "updates": indices_shape}
    if name == "scatter_nd":
        indices_shape = tuple(params["indices_shape"])
        return {"data": data_shape, "indices": indices_shape, "updates": indices_shape[:-1] + data_shape[indices_shape[-1] :]}
    if name == "slice_scatter":
        start, stop, step = (as_int_vector(name, key, params[key]) for key in ("start", "stop", "step"))
        axes = None if params["axes"] is None else as_int_vector(name, "axes", params["axes"])
        axes = check_slice_scatter(data_shape, (-1,) * len(data_shape), start, stop, step, axes)
        return {"data": data_shape, "updates": slice_shape(data_shape, start, stop, step, axes)}
    axis = normalize_axis(name, "axis", params["axis"], len(data_shape))
    indices_shape = tuple(params["indices_shape"])
    return {"data": data_shape, "indices": indices_shape, "updates": data_shape[:axis] + indices_shape + data_shape[axis + 1 :]}


def _doubled(name, params):
    """Parameters of the largest shapes of the dynamic profile: data's (and indices' leading) dimensions doubled."""
    bigger = dict(params, data_shape=tuple(2 * d for d in params["data_shape"]))
    if name == "scatter_nd":
        bigger["indices_shape"] = tuple(2 * d for d in params["indices_shape"][:-1]) + tuple(params["indices_shape"][-1:])
    elif params.get("indices_shape"):
        bigger["indices_shape"] = tuple(2 * d for d in params["indices_shape"])
    return bigger


def example_inputs(name, *, dtype=np.float32, index_dtype=np.int32, **op_params):
    """The input values of example ``name`` (a dict: input name -> array) for these parameters."""
    params = _params(name, op_params)
    shapes = _shapes(name, params)
    if params == _params(name, {}) and name in _SEED_VALUES:
        values = dict(_SEED_VALUES[name])
    else:
        values = _generated(name, params, shapes)
    return {k: values[k].astype(index_dtype if k == "indices" else dtype) for k in shapes}


def _generated(name, params, shapes):
    rng = np.random.default_rng(0)
    data_shape, updates_shape = shapes["data"], shapes["updates"]
    values = {
        "data": np.arange(int(np.prod(data_shape))).reshape(data_shape),
        "updates": -np.arange(int(np.prod(updates_shape))).reshape(updates_shape),
    }
    if name == "slice_scatter":
        values["updates"] = 10 * (1 + np.arange(int(np.prod(updates_shape)))).reshape(updates_shape)
    elif name == "scatter_elements":
        # The cookbook's pattern, (h + w) % s: each line along the axis is shifted cyclically by
        # another coordinate, so no two updates share a target.
        axis = normalize_axis(name, "axis", params["axis"], len(data_shape))
        grid = np.indices(shapes["indices"])
        shift = grid[-1] if axis != len(data_shape) - 1 else grid[0] if len(data_shape) > 1 else 0
        values["indices"] = (grid[axis] + shift) % data_shape[axis]
    elif name == "scatter_nd":
        k = shapes["indices"][-1]
        rows = int(np.prod(shapes["indices"][:-1]))
        flat = rng.permutation(int(np.prod(data_shape[:k])))[:rows]
        values["indices"] = np.stack(np.unravel_index(flat, data_shape[:k]), axis=-1).reshape(shapes["indices"])
    else:
        axis = normalize_axis(name, "axis", params["axis"], len(data_shape))
        count = int(np.prod(shapes["indices"]))
        values["indices"] = rng.permutation(data_shape[axis])[:count].reshape(shapes["indices"])
    return values


def _add_inputs(network, name, params, dtype, index_dtype, dynamic):
    shapes = _shapes(name, params)
    tensors, profile = {}, {}
    big = _shapes(name, _doubled(name, params)) if dynamic else None
    for input_name, shape in shapes.items():
        dims = shape
        if dynamic:
            keep_last = name == "scatter_nd" and input_name == "indices"
            dims = tuple(-1 for _ in shape[:-1]) + (shape[-1:] if keep_last else tuple(-1 for _ in shape[-1:]))
            if any(d < 0 for d in dims):
                profile[input_name] = (shape, shape, big[input_name])
        element = index_dtype if input_name == "indices" else dtype
        tensors[input_name] = network.add_input(input_name, trt_dtype(element), dims)
    return tensors, profile


def _mark(network, output):
    output.name = "output"
    network.mark_output(output)


def scatter_elements(network, *, dtype=np.float32, index_dtype=np.int32, dynamic=False, **op_params):
    params = _params("scatter_elements", op_params)
    t, profile = _add_inputs(network, "scatter_elements", params, dtype, index_dtype, dynamic)
    _mark(network, add_scatter_elements(network, t["data"], t["indices"], t["updates"], params["axis"]))
    return profile


def scatter_nd(network, *, dtype=np.float32, index_dtype=np.int32, dynamic=False, **op_params):
    params = _params("scatter_nd", op_params)
    t, profile = _add_inputs(network, "scatter_nd", params, dtype, index_dtype, dynamic)
    _mark(network, add_scatter_nd(network, t["data"], t["indices"], t["updates"]))
    return profile


def slice_scatter(network, *, dtype=np.float32, index_dtype=np.int32, dynamic=False, impl="native", **op_params):
    params = _params("slice_scatter", op_params)
    t, profile = _add_inputs(network, "slice_scatter", params, dtype, index_dtype, dynamic)
    start, stop, step = (np.array(params[k], dtype=index_dtype) for k in ("start", "stop", "step"))
    axes = None if params["axes"] is None else np.array(params["axes"], dtype=index_dtype)
    _mark(network, add_slice_scatter(network, t["data"], t["updates"], start, stop, step, axes, impl=impl))
    return profile


def scatter_update(network, *, dtype=np.float32, index_dtype=np.int32, dynamic=False, impl="native", **op_params):
    params = _params("scatter_update", op_params)
    t, profile = _add_inputs(network, "scatter_update", params, dtype, index_dtype, dynamic)
    axis = np.array([params["axis"]], dtype=index_dtype)
    _mark(network, add_scatter_update(network, t["data"], t["indices"], t["updates"], axis, impl=impl))
    return profile


EXAMPLES = {
    "scatter_elements": scatter_elements,
    "scatter_nd": scatter_nd,
    "slice_scatter": slice_scatter,
    "scatter_update": scatter_update,
}
