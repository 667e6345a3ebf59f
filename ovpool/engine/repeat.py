"""A plan run again and again with some of its values unchanged: a Loop's, Scan's or
TensorIterator's body over its iterations, whatever the model's format.

Two rewrites of the one plan (:mod:`ovpool.engine.plan`), both keeping the bits:

* hoisting (:func:`hoisting`): the steps that read only values unchanged from one iteration to the
  next (an ONNX body's enclosing values, an IR body's Parameters fed by neither a back edge nor a
  slice), constants and each other, and draw nothing at random, run once, at the first iteration;
  the rest of the body reads their outputs as further outer values. SLANet's decoder body
  multiplies its (1, 96) hidden state by the same weights as ONNX and as IR alike, but the
  projection of its image features, of outer values only, runs once instead of 501 times.
* remembering (:func:`remembering`): a product whose operator has the ``remembered`` trait
  (MatMul, Gemm; an IR MatMul computes MatMul) given the operands of its call before, bit for
  bit, gives that call's results again (:class:`Remembered`): SLANet's ONNX body carries its
  image features through the loop state as x + 0 and multiplies them by the same (96, 256)
  weights at each of its 501 steps: one product.

:func:`repeating` runs a body's plan so, one call per iteration.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

import numpy as np

from ovpool.engine.ops.base import Kernel, traits
from ovpool.engine.plan import Keys, Names, Plan, Prepared, Step, build_plan, execute, filled

# The plan of the hoisted steps (no inputs; outer values: the unchanged ones; outputs: the values
# the rest reads) and the plan of the rest (the body's inputs; outer values: the body's, then
# the hoisted outputs).
Hoisted = tuple[Plan, Plan]


def hoisting(
    prepared: Sequence[Prepared],
    known: Mapping[Any, Any],
    keys: Keys,
    drawing: Callable[[Prepared], bool],
    unchanged: Sequence[int] = (),
) -> Hoisted | None:
    """The steps of a body that read only its outer values (``keys.outer_names``), the inputs at
    the positions ``unchanged`` (fed the same value at every iteration), constants and each
    other, and that are not ``drawing`` (a random draw, or a node whose subgraph draws): their
    plan, with those outer values then those inputs as its outer values and the values the rest
    reads as its outputs; and the plan of the rest, which takes those values as outer values
    after ``keys.outer_names``. None when no step is such (or all are: the body then is one
    call). A body ``y = x + MatMul(Relu(a), w)`` of outer ``a`` hoists Relu and MatMul: the rest
    is one Add of ``x`` and the hoisted product."""
    invariant = [*keys.outer_names, *(keys.input_names[i] for i in unchanged)]
    reached = set(known) | set(invariant)
    hoisted: list[Prepared] = []
    rest: list[Prepared] = []
    for entry in prepared:
        if not entry.folded and not drawing(entry) and all(name in reached for name in entry.inputs if name):
            hoisted.append(entry)
            reached.update(name for name in entry.outputs if name)
        else:
            rest.append(entry)
    if not hoisted or all(entry.folded for entry in rest):
        return None
    made = {name for entry in hoisted for name in entry.outputs if name}
    read = {name for entry in rest for name in entry.inputs} | set(keys.output_names)
    handed = tuple(sorted(made & read, key=str))
    once = build_plan(hoisted, known, Names((), tuple(invariant), handed), donate=False)
    names = Names(tuple(keys.input_names), (*keys.outer_names, *handed), tuple(keys.output_names))
    return once, build_plan(rest, known, names, donate=True)


def remembering(plan: Plan) -> tuple[Step, ...]:
    """``plan``'s steps with each step of a ``remembered`` operator (MatMul, Gemm) as a
    :class:`Remembered` kernel of its own (made again for each Loop or Scan run, so nothing is
    remembered from one run to the next)."""
    stable = set(plan.input_slots) | set(plan.outer_slots) | {s for s, value in enumerate(plan.initial) if value is not None}
    steps = []
    for step in plan.steps:
        entry = next((plan.producers[s] for s in step.outputs if s in plan.producers), None)
        if entry is not None and traits(entry.op.op_type, entry.op.since, entry.op.domain).remembered:
            step = step._replace(kernel=Remembered(step.kernel, tuple(s in stable for s in step.inputs)))
        steps.append(step)
    return tuple(steps)


def repeating(
    plan: Plan, hoisted: Hoisted | None, outer: Sequence[Any], label: str, unchanged: Sequence[int] = ()
) -> Callable[[Sequence[Any]], list[Any]]:
    """``run(inputs)``: the outputs of ``plan`` on ``inputs`` and ``outer``, called once per
    iteration of one Loop, Scan or TensorIterator run, ``hoisted`` being ``hoisting``'s answer
    for the same ``unchanged`` input positions. The hoisted steps run at the first call, on
    ``outer`` and that call's ``unchanged`` inputs (a loop of no iteration runs none of them: a
    Reshape of an outer value that fails fails only once the loop iterates); every call runs the
    rest with the remembered products (:func:`remembering`)."""
    body = plan if hoisted is None else hoisted[1]
    steps = remembering(body)
    held: list[Any] = list(outer) if hoisted is None else []
    pending = [hoisted is not None]  # the hoisted steps wait for the first call

    def run(inputs: Sequence[Any]) -> list[Any]:
        if pending[0] and hoisted is not None:
            once = hoisted[0]
            values = filled(once, (), [*outer, *(inputs[i] for i in unchanged)])
            execute(values, once.steps, label, quiet=once.quiet)
            held.extend(outer)
            held.extend(values[s] for s in once.output_slots)
            pending[0] = False
        values = filled(body, inputs, held)
        execute(values, steps, label, quiet=body.quiet)
        return [values[s] for s in body.output_slots]

    return run


class Remembered:
    """A product's kernel that gives back its last results when called with the operands of its
    last call, bit for bit (a product is a function of its operands' bits; -0.0 and 0.0 differ,
    so do NaNs of other bits). Operands the body never writes (its inputs, outer values and
    constants: ``stable``) are held as they are, others copied; the results are the kernel's own
    arrays, which nothing writes into (the plan gives up only the buffers of ``fresh`` kernels,
    and a ``remembered`` operator is never ``fresh``). After three calls with no repeat it stops
    comparing: a hidden state's product changes at every step."""

    __slots__ = ("kernel", "stable", "last", "calls", "repeats")

    def __init__(self, kernel: Kernel, stable: tuple[bool, ...]) -> None:
        self.kernel = kernel
        self.stable = stable
        self.last: tuple[tuple[Any, ...], tuple[Any, ...]] | None = None
        self.calls = 0
        self.repeats = 0

    def __call__(self, *args: Any) -> tuple[Any, ...]:
        if self.last is not None:
            before, results = self.last
            if len(before) == len(args) and all(same_bits(a, b) for a, b in zip(args, before)):
                self.repeats += 1
                return results
        results = self.kernel(*args)
        self.calls += 1
        if self.repeats or self.calls < 3:
            kept = tuple(a if keep or not isinstance(a, np.ndarray) else a.copy() for a, keep in zip(args, self.stable))
            self.last = (kept, results)
        else:
            self.last = None
        return results


def same_bits(a: Any, b: Any) -> bool:
    """Whether two operands hold the same bits: the same object, or arrays of one dtype and shape
    whose elements, seen as unsigned integers of their size, are equal (0.0 and -0.0 are not)."""
    if a is b:
        return True
    if not isinstance(a, np.ndarray) or not isinstance(b, np.ndarray) or a.shape != b.shape or a.dtype != b.dtype:
        return False
    if a.dtype.itemsize in (1, 2, 4, 8) and not a.dtype.hasobject:
        unsigned = np.dtype(f"u{a.dtype.itemsize}")
        return bool(np.array_equal(a.view(unsigned), b.view(unsigned)))
    return a.tobytes() == b.tobytes()
