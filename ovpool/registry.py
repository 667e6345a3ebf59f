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
