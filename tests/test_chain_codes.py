"""The compiled chain's instruction set is one table (``ovpool.engine.native.chain_ops``): the C
``enum chain_op``, its switch and its operand counts in ``_compiled.c`` are held to it, and the
element-wise kernels' rows read it."""

from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ovpool.engine.native import chain_ops
from ovpool.engine.native.chain_ops import CHAIN_CODES, CHAIN_OPS, ufunc_rows

SOURCE = (Path(chain_ops.__file__).parent / "_compiled.c").read_text()


def _enum() -> dict[str, int]:
    body = re.search(r"enum chain_op \{([^}]*)\}", SOURCE)
    assert body, "_compiled.c has no enum chain_op"
    return {name: int(value) for name, value in re.findall(r"(CHAIN_\w+)\s*=\s*(\d+)", body.group(1))}


def test_the_c_enum_is_the_table() -> None:
    assert _enum() == {f"CHAIN_{op.name.upper()}": op.code for op in CHAIN_OPS}
    assert len(set(CHAIN_CODES.values())) == len(CHAIN_OPS)


def test_the_c_switch_has_a_case_for_every_instruction_and_no_other() -> None:
    body = SOURCE[SOURCE.index("switch (row[0])") :]
    body = body[: body.index("#define CHAIN_ARGS")]
    cases = re.findall(r"case (\w+):", body)
    assert sorted(cases) == sorted(_enum()) and "default:" not in body


def test_the_c_operand_counts_are_the_table() -> None:
    body = re.search(r"chain_operands\[\] = \{([^}]*)\}", SOURCE)
    assert body
    counts = {name: int(n) for name, n in re.findall(r"\[(CHAIN_\w+)\]\s*=\s*(\d+)", body.group(1))}
    assert counts == {f"CHAIN_{op.name.upper()}": op.operands for op in CHAIN_OPS}
    bounds = re.search(r"row\[0\] < (CHAIN_\w+) \|\| row\[0\] > (CHAIN_\w+)", SOURCE)
    assert bounds and (_enum()[bounds.group(1)], _enum()[bounds.group(2)]) == (1, max(CHAIN_CODES.values()))


def test_the_kernels_rows_read_the_table() -> None:
    """Add, Sub, Mul, Div and Sqrt find their rows by their ufunc; the compiled module and the
    chain encoder use the table's codes."""
    from ovpool.engine import chains
    from ovpool.engine.native import compiled
    from ovpool.engine.ops import binary, elementwise

    assert ufunc_rows(2)[np.add] == (("add", 0, 1),) and ufunc_rows(1) == {np.sqrt: (("sqrt", 0),)}
    assert binary._CODES == ufunc_rows(2) and elementwise._SIMPLE_CODES == ufunc_rows(1)
    assert compiled.CHAIN_CODES is CHAIN_CODES and chains.CHAIN_CODES is CHAIN_CODES
    rows, _ = chains._program([(("mul", 0, 2.0), ("clip", "prev", 0.0, 1.0))], [(0,)], 1) or ((), ())
    assert [row[0] for row in rows] == [CHAIN_CODES["mul"], CHAIN_CODES["clip"]]


def test_chain_rows_are_made_by_the_element_wise_families_only() -> None:
    """Only the element-wise kernels (``ops/binary.py``, ``ops/elementwise/``) are ``InPlace``, so
    only they carry chain rows; each row they give names an instruction of the table with its
    operand count (every element-wise operator built at each registered version, with defaults;
    one whose factory needs more is skipped)."""
    from ovpool.engine.inplace import InPlace
    from ovpool.engine.ops import base

    ops = Path(base.__file__).parent
    makers = sorted(str(p.relative_to(ops)) for p in ops.rglob("*.py") if "InPlace(" in p.read_text())
    assert makers and all(m == "binary.py" or m.startswith("elementwise/") for m in makers), makers
    arity = {op.name: op.operands for op in CHAIN_OPS}
    rows = 0
    for row in base.covered():
        family = row.factory.__module__
        if not (family.endswith(".binary") or ".elementwise." in family):
            continue
        for constants in ((None,), (None, None), (None, np.asarray(2.0, np.float32))):
            try:
                kernel = row.factory(base.OpNode("n", row.op_type, row.since, row.since, constants=constants))
            except Exception:  # an attribute or input the defaults do not give
                continue
            for kind in (kernel, getattr(kernel, "quiet", None)):
                if isinstance(kind, InPlace) and kind.code is not None:
                    for name, *operands in kind.code:
                        assert len(operands) == arity[name], (row.op_type, name, operands)
                        rows += 1
    assert rows >= 10
