"""From PyTorch to ONNX with one ``trt_scatter`` node per write (the ``torch`` extra).

PyTorch's exporters write ``slice_scatter``, slice assignment, ``select_scatter``, ``index_copy``
and ``index_put`` as ScatterND or ScatterElements with Transposes around them or full coordinate
tensors (or not at all), and ``scatter_add``, ``scatter_reduce``, ``index_add`` and
``index_put(accumulate=True)`` as scatters with a reduction that TensorRT builds nondeterministically
or not at all (two of them computing other values than eager PyTorch), and ``index_reduce`` not at all. Here each becomes one
``trt_scatter`` node (SliceScatter, ScatterUpdate, ScatterElementsReduce or ScatterNDReduce), a write
of each batch row at its own position (``cache[torch.arange(B), :, pos] = k``, ``index_put`` with a
batch and a position index) one ``CacheScatter`` node (TensorScatter-24), which TensorRT's ONNX
parser maps onto trt-scatter's plugins; a masked write (``x[mask] = v``, ``masked_scatter``) becomes a ``Where``::

    import trt_scatter.torch

    model = trt_scatter.torch.export(module, (cache, new, pos), "model.onnx",
                                     dynamic_shapes=({2: Dim.AUTO}, {2: Dim.AUTO}, None))

- :func:`export`: ``torch.onnx.export`` (either exporter) with the translations below, then
  :func:`trt_scatter.passes.rewrite.rewrite` (which fuses a write over several axes, which the
  dynamo exporter hands over as nested writes, into one node), then optionally ``inplace=1``.
- :func:`translation_table` (``dynamo=True``) and :func:`register_symbolics` /
  :func:`unregister_symbolics` (``dynamo=False``), for those who call ``torch.onnx.export`` themselves.

What a node cannot express exactly (a mask with one value per element, several index tensors other
than a batch and a position index, ``index_add`` with ``alpha``, ...) keeps PyTorch's own
translation; the ``trt_scatter`` logger says which, at debug level (``TRT_SCATTER_VERBOSE=1``).
"""

from __future__ import annotations

import io
import os
import re
from typing import IO, TYPE_CHECKING, Any

from trt_scatter.log import first_line, logger
from trt_scatter.model.graph import fed_inputs, overwrite_conflict, value_readers
from trt_scatter.ops import DEFAULT_DOMAINS, DOMAIN, VERSION, is_trt_scatter, register_onnx_schemas
from trt_scatter.torch import torchscript, writes
from trt_scatter.torch.dynamo import translation_table
from trt_scatter.torch.torchscript import register_symbolics, unregister_symbolics

if TYPE_CHECKING:
    from collections.abc import Iterator

    import onnx
    import torch

    from trt_scatter.model import Model

__all__ = ["export", "mark_inplace", "translation_table", "register_symbolics", "unregister_symbolics"]


