"""ONNX pooling nodes <-> PoolSpec, for every schema version in ``ovpool.onnx.versions``.

The node's version is the schema version its model's opset selects (opset 13 runs AveragePool-11).
Attributes are checked against that schema: one the version does not have is an error, as is a
value outside its domain. Emission picks the version for a target opset and refuses, naming the
feature, what that version cannot say (dilations on AveragePool-11, indices on MaxPool-1, int8
before MaxPool-12).
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from typing import Any

import onnx
import onnx.defs
from onnx import NodeProto, helper

from ovpool import dtypes
from ovpool.attributes import attributes
from ovpool.errors import SpecError, UnsupportedError
from ovpool.onnx.check import check_attribute_types
from ovpool.onnx.versions import ONNX_VERSIONS, POOL_OPS, OnnxPoolVersion, row_for
from ovpool.spec import GLOBAL_KINDS, Divisor, IndexOrder, Indices, Padding, PoolKind, PoolSpec, Rounding

_AUTO_PAD = {
    "NOTSET": Padding.EXPLICIT,
    "SAME_UPPER": Padding.SAME_UPPER,
    "SAME_LOWER": Padding.SAME_LOWER,
    "VALID": Padding.VALID,
}


def schema_version(op_type: str, opset: int, where: str = "") -> int:
    """The schema version an opset selects: ``schema_version("AveragePool", 13) == 11``. An opset
    newer than the installed onnx knows is refused: its pooling ops may have changed."""
    prefix = f"{where}: " if where else ""
    newest = onnx.defs.onnx_opset_version()
    if opset > newest:
        raise UnsupportedError(f"{prefix}opset {opset} is newer than the newest this onnx knows ({newest})")
    try:
        return onnx.defs.get_schema(op_type, opset, "").since_version
    except onnx.defs.SchemaError as exc:
        raise UnsupportedError(f"{prefix}ONNX has no {op_type} in opset {opset}") from exc


def version_row(op_type: str, opset: int, where: str = "") -> OnnxPoolVersion:
    """The ``ovpool.onnx.versions`` row for the version of ``op_type`` that ``opset`` selects."""
    return row_for(op_type, schema_version(op_type, opset, where), where)


def is_pool_node(node: NodeProto) -> bool:
    return node.domain in ("", "ai.onnx") and node.op_type in POOL_OPS


def spec_from_node(node: NodeProto, opset: int, dtype: str | None = None) -> PoolSpec:
    """Parse a pooling node of a model whose default-domain opset is ``opset``."""
    name = node.name or (node.output[0] if node.output else node.op_type)
    where = f"node '{name}' ({node.op_type})"
    row = version_row(node.op_type, opset, where)
    schema = onnx.defs.get_schema(node.op_type, row.since, "")
    check_attribute_types(node, schema, f"node '{name}'")
    attrs = attributes(node, text=False)
    for key in attrs:
        if key not in schema.attributes:
            value = attrs[key].decode(errors="replace") if isinstance(attrs[key], bytes) else attrs[key]
            raise SpecError(name, key, value, f"is not an attribute of {node.op_type}-{row.since}")
    if dtype is not None:
        check_dtype(node.op_type, row.since, dtype, name)
    p = _p(attrs, row, name) if row.kind in (PoolKind.LP, PoolKind.GLOBAL_LP) else None
    if row.kind in GLOBAL_KINDS:
        return PoolSpec(row.kind, dtype=dtype, p=p, name=name)
    kernel = attrs.get("kernel_shape")
    if not kernel:
        raise SpecError(name, "kernel_shape", kernel or [], "is required")
    rank = len(kernel)
    pads = list(attrs.get("pads", [0] * 2 * rank))
    if len(pads) != 2 * rank:
        raise SpecError(name, "pads", pads, f"needs {2 * rank} values (begin and end for {rank} axes)")
    auto_pad = _text(attrs.get("auto_pad", "NOTSET"))
    if auto_pad not in _AUTO_PAD:
        raise SpecError(name, "auto_pad", auto_pad, f"must be one of {', '.join(_AUTO_PAD)}")
    ceil = _flag(attrs, "ceil_mode", name)
    include = _flag(attrs, "count_include_pad", name)
    indices = None
    if row.kind is PoolKind.MAX and len(node.output) > 1 and node.output[1]:
        order = IndexOrder.COLUMN_MAJOR if _flag(attrs, "storage_order", name) else IndexOrder.ROW_MAJOR
        indices = Indices(order=order)
    return PoolSpec(
        kind=row.kind,
        kernel=tuple(kernel),
        strides=tuple(attrs.get("strides", ())),
        dilations=tuple(attrs.get("dilations", ())),
        pads_begin=tuple(pads[:rank]),
        pads_end=tuple(pads[rank:]),
        padding=_AUTO_PAD[auto_pad] if row.kind is not PoolKind.UNPOOL else Padding.EXPLICIT,
        rounding=Rounding.CEIL if ceil else Rounding.FLOOR,
        divisor=Divisor.INCLUDE_PAD if include else Divisor.EXCLUDE_PAD,
        indices=indices,
        dtype=dtype,
        p=p,
        name=name,
    )


def node_from_spec(
    spec: PoolSpec,
    opset: int,
    inputs: Sequence[str],
    outputs: Sequence[str],
    op_type: str | None = None,
) -> NodeProto:
    """An ONNX node computing ``spec`` in a model of default-domain ``opset``.

    ``op_type`` defaults from the kind. A spec the selected version cannot express raises
    ``UnsupportedError`` naming the node, the feature and the first version that has it.
    """
    op_type = op_type or _OP_FOR_KIND[spec.kind]
    where = f"node '{spec.name}' ({op_type})"
    row = version_row(op_type, opset, where)
    if spec.dtype is not None:
        check_dtype(op_type, row.since, spec.dtype, spec.name)
    lp: dict[str, Any] = {} if spec.p is None else {"p": _p_value(spec, row, where)}
    if spec.is_global:
        return helper.make_node(op_type, list(inputs), list(outputs), name=spec.name, **lp)
    # Attribute values (lists of ints, ints, strings) as helper.make_node takes them: **kwargs: Any.
    attrs: dict[str, Any] = {"kernel_shape": list(spec.kernel), "strides": list(spec.strides), **lp}
    if spec.kind is PoolKind.UNPOOL:
        attrs["pads"] = list(spec.pads_begin + spec.pads_end)
        return helper.make_node(op_type, list(inputs), list(outputs), name=spec.name, **attrs)
    if spec.padding is Padding.EXPLICIT:
        attrs["pads"] = list(spec.pads_begin + spec.pads_end)
    else:
        attrs["auto_pad"] = spec.padding.value.upper()
    if spec.dilations != (1,) * len(spec.kernel):
        _need(row.dilations, where, "dilations", spec.dilations, op_type)
        attrs["dilations"] = list(spec.dilations)
    if spec.rounding is Rounding.CEIL_NO_DROP:
        raise UnsupportedError(
            f"{where}: rounding 'ceil' without the drop rule (OpenVINO ceil) has no ONNX form; "
            "it equals ceil_mode=1 only where no window lies wholly in padding"
        )
    if spec.rounding is Rounding.CEIL:
        _need(row.ceil_mode, where, "ceil_mode", 1, op_type)
        attrs["ceil_mode"] = 1
    if spec.kind is PoolKind.AVERAGE and _counts_padding(spec):
        _need(row.count_include_pad, where, "count_include_pad", 1, op_type)
        attrs["count_include_pad"] = 1
    if spec.indices is not None:
        _need(row.indices, where, "indices output", "requested", op_type)
        if spec.indices.axis != 0 or spec.indices.dtype != "int64":
            raise UnsupportedError(
                f"{where}: ONNX indices are int64 over the whole tensor; axis {spec.indices.axis} "
                f"with {spec.indices.dtype} has no ONNX form"
            )
        if spec.indices.order is IndexOrder.COLUMN_MAJOR:
            attrs["storage_order"] = 1
    return helper.make_node(op_type, list(inputs), list(outputs), name=spec.name, **attrs)


def check_dtype(op_type: str, version: int, dtype: str, node: str) -> None:
    """Refuse a data type outside the version's type constraint (int8 MaxPool before 12)."""
    schema = onnx.defs.get_schema(op_type, version, "")
    allowed = schema.type_constraints[0].allowed_type_strs
    if dtypes.onnx_type_string(dtype) not in allowed:
        first = _first_version_allowing(op_type, dtype)
        hint = f"; {op_type}-{first} has it" if first else ""
        raise UnsupportedError(
            f"node '{node}' ({op_type}-{version}): data type {dtype} is not allowed (allowed: {', '.join(sorted(allowed))}){hint}"
        )


