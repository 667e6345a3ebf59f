"""The memory budget: no tensor larger than it is allocated, and the check comes before allocating.

Every size ovpool is about to allocate for a model (a generated or loaded input, an initializer, a
pooling output, a tensor whose dims the model declares) is checked with ``check_tensor`` first, so
a model declaring a 2**40-wide input is one clear error naming the tensor, its dims and the bytes
it would need, not a ``MemoryError`` (or the machine running out of memory). The budget is 4 GiB per
tensor unless ``OVPOOL_MAX_MEMORY`` says otherwise (``ovpool run --max-memory 16G`` sets it):
bytes, or a number with a K/M/G/T suffix (powers of 1024, "GiB" and "GB" alike).

The budget bounds the run, not only each tensor: while a run holds tensors live, ``holding``
records their bytes, and every check counts them (``held() + needed`` within the budget). The run's
accounting step by step is ``ovpool.engine.budget``.
"""

from __future__ import annotations

import contextvars
import functools
import os
import re
from collections.abc import Sequence

from ovpool import dtypes, shape
from ovpool.errors import ModelError, OvpoolError, UsageError

MEMORY_ENV = "OVPOOL_MAX_MEMORY"
DEFAULT_BUDGET = 4 << 30
# The largest budget: more bytes than any machine addresses (numpy sizes are signed 64-bit).
MAX_BUDGET = 2**63 - 1
_UNITS = {"": 1, "K": 1 << 10, "M": 1 << 20, "G": 1 << 30, "T": 1 << 40}
_HELD: contextvars.ContextVar[int] = contextvars.ContextVar("ovpool_memory_held", default=0)
_FIXED: contextvars.ContextVar[int | None] = contextvars.ContextVar("ovpool_memory_budget", default=None)
_AMOUNT = re.compile(r"([0-9]+(?:\.[0-9]+)?)\s*([KMGT]?)(?:I?B)?", re.IGNORECASE)


class MemoryBudgetError(OvpoolError):
    """A tensor the model needs is larger than the memory budget (exit 1)."""


def parse_bytes(text: str, what: str = "--max-memory") -> int:
    """``"16G"`` -> 17179869184, ``"512MiB"`` -> 536870912, ``"1000"`` -> 1000; anything else (or
    less than one byte, or more than ``MAX_BUDGET``) is a ``UsageError`` naming ``what``. The
    number is read as a decimal, never a float that 400 nines would overflow to infinity
    (``decimal`` is imported here: ~5 ms a process that never reads a size)."""
    from decimal import Decimal

    match = _AMOUNT.fullmatch(text.strip())
    amount = int(Decimal(match.group(1)) * _UNITS[match.group(2).upper()]) if match else 0
    if not 1 <= amount <= MAX_BUDGET:
        raise UsageError(f"{what} {text!r}: expected a size such as 4G, 512M or a number of bytes, at most 2**63-1")
    return amount


def budget() -> int:
    """The budget in bytes: ``$OVPOOL_MAX_MEMORY`` if set, else ``DEFAULT_BUDGET`` (4 GiB); within
    a ``run_budget`` block, the value it read on entry."""
    fixed = _FIXED.get()
    if fixed is not None:
        return fixed
    text = os.environ.get(MEMORY_ENV)
    return _parsed_budget(text) if text else DEFAULT_BUDGET


@functools.lru_cache(maxsize=8)
def _parsed_budget(text: str) -> int:
    """``parse_bytes`` of ``$OVPOOL_MAX_MEMORY``, read once per value (kernels check every run)."""
    return parse_bytes(text, MEMORY_ENV)


def format_bytes(amount: int) -> str:
    """A size for people: 17592186044416 -> "16.0 TiB", 1536 -> "1.5 KiB", 12 -> "12 bytes";
    past 1024 TiB in powers of ten: 2**70 -> "1.2e+21 bytes"."""
    if amount >= 1 << 50:
        return f"{amount:.1e} bytes"
    for unit in ("TiB", "GiB", "MiB", "KiB"):
        scale = _UNITS[unit[0]]
        if amount >= scale:
            return f"{amount / scale:.1f} {unit}"
    return f"{amount} bytes"


