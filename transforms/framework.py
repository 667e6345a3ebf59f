"""The pass framework: what a pass is, the properties it requires and ensures, and the runner.

A pass rewrites an ONNX model in place and returns whether it changed anything. Its contract:
it requires some properties of the model before it runs and ensures others after; it keeps every
node name, the graph inputs and the graph outputs; running it twice changes nothing the second
time; and its result is ``VALID``: it passes ``onnx.checker.check_model`` and strict shape
inference, with every pooling size taken from ovpool's shape engine (``transforms.shapes``).
``run_passes`` enforces all of that on every run: a required property that does not hold is an ``UnsupportedError`` naming
the nodes, and a broken promise (an ensured property that does not hold, a renamed node, a changed
graph input) is an ``OvpoolError`` naming the pass, never a silently wrong model.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import dataclass

import onnx
from onnx import ModelProto

from ovpool.errors import ModelError, OvpoolError, SpecError, UnsupportedError
from ovpool.transforms import catalog, shapes
from ovpool.transforms.catalog import UnknownPassError as UnknownPassError


@dataclass(frozen=True)
class Property:
    """Something that can be true of a model. ``violations`` lists where it is not (node names or
    one message); an empty list means it holds."""

    name: str
    description: str
    violations: Callable[[ModelProto], list[str]]


@dataclass(frozen=True)
class Pass:
    """A named rewrite: ``rewrite(model)`` mutates the model and returns whether it changed it."""

    name: str
    summary: str
    requires: tuple[Property, ...]
    ensures: tuple[Property, ...]
    rewrite: Callable[[ModelProto], bool]


def listed(
    name: str,
    requires: tuple[Property, ...],
    ensures: tuple[Property, ...],
    rewrite: Callable[[ModelProto], bool],
    value: int | None = None,
) -> Pass:
    """The pass the catalog lists as ``name`` (``catalog.PASSES``), with the catalog's name and
    summary; for a family, the pass for ``value``: ``listed("opset=N", ..., value=11)`` is
    ``opset=11``, "retarget the default-domain opset to 11". A name with no row is a ``KeyError``."""
    named, summary = catalog.entry(name).named(value)
    return Pass(named, summary, requires, ensures, rewrite)


@dataclass(frozen=True)
class Transformed:
    """The rewritten model and the names of the passes that changed it, in order."""

    model: ModelProto
    changed: tuple[str, ...]


def _checker_violations(model: ModelProto) -> list[str]:
    """What is wrong with ``model``, with pooling sizes from ovpool's shape engine rather than
    onnx's shape inference (which gets some wrong: ``transforms.shapes``): the checker without
    ``full_check`` (structure, schemas, attributes), every pooling node's spec and sizes, the
    declared dims of pooling outputs, then strict onnx shape inference of every other node over
    the pinned pools (a Relu declared ``[1, 1, 4]`` after a pool giving ``[1, 1, 3]`` is refused)."""
    try:
        onnx.checker.check_model(model)
    except onnx.checker.ValidationError as exc:
        return [checker_failure(model, exc)]
    try:
        pinned, types = shapes.pinned_model(model)
    except (SpecError, UnsupportedError, ModelError) as exc:
        return [str(exc)]
    found = shapes.declared_mismatches(model, types)
    if found:
        return found
    try:
        onnx.shape_inference.infer_shapes(pinned, strict_mode=True, data_prop=True)
    except (onnx.shape_inference.InferenceError, RuntimeError) as exc:
        return [str(exc).strip().splitlines()[0]]
    return []


def checker_failure(model: ModelProto, exc: Exception) -> str:
    """The checker's complaint with the value or node it is about: the checker's own message names
    neither for a missing type or shape (``Field 'shape' of 'type' is required but missing``) or an
    attribute a node's schema lacks. A graph value without a type or shape is named first
    (``graph output 'z': has a type without a shape``), then the first node the checker refuses
    on its own (``node 'pool' (MaxPool): Unrecognized attribute: bogus for operator MaxPool``)."""
    message = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
    graph = model.graph
    for kind, values in (("graph input", graph.input), ("graph output", graph.output), ("value_info", graph.value_info)):
        for value in values:
            if not value.HasField("type"):
                return f"{kind} '{value.name}': has no type ({message})"
            if value.type.HasField("tensor_type") and not value.type.tensor_type.HasField("shape"):
                return f"{kind} '{value.name}': has a type without a shape ({message})"
    context = onnx.checker.C.CheckerContext()
    context.ir_version = model.ir_version
    context.opset_imports = {entry.domain: entry.version for entry in model.opset_import}
    for node in graph.node:
        try:
            onnx.checker.check_node(node, context)
        except onnx.checker.ValidationError as failure:
            return f"node '{node.name}' ({node.op_type}): {str(failure).strip().splitlines()[0]}"
    return message


VALID = Property(
    "valid",
    "passes onnx.checker.check_model and strict shape inference with pooling sizes by ovpool's rules",
    _checker_violations,
)


def run_passes(model: ModelProto, passes: Sequence[Pass]) -> Transformed:
    """Apply ``passes`` in the order given to a copy of ``model``.

    Before each pass its required properties are checked (skipping those the previous pass has
    just ensured); after it, its ensured properties, the graph's inputs and outputs and every node
    name of the model it was given.
    """
    work = ModelProto()
    work.CopyFrom(model)
    established: set[str] = set()
    changed: list[str] = []
    for step in passes:
        for prop in step.requires:
            if prop.name not in established:
                _demand(work, prop, f"pass '{step.name}' needs a model that {prop.description}", UnsupportedError)
        before = _interface(work)
        if step.rewrite(work):
            changed.append(step.name)
        _check_kept(before, _interface(work), step.name)
        for prop in step.ensures:
            _demand(work, prop, f"pass '{step.name}' failed to ensure {prop.name}", OvpoolError)
        established = {prop.name for prop in step.ensures}
    return Transformed(work, tuple(changed))


def _demand(model: ModelProto, prop: Property, message: str, error: type[OvpoolError]) -> None:
    found = prop.violations(model)
    if found:
        shown = ", ".join(found[:5]) + (f" and {len(found) - 5} more" if len(found) > 5 else "")
        raise error(f"{message}; not true of: {shown}")


@dataclass(frozen=True)
class _Interface:
    inputs: tuple[bytes, ...]
    outputs: tuple[bytes, ...]
    node_names: frozenset[str]


def _interface(model: ModelProto) -> _Interface:
    graph = model.graph
    return _Interface(
        tuple(v.SerializeToString(deterministic=True) for v in graph.input),
        tuple(v.SerializeToString(deterministic=True) for v in graph.output),
        frozenset(n.name for n in graph.node if n.name),
    )


def _check_kept(before: _Interface, after: _Interface, name: str) -> None:
    if before.inputs != after.inputs or before.outputs != after.outputs:
        raise OvpoolError(f"pass '{name}' changed the graph's inputs or outputs")
    lost = sorted(before.node_names - after.node_names)
    if lost:
        raise OvpoolError(f"pass '{name}' lost node name(s) {', '.join(lost)}")
