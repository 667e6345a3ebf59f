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

What the plan and the memory budget read of an operator beside its kernel is given where it is
registered, as its :class:`Traits` (its working-memory ``Rule``, whether its outputs are arrays of
its own, whether it draws at random...)::

    @register("Conv", 1, traits=Traits(work=CONV_WORK, fresh=True))
    def conv(node: OpNode) -> Kernel: ...

and read with :func:`traits` (by domain, op type and since-version) or :func:`traits_named` (by op
type alone, where a plan step knows no more). Adding an operator is its module's entry and its test.
"""

from __future__ import annotations

import importlib
import pkgutil
import warnings
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, NamedTuple

import numpy as np

from ovpool.defects import LATEST  # "until" of a range that covers every later since-version
from ovpool.nodes import OpNode as OpNode  # the node type lives in the core (ovpool.nodes); still here
from ovpool.nodes import attributes as attributes
from ovpool.nodes import normalize_axes as normalize_axes
from ovpool.nodes import normalize_axis as normalize_axis

Kernel = Callable[..., tuple[np.ndarray, ...]]
Factory = Callable[[OpNode], Kernel]


class Rule(NamedTuple):
    """``a * largest input + b * outputs + min(s * largest input, cap) + fixed`` bytes of working
    memory (``ovpool.engine.budget.work_bytes``): ``Rule(3.0, 3.0, 16.0, 8 << 20)`` for a Conv
    reading 1 MiB and writing 1 MiB is 3 + 3 + min(16, 8) = 14 MiB."""

    a: float
    b: float
    s: float = 0.0
    cap: int = 0
    fixed: int = 0


@dataclass(frozen=True)
class Traits:
    """What the plan's rewrites and the memory budget read of an operator beside its kernel.

    ``work``: the working memory of its kernel (None: ``budget.DEFAULT_WORK``), measured with
    tracemalloc on float32 (tests/test_run_budget.py holds each rule); ``work_indices``: the rule
    when it writes more than one output (a MaxPool's indices), None for ``work``'s. ``fresh``: its
    kernel returns new arrays, never a view of an input nor an array it keeps, so the plan may give
    their buffers to an in-place kernel (``ovpool.engine.inplace``). ``shape_value``: deterministic
    and of small values, a group of values computed once per input shape may hold it
    (``ovpool.engine.shapevalues``). ``random``: its outputs differ from one run to the next, never
    folded into constants nor hoisted out of a loop body. ``remembered``: a product whose last
    results a body's run may give back for the same operands (``graph._Remembered``); never
    ``fresh`` too (an in-place kernel could write into a remembered result)."""

    work: Rule | None = None
    work_indices: Rule | None = None
    fresh: bool = False
    shape_value: bool = False
    random: bool = False
    remembered: bool = False

    def __post_init__(self) -> None:
        if self.fresh and self.remembered:
            raise ValueError("a remembered product's buffers cannot be given to an in-place kernel (fresh)")


PLAIN = Traits()  # an operator with none of the traits: the default rule of working memory
NO_WORK = Rule(0.0, 0.0)  # a view or a shape: nothing beside its outputs
SHAPE_VALUE = Traits(shape_value=True)


@dataclass(frozen=True)
class OpVersion:
    """One registered range: ``since``..``until`` inclusive, of schema since-versions."""

    domain: str
    op_type: str
    since: int
    until: int
    factory: Factory
    traits: Traits = PLAIN


_TABLE: dict[tuple[str, str], list[OpVersion]] = {}
_NAMED: dict[str, Traits] = {}  # traits_named's index, built on first use, emptied by register


def register(
    op_type: str, since: int, until: int = LATEST, domain: str = "", traits: Traits = PLAIN
) -> Callable[[Factory], Factory]:
    """Register ``factory`` for schema since-versions ``since``..``until`` of ``domain``/``op_type``,
    with its ``traits``."""

    def decorate(factory: Factory) -> Factory:
        rows = _TABLE.setdefault((domain, op_type), [])
        for row in rows:
            if row.since <= until and since <= row.until:
                raise RuntimeError(f"{op_type} versions {since}-{until} overlap {row.since}-{row.until}")
        rows.append(OpVersion(domain, op_type, since, until, factory, traits))
        rows.sort(key=lambda r: r.since)
        _NAMED.clear()
        return factory

    return decorate


def lookup(op_type: str, since: int, domain: str = "") -> OpVersion | None:
    """The registered range that covers schema version ``since``, or None."""
    _load_families()
    for row in _TABLE.get((domain, op_type), ()):
        if row.since <= since <= row.until:
            return row
    return None


def traits(op_type: str, since: int, domain: str = "") -> Traits:
    """The traits of the range covering schema version ``since`` (Conv-11: ``fresh``); ``PLAIN``
    where none does."""
    row = lookup(op_type, since, domain)
    return PLAIN if row is None else row.traits


def traits_named(op_type: str) -> Traits:
    """The traits of ``op_type`` where only its name is known (a step of the memory budget's plan
    walk, a node of a body scanned for random draws): those of its newest range in the default
    domain, else in another; every range of one name states the same ones
    (tests/test_op_traits.py holds them to it). ``PLAIN`` for a name not registered."""
    if not _NAMED:
        _load_families()
        for (_, name), rows in sorted(_TABLE.items(), key=lambda item: item[0][0] != ""):
            _NAMED.setdefault(name, rows[-1].traits)
    return _NAMED.get(op_type, PLAIN)


def named_with(trait: Callable[[Traits], object]) -> frozenset[str]:
    """The op types whose traits have ``trait``: ``named_with(lambda t: t.random)`` is RandomNormal,
    RandomUniform, ... (what ``graph.RANDOM_OPS`` was)."""
    traits_named("")
    return frozenset(name for name, found in _NAMED.items() if trait(found))


def deprecated_table(module: str, name: str, value: Any) -> Any:
    """``value``, a table once typed in ``module`` as ``name`` and now derived from the
    registrations (``graph.RANDOM_OPS`` is ``named_with(lambda t: t.random)``), with a
    DeprecationWarning naming what to read instead."""
    warnings.warn(
        f"{module}.{name} is deprecated: read the operator's Traits (ovpool.engine.ops.base)", DeprecationWarning, stacklevel=3
    )
    return value


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
