"""Control flow: Loop, If, Scan, SequenceMap, with their bodies run on ovpool's own operators.

The session compiles each graph attribute into a :class:`ovpool.engine.graph.CompiledGraph`
(``node.subgraphs["body"]``) and calls the kernel with the node's inputs followed by the values
the bodies read from enclosing graphs (each subgraph's ``outer_names``, in ``node.subgraphs``
order); :func:`_split` takes them apart.

* Loop (1..21, one meaning): ``M`` (trip count) and ``cond`` are optional; the body gets
  ``(iteration_num, cond, carried...)`` and returns ``(cond, carried..., scan outputs...)``;
  scan outputs are stacked on a new axis 0. ``M=3`` with a body adding 1 to a carried ``v=0`` and
  emitting ``v`` gives ``v_final=3``, scan ``[0, 1, 2]``; ``M=0`` gives ``v_final=0`` and an empty
  scan of the body output's declared shape ((0, 2) for a declared [2]).
* If (1..21): runs ``then_branch`` or ``else_branch`` on the one-element bool ``cond``.
* Scan-8: batch axis 0, sequence axis 1, optional ``sequence_lens``; each batch row runs on its own
  (its states are ``init[b]``), a reverse direction reads that row's own last valid step first,
  scan outputs past a row's length are zeros (the schema leaves them undefined; onnxruntime writes
  zeros): lengths ``[4, 2]`` over 4 steps give a second row ``[y0, y1, 0, 0]``.
* Scan-9+: ``scan_input_axes``/``scan_output_axes`` (default 0; negative from 11) and
  ``scan_input_directions``/``scan_output_directions`` (default forward): a reversed output puts
  the first iteration's value last.
* SequenceMap-17: the body runs once per element of the first input (a sequence); a sequence input
  gives the body its element ``i``, a tensor input the whole tensor; output ``j`` is the sequence
  of the body's output ``j``: ``[a, b]`` and a tensor ``t`` through ``Add`` give ``[a + t, b + t]``.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Any

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, normalize_axis, register

if TYPE_CHECKING:
    from ovpool.engine.graph import CompiledGraph


def _outer_slices(node: OpNode) -> dict[str, slice]:
    """Where each subgraph's outer values sit in a kernel call's arguments: after the node's own
    inputs, in ``node.subgraphs`` order (an If with one input whose branches read 1 and 2 outer
    values: ``then_branch`` args[1:2], ``else_branch`` args[2:4])."""
    slices: dict[str, slice] = {}
    offset = len(node.constants)
    for name, graph in node.subgraphs.items():
        slices[name] = slice(offset, offset + len(graph.outer_names))
        offset += len(graph.outer_names)
    return slices


def _split(node: OpNode, args: Sequence[Any]) -> tuple[Sequence[Any], dict[str, Sequence[Any]]]:
    """The node's own inputs, and each subgraph's outer values, from one kernel call's arguments."""
    return args[: len(node.constants)], {name: args[where] for name, where in _outer_slices(node).items()}


def _body(node: OpNode, attribute: str) -> CompiledGraph:
    graph = node.subgraphs.get(attribute)
    if graph is None:
        raise node.fail("is required (a graph)", attribute)
    return graph


def _stack(
    node: OpNode, values: list[Any], axis: int, index: int, empty: tuple[np.dtype | None, tuple[int | None, ...] | None]
) -> np.ndarray:
    """Per-iteration values of scan output ``index`` joined on a new ``axis``; with no iteration,
    an empty tensor of the body output's declared type (which must be known)."""
    if not values:
        dtype, dims = empty
        if dtype is None or dims is None or None in dims:
            raise node.fail(
                f"ran no iteration and the body does not declare scan output {index}'s type and dims, so its empty value is unknown"
            )
        shape = [int(d) for d in dims if d is not None]
        shape.insert(axis if axis >= 0 else len(shape) + 1 + axis, 0)
        return np.zeros(shape, dtype=dtype)
    if any(not isinstance(v, np.ndarray) for v in values):
        raise node.fail(f"scan output {index} is not a tensor (a sequence or optional?): ovpool stacks tensors only")
    try:
        return np.stack(values, axis=axis)
    except ValueError as exc:
        shapes = sorted({tuple(v.shape) for v in values})
        raise node.fail(f"scan output {index} changes shape between iterations ({shapes}): {exc}") from None


