"""PyTorch modules whose writes combine repeated targets: PyG's GNN layers and PyTorch's own reductions, with inputs.

The 11 modules a new user tries (PyG 2.8's GCNConv, GCN without self-loops, SAGEConv mean and max, GINConv;
``index_add``, ``scatter_add``, ``scatter_reduce`` sum/amax/mean, ``index_put(accumulate=True)``), and the rest of
``scatter_reduce`` (prod, amin, include_self=False). GCNConv adds its self-loops with
``add_remaining_self_loops``, whose boolean mask exports as NonZero, which TensorRT-RTX cannot build: ``gcn`` here
adds them with ``add_self_loops`` (the same graph where the input has no self-loops) before a GCNConv that adds none.
"""

import dataclasses

import torch

N, E, F = 7, 24, 4  # nodes, edges (targets repeat, and some node gets none), features


def edges(generator, nodes=N, count=E):
    index = torch.randint(0, nodes, (2, count), generator=generator)
    index[1, index[1] == nodes - 1] = 0  # the last node receives nothing: untouched targets keep their value
    return index


class GCN(torch.nn.Module):
    def __init__(self):
        super().__init__()
        from torch_geometric.nn import GCNConv

        self.conv = GCNConv(F, 3, add_self_loops=False)

    def forward(self, x, edge_index):
        from torch_geometric.utils import add_self_loops

        edge_index, _ = add_self_loops(edge_index, num_nodes=x.size(0))
        return self.conv(x, edge_index)


def _pyg(name, **kwargs):
    def make():
        import torch_geometric.nn as pyg

        if name == "GINConv":
            return pyg.GINConv(torch.nn.Sequential(torch.nn.Linear(F, 3), torch.nn.ReLU(), torch.nn.Linear(3, 3)))
        return getattr(pyg, name)(F, 3, **kwargs)

    return make


class SAGEMaxOfNonNegative(torch.nn.Module):
    """SAGEConv(aggr="max") on ReLU'd features. PyG's ONNX-export branch of max aggregation (taken under the TorchScript
    exporter) starts each target from max(0, min of all messages), which equals eager PyTorch where messages are >= 0."""

    def __init__(self):
        super().__init__()
        from torch_geometric.nn import SAGEConv

        self.conv = SAGEConv(F, 3, aggr="max")

    def forward(self, x, edge_index):
        return self.conv(x.relu(), edge_index)


class IndexAdd(torch.nn.Module):
    def forward(self, x, index, source):
        return x.index_add(0, index, source)


class ScatterAdd(torch.nn.Module):
    def forward(self, x, index, source):
        return x.scatter_add(0, index.view(-1, 1).expand_as(source), source)


class ScatterReduce(torch.nn.Module):
    def __init__(self, reduce, include_self=True, dim=0):
        super().__init__()
        self.reduce, self.include_self, self.dim = reduce, include_self, dim

    def forward(self, x, index, source):
        if self.dim == 0:
            index = index.view(-1, 1).expand_as(source)
        else:  # an index per element along the last axis: not rows
            index = index.view(1, -1).expand(source.shape[0], -1)
        return x.scatter_reduce(self.dim, index, source, self.reduce, include_self=self.include_self)


class IndexPutAccumulate(torch.nn.Module):
    def forward(self, x, index, source):
        x = x.clone()
        x.index_put_((index,), source, accumulate=True)
        return x


@dataclasses.dataclass
class Module:
    name: str
    make: object  # () -> torch.nn.Module
    graph: bool  # inputs (x, edge_index); else (x, index, source)
    dim: int = 0
    exact: bool = True  # outputs equal eager PyTorch's bit for bit (no matrix products in between)

    @property
    def input_names(self):
        return ["x", "edge_index"] if self.graph else ["x", "index", "source"]

    def inputs(self, seed=0):
        generator = torch.Generator().manual_seed(seed)
        x = torch.randn(N, F, generator=generator)
        if self.graph:
            return x, edges(generator)
        index = torch.randint(-N, N, (E,), generator=generator) if self.name == "index_put_accumulate" else edges(generator)[1]
        if self.dim:
            return x.T.contiguous(), index % F, torch.randn(F, E, generator=generator)
        return x, index, torch.randn(E, F, generator=generator)

    def dynamic(self, dynamo):
        """Dynamic nodes and edges: ``dynamic_shapes`` (dynamo) or ``dynamic_axes`` (TorchScript)."""
        axes = [{0: "nodes"}, {1: "edges"}] if self.graph else [{0: "nodes"}, {0: "edges"}, {0: "edges"}]
        if self.dim:
            axes = [{1: "nodes"}, {0: "edges"}, {1: "edges"}]
        if not dynamo:
            return {"dynamic_axes": dict(zip(self.input_names, axes))}
        from torch.export import Dim

        dims = {}
        return {"dynamic_shapes": tuple({axis: dims.setdefault(label, Dim(label, min=2)) for axis, label in spec.items()} for spec in axes)}


#: the 11 modules every export path is checked on (PyG's layers and PyTorch's writes that combine), by name
MODULES = {module.name: module for module in [
    Module("gcn", GCN, True, exact=False),
    Module("gcn_without_self_loops", _pyg("GCNConv", add_self_loops=False), True, exact=False),
    Module("sage_mean", _pyg("SAGEConv"), True, exact=False),
    Module("sage_max", SAGEMaxOfNonNegative, True, exact=False),
    Module("gin", _pyg("GINConv"), True, exact=False),
    Module("index_add", IndexAdd, False),
    Module("scatter_add", ScatterAdd, False),
    Module("scatter_reduce_sum", lambda: ScatterReduce("sum"), False),
    Module("scatter_reduce_amax", lambda: ScatterReduce("amax"), False),
    Module("scatter_reduce_mean", lambda: ScatterReduce("mean"), False),
    Module("index_put_accumulate", IndexPutAccumulate, False),
]}
#: the rest of scatter_reduce: prod and amin, include_self=False, an index per element (not rows)
MORE = {module.name: module for module in [
    Module("scatter_reduce_prod", lambda: ScatterReduce("prod"), False),
    Module("scatter_reduce_amin_excluding_self", lambda: ScatterReduce("amin", include_self=False), False),
    Module("scatter_reduce_mean_excluding_self", lambda: ScatterReduce("mean", include_self=False), False),
    Module("scatter_reduce_sum_last_axis", lambda: ScatterReduce("sum", dim=1), False, dim=1),
]}
