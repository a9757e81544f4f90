"""``trt-scatter lower IN.onnx OUT.onnx``: replace every trt_scatter node by standard ONNX ops.

    trt-scatter lower model.onnx model.lowered.onnx

The output runs in onnxruntime, in TensorRT without trt-scatter's plugins, or in any ONNX runtime
(see :mod:`trt_scatter.passes.lower`). It prints one line saying what it replaced; a model it
cannot lower ends in one line on stderr naming the node, the input and the rule, and exit code 2.
"""

import argparse


def add_parser(subparsers):
    parser = subparsers.add_parser(
        "lower",
        help="replace the model's trt_scatter nodes by their native lowering (standard ONNX ops)",
        description=__doc__,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    parser.add_argument("model", help="ONNX model with SliceScatter/ScatterUpdate nodes of the trt_scatter domain")
    parser.add_argument("output", help="where to write the lowered model")
    parser.set_defaults(func=run)


def run(args):
    import onnx

    from trt_scatter.cli import common
    from trt_scatter.ops import is_trt_scatter
    from trt_scatter.passes.lower import lower
    from trt_scatter.passes.validate import ModelError, external_tensors, read_external_data

    try:
        common.check_output_path(args.output)
        model = common.load_model(args.model)  # validated
        external = bool(external_tensors(model))
        try:
            read_external_data(model, args.model)  # from the model's folder, wherever this runs
            lowered = lower(model)
            onnx.checker.check_model(lowered, full_check=True)
        except (ModelError, onnx.checker.ValidationError) as err:
            raise common.CliError(str(err)) from None
        if external:  # as the model came: its tensors in a file beside it, named after it
            _save_with_external_data(lowered, args.output)
        else:
            common.write_output(args.output, lowered.SerializeToString(), "output")
    except common.CliError as err:
        return common.report("lower", err)
    replaced = sorted({node.op_type for node in model.graph.node if is_trt_scatter(node)})
    count = sum(is_trt_scatter(node) for node in model.graph.node)
    what = f"{count} trt_scatter node(s) ({', '.join(replaced)})" if count else "no trt_scatter node"
    print(f"lowered {what} of {args.model}: {args.output} ({len(lowered.graph.node)} nodes, standard ONNX ops only)")
    return 0


def _save_with_external_data(model, path):
    """Writes ``model`` to ``path`` with its tensors over 1 KiB in ``<file name>.data`` beside it."""
    import os

    import onnx

    from trt_scatter.cli import common

    data = os.path.join(os.path.dirname(os.path.abspath(path)), os.path.basename(path) + ".data")
    try:
        os.makedirs(os.path.dirname(data), exist_ok=True)
        if os.path.isfile(data):  # onnx appends to it: an earlier output's tensors would stay in it
            os.remove(data)
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location=os.path.basename(path) + ".data")
    except Exception as err:  # OSError, or onnx's ValidationError for the data file
        raise common.CliError(f"cannot write output {os.fspath(path)!r}: {common.first_line(err)}") from None