def _scalar(node: OpNode, value: np.ndarray, what: str) -> Any:
    if isinstance(value, np.ndarray) and value.size == 1:
        return value.item()
    array = np.asarray(value)
    if array.size != 1:
        raise node.fail(f"{what} must hold one value, got shape {list(array.shape)}")
    return array.reshape(()).item()


@register("Loop", 1)
def loop(node: OpNode) -> Kernel:
    """Loop: ``for i in range(M) while cond``; M and cond both omitted would never end and is refused."""
    body = _body(node, "body")
    own = len(node.constants)
    carried = max(own - 2, 0)
    if len(body.input_names) != 2 + carried:
        raise node.fail(
            f"body takes {len(body.input_names)} inputs; the node gives iteration_num, cond and {carried} loop-carried values"
        )
    scans = len(body.output_names) - 1 - carried
    if scans < 0:
        raise node.fail(
            f"body returns {len(body.output_names)} outputs; it must return cond and the {carried} loop-carried values"
        )
    if node.n_outputs > carried + scans:
        raise node.fail(f"names {node.n_outputs} outputs; the body gives {carried} loop-carried values and {scans} scan outputs")
    empty = body.output_types()[1 + carried :]

    def kernel(*args: Any) -> tuple[Any, ...]:
        inputs, outer = _split(node, args)
        inputs = list(inputs) + [None] * (2 - min(own, 2))
        m, cond = inputs[0], inputs[1]
        state = list(inputs[2:])
        if m is None and cond is None:
            raise node.fail("has neither M nor cond: the loop would never end")
        trips = None if m is None else int(_scalar(node, m, "M"))
        going = True if cond is None else bool(_scalar(node, cond, "cond"))
        collected: list[list[Any]] = [[] for _ in range(scans)]
        run = body.repeated(outer["body"])
        i = 0
        while going and (trips is None or i < trips):
            results = run([np.array(i, dtype=np.int64), np.array(going), *state])
            going = bool(_scalar(node, results[0], "the body's cond output"))
            state = results[1 : 1 + carried]
            for k in range(scans):
                collected[k].append(results[1 + carried + k])
            i += 1
        stacked = [_stack(node, collected[k], 0, k, empty[k]) for k in range(scans)]
        return tuple((state + stacked)[: node.n_outputs])

    return kernel


@register("If", 1)
def if_(node: OpNode) -> Kernel:
    """If: ``then_branch`` when the one-element bool ``cond`` is true, else ``else_branch``; both
    must give the node's outputs (their shapes may differ)."""
    then_branch, else_branch = _body(node, "then_branch"), _body(node, "else_branch")
    for name, branch in (("then_branch", then_branch), ("else_branch", else_branch)):
        if branch.input_names:
            raise node.fail(f"takes {len(branch.input_names)} inputs; a branch takes none", name)
        if len(branch.output_names) < node.n_outputs:
            raise node.fail(f"returns {len(branch.output_names)} outputs; the node names {node.n_outputs}", name)

    n = node.n_outputs
    where = _outer_slices(node)
    then_outer, else_outer = where["then_branch"], where["else_branch"]
    run_then, run_else = then_branch.branch(), else_branch.branch()

    def kernel(*args: Any) -> tuple[Any, ...]:
        if bool(_scalar(node, args[0], "cond")):
            return tuple(run_then(args[then_outer])[:n])
        return tuple(run_else(args[else_outer])[:n])

    return kernel


