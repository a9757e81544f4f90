"""The host shim's barrier, on which the kernels' shared-memory set-up relies (thread 0 fills, __syncthreads, every
thread reads): with it, every thread of every block reads its own block's value in any thread order; a variant
without the barrier, run the same way, reads another block's value, so the test can tell the two apart."""

import ctypes

import numpy as np
import pytest

from conftest import needs_gxx

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
