"""The one decoder of a NodeProto's attributes: ``attribute(node, "axis", 1)`` is the node's axis,
or 1 when it has none; text is decoded (``mode="linear"`` is ``"linear"``) unless asked for raw
(``text=False``: ``b"linear"``, as ``onnx.helper.get_attribute_value`` gives it); tensors stay
TensorProtos unless asked for as numpy arrays (``arrays=True``, what the numpy engine's kernels
take: ``OpNode.attrs``). A core leaf module (onnx only), so the model checks, the quantization
readers, the conversion's facts and the engine share it."""

from __future__ import annotations

from typing import Any

from onnx import AttributeProto, NodeProto, helper, numpy_helper


def attribute_value(attribute: AttributeProto, text: bool = True, arrays: bool = False) -> Any:
    """An attribute's value (``helper.get_attribute_value``), its text decoded with ``text``: a
    STRING ``b"linear"`` is ``"linear"``, STRINGS ``[b"a", b"b"]`` are ``["a", "b"]``; with
    ``arrays`` a TENSOR is a numpy array (``value=[2.5]`` float32: ``array([2.5], float32)``) and
    TENSORS a list of them. A graph stays a ``GraphProto``."""
    if arrays and attribute.type == AttributeProto.TENSOR:
        return numpy_helper.to_array(attribute.t)
    if arrays and attribute.type == AttributeProto.TENSORS:
        return [numpy_helper.to_array(t) for t in attribute.tensors]
    value = helper.get_attribute_value(attribute)
    if not text:
        return value
    if isinstance(value, bytes):
        return value.decode()
    if attribute.type == AttributeProto.STRINGS:
        return [v.decode() for v in value]
    return value


def attribute(node: NodeProto, name: str, default: Any = None, text: bool = True) -> Any:
    """The node's attribute ``name`` decoded (``attribute_value``), or ``default`` when it has
    none: Softmax's ``axis=1`` gives 1, a Resize without ``mode`` ``attribute(node, "mode",
    "nearest")`` gives ``"nearest"``."""
    for found in node.attribute:
        if found.name == name:
            return attribute_value(found, text)
    return default


def attributes(node: NodeProto, text: bool = True, arrays: bool = False) -> dict[str, Any]:
    """Every attribute of the node by name, decoded (``attribute_value``)."""
    return {found.name: attribute_value(found, text, arrays) for found in node.attribute}