def _scan_counts(node: OpNode, body: CompiledGraph, given: int) -> tuple[int, int, int]:
    """(states N, scan inputs M, scan outputs K) from ``num_scan_inputs`` and the body."""
    if "num_scan_inputs" not in node.attrs:
        raise node.fail("is required", "num_scan_inputs")
    m = int(node.attrs["num_scan_inputs"])
    if not 1 <= m <= given:
        raise node.fail(f"{m} must be between 1 and the {given} state and scan inputs", "num_scan_inputs")
    n = given - m
    if len(body.input_names) != n + m:
        raise node.fail(f"body takes {len(body.input_names)} inputs; the node gives {n} states and {m} scan inputs")
    k = len(body.output_names) - n
    if k < 0:
        raise node.fail(f"body returns {len(body.output_names)} outputs, fewer than the {n} states")
    if node.n_outputs > n + k:
        raise node.fail(f"names {node.n_outputs} outputs; the body gives {n} states and {k} scan outputs")
    return n, m, k


def _directions(node: OpNode, attribute: str, count: int) -> list[int]:
    values = [int(v) for v in node.attr(attribute, [0] * count)]
    if len(values) != count or any(v not in (0, 1) for v in values):
        raise node.fail(f"{values} must be {count} values, each 0 (forward) or 1 (reverse)", attribute)
    return values


@register("Scan", 8, 8)
def scan_8(node: OpNode) -> Kernel:
    """Scan-8: inputs ``(sequence_lens, states..., scans...)``, batch axis 0 and sequence axis 1;
    ``directions`` per scan input."""
    body = _body(node, "body")
    given = len(node.constants) - 1
    n, m, k = _scan_counts(node, body, given)
    directions = _directions(node, "directions", m)
    empty = body.output_types()[n:]

    def kernel(*args: Any) -> tuple[Any, ...]:
        (lens, *rest), outer = _split(node, args)
        states, scans = rest[:n], rest[n : n + m]
        if any(s.ndim < 2 for s in scans):
            raise node.fail("scan inputs need a batch axis 0 and a sequence axis 1")
        batch, steps = scans[0].shape[:2]
        if any(s.shape[:2] != (batch, steps) for s in scans) or any(len(s) != batch for s in states):
            raise node.fail("states and scan inputs must share the batch size, scan inputs the sequence length")
        if lens is None:
            lengths = [steps] * batch
        else:
            lengths = [int(v) for v in np.asarray(lens).reshape(-1)]
            if len(lengths) != batch or any(not 0 <= v <= steps for v in lengths):
                raise node.fail(f"sequence_lens {lengths} must give each of the {batch} rows a length in [0, {steps}]")
        final: list[list[Any]] = [[] for _ in range(n)]
        rows: list[list[np.ndarray]] = [[] for _ in range(k)]
        run = body.repeated(outer["body"])
        for b, length in enumerate(lengths):
            state = [s[b] for s in states]
            produced: list[list[Any]] = [[] for _ in range(k)]
            for t in range(length):
                elements = [s[b, length - 1 - t if d else t] for s, d in zip(scans, directions)]
                results = run([*state, *elements])
                state = results[:n]
                for j in range(k):
                    produced[j].append(results[n + j])
            for i in range(n):
                final[i].append(state[i])
            for j in range(k):
                row = _stack(node, produced[j], 0, n + j, empty[j])
                if length < steps:
                    padding = np.zeros((steps - length, *row.shape[1:]), dtype=row.dtype)
                    row = np.concatenate([row, padding])
                rows[j].append(row)
        result = [np.stack(f) for f in final] + [_stack(node, r, 0, n + j, (None, None)) for j, r in enumerate(rows)]
        return tuple(result[: node.n_outputs])

    return kernel


