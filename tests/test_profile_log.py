"""The rules a profile's bounds break, read from TensorRT's log (``trt_scatter.profile_log``): its lines as TensorRT-RTX
1.7.1 writes them, and networks of the builders whose profiles break a rule at a bound that TensorRT-RTX builds anyway."""

import re

import numpy as np
import pytest
from lowering_support import add_input, new_network

from trt_scatter.engine import build_engine
from trt_scatter.networks import add_scatter_elements, add_scatter_nd, add_scatter_update, add_slice_scatter, add_tensor_scatter
from trt_scatter.profile_log import Breaks, _evaluate

SHAPES = {"a": (4, 6), "b": (2, 6)}


@pytest.mark.parametrize("condition, kept", [
    ("(EQUAL 2 (# 0 (SHAPE b)))", True),
    ("(EQUAL (# 0 (SHAPE a)) (# 0 (SHAPE b)))", False),
    ("(LESS (- (# 0 (SHAPE b)) (# 0 (SHAPE a))) 1)", True),
    ("(LESS (- (MAX 3 (# 0 (SHAPE a))) (MIN 3 (# 0 (SHAPE a)))) 1)", False),
    ("(EQUAL (# 1 (SHAPE b)) (CEIL_DIV (# 1 (SHAPE a)) 2))", False),
    ("(EQUAL (# 1 (SHAPE b)) (* (FLOOR_DIV (# 1 (SHAPE a)) 2) 2))", True),
    ("(LESS (- (MAX (# 0 (SHAPE b)) E0) (MIN (# 0 (SHAPE b)) E0)) 1) where E0=(CEIL_DIV (# 0 (SHAPE a)) 2)", True),
    ("(AND (NOT (EQUAL 1 2)) (OR (LESS 2 1) (EQUAL (+ 1 1) 2)))", True),
    ("(LESS (- E1 E0) 1) where E0=(# 0 (SHAPE a)), E1=(# 0 (SHAPE b))", True),
])
def test_a_symbolic_check_is_evaluated_at_the_shapes(condition, kept):
    assert _evaluate(condition, SHAPES) is kept


@pytest.mark.parametrize("condition", [
    "(EQUAL 2 (# 0 (SHAPE elsewhere)))",  # a tensor that is not an input
    "(EQUAL 2 (# 0 (VALUE a)))",  # a word this module does not know
    "(EQUAL 2 (# 5 (SHAPE a)))",  # past the rank
    "(EQUAL 2 E7)",  # a name no where gives
    "(EQUAL 2 (# 0 (SHAPE a))",  # cut short
    "(EQUAL (# 0 (SHAPE a,)) 2)",  # a name of another input: no comma is taken off a word
    "(EQUAL E0 2) where E0=E0",  # a binding of itself: endless
    "(NOT " * 2000 + "1" + ")" * 2000,  # deeper than Python recurses
    "(EQUAL 2 2) 3",  # words after the check, and no where
    "(EQUAL 2 2) where E0 3",  # a binding without its =
])
def test_a_symbolic_check_it_cannot_evaluate_is_left_to_tensorrt(condition):
    assert _evaluate(condition, SHAPES) is None


def _read(lines):
    breaks = Breaks()
    taken = [breaks.take(line) for line in lines]
    return breaks, taken


def test_symbolic_checks_give_the_first_broken_assertion_before_a_layers_rule():
    lines = [
        "SYMBOLIC CHECKS",
        "    (EQUAL 2 (# 0 (SHAPE idx)))",
        "        (Unnamed Layer* 8) [Scatter]: dimensions not compatible for ScatterND",
        "    (LESS (- (# 0 (SHAPE idx)) 2) 1)",
        "        IAssertionLayer (Unnamed Layer* 5) [Assertion]: condition[0] is false: (LESS (- (# 0 (SHAPE idx)) 2) 1). op: 'idx' must be short",
        "GRAPH NODES",
        "    (EQUAL 9 (# 0 (SHAPE idx)))",  # after the list: no check
    ]
    breaks, taken = _read(lines)
    assert not any(taken)  # the list stays in the verbose log
    assert len(breaks.checks) == 2
    assert breaks.first({"idx": ((2,), (2,), (2,))}) is None
    assert breaks.first({"idx": ((1,), (2,), (2,))}) == "the profile's smallest shapes break a rule of the network: (Unnamed Layer* 8) [Scatter]: dimensions not compatible for ScatterND"
    # both broken at the largest shapes: the assertion's words name the op and the input
    assert breaks.first({"idx": ((1,), (2,), (3,))}) == "the profile's largest shapes break a rule the network asserts: op: 'idx' must be short"


def test_every_rule_of_a_check_is_kept_and_a_check_without_words_is_named_by_its_condition():
    lines = [
        "SYMBOLIC CHECKS",
        "    (EQUAL 2 (# 0 (SHAPE idx)))",  # no words follow
        "    (EQUAL 3 (# 0 (SHAPE idx)))",
        "        (Unnamed Layer* 8) [Scatter]: dimensions not compatible for ScatterND",
        "        IAssertionLayer (Unnamed Layer* 5) [Assertion]: condition[0] is false: (EQUAL 3 (# 0 (SHAPE idx))). op: 'idx' must have 3 rows",
        "GRAPH NODES",
    ]
    breaks, _ = _read(lines)
    assert breaks.first({"idx": ((2,), (2,), (2,))}) == "the profile's smallest shapes break a rule the network asserts: op: 'idx' must have 3 rows"
    assert breaks.first({"idx": ((3,), (3,), (3,))}) == "the profile's smallest shapes break a rule of the network: (EQUAL 2 (# 0 (SHAPE idx)))"


