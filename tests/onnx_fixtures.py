"""Small ONNX models of the four scatter ops, written with onnx.helper after the node contract
(trt_scatter.ops), independently of trt_scatter.onnx_models: graph inputs "data", "indices",
"updates"; constants as initializers; output "output". Shapes may hold strings (named dynamic dims)
or None.
The native lowerings here compute their constant ScatterND indices with NumPy's own slicing and
np.indices, never with the oracle, so comparing them with the oracle is a real differential test.
"""

import gc
import os
import signal
import subprocess
import sys
import tempfile
import time
import traceback
from pathlib import Path

import numpy as np
import onnx
from onnx import helper, numpy_helper

from trt_scatter import onnx_models
from trt_scatter.ops import SCATTER_UPDATE, SLICE_SCATTER

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
    """A SliceScatter plugin node (onnx_models.node_model: not checked); start/stop/step/axes are initializers
    (constant_params=True), graph inputs (False), or initializers for the names in constant_params and graph
    inputs for the others."""
    params = {"start": start, "stop": stop, "step": step} | ({} if axes is None else {"axes": axes})
    constant = {name: constant_params is True or (constant_params is not False and name in constant_params) for name in params}
    inputs = {"data": (data_shape, dtype), "updates": (updates_shape, dtype)}
    inputs |= {name: np.asarray(value, dtype=param_dtype) if constant[name] else ([len(value)], param_dtype) for name, value in params.items()}
    return onnx_models.node_model(SLICE_SCATTER, inputs, dtype=dtype)


def scatter_update_model(data_shape, indices_shape, updates_shape, axis, dtype=np.float32, index_dtype=np.int64):
    """A ScatterUpdate plugin node (onnx_models.node_model: not checked) with indices and updates as graph inputs
    and a constant axis."""
    inputs = {"data": (data_shape, dtype), "indices": (indices_shape, index_dtype), "updates": (updates_shape, dtype), "axis": np.asarray(axis, dtype=index_dtype)}
    return onnx_models.node_model(SCATTER_UPDATE, inputs, dtype=dtype)


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


def _logger_state():
    """What a new process's polygraphy logger is (its severities, as ``{module: severity}``): the commands set
    it (trt-scatter's quiet it), and a forked child must start from a new process's, whatever tests in this
    one did to it."""
    from polygraphy.logger import G_LOGGER

    return dict(G_LOGGER.module_severity.trie)


_NEW_PROCESS_LOGGER = _logger_state()


def _entry_point(name):
    """The function the console script ``name`` calls (it reads ``sys.argv``)."""
    if name == "trt-scatter":
        from trt_scatter.cli import main
    else:
        from polygraphy.tools import main
    return main


def _restore_logger():
    from polygraphy.logger import G_LOGGER

    G_LOGGER.module_severity = dict(_NEW_PROCESS_LOGGER)


WITHOUT_TORCH = Path(__file__).resolve().parent / "fixtures" / "without_torch"


def without_torch(env=None):
    """``env`` (else this process's environment) for a new process that cannot import PyTorch, as where trt-scatter
    is installed with the ``rtx`` extra alone, which is all the README's shell commands ask for (its PyTorch section's
    Python blocks aside). (With PyTorch installed, polygraphy imports it to ask whether an output is a PyTorch tensor: a second of CPU
    in each new process that compares outputs. The forked commands run with it.)"""
    env = dict(os.environ if env is None else env)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [str(WITHOUT_TORCH), env.get("PYTHONPATH")]))
    return env


def run_tool(name, args, env=None, cwd=None, fresh=False):
    """Runs ``polygraphy`` or ``trt-scatter`` with ``args`` as its command line does; returns a CompletedProcess
    (text, both streams).

    In a forked child of this process (:func:`run_forked`): the modules are imported already, so no
    interpreter starts, and whatever the command changes (environment, working directory, logging,
    TensorRT's and the plugins' state) ends with the child. ``fresh``: a new interpreter instead, for what
    a fork would inherit (the TensorRT backend this process resolved, registered plugins), without PyTorch
    (:func:`without_torch`).
    """
    argv = [str(a) for a in args]
    if fresh or not hasattr(os, "fork"):
        return subprocess.run(_console_script(name, {"polygraphy": "polygraphy.tools", "trt-scatter": "trt_scatter.cli"}[name]) + argv,
                              capture_output=True, text=True, env=without_torch({**os.environ, **(env or {})}), cwd=cwd, timeout=300)
    main = _entry_point(name)

    def command():
        _restore_logger()
        return main(argv) if name == "trt-scatter" else main()

    return run_forked(command, [name, *argv], env, cwd)


def run_python(source, args=(), env=None, cwd=None):
    """``python SCRIPT ARGS`` (``source`` a path) or ``python -c CODE ARGS`` (``source`` code) in a forked child
    (:func:`run_forked`); returns a CompletedProcess (text, both streams)."""
    import runpy

    argv = [str(a) for a in args]
    if isinstance(source, Path):

        def script():
            sys.path.insert(0, str(source.parent))  # as `python SCRIPT` puts the script's folder first
            runpy.run_path(str(source), run_name="__main__")
            return 0

        return run_forked(script, [str(source), *argv], env, cwd)
    return run_forked(lambda: exec(compile(source, "<string>", "exec"), {"__name__": "__main__"}) or 0, ["-c", *argv], env, cwd)