def export(model: torch.nn.Module | torch.export.ExportedProgram, args: tuple[Any, ...] = (), f: str | os.PathLike | IO[bytes] | None = None, *, dynamo: bool = True, inplace: bool = False, aot: bool = False, **kwargs: Any) -> onnx.ModelProto:
    """Exports ``model`` like ``torch.onnx.export(model, args, f, dynamo=dynamo, **kwargs)``; returns the ``onnx.ModelProto``.

    ``kwargs`` are ``torch.onnx.export``'s (``dynamic_shapes``, ``dynamic_axes``, ``input_names``,
    ``opset_version``, ...); a ``custom_translation_table`` of the caller's is merged over ours.
    ``inplace=True`` sets ``inplace=1`` on each write whose data is a graph input that nothing
    else reads (shape reads aside) and no output is: the plugin then writes into that input's
    buffer (TensorRT's aliased plugin I/O), the way an in-place update of a KV cache should run.
    ``aot=True`` hands every write to the AOT plugins instead (:func:`trt_scatter.passes.aot.to_aot`:
    full TensorRT >= 10.9, an engine that runs without Python; ``inplace=True`` is refused there, the
    AOT form always writes in place). The model is saved to ``f`` (a path or a binary file) when given. With ``dynamo=False`` the
    symbolics serve ``opset_version`` 13 and later (below, PyTorch's own), and the module's
    parameters and buffers are as they were before (its tracing run writes into them). Every submodule keeps its own
    training mode (``torch.onnx.export`` would leave them all in the top module's).
    The model is validated (:func:`trt_scatter.passes.validate.validate`): a write that trt-scatter would refuse
    raises its ``ModelError`` here.
    """
    for name, flag in (("dynamo", dynamo), ("inplace", inplace), ("aot", aot)):
        if not isinstance(flag, bool):  # a string such as "False" would be true
            raise TypeError(f"trt_scatter.torch.export: {name} must be True or False (got {flag!r})")
    if inplace and aot:
        raise ValueError("trt_scatter.torch.export: inplace=True does nothing with aot=True, whose writes are always in place: leave it out")
    if isinstance(args, list):  # torch.export refuses it in pages of text; TorchScript would take it for one input
        raise TypeError("trt_scatter.torch.export: args must be a tuple of the model's positional inputs (got a list: "
                        "tuple(args) for several inputs, (args,) for one list input)")
    if f is not None and not isinstance(f, (str, os.PathLike)) and not hasattr(f, "write"):  # an int would be taken for a file descriptor
        raise TypeError(f"trt_scatter.torch.export: f is a path or a binary file to save the model to (got {type(f).__name__})")
    if isinstance(f, (str, os.PathLike)):  # what is wrong with the path is known before the export, not after it
        path = os.fspath(f)
        if not path:
            raise ValueError("trt_scatter.torch.export: f is an empty path: give a file path, such as 'model.onnx'")
        if os.path.isdir(path) or path.endswith(("/", os.sep)):
            raise ValueError(f"trt_scatter.torch.export: f {path!r}: it is a folder: give a file path, such as "
                             f"{os.path.join(path, 'model.onnx')!r}")
        if not os.path.isdir(os.path.dirname(os.path.abspath(path))):
            raise ValueError(f"trt_scatter.torch.export: f {path!r}: its folder does not exist")
    opset = kwargs.get("opset_version")
    if opset is not None and (isinstance(opset, bool) or not isinstance(opset, int)):  # torch fails on '18' deep inside its exporter
        raise TypeError(f"trt_scatter.torch.export: opset_version must be an int (got {opset!r})")
    writes.require_torch()
    import onnx
    import torch

    if not isinstance(model, (torch.nn.Module, torch.export.ExportedProgram, torch.jit.ScriptFunction)):
        raise TypeError(f"trt_scatter.torch.export: model is a torch.nn.Module, a torch.export.ExportedProgram or a TorchScript function "
                        f"(got {type(model).__name__})")
    from trt_scatter.model import Model
    from trt_scatter.model.graph import nested_trt_scatter_node
    from trt_scatter.passes.rewrite import extremes_from_zero, rewrite
    from trt_scatter.passes.validate import validate

    register_onnx_schemas()
    # torch.onnx.export puts the whole module in eval mode and back in the top module's mode after, so a wrapper in training
    # mode around a decoder in eval mode left the decoder in training mode (its dropout on): every module's own mode is kept.
    modes = [(module, module.training) for module in model.modules()] if isinstance(model, torch.nn.Module) else []
    removed = []  # the TorchScript exporter's words for the in-place writes it removed
    try:
        if dynamo:
            table = translation_table()
            table.update(kwargs.pop("custom_translation_table", None) or {})
            try:
                program = torch.onnx.export(model, args, dynamo=True, custom_translation_table=table, **kwargs)
            except torch.onnx.OnnxExporterError as err:
                raise ValueError(_dynamo_failure(err)) from err
            proto = program.model_proto
            asked, given = kwargs.get("opset_version"), next((o.version for o in proto.opset_import if o.domain in ("", "ai.onnx")), None)
            if asked is not None and asked != given:  # torch falls back to its own opset where it cannot convert, and only logs it
                raise ValueError(f"trt_scatter.torch.export: opset_version={asked}, and torch's exporter gave opset {given} (its log above "
                                 "says why): ask for an opset it gives, or leave opset_version out")
        else:
            proto, removed = _export_torchscript(model, args, kwargs)
    finally:
        for module, training in modes:
            module.training = training
    proto, report = rewrite(proto)
    for line in report.lines():
        logger.debug("trt_scatter.torch: rewrite: %s", line)
    exported = Model(proto)  # its shapes worked out once, for the validation and the checks below
    validate(exported)  # what the exporter let through and trt-scatter would refuse (float indices...) is refused here, not at build
    if not dynamo:
        for line in extremes_from_zero(proto.graph):
            logger.warning(f"trt_scatter.torch: {line}; export with dynamo=True, which takes the eager branch")
        for line in _shapes_of_the_example(exported):
            logger.warning(f"trt_scatter.torch: {line}: the model runs at that size only (PyTorch's tracer keeps some shapes of its "
                           "example); export with dynamo=True")
        through = _passed_through(proto.graph)
        if through:
            _refuse_a_dropped_write(model, args, proto, through, removed, kwargs.get("input_names"))
        _refuse_a_lost_input(model, args, proto, kwargs.get("input_names"))
    nested = nested_trt_scatter_node(proto.graph)
    if nested is not None:  # a write inside torch.cond or a loop
        logger.warning(f"trt_scatter.torch: {nested[0]} lies in a subgraph of {nested[1]}: full TensorRT builds it, TensorRT-RTX "
                       "builds no plugin there (trt-scatter lower writes it with standard ONNX ops, as torch.onnx.export does)")
    if inplace:
        written = mark_inplace(proto)
        logger.debug("trt_scatter.torch: inplace=1 on %s", ", ".join(written) or "no node")
        if not written:
            logger.warning("trt_scatter.torch: inplace=True, but no write of the main graph has a graph input of its own as data "
                           "(writes in If or Loop bodies are not marked)")
    if aot:
        from trt_scatter.passes.aot import to_aot

        proto = to_aot(proto)
    if f is not None:
        onnx.save(proto, f)
    return proto


