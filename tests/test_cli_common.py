"""trt_scatter.cli.common: the one-line error standard, in-process (tests/test_validate_cli.py runs the commands)."""

import os
import sys

import pytest

from trt_scatter.cli import build, common, main


@pytest.mark.parametrize("verbose", [False, True])
def test_a_bug_of_trt_scatter_is_one_line_unless_verbose(monkeypatch, capsys, verbose):
    def broken(*args):
        raise KeyError("lost")

    monkeypatch.setattr(build, "_build_one", broken)
    monkeypatch.setenv("TRT_SCATTER_VERBOSE", "1" if verbose else "0")
    if verbose:
        with pytest.raises(KeyError):
            main(["build", "slice_scatter"])
        return
    assert main(["build", "slice_scatter"]) == 70  # its own code: 1 says a check failed, 2 the user's mistake
    assert capsys.readouterr().err == (
        "trt-scatter build: internal error: KeyError: 'lost' (TRT_SCATTER_VERBOSE=1 shows the traceback)\n"
    )


def test_interrupt_is_one_line(monkeypatch, capsys):
    def interrupted(*args):
        raise KeyboardInterrupt

    monkeypatch.setattr(build, "_build_one", interrupted)
    assert main(["build", "slice_scatter"]) == 130
    assert capsys.readouterr().err == "trt-scatter build: interrupted\n"


def test_first_line_of_an_empty_message_is_the_type():
    assert common.first_line(ValueError("")) == "ValueError"
    assert common.first_line(ValueError("\n  first\nsecond")) == "first"


def test_the_reason_of_a_record_over_several_lines_is_what_follows_error_is():
    """TensorRT-RTX's Myelin names the broken shape rule on indented lines after "Error is:", its first line only a source file."""
    held = common.TensorRTOutput()
    held.python.write("[E] IBuilder::buildSerializedNetwork: Error Code 1: Myelin ([shape.cpp:175: ~op_constraints_msg_streamer_t] \n"
                      "    Error during shape inference of\n    out : f32[N, 5] = scatter_elements(data, indices, updates), axis=1\n"
                      "    Error is:\n    The extent of dimension i (1) of indices must be less than or equal to the extent of data (5).\n"
                      "[!] Invalid Engine. Please ensure the engine was built correctly\n")
    assert held.reason(RuntimeError("x")) == ("IBuilder::buildSerializedNetwork: Error Code 1: Myelin: The extent of dimension i (1) of indices must "
                                              "be less than or equal to the extent of data (5).")
    empty = common.TensorRTOutput()
    empty.python.write("[E] Error Code 1: Myelin ([shape.cpp:175] \n    Error is:\n")
    assert empty.reason(RuntimeError("x")) == "Error Code 1: Myelin ([shape.cpp:175]"  # nothing after it: the first line, whole


def test_quiet_tensorrt_holds_python_and_native_output_and_finds_the_reason(capfd):
    with common.quiet_tensorrt() as held:
        print("[W] a warning")
        print("[E] polygraphy's error line", file=sys.stderr)
        os.write(2, b"[ERROR] Exception thrown from enqueue() PluginError: SliceScatter: skipped\n")
    assert capfd.readouterr() == ("", "")
    assert held.reason(RuntimeError("x")) == "Exception thrown from enqueue() PluginError: SliceScatter: skipped"
    assert common.TensorRTOutput().reason(RuntimeError("polygraphy's exception")) == "polygraphy's exception"
    held.replay_warnings()
    assert "[W] a warning" in capfd.readouterr().out


def test_write_output_failure_is_one_error(tmp_path):
    (tmp_path / "file").write_text("")
    with pytest.raises(common.CliError, match=r"^cannot write engine '.*file/x.engine': "):
        common.write_output(tmp_path / "file" / "x.engine", b"plan", "engine")
    common.write_output(tmp_path / "new" / "x.engine", b"plan", "engine")
    assert (tmp_path / "new" / "x.engine").read_bytes() == b"plan"


