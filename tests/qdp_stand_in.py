"""A stand-in for full TensorRT's ``tensorrt.plugin`` package (quickly deployable plugins), for tests
of :mod:`trt_scatter.plugins.aot` on machines without it.

It mirrors what NVIDIA's package (NVIDIA/TensorRT 11.1, ``python/packaging/bindings_wheel/tensorrt/
plugin/``) checks and how TensorRT's plugin classes call the decorated functions, so that a mismatch
with the real API fails here:

- ``register``/``autotune``/``aot_impl`` validate a function's signature as ``_validate.py`` does
  (``_parse_register_inputs``, ``_parse_register_return``, ``_validate_autotune``,
  ``_validate_aot_impl``): annotations, parameter names in order (the tensors, then the attributes, of
  a serializable builtin type, never interspersed), return annotations;
- ``ShapeExpr`` has ``+ - * ==`` with ints on the right only, ``is_fake``/``is_constant`` as
  properties and ``constant_value()`` as a method; ``cdiv``/``min``/``max`` refuse two ints
  (``_tensor.py``, ``_top_level.py``);
- ``KernelLaunchParams`` takes only its seven fields, each wrapped in ``SymInt32``;
  ``SymIntExprs.from_tuple`` takes ``SymIntExpr`` or ints; ``get_launch_params`` then refuses
  extra arguments that are not ``SymInt32`` (``_plugin_class.py``);
- ``AutoTuneCombination`` reads type names as ``_autotune.py``/``_utils.py`` do ("FP32", "FP16",
  else a ``DataType`` member name of the TensorRT module in use) and refuses dependent lists of
  different lengths;
- ``TensorDesc.aliased()`` returns a descriptor whose ``get_aliased()`` is the input's, and
  ``shape`` raises where TensorRT has given no concrete shape yet.

Values are plain ints underneath, so what the registration computes can be compared with the
integer launch the CPU tests run.
"""

import builtins
import inspect
import typing

from trt_scatter.backend import tensorrt


class SymInt32:
    """A 32-bit symbolic integer of an int or another symbolic integer (a ShapeExpr is one)."""

    def __init__(self, value=None):
        if not isinstance(value, (int, SymInt32)):
            raise TypeError(f"SymInt32 of {type(value).__name__}")
        self.value = value_of(value)


class ShapeExpr(SymInt32):
    """A symbolic dimension: ``+ - * ==`` (EQUAL: 1 or 0) give new expressions; ints mix in on the
    right only (``_tensor.py`` defines no ``__radd__``/``__rmul__``)."""

    def __init__(self, value=None, constant=True):
        assert value is None or isinstance(value, int), value
        self.value, self._constant = value, constant

    @property
    def is_fake(self):  # TensorRT asks for output types before shapes exist
        return self.value is None

    @property
    def is_constant(self):
        if self.is_fake:
            raise RuntimeError("Not accessible for fake 'ShapeExpr's. Check is_fake to determine accessibility.")
        return self._constant

    def constant_value(self):
        if not self.is_constant:
            raise RuntimeError("Not accessible for non-constant shape expressions.")
        return self.value

    def _op(self, other, function):
        if not isinstance(other, (int, SymInt32)):
            raise TypeError(f"unsupported operand {other!r}")
        return ShapeExpr(function(self.value, value_of(other)))

    def __add__(self, other):
        return self._op(other, lambda a, b: a + b)

    def __sub__(self, other):
        return self._op(other, lambda a, b: a - b)

    def __mul__(self, other):
        return self._op(other, lambda a, b: a * b)

    def __eq__(self, other):
        return self._op(other, lambda a, b: int(a == b))

    __hash__ = None

    def __bool__(self):
        raise RuntimeError("Cannot evaluate symbolic expression as boolean.")


def value_of(x):
    """The int underneath an int, a ShapeExpr or a SymInt32."""
    return x.value if isinstance(x, SymInt32) else x


def _two_ints(a, b, name):
    if isinstance(a, int) and isinstance(b, int):
        raise ValueError(f"tensorrt.plugin.{name}: Both arguments cannot be 'int's")


