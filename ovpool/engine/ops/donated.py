"""The protocol of a kernel that can write its result into the buffer of an input that dies at its
step (:class:`InPlace`): the kernels of ``ovpool.engine.ops`` declare it, the plan's in-place rewrite
(``ovpool.engine.inplace``) decides when an input may be given up. Add of x = [1, 2] and 3 computed
into x leaves x holding [4, 5], with the same IEEE operations as a fresh result, so the same bits.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from ovpool.engine.ops.base import Kernel

Into = Callable[..., tuple[np.ndarray, ...]]


class InPlace:
    """An element-wise kernel that can also write its result into an input's buffer: called as
    usual it allocates (``run``); ``donating(position)`` gives the kernel that computes into
    input ``position`` when that buffer can hold the result (same shape and dtype, writeable, a
    floating type), with the same operations in the same order as ``run`` (so the same bits:
    Add of x = [1, 2] and 3 leaves x holding [4, 5]) and falls back to ``run`` otherwise.
    ``donors`` are the positions it can write into. The plan decides when an input may be given
    up (``ovpool.engine.inplace``). ``tile(dst, *args)``, when given, computes the node into
    ``dst`` from float32/float64 arguments of ``dst``'s shape or of one element, skipping the type
    check (the caller has checked the dtypes): what a chain of nodes runs on each tile
    (``ovpool.engine.chains``); ``dst`` may be one of ``args``. ``quiet``, when given, is the same
    kernel without the ``np.errstate(all="ignore")`` it enters on each call (about 1.5 us): for a
    caller that runs it under one already, the plan's run loop (``ovpool.engine.graph``).
    ``code``, when given, spells what ``tile`` computes as rows for the compiled chain
    (``ovpool.engine.chains``, ``ovpool.engine.native.compiled``), ``(name, *operands)`` with name
    add, sub, mul, div (two operands), clip (value, low, high) or sqrt (one); an operand is an int (the
    node's input at that place; a clip bound past the inputs, or omitted, is the type's limit),
    ``"prev"`` (the row before's result), ``"low"``/``"high"`` (the type's limits) or a float (a
    constant). Add: ``(("add", 0, 1),)``; HardSwish: ``(("div", 0, 6.0), ("add", "prev", 0.5),
    ("clip", "prev", 0.0, 1.0), ("mul", "prev", 0))``, numpy's passes in numpy's order."""

    __slots__ = ("run", "_into", "donors", "tile", "quiet", "code")

    def __init__(
        self,
        run: Kernel,
        into: Into | None = None,
        donors: tuple[int, ...] = (),
        tile: Callable[..., object] | None = None,
        quiet: InPlace | None = None,
        code: tuple[Any, ...] | None = None,
    ) -> None:
        self.run = run
        self._into = into
        self.donors = donors if into is not None else ()
        self.tile = tile
        self.quiet = quiet
        self.code = code if tile is not None else None

    def __call__(self, *args: Any) -> tuple[np.ndarray, ...]:
        return self.run(*args)

    def donating(self, position: int) -> Kernel:
        """The kernel that hands ``args[position]`` to ``into(out, *args)``."""
        into = self._into
        assert into is not None and position in self.donors

        def kernel(*args: Any) -> tuple[np.ndarray, ...]:
            return into(args[position], *args)

        return kernel


def ignoring_fp(function: Callable[..., tuple[np.ndarray, ...]]) -> Callable[..., tuple[np.ndarray, ...]]:
    """``function`` run under ``np.errstate(all="ignore")``: the form of a quiet kernel (one that
    leaves the floating-point state to its caller, ``InPlace.quiet``) called on its own, where
    1e38 * 10 in float32 is inf without an overflow warning."""

    def ignoring(*args: Any) -> tuple[np.ndarray, ...]:
        with np.errstate(all="ignore"):
            return function(*args)

    return ignoring


def writable_float(out: Any) -> bool:
    """Whether ``out`` can take a float result in place: a writeable float32/float64 array of rank >= 1."""
    return type(out) is np.ndarray and out.dtype.kind == "f" and out.dtype.itemsize >= 4 and out.ndim > 0 and out.flags.writeable
