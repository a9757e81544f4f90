"""What every ``trt-scatter`` subcommand shares: one line on stderr for every error, and quiet TensorRT.

The standard: a command that cannot do what it was asked prints ONE line on stderr, ``trt-scatter
<command>: error: <what, naming the input and the rule>``, and nothing else there (no traceback,
no usage text, no TensorRT or polygraphy log lines), and exits 2 for a bad argument or model, 1
when TensorRT itself fails on a model that passed every check. TensorRT's own reason is then in
that line. ``-v`` (or ``TRT_SCATTER_VERBOSE=1``) shows the logs as they come.
"""

import argparse
import contextlib
import ctypes
import io
import os
import re
import sys
import tempfile

from trt_scatter.log import first_line

BAD_INPUT = 2
FAILED = 1

# TensorRT's ONNX parser warns of this for a trt_scatter node without ``inplace``; the plugin's
# default (0) is then exactly what the model means, so it says nothing the user must act on.
_HARMLESS = ("Attribute inplace not found in plugin node",)


class CliError(Exception):
    """Ends a command with its message as the one line on stderr, and ``exit_code``."""

    def __init__(self, message, exit_code=BAD_INPUT):
        self.exit_code = exit_code
        super().__init__(message)


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (``prog: error: message (see prog --help)``), exit 2."""

    def error(self, message):
        self.exit(BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def help_text(docstring):
    """A module docstring as ``--help`` shows it: without reStructuredText's ``literal`` and :role:`x` markup."""
    return re.sub(r":\w+:`([^`]*)`", r"\1", docstring).replace("``", "")


class TensorRTOutput:
    """What TensorRT and polygraphy printed while :func:`quiet_tensorrt` held their output."""

    def __init__(self):
        self.python = io.StringIO()  # polygraphy's log and Python's logging (sys.stdout/sys.stderr)
        self.native = b""  # TensorRT's C++ side writes to file descriptors 1 and 2 directly

    def lines(self):
        text = self.python.getvalue() + self.native.decode(errors="replace")
        return [line for line in text.splitlines() if line.strip()]

    def reason(self, err):
        """TensorRT's own words for a failure: its last error line, else the exception's first line."""
        for line in reversed(self.lines()):
            for prefix in ("[E]", "[ERROR]"):  # polygraphy's TensorRT log; the bindings' std::cerr
                if line.startswith(prefix):
                    return line[len(prefix) :].strip()
        return first_line(err)

    def replay_warnings(self):
        """Prints what TensorRT said on a build that worked (stdout), less the harmless lines."""
        for line in self.lines():
            if not any(text in line for text in _HARMLESS):
                print(line)


@contextlib.contextmanager
def quiet_tensorrt(show=False):
    """Holds what TensorRT, its bindings, polygraphy and Python logging print during the block
    (Python's streams and file descriptors 1 and 2), unless ``show``."""
    output = TensorRTOutput()
    if show:
        yield output
        return
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    saved = [os.dup(1), os.dup(2)]
    try:
        with tempfile.TemporaryFile() as sink:
            os.dup2(sink.fileno(), 1)
            os.dup2(sink.fileno(), 2)
            try:
                with contextlib.redirect_stdout(output.python), contextlib.redirect_stderr(output.python):
                    yield output
            finally:
                _flush_c_streams()
                os.dup2(saved[0], 1)
                os.dup2(saved[1], 2)
                sink.seek(0)
                output.native = sink.read()
    finally:
        for fd in saved:
            os.close(fd)


def _flush_c_streams():
    """fflush(NULL): C and C++ (std::cout is synchronized with stdio) output still buffered goes out now."""
    try:
        ctypes.CDLL(None).fflush(None)
    except (OSError, AttributeError):
        pass


def check_output_path(path, what="output"):
    """Refuses, before any work, an output path that is a directory or cannot be written."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise CliError(f"{what} {path!r} is a directory: give a file path")
    parent = os.path.dirname(os.path.abspath(path))
    existing = parent
    while not os.path.exists(existing):  # the folders that would be made: the nearest existing one decides
        existing = os.path.dirname(existing)
    if not os.path.isdir(existing):
        raise CliError(f"{what} {path!r} cannot be written: {existing!r} is not a directory")
    if os.path.exists(path) and not os.access(path, os.W_OK):
        raise CliError(f"{what} {path!r} cannot be written: permission denied")
    if not os.path.exists(path) and not os.access(existing, os.W_OK | os.X_OK):
        raise CliError(f"{what} {path!r} cannot be written: no permission to write in {existing!r}")


def write_output(path, data, what="output"):
    """Writes ``data`` to ``path`` (making its folder), as one CliError line if that fails."""
    try:
        os.makedirs(os.path.dirname(os.path.abspath(path)), exist_ok=True)
        with open(path, "wb") as f:
            f.write(data)
    except OSError as err:
        raise CliError(f"cannot write {what} {os.fspath(path)!r}: {err.strerror or err}") from None


def load_model(path, external_data=False):
    """The ONNX model at ``path``, validated (:func:`trt_scatter.passes.validate.validate`); CliError otherwise.

    ``external_data``: with every tensor the model keeps in external files read (from the model's
    folder), for a command that runs the model; validation alone reads only integer constants.
    """
    from trt_scatter.passes import validate

    try:
        return validate.validate(validate.load_model(path, external_data=external_data))
    except validate.ModelError as err:
        raise CliError(str(err)) from None


def load_model_to_rewrite(path):
    """For a command that writes a model of its own (``lower``, ``rewrite``): the model at ``path``
    with every tensor read in (from the model's folder), and whether it kept tensors in external
    files, so that :func:`write_model` can keep them so (a model over 2 GiB must). Not validated:
    the command's pass validates it (``lower`` always does; ``rewrite``'s command calls it), once."""
    from trt_scatter.passes import validate

    try:
        model = validate.read_model(path)
        external = bool(validate.external_tensors(model))  # before they are read: index constants too
        validate.read_external_data(model, path)
        return model, external
    except validate.ModelError as err:
        raise CliError(str(err)) from None


def write_model(model, path, external_data=False):
    """Writes ``model`` to ``path`` (making its folder); with ``external_data``, its tensors over 1 KiB go to
    ``<file name>.data`` beside it, as the model it came from kept them. One CliError line if that fails."""
    import onnx

    if not external_data:
        return write_output(path, model.SerializeToString(), "output")
    location = os.path.basename(path) + ".data"
    data = os.path.join(os.path.dirname(os.path.abspath(path)), location)
    try:
        os.makedirs(os.path.dirname(data), exist_ok=True)
        if os.path.isfile(data):  # onnx appends to it: an earlier output's tensors would stay in it
            os.remove(data)
        onnx.save_model(model, path, save_as_external_data=True, all_tensors_to_one_file=True, location=location)
    except Exception as err:  # OSError, or onnx's ValidationError for the data file
        raise CliError(f"cannot write output {os.fspath(path)!r}: {first_line(err)}") from None


def report(command, err):
    """Prints the one error line of ``command`` and returns its exit code."""
    print(f"trt-scatter {command}: error: {first_line(err)}", file=sys.stderr)
    return getattr(err, "exit_code", BAD_INPUT)