def test_a_fifo_or_a_device_is_written_into_never_replaced(tmp_path):
    """``-o /dev/null``, a FIFO a reader waits on, ``/dev/stdout``: the bytes go to them; the node stays what it was."""
    import stat
    import threading

    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    received = []
    reader = threading.Thread(target=lambda: received.append(fifo.read_bytes()), daemon=True)
    reader.start()
    common.write_output(fifo, b"plan", "engine")
    reader.join(10)
    assert received == [b"plan"] and stat.S_ISFIFO(os.stat(fifo).st_mode)
    common.write_output("/dev/null", b"plan", "engine")
    assert stat.S_ISCHR(os.stat("/dev/null").st_mode) and not list(tmp_path.glob(".*.tmp"))
    if os.path.exists("/dev/full"):
        with pytest.raises(common.CliError, match=r"^cannot write engine '/dev/full': No space left on device$"):
            common.write_output("/dev/full", b"plan", "engine")
        assert stat.S_ISCHR(os.stat("/dev/full").st_mode)
    with pytest.raises(common.CliError, match=r"^cannot write output '/dev/null': its tensors go to a .data file beside"):
        common.write_model(_tiny_model(), "/dev/null", external_data=True)


def _tiny_model():
    from trt_scatter.onnx_models import slice_scatter_model

    return slice_scatter_model((4, 6), start=[0], stop=[6], step=[2], axes=[1])


def test_a_model_with_external_data_and_only_small_tensors_is_written_whole(tmp_path):
    """Tensors under 1 KiB stay in the model: no .data file is written, and none is needed."""
    import onnx

    common.write_model(_tiny_model(), tmp_path / "low.onnx", external_data=True)
    assert onnx.load(tmp_path / "low.onnx") == _tiny_model() and not (tmp_path / "low.onnx.data").exists()


def _weighty_model():
    import numpy as np
    from onnx import TensorProto, helper, numpy_helper

    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [512])],
                              [helper.make_tensor_value_info("y", TensorProto.FLOAT, [512])], [numpy_helper.from_array(np.ones(512, np.float32), "w")])
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])


@pytest.mark.parametrize("hard_links", [True, False], ids=["hard links", "no hard links"])
@pytest.mark.parametrize("failure", [OSError(28, "No space left on device"), KeyboardInterrupt()], ids=["disk full", "interrupted"])
def test_a_model_with_external_data_whose_move_fails_leaves_both_files_as_they_were(tmp_path, monkeypatch, hard_links, failure):
    """The data file and the model take their places in two moves: where the second failed, the first had replaced the
    old data file, beside the old model that reads it (on a file system without hard links, the old data file was lost)."""
    (tmp_path / "low.onnx").write_bytes(b"old model")
    (tmp_path / "low.onnx.data").write_bytes(b"old data")
    replace = os.replace

    def failing(source, target):
        if os.fspath(target) == str(tmp_path / "low.onnx"):
            raise failure
        return replace(source, target)

    def no_link(*args, **kwargs):
        raise OSError(1, "Operation not permitted")

    monkeypatch.setattr(os, "replace", failing)
    if not hard_links:
        monkeypatch.setattr(os, "link", no_link)
    expected = (pytest.raises(common.CliError, match=rf"^cannot write output '{tmp_path / 'low.onnx'}': No space left on device$")
                if isinstance(failure, OSError) else pytest.raises(KeyboardInterrupt))
    with expected:
        common.write_model(_weighty_model(), tmp_path / "low.onnx", external_data=True)
    assert (tmp_path / "low.onnx").read_bytes() == b"old model" and (tmp_path / "low.onnx.data").read_bytes() == b"old data"
    assert sorted(path.name for path in tmp_path.iterdir()) == ["low.onnx", "low.onnx.data"]


