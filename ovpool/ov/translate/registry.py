"""The translation registry: how each ONNX operator ovpool does not leave to OpenVINO's frontend
alone is translated, one ``Entry`` per (domain, op, since-version range) and kind.

Two kinds:

* ``rewrite``: nodes of the entry's op are held against its ``rows`` (``DEFECTS`` rows, in table
  order, the first whose condition gives a text applies) and rewritten, before the frontend sees
  the model, by the row's lowering (``ovpool.ov.translate.apply.rewrite``); a row without one is
  refused. Resize-10+ is one entry of 8 rows.
* ``extension``: nodes of the entry's op are converted by a ``ConversionExtension``. Its
  ``source`` says whose converter: ``pooling`` (``ovpool.ov.extension.PoolExtensions``, one per
  model: MaxPool, AveragePool...), ``quantization`` (``ovpool.ov.quantized.QuantExtensions``, one
  per model, for the ``ai.ovpool`` nodes it rewrites QuantizeLinear, DequantizeLinear and QDQ pools
  into), ``frontend fixes`` (``converter``: the same for every model, for the ``ai.ovpool`` nodes
  the lowerings write, ``ai.ovpool.Div``, ``ai.ovpool.TopK``...).

No two entries of one kind share a (domain, op, version); every ``DEFECTS`` row is in the rows of
the rewrite entry of its op (``tests/test_translate_registry.py`` holds both). Adding a defect row
is one ``DEFECTS`` row (its entry follows) and one test; an ``ai.ovpool`` node a lowering writes
is one ``CONVERTERS`` item (``ovpool.ov.translate.converters``).
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, Final

from ovpool.defects import Defect, VersionRange
from ovpool.onnx.versions import ONNX_VERSIONS, POOL_OPS
from ovpool.ov import DOMAIN
from ovpool.ov.translate.converters import CONVERTERS
from ovpool.ov.translate.table import DEFECTS

if TYPE_CHECKING:
    from ovpool.ov.extension import PoolExtensions
    from ovpool.ov.quantized import QuantExtensions

REWRITE: Final = "rewrite"
EXTENSION: Final = "extension"

POOLING: Final = "pooling"
QUANTIZATION: Final = "quantization"
FRONTEND_FIXES: Final = "frontend fixes"

QUANTIZATION_OPS: Final = ("QuantizedPool", "QuantizeLinear", "DequantizeLinear")
"""The ``ai.ovpool`` nodes ``QuantExtensions`` writes and converts."""


@dataclass(frozen=True)
class Entry:
    """``domain`` / ``op`` at since-versions ``versions``, translated by ``kind`` (``rewrite``:
    held against ``rows``; ``extension``: converted by ``source``'s converter, ``converter`` for
    ``frontend fixes``)."""

    domain: str
    op: str
    versions: VersionRange
    kind: str
    source: str
    rows: tuple[Defect, ...] = ()
    converter: Callable[[Any], list] | None = None

    @property
    def label(self) -> str:
        """``Resize-10+ (rewrite)``, ``ai.ovpool.Div-1+ (extension)``."""
        name = f"{self.domain}.{self.op}" if self.domain else self.op
        return f"{name}-{self.versions.text()} ({self.kind})"


def _rewrites() -> Iterator[Entry]:
    """One rewrite entry per op of ``DEFECTS``, in the order the table first names it, its range
    from the first row's since-version to the last row's until (Cast: 6+, rows 6+, 19+, 24+)."""
    for op in dict.fromkeys(row.op_type for row in DEFECTS):
        rows = tuple(row for row in DEFECTS if row.op_type == op)
        versions = VersionRange(min(r.since for r in rows), max(r.until for r in rows))
        yield Entry(rows[0].domain, op, versions, REWRITE, FRONTEND_FIXES, rows)


def _extensions() -> Iterator[Entry]:
    """The extension entries in the order OpenVINO's frontend is given them: pooling, quantization,
    the frontend fixes' converters."""
    for op in POOL_OPS:
        since = min(row.since for row in ONNX_VERSIONS if row.op_type == op)
        yield Entry("", op, VersionRange(since), EXTENSION, POOLING)
    for op in QUANTIZATION_OPS:
        yield Entry(DOMAIN, op, VersionRange(1), EXTENSION, QUANTIZATION)
    for op, converter in CONVERTERS.items():
        yield Entry(DOMAIN, op, VersionRange(1), EXTENSION, FRONTEND_FIXES, converter=converter)


ENTRIES: tuple[Entry, ...] = (*_rewrites(), *_extensions())


def entries(kind: str | None = None) -> tuple[Entry, ...]:
    """The registry's entries (of ``kind`` only, when given), in registry order."""
    return tuple(e for e in ENTRIES if kind is None or e.kind == kind)


REWRITE_ROWS: dict[str, tuple[Defect, ...]] = {e.op: e.rows for e in ENTRIES if e.kind == REWRITE and not e.domain}
"""The default domain's rewrite rows by op type, in table order: a node is held against its own
op's rows only (an Add against none of the Resize rows)."""


def conversion_extensions(pools: PoolExtensions, quant: QuantExtensions | None, fixes: bool) -> list[object]:
    """The ``ConversionExtension``s of one model's conversion, one per extension entry in registry
    order: ``pools``' for the pooling ops, ``quant``'s for its ``ai.ovpool`` nodes (none without
    ``quant``), and with ``fixes`` (the frontend fixes wrote nodes) the fixes' converters."""
    from openvino.frontend.onnx import ConversionExtension

    found: list[object] = []
    for entry in entries(EXTENSION):
        if entry.source == POOLING:
            found.append(ConversionExtension(entry.op, pools.converter(entry.op)))
        elif entry.source == QUANTIZATION and quant is not None:
            found.append(ConversionExtension(entry.op, entry.domain, quant.converter(entry.op)))
        elif entry.source == FRONTEND_FIXES and fixes:
            found.append(ConversionExtension(entry.op, entry.domain, entry.converter))
    return found