@register("Scan", 9)
def scan(node: OpNode) -> Kernel:
    """Scan-9+: inputs ``(states..., scans...)``, each scan input iterated along its
    ``scan_input_axes`` entry in its ``scan_input_directions`` direction; outputs stacked along
    ``scan_output_axes``, in ``scan_output_directions`` order. Axes are non-negative in Scan-9,
    may be negative from Scan-11 (-1 of a rank-3 scan input is axis 2)."""
    body = _body(node, "body")
    n, m, k = _scan_counts(node, body, len(node.constants))
    in_dirs = _directions(node, "scan_input_directions", m)
    out_dirs = _directions(node, "scan_output_directions", k)
    in_axes = [int(a) for a in node.attr("scan_input_axes", [0] * m)]
    out_axes = [int(a) for a in node.attr("scan_output_axes", [0] * k)]
    if len(in_axes) != m:
        raise node.fail(f"{in_axes} must have {m} values", "scan_input_axes")
    if len(out_axes) != k:
        raise node.fail(f"{out_axes} must have {k} values", "scan_output_axes")
    if node.since < 11:
        for attribute, axes in (("scan_input_axes", in_axes), ("scan_output_axes", out_axes)):
            if any(a < 0 for a in axes):
                raise node.fail(f"{axes}: Scan-9 axes are non-negative (negative ones from Scan-11)", attribute)
    empty = body.output_types()[n:]

    def kernel(*args: Any) -> tuple[Any, ...]:
        inputs, outer = _split(node, args)
        state, scans = list(inputs[:n]), inputs[n : n + m]
        axes = [normalize_axis(node, a, s.ndim, "scan_input_axes") for a, s in zip(in_axes, scans)]
        lengths = {s.shape[a] for s, a in zip(scans, axes)}
        if len(lengths) != 1:
            raise node.fail(f"scan inputs have different sequence lengths {sorted(lengths)}")
        steps = lengths.pop()
        produced: list[list[Any]] = [[] for _ in range(k)]
        prefixes = [(slice(None),) * a for a in axes]
        run = body.repeated(outer["body"])
        for t in range(steps):
            elements = [s[p + (steps - 1 - t if d else t,)] for s, p, d in zip(scans, prefixes, in_dirs)]
            results = run([*state, *elements])
            state = results[:n]
            for j in range(k):
                produced[j].append(results[n + j])
        stacked = []
        for j in range(k):
            values = produced[j][::-1] if out_dirs[j] else produced[j]
            rank = values[0].ndim + 1 if values and isinstance(values[0], np.ndarray) else None
            axis = out_axes[j] if rank is None else normalize_axis(node, out_axes[j], rank, "scan_output_axes")
            stacked.append(_stack(node, values, axis, n + j, empty[j]))
        return tuple((state + stacked)[: node.n_outputs])

    return kernel


@register("SequenceMap", 17)
def sequence_map(node: OpNode) -> Kernel:
    """SequenceMap: the body applied to each sample (module docstring); every sequence input must
    have the first one's length, and an empty first sequence gives empty output sequences."""
    body = _body(node, "body")
    own = len(node.constants)
    if own < 1:
        raise node.fail("needs input_sequence, the sequence that sets the number of samples")
    if len(body.input_names) != own:
        raise node.fail(f"body takes {len(body.input_names)} inputs; the node gives {own}")
    if len(body.output_names) != node.n_outputs:
        raise node.fail(f"body returns {len(body.output_names)} outputs; the node names {node.n_outputs}")

    def kernel(*args: Any) -> tuple[Any, ...]:
        inputs, outer = _split(node, args)
        if not isinstance(inputs[0], list):
            raise node.fail(f"input 0 must be a sequence, got {type(inputs[0]).__name__}")
        count = len(inputs[0])
        for i, value in enumerate(inputs):
            if isinstance(value, list) and len(value) != count:
                raise node.fail(f"input {i} is a sequence of {len(value)} tensors; input 0 has {count}")
        produced: list[list[Any]] = [[] for _ in range(node.n_outputs)]
        run = body.repeated(outer["body"])
        for t in range(count):
            results = run([value[t] if isinstance(value, list) else value for value in inputs])
            for j, result in enumerate(results):
                produced[j].append(result)
        return tuple(produced)

    return kernel
