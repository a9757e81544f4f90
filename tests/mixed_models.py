"""Hand-written models that mix standard ops (MatMul, Conv, Sigmoid, Relu, Add) with each scatter op,
as a user's model would, with onnx.helper only (no trt-scatter code builds them).

Each builder returns a :class:`Case`: the model and a ``feeds(rng)`` that draws valid inputs for it
(distinct in-range indices, a write position inside the cache) with integer-valued floats, so
MatMul, Conv and Add compute exactly in every runtime and outputs can be compared bit for bit;
Sigmoid's outputs differ slightly between NumPy and onnxruntime (which approximates exp), so
models that end in a Sigmoid also output the tensor before it (``exact_outputs``).

Parameters: ``index_dtype`` (int32/int64) of every index input; ``runtime``: scatter parameters
computed by the graph from graph inputs (a write position ``pos``, ``stop = pos + T``, indices
from an input) instead of initializers; ``dynamic``: batch-like dims symbolic; ``axes_from``
(SliceScatter's ``axes``, ScatterUpdate's ``axis``): ``"constant"`` (an initializer), ``"input"``
(a graph input, fed the axis or its negative form) or ``"computed"`` (the data's rank minus 2,
computed by Shape, Shape, Sub and, for int32, Cast nodes: the rank is static, so the passes fold it
to a constant, as TensorRT builds it).
"""

import dataclasses

import numpy as np
from onnx import TensorProto, helper, numpy_helper

import onnx_fixtures as fx

DOMAIN = "trt_scatter"


@dataclasses.dataclass
class Case:
    name: str
    model: object
    feeds: object  # callable(rng) -> {input name: array}
    exact_outputs: tuple  # outputs that every runtime computes bit for bit


def _model(name, nodes, inputs, outputs, initializers, opset=17):
    graph = helper.make_graph(nodes, name, inputs, outputs, initializer=initializers)
    opsets = [helper.make_opsetid("", opset)]
    if any(node.domain == DOMAIN for node in nodes):
        opsets.append(helper.make_opsetid(DOMAIN, 1))
    model = helper.make_model(graph, opset_imports=opsets)
    model.ir_version = 8
    return model


def _const(name, values, dtype):
    return numpy_helper.from_array(np.asarray(values, dtype=dtype), name)


def _ints(rng, shape, dtype=np.float32, low=-4, high=5):
    return rng.integers(low, high, size=shape).astype(dtype)


def _axes(axes_from, name, source, index_dtype, shape, nodes, inputs, inits):
    """Adds tensor ``name`` holding axis 2 of the rank-4 tensor ``source`` as ``axes_from`` says; returns
    a feeds function for it (a graph input is fed 2 or -2)."""
    if axes_from == "constant":
        inits.append(_const(name, np.full(shape, 2), index_dtype))
    elif axes_from == "input":
        inputs.append(fx.info(name, shape, index_dtype))
        return lambda rng: {name: np.full(shape, rng.choice([2, -2]), dtype=index_dtype)}
    elif axes_from == "computed":
        if shape != (1,):
            raise ValueError("computed axes have shape (1,)")
        int64 = np.dtype(index_dtype) == np.int64
        nodes[:0] = [
            helper.make_node("Shape", [source], [f"{name}_shape"], name=f"{name}_shape"),
            helper.make_node("Shape", [f"{name}_shape"], [f"{name}_rank"], name=f"{name}_rank"),
            helper.make_node("Sub", [f"{name}_rank", f"{name}_two"], [name if int64 else f"{name}_int64"], name=f"{name}_minus_two"),
        ] + ([] if int64 else [helper.make_node("Cast", [f"{name}_int64"], [name], name=f"{name}_cast", to=TensorProto.INT32)])
        inits.append(_const(f"{name}_two", [2], np.int64))
    else:
        raise ValueError(f"axes_from: constant, input or computed (got {axes_from!r})")
    return lambda rng: {}


