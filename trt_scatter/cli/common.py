"""What every ``trt-scatter`` subcommand shares: one line on stderr for every error, and quiet TensorRT.

The standard: a command that cannot do what it was asked prints ONE line on stderr, ``trt-scatter
<command>: error: <what, naming the input and the rule>``, and nothing else there (no traceback,
no usage text, no TensorRT or polygraphy log lines), and exits 2 for a bad argument or model, 1
when TensorRT itself fails on a model that passed every check. TensorRT's own reason is then in
that line. ``trt-scatter build -v`` shows TensorRT's log as it comes; ``TRT_SCATTER_VERBOSE=1`` trt-scatter's own.
"""

from __future__ import annotations

import argparse
import contextlib
import ctypes
import gc
import io
import itertools
import os
import re
import signal
import stat
import sys
import tempfile
from typing import TYPE_CHECKING

from trt_scatter.log import first_line

if TYPE_CHECKING:
    from collections.abc import Callable, Iterable, Iterator, Sequence
    from typing import NoReturn, TypeVar

    import onnx

    from trt_scatter.model import Model

    _T = TypeVar("_T")

BAD_INPUT = 2
FAILED = 1

# TensorRT's warnings that say nothing the user must act on.
_HARMLESS = (
    # a timing cache TensorRT cannot read (or, on a machine without a GPU, any): the build says so in its own warning
    "The timing cache will not be used", "Failed to deserialize timing cache", "falling back to empty timing cache",
    "cudaError 35: CUDA driver version is insufficient",  # TensorRT-RTX looking for a GPU where there is none
)


class CliError(Exception):
    """Ends a command with its message as the one line on stderr, and ``exit_code``."""

    def __init__(self, message: str, exit_code: int = BAD_INPUT) -> None:
        self.exit_code = exit_code
        super().__init__(message)


class OneLineParser(argparse.ArgumentParser):
    """An ``ArgumentParser`` whose errors are one line (``prog: error: message (see prog --help)``), exit 2."""

    def error(self, message: str) -> NoReturn:
        self.exit(BAD_INPUT, f"{self.prog}: error: {message} (see {self.prog} --help)\n")


def help_text(docstring: str) -> str:
    """A module docstring as ``--help`` shows it: without reStructuredText's ``literal`` and :role:`x` markup."""
    return re.sub(r":\w+:`([^`]*)`", r"\1", docstring).replace("``", "")


class TensorRTOutput:
    """What TensorRT and polygraphy printed while :func:`quiet_tensorrt` held their output."""

    def __init__(self) -> None:
        self.python = io.StringIO()  # polygraphy's log and Python's logging (sys.stdout/sys.stderr)
        self.native = b""  # TensorRT's C++ side writes to file descriptors 1 and 2 directly

    def lines(self) -> list[str]:
        text = self.python.getvalue() + self.native.decode(errors="replace")
        return [line for line in text.splitlines() if line.strip()]

    def reason(self, err: BaseException) -> str:
        """TensorRT's own words for a failure: its last error record, else the exception's first line. A record may go on
        over indented lines; where they hold an ``Error is:``, what follows it is the reason (TensorRT-RTX's Myelin
        names the broken shape rule there, after a first line that names only a source file). A note follows where the
        words read as if a trt-scatter plugin were missing (:func:`_foreign_plugin_note`)."""
        lines = self.lines()
        for index in reversed(range(len(lines))):
            prefix = next((prefix for prefix in ("[E]", "[ERROR]") if lines[index].startswith(prefix)), None)  # polygraphy's log; std::cerr
            if prefix is None:
                continue
            first = lines[index][len(prefix) :].strip()
            more = " ".join(line.strip() for line in itertools.takewhile(lambda line: line[:1].isspace(), lines[index + 1 :]))
            reason = more.split("Error is:", 1)[1].strip() if "Error is:" in more else ""
            words = f"{first.split(' ([')[0]}: {reason}" if reason else first
            return words + _foreign_plugin_note(words)
        return first_line(err)

    def replay_warnings(self) -> None:
        """Prints what TensorRT said on a build that worked (stdout), less the harmless lines."""
        for line in self.lines():
            if not any(text in line for text in _HARMLESS):
                print(line)