def test_a_model_with_external_data_is_written_where_its_folder_cannot_be_locked(tmp_path, monkeypatch):
    """The lock wants the folder open for reading, which a folder of -wx permissions refuses (and NFS may refuse the
    lock itself): the write goes on without it, as it did before there was one."""
    open_ = os.open

    def no_folder(path, flags, *args, **kwargs):
        if os.fspath(path) == str(tmp_path):
            raise PermissionError(13, "Permission denied")
        return open_(path, flags, *args, **kwargs)

    monkeypatch.setattr(os, "open", no_folder)
    common.write_model(_weighty_model(), tmp_path / "low.onnx", external_data=True)
    assert (tmp_path / "low.onnx").exists() and (tmp_path / "low.onnx.data").exists()


def test_a_model_with_external_data_takes_its_place_under_its_folders_lock(tmp_path):
    """Two commands writing one output moved their data files and models in turns, leaving one's model with the other's
    data (8 of 40 runs of two lowers at once): the pair moves while the folder is locked."""
    import fcntl
    import threading
    import time

    lock = os.open(tmp_path, os.O_RDONLY)
    fcntl.flock(lock, fcntl.LOCK_EX)  # another command's moves, under way
    writer = threading.Thread(target=common.write_model, args=(_weighty_model(), tmp_path / "low.onnx"), kwargs={"external_data": True})
    writer.start()
    time.sleep(0.5)
    assert not (tmp_path / "low.onnx").exists() and not (tmp_path / "low.onnx.data").exists()
    fcntl.flock(lock, fcntl.LOCK_UN)
    os.close(lock)
    writer.join(10)
    assert (tmp_path / "low.onnx").exists() and (tmp_path / "low.onnx.data").exists()


@pytest.mark.parametrize("external", [False, True])
def test_a_model_whose_write_fails_leaves_no_folder_it_made(tmp_path, external, monkeypatch):
    """Only folders it made itself: one that another process made meanwhile (here 'new', as this one was about to,
    and was about to write into) stays."""
    def refusing(path):
        raise common.CliError("refused")

    with pytest.raises(common.CliError, match="^refused$"):
        common.write_model(_weighty_model(), tmp_path / "new" / "sub" / "low.onnx", external_data=external, check=refusing)
    assert not list(tmp_path.iterdir())
    mkdir = os.mkdir

    def another_made_it_first(path, *args, **kwargs):
        if os.fspath(path) == str(tmp_path / "new"):
            mkdir(path)
            raise FileExistsError(17, "File exists")
        return mkdir(path, *args, **kwargs)

    monkeypatch.setattr(os, "mkdir", another_made_it_first)
    with pytest.raises(common.CliError, match="^refused$"):
        common.write_model(_weighty_model(), tmp_path / "new" / "sub" / "low.onnx", external_data=external, check=refusing)
    assert (tmp_path / "new").is_dir() and not list((tmp_path / "new").iterdir())


def test_a_model_with_external_data_is_not_written_through_a_link_into_another_folder(tmp_path):
    """The model finds its data file in the folder it is read from: through a link in another folder than its target,
    it would not."""
    (tmp_path / "there").mkdir()
    (tmp_path / "here").mkdir()
    (tmp_path / "here" / "low.onnx").symlink_to(tmp_path / "there" / "target.onnx")
    with pytest.raises(common.CliError, match=r"^output '.*here/low.onnx' is the file '.*there/target.onnx', in another folder \(through a "
                                              r"link\), and a model finds its \.data file in the folder it is read from: give that path$"):
        common.check_model_output(tmp_path / "here" / "low.onnx", reads=[], external_data=True)
    common.check_model_output(tmp_path / "here" / "low.onnx", reads=[], external_data=False)  # one file: found through the link