@pytest.mark.parametrize("line, message", [
    ("Profile kMIN values are not self-consistent. (Unnamed Layer* 30) [Scatter]: dimensions not compatible for ScatterND Condition '==' violated: 3 != 0. "
     "In operator() at /_src/runtime/core/shapeMachine.cpp:640",
     "the profile's smallest shapes break a rule of the network: (Unnamed Layer* 30) [Scatter]: dimensions not compatible for ScatterND (TensorRT found 3 != 0)"),
    ("IBuilder::buildSerializedNetwork: Error Code 4: API Usage Error (IScatterLayer (Unnamed Layer* 30) [Scatter]: (Unnamed Layer* 30) [Scatter]: "
     "dimensions not compatible for ScatterND In processCheck at /_src/optimizer/shapeof/graphShapeAnalyzer.cpp:1066)",
     "the network breaks a rule of TensorRT's in every run the profile allows: (Unnamed Layer* 30) [Scatter]: dimensions not compatible for ScatterND"),
])
def test_a_layers_rule_tensorrt_logs_broken_is_one_line(line, message):
    breaks, taken = _read([line])
    assert taken == [True] and breaks.first({}) == message


def _build(inputs, add, profile):
    """Builds the network ``add(network, *tensors)`` of ``inputs`` ({name: (dtype, shape)}) for ``profile``."""
    def load():
        builder, network = new_network()
        tensors = [add_input(network, name, dtype, shape) for name, (dtype, shape) in inputs.items()]
        network.mark_output(add(network, *tensors))
        return builder, network

    return build_engine(load, profile)


F32, I32 = np.float32, np.int32
BUILDERS = {
    "scatter_nd": ({"data": (F32, (8, 5)), "idx": (I32, (-1, 1)), "upd": (F32, (-1, 5))}, add_scatter_nd,
                   {"idx": ((1, 1), (2, 1), (3, 1)), "upd": ((2, 5), (2, 5), (2, 5))},
                   "the profile's smallest shapes break a rule the network asserts: scatter_nd: 'updates' must have the shape "
                   "indices.shape[:-1] + data.shape[indices.shape[-1]:]"),
    "scatter_elements": ({"data": (F32, (8, 5)), "idx": (I32, (-1, 5)), "upd": (F32, (2, 5))}, add_scatter_elements,
                         {"idx": ((1, 5), (2, 5), (3, 5))},
                         "the profile's smallest shapes break a rule the network asserts: scatter_elements: 'updates' must have the shape of 'indices'"),
    "scatter_update": ({"data": (F32, (8, 5)), "idx": (I32, (-1,)), "upd": (F32, (2, 5))}, lambda n, d, i, u: add_scatter_update(n, d, i, u, 0),
                       {"idx": ((2,), (2,), (3,))},
                       "the profile's largest shapes break a rule the network asserts: scatter_update: 'updates' must have the shape "
                       "data.shape[:axis] + indices.shape + data.shape[axis+1:]"),
    "slice_scatter": ({"data": (F32, (-1, 8)), "upd": (F32, (-1, 2))}, lambda n, d, u: add_slice_scatter(n, d, u, [0], [2], [1], [1]),
                      {"data": ((2, 8), (2, 8), (2, 8)), "upd": ((1, 2), (2, 2), (3, 2))},
                      "the profile's smallest shapes break a rule the network asserts: slice_scatter: 'updates' must have data's shape with each "
                      "sliced axis cut to its slice's length"),
    "slice_scatter_empty": ({"data": (F32, (4, -1)), "upd": (F32, (4, 3))}, lambda n, d, u: add_slice_scatter(n, d, u, [0], [3], [1], [1]),
                            {"data": ((4, 0), (4, 10), (4, 10))},
                            "the profile's smallest shapes break a rule the network asserts: slice_scatter: 'updates' must have data's shape with each "
                            "sliced axis cut to its slice's length"),
    "tensor_scatter": ({"cache": (F32, (-1, 4, 8)), "upd": (F32, (2, 1, 8))}, add_tensor_scatter,
                       {"cache": ((1, 4, 8), (2, 4, 8), (3, 4, 8))},
                       "the profile's smallest shapes break a rule the network asserts: tensor_scatter: 'update' must have past_cache's shape off "
                       "the axis"),
}


@pytest.mark.parametrize("name", BUILDERS)
def test_a_profile_whose_smallest_or_largest_shapes_break_a_builders_rule_is_refused(name):
    """TensorRT-RTX built these engines without a word (their runs at those bounds would fail): it checks such a rule
    at the opt shapes, and lists the rest among the checks it leaves to run time."""
    inputs, add, profile, message = BUILDERS[name]
    with pytest.raises(ValueError, match=f"^{re.escape(message)}$"):
        _build(inputs, add, profile)
    fitting = {name: (bounds[1],) * 3 for name, bounds in profile.items()}  # the opt shapes keep every rule
    assert _build(inputs, add, fitting)[0]
