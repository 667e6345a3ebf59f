"""The engine that applies ``DEFECTS``: ``defect_of`` finds a node's row, ``rewrite`` the
replacements of every node that has one (refusing, or with ``allow_inexact`` warning of, those no
lowering takes) and ``apply`` writes them into a copy of the model."""

from __future__ import annotations

import functools
import warnings
from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING

import onnx
import onnx.defs
from onnx import ModelProto, NodeProto, helper

from ovpool.defects import Defect
from ovpool.errors import ModelError, UnsupportedError
from ovpool.names import FreshNames
from ovpool.onnx.facts import ModelFacts
from ovpool.onnx.model import Weights, graphs
from ovpool.ov import DOMAIN
from ovpool.ov.node_facts import Deferred, Facts
from ovpool.ov.translate.facts import _types
from ovpool.ov.translate.registry import REWRITE_ROWS as _ROWS

if TYPE_CHECKING:
    from ovpool.inputs import InputShape


def defect_of(node: NodeProto, opset: int, facts: Facts) -> tuple[Defect, int, str] | None:
    """The first row of ``DEFECTS`` the node has (of its op's rewrite entry in the translation
    registry), its since-version and the condition's text; one schema lookup per op and opset."""
    rows = _ROWS.get(node.op_type) if node.domain in ("", "ai.onnx") else None
    if not rows:
        return None
    since = _since_version(node.op_type, opset)
    for defect in rows:
        if defect.covers(node.op_type, since):
            condition = defect.condition(node, since, facts) if defect.condition is not None else "every node"
            if condition is not None:
                return defect, since, condition
    return None


@functools.cache
def _since_version(op_type: str, opset: int) -> int:
    """The since-version of the default domain's ``op_type`` in force at ``opset`` (Resize at 13:
    13), looked up once (a model of 342 Constant nodes: one lookup, not 342); an operator with no
    schema there is ``onnx.defs.SchemaError``."""
    return onnx.defs.get_schema(op_type, opset).since_version


def rewrite(
    proto: ModelProto,
    label: str,
    shapes: Sequence[InputShape] = (),
    allow_inexact: bool = False,
    weights: Weights | None = None,
    model_facts: ModelFacts | None = None,
) -> dict[tuple[int, int], list[NodeProto]]:
    """``{(graph, node index): the nodes that replace it}`` for every node with a defect ``DEFECTS``
    lowers, in the main graph (graph 0) and its subgraphs (numbered in ``graphs`` order; their
    tensors have no inferred types, so only the lowerings that need none apply there). A node no
    lowering takes (a refused row or a lowering's missing precondition) is an ``UnsupportedError``
    naming it, or with ``allow_inexact`` a warning of the same line and the node is left to OpenVINO.
    ``weights``, those ``load_apart`` left in the model file, are constants as the others are.
    ``model_facts``, the conversion's ``ModelFacts`` of ``proto`` (else made of ``proto``, ``shapes`` and
    ``weights``), gives the types and constants, each worked out once for the whole conversion."""
    model = model_facts if model_facts is not None else ModelFacts(proto, label, weights=weights, shapes=tuple(shapes))
    every = list(model.subgraphs)
    found_ops = [(g, i, node) for g, graph in enumerate(every) for i, node in enumerate(graph.node) if node.op_type in _ROWS]
    if not found_ops:
        return {}
    opset = model.opset
    taken = {name for graph in every for node in graph.node for name in [node.name, *node.output]}
    taken |= {i.name for i in proto.graph.initializer} | {i.name for i in proto.graph.input}
    types, constants = Deferred(lambda: _types(model)), Deferred(lambda: model.constants)
    facts = Facts(opset, types, constants, FreshNames(taken), frozenset(model.graph_inputs))
    replaced: dict[tuple[int, int], list[NodeProto]] = {}
    for g, index, node in found_ops:
        try:
            found = defect_of(node, opset, facts)
        except (ValueError, TypeError, IndexError, onnx.defs.SchemaError):
            continue  # a malformed node (axis="x"): OpenVINO's own conversion names what is wrong
        if found is None:
            continue
        defect, since, condition = found
        try:
            lowered = defect.lower(node, since, facts) if defect.lower is not None else None
        except (ValueError, TypeError, IndexError) as exc:
            raise ModelError(f"node '{node.name or node.output[0]}' ({node.op_type}-{since}): {condition}: {exc}") from None
        if isinstance(lowered, list):
            replaced[(g, index)] = lowered
            continue
        need = "ovpool has no exact lowering" if lowered is None else f"ovpool's exact lowering needs {lowered}"
        _inexact(label, node, defect, since, condition, need, allow_inexact)
    return replaced


def _inexact(label: str, node: NodeProto, defect: Defect, since: int, condition: str, need: str, allow: bool) -> None:
    """Refuse the node (or with ``allow``, warn of it): one line naming it, the defect and ``need``."""
    where = f"node '{node.name or node.output[0]}' ({node.op_type}-{since}): {condition}: OpenVINO {defect.openvino}"
    if allow:
        warnings.warn(f"{label}: {where}; {need}; written as OpenVINO converts it (--allow-inexact)", stacklevel=2)
        return
    raise UnsupportedError.in_file(label, f"{where}; {need} (--allow-inexact writes it anyway)")


def apply(proto: ModelProto, replaced: Mapping[tuple[int, int], list[NodeProto]]) -> ModelProto:
    """A copy of ``proto`` with the nodes of ``rewrite`` in place (and the ``ai.ovpool`` opset when
    one is written). Subgraphs are rebuilt before the graphs that hold them (deepest last in
    ``graphs`` order), so a rebuilt parent copies its children's new nodes."""
    model = ModelProto()
    model.CopyFrom(proto)
    every = list(graphs(model.graph))
    for g in sorted({g for g, _index in replaced}, reverse=True):
        graph = every[g]
        nodes = [new for i, node in enumerate(graph.node) for new in replaced.get((g, i), [node])]
        del graph.node[:]
        graph.node.extend(nodes)
    if any(n.domain == DOMAIN for nodes in replaced.values() for n in nodes):
        if not any(o.domain == DOMAIN for o in model.opset_import):
            model.opset_import.append(helper.make_opsetid(DOMAIN, 1))
    return model
