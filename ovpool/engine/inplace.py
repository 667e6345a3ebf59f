"""Which steps of a plan may write their result into the buffer of an input that dies there.

An element-wise kernel (:class:`InPlace`, the protocol the kernels of ``ovpool.engine.ops`` follow) can compute
``y = x + 3`` as ``x += 3`` when nothing reads ``x`` afterwards: the same IEEE operations on the
same values, so the same bits, without a new array (a fresh 11 MB array costs its page faults on
every run). The plan hands it an input slot (a *donor*) when all of these hold:

* the step is the slot's last use, and the slot is not a graph input or outer value (the caller's
  arrays), a constant, or a graph output;
* the slot's value comes from a kernel that returns arrays of its own (an operator of the
  ``fresh`` trait, ``ovpool.engine.ops.base.Traits``, or another in-place kernel): never a view of another value, never an array it keeps;
* every step reading the slot returns arrays of its own too, so no view of the buffer outlives
  it (``Reshape`` returns a view of its input: a slot read by a Reshape is never a donor).

The kernel checks at run time what only the values tell (the buffer has the result's shape and
dtype and is writeable) and allocates as usual when they do not.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence, Set
from typing import Any

import numpy as np

from ovpool.engine.ops.base import Kernel, deprecated_table, named_with, traits_named

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


def owned_slots(steps: Sequence[tuple[str, Kernel, tuple[int, ...], tuple[int, ...]]]) -> set[int]:
    """The slots whose buffer belongs to the plan alone: produced by a fresh kernel and read only by
    fresh kernels (``steps`` as for :func:`donating_kernels`)."""
    fresh = [kernel_is_fresh(op_type, kernel) for op_type, kernel, _, _ in steps]
    produced_fresh: dict[int, bool] = {}
    read_fresh: dict[int, bool] = {}
    for index, (_, _, ins, outs) in enumerate(steps):
        for s in outs:
            produced_fresh.setdefault(s, fresh[index])
        for s in ins:
            read_fresh[s] = read_fresh.get(s, True) and fresh[index]
    return {s for s, ok in produced_fresh.items() if ok and read_fresh.get(s, True)}


def donating_kernels(
    steps: Sequence[tuple[str, Kernel, tuple[int, ...], tuple[int, ...]]],
    frees: Mapping[int, Sequence[int]],
    outside: Set[int],
    donate: bool,
) -> tuple[list[Kernel], int]:
    """The kernel each step runs: ``steps`` are ``(op type, kernel, input slots, output slots)`` in
    plan order, ``frees[i]`` the slots step ``i`` is last to read, ``outside`` the slots never
    donated. With ``donate`` False, or where no input qualifies, the kernel as prepared (an
    in-place kernel's allocating form); and how many steps donate."""
    owned = owned_slots(steps) - set(outside) if donate else set()
    kernels: list[Kernel] = []
    donating = 0
    for index, (_, kernel, ins, _) in enumerate(steps):
        if not isinstance(kernel, InPlace):
            kernels.append(kernel)
            continue
        kernel = kernel.quiet or kernel  # the plan runs under np.errstate(all="ignore")
        dying = owned.intersection(frees.get(index, ()))
        donor = next((position for position in kernel.donors if position < len(ins) and ins[position] in dying), None)
        if donor is None:
            kernels.append(kernel.run)
        else:
            kernels.append(kernel.donating(donor))
            donating += 1
    return kernels, donating


def kernel_is_fresh(op_type: str, kernel: Kernel) -> bool:
    """Whether the kernel's outputs are arrays of its own: an in-place capable element-wise kernel
    (its result is a new array or the buffer it was handed) or an operator of the ``fresh`` trait."""
    return isinstance(kernel, InPlace) or traits_named(op_type).fresh


def __getattr__(name: str) -> Any:
    """``FRESH_OPS``, the operators of the ``fresh`` trait once typed here: derived from the
    registrations (deprecated; read ``Traits.fresh``)."""
    if name == "FRESH_OPS":
        return deprecated_table(__name__, name, named_with(lambda t: t.fresh))
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
