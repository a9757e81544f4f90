"""The rules a profile's bounds break, read from what TensorRT logs while it builds.

TensorRT checks a network's shape rules (its layers' own, and the builders' assertion layers) at the
profile's smallest, opt and largest shapes, but TensorRT-RTX builds the engine where only the smallest
or largest break one, and says so, if at all, in its log: as a warning ("Profile kMIN values are not
self-consistent"), or only in its verbose list of the checks it leaves to run time::

    SYMBOLIC CHECKS
        (EQUAL 2 (# 0 (SHAPE idx)))
            (Unnamed Layer* 8) [Scatter]: dimensions not compatible for ScatterND

:func:`profile_breaks` gathers both while a build runs; the build raises the first broken rule, an
assertion's (the builders' words, naming op and input) before a layer's. A symbolic check is a small
expression on the inputs' shapes, evaluated here at each bound; one with a word this module does not
know is left to TensorRT.
"""

from __future__ import annotations

import contextlib
import math
import re
from typing import TYPE_CHECKING

from trt_scatter import backend

if TYPE_CHECKING:
    from collections.abc import Iterator, Mapping, Sequence

# TensorRT's log lines that say a profile's bound breaks a rule of the network: an assertion layer's (the builders' rules:
# the message given to it follows the condition) or a layer's own shape check.
_ASSERTION_BROKEN = re.compile(r"Profile k(MIN|OPT|MAX) values are not self-consistent\. .*? is false: (?:\(.*?\)\. )?(.*?) ?Condition '")
_LAYER_NOT_SELF_CONSISTENT = re.compile(r"Profile k(MIN|OPT|MAX) values are not self-consistent\. (.*?) Condition '[^']*' violated: ([^.]*)\.")
_LAYER_RULE_BROKEN = re.compile(r"k(MIN|OPT|MAX) values for profile \d+ violate shape constraints: (.*?) Condition '[^']*' violated: ([^.]*)\.")
# a rule TensorRT proves broken in every run the profile allows (its condition folded): "Error Code 4: API Usage Error"
_ASSERTION_NEVER_KEPT = re.compile(r"API Usage Error \(IAssertionLayer .*? is false: (?:[^ ]*\. )?(.*?) In processCheck")
_LAYER_RULE_NEVER_KEPT = re.compile(r"API Usage Error \(I\w+Layer (.*?): \1: (.*?) In processCheck")
_ASSERTION_AS_LAYER_RULE = re.compile(r"IAssertionLayer .*? is false: (?:\(.*?\)\. )?(.*)")  # TensorRT-RTX at opt: an assertion layer's rule
_BOUNDS = {"MIN": "smallest", "OPT": "opt", "MAX": "largest"}


class Breaks(list):
    """The broken rules a build logged (a list of one-line messages), and the symbolic checks it left to run time."""

    def __init__(self) -> None:
        super().__init__()
        self.checks: list[tuple[str, list[str]]] = []  # (condition, TensorRT's words for each rule it states)
        self._in_checks = False

    def first(self, shapes: Mapping[str, Sequence[Sequence[int]]]) -> str | None:
        """The rule to raise, ``shapes`` mapping every input to its (min, opt, max) shapes: a broken assertion of the
        symbolic checks first, then what TensorRT logged, then a broken layer rule of the symbolic checks."""
        asserted, layers = [], []
        for bound, index in (("smallest", 0), ("opt", 1), ("largest", 2)):
            at = {name: tuple(bounds[index]) for name, bounds in shapes.items()}
            for condition, rules in self.checks:
                if _evaluate(condition, at) is not False:
                    continue
                for words in rules or [condition]:
                    rule = _ASSERTION_AS_LAYER_RULE.match(words)
                    if rule:
                        asserted.append(_line(bound, _after(rule[1], condition), asserted=True))
                    else:
                        layers.append(_line(bound, words, asserted=False))
        found = asserted + list(self) + layers
        return found[0] if found else None

    def take(self, message: str) -> bool:
        """Reads one line of TensorRT's log; True where it was a broken rule (kept out of the log: the build raises it)."""
        stripped = message.strip()
        if stripped == "SYMBOLIC CHECKS":
            self._in_checks = True
        elif self._in_checks and message.startswith("        "):
            if self.checks:
                self.checks[-1][1].append(stripped)
        elif self._in_checks and message.startswith("    ("):
            self.checks.append((stripped, []))
        elif self._in_checks:
            self._in_checks = False
        if (broken := _ASSERTION_BROKEN.search(message)):  # a warning, in TensorRT-RTX 1.7
            self.append(_line(_BOUNDS[broken[1]], broken[2], asserted=True))
        elif (broken := _ASSERTION_NEVER_KEPT.search(message)):
            self.append(f"the network asserts a rule that no run the profile allows keeps: {broken[1]}")
        elif (broken := _LAYER_RULE_NEVER_KEPT.search(message)):
            self.append(f"the network breaks a rule of TensorRT's in every run the profile allows: {broken[1]}: {broken[2]}")
        elif (broken := _LAYER_RULE_BROKEN.search(message) or _LAYER_NOT_SELF_CONSISTENT.search(message)):
            asserted = _ASSERTION_AS_LAYER_RULE.match(broken[2])
            if asserted:  # the builders' message, as above; the condition's values ("4 >= 1") say nothing more
                self.append(_line(_BOUNDS[broken[1]], asserted[1], asserted=True))
            else:
                self.append(_line(_BOUNDS[broken[1]], f"{broken[2]} (TensorRT found {broken[3]})", asserted=False))  # its condition, as it failed
        else:
            return False
        return True


