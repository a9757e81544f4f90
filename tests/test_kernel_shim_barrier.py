"""The host shim's barrier, on which the kernels' shared-memory set-up relies (thread 0 fills, __syncthreads, every
thread reads): with it, every thread of every block reads its own block's value in any thread order; a variant
without the barrier, run the same way, reads another block's value, so the test can tell the two apart. And the
values a thread keeps in registers across barriers survive the fibers that run in between."""

import ctypes
import subprocess

import numpy as np
import pytest

from conftest import needs_gxx
from kernel_shim import host

pytestmark = needs_gxx


class SharedBroadcastArgs(ctypes.Structure):
    _fields_ = [("output", ctypes.c_void_p), ("barrier", ctypes.c_int)]


def _broadcast(shim, barrier, grid=6, block=32, shuffle=0):
    output = np.zeros(grid * block, np.uint32)
    shim.shim_shuffle(shuffle)
    try:
        shim.run_shared_broadcast(ctypes.byref(SharedBroadcastArgs(output.ctypes.data, barrier)), grid, block)
    finally:
        shim.shim_shuffle(0)
    return output.reshape(grid, block)


@pytest.mark.parametrize("shuffle", [0, 7, 12345, 99])
def test_every_thread_reads_what_thread_0_wrote_after_the_barrier(shim, shuffle):
    output = _broadcast(shim, barrier=1, shuffle=shuffle)
    assert (output == np.arange(1, 7, dtype=np.uint32)[:, None]).all()


def test_without_the_barrier_threads_run_before_thread_0_read_another_blocks_value(shim):
    output = _broadcast(shim, barrier=0, shuffle=12345)
    assert not (output == np.arange(1, 7, dtype=np.uint32)[:, None]).all()


def test_values_kept_in_registers_across_barriers_survive(tmp_path):
    """tests/kernel_shim/live_registers.cpp built as a program at -O2, where GCC sees the barrier's switch whole (in the
    shared library, calls between its functions go through the PLT): a switch that GCC's register allocation took to
    change only its own registers lost the values a kernel kept in others (every thread's result was wrong)."""
    program = tmp_path / "live_registers"
    subprocess.run(["g++", "-std=c++17", "-O2", f"-I{host.SHIM_DIR}", str(host.SHIM_DIR / "live_registers.cpp"), "-o", str(program)],
                   check=True, capture_output=True)
    result = subprocess.run([str(program)], capture_output=True, text=True, timeout=60)
    assert (result.returncode, result.stdout) == (0, "0 wrong\n"), result.stdout + result.stderr
