"""The adapter registry: which adapter handles (format, op type, version), and the ONNX version table.

A version that no entry covers is a clear ``UnsupportedError`` naming the op and the known
versions, never a guess. ONNX entries list every ``since_version`` of the pooling schemas; what
each version means (its attributes, their defaults, its type constraints) is read from
``onnx.defs``, and what ovpool does differently per version is the ``OnnxPoolVersion`` row.
"""

from __future__ import annotations

from dataclasses import dataclass

from ovpool.errors import UnsupportedError
from ovpool.spec import PoolKind


@dataclass(frozen=True)
class Entry:
    """One registered adapter: ``format`` ("onnx", "ir", "dml"), ``op_type``, and the versions
    ``[since, until]`` it covers (``until`` inclusive)."""

    format: str
    op_type: str
    since: int
    until: int
    adapter: object


class Registry:
    """Entries keyed by (format, op type, version range)."""

    def __init__(self) -> None:
        self._entries: list[Entry] = []

    def register(self, format: str, op_type: str, since: int, until: int, adapter: object) -> None:
        self._entries.append(Entry(format, op_type, since, until, adapter))

    def lookup(self, format: str, op_type: str, version: int, where: str = "") -> object:
        """The adapter for this version, or an error naming the op, the version and the known ones."""
        entries = [e for e in self._entries if e.format == format and e.op_type == op_type]
        for entry in entries:
            if entry.since <= version <= entry.until:
                return entry.adapter
        known = ", ".join(str(e.since) if e.since == e.until else f"{e.since}-{e.until}" for e in entries)
        prefix = f"{where}: " if where else ""
        if not entries:
            raise UnsupportedError(f"{prefix}{format} op '{op_type}' is not a pooling op ovpool handles")
        raise UnsupportedError(f"{prefix}{format} {op_type} version {version} is not supported (known: {known})")

    def op_types(self, format: str) -> tuple[str, ...]:
        return tuple(dict.fromkeys(e.op_type for e in self._entries if e.format == format))


@dataclass(frozen=True)
class OnnxPoolVersion:
    """What one ONNX schema version of a pooling op means to ovpool.

    ``count_include_pad``/``ceil_mode``/``dilations``/``indices``: the version has that attribute
    (``indices``: the second output and ``storage_order``). Where an attribute is absent the
    version's behaviour is the one ovpool assumes: AveragePool-1 excludes pads, MaxPool-1 has no
    indices, nothing before ceil_mode rounds up.
    """

    op_type: str
    since: int
    kind: PoolKind
    count_include_pad: bool = False
    ceil_mode: bool = False
    dilations: bool = False
    indices: bool = False


_A, _M, _U = PoolKind.AVERAGE, PoolKind.MAX, PoolKind.UNPOOL
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
)

ONNX_POOL_OPS: tuple[str, ...] = tuple(dict.fromkeys(v.op_type for v in ONNX_VERSIONS))

REGISTRY = Registry()


def _register_onnx_versions() -> None:
    """Each row covers its own ``since`` up to the next row's, so every opset maps to one row."""
    for op_type in ONNX_POOL_OPS:
        rows = [v for v in ONNX_VERSIONS if v.op_type == op_type]
        for row, following in zip(rows, rows[1:] + [None]):
            REGISTRY.register("onnx", op_type, row.since, following.since - 1 if following else row.since, row)


_register_onnx_versions()


def _register_ir_templates() -> None:
    """IR entries are the ``ir_templates`` data files: one per layer type and version, covering
    the opsets that select it (AvgPool ``opset14`` covers 14 and 15)."""
    from ovpool.ir.templates import templates

    for template in templates():
        REGISTRY.register("ir", template.type, template.since, template.until, template)


_register_ir_templates()


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
    """

    op_type: str
    since: int
    kind: PoolKind | None
    members: tuple[str, ...]
    data_types: tuple[str, ...]
    index_types: tuple[str, ...] = ()
    tensor_ranks: tuple[int, ...] = (4, 5)


_IO = ("InputTensor", "OutputTensor")
_WINDOW = ("DimensionCount", "Strides", "WindowSize", "StartPadding", "EndPadding")
_F = ("float32", "float16")
_F8 = _F + ("int8", "uint8")
_ALL = _F + ("int64", "int32", "int16", "int8", "uint64", "uint32", "uint16", "uint8")
_AVG, _MAX = PoolKind.AVERAGE, PoolKind.MAX
_MAX1 = _IO + ("OutputIndicesTensor",) + _WINDOW
_PAD = _IO + ("PaddingMode", "PaddingValue", "DimensionCount", "StartPadding", "EndPadding")
_INTS = ("int32", "int16", "int8", "uint32", "uint16", "uint8")

# Sources: the learn.microsoft.com DML_*_OPERATOR_DESC pages (Availability, Tensor support) and
# the DirectML feature level history; MAX_UNPOOLING is in directml.h's 0x2000 block but its page
# says 3.0, which is what ovpool requires.
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
    DmlOperatorLevel("DML_OPERATOR_MAX_UNPOOLING", 30, PoolKind.UNPOOL, ("InputTensor", "IndicesTensor", "OutputTensor"), _F, ("uint32",), (4,)),
    DmlOperatorLevel("DML_OPERATOR_MAX_UNPOOLING", 50, PoolKind.UNPOOL, ("InputTensor", "IndicesTensor", "OutputTensor"), _ALL, ("uint64", "uint32"), (4,)),
    DmlOperatorLevel("DML_OPERATOR_PADDING", 10, None, _PAD, _F),
    DmlOperatorLevel("DML_OPERATOR_PADDING", 21, None, _PAD, _F + _INTS),
    DmlOperatorLevel("DML_OPERATOR_PADDING", 31, None, _PAD, _F + _INTS, (), tuple(range(1, 9))),
    DmlOperatorLevel("DML_OPERATOR_PADDING", 50, None, _PAD, _ALL + ("float64",), (), tuple(range(1, 9))),
)

DML_OPERATORS: tuple[str, ...] = tuple(dict.fromkeys(row.op_type for row in DML_LEVELS))


def _register_dml_levels() -> None:
    """Each row covers its level up to the next row's; the last one up to the newest known level."""
    for op_type in DML_OPERATORS:
        rows = [r for r in DML_LEVELS if r.op_type == op_type]
        for row, following in zip(rows, rows[1:] + [None]):
            until = DML_FEATURE_LEVELS[DML_FEATURE_LEVELS.index(following.since) - 1] if following else DML_FEATURE_LEVELS[-1]
            REGISTRY.register("dml", op_type, row.since, until, row)


_register_dml_levels()