def check_tensor(what: str, dims: Sequence[int], dtype: str, itemsize: int | None = None) -> int:
    """The bytes of a ``dtype`` tensor with these dims (``shape.tensor_bytes``), or
    ``MemoryBudgetError`` when they are over the budget: ``input 'x' [1, 3, 1048576, 1048576]
    float32 would need 12.0 TiB, over the memory budget of 4.0 GiB``. ``what`` names the tensor;
    ``itemsize`` is for a dtype outside ``ovpool.dtypes`` (an .npy file's complex64)."""
    needed = shape.tensor_bytes(dims, dtypes.itemsize(dtype) if itemsize is None else itemsize)
    if needed + held() <= budget():
        return needed  # the message is only made for a refusal (kernels check on every run)
    return check_bytes(f"{what} {list(dims)} {dtype} would need", needed)


def fits(needed: int) -> bool:
    """Whether ``needed`` more bytes fit beside what the run holds within the budget: the quick
    test before a kernel's ``check_tensor`` calls, which are made only when it fails."""
    return needed + held() <= budget()


def check_bytes(what: str, needed: int) -> int:
    """``needed`` if it fits beside what the run holds (``held()``) within the budget, else
    ``MemoryBudgetError``: ``m.bin: is 484 bytes, over the memory budget of 10 bytes`` for
    ``what`` = "m.bin: is"; with 900 bytes held and a budget of 1000, 200 more bytes are ``... 200
    bytes beside 900 bytes the run holds, over the memory budget of 1000 bytes``."""
    limit, live = budget(), held()
    if needed + live > limit:
        exact = f" ({needed} bytes)" if 1024 <= needed < 1 << 50 else ""
        beside = f" beside {format_bytes(live)} the run holds" if live else ""
        raise MemoryBudgetError(
            f"{what} {format_bytes(needed)}{exact}{beside}, over the memory budget "
            f"of {format_bytes(limit)} (--max-memory or {MEMORY_ENV} raises it)"
        )
    return needed


def held() -> int:
    """The bytes the run in progress holds live (``holding``); 0 outside a run."""
    return _HELD.get()


class holding:  # noqa: N801 - used as a function: ``with holding(n):``
    """Count ``amount`` more bytes as held while the block runs: a Loop body run while its outer
    graph holds 3 GiB, under a 4 GiB budget, has 1 GiB to allocate (``check_bytes``)."""

    def __init__(self, amount: int) -> None:
        self._amount = amount
        self._token: contextvars.Token[int] | None = None

    def __enter__(self) -> None:
        self._token = _HELD.set(_HELD.get() + self._amount)

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _HELD.reset(self._token)


def fix_budget() -> contextvars.Token[int | None]:
    """``budget()`` read now and held for what runs until ``release_budget(token)``: ``run_budget``
    as two calls, for a caller that runs often (a session's run: 1 us less than the ``with``)."""
    return _FIXED.set(budget())


def release_budget(token: contextvars.Token[int | None]) -> None:
    """The budget as it was before ``fix_budget`` gave ``token``."""
    _FIXED.reset(token)


class run_budget:  # noqa: N801 - used as a function: ``with run_budget():``
    """``budget()`` read once for the block: a run's kernels check sizes at every node, and
    ``$OVPOOL_MAX_MEMORY`` costs about 1 us a read; with it set to 1M on entry, ``budget()`` is
    1048576 inside the block whatever the environment says meanwhile."""

    def __init__(self) -> None:
        self._token: contextvars.Token[int | None] | None = None

    def __enter__(self) -> None:
        self._token = _FIXED.set(budget())

    def __exit__(self, *exc: object) -> None:
        if self._token is not None:
            _FIXED.reset(self._token)


# What numpy raises for a size it cannot hold, besides MemoryError: np.empty((2**62,)) gives
# "array is too big", np.pad to 2**63 cells "Maximum allowed dimension exceeded".
_TOO_BIG = ("array is too big", "Maximum allowed dimension exceeded")


def kernel_failure(label: str, exc: Exception) -> OvpoolError:
    """The error for a kernel that raised ``exc`` on a node or layer (``label``): a size numpy
    cannot allocate is a ``MemoryBudgetError`` (``node 'c' (Conv-11): needs more memory than
    numpy can allocate (Unable to allocate 408. GiB ...)``), anything else a ``ModelError``
    naming the exception."""
    text = str(exc)
    if isinstance(exc, OverflowError):
        return ModelError(f"{label}: a value is out of numpy's range ({text})")
    if isinstance(exc, MemoryError) or any(marker in text for marker in _TOO_BIG):
        return MemoryBudgetError(f"{label}: needs more memory than numpy can allocate ({text or type(exc).__name__})")
    return ModelError(f"{label}: {type(exc).__name__}: {text}")
