"""Runs kernel properties on the AddressSanitizer build of the shim, with exact-size buffers, each
case through both kernel entry points (the plugins' struct one and the AOT one).

Started by the tests in a subprocess with ``LD_PRELOAD=<libasan.so> ASAN_OPTIONS=detect_leaks=0``
(the sanitizer must be loaded before Python). Exits 0 when every case matched the oracle and no
access left its buffer; AddressSanitizer aborts the process with a report otherwise.

    python asan_main.py LIBRARY {slice_scatter,scatter_update,tensor_scatter,scatter_elements_reduce,scatter_nd_reduce,overrun} [EXAMPLES]
"""

import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

import numpy as np  # noqa: E402
from hypothesis import HealthCheck, given, settings  # noqa: E402

from kernel_shim import cases, host  # noqa: E402


def main(library, what, examples=40):
    lib = host.load(library)
    config = settings(max_examples=examples, deadline=None, derandomize=True, database=None,
                      suppress_health_check=list(HealthCheck))
    if what == "overrun":
        # Proof that the check can fail: a test-only kernel that writes one byte past `output`.
        import ctypes

        memory = host.Memory(exact=True)
        n = 100
        args = (ctypes.c_void_p * 2)(memory.alloc(n), memory.put(np.arange(n, dtype=np.uint8)))
        packed = (ctypes.c_char * 24)()
        ctypes.memmove(packed, args, 16)
        ctypes.c_int64.from_buffer(packed, 16).value = n
        lib.run_overrun(ctypes.addressof(packed), 1, 32)
        print("overrun went unnoticed")
        return 0

    if what in cases.REDUCE_OPS:  # workspace, keys and rows of exact sizes too; the AOT entry takes its own cases
        @config
        @given(case=cases.reduce_cases(what), aot=cases.reduce_cases(what, aot=True))
        def run_reduce(case, aot):
            cases.check_reduce(lib, case, exact=True)
            cases.check_reduce(lib, aot, exact=True)

        run_reduce()
        print(f"{what}: {examples} cases passed under AddressSanitizer through each entry point ({', '.join(host.ENTRIES)})")
        return 0

    strategy, check = {
        "slice_scatter": (cases.slice_scatter_cases, cases.check_slice_scatter),
        "scatter_update": (cases.scatter_update_cases, cases.check_scatter_update),
        "tensor_scatter": (cases.tensor_scatter_cases, cases.check_tensor_scatter),
    }[what]

    @config
    @given(case=strategy(), broken=strategy(broken=True))
    def run(case, broken):
        for entry in host.ENTRIES:  # every case through both entry points
            check(lib, cases.with_entry(case, entry), exact=True)
            check(lib, cases.with_entry(broken, entry), exact=True)

    run()
    print(f"{what}: {examples} valid and {examples} broken cases passed under AddressSanitizer "
          f"through each entry point ({', '.join(host.ENTRIES)})")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1], sys.argv[2], *(int(a) for a in sys.argv[3:])))
