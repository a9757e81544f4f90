"""What the kernel modules of the two reduction ops share (:mod:`.scatter_elements_reduce`, :mod:`.scatter_nd_reduce`):
the argument struct of ``scatter_reduce.cuh``, the plan of launches that sorts the update rows by target and
reduces them (in the plugin's workspace), the element types, and what the AOT form takes.

The plan, for ``R`` update rows of ``C`` elements into ``T`` target rows (see scatter_reduce.cuh for the phases):

- workspace: keys and row numbers twice (``16 R`` bytes), the digit counts of the chunks (``4 * 256 * ceil(R / chunk)``:
  ``4 R`` to ``16 R``, see :func:`default_chunk`) and the scan's upper levels (``1/SEGMENT`` of that): ``20 R`` to ``33 R``
  bytes, in regions aligned to 256 bytes; nothing for ``R <= 1``.
- launches: 1 (keys) + ``P * (3 + 2 * L)`` (``P = ceil(bits(T) / 8)`` radix passes of count, ``L`` scan levels up
  and down, the top scan, place) + 1 (reduce); e.g. 1M targets, 10M rows: ``P = 3``, ``L = 2``, 23 launches.
- bytes moved: the indices once (``R * k`` index bytes), ``24 R + 2048 R / chunk`` per pass for keys, row numbers and
  counts (``32 R`` at chunks of 256, ``56 R`` at 64), then the
  reduction reads every update (``R * C`` elements) and the target rows' values once and writes them once; plus the
  copy of data into the output unless in place. Work is linear in R per pass and in the updates' bytes.

Everything here is plain arithmetic on ints; importing it needs neither TensorRT nor a GPU.
"""

from __future__ import annotations

import ctypes
import dataclasses
import functools
import math
import struct
from typing import TYPE_CHECKING

from trt_scatter.oracle import reductions as semantics
from trt_scatter.oracle.rules import ScatterInputError

from . import kernels

if TYPE_CHECKING:
    from collections.abc import Callable, Sequence

    from trt_scatter.model.node import OpNode

RADIX_BITS = 8  #: TRT_SCATTER_RADIX_BITS in scatter_reduce.cuh: key bits sorted per pass
#: Keys one thread counts and places, in order (the launches' default ``chunk``): the longest chunk in CHUNKS that
#: still leaves CHUNKS_WANTED chunks, so that the counting and placing threads fill the GPU; the shortest otherwise.
#: Measured on an H200 (bench/results/reduce_phases_h200_2026-11-26.md): 1M index rows sort fastest in chunks of 64
#: (1.67 ms a run vs 2.33 in chunks of 256), 10M in chunks of 256 (11.2 ms vs 12.9 in chunks of 128).
CHUNKS = (256, 128, 64)
CHUNKS_WANTED = 16384
SEGMENT = 256  #: scan entries one thread sums
ALIGN = 256  #: bytes each workspace region is aligned to
WORKSPACE_INPUTS = ("data", "indices")  #: the inputs whose (largest) shapes size the workspace: the keys sorted, the targets
MAX_ROWS = 2**32 - 1  #: keys and row numbers are uint32 in the workspace (and keys reach T, the out-of-range key)
PHASES = {"keys": 0, "count": 1, "scan_up": 2, "scan_top": 3, "scan_down": 4, "place": 5, "reduce": 6}
REDUCTION_CODES = {name: code for code, name in enumerate(semantics.REDUCTIONS)}  #: enum Reduction in scatter_reduce.cuh
#: The element types the kernels combine (NumPy's names) and what their bits are (enum ElementKind): every
#: type TensorRT carries but bool (no arithmetic) and the 1-byte floats (no NumPy type to define them).
ELEMENT_KINDS = {"float32": 2, "float16": 2, "bfloat16": 3, "int8": 0, "uint8": 1, "int32": 0, "int64": 0}
ELEMENT_SIZES = {"float32": 4, "float16": 2, "bfloat16": 2, "int8": 1, "uint8": 1, "int32": 4, "int64": 8}
#: What the AOT form (one launch, no workspace: integer atomics) takes.
AOT_ELEMENT_TYPES = ("int32", "int64")
AOT_REDUCTIONS = ("add", "mul", "min", "max")
AOT_WHY = "the AOT form has one kernel launch and no workspace, so it combines with integer atomics, whose result " \
          "does not depend on their order; floats, mean and include_self=0 need the ordered sort of the Python plugin"


