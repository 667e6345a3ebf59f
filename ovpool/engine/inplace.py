"""Which steps of a plan may write their result into the buffer of an input that dies there.

An element-wise kernel (:class:`InPlace`, the protocol the kernels of ``ovpool.engine.ops`` follow) can compute
``y = x + 3`` as ``x += 3`` when nothing reads ``x`` afterwards: the same IEEE operations on the
same values, so the same bits, without a new array (a fresh 11 MB array costs its page faults on
every run). The plan hands it an input slot (a *donor*) when all of these hold:

* the step is the slot's last use, and the slot is not a graph input or outer value (the caller's
  arrays), a constant, or a graph output;
* the slot's value comes from a kernel that returns arrays of its own (an operator of the
  ``fresh`` trait, ``ovpool.engine.ops.base.Traits``, or another in-place kernel): never a view of
  another value, never an array it keeps;
* every step reading the slot returns arrays of its own too, or reads its shape only (a group of
  shape values, ``ovpool.engine.shapevalues``), so no view of the buffer outlives it (``Reshape``
  returns a view of its input: a slot read by a Reshape is never a donor).

The kernel checks at run time what only the values tell (the buffer has the result's shape and
dtype and is writeable) and allocates as usual when they do not.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence, Set
from typing import Any

from ovpool.engine.ops.base import Kernel, deprecated_table, named_with, traits_named
from ovpool.engine.ops.donated import InPlace as InPlace
from ovpool.engine.ops.donated import Into as Into
from ovpool.engine.ops.donated import ignoring_fp as ignoring_fp
from ovpool.engine.ops.donated import writable_float as writable_float
from ovpool.engine.shapevalues import ShapeValues


def owned_slots(steps: Sequence[tuple[str, Kernel, tuple[int, ...], tuple[int, ...]]]) -> set[int]:
    """The slots whose buffer belongs to the plan alone: produced by a fresh kernel and read only by
    fresh kernels or groups of shape values (``steps`` as for :func:`donating_kernels`)."""
    fresh = [kernel_is_fresh(op_type, kernel) for op_type, kernel, _, _ in steps]
    produced_fresh: dict[int, bool] = {}
    read_fresh: dict[int, bool] = {}
    for index, (_, kernel, ins, outs) in enumerate(steps):
        for s in outs:
            produced_fresh.setdefault(s, fresh[index])
        # a group of shape values reads its sources' shapes only: it keeps no view of them
        safe = fresh[index] or isinstance(kernel, ShapeValues)
        for s in ins:
            read_fresh[s] = read_fresh.get(s, True) and safe
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
