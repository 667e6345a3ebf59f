"""onnx.reference for the nodes ovpool's operator table does not cover, where it is not known to be wrong.

A node whose schema version no registered range covers gets one single-node
``onnx.reference.ReferenceEvaluator``, built when the session is prepared (onnx.reference is
imported then, not before). Before that, :data:`DEFECTS` is consulted: onnx.reference gives wrong
answers (or fails obscurely) on some operator versions real exporters emit, and such a node is
refused with a ``ModelError`` naming the node, its version and the reason, never run.

Each row's condition looks at the node's attributes and input values (:class:`Site`). At prepare
time only constant inputs are known; a condition that needs an input that is not constant answers
``None`` and is asked again on every run, with all inputs: a Pad-11 whose ``pads`` come from the
graph is refused on the run whose pads hold a negative value, e.g. ``[0, -1, 0, 0]``.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
from onnx import NodeProto, TypeProto, helper

from ovpool.errors import ModelError, OvpoolError
from ovpool.runtime.ops.base import LATEST, Kernel, OpNode


@dataclass(frozen=True)
class Site:
    """A node as a defect condition sees it: attributes as written (defaults not applied), input
    names (``""`` for an omitted one) and values (``None`` where not known yet)."""

    attrs: Mapping[str, Any]
    names: tuple[str, ...]
    values: tuple[Any, ...]

    def present(self, index: int) -> bool:
        return index < len(self.names) and bool(self.names[index])

    def value(self, index: int) -> Any:
        return self.values[index] if index < len(self.values) else None


Condition = Callable[[Site], "bool | None"]


def _always(site: Site) -> bool:
    return True


@dataclass(frozen=True)
class Defect:
    """onnx.reference is wrong on ``op_type`` since-versions ``since``..``until`` where ``applies``
    (True: refuse; False: fine; None: decided on each run, when the inputs it needs are known)."""

    op_type: str
    since: int
    until: int
    reason: str
    applies: Condition = _always
    domain: str = ""


def _axis_not_last(site: Site) -> bool | None:
    """Softmax-1/11 family: the 2-D coercion at ``axis`` (default 1) equals onnx.reference's
    one-axis softmax only when ``axis`` is the last axis."""
    axis = int(site.attrs.get("axis", 1))
    if axis == -1:
        return False
    x = site.value(0)
    if x is None:
        return None
    rank = np.ndim(x)
    return not (-rank <= axis < rank) or axis % rank != rank - 1


def _grid_mode(site: Site) -> bool:
    return site.attrs.get("mode", "bilinear") in ("bilinear", "bicubic")


def _grouped_with_bias(site: Site) -> bool:
    return int(site.attrs.get("group", 1)) > 1 and site.present(2)


def _sequence_lens(site: Site) -> bool | None:
    """LSTM/GRU/RNN ``sequence_lens`` (input 4) shorter than the sequence: onnx.reference ignores
    it. Lengths equal to the whole sequence (seq axis 0, or 1 with layout=1) are harmless."""
    if not site.present(4):
        return False
    lens, x = site.value(4), site.value(0)
    if lens is None or x is None:
        return None
    steps = np.shape(x)[1 if int(site.attrs.get("layout", 0)) == 1 else 0]
    return bool(np.any(np.asarray(lens) != steps))


def _negative_pads(site: Site) -> bool | None:
    pads = site.attrs.get("pads") if "pads" in site.attrs else site.value(1)
    if pads is None:
        return None if site.present(1) else False
    return bool(np.any(np.asarray(pads) < 0))


def _tf_half_pixel_for_nn(site: Site) -> bool:
    return site.attrs.get("coordinate_transformation_mode") == "tf_half_pixel_for_nn"


def _upsample_not_nearest_integer(site: Site) -> bool | None:
    if site.attrs.get("mode", "nearest") != "nearest":
        return True
    scales = site.attrs.get("scales") if "scales" in site.attrs else site.value(1)
    if scales is None:
        return None
    scales = np.asarray(scales, dtype=np.float64)
    return bool(np.any(scales != np.floor(scales)))


def _depth_rank_1(site: Site) -> bool | None:
    depth = site.value(1)
    return None if depth is None else np.ndim(depth) == 1


# onnx.reference (onnx 1.23) against the ONNX schemas, op by op; each reason says what it does instead.
DEFECTS: tuple[Defect, ...] = (
    Defect("BatchNormalization", 7, 7, "onnx.reference has no BatchNormalization-7 and fails in BatchNormalization-6's code"),
    Defect(
        "BatchNormalization",
        9,
        13,
        "onnx.reference blends batch statistics into mean/var with momentum instead of using the given ones",
    ),
    Defect("Softmax", 1, 12, "onnx.reference softmaxes over the one axis, not over the 2-D coercion at axis", _axis_not_last),
    Defect(
        "LogSoftmax", 1, 12, "onnx.reference log-softmaxes over the one axis, not over the 2-D coercion at axis", _axis_not_last
    ),
    Defect(
        "Hardmax", 1, 12, "onnx.reference takes the hardmax over the one axis, not over the 2-D coercion at axis", _axis_not_last
    ),
    Defect(
        "GridSample", 16, 19, "onnx.reference knows only GridSample-20's mode names and fails on bilinear/bicubic", _grid_mode
    ),
    Defect(
        "ConvTranspose",
        1,
        LATEST,
        "onnx.reference adds the first group's biases to every group (group > 1 with B)",
        _grouped_with_bias,
    ),
    Defect("LSTM", 1, LATEST, "onnx.reference ignores sequence_lens", _sequence_lens),
    Defect("GRU", 1, LATEST, "onnx.reference ignores sequence_lens", _sequence_lens),
    Defect("RNN", 1, LATEST, "onnx.reference ignores sequence_lens", _sequence_lens),
    Defect(
        "RoiAlign",
        10,
        15,
        "onnx.reference applies RoiAlign-16's default half_pixel offset; RoiAlign-10 has none (output_half_pixel)",
    ),
    Defect("Pad", 1, LATEST, "onnx.reference cannot crop: negative pads", _negative_pads),
    Defect("Resize", 10, 10, "onnx.reference reads Resize-10's scales input as roi"),
    Defect("Resize", 11, 17, "onnx.reference has no tf_half_pixel_for_nn coordinate transformation", _tf_half_pixel_for_nn),
    Defect("Upsample", 7, 9, "onnx.reference runs only nearest with integer scales", _upsample_not_nearest_integer),
    Defect("OneHot", 9, LATEST, "onnx.reference fails on a rank-1 depth (the schema allows a one-element tensor)", _depth_rank_1),
)


def defects_for(op_type: str, since: int, domain: str = "") -> tuple[Defect, ...]:
    """The rows that may refuse ``op_type``-``since``."""
    return tuple(d for d in DEFECTS if d.op_type == op_type and d.domain == domain and d.since <= since <= d.until)


def reference_kernel(proto: NodeProto, node: OpNode, opsets: Mapping[str, int], ir_version: int) -> Kernel:
    """A kernel running ``proto`` on its own onnx.reference evaluator, or a ``ModelError`` when a
    :data:`DEFECTS` row applies or onnx.reference has no such operator."""
    names = tuple(proto.input[: len(node.constants)])
    pending = []
    for defect in defects_for(node.op_type, node.since, node.domain):
        verdict = defect.applies(Site(node.attrs, names, node.constants))
        if verdict:
            raise _refusal(node, defect)
        if verdict is None:
            pending.append(defect)
    evaluator = _evaluator(proto, node, names, opsets, ir_version)
    fed = [i for i, name in enumerate(names) if name]
    produced = [i for i, name in enumerate(proto.output) if name]

    def kernel(*args: Any) -> tuple[Any, ...]:
        if pending:
            site = Site(node.attrs, names, args)
            for defect in pending:
                if defect.applies(site):
                    raise _refusal(node, defect)
        try:
            results = evaluator.run(None, {f"i{i}": args[i] for i in fed})
        except OvpoolError:
            raise
        except Exception as exc:  # onnx.reference raises whatever its numpy code raises
            raise ModelError(f"{node.label}: onnx.reference failed: {type(exc).__name__}: {exc}") from exc
        outputs: list[Any] = [None] * node.n_outputs
        for i, value in zip(produced, results):
            outputs[i] = value
        return tuple(outputs)

    return kernel


def _refusal(node: OpNode, defect: Defect) -> ModelError:
    return ModelError(
        f"{node.label}: ovpool has no {node.op_type}-{node.since} of its own and {defect.reason}; refusing rather than give a wrong result"
    )


def _evaluator(proto: NodeProto, node: OpNode, names: Sequence[str], opsets: Mapping[str, int], ir_version: int) -> Any:
    """One ReferenceEvaluator on a model of this node alone, inputs ``i0, i1...`` and outputs
    ``o0, o1...`` (omitted ones stay omitted), untyped."""
    from onnx.reference import ReferenceEvaluator

    inputs = [f"i{i}" if name else "" for i, name in enumerate(names)]
    outputs = [f"o{i}" if name else "" for i, name in enumerate(proto.output)]
    single = helper.make_node(proto.op_type, inputs, outputs, name=proto.name, domain=proto.domain)
    single.attribute.extend(proto.attribute)
    graph = helper.make_graph(
        [single],
        "single",
        [helper.make_value_info(n, TypeProto()) for n in inputs if n],
        [helper.make_value_info(n, TypeProto()) for n in outputs if n],
    )
    imports = [helper.make_opsetid(domain, version) for domain, version in opsets.items()]
    model = helper.make_model(graph, opset_imports=imports, ir_version=ir_version or 8)
    try:
        return ReferenceEvaluator(model)
    except Exception as exc:  # onnx.reference raises what its loader raises for unknown operators
        raise ModelError(
            f"{node.label}: ovpool has no {node.op_type}-{node.since}, and onnx.reference cannot run it ({type(exc).__name__}: {exc})"
        ) from exc