# the parser's own importer of the op (importNonZero), not its fallback for ops it does not know (a custom domain's)
_FOREIGN_PLUGIN = re.compile(r"operator: (\w+) \(import\1\).* (\w+) plugin creator version \S+ was not found")


def _foreign_plugin_note(words: str) -> str:
    """Where TensorRT's ONNX parser builds one of ONNX's own ops through a plugin its registry lacks (TensorRT-RTX's
    NonZero): a note that the op is not trt-scatter's, so no option of trt-scatter's builds it."""
    from trt_scatter import backend, ops

    match = _FOREIGN_PLUGIN.search(words)
    if match is None or match.group(1) != match.group(2) or match.group(1) in ops.OPS:
        return ""
    this = "TensorRT-RTX" if backend.is_rtx() else "TensorRT"
    return (f" ({match.group(1)} is ONNX's own op, not trt-scatter's: this {this} builds it only with a plugin it does not have, so "
            "the model cannot be built here as it is)")


@contextlib.contextmanager
def quiet_tensorrt(show: bool = False) -> Iterator[TensorRTOutput]:
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


_STOPS = {getattr(signal, name) for name in ("SIGINT", "SIGTERM", "SIGHUP") if hasattr(signal, name)}


def _parent_death_signal():
    """A function the forked child calls to end when its parent does, even by SIGKILL, which leaves the parent no time
    to end it (Linux's PR_SET_PDEATHSIG); ``None`` elsewhere. Made before the fork: the child of a process with
    threads (torch's) must not import or look anything up, as a lock another thread held stays held there."""
    import ctypes

    try:
        prctl = ctypes.CDLL(None, use_errno=True).prctl
    except (OSError, AttributeError):  # no prctl: not Linux
        return None
    return lambda: prctl(1, signal.SIGKILL, 0, 0, 0)  # PR_SET_PDEATHSIG