class ScatterReduceArgs(ctypes.Structure):
    """Mirror of ``ScatterReduceArgs`` in scatter_reduce.cuh (launches pack :data:`LAYOUT`, the same bytes)."""

    _fields_ = [(name, ctypes.c_void_p) for name in ("output", "updates", "indices", "error_flag", "keys", "rows",
                                                     "keys_out", "rows_out", "scan", "scan_next")]
    _fields_ += [("data_shape", kernels.Shape), ("indices_shape", kernels.Shape)]
    _fields_ += [(name, ctypes.c_int64) for name in ("num_rows", "columns", "targets", "chunk", "chunks", "segment", "scan_count")]
    _fields_ += [(name, ctypes.c_int32) for name in ("data_rank", "indices_rank", "axis", "phase", "shift", "reduction",
                                                     "include_self", "element_kind")]


LAYOUT = struct.Struct(f"<10Q{2 * kernels.MAX_RANK}q7q8i")


def default_chunk(rows: int) -> int:
    """The sort's split for ``rows`` keys when the launch names none (see :data:`CHUNKS`)."""
    return next((chunk for chunk in CHUNKS if rows // chunk >= CHUNKS_WANTED), CHUNKS[-1])


@dataclasses.dataclass(frozen=True)
class Plan:
    """Where the sort of ``rows`` keys in [0, ``targets``] lives in the workspace, and how many passes it takes."""

    rows: int
    targets: int
    chunk: int | None = None  #: None: default_chunk(rows)
    segment: int = SEGMENT

    def __post_init__(self) -> None:
        if self.chunk is None:
            object.__setattr__(self, "chunk", default_chunk(self.rows))
        for field, least in (("chunk", 1), ("segment", 2)):  # a segment of 1 never sums the counts up to one segment
            if getattr(self, field) < least:
                raise ValueError(f"Plan: {field} must be at least {least} (got {getattr(self, field)})")

    @property
    def passes(self) -> int:
        """Radix passes: none for fewer than two rows, else enough for every key bit (the key T included)."""
        return 0 if self.rows <= 1 else -(-self.targets.bit_length() // RADIX_BITS)

    @property
    def chunks(self) -> int:
        return -(-self.rows // self.chunk)

    @property
    def levels(self) -> list:
        """Entries of each scan level: the digit counts, then their segment sums, up to one segment."""
        counts = [(1 << RADIX_BITS) * self.chunks]
        while counts[-1] > self.segment:
            counts.append(-(-counts[-1] // self.segment))
        return counts

    @property
    def regions(self) -> dict:
        """Byte offset of each workspace region: keys0, rows0, keys1, rows1, then level0 (the counts), level1..."""
        buffers = ("keys0", "rows0", "keys1", "rows1") if self.passes else ("keys0", "rows0") if self.rows else ()
        sizes = dict.fromkeys(buffers, 4 * self.rows)
        for level, count in enumerate(self.levels if self.passes else []):
            sizes[f"level{level}"] = 4 * count
        offsets, offset = {}, 0
        for name, size in sizes.items():
            offsets[name] = offset
            offset += -(-size // ALIGN) * ALIGN
        offsets["end"] = offset
        return offsets

    @property
    def workspace_bytes(self) -> int:
        return self.regions["end"]

    def launches(self, pack: Callable[..., bytes], workspace: int, columns: int) -> list[tuple[bytes, int]]:
        """``[(packed args, work), ...]`` of one run: ``pack(**fields)`` packs the struct with the op's common
        fields and these; ``workspace`` is the device address of the regions."""
        at = {name: workspace + offset for name, offset in self.regions.items()}
        buffers = [(at.get("keys0", 0), at.get("rows0", 0)), (at.get("keys1", 0), at.get("rows1", 0))]
        levels = self.levels
        plan = [(pack(phase=PHASES["keys"], keys=buffers[0][0], rows=buffers[0][1]), self.rows)]
        source = 0
        for number in range(self.passes):
            shift = number * RADIX_BITS
            (keys, rows), (keys_out, rows_out) = buffers[source], buffers[1 - source]
            counts = at["level0"]
            plan.append((pack(phase=PHASES["count"], keys=keys, rows=rows, scan=counts, shift=shift), self.chunks))
            for level in range(len(levels) - 1):
                plan.append((pack(phase=PHASES["scan_up"], scan=at[f"level{level}"], scan_next=at[f"level{level + 1}"],
                                  scan_count=levels[level]), -(-levels[level] // self.segment)))
            plan.append((pack(phase=PHASES["scan_top"], scan=at[f"level{len(levels) - 1}"], scan_count=levels[-1]), 1))
            for level in reversed(range(len(levels) - 1)):
                plan.append((pack(phase=PHASES["scan_down"], scan=at[f"level{level}"], scan_next=at[f"level{level + 1}"],
                                  scan_count=levels[level]), -(-levels[level] // self.segment)))
            plan.append((pack(phase=PHASES["place"], keys=keys, rows=rows, keys_out=keys_out, rows_out=rows_out, scan=counts,
                              shift=shift), self.chunks))
            source = 1 - source
        plan.append((pack(phase=PHASES["reduce"], keys=buffers[source][0], rows=buffers[source][1]), self.rows * columns))
        return plan


def element_type_of(op: str, types: Sequence[str] | None, itemsize: int) -> str:
    """The data's element type from the inputs' types (NumPy's names, data's first), refused by name if the kernels
    cannot combine it."""
    name = types[0] if types else None
    if name not in ELEMENT_KINDS or ELEMENT_SIZES[name] != itemsize:
        raise ScatterInputError(op, "data", f"must be one of {', '.join(ELEMENT_KINDS)} for the reduction kernels", name)
    return name


def check_launch(op: str, *, element_size: int, element_type: str, index_itemsize: int, reduction: str, include_self: int, rows: int, targets: int, workspace: int, chunk: int | None, segment: int) -> None:
    """The host-known arguments of a launch, each refused by name (``chunk`` None: the plan's default split)."""
    kernels.choice(op, "element_size", element_size, kernels.ELEMENT_SIZES, " bytes")
    kernels.choice(op, "index_itemsize", index_itemsize, kernels.INDEX_ITEMSIZES, " bytes")
    if element_type not in ELEMENT_KINDS or ELEMENT_SIZES[element_type] != element_size:
        raise ScatterInputError(op, "element_type", f"must be one of {', '.join(ELEMENT_KINDS)} of element_size bytes", element_type)
    semantics.check_reduction(op, reduction)
    semantics.check_include_self(op, include_self)
    if rows > MAX_ROWS or targets >= MAX_ROWS:
        raise ScatterInputError(op, "indices", "must address fewer than 2**32 - 1 targets with at most 2**32 - 1 update rows "
                                "(the kernels sort them as uint32)", f"{rows} rows into {targets} targets")
    for name, value, lowest in (("chunk", chunk, 1), ("segment", segment, 2)):  # a segment of 1 would never shrink the scan
        if value is None and name == "chunk":  # the plan's default split
            continue
        if isinstance(value, bool) or not isinstance(value, int) or value < lowest:
            raise ScatterInputError(op, name, f"must be an int >= {lowest}", value)
    if Plan(rows, targets, chunk, segment).workspace_bytes and not workspace:
        raise ScatterInputError(op, "workspace", "must be a device address (not null) when there are rows to sort", workspace)


def check_aot(op: str, element_type: str | None, reduction: str, include_self: int) -> None:
    """What the AOT form takes (:data:`AOT_WHY`), each refused in one line."""
    if element_type not in AOT_ELEMENT_TYPES:
        raise ScatterInputError(op, "data", f"must be int32 or int64 for the AOT form ({AOT_WHY})", element_type)
    if reduction not in AOT_REDUCTIONS:
        raise ScatterInputError(op, "reduction", f"must be add, mul, min or max for the AOT form ({AOT_WHY})", repr(reduction))
    if include_self != 1:
        raise ScatterInputError(op, "include_self", f"must be 1 for the AOT form ({AOT_WHY})", include_self)


def check_aot_node(op: str, node: OpNode) -> None:
    """:func:`check_aot` on a model's node (an :class:`~trt_scatter.model.node.OpNode`): its data's type and attributes."""
    dtype, attributes = node.dtype("data"), node.attributes()
    check_aot(op, None if dtype is None else dtype.name, attributes["reduction"], attributes["include_self"])


def run(kernel: str, *, output: int, data: int, indices: int, updates: int, workspace: int, error_flag: int, stream: int, data_shape: Sequence[int], indices_shape: Sequence[int], rows: int, columns: int,
        targets: int, element_size: int, element_type: str, index_itemsize: int, axis: int, reduction: str, include_self: int, chunk: int | None, segment: int) -> None:
    """The plugin's launches of ``kernel`` (the op's key) on ``stream``: the copy of data (unless in place), then the plan."""
    launches = _planned(kernel, output, updates, indices, error_flag, workspace, tuple(data_shape), tuple(indices_shape), rows, columns,
                        targets, element_size, element_type, index_itemsize, axis, reduction, include_self, chunk, segment)
    kernels.launch_sequence(kernel, element_size, index_itemsize, launches, output=output, data=data,
                            data_bytes=math.prod(data_shape) * element_size, error_flag=error_flag, stream=stream)


@functools.lru_cache(maxsize=64)
def _planned(kernel, output, updates, indices, error_flag, workspace, data_shape, indices_shape, rows, columns, targets, element_size,
             element_type, index_itemsize, axis, reduction, include_self, chunk, segment):
    """The checked and packed launches for these arguments, made once: an enqueue with the buffers and shapes of the
    one before (TensorRT's usual case) reuses them instead of packing 20-odd structs again."""
    op = f"launch_{kernel}"
    check_launch(op, element_size=element_size, element_type=element_type, index_itemsize=index_itemsize, reduction=reduction,
                 include_self=include_self, rows=rows, targets=targets, workspace=workspace, chunk=chunk, segment=segment)
    plan = Plan(rows, targets, chunk, segment)  # after the checks, whose refusals name the launch argument; chunk None: the default
    kernels.needed(op, "output", output, math.prod(data_shape))
    kernels.needed(op, "indices", indices, rows)
    kernels.needed(op, "updates", updates, rows * columns)
    pointers = kernels.pointers(op, output=output or 0, updates=updates or 0, indices=indices or 0, error_flag=error_flag or 0,
                                workspace=workspace or 0)
    head, shapes = pointers[:4], (*kernels.padded(data_shape), *kernels.padded(indices_shape))
    sizes = (rows, columns, targets, plan.chunk, plan.chunks, segment)
    kind = (len(data_shape), len(indices_shape), axis)
    codes = (REDUCTION_CODES[reduction], include_self, ELEMENT_KINDS[element_type])

    def pack(phase, keys=0, rows=0, keys_out=0, rows_out=0, scan=0, scan_next=0, scan_count=0, shift=0):
        return LAYOUT.pack(*head, keys, rows, keys_out, rows_out, scan, scan_next, *shapes, *sizes, scan_count, *kind, phase, shift, *codes)

    return tuple(plan.launches(pack, pointers[4], columns)) if rows else ()