def kv_cache(index_dtype=np.int64, runtime=True, dynamic=False, B=2, H=3, S=8, D=4, T=1, E=6, pos=None, project=True, axes_from="constant"):
    """x[B,T,E] -MatMul-> [B,T,H*D] -Reshape,Transpose-> k[B,H,T,D], written into cache[B,H,S,D] at
    ``pos`` on axis 2 by SliceScatter (start=pos, stop=pos+T: an Add node, step 1); then Relu.
    ``runtime``: pos is a graph input (int), else ``pos`` is a constant. ``project=False``: k is
    the graph input (no MatMul, so any float inputs compare exactly)."""
    batch, seq = ("batch", "seq") if dynamic else (B, S)
    nodes = [
        helper.make_node("MatMul", ["x", "w"], ["proj"], name="project"),
        helper.make_node("Reshape", ["proj", "heads"], ["split"], name="split_heads"),
        helper.make_node("Transpose", ["split"], ["k"], name="heads_first", perm=[0, 2, 1, 3]),
        helper.make_node("Add", ["pos", "length"], ["end"], name="end_of_write"),
        helper.make_node("SliceScatter", ["cache", "k", "pos", "end", "one", "axes"], ["new_cache"], name="write_kv", domain=DOMAIN, inplace=0),
        helper.make_node("Relu", ["new_cache"], ["y"], name="act"),
    ]
    inputs = [fx.info("x", [batch, T, E]), fx.info("cache", [batch, H, seq, D])]
    inits = [
        _const("w", np.random.default_rng(0).integers(-2, 3, (E, H * D)), np.float32),
        _const("heads", [-1, T, H, D], np.int64),
        _const("length", [T], index_dtype),
        _const("one", [1], index_dtype),
    ]
    if runtime:
        inputs.append(fx.info("pos", [1], index_dtype))
    else:
        inits.append(_const("pos", [S - T if pos is None else pos], index_dtype))
    if not project:
        nodes, inputs[0] = nodes[3:], fx.info("k", [batch, H, T, D])
        inits = inits[2:]
    axes_feeds = _axes(axes_from, "axes", "cache", index_dtype, (1,), nodes, inputs, inits)
    outputs = [fx.info("new_cache", [batch, H, seq, D]), fx.info("y", [batch, H, seq, D])]
    model = _model("kv_cache", nodes, inputs, outputs, inits)

    def feeds(rng):
        feed = {"x" if project else "k": _ints(rng, (B, T, E) if project else (B, H, T, D)), "cache": _ints(rng, (B, H, S, D))}
        if runtime:
            first = int(rng.integers(0, S - T + 1)) if pos is None else pos
            negative = first + T < S and rng.random() < 0.3  # the negative form: stop = pos + T must stay negative
            feed["pos"] = np.array([first - S if negative else first], dtype=index_dtype)
        return feed | axes_feeds(rng)

    return Case("kv_cache", model, feeds, ("new_cache", "y"))


def conv_update(index_dtype=np.int64, runtime=True, dynamic=False, N=2, C=3, Hh=5, W=4, K=2, axes_from="constant", axis_shape=(1,)):
    """x[N,C,H,W] -Conv(3x3, pad 1)-> data; Sigmoid(u) scattered into rows ``indices`` of axis 2 by
    ScatterUpdate (axis 2, of shape ``axis_shape``: (1,) or ()); + bias. ``runtime``: indices a
    graph input, else a constant."""
    batch = "n" if dynamic else N
    nodes = [
        helper.make_node("Conv", ["x", "kernel"], ["features"], name="conv", pads=[1, 1, 1, 1]),
        helper.make_node("Sigmoid", ["u"], ["gate"], name="gate"),
        helper.make_node("ScatterUpdate", ["features", "rows", "gate", "axis"], ["updated"], name="update_rows", domain=DOMAIN, inplace=0),
        helper.make_node("Add", ["updated", "bias"], ["y"], name="add_bias"),
    ]
    inputs = [fx.info("x", [batch, C, Hh, W]), fx.info("u", [batch, C, K, W])]
    inits = [
        _const("kernel", np.random.default_rng(1).integers(-1, 2, (C, C, 3, 3)), np.float32),
        _const("bias", np.arange(W), np.float32),
    ]
    if runtime:
        inputs.append(fx.info("rows", [K], index_dtype))
    else:
        inits.append(_const("rows", np.arange(K)[::-1] * 2 % Hh, index_dtype))
    axis_feeds = _axes(axes_from, "axis", "x", index_dtype, tuple(axis_shape), nodes, inputs, inits)
    model = _model("conv_update", nodes, inputs, [fx.info("y", [batch, C, Hh, W])], inits)

    def feeds(rng):
        feed = {"x": _ints(rng, (N, C, Hh, W)), "u": np.zeros((N, C, K, W), np.float32)}  # Sigmoid(0) = 0.5 exactly
        if runtime:
            feed["rows"] = rng.choice(Hh, size=K, replace=False).astype(index_dtype)
        return feed | axis_feeds(rng)

    return Case("conv_update", model, feeds, ("y",))