def isolated(function: Callable[[], _T], what: str) -> _T:
    """``function()`` run in a forked child, its result (or its exception) returned (raised) here: TensorRT's
    own crashes (a segmentation fault in its parser, an abort) end the child, and the command says so in one
    line (``what``: what TensorRT was doing), with exit 1; where a plugin had refused the shapes TensorRT gave it before
    the crash, the line is that refusal, which names the op and the rule, with exit 2 (as without the crash). The child also takes TensorRT's and the plugins'
    state with it (TensorRT-RTX 1.7.1 corrupts the heap of a process that goes on making plugins after a
    parse: scripts/rtx_plugin_heap_bug.py). Where there is no fork, it runs here."""
    import faulthandler
    import pickle

    if not hasattr(os, "fork"):
        return function()
    for stream in (sys.stdout, sys.stderr):
        stream.flush()
    from trt_scatter.plugins.kernels import listen_to_refusals  # imported here: a forked child of a threaded process must not import

    reader, writer = os.pipe()  # a pipe, not a file: the result reaches the parent even where the disk is full
    notes_reader, notes_writer = os.pipe()  # the plugins' refusals as they happen: a crash after one ends the child before its result
    # A stop (Ctrl-C, SIGTERM) waits until the parent can end the child: raised while fork() runs Python's at-fork
    # callbacks, it would be ignored there, and the parent would go on waiting for the child.
    mask = signal.pthread_sigmask(signal.SIG_BLOCK, _STOPS)
    parent, die_with_parent = os.getpid(), _parent_death_signal()
    try:
        pid = os.fork()
    except BaseException:
        signal.pthread_sigmask(signal.SIG_SETMASK, mask)
        for fd in (reader, writer, notes_reader, notes_writer):
            os.close(fd)
        raise
    if pid == 0:  # the child: never returns to the command
        gc.freeze()  # the parent's objects are left out of this process's collections: walking them would copy every page they are on
        try:
            if die_with_parent is not None:
                die_with_parent()
                if os.getppid() != parent:  # the parent died before the prctl: nobody waits for this build
                    os._exit(1)
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            os.close(reader)
            os.close(notes_reader)
            listen_to_refusals(_teller(notes_writer))
            faulthandler.disable()  # a crash here is the parent's one line, not a dump of Python's stacks
            printed = (io.StringIO(), io.StringIO())  # what Python code prints goes back to the parent's streams
            try:
                with contextlib.redirect_stdout(printed[0]), contextlib.redirect_stderr(printed[1]):
                    outcome = (True, function())
            except BaseException as err:  # handed to the parent, which raises it
                outcome = (False, err)
            texts = tuple(stream.getvalue() for stream in printed)
            try:
                payload = pickle.dumps((*outcome, texts))
            except Exception as err:  # an exception that does not pickle: its type and message
                failure = RuntimeError(f"{type(outcome[1]).__name__}: {first_line(outcome[1])}" if not outcome[0] else first_line(err))
                payload = pickle.dumps((False, failure, texts))
            with open(writer, "wb") as channel:
                channel.write(payload)
            for stream in (sys.stdout, sys.stderr):
                stream.flush()
            _flush_c_streams()
        finally:
            os._exit(0)
    os.close(writer)
    os.close(notes_writer)
    with open(reader, "rb") as channel, open(notes_reader, "rb") as notes_channel:  # opened before a stop can arrive: closed however the wait ends
        try:
            signal.pthread_sigmask(signal.SIG_SETMASK, mask)
            payload = channel.read()  # read while the child writes: a pipe holds only 64 KiB
            _, status = os.waitpid(pid, 0)
            notes = [note.decode(errors="replace") for note in notes_channel.read().split(b"\0") if note]  # the child is gone: all it wrote
        except BaseException:  # interrupted (Ctrl-C, SIGTERM): the child must not go on building alone
            with contextlib.suppress(ProcessLookupError, ChildProcessError):
                os.kill(pid, signal.SIGKILL)
                os.waitpid(pid, 0)
            raise
    if os.WIFSIGNALED(status):
        number = os.WTERMSIG(status)
        name = signal.Signals(number).name if number in signal.Signals._value2member_map_ else f"signal {number}"
        if notes:  # what a plugin refused before TensorRT aborted: the rule that ended the build (exit 2, as where TensorRT did not abort)
            raise CliError(f"{notes[-1]} (TensorRT then crashed, {name}, while {what})")
        raise CliError(f"TensorRT crashed ({name}) while {what}", FAILED)
    if not payload:
        ended = f"ended the process (exit status {os.waitstatus_to_exitcode(status)}) while {what}"
        raise CliError(f"{notes[-1]} (TensorRT then {ended})") if notes else CliError(f"TensorRT {ended}", FAILED)
    ok, value, (out, err) = pickle.loads(payload)
    sys.stdout.write(out)
    sys.stderr.write(err)
    if not ok:
        raise value
    return value


def _teller(fd):
    """For a forked child: a listener that writes each refusal of the plugins' shape checks to ``fd`` as it happens (a
    few KiB at most, so the pipe never fills while the parent waits for the child)."""
    room = [16384]

    def tell(message):
        data = message.encode(errors="replace")[: max(0, room[0] - 1)] + b"\0"
        if room[0] > 0:
            room[0] -= len(data)
            os.write(fd, data)

    return tell


def split_shape_word(word: str) -> tuple[str, tuple[int, ...]] | None:
    """A shape flag's ``NAME:[D,...]`` word as ``(name, dims)``, ``None`` where it has another form. The name is all
    before the last ':' (TensorFlow's exports name inputs ``input:0``; spaces in a name are kept); the dims are integers,
    negative ones too (an input whose values set shapes may take them): the flag says what it allows."""
    name, separator, dims = word.rpartition(":")
    if not separator or not name or not re.fullmatch(r"\s*\[\s*(-?[0-9]+\s*(,\s*-?[0-9]+\s*)*)?\]\s*", dims):
        return None
    return name, tuple(int(piece) for piece in dims.strip()[1:-1].split(",") if piece.strip())


def not_an_input(what: str, name: str, inputs: Sequence[str]) -> str:
    """The line for a ``name`` that ``what`` (a flag, a profile) gives and no input of the model has; where the name with
    its spaces trimmed is one, it says so (a name is all before the last ':', spaces too)."""
    near = f" (did you mean {name.strip()!r}? a name's spaces are part of it)" if name.strip() != name and name.strip() in inputs else ""
    return f"{what} names {name!r}, which is not an input of the model{near} (its inputs: {', '.join(inputs)})"


