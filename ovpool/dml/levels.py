"""DirectML feature levels and what each pooling operator accepts from which level on.

Sources: the learn.microsoft.com ``DML_*_OPERATOR_DESC`` pages (Availability, Tensor support) and
the DirectML feature level history. ``row_at("DML_OPERATOR_MAX_POOLING1", 50)`` is the 5.0 row
(uint64 indices); ``row_at`` of a level before the operator exists is None.

Feature levels as users write them (``parse_feature_level("4.0")`` is 40, ``level_name(40)`` is
``DML_FEATURE_LEVEL_4_0``) and the choice of an operator for what a pool needs (``Need``,
``choose``: the lowest feature level that says it exactly, at or below the cap) are here too.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from ovpool.errors import OvpoolError, UnsupportedError
from ovpool.spec import PoolKind

# DirectML: feature levels are versions written ``10 * major + minor`` (DML_FEATURE_LEVEL_2_1 is 21).
DML_FEATURE_LEVELS: tuple[int, ...] = (10, 20, 21, 30, 31, 40, 41, 50, 51, 52, 60, 61, 62, 63, 64)


@dataclass(frozen=True)
class DmlOperatorLevel:
    """What one DirectML operator accepts from feature level ``since`` on (the operator page's
    "Tensor support" table for that level).

    ``members`` are the ``DML_*_OPERATOR_DESC`` struct members in directml.h order; which
    ones are present says what the operator can express (``Dilations``, ``OutputIndicesTensor``,
    ``IncludePadding``). ``data_types``/``index_types`` are numpy names of the tensor data types;
    ``tensor_ranks`` the allowed DimensionCount of its tensors. ``kind`` is the pooling it
    computes (None for PADDING). MAX_POOLING1 at 2.0 takes float32/float16 with uint32 indices;
    from 5.0 also uint64 indices, so ONNX's int64 indices need 5.0.

    ``scale_types`` is set on a quantized operator only: the data types of its scale tensors
    (QUANTIZED_LINEAR_AVERAGE_POOLING at 6.2: int8/uint8 data and zero points, float32 scales).
    A quantized operator computes on quantized tensors, so it never stands for a float pool.
    """

    op_type: str
    since: int
    kind: PoolKind | None
    members: tuple[str, ...]
    data_types: tuple[str, ...]
    index_types: tuple[str, ...] = ()
    tensor_ranks: tuple[int, ...] = (4, 5)
    scale_types: tuple[str, ...] = ()

    @property
    def quantized(self) -> bool:
        return bool(self.scale_types)


_IO = ("InputTensor", "OutputTensor")
_WINDOW = ("DimensionCount", "Strides", "WindowSize", "StartPadding", "EndPadding")
_F = ("float32", "float16")
_F8 = _F + ("int8", "uint8")
_ALL = _F + ("int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8")
_AVG, _MAX, _LP = PoolKind.AVERAGE, PoolKind.MAX, PoolKind.LP
_MAX1 = _IO + ("OutputIndicesTensor",) + _WINDOW
_PAD = _IO + ("PaddingMode", "PaddingValue", "DimensionCount", "StartPadding", "EndPadding")
_INTS = ("int32", "int16", "int8", "uint32", "uint16", "uint8")
_QUANTIZED_IO = (
    "InputTensor",
    "InputScaleTensor",
    "InputZeroPointTensor",
    "OutputScaleTensor",
    "OutputZeroPointTensor",
    "OutputTensor",
)

# Sources: the learn.microsoft.com DML_*_OPERATOR_DESC pages (Availability, Tensor support) and
# the DirectML feature level history; MAX_UNPOOLING is in directml.h's 0x2000 block but its page
# says 3.0, which is what ovpool requires. QUANTIZED_LINEAR_AVERAGE_POOLING: its page's Availability
# ("introduced in DML_FEATURE_LEVEL_6_2") and Tensor support (INT8/UINT8 data and zero points,
# FLOAT32 scales, 4-D/5-D data), the version history's 6.2 list (DirectML 1.13), and directml.h's
# 0x6200 block. LP_POOLING: its page's Availability (DML_FEATURE_LEVEL_1_0) and Tensor support
# (FLOAT32, FLOAT16; 4-D to 5-D), a UINT ``P``; LP_POOLING1 (the same members and ``Dilations``):
# the version history's 6.2 list (DirectML 1.13) and directml.h's 0x6200 block, its data types
# taken as LP_POOLING's (its own Tensor support table was not at hand).
DML_LEVELS: tuple[DmlOperatorLevel, ...] = (
    DmlOperatorLevel("DML_OPERATOR_AVERAGE_POOLING", 10, _AVG, _IO + _WINDOW + ("IncludePadding",), _F),
    DmlOperatorLevel("DML_OPERATOR_AVERAGE_POOLING1", 62, _AVG, _IO + _WINDOW + ("Dilations", "IncludePadding"), _F),
    DmlOperatorLevel("DML_OPERATOR_MAX_POOLING", 10, _MAX, _IO + _WINDOW, _F),
    DmlOperatorLevel("DML_OPERATOR_MAX_POOLING", 30, _MAX, _IO + _WINDOW, _F8),
    DmlOperatorLevel("DML_OPERATOR_MAX_POOLING", 50, _MAX, _IO + _WINDOW, _ALL),
    DmlOperatorLevel("DML_OPERATOR_MAX_POOLING1", 20, _MAX, _MAX1, _F, ("uint32",)),
    DmlOperatorLevel("DML_OPERATOR_MAX_POOLING1", 30, _MAX, _MAX1, _F8, ("uint32",)),
    DmlOperatorLevel("DML_OPERATOR_MAX_POOLING1", 50, _MAX, _MAX1, _ALL, ("uint64", "uint32")),
    DmlOperatorLevel("DML_OPERATOR_MAX_POOLING2", 21, _MAX, _MAX1 + ("Dilations",), _F, ("uint32",)),
    DmlOperatorLevel("DML_OPERATOR_MAX_POOLING2", 30, _MAX, _MAX1 + ("Dilations",), _F8, ("uint32",)),
    DmlOperatorLevel("DML_OPERATOR_MAX_POOLING2", 50, _MAX, _MAX1 + ("Dilations",), _ALL, ("uint64", "uint32")),
    DmlOperatorLevel(
        "DML_OPERATOR_MAX_UNPOOLING", 30, PoolKind.UNPOOL, ("InputTensor", "IndicesTensor", "OutputTensor"), _F, ("uint32",), (4,)
    ),
    DmlOperatorLevel(
        "DML_OPERATOR_MAX_UNPOOLING",
        50,
        PoolKind.UNPOOL,
        ("InputTensor", "IndicesTensor", "OutputTensor"),
        _ALL,
        ("uint64", "uint32"),
        (4,),
    ),
    DmlOperatorLevel(
        "DML_OPERATOR_QUANTIZED_LINEAR_AVERAGE_POOLING",
        62,
        _AVG,
        _QUANTIZED_IO + _WINDOW + ("Dilations", "IncludePadding"),
        ("int8", "uint8"),
        scale_types=("float32",),
    ),
    DmlOperatorLevel("DML_OPERATOR_LP_POOLING", 10, _LP, _IO + _WINDOW + ("P",), _F),
    DmlOperatorLevel("DML_OPERATOR_LP_POOLING1", 62, _LP, _IO + _WINDOW + ("Dilations", "P"), _F),
    DmlOperatorLevel("DML_OPERATOR_PADDING", 10, None, _PAD, _F),
    DmlOperatorLevel("DML_OPERATOR_PADDING", 21, None, _PAD, _F + _INTS),
    DmlOperatorLevel("DML_OPERATOR_PADDING", 31, None, _PAD, _F + _INTS, (), tuple(range(1, 9))),
    DmlOperatorLevel("DML_OPERATOR_PADDING", 50, None, _PAD, _ALL + ("float64",), (), tuple(range(1, 9))),
)

DML_OPERATORS: tuple[str, ...] = tuple(dict.fromkeys(row.op_type for row in DML_LEVELS))


def row_at(op_type: str, level: int) -> DmlOperatorLevel | None:
    """The newest row of ``op_type`` at or below ``level``, or None before the operator exists."""
    rows = [r for r in DML_LEVELS if r.op_type == op_type and r.since <= level]
    return rows[-1] if rows else None


def introduced(op_type: str) -> int:
    """The level an operator first appears at (MAX_POOLING2: 21)."""
    return min(r.since for r in DML_LEVELS if r.op_type == op_type)


class FeatureLevelError(OvpoolError):
    """A ``--feature-level`` that is not a DirectML feature level (a usage error)."""

    exit_code = 2


def parse_feature_level(text: str | None) -> int:
    """``"4.0"``, ``"4_0"`` or ``"DML_FEATURE_LEVEL_4_0"`` -> 40; None -> the newest known level."""
    if text is None:
        return DML_FEATURE_LEVELS[-1]
    raw = str(text).strip().upper().removeprefix("DML_FEATURE_LEVEL_").replace("_", ".")
    major, _, minor = raw.partition(".")
    digits = raw.isascii() and major.isdigit() and (minor or "0").isdigit() and len(minor) < 2  # int() refuses "²"
    level = int(major) * 10 + int(minor or 0) if digits else None
    if level not in DML_FEATURE_LEVELS:
        known = ", ".join(f"{v // 10}.{v % 10}" for v in DML_FEATURE_LEVELS)
        raise FeatureLevelError(f"--feature-level {text}: not a DirectML feature level (known: {known})")
    return level


def level_name(level: int) -> str:
    """40 -> ``"DML_FEATURE_LEVEL_4_0"``."""
    return f"DML_FEATURE_LEVEL_{level // 10}_{level % 10}"


def level_text(level: int) -> str:
    """40 -> ``"4.0"``."""
    return f"{level // 10}.{level % 10}"


@dataclass(frozen=True)
class Need:
    """What an operator must take: the pooling kind, desc members it must have, its tensors'
    data type and rank, the index data type (if any); ``what`` describes it for messages."""

    kind: PoolKind | None
    members: frozenset[str]
    dtype: str
    tensor_rank: int
    index_type: str | None
    what: str
    quantized: bool = False

    def fits(self, row: DmlOperatorLevel) -> bool:
        return (
            row.quantized == self.quantized
            and self.members <= set(row.members)
            and self.dtype in row.data_types
            and self.tensor_rank in row.tensor_ranks
            and (self.index_type is None or self.index_type in row.index_types)
        )


def choose(need: Need, cap: int, where: str) -> tuple[DmlOperatorLevel, int]:
    """The (row, level) of the operator with the lowest feature level that fits ``need``, at or
    below ``cap``; ties go to the older operator. Refuses naming what is needed: int64 max
    indices at cap 4.0 read "needs DML_OPERATOR_MAX_POOLING1 at DML_FEATURE_LEVEL_5_0"."""
    found: list[tuple[int, int, DmlOperatorLevel]] = []
    for order, op_type in enumerate(o for o in DML_OPERATORS if any(r.kind is need.kind for r in DML_LEVELS if r.op_type == o)):
        for level in DML_FEATURE_LEVELS:
            row = row_at(op_type, level)
            if row is not None and need.fits(row):
                found.append((level, order, row))
                break
    allowed = sorted(f for f in found if f[0] <= cap)
    if allowed:
        return allowed[0][2], allowed[0][0]
    if found:
        level, _, row = min(found)
        raise UnsupportedError(
            f"{where}: {need.what} needs {row.op_type} at {level_name(level)}, above the requested "
            f"--feature-level {level_text(cap)}"
        )
    newest = [row_at(o, DML_FEATURE_LEVELS[-1]) for o in DML_OPERATORS]
    offers = "; ".join(
        f"{r.op_type} takes {'/'.join(r.data_types)}"
        + (f" with {'/'.join(r.index_types)} indices" if r.index_types else "")
        + f" in {'/'.join(str(n) for n in r.tensor_ranks)}-D tensors"
        for r in newest
        if r is not None and r.kind is need.kind and r.quantized == need.quantized and need.members <= set(r.members)
    )
    raise UnsupportedError(f"{where}: DirectML cannot express {need.what} ({offers or 'no operator has these members'})")


def describe(kind: str, dtype: str, rank: int, extras: Sequence[str]) -> str:
    """What a ``Need`` asks, for messages: ``describe("max pooling", "int64", 4, ["indices"])`` is
    "max pooling with indices on a 4-D int64 tensor"."""
    extra = "".join(f" with {e}" for e in extras)
    return f"{kind}{extra} on a {rank}-D {dtype} tensor"
