"""One example network per op, for ``trt-scatter build``, polygraphy and the tests.

``EXAMPLES[name](network, *, dtype=np.float32, index_dtype=np.int32, dynamic=False, **op_params)``
adds the inputs (``data``, ``indices`` where the op has it, ``updates``), the op and the marked
output ``output`` to ``network``, and returns ``{input name: (min, opt, max)}`` for its dynamic
inputs (empty when static). Constants (start/stop/step/axes, axis) are built in, of
``index_dtype`` where the op keeps them as tensors. With ``dynamic=True`` every dimension is -1
(except those the op needs when the network is built, such as the last of ScatterND's indices)
and the profile runs from the example's shapes (min = opt) to the shapes of the example with
data's (and indices') dimensions doubled.

:func:`example_inputs` gives the input values for the same parameters: the seeds' examples
by default (OpenVINO's SliceScatter-15 example 2, ScatterUpdate-3 example 2, ScatterNDUpdate-3
example 1; the TensorRT cookbook's ELEMENT-mode example), generated values otherwise (unique
scatter targets, so the result is defined).

The examples are the registered ops' (:mod:`trt_scatter.ops`), by key: each op's network module
declares its own as ``EXAMPLE`` (a :class:`~trt_scatter.networks.example.Example`: its parameters
and their defaults, its input shapes and values, how it adds the op); an op whose module declares
none has no example. Op parameters (all optional):

- ``scatter_elements``: ``data_shape``, ``indices_shape``, ``axis``
- ``scatter_nd``: ``data_shape``, ``indices_shape``
- ``slice_scatter``: ``data_shape``, ``start``, ``stop``, ``step``, ``axes``, ``impl`` ("native" or "plugin")
- ``scatter_update``: ``data_shape``, ``indices_shape``, ``axis``, ``impl``

``impl`` defaults to "native"; "plugin" needs full TensorRT (TensorRT-RTX has no
``add_plugin_v3``: there the plugins come in through ONNX, :mod:`trt_scatter.onnx_models`).
"""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from trt_scatter import ops
from trt_scatter.dtypes import to_tensorrt
from trt_scatter.networks import module

if TYPE_CHECKING:
    from collections.abc import Sequence

    from numpy.typing import DTypeLike

#: key -> (the op, its Example), for every registered op whose network module declares one: the first op registered
#: with the key (ScatterElements, not Scatter, its older name; TensorScatter, not CacheScatter, the plugin that serves it)
_EXAMPLE_OF = {}
for _op in (*ops.STANDARD_OPS.values(), *ops.OPS.values()):
    if (_example := getattr(module(_op), "EXAMPLE", None)) is not None:
        _EXAMPLE_OF.setdefault(_op.key, (_op, _example))
DEFAULTS = {name: example.defaults for name, (_, example) in _EXAMPLE_OF.items()}  #: each example's parameters and their defaults


def _params(name, op_params):
    example = _EXAMPLE_OF[name][1]
    defaults = example.defaults
    unknown = set(op_params) - set(defaults)
    if unknown:
        raise TypeError(f"example {name!r} has no parameter(s) {', '.join(sorted(unknown))}; it has {', '.join([*defaults, *example.options])}")
    params = {**defaults, **op_params}
    for key, shape in params.items():  # a shape of other things failed inside NumPy or TensorRT, naming neither the parameter nor the rule
        if key.endswith("_shape") and shape is not None and (isinstance(shape, (str, bytes)) or not np.iterable(shape) or not all(
                isinstance(d, (int, np.integer)) and not isinstance(d, bool) and d >= 0 for d in shape)):
            raise ValueError(f"example {name!r}: {key} is a shape, a sequence of sizes (integers, at least 0) (got {shape!r})")
    params["data_shape"] = tuple(params["data_shape"])
    return params


def _doubled(example, params):
    """Parameters of the largest shapes of the dynamic profile: every shape parameter's (``<input>_shape``)
    dimensions doubled, but those that stay static."""
    bigger = dict(params)
    for key, shape in params.items():
        if key.endswith("_shape") and np.iterable(shape):
            static = _static_dims(example, key.removesuffix("_shape"), len(shape))
            bigger[key] = tuple(d if i in static else 2 * d for i, d in enumerate(shape))
    return bigger


def _static_dims(example, input_name, rank):
    """The dimensions of ``input_name`` (of rank ``rank``) that keep their size in the dynamic network, in [0, rank-1]."""
    return {d % rank for d in example.static_dims.get(input_name, ())} if rank else set()


def example_inputs(name: str, *, dtype: DTypeLike = np.float32, index_dtype: DTypeLike = np.int32, **op_params: Any) -> dict[str, np.ndarray]:
    """The input values of example ``name`` (a dict: input name -> array) for these parameters."""
    op, example = _EXAMPLE_OF[name]
    params = _params(name, {key: value for key, value in op_params.items() if key not in example.options})  # impl: the same inputs
    shapes = example.shapes(params)
    if params == _params(name, {}) and example.seed_values is not None:
        values = dict(example.seed_values)
    else:
        values = _generated(example, params, shapes)
    return {k: values[k].astype(index_dtype if k in op.index_inputs else dtype) for k in shapes}