def _counts_padding(spec: PoolSpec) -> bool:
    """Whether the divisor is ONNX's count_include_pad=1. FULL_KERNEL_IF_PADDED (OpenVINO) equals
    it under floor rounding, where no window reaches past the pads; with ceil it may not. Without
    pads every divisor counts the same taps, so none needs the attribute."""
    padded = spec.padding in (Padding.SAME_UPPER, Padding.SAME_LOWER) or any(spec.pads_begin + spec.pads_end)
    if spec.divisor is Divisor.EXCLUDE_PAD or not padded:
        return False
    if spec.divisor is Divisor.FULL_KERNEL_IF_PADDED and spec.rounding is not Rounding.FLOOR:
        raise UnsupportedError(
            f"node '{spec.name}': OpenVINO's exclude-pad=false divisor under ceil rounding counts the "
            "overhang, which ONNX count_include_pad does not; lower it with an explicit Pad first"
        )
    return True


def _need(present: bool, where: str, feature: str, value: object, op_type: str) -> None:
    if not present:
        first = next(
            (r.since for r in _rows(op_type) if getattr(r, feature.split()[0], False)),
            None,
        )
        hint = f" (first in {op_type}-{first})" if first else ""
        raise UnsupportedError(f"{where}: this opset's {op_type} has no {feature} {value!s}{hint}")


