"""Control flow: If-8 runs ``then_body`` or ``else_body``; Loop-5 and TensorIterator-1 run their
``body`` once per iteration, wired by the layer's port map and back edges (:class:`Iteration`).

The port map of Loop and TensorIterator (OpenVINO's opset specification):

* an input with ``axis`` is sliced: iteration ``k`` gets the part of ``part_size`` along ``axis``
  starting at ``start + k * stride`` (``start`` and ``end`` both included, negative counted from
  the end; a negative stride walks back, its part ending there): on an axis of 4,
  ``start=-1 end=0 stride=-1 part_size=1`` gives indices 3, 2, 1, 0; there are
  ``(|end - start| + 1) // part_size`` parts whatever the stride (OpenVINO core's count: stride 1
  with parts of 2 on 6 elements takes [0, 1], [1, 2], [2, 3]; the CPU plugin refuses to compile a
  stride other than part_size);
* an input without ``axis`` is the Parameter's value at the first iteration; a back edge (Result
  -> Parameter) replaces it with that Result's value for the next iteration, else it stays;
* an output with ``axis`` concatenates the Result's value of every iteration along ``axis`` (last
  iteration first for a negative stride); an output without ``axis`` is the Result's value at the
  last iteration;
* TensorIterator iterates once per part of its sliced inputs (they must agree); Loop while the
  iteration count is below the trip count (input 0, negative: no bound) and the condition
  (input 1, then the ``execution_condition`` Result) holds; its ``current_iteration`` Parameter
  gets 0, 1, 2, ...
"""

from __future__ import annotations

from collections.abc import Sequence

import numpy as np

from ovpool.engine.ir_layers.base import Iteration, LayerNode, Repeatable, Slicing, layer
from ovpool.engine.ops.base import Kernel


