"""Rendering ``ovpool validate`` results: a text table, JSON, or JUnit XML for CI systems.

JSON: ``{"files": [{"file", "pooling_layers", "findings": [...]}], "unreadable": [{"file", "error"}],
"summary": {"files", "pooling_layers", "findings", "unreadable"}}``; each finding as ``Finding.as_dict`` (``code``,
``rule``, ``file``, ``layer_id``, ``name``, ``type``, ``version``, ``message``, and for shape findings
``declared``/``expected`` lists of ints). JUnit: one ``<testsuite>`` per file, one ``<testcase>`` per
pooling layer, a ``<failure>`` per finding (``type`` is the code); an unreadable file is an ``<error>``.

Every format counts alike: ``files`` are the files read (each with its report), ``unreadable`` the
files that could not be (an ONNX model given to validate, a truncated .xml), never among ``files``:
one ONNX model alone is 0 files and 1 unreadable in the text summary, in the JSON ``summary``, and
in JUnit (no suite of layers, one suite whose ``read`` case is an ``<error>``).
"""

from __future__ import annotations

import json
from collections.abc import Sequence

from ovpool.ir.validation import FileReport, Finding


def render(reports: Sequence[FileReport], unreadable: Sequence[tuple[str, str]], fmt: str) -> str:
    """The whole report in ``fmt`` ("text", "json" or "junit")."""
    return {"text": text, "json": as_json, "junit": junit}[fmt](reports, unreadable)


def text(reports: Sequence[FileReport], unreadable: Sequence[tuple[str, str]]) -> str:
    """A table: ``file:line  layer  type  code  message``, then a summary line."""
    rows = [("LOCATION", "LAYER", "TYPE", "CODE", "MESSAGE")]
    for finding in (f for r in reports for f in r.findings):
        rows.append(
            (
                f"{finding.file}:{finding.line}",
                _layer(finding),
                f"{finding.type} {finding.version}".strip(),
                finding.code,
                finding.message,
            )
        )
    lines = []
    if len(rows) > 1:
        widths = [max(len(r[i]) for r in rows) for i in range(4)]
        lines = ["  ".join(cell.ljust(widths[i]) for i, cell in enumerate(row[:4])) + "  " + row[4] for row in rows]
    lines.extend(f"{path}: unreadable: {error}" for path, error in unreadable)
    layers = sum(len(r.pooling_layers) for r in reports)
    findings = sum(len(r.findings) for r in reports)
    lines.append(
        f"{len(reports)} file(s), {layers} pooling layer(s), {findings} finding(s)"
        + (f", {len(unreadable)} unreadable" if unreadable else "")
    )
    return "\n".join(lines) + "\n"


def as_json(reports: Sequence[FileReport], unreadable: Sequence[tuple[str, str]]) -> str:
    doc = {
        "files": [
            {"file": r.file, "pooling_layers": len(r.pooling_layers), "findings": [f.as_dict() for f in r.findings]}
            for r in reports
        ],
        "unreadable": [{"file": path, "error": error} for path, error in unreadable],
        "summary": {
            "files": len(reports),
            "pooling_layers": sum(len(r.pooling_layers) for r in reports),
            "findings": sum(len(r.findings) for r in reports),
            "unreadable": len(unreadable),
        },
    }
    return json.dumps(doc, indent=2) + "\n"


def junit(reports: Sequence[FileReport], unreadable: Sequence[tuple[str, str]]) -> str:
    from lxml import etree

    suites = etree.Element("testsuites", name="ovpool validate")
    for report in reports:
        suite = etree.SubElement(suites, "testsuite", name=report.file, tests=str(len(report.pooling_layers)))
        failures = 0
        by_layer: dict[str, list[Finding]] = {}
        for finding in report.findings:
            by_layer.setdefault(finding.layer_id, []).append(finding)
        cases = list(report.pooling_layers)
        if "" in by_layer:
            cases.append(("", "model"))
        for layer_id, name in cases:
            case = etree.SubElement(
                suite, "testcase", classname=report.file, name=f"{name} (layer {layer_id})" if layer_id else name
            )
            for finding in by_layer.get(layer_id, ()):
                failures += 1
                failure = etree.SubElement(case, "failure", type=finding.code, message=finding.message)
                failure.text = f"{finding.file}:{finding.line}: {finding.code} {finding.rule}: {finding.message}"
        suite.set("failures", str(failures))
        suite.set("errors", "0")
    for path, error in unreadable:
        suite = etree.SubElement(suites, "testsuite", name=path, tests="1", failures="0", errors="1")
        case = etree.SubElement(suite, "testcase", classname=path, name="read")
        etree.SubElement(case, "error", type="unreadable", message=error)
    return etree.tostring(suites, pretty_print=True, xml_declaration=True, encoding="UTF-8").decode()


def _layer(finding: Finding) -> str:
    return f"{finding.layer_id} {finding.name}".strip() or "-"
