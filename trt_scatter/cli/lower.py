"""``trt-scatter lower IN.onnx OUT.onnx``: replace every trt_scatter node by standard ONNX ops.

    trt-scatter lower model.onnx model.lowered.onnx

The output runs in onnxruntime, in TensorRT without trt-scatter's plugins, or in any ONNX runtime
(see :mod:`trt_scatter.passes.lower`). It prints one line saying what it replaced; a model it
cannot lower ends in one line on stderr naming the node, the input and the rule, and exit code 2.

The lowered model cannot refuse inputs that break a rule only at run time, as the plugins and the
reference do: ONNX has no assertion op. An index known only at run time that lies past its dimension
(a ScatterUpdate index, a reduction's, a KV-cache position past the cache's end) is clamped into it,
so the write lands on the last slot (the first, below the range). Keep positions in range, and check
such models with the plugins.
"""

from __future__ import annotations

import argparse

from trt_scatter.cli import common
from trt_scatter.log import first_line


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser(
        "lower",
        help="replace the model's trt_scatter nodes by their native lowering (standard ONNX ops)",
        description=common.help_text(__doc__),
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", help="ONNX model with nodes of the trt_scatter domain")
    parser.add_argument("output", type=common.file_path, help="where to write the lowered model")
    parser.set_defaults(func=run)


def run(args: argparse.Namespace) -> int:
    from trt_scatter.model import ModelError
    from trt_scatter.passes.lower import lower

    try:
        common.check_output_path(args.output, reads=[args.model])
        model = common.load_model_to_rewrite(args.model)
        common.check_model_output(args.output, reads=model.files, external_data=model.external)  # its external data files too
        try:
            lowered = lower(model)
        except ModelError as err:
            raise common.CliError(str(err)) from None
        said, external = _summary(args, model, lowered), model.external
        del model  # its weights are not needed again: writing and checking take the lowered model's once more each
        # checked as written, before it takes the output's place: ONNX's checker serializes a model given in memory,
        # which protobuf refuses past 2 GiB, and below it takes the weights again for the bytes, their parse and inference
        common.write_model(lowered, args.output, external_data=external, check=_check)  # tensors kept as the model kept them
    except common.CliError as err:
        return common.report("lower", err)
    print("\n".join(said))
    return 0


def _summary(args, model, lowered):
    """What ``lower`` says it did: the nodes it replaced, what the output holds, and a note on reductions."""
    from trt_scatter.model import all_nodes
    from trt_scatter.ops import DEFAULT_DOMAINS, is_trt_scatter

    replaced = model.trt_scatter_ops()  # the nodes of every graph: subgraphs are lowered too
    count = sum(is_trt_scatter(node) for node in all_nodes(model.proto.graph))
    what = f"{_count(count, 'trt_scatter node')} ({', '.join(replaced)})" if count else "no trt_scatter node"
    nodes = list(all_nodes(lowered.graph))
    others = sorted({(node.domain, node.op_type) for node in nodes if node.domain not in (*DEFAULT_DOMAINS, "ai.onnx.ml")})
    kept = f"no trt_scatter node; of other domains: {', '.join(f'{domain} {op_type}' for domain, op_type in others)}" if others else "standard ONNX ops only"
    lines = [f"lowered {what} of {args.model}: {args.output} ({_count(len(nodes), 'node')}, {kept})"]
    reducing = [node for node in nodes if any(a.name == "reduction" and a.s != b"none" for a in node.attribute)]
    if reducing:  # the reductions lower to ONNX's own scatters with a reduction
        are = "of its nodes are ONNX scatters" if len(reducing) > 1 else "of its nodes is an ONNX scatter"
        lines.append(f"note: {len(reducing)} {are} with a reduction, which TensorRT builds wrong or not at all: "
                     "the lowered model is for onnxruntime and other runtimes; TensorRT builds the original with --plugins")
    return lines


def _check(model):
    """ONNX's full check of the lowered model as written (its path): the lowering keeps every other node, so a failure
    is the rest of the model's."""
    import onnx

    try:
        onnx.checker.check_model(model, full_check=True)
    except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as err:
        raise common.CliError(f"the model does not pass ONNX's checker ({first_line(err)}): only its trt_scatter nodes are lowered, the rest must hold") from None


def _count(number, noun):
    return f"{number} {noun}" + ("" if number == 1 else "s")