def _dynamo_failure(err: BaseException) -> str:
    """One line for a failed dynamo export: the ATen op it failed on, where PyTorch's message names one, and the first
    line of the exception at the end of the chain (PyTorch's own reason, or a translation's refusal), which PyTorch
    wraps in a dozen lines of next steps."""
    op = re.search(r"target=torch\.ops\.([\w.]+)", str(err))
    reason = err
    while reason.__cause__ is not None:
        reason = reason.__cause__
    return (f"trt_scatter.torch.export: PyTorch's dynamo exporter failed{f' on {op.group(1)}' if op else ''}: {first_line(reason)} "
            "(dynamo=False exports with PyTorch's TorchScript exporter)")


def _shapes_of_the_example(exported: Model) -> Iterator[str]:
    """The main graph's Reshapes to a constant shape of a tensor with a dynamic dimension of the graph's inputs, which
    hold its element count at one size: where the tracer wrote a shape of the example (values broadcast to a write,
    viewed without their leading 1s), any other size of that dimension fails at run time."""
    from trt_scatter.model import declared_dims, node_label
    from trt_scatter.oracle.rules import show_shape

    graph, tensors = exported.proto.graph, exported.tensors
    dynamic = {d for value in graph.input for d in declared_dims(value) or () if isinstance(d, str)}
    for node in graph.node:
        if node.op_type != "Reshape" or node.domain not in DEFAULT_DOMAINS or len(node.input) < 2:
            continue
        dims, shape = tensors.symbolic_shape(node.input[0]), tensors.constant(node.input[1])
        if dims and dynamic.intersection(dims) and shape is not None and shape.size and (shape > 0).all():
            yield f"{node_label(node)} gives {node.input[0]!r} of shape {show_shape(dims)} the constant shape {tuple(int(d) for d in shape)}"


