"""PyTorch modules whose writes reach ONNX as scatters: the cases of the exporter's and the rewrite's tests,
the fixtures (tests/fixtures/make_torch_exports.py) and bench/bench_torch_export.py.

Each :class:`Case` has a module, three input sets and the dimensions that may vary:

- ``example``: what the model is exported with;
- ``same_shape``: the example's shapes with other values, positions and indices (a static export must
  compute it too: a position or an index baked in at export time shows here);
- ``other_shape``: another batch, length and position (for dynamic exports).

Example shapes avoid sizes 0 and 1 in dynamic dimensions (``torch.export`` specializes those).
"""

import dataclasses
import inspect

import torch


class SliceScatterNegative(torch.nn.Module):
    def forward(self, x, y):
        return torch.slice_scatter(x, y, dim=1, start=-7, end=-1, step=2)


class SliceScatterStrided(torch.nn.Module):
    def forward(self, x, y):
        return torch.slice_scatter(x, y, dim=0, start=1, step=3)


class AssignFirst(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        x[1:3] = y
        return x


class AssignMiddle(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        x[:, 2:5] = y
        return x


class AssignLast(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        x[..., 1::2] = y
        return x


class AssignBlock(torch.nn.Module):
    """A write over two axes at once (strided on the last)."""

    def forward(self, x, y):
        x = x.clone()
        x[:, 1:3, ::2] = y
        return x


class KVCacheBHSD(torch.nn.Module):
    """A KV cache in [batch, heads, sequence, dim] written in place at a tensor position."""

    def forward(self, cache, new, pos):
        cache[:, :, pos : pos + new.shape[2]] = new
        return cache


class KVCacheBSHD(torch.nn.Module):
    """A KV cache in [batch, sequence, heads, dim] written in place at a tensor position."""

    def forward(self, cache, new, pos):
        cache[:, pos : pos + new.shape[1]] = new
        return cache


class IndexCopyFirst(torch.nn.Module):
    def forward(self, x, index, source):
        return x.index_copy(0, index, source)


class IndexCopyLast(torch.nn.Module):
    def forward(self, x, index, source):
        x.index_copy_(2, index, source)
        return x


class SelectScatter(torch.nn.Module):
    def forward(self, x, y):
        return torch.select_scatter(x, y, 1, -1)


class SelectAssign(torch.nn.Module):
    def forward(self, x, y):
        x = x.clone()
        x[:, 2] = y
        return x


class IndexPutRows(torch.nn.Module):
    """Rows at an index tensor (negative indices count from the end, as in PyTorch)."""

    def forward(self, x, index, rows):
        x[index] = rows
        return x


class IndexPutColumns(torch.nn.Module):
    """Columns at an index tensor, from values that broadcast over the rows."""

    def forward(self, x, index, values):
        x = x.clone()
        x[:, index] = values
        return x


class TwoWrites(torch.nn.Module):
    def forward(self, x, a, index, b):
        x = x.clone()
        x[:, 0:2] = a
        return x.index_copy(2, index, b)


class BufferCache(torch.nn.Module):
    """A cache registered as a buffer, written at a tensor position."""

    def __init__(self):
        super().__init__()
        self.register_buffer("cache", torch.zeros(1, 2, 8, 4))

    def forward(self, new, pos):
        self.cache[:, :, pos : pos + new.shape[2]] = new
        return self.cache * 1.0


class KVRowsBHSD(torch.nn.Module):
    """Each sequence of the batch writes its new token at its own position (continuous batching), [B, H, S, D]."""

    def forward(self, cache, new, pos):
        cache[torch.arange(cache.shape[0]), :, pos] = new
        return cache


class KVRowsBSHD(torch.nn.Module):
    """The same in [B, S, H, D]: the two index tensors side by side."""

    def forward(self, cache, new, pos):
        cache[torch.arange(cache.shape[0]), pos] = new
        return cache


class KVRowsIndexPut(torch.nn.Module):
    """``index_put`` with a batch index and a position index, out of place."""

    def forward(self, cache, new, pos):
        return torch.ops.aten.index_put.default(cache, [torch.arange(cache.shape[0]), None, pos], new)


class TensorIndexAssign(torch.nn.Module):
    """Slice assignment at a tensor of indices into a graph input (Hugging Face's sliding-window cache)."""

    def forward(self, x, y):
        x[:, :, torch.tensor([3, 5])] = y
        return x


class MaskedFill(torch.nn.Module):
    """``x[~mask] = -inf``: a masked write of one value (attention masks)."""

    def forward(self, x, mask):
        x = x.clone()
        x[~mask] = float("-inf")
        return x


class MaskedScatter(torch.nn.Module):
    """``masked_scatter``, as LLaVA merges image features into the text embeddings."""

    def forward(self, x, mask, source):
        return x.masked_scatter(mask.unsqueeze(-1).expand_as(x), source)


@dataclasses.dataclass
class Case:
    name: str
    module: type
    example: tuple
    same_shape: tuple
    other_shape: tuple
    dynamic: tuple  #: per input: {axis: dimension name} that may vary, or None
    writes: int = 1  #: trt_scatter nodes the export must have (masked writes: none, a Where)
    values: dict = dataclasses.field(default_factory=dict)  #: integer inputs -> (min, opt, max) values, should they set shapes

    @property
    def input_names(self):
        return list(inspect.signature(self.module.forward).parameters)[1:]

    def feeds(self, which):
        """``{input name: numpy array}`` of the input set ``which`` ("example", "same_shape", "other_shape")."""
        return {name: tensor.numpy() for name, tensor in zip(self.input_names, getattr(self, which))}

    def eager(self, which):
        """The module's output on a copy of the input set (a fresh module: writes to buffers do not carry over)."""
        with torch.no_grad():
            return self.module()(*(t.clone() for t in getattr(self, which))).numpy()


def _float(generator, *shape):
    return torch.randn(*shape, generator=generator)


def _cases():
    g = torch.Generator().manual_seed(0)
    f = lambda *shape: _float(g, *shape)  # noqa: E731
    t = lambda values: torch.tensor(values, dtype=torch.int64)  # noqa: E731
    b = lambda *shape: torch.rand(*shape, generator=g) > 0.5  # noqa: E731
    return [
        Case("slice_scatter_negative", SliceScatterNegative, (f(2, 10), f(2, 3)), (f(2, 10), f(2, 3)), (f(3, 12), f(3, 3)), ({0: "batch", 1: "n"}, {0: "batch"})),
        Case("slice_scatter_strided", SliceScatterStrided, (f(8, 3), f(3, 3)), (f(8, 3), f(3, 3)), (f(11, 5), f(4, 5)), ({0: "n", 1: "c"}, {0: "m", 1: "c"})),
        Case("assign_first", AssignFirst, (f(6, 4), f(2, 4)), (f(6, 4), f(2, 4)), (f(9, 5), f(2, 5)), ({0: "n", 1: "c"}, {1: "c"})),
        Case("assign_middle", AssignMiddle, (f(2, 8, 3), f(2, 3, 3)), (f(2, 8, 3), f(2, 3, 3)), (f(4, 9, 3), f(4, 3, 3)), ({0: "batch", 1: "n"}, {0: "batch"})),
        Case("assign_last", AssignLast, (f(2, 3, 8), f(2, 3, 4)), (f(2, 3, 8), f(2, 3, 4)), (f(3, 3, 10), f(3, 3, 5)), ({0: "batch", 2: "n"}, {0: "batch", 2: "m"})),
        Case("assign_block", AssignBlock, (f(2, 5, 6), f(2, 2, 3)), (f(2, 5, 6), f(2, 2, 3)), (f(3, 6, 9), f(3, 2, 5)), ({0: "batch", 1: "n", 2: "w"}, {0: "batch", 2: "v"})),
        Case("kv_cache_bhsd", KVCacheBHSD, (f(2, 2, 8, 4), f(2, 2, 2, 4), t(3)), (f(2, 2, 8, 4), f(2, 2, 2, 4), t(6)), (f(3, 2, 12, 4), f(3, 2, 3, 4), t(7)),
             ({0: "batch", 2: "seq"}, {0: "batch", 2: "tokens"}, None), values={"pos": (0, 3, 9)}),
        Case("kv_cache_bshd", KVCacheBSHD, (f(2, 8, 2, 4), f(2, 2, 2, 4), t(3)), (f(2, 8, 2, 4), f(2, 2, 2, 4), t(0)), (f(3, 12, 2, 4), f(3, 3, 2, 4), t(7)),
             ({0: "batch", 1: "seq"}, {0: "batch", 1: "tokens"}, None), values={"pos": (0, 3, 9)}),
        Case("index_copy_first", IndexCopyFirst, (f(6, 4), t([4, 1]), f(2, 4)), (f(6, 4), t([0, 5]), f(2, 4)), (f(9, 5), t([0, 8, 3]), f(3, 5)),
             ({0: "n", 1: "c"}, {0: "k"}, {0: "k", 1: "c"})),
        Case("index_copy_last", IndexCopyLast, (f(2, 3, 6), t([5, 0]), f(2, 3, 2)), (f(2, 3, 6), t([2, 3]), f(2, 3, 2)), (f(3, 3, 7), t([1, 6, 2]), f(3, 3, 3)),
             ({0: "batch", 2: "n"}, {0: "k"}, {0: "batch", 2: "k"})),
        Case("select_scatter", SelectScatter, (f(2, 5, 3), f(2, 3)), (f(2, 5, 3), f(2, 3)), (f(4, 7, 3), f(4, 3)), ({0: "batch", 1: "n"}, {0: "batch"})),
        Case("select_assign", SelectAssign, (f(2, 5, 3), f(2, 3)), (f(2, 5, 3), f(2, 3)), (f(4, 7, 3), f(4, 3)), ({0: "batch", 1: "n"}, {0: "batch"})),
        Case("index_put_rows", IndexPutRows, (f(6, 4), t([5, 2]), f(2, 4)), (f(6, 4), t([-1, 0]), f(2, 4)), (f(9, 4), t([0, -2, 3]), f(3, 4)),
             ({0: "n"}, {0: "k"}, {0: "k"})),
        Case("index_put_columns", IndexPutColumns, (f(3, 6), t([4, 1]), f(2)), (f(3, 6), t([0, -1]), f(2)), (f(5, 8), t([7, 2, -3]), f(3)),
             ({0: "rows", 1: "n"}, {0: "k"}, {0: "k"})),
        Case("two_writes", TwoWrites, (f(2, 3, 6), f(2, 2, 6), t([4, 1]), f(2, 3, 2)), (f(2, 3, 6), f(2, 2, 6), t([0, 5]), f(2, 3, 2)),
             (f(3, 4, 8), f(3, 2, 8), t([0, 7, 5]), f(3, 4, 3)), ({0: "batch", 1: "c", 2: "n"}, {0: "batch", 2: "n"}, {0: "k"}, {0: "batch", 1: "c", 2: "k"}), writes=2),
        Case("buffer_cache", BufferCache, (f(1, 2, 2, 4), t(3)), (f(1, 2, 2, 4), t(6)), (f(1, 2, 3, 4), t(5)), ({2: "tokens"}, None),
             values={"pos": (0, 3, 6)}),
        Case("kv_rows_bhsd", KVRowsBHSD, (f(3, 2, 8, 4), f(3, 2, 4), t([1, 7, 0])), (f(3, 2, 8, 4), f(3, 2, 4), t([5, -1, 2])),
             (f(4, 2, 12, 4), f(4, 2, 4), t([11, 0, 3, 6])), ({0: "batch", 2: "seq"}, {0: "batch"}, {0: "batch"})),
        Case("kv_rows_bshd", KVRowsBSHD, (f(3, 8, 2, 4), f(3, 2, 4), t([1, 7, 0])), (f(3, 8, 2, 4), f(3, 2, 4), t([4, 4, -3])),
             (f(4, 12, 2, 4), f(4, 2, 4), t([0, 10, 3, 3])), ({0: "batch", 1: "seq"}, {0: "batch"}, {0: "batch"})),
        Case("kv_rows_index_put", KVRowsIndexPut, (f(3, 2, 8, 4), f(3, 2, 4), t([2, 6, 7])), (f(3, 2, 8, 4), f(3, 2, 4), t([0, 0, 1])),
             (f(4, 2, 10, 4), f(4, 2, 4), t([9, 1, 2, 8])), ({0: "batch", 2: "seq"}, {0: "batch"}, {0: "batch"})),
        Case("tensor_index_assign", TensorIndexAssign, (f(2, 3, 8, 4), f(2, 3, 2, 4)), (f(2, 3, 8, 4), f(2, 3, 2, 4)),
             (f(3, 3, 9, 4), f(3, 3, 2, 4)), ({0: "batch", 2: "seq"}, {0: "batch"})),
        Case("masked_fill", MaskedFill, (f(2, 6), b(2, 6)), (f(2, 6), b(2, 6)), (f(3, 7), b(3, 7)), ({0: "batch", 1: "n"}, {0: "batch", 1: "n"}), writes=0),
        Case("masked_scatter", MaskedScatter, (f(2, 5, 3), b(2, 5), f(2, 5, 3)), (f(2, 5, 3), b(2, 5), f(2, 5, 3)),
             (f(3, 6, 3), b(3, 6), f(3, 6, 3)), ({0: "batch", 1: "n"}, {0: "batch", 1: "n"}, {0: "batch", 1: "n"}), writes=0),
    ]


CASES = {case.name: case for case in _cases()}


def export_kwargs(case, dynamo, dynamic):
    """``torch.onnx.export`` arguments for a case: input and output names, and its dynamic dimensions."""
    kwargs = {"input_names": case.input_names, "output_names": ["output"]}
    if dynamic and dynamo:
        from torch.export import Dim

        kwargs["dynamic_shapes"] = tuple(None if axes is None else {axis: Dim.AUTO for axis in axes} for axes in case.dynamic)
    elif dynamic:
        kwargs["dynamic_axes"] = {name: dict(axes) for name, axes in zip(case.input_names, case.dynamic) if axes}
    return kwargs


def profile(case, dynamic=True, shape_inputs=()):
    """``{input: (min, opt, max)}`` for a build: for a dynamic one the example's shapes and the other set's,
    elementwise; for the ``shape_inputs`` (inputs whose values set shapes) the range of their values."""
    shapes = {name: tuple((v,) for v in case.values[name]) for name in shape_inputs}
    if not dynamic:
        return shapes
    for name, axes, small, large in zip(case.input_names, case.dynamic, case.example, case.other_shape):
        if axes:
            low = tuple(min(a, b) for a, b in zip(small.shape, large.shape))
            high = tuple(max(a, b) for a, b in zip(small.shape, large.shape))
            shapes[name] = (low, tuple(small.shape), high)
    return shapes