def test_outputs_without_write_permission_are_refused(tmp_path, monkeypatch):
    """A read-only file, a folder one may not write in. os.access answers as for a user without the
    permission: root (as on this project's machines) has it everywhere, so chmod alone shows nothing."""
    path = tmp_path / "x.engine"
    path.write_bytes(b"")
    monkeypatch.setattr(os, "access", lambda name, mode: False)
    with pytest.raises(common.CliError, match=r"^output '.*x.engine' cannot be written: permission denied$"):
        common.check_output_path(path)
    with pytest.raises(common.CliError, match=rf"^output '.*new.engine' cannot be written: no permission to write in '{tmp_path}'$"):
        common.check_output_path(tmp_path / "new.engine")


def test_top_level_help_says_what_the_tool_does(capsys):
    """`trt-scatter --help` is read by users: no developer note (it showed half of the module docstring)."""
    with pytest.raises(SystemExit) as exited:
        main(["--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "add_parser" not in out and "``" not in out
    assert "Scatter operations for TensorRT" in out


@pytest.mark.parametrize("command", ["build", "check", "lower", "rewrite"])
def test_command_help_has_no_docstring_markup(capsys, command):
    with pytest.raises(SystemExit) as exited:
        main([command, "--help"])
    assert exited.value.code == 0
    out = capsys.readouterr().out
    assert "``" not in out and ":mod:" not in out and f"trt-scatter {command}" in out


def test_version_is_the_installed_distributions(capsys):
    from importlib.metadata import version

    with pytest.raises(SystemExit) as exit_info:
        main(["--version"])
    assert exit_info.value.code == 0
    assert capsys.readouterr().out.strip() == f"trt-scatter {version('trt-scatter')}"


def test_python_dash_m_is_the_command():
    import subprocess
    from importlib.metadata import version

    result = subprocess.run([sys.executable, "-m", "trt_scatter.cli", "--version"], capture_output=True, text=True, timeout=120)
    assert (result.returncode, result.stdout.strip()) == (0, f"trt-scatter {version('trt-scatter')}"), result.stderr
    result = subprocess.run([sys.executable, "-m", "trt_scatter.cli", "rewrite", "missing.onnx", "out.onnx"], capture_output=True, text=True, timeout=120)
    assert result.returncode == 2 and result.stderr.count("\n") == 1 and "cannot read ONNX model" in result.stderr


def test_a_reader_of_stdout_that_went_away_is_no_internal_error(tmp_path):
    """``trt-scatter lower ... | head -0``: stdout's pipe has no reader, so printing the summary raises BrokenPipeError, which
    the command reported as its own bug (internal error, exit 70); it ends as a process killed by SIGPIPE would (141)."""
    import signal
    import subprocess

    import onnx

    path = tmp_path / "tiny.onnx"
    onnx.save(_tiny_model(), path)
    reader, writer = os.pipe()
    os.close(reader)
    try:
        result = subprocess.run([sys.executable, "-m", "trt_scatter.cli", "lower", str(path), str(tmp_path / "out.onnx")], stdout=writer,
                                stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(writer)
    assert result.returncode == 128 + signal.SIGPIPE and "internal error" not in result.stderr, result.stderr


def test_a_fork_that_fails_leaves_no_pipe_open(monkeypatch):
    """isolated() opens its pipes before it forks: a failed fork (or a stop raised there) left all four open."""
    def no_fork():
        raise OSError("fork refused")

    before = len(os.listdir("/proc/self/fd"))
    monkeypatch.setattr(os, "fork", no_fork)
    with pytest.raises(OSError, match="fork refused"):
        common.isolated(lambda: 1, "testing")
    assert len(os.listdir("/proc/self/fd")) == before


@pytest.mark.parametrize("argv, flag", [
    (["build", "MODEL", "--plugins", "-o", ""], "-o/--output"),  # was ignored: the engine went to engines/
    (["build", "MODEL", "--plugins", "--out-dir", ""], "--out-dir"),  # a folder's
    (["build", "MODEL", "--plugins", "--timing-cache", ""], "--timing-cache"),  # was "cannot write --timing-cache '<cwd>': Is a directory"
    (["check", "MODEL", "--save-inputs", ""], "--save-inputs"),  # was ignored
    (["check", "MODEL", "--save-outputs", ""], "--save-outputs"),
    (["check", "MODEL", "--save-engine", ""], "--save-engine"),
    (["check", "MODEL", "--load-inputs", ""], "--load-inputs"),
    (["check", "MODEL", "--load-outputs", ""], "--load-outputs"),
    (["lower", "MODEL", ""], "output"),  # was "cannot write output '<cwd>': Is a directory"
    (["rewrite", "MODEL", ""], "output"),
])
def test_an_empty_path_is_named_for_what_it_is(tmp_path, capsys, argv, flag):
    from trt_scatter.onnx_models import slice_scatter_model

    import onnx

    onnx.save(slice_scatter_model((4, 6), [1], [4], [1], [1]), tmp_path / "m.onnx")
    argv = [str(tmp_path / "m.onnx") if word == "MODEL" else word for word in argv]
    with pytest.raises(SystemExit) as exited:  # argparse's own exit, as for every malformed argument
        main(argv)
    assert exited.value.code == 2
    kind = "folder" if flag == "--out-dir" else "file"
    assert capsys.readouterr().err == f"trt-scatter {argv[0]}: error: argument {flag}: an empty path: give a {kind} path (see trt-scatter {argv[0]} --help)\n"
    assert os.listdir(tmp_path) == ["m.onnx"]


@pytest.mark.parametrize("named, label", [("then^t(custom_layer:custom)", "ScatterUpdate node 't'"), ("then^e_wksp with TYPE unspecified", "ScatterNDReduce node 'e'"),
                                          ("then^else(custom_layer:custom)", "ScatterNDReduce node 'e'")])
def test_a_plugin_refused_in_a_body_is_the_node_tensorrt_rtx_names(monkeypatch, named, label):
    """Two plugin nodes in an If branch, 'e' first: TensorRT-RTX's words name the layer it failed on ("then^t"), and the
    line named the branch's first plugin node whatever they said; where they name none of them, it is the first."""
    import numpy as np
    from onnx import helper, numpy_helper

    import onnx_fixtures as fx
    from trt_scatter import backend
    from trt_scatter.model import Model

    monkeypatch.setattr(backend, "is_rtx", lambda: True)
    nodes = [helper.make_node("ScatterNDReduce", ["data", "at", "rows"], ["o2"], domain="trt_scatter", name="e", reduction="add"),
             helper.make_node("ScatterUpdate", ["o2", "idx", "rows", "axis"], ["o1"], domain="trt_scatter", name="t")]
    branch = helper.make_graph(nodes, "then", [], [fx.info("o1", (4, 3))])
    other = helper.make_graph([helper.make_node("Identity", ["data"], ["kept"])], "else", [], [fx.info("kept", (4, 3))])
    graph = helper.make_graph([helper.make_node("If", ["flag"], ["out"], then_branch=branch, else_branch=other, name="choose")], "g",
                              [fx.info("flag", [], np.bool_), fx.info("data", (4, 3)), fx.info("rows", (1, 3))], [fx.info("out", (4, 3))],
                              [numpy_helper.from_array(np.array([[1]]), "at"), numpy_helper.from_array(np.array([2]), "idx"), numpy_helper.from_array(np.array(0), "axis")])
    model = Model(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 18), helper.make_opsetid("trt_scatter", 1)]))
    words = f"Error Code 1: Myelin (Op $$myelin$${named} has tensor $$myelin$$then^x_wksp with TYPE unspecified and not inferred.)"
    assert common.build_failure(words, model, plugins=False) == f"{label} lies in a subgraph of If node 'choose', where TensorRT-RTX builds no plugin (TensorRT-RTX said: {words})"