@layer("If", 8)
def if_(node: LayerNode) -> Kernel:
    """If-8: ``then_body`` when the condition (input 0) is true, else ``else_body``, on the layer's
    other inputs; outputs in port order."""
    then_body, else_body = node.bodies["then_body"], node.bodies["else_body"]

    def kernel(cond: np.ndarray, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        if cond.size != 1:
            raise node.fail(f"the condition has {cond.size} values, not one")
        body = then_body if bool(cond.reshape(())) else else_body
        return tuple(body(list(inputs)))

    return kernel


@layer("TensorIterator", 1)
def tensor_iterator(node: LayerNode) -> Kernel:
    """TensorIterator-1: the body once per part of the sliced inputs (a [2, 3] input sliced on
    axis 1 with part_size 1 runs it 3 times, on [2, 1] parts), outputs as the port map says."""

    def kernel(*inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        return _iterate(node, inputs, None, True)

    return kernel


@layer("Loop", 5)
def loop(node: LayerNode) -> Kernel:
    """Loop-5: the body while fewer than ``trip_count`` iterations ran (input 0; negative: no
    bound) and the condition holds (input 1, then the body's ``execution_condition``): trip count
    3 and a condition the body turns false after its 2nd iteration runs it twice."""

    def kernel(trip_count: np.ndarray, condition: np.ndarray, *inputs: np.ndarray) -> tuple[np.ndarray, ...]:
        for name, value in (("trip count", trip_count), ("execution condition", condition)):
            if np.asarray(value).size != 1:
                raise node.fail(f"the {name} has {np.asarray(value).size} values, not one")
        trips = int(np.asarray(trip_count).reshape(()))
        return _iterate(
            node, (trip_count, condition, *inputs), None if trips < 0 else trips, bool(np.asarray(condition).reshape(()))
        )

    return kernel


def _iterate(node: LayerNode, inputs: Sequence[np.ndarray], trips: int | None, condition: bool) -> tuple[np.ndarray, ...]:
    """Run the body of ``node`` at most ``trips`` times (None: no bound; TensorIterator: the parts'
    count) while ``condition`` holds, and gather the outputs in port order."""
    plan = node.iteration
    assert plan is not None  # the executor prepares Loop and TensorIterator with their port map
    body = node.bodies["body"]
    run = body.repeated() if isinstance(body, Repeatable) else body  # one per run: nothing kept from one to the next
    arguments: list[np.ndarray | None] = [None] * _parameters(plan)
    parts: list[tuple[int, list[np.ndarray]]] = []
    for index, parameter, slicing in plan.inputs:
        if slicing is None:
            arguments[parameter] = inputs[index]
        else:
            parts.append((parameter, _slices(node, np.asarray(inputs[index]), slicing)))
    counts = {len(pieces) for _, pieces in parts}
    if node.layer.type == "TensorIterator":
        if len(counts) != 1:
            raise node.fail(f"the sliced inputs give {sorted(counts) or 'no'} iteration counts, not one")
        trips = counts.pop()
    elif counts:
        trips = min([*counts, *([trips] if trips is not None else [])])
    results: list[np.ndarray] | None = None
    gathered: dict[int, list[np.ndarray]] = {result: [] for _, result, slicing in plan.outputs if slicing is not None}
    done = 0
    while condition and (trips is None or done < trips):
        for parameter, pieces in parts:
            arguments[parameter] = pieces[done]
        if plan.current_iteration is not None:
            arguments[plan.current_iteration] = np.array(done, plan.iteration_type)
        results = run(list(arguments))  # type: ignore[arg-type]  # every Parameter is fed
        for result, pieces in gathered.items():
            pieces.append(results[result])
        for result, parameter in plan.back_edges:
            arguments[parameter] = results[result]
        if plan.condition is not None:
            condition = bool(np.asarray(results[plan.condition]).reshape(-1)[0])
        done += 1
    outputs: dict[int, np.ndarray] = {}
    for index, result, slicing in plan.outputs:
        if slicing is not None:
            outputs[index] = _joined(node, gathered[result], slicing, plan, result)
        elif results is not None:
            outputs[index] = results[result]
        else:
            outputs[index] = _unchanged(node, plan, result, arguments)
    return tuple(outputs[index] for index in range(len(outputs)))  # the executor checked every port is mapped


def _parameters(plan: Iteration) -> int:
    """How many Parameters the body has: one past the highest the port map feeds."""
    fed = [parameter for _, parameter, _ in plan.inputs]
    if plan.current_iteration is not None:
        fed.append(plan.current_iteration)
    return max(fed, default=-1) + 1


def _slices(node: LayerNode, value: np.ndarray, slicing: Slicing) -> list[np.ndarray]:
    """The parts a sliced input gives, in iteration order: [0, 1, 2, 3] with start -1, end 0,
    stride -1, part_size 1 gives [3], [2], [1], [0]."""
    if not -value.ndim <= slicing.axis < value.ndim:
        raise node.fail(f"axis {slicing.axis} is out of range for a rank-{value.ndim} input", "axis")
    axis = slicing.axis % value.ndim
    size = value.shape[axis]
    start = slicing.start + size if slicing.start < 0 else slicing.start
    end = slicing.end + size if slicing.end < 0 else slicing.end
    if slicing.part_size < 1 or slicing.stride == 0:
        raise node.fail(f"part_size {slicing.part_size} and stride {slicing.stride} take no part", "part_size")
    count = (abs(end - start) + 1) // slicing.part_size if size else 0
    parts = []
    for k in range(count):
        begin = start + k * slicing.stride - (slicing.part_size - 1 if slicing.stride < 0 else 0)
        if begin < 0 or begin + slicing.part_size > size:
            raise node.fail(f"iteration {k} slices [{begin}, {begin + slicing.part_size}) of an axis of {size}", "start")
        parts.append(np.take(value, np.arange(begin, begin + slicing.part_size), axis=axis))
    return parts


def _joined(node: LayerNode, pieces: list[np.ndarray], slicing: Slicing, plan: Iteration, result: int) -> np.ndarray:
    """A concatenated output: each iteration's value along ``axis``, last first for a negative
    stride; with no iteration, empty of the Result's declared dims with 0 on ``axis``."""
    if not pieces:
        dims, dtype = plan.result_dims[result], plan.result_types[result]
        if dims is None or dtype is None or not -len(dims) <= slicing.axis < len(dims):
            raise node.fail("ran no iteration and the body does not declare the concatenated output's dims")
        empty = list(dims)
        empty[slicing.axis % len(dims)] = 0
        return np.zeros(empty, dtype)
    axis = slicing.axis % max(np.ndim(pieces[0]), 1)
    ordered = pieces[::-1] if slicing.stride < 0 else pieces
    try:
        return np.concatenate([np.asarray(p) for p in ordered], axis=axis)
    except ValueError as exc:
        raise node.fail(f"the concatenated output changes shape between iterations: {exc}") from None


def _unchanged(node: LayerNode, plan: Iteration, result: int, arguments: list[np.ndarray | None]) -> np.ndarray:
    """A last-value output when nothing iterated: the initial value of the Parameter its Result
    feeds back to (a loop-carried value keeps its input)."""
    for source, parameter in plan.back_edges:
        value = arguments[parameter]
        if source == result and value is not None:
            return value
    raise node.fail("ran no iteration and the output has no initial value (its Result feeds no back edge)")
