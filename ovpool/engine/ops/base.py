"""The operator table of the numpy executor: ONNX operators keyed by (domain, op type, since-version range).

An operator version is registered with a *factory*: it is called once, when a session is prepared,
with the node (:class:`OpNode`: its attributes, which inputs are constants, the schema version in
force) and returns the *kernel*, a function called on every run with the node's input arrays
(``None`` for an omitted optional input) that returns the node's outputs as a tuple. Work that
depends only on attributes or constant inputs (defaults, axis normalisation, weight layout) is done
in the factory, once.

Each since-version has its own meaning, so ranges are registered separately where the meaning
changes: Softmax-1 and Softmax-11 (2-D coercion at ``axis``) share one factory, Softmax-13 (one
axis) has another::

    @register("Softmax", 1, 12)
    def softmax_coerced(node: OpNode) -> Kernel: ...

    @register("Softmax", 13)
    def softmax(node: OpNode) -> Kernel: ...

A node whose schema since-version (``onnx.defs.get_schema(op, opset, domain).since_version``, e.g.
11 for Softmax in an opset-12 model) no range covers is not ovpool's to run.
"""

from __future__ import annotations

import importlib
import pkgutil
from collections.abc import Callable
from dataclasses import dataclass

import numpy as np

from ovpool.defects import LATEST  # "until" of a range that covers every later since-version
from ovpool.nodes import OpNode as OpNode  # the node type lives in the core (ovpool.nodes); still here
from ovpool.nodes import attributes as attributes
from ovpool.nodes import normalize_axes as normalize_axes
from ovpool.nodes import normalize_axis as normalize_axis

Kernel = Callable[..., tuple[np.ndarray, ...]]
Factory = Callable[[OpNode], Kernel]


@dataclass(frozen=True)
class OpVersion:
    """One registered range: ``since``..``until`` inclusive, of schema since-versions."""

    domain: str
    op_type: str
    since: int
    until: int
    factory: Factory


_TABLE: dict[tuple[str, str], list[OpVersion]] = {}


def register(op_type: str, since: int, until: int = LATEST, domain: str = "") -> Callable[[Factory], Factory]:
    """Register ``factory`` for schema since-versions ``since``..``until`` of ``domain``/``op_type``."""

    def decorate(factory: Factory) -> Factory:
        rows = _TABLE.setdefault((domain, op_type), [])
        for row in rows:
            if row.since <= until and since <= row.until:
                raise RuntimeError(f"{op_type} versions {since}-{until} overlap {row.since}-{row.until}")
        rows.append(OpVersion(domain, op_type, since, until, factory))
        rows.sort(key=lambda r: r.since)
        return factory

    return decorate


def lookup(op_type: str, since: int, domain: str = "") -> OpVersion | None:
    """The registered range that covers schema version ``since``, or None."""
    _load_families()
    for row in _TABLE.get((domain, op_type), ()):
        if row.since <= since <= row.until:
            return row
    return None


def registered_since(op_type: str, opset: int, domain: str) -> int | None:
    """For a domain onnx has no schemas for (``com.microsoft``): the since-version in force at
    ``opset``, the latest registered range start not after it (QLinearAdd in com.microsoft opset 1: 1),
    or None."""
    _load_families()
    starts = [row.since for row in _TABLE.get((domain, op_type), ()) if row.since <= opset]
    return max(starts) if starts else None


def covered() -> list[OpVersion]:
    """Every registered range, by domain, op type and version."""
    _load_families()
    return sorted((r for rows in _TABLE.values() for r in rows), key=lambda r: (r.domain, r.op_type, r.since))


_loaded = False


def _load_families() -> None:
    """Import every module of this package once, so their ``@register`` lines run."""
    global _loaded
    if _loaded:
        return
    _loaded = True
    package = __name__.rpartition(".")[0]
    path = importlib.import_module(package).__path__
    for info in pkgutil.iter_modules(path):
        if info.name != "base" and not info.name.startswith("_"):
            importlib.import_module(f"{package}.{info.name}")


def outputs(*arrays: np.ndarray) -> tuple[np.ndarray, ...]:
    """A kernel's result: 0-d results stay arrays (``np.add`` of two 0-d arrays gives a scalar)."""
    return tuple(np.asarray(a) for a in arrays)