def shape_flag_hint(word: str, flag: str) -> str:
    """Where a shape flag's word is a model (``--max data:[8,5] model.onnx``: the flag takes every word after it), a
    note that says to give the model first; else nothing."""
    if word.endswith(".onnx") or os.path.isfile(word):
        return f" (is it the model? {flag} takes every word after it: give the model first)"
    return ""


_NESTED_PLUGIN_FAILURE = "_wksp with TYPE unspecified"  #: TensorRT-RTX 1.7.1's words for a plugin in an If or Loop body


def build_failure(words: str, model: Model | None, plugins: bool) -> str:
    """Why an engine build failed, TensorRT's ``words`` given: where TensorRT's own layer failed on a standard node that
    a plugin serves in other forms, in words that op's oracle module knows, that node first (:func:`_kept_for_tensorrt`);
    where TensorRT-RTX failed on a model with a ``trt_scatter`` node in an If or Loop body, or (``plugins``) ONNX's own
    node that a plugin serves there, that node first, TensorRT-RTX's words after it (TensorRT-RTX 1.7.1 builds no plugin
    there, and says only that a workspace tensor has no type: the cause where its words say that, and only there)."""
    from trt_scatter import backend
    from trt_scatter.model import nested_nodes
    from trt_scatter.ops import is_trt_scatter
    from trt_scatter.passes.plugins import served

    if model is None:
        return words
    explained = _kept_for_tensorrt(words, model, plugins)
    if explained != words or not backend.is_rtx() or _NESTED_PLUGIN_FAILURE not in words:
        return explained
    found = list(nested_nodes(model.proto.graph, is_trt_scatter))
    if not found and plugins:
        replaced = served(model)
        found = [(node, f"{label}, which a plugin serves,", holder)
                 for node, label, holder in nested_nodes(model.proto.graph, lambda node: bool(node.output) and node.output[0] in replaced)]
    if not found:
        return words
    # the node TensorRT-RTX names (its layer "<subgraph>^<node>"), else the first
    _, label, holder = next((each for each in found if re.search(rf"\^{re.escape(each[0].name or each[0].output[0])}(_wksp|(?![\w.-]))", words)), found[0])
    return f"{label} lies in a subgraph of {holder}, where TensorRT-RTX builds no plugin (TensorRT-RTX said: {words})"


def _kept_for_tensorrt(words: str, model: Model, plugins: bool) -> str:
    """TensorRT's ``words`` for a build that failed on its own layer for a standard node that a plugin serves in other
    forms, where that op's oracle module knows them (``tensorrt_failure``): the nodes TensorRT kept named first, then
    why, then TensorRT's words."""
    from trt_scatter import oracle, ops
    from trt_scatter.model import indexed_nodes, node_label
    from trt_scatter.passes.plugins import served

    replaced = served(model) if plugins else {}
    for op in ops.OPS.values():
        why = getattr(oracle.module(op), "tensorrt_failure", lambda _: None)(words) if op.serves else None
        kept = [node_label(node, index) for index, node in indexed_nodes(model.proto.graph) if node.op_type == op.serves and next(iter(node.output), None) not in replaced] if why else []
        if kept:
            return f"{', '.join(kept)}: {why} (TensorRT said: {words})"
    return words


def _path_of(kind: str) -> Callable[[str], str]:
    """An argparse ``type`` for a flag or argument that names a ``kind`` (file, folder): an empty word is refused, where
    it was taken for no value (the default used instead) or for the current folder."""

    def path(word: str) -> str:
        if not word:
            raise argparse.ArgumentTypeError(f"an empty path: give a {kind} path")
        return word

    return path


file_path, folder_path = _path_of("file"), _path_of("folder")


def check_output_path(path: str | os.PathLike, what: str = "output", reads: Iterable[str | os.PathLike] = ()) -> None:
    """Refuses, before any work, an output path that is a directory, cannot be written, or is one of the files
    the command reads (``reads``: the model, its external data, loaded inputs...; the same file under any name):
    writing it would destroy an input."""
    path = os.fspath(path)
    if os.path.isdir(path):
        raise CliError(f"{what} {path!r} is a directory: give a file path")
    if path.endswith(("/", os.sep)):  # a name ending in a separator means a folder, even a missing one
        raise CliError(f"{what} {path!r} names a folder (it ends in {path[-1]!r}): give a file path")
    for read in reads:
        if _same_file(path, read):
            same = "a file" if os.fspath(read) == path else f"{os.fspath(read)!r}, a file"
            raise CliError(f"{what} {path!r} is {same} this command reads: write it elsewhere")
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


