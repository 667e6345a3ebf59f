"""The instruction set of the compiled chain (``_compiled.c``'s ``enum chain_op``): one table.

A chain is rows of four int64, ``(code, a, b, c)``: the code of one instruction and its operands
(``ovpool.engine.native.compiled``). Each instruction is a name the element-wise kernels write
their rows with (``InPlace.code``: Relu is ``(("clip", 0, 0.0, inf),)``), its code in the C
``enum chain_op`` (``CHAIN_`` and the name upper-cased: ``CHAIN_CLIP = 5``), how many operands it
reads (clip 3: the value and both bounds) and, where it computes one numpy ufunc bit for bit, that
ufunc (``np.sqrt``: IEEE's square root is correctly rounded in C as in numpy). Add, Sub, Mul and
Div of two inputs, and Sqrt of one, find their rows here by their ufunc. tests/test_chain_codes.py
holds the C enum, its switch and its operand counts to this table.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import numpy as np


@dataclass(frozen=True)
class ChainOp:
    """One instruction: ``name``, ``code`` (its C enum value), ``operands`` read, and the ``ufunc``
    it equals bit for bit (None where it is no single ufunc: clip, save)."""

    name: str
    code: int
    operands: int
    ufunc: np.ufunc | None = None


CHAIN_OPS: tuple[ChainOp, ...] = (
    ChainOp("add", 1, 2, np.add),
    ChainOp("sub", 2, 2, np.subtract),
    ChainOp("mul", 3, 2, np.multiply),
    ChainOp("div", 4, 2, np.divide),
    ChainOp("clip", 5, 3),  # numpy 2's float clip: min(max(a, b), c) with NaN kept
    ChainOp("save", 6, 1),  # keeps a for the rows after (operand -2)
    ChainOp("sqrt", 7, 1, np.sqrt),
)

CHAIN_CODES: dict[str, int] = {op.name: op.code for op in CHAIN_OPS}


def ufunc_rows(operands: int) -> dict[Any, tuple[tuple[Any, ...]]]:
    """The one-row program of each ufunc instruction of ``operands`` operands, reading the node's
    inputs in order: ``ufunc_rows(2)[np.add]`` is ``(("add", 0, 1),)``, ``ufunc_rows(1)[np.sqrt]``
    is ``(("sqrt", 0),)``."""
    return {op.ufunc: ((op.name, *range(operands)),) for op in CHAIN_OPS if op.ufunc is not None and op.operands == operands}