def _generated(example, params, shapes):
    data_shape, updates_shape = shapes["data"], shapes["updates"]
    values = {
        "data": np.arange(int(np.prod(data_shape))).reshape(data_shape),
        "updates": -np.arange(int(np.prod(updates_shape))).reshape(updates_shape),
    }
    return {**values, **example.values(params, shapes)}


def _add_inputs(network, op, example, params, dtype, index_dtype, dynamic):
    shapes = example.shapes(params)
    tensors, profile = {}, {}
    big = example.shapes(_doubled(example, params)) if dynamic else None
    for input_name, shape in shapes.items():
        dims = shape
        if dynamic:
            static = _static_dims(example, input_name, len(shape))
            dims = tuple(d if i in static else -1 for i, d in enumerate(shape))
            if any(d < 0 for d in dims):
                profile[input_name] = (shape, shape, big[input_name])
        element = index_dtype if input_name in op.index_inputs else dtype
        tensors[input_name] = network.add_input(input_name, to_tensorrt(element), dims)
    return tensors, profile


def check_profile(name: str, profile_shapes: dict[str, tuple[Sequence[int], Sequence[int], Sequence[int]]], **params: Any) -> None:
    """A ValueError, naming the bound and the inputs, unless the dynamic example ``name``'s inputs fit together at
    each bound (min, opt, max) of ``profile_shapes``: the shapes given there, the built-in profile's for the other
    inputs. The example's own rules decide (its ``shapes``: the inputs it derives, such as ``updates`` from
    ``data``, and the oracle's rules), before TensorRT fails on the same mistake with its own words.
    ``params``: as for ``EXAMPLES[name]`` (``dtype``, ``index_dtype`` and ``dynamic`` are ignored)."""
    _, example = _EXAMPLE_OF[name]
    params = _params(name, {k: v for k, v in params.items() if k not in (*example.options, "dtype", "index_dtype", "dynamic")})
    shapes = example.shapes(params)
    big = example.shapes(_doubled(example, params))
    builtin = {input_name: (shape, shape, big[input_name]) for input_name, shape in shapes.items()}
    given = [input_name for input_name in shapes if input_name in profile_shapes]
    if not _fits_the_network(example, shapes, profile_shapes):
        return  # a name, rank or static dimension the network itself refuses, in its own words, when the profile is set
    for k, bound in enumerate(("min", "opt", "max")):
        at_bound = {input_name: tuple(profile_shapes.get(input_name, builtin[input_name])[k]) for input_name in shapes}
        free = {f"{input_name}_shape": shape for input_name, shape in at_bound.items() if f"{input_name}_shape" in params}
        where = ", ".join(f"{input_name} {list(at_bound[input_name])}" for input_name in given)
        built_in = ", ".join(f"{input_name} {list(shape)}" for input_name, shape in at_bound.items() if input_name not in given)
        where += f"; built-in: {built_in}" if built_in else ""
        try:
            needed = example.shapes({**params, **free})
        except ValueError as error:
            raise ValueError(f"the --{bound} shapes ({where}) break the {name} example's rule: {error}") from None
        for input_name, shape in at_bound.items():
            if tuple(needed[input_name]) != shape:
                hint = "" if input_name in given else f": give --min/--opt/--max for {input_name} too"
                raise ValueError(f"the --{bound} shapes ({where}) break the {name} example's rule: {input_name} must be "
                                 f"{list(needed[input_name])}, which the example derives from its other inputs' shapes (got {list(shape)}){hint}")


def _fits_the_network(example, shapes, profile_shapes):
    """Whether every input of ``profile_shapes`` is one of the example's, of its rank, with its static dimensions."""
    for input_name, bounds in profile_shapes.items():
        if input_name not in shapes:
            return False
        rank = len(shapes[input_name])
        static = _static_dims(example, input_name, rank)
        if any(len(shape) != rank or any(shape[d] != shapes[input_name][d] for d in static) for shape in bounds):
            return False
    return True


def _builder(name):
    """``EXAMPLES[name]``: adds example ``name`` to a network; returns its profile shapes."""
    op, example = _EXAMPLE_OF[name]

    def build(network, *, dtype=np.float32, index_dtype=np.int32, dynamic=False, **op_params):
        options = {key: op_params.pop(key) for key in example.options if key in op_params}
        params = _params(name, op_params)
        tensors, profile = _add_inputs(network, op, example, params, dtype, index_dtype, dynamic)
        output = example.add(network, tensors, params, index_dtype, **options)
        output.name = "output"
        network.mark_output(output)
        return profile

    build.__name__ = build.__qualname__ = name
    build.__doc__ = f"Adds the {op.name} example to ``network`` (see :mod:`{__name__}`); returns its profile shapes."
    return build


EXAMPLES = {name: _builder(name) for name in _EXAMPLE_OF}