def _export_torchscript(model, args, kwargs):
    """``torch.onnx.export(dynamo=False)`` with the symbolics, keeping the module's state as it was.

    That exporter runs ``forward`` to trace it, which performs the module's writes into its own
    buffers, and then saves the written buffers as initializers: a KV cache registered as a
    buffer would carry the traced token into every later run. The state is restored after the
    export, and so are the initializers that hold it.
    """
    import onnx
    import torch
    from onnx import numpy_helper

    state = {name: tensor.detach().clone() for name, tensor in model.state_dict(keep_vars=True).items()} if isinstance(model, torch.nn.Module) else {}
    # Not passed as custom_opsets: the exporter prints a warning to stderr for a domain no node uses (a model the
    # rewrite turns into trt_scatter ops after the export), and names a domain it meets without a version at 1.
    custom_opsets = kwargs.pop("custom_opsets", None) or {}
    registered_before = _symbolics_registered()
    register_symbolics()
    buffer = io.BytesIO()
    try:
        with torchscript.onnx_log_as_asked(), torchscript.refusals_after_export(), torchscript.removed_mutations() as removed:
            torch.onnx.export(model, _copies(args), buffer, dynamo=False, custom_opsets=custom_opsets, **kwargs)
    finally:
        if not registered_before:
            unregister_symbolics()
        written = {}
        with torch.no_grad():
            for name, tensor in model.state_dict(keep_vars=True).items() if state else ():
                if name in state and not torch.equal(tensor, state[name]):
                    written[name] = tensor.detach().clone()
                    tensor.copy_(state[name])
    proto = onnx.load_from_string(buffer.getvalue())
    for opset in proto.opset_import:
        if opset.domain == DOMAIN:
            opset.version = VERSION
    for initializer in proto.graph.initializer:
        if initializer.name in written:
            initializer.CopyFrom(numpy_helper.from_array(state[initializer.name].cpu().numpy(), initializer.name))
            del written[initializer.name]
    if written:
        raise ValueError(f"the TorchScript exporter ran forward, which wrote {', '.join(sorted(written))}, and exported values "
                         "computed from the written state under other names: export with dynamo=True")
    return proto, removed


def _copies(args):
    """The example inputs for the tracing run, which performs the model's in-place writes on them: copies of the tensors
    (in tuples, lists and dicts too), so that the caller's keep their values, and so that :func:`_refuse_a_dropped_write`
    sees them as given. Two arguments that are one tensor become two copies."""
    import torch

    if isinstance(args, torch.Tensor):
        return args.clone()
    if isinstance(args, (tuple, list)):
        return type(args)(_copies(arg) for arg in args)
    if isinstance(args, dict):
        return {key: _copies(value) for key, value in args.items()}
    return args


def _passed_through(graph):
    """``{graph output: the graph input it is}`` for the outputs that hand an input on unchanged (through Identity nodes)."""
    made = {node.output[0]: node.input[0] for node in graph.node if node.op_type == "Identity" and node.input and node.output}
    inputs = {value.name for value in graph.input}
    through = {}
    for value in graph.output:
        name = value.name
        while name in made and name not in inputs:
            name = made[name]
        if name in inputs:
            through[value.name] = name
    return through


def _eager(model, args):
    """``model``'s outputs (a list, ``None`` where it gives none or cannot run) on copies of ``args`` (a tuple), in eval
    mode as the exporter traced, without grad, its random draws from one seed (two runs draw alike; the caller's random
    state is as it was); the module's modes, parameters and buffers are as they were after it."""
    import torch

    buffers = {name: buffer.detach().clone() for name, buffer in model.named_buffers()}
    state = {name: tensor.detach().clone() for name, tensor in model.state_dict(keep_vars=True).items()}
    modes = [(module, module.training) for module in model.modules()]
    try:
        model.eval()
        with torch.no_grad(), torch.random.fork_rng(devices=[]):  # the CPU's generator alone: a GPU's state is the caller's
            torch.default_generator.manual_seed(0)
            eager = model(*_copies(args))
    except Exception as err:  # a forward that runs only while traced: nothing to compare
        logger.debug("trt_scatter.torch: no eager run to compare the export with (%s)", first_line(err))
        return None
    finally:
        for module, training in modes:
            module.training = training
        with torch.no_grad():
            for name, tensor in model.state_dict(keep_vars=True).items():
                tensor.copy_(state[name])
            for name, buffer in model.named_buffers():
                if name in buffers:
                    buffer.copy_(buffers[name])
    eager = [eager] if isinstance(eager, torch.Tensor) else list(eager) if isinstance(eager, (tuple, list)) else []
    return eager or None


