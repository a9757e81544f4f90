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
