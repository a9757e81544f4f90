"""What an op's example network is: the :class:`Example` an op's network module declares as ``EXAMPLE``.

:mod:`trt_scatter.networks.examples` finds each registered op's ``EXAMPLE`` (an op whose module
declares none has no example) and does the rest the same way for every op: it checks the
parameters, adds the inputs (static, or dynamic with an optimization profile), the op and the
marked output, and makes the input values.
"""

from __future__ import annotations

import dataclasses
from typing import Callable


@dataclasses.dataclass(frozen=True, eq=False)
class Example:
    """One op's example network, for its parameters (a dict holding every name of ``defaults``).

    ``defaults``: the parameters and their default values (in the order an error lists them). A
    parameter ``<input>_shape`` is that input's shape: the dynamic profile's largest shapes are the
    example's with those dimensions doubled (but the ``static_dims``).
    ``shapes(params)``: ``{input name: shape}`` in the order the network adds them; checks the
    parameters with the oracle's rules.
    ``values(params, shapes)``: the generated input values that differ from every example's (data
    0, 1, 2, ...; updates 0, -1, -2, ...): its index inputs, with unique scatter targets, so that
    the result is defined.
    ``add(network, inputs, params, index_dtype, **options)``: adds the op to ``network`` on the
    input ITensors ``inputs`` (by name); constants of ``index_dtype`` where the op keeps them as
    tensors; returns the output ITensor.
    ``seed_values``: the seeds' example (``{input name: array}``), the values for the default
    parameters; ``None``: generated ones.
    ``static_dims``: ``{input name: dimensions}`` that keep their size in the dynamic network
    (those TensorRT must know when the network is built).
    ``options``: the keyword arguments of ``add`` alone (the network's, not the values'), such as ``impl``.
    """

    defaults: dict
    shapes: Callable[[dict], dict]
    values: Callable[[dict, dict], dict]
    add: Callable
    seed_values: dict | None = None
    static_dims: dict = dataclasses.field(default_factory=dict)
    options: tuple = ()