def _same(a, b):
    """Whether two outputs of eager runs are one value: tensors of one shape, type and elements (NaN where NaN), or
    equal other values."""
    import torch

    if not (isinstance(a, torch.Tensor) and isinstance(b, torch.Tensor)):
        try:
            return type(a) is type(b) and bool(a == b)
        except Exception:  # a value without a truth: not known to be the same
            return False
    return a.shape == b.shape and a.dtype == b.dtype and (
        torch.equal(a, b) or (a.is_floating_point() and torch.allclose(a, b, rtol=0.0, atol=0.0, equal_nan=True)))


def _example_tensors(args):
    """``[(path, value)]``: the values of ``args`` (a tuple) that the TorchScript exporter makes graph inputs, in its
    order (tuples and lists flattened; tensors and Python numbers, which it casts; ``None`` left out), each with its
    path of indices in ``args``; ``None`` where ``args`` holds a dict (keyword arguments: their order is the
    exporter's) or another container."""
    import torch

    found = []

    def walk(value, path):
        if isinstance(value, (torch.Tensor, bool, int, float)):
            found.append((path, value))
            return True
        if type(value) in (tuple, list):  # a namedtuple or a dict: left to the exporter's own reading
            return all(walk(item, (*path, index)) for index, item in enumerate(value))
        return value is None

    return found if walk(args, ()) else None


def _replaced(args, path, value):
    """``args`` (nested tuples and lists) with ``value`` at ``path``."""
    if not path:
        return value
    items = list(args)
    items[path[0]] = _replaced(args[path[0]], path[1:], value)
    return type(args)(items)


def _positions(proto, input_names):
    """Which example tensor (of :func:`_example_tensors`) each graph input is: the caller's input_names in order, else
    the exporter's own names end with it ("onnx::Add_2"; a name of the model's, such as a submodule's ``ids_0``, says
    nothing); an input nothing reads is left out of the model."""
    inputs = [value.name for value in fed_inputs(proto.graph)]
    return {name: index for index, name in enumerate(input_names or [])} or {
        name: int(found[1]) for name in inputs if (found := re.fullmatch(r"\w+::\w+_(\d+)", name))}


def _examples(model, args, proto, input_names):
    """``(args, tensors, positions)`` for the checks that compare an export with eager PyTorch: ``args`` as a tuple, its
    values that are graph inputs (:func:`_example_tensors`) and each graph input's place among them (:func:`_positions`);
    ``None`` where nothing can be compared (no module, keyword arguments)."""
    import torch

    args = args if isinstance(args, tuple) else (args,)
    tensors = _example_tensors(args)
    if not isinstance(model, torch.nn.Module) or tensors is None:
        return None
    return args, tensors, _positions(proto, input_names)


def _dropped(removed):
    """How the TorchScript exporter dropped a write: its warning's words (``removed``, the first), or none."""
    return f"its warning: {removed[0]}" if removed else "without a word"


def _refuse_a_dropped_write(model, args, proto, through, removed, input_names=None):
    """Refuses a model whose output hands a graph input on unchanged (``through``: {output: input}) where eager PyTorch,
    on the example inputs, gives something else: the TorchScript exporter dropped a write into that input or into a copy
    of it (``x.narrow(...).copy_(y)``, ``x.diagonal().copy_(y)``, ``x.view(-1)[i] = v``), saying so in a warning
    (``removed``: its words, which it also says of writes it keeps) or, into a view of a graph input, without a word.
    Such a model passes ``check``, whose reference runs the model as written. Only those outputs are compared, exactly
    (the model hands the input on exactly); where eager PyTorch cannot run, nothing is said."""
    import torch

    examples = _examples(model, args, proto, input_names)
    if examples is None:
        return
    args, tensors, positions = examples
    outputs = [value.name for value in proto.graph.output]
    if any(positions.get(name, len(tensors)) >= len(tensors) for name in through.values()):
        return
    eager = _eager(model, args)
    if eager is None or len(eager) != len(outputs):
        return
    for output, value in zip(outputs, eager):
        given = tensors[positions[through[output]]][1] if output in through else None
        if isinstance(given, torch.Tensor) and isinstance(value, torch.Tensor) and not _same(value, given):
            raise ValueError(f"trt_scatter.torch.export: PyTorch's TorchScript exporter dropped a write ({_dropped(removed)}): output {output!r} of the "
                             f"model hands input {through[output]!r} on unchanged, where eager PyTorch gives other values: export with "
                             "dynamo=True, which keeps a write into a view (narrow, t(), view(-1)), or assign at the coordinates, which "
                             "both exporters keep (x[i, i] = y for a diagonal, i = torch.arange(n))")