def cdiv(a, b):
    _two_ints(a, b, "cdiv")
    return ShapeExpr(-(-value_of(a) // value_of(b)))


def min(a, b):  # noqa: A001  (tensorrt.plugin's own names)
    _two_ints(a, b, "min")
    return ShapeExpr(builtins.min(value_of(a), value_of(b)))


def max(a, b):  # noqa: A001
    _two_ints(a, b, "max")
    return ShapeExpr(builtins.max(value_of(a), value_of(b)))


class SymExprs:
    pass


class SymIntExprs(SymExprs):
    def __init__(self, exprs):
        self.exprs = list(exprs)

    @classmethod
    def from_tuple(cls, exprs):
        for expr in exprs:
            if not isinstance(expr, (int, SymInt32)):
                raise ValueError(f"Unsupported type: '{type(expr)}'")
        return cls(exprs)

    def __iter__(self):
        return iter(self.exprs)

    def __len__(self):
        return len(self.exprs)


class KernelLaunchParams:
    FIELDS = ("grid_x", "grid_y", "grid_z", "block_x", "block_y", "block_z", "shared_mem")

    def __init__(self):
        for name in self.FIELDS:
            setattr(self, name, 0 if name == "shared_mem" else 1)

    def __setattr__(self, name, value):
        if name not in self.FIELDS:
            raise AttributeError(f"KernelLaunchParams object has no attribute '{name}'")
        self.__dict__[name] = SymInt32(value)


class TensorDesc:
    """``dtype`` (a ``trt.DataType``), ``shape_expr`` (ShapeExprs) and, where TensorRT has given one,
    ``shape`` (ints, -1 where dynamic; ``max`` on a dynamic one)."""

    def __init__(self, dtype, shape_expr, shape=None):
        self.dtype, self.shape_expr, self._shape = dtype, tuple(shape_expr), shape
        self._aliased_to = None

    @property
    def shape(self):
        if self._shape is None:
            raise ValueError("TensorDesc has no shape information available at this stage.")
        return self._shape

    def aliased(self):
        alias = TensorDesc(self.dtype, self.shape_expr, self._shape)
        alias._aliased_to = self
        return alias

    def get_aliased(self):
        return self._aliased_to


class Shape(tuple):
    """``tensorrt.plugin.Shape`` of a dynamic input: -1 where dynamic, ``max`` from the profile."""

    def __new__(cls, dims, max=None):
        shape = super().__new__(cls, dims)
        shape._max = None if max is None else tuple(max)
        return shape

    @property
    def max(self):
        if -1 not in self:
            raise ValueError("max property is only accessible if is_dynamic is true")
        return self._max


class AutoTuneCombination:
    def __init__(self, io_types=None, layouts=None):
        trt = tensorrt()
        self.io_types = [part.strip() for part in io_types.split(",")]
        lengths = {len(part.split("|")) for part in self.io_types} - {1}
        if len(lengths) > 1:
            raise ValueError(f"Type/Format combinations {self.io_types} contain illegal dependent lengths")
        self.types = [[_data_type(trt, name) for name in part.split("|")] for part in self.io_types]
        self.layouts = [getattr(trt.TensorFormat, layout.strip()) for layout in (layouts or "LINEAR").split(",")]


def _data_type(trt, name):
    return {"FP32": trt.DataType.FLOAT, "FP16": trt.DataType.HALF}.get(name) or getattr(trt.DataType, name)


class _Op:
    """``tensorrt.plugin.op``: ``op.<namespace>.<name>(*itensors)`` -> a callable for ``add_plugin``."""

    def __init__(self):
        self.namespaces = {}

    def __getattr__(self, namespace):
        if namespace not in self.__dict__.get("namespaces", {}):
            raise AttributeError(namespace)
        return self.namespaces[namespace]


op = _Op()
REGISTRY = {}  #: plugin id -> {"register": f, "autotune": f, "aot_impl": f, "inputs": [names], "attributes": {name: type}}
SERIALIZABLE_BUILTIN_TYPES = (int, float, bytes, bool, str)  # _validate.py
DISALLOWED_ATTR_NAMES = {"outputs", "stream", "tactic"}


def register(plugin_id, lazy_register=False):
    namespace, name = plugin_id.split("::")
    if namespace in ("", "trt", "tensorrt", "std") or "." in namespace or "." in name:
        raise ValueError(f"Provided namespace {namespace} is a reserved namespace")

    def decorator(function):
        signature = inspect.signature(function)
        inputs, attributes = [], {}
        for index, (parameter_name, parameter) in enumerate(signature.parameters.items()):
            if parameter.annotation is inspect.Parameter.empty:
                raise ValueError(f"Argument {parameter_name} does not have a type annotation.")
            if parameter.default is not inspect.Parameter.empty:
                raise ValueError(f"Argument {parameter_name} has a default value. Default values are not supported yet.")
            if inspect.isclass(parameter.annotation) and issubclass(parameter.annotation, TensorDesc):
                if attributes:
                    raise ValueError(f"TensorDescs args and attribute args cannot be interspersed. Received function with signature {signature}.")
                inputs.append(parameter_name)
                continue
            if index == 0:
                raise ValueError(f"TensorDescs args should come first, followed by attributes. Received function with signature {signature}.")
            if parameter_name in DISALLOWED_ATTR_NAMES:
                raise ValueError(f"'{parameter_name}' is not allowed as a plugin attribute name.")
            if parameter.annotation not in SERIALIZABLE_BUILTIN_TYPES:  # trt-scatter's attributes are ints and strings
                raise ValueError(f"Attribute '{parameter_name}' of type {parameter.annotation} is not a supported serializable type.")
            attributes[parameter_name] = parameter.annotation
        returned = signature.return_annotation
        if not (inspect.isclass(returned) and issubclass(returned, TensorDesc)):
            raise ValueError(f"Return argument is of type {returned}. Return types can only be TensorDesc or Tuple[TensorDesc].")
        REGISTRY[plugin_id] = {"register": function, "inputs": inputs + list(attributes), "attributes": attributes}
        op.namespaces.setdefault(namespace, type("Namespace", (), {}))
        setattr(op.namespaces[namespace], name, lambda *tensors, **values: _called(plugin_id, tensors, values))
        return function

    return decorator


def _called(plugin_id, tensors, values):
    """``op.<namespace>.<name>(*itensors, **attributes)`` as ``_lib.py``'s ``PluginDef.__call__`` checks it: the
    tensors, then every attribute by name, in the registered order, each of its annotated type."""
    attributes = REGISTRY[plugin_id]["attributes"]
    for key, value in values.items():
        if key not in attributes:
            raise ValueError(f"Unexpected attribute {key} provided. Expected one of {attributes.keys()}.")
        if attributes[key] is not type(value):
            raise ValueError(f"Unexpected type '{type(value)}' for attribute '{key}'. Expected '{attributes[key]}'.")
    schema = "(" + ", ".join(["ITensor"] * len(tensors) + list(values)) + ")"
    expected = "(" + ", ".join(["ITensor"] * (len(REGISTRY[plugin_id]["inputs"]) - len(attributes)) + list(attributes)) + ")"
    if schema != expected:
        raise ValueError(f"Unexpected schema {schema} received. Expected {expected}.")
    return ("plugin", plugin_id, tensors, values)


def _check_names(plugin_id, function, tail, what):
    if plugin_id not in REGISTRY:
        raise ValueError(f"Plugin {plugin_id} is not registered. Did you register it with tensorrt.plugin.register API?")
    expected = "(" + ", ".join(REGISTRY[plugin_id]["inputs"] + tail) + ")"
    got = "(" + ", ".join(inspect.signature(function).parameters) + ")"
    if got != expected:
        raise ValueError(f"Signature of the {what} function '{got}' does not match the expected input arg schema: {expected}")


def autotune(plugin_id):
    def decorator(function):
        _check_names(plugin_id, function, ["outputs"], "autotune")
        returned = inspect.signature(function).return_annotation
        if returned is not inspect.Parameter.empty:
            arguments = typing.get_args(returned) if typing.get_origin(returned) is list else (returned,)
            if not all(inspect.isclass(a) and issubclass(a, AutoTuneCombination) for a in arguments):
                raise ValueError(f"Return argument is of type {returned}. Return types can only be AutoTuneCombination or List[AutoTuneCombination].")
        REGISTRY[plugin_id]["autotune"] = function
        return function

    return decorator


def aot_impl(plugin_id):
    def decorator(function):
        _check_names(plugin_id, function, ["outputs", "tactic"], "aot_impl")
        returned = inspect.signature(function).return_annotation
        arguments = typing.get_args(returned) if typing.get_origin(returned) is tuple else ()
        if len(arguments) != 4:
            raise ValueError(f"Return annotation is {returned}. Expected tuple[str | bytes, str | bytes, KernelLaunchParams, SymIntExprs].")
        for text in arguments[:2]:
            if set(typing.get_args(text) or (text,)) - {str, bytes}:
                raise ValueError(f"Return annotation argument '{text}'. Expected 'str' or 'bytes'.")
        if not issubclass(arguments[2], KernelLaunchParams) or not issubclass(arguments[3], SymExprs):
            raise ValueError(f"Return annotation is {returned}.")
        REGISTRY[plugin_id]["aot_impl"] = function
        return function

    return decorator


def get_launch_params(plugin_id, input_descs, output_descs, tactic=0, attributes=None):
    """Calls the ``aot_impl`` function as ``_TemplateAOTPlugin.get_launch_params`` does (the input descriptors,
    the attribute values in order, the outputs, the tactic: ``_plugin_class.py``), with its checks on the
    result; returns ``(kernel name, PTX, grid, block, shared_mem, scalars)`` as ints. ``attributes``: the
    node's values by name; as TensorRT (``_lib.py`` ``create_plugin`` keeps the fields the ONNX parser found), the
    values of those the node has, in the registered order."""
    values = [(attributes or {})[name] for name in REGISTRY[plugin_id]["attributes"] if name in (attributes or {})]
    name, ptx, params, extra_args = REGISTRY[plugin_id]["aot_impl"](*input_descs, *values, output_descs, tactic)
    if not isinstance(name, (str, bytes)) or not isinstance(ptx, (str, bytes)):
        raise TypeError("Kernel name and PTX must be 'str' or 'bytes'")
    if not isinstance(params, KernelLaunchParams):
        raise TypeError(f"Launch params must be a 'tensorrt.plugin.KernelLaunchParams'.  Got: {type(params)}.")
    if not isinstance(extra_args, SymExprs):
        raise TypeError(f"Extra args must be a 'tensorrt.plugin.SymIntExprs'.  Got: {type(extra_args)}.")
    for arg in extra_args:
        if not isinstance(arg, SymInt32):
            raise TypeError(f"Extra args must be a 'tensorrt.plugin.SymInt32'.  Got: {type(arg)}.")
    launch = {field: getattr(params, field).value for field in KernelLaunchParams.FIELDS}
    return name, ptx, launch, [arg.value for arg in extra_args]