def _rows(op_type: str) -> list[OnnxPoolVersion]:
    return [r for r in ONNX_VERSIONS if r.op_type == op_type]


def _first_version_allowing(op_type: str, dtype: str) -> int | None:
    wanted = dtypes.onnx_type_string(dtype)
    for row in _rows(op_type):
        if wanted in onnx.defs.get_schema(op_type, row.since, "").type_constraints[0].allowed_type_strs:
            return row.since
    return None


def _p(attrs: dict[str, object], row: OnnxPoolVersion, node: str) -> float:
    """An Lp pool's ``p``: default 2 (2.0 in the FLOAT versions), at least 1. The attribute's
    type is the schema's, checked before (``check_attribute_types``)."""
    value = attrs.get("p", 2)
    if not isinstance(value, (int, float)) or not math.isfinite(value) or value < 1:
        raise SpecError(node, "p", value, f"must be a finite number >= 1 ({'a float' if row.float_p else 'an integer'})")
    return float(value)


def _p_value(spec: PoolSpec, row: OnnxPoolVersion, where: str) -> float | int:
    """The ``p`` attribute of the version ``row``: a float in version 1, else an integer (p=2.5
    has no form after LpPool-1)."""
    assert spec.p is not None  # called for an Lp spec only
    if row.float_p:
        return spec.p
    if not spec.p.is_integer():
        raise UnsupportedError(f"{where}: p={spec.p} is not an integer; only {row.op_type}-1 has a float p")
    return int(spec.p)


def _flag(attrs: dict[str, object], key: str, node: str) -> bool:
    value = attrs.get(key, 0)
    if value not in (0, 1):
        raise SpecError(node, key, value, "must be 0 or 1")
    return bool(value)


def _text(value: object) -> str:
    return value.decode() if isinstance(value, bytes) else str(value)


_OP_FOR_KIND = {
    PoolKind.AVERAGE: "AveragePool",
    PoolKind.MAX: "MaxPool",
    PoolKind.UNPOOL: "MaxUnpool",
    PoolKind.GLOBAL_AVERAGE: "GlobalAveragePool",
    PoolKind.GLOBAL_MAX: "GlobalMaxPool",
    PoolKind.LP: "LpPool",
    PoolKind.GLOBAL_LP: "GlobalLpPool",
}