def _refuse_a_lost_input(model, args, proto, input_names=None):
    """Refuses a model that lost an input eager PyTorch's outputs depend on: the TorchScript exporter dropped what read
    it, without a word, a write into a view before more computation (``y.narrow(1, 0, 2).index_add_(0, index, v)`` then
    a ``Linear``) or a value it traced as a constant (``int(lengths.max())``, which its TracerWarning names). An input
    that the model does not read is left out of it too, so the outputs decide: eager PyTorch runs on the example
    inputs, twice (outputs that vary from run to run decide nothing), then with the lost input's values moved (rolled
    by one place, all its first, reversed, plus one: indices stay in range in the first three) until its outputs
    change, which means the model reads it."""
    import torch

    examples, names, fed = _examples(model, args, proto, input_names), list(input_names or []), fed_inputs(proto.graph)
    if examples is None or any(value.name not in examples[2] for value in fed):
        return  # keyword arguments, or an input the names do not place: which example is lost is not known
    args, tensors, positions = examples
    kept = {positions[value.name] for value in fed}
    lost = [index for index, (_, value) in enumerate(tensors)
            if index not in kept and isinstance(value, torch.Tensor) and (index < len(names) or not names)]
    if not lost:
        return
    eager = _eager(model, args)
    if eager is None or (again := _eager(model, args)) is None or not all(map(_same, eager, again)):
        return
    for index in lost:
        path, given = tensors[index]
        flat = given.reshape(-1)
        moved = [flat.roll(1).reshape(given.shape), flat[:1].expand(given.shape), given.flip(-1)] if given.numel() > 1 and given.dim() else []
        moved.append(~given if given.dtype == torch.bool else given + 1)
        for changed in moved:
            other = _eager(model, _replaced(args, path, changed))
            if other is not None and not all(map(_same, eager, other)):
                break
        else:
            continue
        name = repr(names[index]) if index < len(names) else f"number {index} (of the example's inputs, None left out)"
        raise ValueError(f"trt_scatter.torch.export: the input {name} is not in the model PyTorch's TorchScript exporter wrote, and eager "
                         "PyTorch's outputs depend on it: the exporter dropped what reads it (a write into a view: narrow, t(), view(-1); "
                         "or a value it traced as a constant, as int(x.max()), which its TracerWarning names): export with dynamo=True")


def mark_inplace(model: onnx.ModelProto) -> list[str]:
    """Sets ``inplace=1`` on the ``trt_scatter`` nodes of ``model`` (in place) whose data is a graph input
    that nothing else reads but for its shape, that is no graph output and that no initializer fills (a constant);
    returns those nodes' names.

    Shape reads include nodes whose results only Shape nodes read (the TorchScript exporter slices
    the cache to broadcast the new tokens to the slice's shape)."""
    from onnx import helper

    graph = model.graph
    readers = value_readers(graph)
    written = []
    for name in (graph_input.name for graph_input in fed_inputs(graph)):  # an input an initializer fills is a constant
        nodes = readers.get(name, [])
        if len(nodes) == 1 and is_trt_scatter(nodes[0]) and nodes[0].input[0] == name and overwrite_conflict(graph, nodes[0], readers) is None:
            node = nodes[0]
            kept = [attribute for attribute in node.attribute if attribute.name != "inplace"]
            del node.attribute[:]
            node.attribute.extend(kept + [helper.make_attribute("inplace", 1)])
            written.append(node.name or node.output[0])
    return written


def _symbolics_registered():
    from trt_scatter.torch import torchscript

    return bool(torchscript._stock)