def check_distinct_outputs(outputs: dict[str, str | os.PathLike | None]) -> None:
    """Refuses two outputs (``{flag: path}``) that are one file: the second would overwrite the first."""
    given = [(flag, path) for flag, path in outputs.items() if path]
    for position, (flag, path) in enumerate(given):
        for other, other_path in given[position + 1 :]:
            if _same_file(path, other_path):
                raise CliError(f"{flag} and {other} name one file, {os.fspath(path)!r}: give each its own")


def _same_file(a, b):
    """Whether paths ``a`` and ``b`` are one file (links and relative paths resolved; neither need exist)."""
    try:
        if os.path.exists(a) and os.path.exists(b):
            return os.path.samefile(a, b)
    except OSError:
        pass
    return os.path.realpath(os.fspath(a)) == os.path.realpath(os.fspath(b))


@contextlib.contextmanager
def replacing(path: str | os.PathLike, what: str = "output") -> Iterator[str]:
    """A temporary path in ``path``'s folder (made if needed) to write to; when the block ends without an
    error it becomes ``path`` at once (``os.replace``): an interrupted or failed write (a full disk) leaves
    ``path`` as it was, never truncated or half written. One CliError line if the write fails.

    As ``open(path, "w")`` would, it writes where a link ``path`` points (a dangling one included), not over the
    link, and the file gets the permissions of the one it replaces (a new one: 0o666 less the umask), not
    the temporary file's 0o600. A device, FIFO or socket (``/dev/null``, ``/dev/stdout``) is written into, as
    ``open(path, "wb")`` would, once the block ends: never replaced by a file."""
    if _is_special(path):
        yield from _written_into(os.fspath(path), what)
        return
    path = os.path.realpath(os.fspath(path))
    folder = os.path.dirname(path)
    with _folder_made(folder, f"cannot write {what} {path!r}"):
        try:
            handle, temporary = tempfile.mkstemp(prefix=f".{os.path.basename(path)}.", suffix=".tmp", dir=folder)
        except OSError as err:
            raise CliError(f"cannot write {what} {path!r}: {err.strerror or err}") from None
        try:
            os.close(handle)
            os.chmod(temporary, _mode_of(path))
            yield temporary
            os.replace(temporary, path)
        except OSError as err:
            raise CliError(f"cannot write {what} {path!r}: {err.strerror or err}") from None
        finally:
            if os.path.exists(temporary):
                os.remove(temporary)


@contextlib.contextmanager
def _folder_made(folder: str, failure: str) -> Iterator[None]:
    """``folder``, made where it is missing (its missing parents too), and removed again where the block fails: a
    failed command leaves no folder it made, and only those it made itself (not one another process made meanwhile).
    One CliError line, led by ``failure``, if it cannot be made."""
    missing, probe = [], os.path.abspath(folder)
    while not os.path.isdir(probe) and probe != os.path.dirname(probe):
        missing.append(probe)
        probe = os.path.dirname(probe)
    made = []
    try:
        for path in reversed(missing):
            try:
                os.mkdir(path)
                made.append(path)
            except FileExistsError:
                if not os.path.isdir(path):
                    raise
    except OSError as err:
        _remove_empty(made)
        raise CliError(f"{failure}: {err.strerror or err}") from None
    try:
        yield
    except BaseException:
        _remove_empty(made)
        raise


def _remove_empty(folders):
    for path in reversed(folders):
        with contextlib.suppress(OSError):  # one that something else wrote into meanwhile stays
            os.rmdir(path)


def _is_special(path):
    """True where ``path`` is (or links to) something other than a file or a folder: a device, a FIFO, a socket."""
    try:
        mode = os.stat(path).st_mode
    except OSError:
        return False
    return not stat.S_ISREG(mode) and not stat.S_ISDIR(mode)


