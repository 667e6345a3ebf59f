"""The README's table of ``DEFECTS`` (``python -m ovpool.ov.frontend_fixes`` prints it)."""

from __future__ import annotations

from ovpool.defects import Defect
from ovpool.ov.translate.table import DEFECTS


def readme_table() -> str:
    """The README's table of the defects: one row per ``DEFECTS`` row, fixed (how) or refused;
    consecutive rows that differ only in the op type share a line (``ReduceL1, ReduceL2-18+``)."""
    rows = ["| ONNX node | OpenVINO 2026.4 frontend | ovpool |", "|---|---|---|"]
    groups: list[list[Defect]] = []
    for defect in DEFECTS:
        last = groups[-1][0] if groups else None
        same = last is not None and (last.versions, last.when, last.does, last.fix) == (
            defect.versions,
            defect.when,
            defect.does,
            defect.fix,
        )
        if same:
            groups[-1].append(defect)
        else:
            groups.append([defect])
    for group in groups:
        defect = group[0]
        doing = f"fixed: {defect.fix}" if defect.fix else "refused (`--allow-inexact` writes OpenVINO's)"
        ops = ", ".join(d.op_type for d in group)
        rows.append(f"| {ops}-{defect.versions.text()}, {defect.when} | {defect.does} | {doing} |")
    return "\n".join(rows)
