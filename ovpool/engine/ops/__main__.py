"""``python -m ovpool.engine.ops``: the operator table and onnx.reference's known defects as
Markdown (the README's copies are checked against them): per family module, each operator with
the ONNX since-versions its ranges cover; per defect, the op versions and what is wrong."""

from __future__ import annotations

from collections import defaultdict

import onnx.defs

from ovpool.engine.ops.base import covered
from ovpool.engine.reference import DEFECTS


def table() -> str:
    """One row per family: ``| conv | Conv 1, 11, 22; ConvTranspose 1, 11, 22 |``; operators of other
    domains are named with theirs (``com.microsoft.QLinearAdd 1``)."""
    history: dict[tuple[str, str], list[int]] = defaultdict(list)
    for schema in onnx.defs.get_all_schemas_with_history():
        history[(schema.domain, schema.name)].append(schema.since_version)
    families: dict[str, dict[str, list[int]]] = defaultdict(dict)
    for row in covered():
        family = row.factory.__module__.removeprefix("ovpool.engine.ops.").partition(".")[0]  # conv.forward: conv
        known = history[(row.domain, row.op_type)]
        # a domain onnx has no schemas for (com.microsoft): the registered range's first version
        versions = sorted(v for v in known if row.since <= v <= row.until) if known else [row.since]
        name = row.op_type if not row.domain else f"{row.domain}.{row.op_type}"
        families[family].setdefault(name, []).extend(versions)
    lines = ["| family | operators (ONNX since-versions) |", "|---|---|"]
    for family in sorted(families):
        ops = "; ".join(f"{op} {', '.join(map(str, sorted(set(v))))}" for op, v in sorted(families[family].items()))
        lines.append(f"| {family} | {ops} |")
    return "\n".join(lines)


def defects() -> str:
    """One row per known onnx.reference defect (``ovpool.engine.reference.DEFECTS``)."""
    lines = ["| operator | versions | onnx.reference |", "|---|---|---|"]
    for defect in DEFECTS:
        lines.append(f"| {defect.op_type} | {defect.versions.text('-')} | {defect.does.removeprefix('onnx.reference ')} |")
    return "\n".join(lines)


if __name__ == "__main__":
    print(table())
    print()
    print(defects())