def _written_into(path, what):
    """:func:`replacing` for a device, FIFO or socket: the block writes a temporary file, whose bytes then go to ``path``."""
    import shutil

    handle, temporary = tempfile.mkstemp(prefix="trt-scatter-", suffix=".tmp")
    os.close(handle)
    try:
        yield temporary
        with open(temporary, "rb") as source, open(path, "wb") as target:
            shutil.copyfileobj(source, target)
    except OSError as err:
        raise CliError(f"cannot write {what} {path!r}: {err.strerror or err}") from None
    finally:
        os.remove(temporary)


def _mode_of(path):
    """The permission bits a file written at ``path`` gets: those of the file there, else 0o666 less the umask."""
    try:
        return stat.S_IMODE(os.stat(path).st_mode)
    except OSError:
        umask = os.umask(0)
        os.umask(umask)
        return 0o666 & ~umask


def write_output(path: str | os.PathLike, data: bytes, what: str = "output") -> None:
    """Writes ``data`` to ``path`` (making its folder) whole or not at all (:func:`replacing`), as one CliError line if that fails."""
    with replacing(path, what) as temporary:
        _write_synced(temporary, data)


def _write_synced(path: str, data: bytes) -> None:
    """``data`` in the file ``path``, on the disk when it returns."""
    with open(path, "wb") as f:
        f.write(data)
        f.flush()
        os.fsync(f.fileno())


def load_model(path: str | os.PathLike, weights: bool = False) -> Model:
    """The ONNX model at ``path`` read once (a :class:`trt_scatter.model.Model`) and validated
    (:func:`trt_scatter.passes.validate.validate`); CliError otherwise.

    ``weights``: with every tensor the model keeps in external files read (from the model's folder),
    for a command that runs the model; validation alone reads only integer constants.
    """
    from trt_scatter.model import Model, ModelError
    from trt_scatter.passes.validate import validate

    try:
        model = Model.read(path, weights=weights)
        validate(model)
        return model
    except ModelError as err:
        raise CliError(str(err)) from None


def check_model_file(path: str | os.PathLike) -> None:
    """:func:`trt_scatter.model.files.check_model_file`, before a command's outputs are checked; CliError otherwise."""
    from trt_scatter.model import ModelError, files

    try:
        files.check_model_file(path)
    except ModelError as err:
        raise CliError(str(err)) from None


def load_model_to_rewrite(path: str | os.PathLike) -> Model:
    """For a command that writes a model of its own (``lower``, ``rewrite``): the model at ``path``
    (a :class:`trt_scatter.model.Model`) with every tensor read in (from the model's folder); its
    ``external`` says whether it kept tensors in external files, so that :func:`write_model` can keep
    them so (a model over 2 GiB must). Not validated: the command's pass validates it (``lower``
    always does; ``rewrite``'s command calls it), once."""
    from trt_scatter.model import Model, ModelError

    try:
        return Model.read(path, weights=True)
    except ModelError as err:
        raise CliError(str(err)) from None


def data_file(path: str | os.PathLike) -> str:
    """Where :func:`write_model` puts a model's external tensors: ``<file name>.data`` beside the file (a link resolved)."""
    return os.path.realpath(os.fspath(path)) + ".data"


def check_model_output(path: str | os.PathLike, reads: Iterable[str | os.PathLike], external_data: bool) -> None:
    """:func:`check_output_path` for a model output and, where its tensors go to an external file, for that file too
    (the input's own data file may bear that name)."""
    check_output_path(path, reads=reads)
    if not external_data:
        return
    target = os.path.realpath(os.fspath(path))
    if os.path.dirname(target) != os.path.realpath(os.path.dirname(os.path.abspath(os.fspath(path)))):
        raise CliError(f"output {os.fspath(path)!r} is the file {target!r}, in another folder (through a link), and a model finds its .data "
                       "file in the folder it is read from: give that path")
    data = data_file(path)
    if any(_same_file(data, read) for read in reads):
        raise CliError(f"output {os.fspath(path)!r} keeps its tensors in {data!r}, which this command reads: write it elsewhere")
    check_output_path(data, what="output data file")