def matmul_elements(index_dtype=np.int64, runtime=True, dynamic=False, M=3, K=4, N=5, R=2):
    """a[M,K] @ b[K,N] -> ScatterElements(axis=1) of Relu(u) at ``indices`` -> Sigmoid; outputs the scatter too."""
    rows = "m" if dynamic else M
    nodes = [
        helper.make_node("MatMul", ["a", "b"], ["product"], name="matmul"),
        helper.make_node("Relu", ["u"], ["positive"], name="relu"),
        helper.make_node("ScatterElements", ["product", "indices", "positive"], ["scattered"], name="scatter", axis=1),
        helper.make_node("Sigmoid", ["scattered"], ["y"], name="sigmoid"),
    ]
    inputs = [fx.info("a", [rows, K]), fx.info("u", [rows, R])]
    inits = [_const("b", np.random.default_rng(2).integers(-2, 3, (K, N)), np.float32)]
    if runtime:
        inputs.append(fx.info("indices", [rows, R], index_dtype))
    else:
        inits.append(_const("indices", (np.arange(M)[:, None] + np.arange(R)) % N - N * (np.arange(R) % 2), index_dtype))
    outputs = [fx.info("scattered", [rows, N]), fx.info("y", [rows, N])]
    model = _model("matmul_elements", nodes, inputs, outputs, inits)

    def feeds(rng):
        feed = {"a": _ints(rng, (M, K)), "u": _ints(rng, (M, R))}
        if runtime:
            feed["indices"] = np.stack([rng.choice(N, size=R, replace=False) for _ in range(M)]).astype(index_dtype)
        return feed

    return Case("matmul_elements", model, feeds, ("scattered",))


def add_nd(index_dtype=np.int64, runtime=True, dynamic=False, A=4, Bd=3, R=2):
    """x + y -> ScatterND of Relu(u) rows at ``indices`` [R, 1] (int64: ONNX's ScatterND takes no
    other; int32 inputs go through a Cast) -> Relu."""
    cols = "cols" if dynamic else Bd
    nodes = [
        helper.make_node("Add", ["x", "y"], ["summed"], name="add"),
        helper.make_node("Relu", ["u"], ["positive"], name="relu_updates"),
        helper.make_node("ScatterND", ["summed", "rows64", "positive"], ["scattered"], name="scatter_rows"),
        helper.make_node("Relu", ["scattered"], ["out"], name="relu_out"),
    ]
    if np.dtype(index_dtype) != np.int64:
        nodes.insert(2, helper.make_node("Cast", ["rows"], ["rows64"], name="rows_to_int64", to=TensorProto.INT64))
    else:
        nodes[2].input[1] = "rows"
    inputs = [fx.info("x", [A, cols]), fx.info("y", [A, cols]), fx.info("u", [R, cols])]
    inits = []
    if runtime:
        inputs.append(fx.info("rows", [R, 1], index_dtype))
    else:
        inits.append(_const("rows", [[A - 1], [0]][:R], index_dtype))
    model = _model("add_nd", nodes, inputs, [fx.info("out", [A, cols])], inits)

    def feeds(rng):
        feed = {"x": _ints(rng, (A, Bd)), "y": _ints(rng, (A, Bd)), "u": _ints(rng, (R, Bd))}
        if runtime:
            feed["rows"] = rng.choice(A, size=(R, 1), replace=False).astype(index_dtype)
        return feed

    return Case("add_nd", model, feeds, ("out",))


BUILDERS = {"kv_cache": kv_cache, "conv_update": conv_update, "matmul_elements": matmul_elements, "add_nd": add_nd}


def all_cases():
    """Every builder x index type x constant/run-time parameters x static/dynamic dims."""
    for name, builder in BUILDERS.items():
        for index_dtype in (np.int32, np.int64):
            for runtime in (False, True):
                for dynamic in (False, True):
                    case = builder(index_dtype=index_dtype, runtime=runtime, dynamic=dynamic)
                    case.name = f"{name}-{np.dtype(index_dtype).name}-{'runtime' if runtime else 'constant'}-{'dynamic' if dynamic else 'static'}"
                    yield case
