"""The ONNX pooling operators ovpool handles: one row per schema since-version, and what it means.

Every ``since_version`` of the pooling schemas in onnx.defs has a row (a test checks the list
against onnx.defs); what a version means beyond its attributes is the row: AveragePool-1 excludes
pads, MaxPool-8 adds the Indices output. ``row_for("AveragePool", 11)`` is the AveragePool-11 row;
an opset selects a since-version through ``ovpool.onnx.adapter.schema_version``.
"""

from __future__ import annotations

from dataclasses import dataclass

from ovpool.errors import UnsupportedError
from ovpool.spec import PoolKind


@dataclass(frozen=True)
class OnnxPoolVersion:
    """What one ONNX schema version of a pooling op means to ovpool.

    ``count_include_pad``/``ceil_mode``/``dilations``/``indices``: the version has that attribute
    (``indices``: the second output and ``storage_order``). Where an attribute is absent the
    version's behaviour is the one ovpool assumes: AveragePool-1 excludes pads, MaxPool-1 has no
    indices, nothing before ceil_mode rounds up. ``float_p``: the Lp pool's ``p`` is a FLOAT
    attribute (LpPool-1, GlobalLpPool-1: default 2.0, 2.5 allowed); from version 2 it is an INT.
    """

    op_type: str
    since: int
    kind: PoolKind
    count_include_pad: bool = False
    ceil_mode: bool = False
    dilations: bool = False
    indices: bool = False
    float_p: bool = False


_A, _M, _U, _L = PoolKind.AVERAGE, PoolKind.MAX, PoolKind.UNPOOL, PoolKind.LP
ONNX_VERSIONS: tuple[OnnxPoolVersion, ...] = (
    OnnxPoolVersion("AveragePool", 1, _A),
    OnnxPoolVersion("AveragePool", 7, _A, count_include_pad=True),
    OnnxPoolVersion("AveragePool", 10, _A, count_include_pad=True, ceil_mode=True),
    OnnxPoolVersion("AveragePool", 11, _A, count_include_pad=True, ceil_mode=True),
    OnnxPoolVersion("AveragePool", 19, _A, count_include_pad=True, ceil_mode=True, dilations=True),
    OnnxPoolVersion("AveragePool", 22, _A, count_include_pad=True, ceil_mode=True, dilations=True),
    OnnxPoolVersion("MaxPool", 1, _M),
    OnnxPoolVersion("MaxPool", 8, _M, indices=True),
    OnnxPoolVersion("MaxPool", 10, _M, ceil_mode=True, dilations=True, indices=True),
    OnnxPoolVersion("MaxPool", 11, _M, ceil_mode=True, dilations=True, indices=True),
    OnnxPoolVersion("MaxPool", 12, _M, ceil_mode=True, dilations=True, indices=True),
    OnnxPoolVersion("MaxPool", 22, _M, ceil_mode=True, dilations=True, indices=True),
    OnnxPoolVersion("MaxUnpool", 9, _U),
    OnnxPoolVersion("MaxUnpool", 11, _U),
    OnnxPoolVersion("MaxUnpool", 22, _U),
    OnnxPoolVersion("GlobalAveragePool", 1, PoolKind.GLOBAL_AVERAGE),
    OnnxPoolVersion("GlobalAveragePool", 22, PoolKind.GLOBAL_AVERAGE),
    OnnxPoolVersion("GlobalMaxPool", 1, PoolKind.GLOBAL_MAX),
    OnnxPoolVersion("GlobalMaxPool", 22, PoolKind.GLOBAL_MAX),
    OnnxPoolVersion("LpPool", 1, _L, float_p=True),
    OnnxPoolVersion("LpPool", 2, _L),
    OnnxPoolVersion("LpPool", 11, _L),
    OnnxPoolVersion("LpPool", 18, _L, ceil_mode=True, dilations=True),
    OnnxPoolVersion("LpPool", 22, _L, ceil_mode=True, dilations=True),
    OnnxPoolVersion("GlobalLpPool", 1, PoolKind.GLOBAL_LP, float_p=True),
    OnnxPoolVersion("GlobalLpPool", 2, PoolKind.GLOBAL_LP),
    OnnxPoolVersion("GlobalLpPool", 22, PoolKind.GLOBAL_LP),
)

POOL_OPS: tuple[str, ...] = tuple(dict.fromkeys(v.op_type for v in ONNX_VERSIONS))
LP_OPS: tuple[str, ...] = ("LpPool", "GlobalLpPool")  # no quantized form (QDQ patterns skip them)


def row_for(op_type: str, since: int, where: str = "") -> OnnxPoolVersion:
    """The row of schema version ``since`` of ``op_type``; an op or version without a row is an
    ``UnsupportedError`` naming it and the known versions, never a guess."""
    prefix = f"{where}: " if where else ""
    rows = [r for r in ONNX_VERSIONS if r.op_type == op_type]
    if not rows:
        raise UnsupportedError(f"{prefix}onnx op '{op_type}' is not a pooling op ovpool handles")
    for row in rows:
        if row.since == since:
            return row
    known = ", ".join(str(r.since) for r in rows)
    raise UnsupportedError(f"{prefix}onnx {op_type} version {since} is not supported (known: {known})")