def run_forked(function, argv, env=None, cwd=None, timeout=300):
    """Runs ``function()`` in a forked child whose ``sys.argv`` is ``argv``, environment ``os.environ`` updated
    with ``env``, working directory ``cwd``, and file descriptors 1 and 2 captured; its return value (or its
    SystemExit's code) is the exit code. Returns a CompletedProcess (text, both streams)."""
    with tempfile.TemporaryFile() as out, tempfile.TemporaryFile() as err:
        for stream in (sys.stdout, sys.stderr):
            stream.flush()
        pid = os.fork()
        if pid == 0:  # the child: the function, then _exit with its code (never back into pytest)
            gc.freeze()  # the parent's objects are left out of this process's collections: walking them would copy every page they are on
            code = 1
            try:
                os.dup2(out.fileno(), 1)
                os.dup2(err.fileno(), 2)
                sys.stdout, sys.stderr = open(1, "w", closefd=False), open(2, "w", closefd=False)
                os.environ.update(env or {})
                if cwd is not None:
                    os.chdir(cwd)
                sys.argv = list(argv)
                code = function()
            except SystemExit as exit:
                code = exit.code if isinstance(exit.code, int) else (0 if exit.code is None else (print(exit.code, file=sys.stderr) or 1))
            except BaseException:
                traceback.print_exc()
            finally:
                sys.stdout.flush()
                sys.stderr.flush()
                os._exit(code or 0)
        deadline = time.monotonic() + timeout
        while True:
            done, status = os.waitpid(pid, os.WNOHANG)
            if done:
                break
            if time.monotonic() > deadline:
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
                raise subprocess.TimeoutExpired(argv, timeout)
            time.sleep(0.01)
        out.seek(0)
        err.seek(0)
        return subprocess.CompletedProcess(argv, os.waitstatus_to_exitcode(status), out.read().decode(errors="replace"), err.read().decode(errors="replace"))


__all__ = [
    "run_forked",
    "run_python",
    "run_tool",
    "save",
    "scatter_elements_model",
    "scatter_nd_model",
    "scatter_update_model",
    "scatter_update_native_model",
    "slice_scatter_model",
    "slice_scatter_native_model",
]


def loop_carrying_a_value_named_like_an_input(body_shape=(2, 5), input_shape=(3, 4), column=4, outer_constants=False):
    """A Loop (``n`` iterations, ``cond`` given) whose body carries a value named ``data``, as the model's input ``data``
    of another shape is named (ONNX's checker takes it), and writes 9 at row 0 and ``column`` of it with ScatterElements
    node ``write`` (constant indices and updates: the body's initializers, or the main graph's with
    ``outer_constants``); ``out`` is the carried value, ``z`` the model's ``data`` passed on."""
    indices = numpy_helper.from_array(np.array([[column]], np.int64), "idx")
    updates = numpy_helper.from_array(np.array([[9.0]], np.float32), "upd")
    body = helper.make_graph([helper.make_node("Identity", ["c"], ["c2"]),
                              helper.make_node("ScatterElements", ["data", "idx", "upd"], ["y"], axis=1, name="write")], "body",
                             [info("i", [], np.int64), info("c", [], np.bool_), info("data", body_shape)],
                             [info("c2", [], np.bool_), info("y", body_shape)], [] if outer_constants else [indices, updates])
    graph = helper.make_graph([helper.make_node("Loop", ["n", "cond", "x0"], ["out"], name="repeat", body=body),
                               helper.make_node("Identity", ["data"], ["z"])], "g",
                              [info("n", [], np.int64), info("cond", [], np.bool_), info("x0", body_shape), info("data", input_shape)],
                              [info("out", body_shape), info("z", input_shape)], [indices, updates] if outer_constants else [])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


def slice_scatter_in_if_branch():
    """A SliceScatter node ``in_branch`` (data (3, 5), a column slice) in the then-branch of If node ``choice`` on a
    bool input ``cond``; the else-branch keeps data."""
    from trt_scatter.onnx_models import slice_scatter_model

    inner = slice_scatter_model((3, 5), [1], [4], [2], [1]).graph
    inner.node[0].name = "in_branch"
    then_branch = helper.make_graph(list(inner.node), "then", [], [info(inner.output[0].name, [3, 5])], initializer=list(inner.initializer))
    else_branch = helper.make_graph([helper.make_node("Identity", ["data"], ["kept"])], "else", [], [info("kept", [3, 5])])
    graph = helper.make_graph([helper.make_node("If", ["cond"], ["output"], name="choice", then_branch=then_branch, else_branch=else_branch)], "g",
                              [info("cond", [], np.bool_), *[v for v in inner.input if v.name in ("data", "updates")]], [info("output", [3, 5])])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("trt_scatter", 1)])
