"""Pass names, as the command line and ``ovpool.transform`` take them."""

from __future__ import annotations

from ovpool.transforms.dml import DML_LEGAL_PASS
from ovpool.transforms.framework import Pass, UnknownPassError
from ovpool.transforms.global_pools import EXPAND_GLOBAL_PASS
from ovpool.transforms.opset import opset_pass
from ovpool.transforms.pads import EXPLICIT_PADS_PASS, NO_CEIL_PASS

FIXED_PASSES: dict[str, Pass] = {p.name: p for p in (EXPLICIT_PADS_PASS, NO_CEIL_PASS, EXPAND_GLOBAL_PASS, DML_LEGAL_PASS)}


def pass_names() -> list[str]:
    return [*FIXED_PASSES, "opset=N"]


def parse_pass(name: str) -> Pass:
    """``"no-ceil"`` -> that pass; ``"opset=11"`` -> the opset pass for 11. N is ASCII digits
    (``"opset=²"`` is refused: ``str.isdigit`` takes superscripts, which ``int`` does not)."""
    text = name.strip()
    if text in FIXED_PASSES:
        return FIXED_PASSES[text]
    key, _, value = text.partition("=")
    if key.strip() == "opset":
        if not value.strip().isascii() or not value.strip().isdigit():
            raise UnknownPassError(f"pass '{name}': N in opset=N must be a whole number (e.g. opset=19)")
        return opset_pass(int(value))
    raise UnknownPassError(f"unknown pass '{name}' (known: {', '.join(pass_names())})")