@contextlib.contextmanager
def profile_breaks() -> Iterator[Breaks]:
    """The broken rules TensorRT logs in this thread during the block (through trt-scatter's TensorRT logger, which
    its builders and loaders give TensorRT, whatever the logger's level), each as one line that names the bound,
    taken out of the log, and the symbolic checks it logs (see :meth:`Breaks.first`)."""
    breaks = Breaks()
    with backend.taking_tensorrt_log(breaks.take):
        yield breaks


def _line(bound: str, rule: str, asserted: bool) -> str:
    """The one line a build raises for a ``rule`` broken at ``bound`` (smallest, opt, largest): an assertion's (the
    builders' words, naming op and input) or a layer's own."""
    return f"the profile's {bound} shapes break a rule {'the network asserts' if asserted else 'of the network'}: {rule}"


def _after(words: str, condition: str) -> str:
    """An assertion's own message: TensorRT writes the condition (and any ``where`` of it) before it."""
    return words.split(f"{condition}. ", 1)[-1]


_OPERATIONS = {
    "+": lambda *v: sum(v),
    "-": lambda a, b=None: -a if b is None else a - b,
    "*": lambda *v: math.prod(v),
    "MAX": max,
    "MIN": min,
    "CEIL_DIV": lambda a, b: -(-a // b),
    "FLOOR_DIV": lambda a, b: a // b,
    "EQUAL": lambda a, b: a == b,
    "LESS": lambda a, b: a < b,
    "AND": lambda *v: all(v),
    "OR": lambda *v: any(v),
    "NOT": lambda a: not a,
}


class _Unknown(Exception):
    """A word or a shape the evaluation does not know: the check is TensorRT's to make."""


def _evaluate(condition: str, shapes: Mapping[str, tuple[int, ...]]) -> bool | None:
    """A symbolic check (``(LESS (- (# 0 (SHAPE a)) (# 0 (SHAPE b))) 1) where E0=(...)``) at ``shapes``; None where
    it holds a word or names a tensor that is not known here."""
    tokens = re.findall(r"\(|\)|E\d+=|[^\s()]+", condition)
    try:
        expression, rest = _parse(tokens)
        bindings = {}
        if rest and rest[0] == "where":
            rest = rest[1:]
            while rest:
                if not rest[0].endswith("="):
                    raise _Unknown(rest[0])
                bindings[rest[0][:-1]], rest = _parse(rest[1:])
                if rest and rest[0] == ",":  # between two bindings
                    rest = rest[1:]
        elif rest:
            raise _Unknown(rest[0])
        return bool(_value(expression, shapes, bindings))
    except (_Unknown, IndexError, TypeError, ValueError, ZeroDivisionError, RecursionError):
        return None


def _parse(tokens):
    """The first expression of ``tokens`` (a word, or a list: the operation, then its operands), and the tokens after it."""
    if tokens[0] != "(":
        return tokens[0], tokens[1:]
    items, rest = [], tokens[1:]
    while rest[0] != ")":
        item, rest = _parse(rest)
        items.append(item)
    return items, rest[1:]


def _value(expression, shapes, bindings):
    if isinstance(expression, str):
        if expression in bindings:
            return _value(bindings[expression], shapes, bindings)
        if re.fullmatch(r"-?\d+", expression):
            return int(expression)
        raise _Unknown(expression)
    operation, *operands = expression
    if operation == "SHAPE":
        if len(operands) != 1 or operands[0] not in shapes:
            raise _Unknown(operands)
        return shapes[operands[0]]
    if operation == "#":
        return _value(operands[1], shapes, bindings)[int(operands[0])]
    if operation not in _OPERATIONS:
        raise _Unknown(operation)
    return _OPERATIONS[operation](*(_value(operand, shapes, bindings) for operand in operands))
