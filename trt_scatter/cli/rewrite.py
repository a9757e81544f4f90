"""``trt-scatter rewrite``: replace the scatter patterns PyTorch's exporters write with trt-scatter's plugin nodes.

    trt-scatter rewrite model.onnx model_trt_scatter.onnx
    trt-scatter rewrite model.onnx out.onnx --report     # what was rewritten, what was left and why
"""

import argparse
import os
import sys


def add_parser(subparsers):
    parser = subparsers.add_parser("rewrite", help="rewrite PyTorch's scatter patterns into plugin nodes", description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("input", help="the ONNX model")
    parser.add_argument("output", help="where to save the rewritten model")
    parser.add_argument("--report", action="store_true", help="list what was rewritten and what was left, with the reason")
    parser.set_defaults(func=run)


def run(args):
    import onnx

    from trt_scatter.passes.rewrite import rewrite

    if not os.path.isfile(args.input):
        print(f"trt-scatter rewrite: error: no such ONNX file: {args.input}", file=sys.stderr)
        return 2
    try:
        model = onnx.load(args.input)
    except Exception as err:  # protobuf's DecodeError and friends: not a model
        print(f"trt-scatter rewrite: error: {args.input} is not an ONNX model ({type(err).__name__})", file=sys.stderr)
        return 2
    model, report = rewrite(model)
    try:
        onnx.save(model, args.output)
    except OSError as err:
        print(f"trt-scatter rewrite: error: cannot write {args.output}: {err.strerror}", file=sys.stderr)
        return 2
    if args.report:
        for line in report.lines():
            print(line)
    print(f"saved    {args.output} ({len(report.rewritten)} rewritten, {len(report.left)} left)")
    return 0
