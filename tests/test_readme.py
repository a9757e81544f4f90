"""The README's Python examples run as written."""

import pathlib
import re

README = pathlib.Path(__file__).resolve().parents[1] / "README.md"


def test_python_examples_run():
    blocks = re.findall(r"```python\n(.*?)```", README.read_text(), re.S)
    assert blocks, "the README has Python examples"
    for block in blocks:
        namespace = {}
        exec(compile(block, str(README), "exec"), namespace)
        if "network" in namespace:  # the builder example: one marked output of data's shape
            assert namespace["network"].num_outputs == 1
            assert tuple(namespace["network"].get_output(0).shape) == (-1, 5)


def _regression_commands():
    section = README.read_text().split("## Regression tests on real models", 1)[1].split("\n## ", 1)[0]
    (block,) = re.findall(r"```bash\n(.*?)```", section, re.S)
    return [line for line in block.splitlines() if line.strip()]


def test_regression_commands_run_on_a_plugin_model(tmp_path):
    """Each command of the README's regression section, verbatim, in a folder holding model.onnx: a KV
    cache written by a SliceScatter node at a run-time position (stop = pos + 1 computed by an Add)."""
    import os
    import subprocess
    import sys

    import mixed_models
    import onnx

    from conftest import HAS_GPU

    onnx.save(mixed_models.kv_cache(runtime=True, dynamic=True, project=False).model, str(tmp_path / "model.onnx"))
    env = {**os.environ, "PATH": f"{os.path.dirname(sys.executable)}:{os.environ['PATH']}"}
    commands = _regression_commands()
    assert len(commands) == 8
    for command in commands:
        if "needs a GPU" in command and not HAS_GPU:
            continue  # the engine must run; tested with a GPU only (see the README)
        result = subprocess.run(["bash", "-c", command], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
        output = result.stdout + result.stderr
        expected = (0, 3) if command.startswith("trt-scatter check") and "--allow-engine-not-run" not in command and not HAS_GPU else (0,)
        assert result.returncode in expected and (result.returncode == 3) == (not HAS_GPU and expected == (0, 3)), f"{command}\n{output}"
        if command.startswith("polygraphy run") and "--onnxrt" in command:
            assert "PASSED" in output and "Passed: 1/1 iterations" in output, f"{command}\n{output}"
    assert (tmp_path / "golden.json").exists() and (tmp_path / "model.lowered.onnx").exists()