def write_model(model: onnx.ModelProto, path: str | os.PathLike, external_data: bool = False,
                check: Callable[[str], None] | None = None) -> None:
    """Writes ``model`` to ``path`` (making its folder) whole or not at all; with ``external_data``, its tensors over
    1 KiB go to ``<file name>.data`` beside it, as the model it came from kept them: both files are written in a
    temporary folder beside them and then moved into place. One CliError line if that fails. ``check``: called with
    the written model's path before it takes ``path``'s place, so that a model it refuses leaves ``path`` as it was."""
    if not external_data:
        with replacing(path, "output") as temporary:
            _write_synced(temporary, model.SerializeToString())  # its bytes go before the check reads the file
            if check is not None:
                check(temporary)
        return
    if _is_special(path):
        raise CliError(f"cannot write output {os.fspath(path)!r}: its tensors go to a .data file beside the model, and it is "
                       "not a file (a device, FIFO or socket)")
    path = os.path.realpath(os.fspath(path))  # where a link points, as replacing() writes
    folder, name = os.path.split(path)
    location = os.path.basename(data_file(path))
    try:
        with _folder_made(folder, f"cannot write output {path!r}"), tempfile.TemporaryDirectory(prefix=f".{name}.", dir=folder) as staging:
            _save_with_external_data(model, staging, name, location)
            if check is not None:
                check(os.path.join(staging, name))
            _move_pair(staging, folder, name, location)
    except CliError:  # the check's
        raise
    except Exception as err:  # OSError (its reason: the file it names is a staged one), or onnx's ValidationError for the data file
        raise CliError(f"cannot write output {path!r}: {getattr(err, 'strerror', None) or first_line(err)}") from None


def _move_pair(staging, folder, name, location):
    """Moves the staged model ``name`` and its data file ``location`` (where there is one: none where every tensor is
    under 1 KiB) from ``staging`` into ``folder``, the data file first, under a lock on ``folder`` where one can be
    taken, so that two commands writing one output do not leave one's model with the other's data; where the model's
    move fails, the data file it replaced comes back."""
    moves = [(os.path.join(staging, staged), os.path.join(folder, staged)) for staged in (location, name) if os.path.exists(os.path.join(staging, staged))]
    for staged, final in moves:
        os.chmod(staged, _mode_of(final))  # as replacing() does: not onnx's 0o600
    with _locked(folder):
        kept = None  # the old data file, kept until the model is in place
        if len(moves) == 2 and os.path.lexists(moves[0][1]):
            kept = os.path.join(staging, "replaced")
            try:
                os.link(moves[0][1], kept, follow_symlinks=False)  # the old file stays in place meanwhile
            except OSError:  # a file system without hard links: moved aside instead
                os.replace(moves[0][1], kept)
        done = []
        try:
            for staged, final in moves:
                os.replace(staged, final)
                done.append(final)
        except BaseException:
            if len(moves) == 2 and len(done) < 2:  # the model did not move: the old data file back (or none, as before)
                if kept is not None:
                    os.replace(kept, moves[0][1])
                elif done:
                    os.remove(done[0])
            raise


@contextlib.contextmanager
def _locked(folder: str) -> Iterator[None]:
    """An exclusive lock on ``folder`` for the block where one can be taken (a folder it may not read, a file system
    whose locks want a file open for writing: the block runs without it)."""
    import fcntl

    try:
        handle = os.open(folder, os.O_RDONLY)
    except OSError:
        yield
        return
    try:
        with contextlib.suppress(OSError):
            fcntl.flock(handle, fcntl.LOCK_EX)
        yield
    finally:
        os.close(handle)  # the lock goes with it


def _save_with_external_data(model, folder, name, location):
    """``onnx.save_model`` of ``model`` to ``folder/name`` with its tensors in ``folder/location``. onnx refuses a
    location that exists relative to the working directory, not to the model: it saves from inside ``folder`` (new
    and empty), so that no file elsewhere blocks it."""
    import onnx

    here = os.getcwd()
    os.chdir(folder)
    try:
        onnx.save_model(model, name, save_as_external_data=True, all_tensors_to_one_file=True, location=location)
    finally:
        os.chdir(here)


def report(command: str, err: BaseException) -> int:
    """Prints the one error line of ``command`` and returns its exit code."""
    print(f"trt-scatter {command}: error: {first_line(err)}", file=sys.stderr)
    return getattr(err, "exit_code", BAD_INPUT)
