"""``trt-scatter rewrite``: replace the scatter patterns PyTorch's exporters write with trt-scatter's plugin nodes.

    trt-scatter rewrite model.onnx model_trt_scatter.onnx
    trt-scatter rewrite model.onnx out.onnx --report     # what was rewritten, what was left and why

Exit 0 when the output is written (a pattern left as it was is reported, not an error: it computes what PyTorch's
export computes), 2 a mistake in the arguments or the model (one line on stderr naming it).
"""

from __future__ import annotations

import argparse

from trt_scatter.cli import common


def add_parser(subparsers: argparse._SubParsersAction) -> None:
    parser = subparsers.add_parser("rewrite", help="rewrite PyTorch's scatter patterns into plugin nodes", description=common.help_text(__doc__), formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="the ONNX model")
    parser.add_argument("output", type=common.file_path, help="where to save the rewritten model")
    parser.add_argument("--report", action="store_true", help="list what was rewritten and what was left, with the reason")
    parser.set_defaults(func=run)


def _mistake(model):
    """The ModelError validation finds in ``model``, or None."""
    from trt_scatter.model import ModelError
    from trt_scatter.passes.validate import validate

    try:
        validate(model)
    except ModelError as err:
        return err
    return None


def _names_a_node_made(err, original, rewritten):
    """Whether ``err`` (a validation error of ``rewritten``) names a node the rewrite made, which the user's model does
    not have: its mistake is then better told by the user's node, as their model showed it."""
    from trt_scatter.model import all_nodes

    made = {node.name for node in all_nodes(rewritten.graph)} - {node.name for node in all_nodes(original.graph)}
    label = str(err).split(": ", 1)[0]
    return any(name and f"'{name}'" in label for name in made)


def run(args: argparse.Namespace) -> int:
    from trt_scatter.log import warn
    from trt_scatter.model import ModelError
    from trt_scatter.passes.rewrite import extremes_from_zero, rewrite
    from trt_scatter.passes.validate import validate

    try:
        common.check_output_path(args.output, reads=[args.input])
        model = common.load_model_to_rewrite(args.input)
        common.check_model_output(args.output, reads=model.files, external_data=model.external)  # its external data files too
        # What it writes is validated, not what it reads: the rewrite mends some mistakes (PyTorch's reduction before its
        # opset). The model's own mistake is looked for only where it tells the user more: a node the rewrite could not
        # read (an input short), or one it made.
        try:
            rewritten, report = rewrite(model)
        except Exception:
            mistake = _mistake(model)
            if mistake is not None:
                raise common.CliError(str(mistake)) from None
            raise
        try:
            validate(rewritten)  # the model's trt_scatter nodes are kept as they are: they must hold
        except ModelError as err:
            mistake = _mistake(model) if _names_a_node_made(err, model.proto, rewritten) else None
            raise common.CliError(str(mistake or err)) from None
        branches = list(extremes_from_zero(rewritten.graph))  # before the write, which moves its weights to the output's files
        common.write_model(rewritten, args.output, external_data=model.external)  # tensors kept as the model kept them
    except common.CliError as err:
        return common.report("rewrite", err)
    for line in branches:  # what the file computes, kept: said, as trt_scatter.torch.export says it
        warn(f"{line}; export with torch.onnx.export(dynamo=True), which takes the eager branch")
    if args.report:
        for line in report.lines():
            print(line)
    print(f"saved    {args.output} ({len(report.rewritten)} rewritten, {len(report.left)} left)")
    return 0
