"""``opset=N``: retarget the model's default-domain opset to N.

Pooling nodes are re-emitted by ovpool's own rules (``onnx_adapter.spec_from_node`` at the old
opset, ``node_from_spec`` at N), so their meaning is kept exactly or the pass refuses, naming the
node and what version N cannot say: AveragePool dilations before opset 19, ``ceil_mode`` before 10,
``count_include_pad`` with pads before 7, MaxPool indices before 8, int8/uint8 MaxPool before 12,
bfloat16 before 22. AveragePool-1 has no ``count_include_pad`` and excludes pads, so a model at
opset 1-6 moves to opset 11 unchanged in meaning (and onnxruntime, which has no AveragePool-1,
runs it). Every other node goes through ``onnx.version_converter``, with the pooling nodes held
out of its sight in a private domain; the IR version is raised if opset N needs a newer one.
"""

from __future__ import annotations

import re

import onnx
from onnx import ModelProto, helper, numpy_helper, version_converter

from ovpool import dtypes
from ovpool.errors import UnsupportedError
from ovpool.onnx.model import default_opset
from ovpool.transforms import graph, shapes
from ovpool.transforms.framework import VALID, Pass, Property, UnknownPassError, listed

_HELD = "ovpool.held"


def retarget(model: ModelProto, target: int) -> bool:
    """Move ``model`` to default-domain opset ``target``; True if it was at another opset."""
    check_target(target)
    current = default_opset(model)
    if current == target:
        return False
    pools = graph.pool_nodes(model)
    emitted = {p.node.output[0]: graph.emit(p, p.spec, target) for p in pools}
    work = ModelProto()
    work.CopyFrom(model)
    for pool in pools:
        work.graph.node[pool.index].domain = _HELD
    work.opset_import.append(helper.make_opsetid(_HELD, 1))
    if any(n.domain in ("", "ai.onnx") for n in work.graph.node):
        work = _convert(work, current, target)
    else:
        _set_default_opset(work, target)
    for index, node in enumerate(work.graph.node):
        if node.domain == _HELD:
            work.graph.node[index].CopyFrom(emitted[node.output[0]])
    for field in ("input", "output", "value_info"):  # the converter writes onnx's inferred shapes there
        values = getattr(work.graph, field)
        del values[:]
        values.extend(getattr(model.graph, field))
    _retype_pad_values(work)
    kept = [o for o in work.opset_import if o.domain != _HELD]
    del work.opset_import[:]
    work.opset_import.extend(kept)
    work.ir_version = max(model.ir_version, helper.find_min_ir_version_for(list(kept), ignore_unknown=True))
    model.CopyFrom(work)
    return True


def _retype_pad_values(model: ModelProto) -> None:
    """Give each Pad's ``constant_value`` (an initializer or a Constant node's tensor) its data
    input's element type: onnx's version converter turns Pad-2's float ``value`` attribute into a
    float32 Constant even for a float16 tensor, which onnxruntime and OpenVINO refuse (a -inf Pad before a half MaxPool)."""
    pads = [n for n in model.graph.node if n.op_type == "Pad" and n.domain in ("", "ai.onnx") and len(n.input) > 2 and n.input[2]]
    if not pads:
        return
    types = shapes.tensor_types(model)
    values = {i.name: i for i in model.graph.initializer}
    for node in model.graph.node:
        if node.op_type == "Constant" and node.attribute and node.attribute[0].name == "value":
            values[node.output[0]] = node.attribute[0].t
    for node in pads:
        dtype = types.get(node.input[0], (None, None))[0]
        value = values.get(node.input[2])
        if dtype is None or value is None or value.data_type == dtypes.to_onnx(dtype):
            continue
        array = numpy_helper.to_array(value).astype(dtypes.np_dtype(dtype))
        value.CopyFrom(numpy_helper.from_array(array, value.name))


def check_target(target: int) -> None:
    """Refuse an opset the installed onnx does not know (a usage error: exit 2)."""
    newest = onnx.defs.onnx_opset_version()
    if not 1 <= target <= newest:
        raise UnknownPassError(f"opset={target}: onnx {onnx.__version__} knows opsets 1 to {newest}")


def _convert(model: ModelProto, current: int, target: int) -> ModelProto:
    try:
        return version_converter.convert_version(model, target)
    except (RuntimeError, ValueError, onnx.checker.ValidationError) as exc:
        reason = str(exc).strip().splitlines()[-1]
        op = re.search(r"for (\w+)", reason)
        nodes = [n.name or n.output[0] for n in model.graph.node if op and n.op_type == op.group(1)]
        where = f" (node(s) {', '.join(nodes[:5])})" if nodes else ""
        raise UnsupportedError(
            f"opset={target}: onnx.version_converter cannot move the model's non-pooling nodes from opset "
            f"{current}{where}: {reason}"
        ) from exc


def _set_default_opset(model: ModelProto, target: int) -> None:
    for imp in model.opset_import:
        if imp.domain in ("", "ai.onnx"):
            imp.version = target


def opset_pass(target: int) -> Pass:
    """The ``opset=N`` pass for one N (N outside the installed onnx's opsets is refused here)."""
    check_target(target)
    at_target = Property(
        f"opset={target}",
        f"imports default-domain opset {target}",
        lambda model: [] if default_opset(model) == target else [f"the model imports opset {default_opset(model)}"],
    )
    return listed(
        "opset=N", requires=(VALID,), ensures=(VALID, at_target), rewrite=lambda model: retarget(model, target), value=target
    )
