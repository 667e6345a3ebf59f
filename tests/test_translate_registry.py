"""The translation registry (``ovpool.ov.translate.registry``) and the one known-defect schema
(``ovpool.defects``) its rows share with onnx.reference's and OpenVINO CPU's tables.

Adding a frontend defect row is one ``DEFECTS`` row (its op's rewrite entry holds it) and one
test (a case in ``tests/ops/test_onnx_frontend_fixes.py`` that converts the node and runs it
against onnxruntime); these tests then hold the row against the registry."""

from __future__ import annotations

import itertools

import pytest
from onnx import TensorProto, helper

from ovpool import defects
from ovpool.axis import is_last_axis
from ovpool.defects import LATEST, OPENVINO_CPU, OPENVINO_FRONTEND, Defect, VersionRange
from ovpool.engine import reference
from ovpool.execution import limits
from ovpool.onnx.versions import POOL_OPS
from ovpool.ov import cpu_deviations, frontend_fixes
from ovpool.ov.translate import registry
from ovpool.ov.translate.converters import CONVERTERS
from ovpool.ov.translate.table import DEFECTS


def test_no_two_entries_of_one_kind_share_a_version() -> None:
    for a, b in itertools.combinations(registry.ENTRIES, 2):
        if (a.kind, a.domain, a.op) == (b.kind, b.domain, b.op):
            assert not a.versions.overlaps(b.versions), (a.label, b.label)


def test_every_defects_row_is_in_its_ops_rewrite_entry_in_table_order() -> None:
    rewrites = registry.entries(registry.REWRITE)
    for row in DEFECTS:
        holding = [e for e in rewrites if any(r is row for r in e.rows)]
        assert len(holding) == 1, row.label
        entry = holding[0]
        assert (entry.domain, entry.op) == (row.domain, row.op_type)
        assert entry.versions.since <= row.since and row.until <= entry.versions.until, row.label
    for entry in rewrites:
        assert list(entry.rows) == [r for r in DEFECTS if r.op_type == entry.op], entry.label
    assert sum(len(e.rows) for e in rewrites) == len(DEFECTS)


def test_every_extension_has_its_entry() -> None:
    extensions = registry.entries(registry.EXTENSION)
    by_source = {s: [e.op for e in extensions if e.source == s] for s in {e.source for e in extensions}}
    assert by_source[registry.POOLING] == list(POOL_OPS)
    assert by_source[registry.QUANTIZATION] == list(registry.QUANTIZATION_OPS)
    assert by_source[registry.FRONTEND_FIXES] == list(CONVERTERS)
    assert all(e.converter is not None for e in extensions if e.source == registry.FRONTEND_FIXES)


def test_conversion_extensions_are_one_per_entry() -> None:
    from ovpool.ov.extension import PoolExtensions

    node = helper.make_node("MaxPool", ["x"], ["y"], kernel_shape=[2])
    graph = helper.make_graph(
        [node],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    pools = PoolExtensions(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))
    assert len(registry.conversion_extensions(pools, None, False)) == len(POOL_OPS)
    assert len(registry.conversion_extensions(pools, None, True)) == len(POOL_OPS) + len(CONVERTERS)


def test_one_sentinel_for_every_later_version() -> None:
    from ovpool.engine.ops import base

    assert base.LATEST == frontend_fixes.NEWEST == LATEST
    assert VersionRange(18).open and VersionRange(18).until == LATEST


@pytest.mark.parametrize(
    ("versions", "text"),
    [(VersionRange(11, 12), "11..12"), (VersionRange(18), "18+"), (VersionRange(12, 12), "12")],
)
def test_version_range_text(versions: VersionRange, text: str) -> None:
    assert versions.text() == text


def test_version_ranges_cover_and_overlap() -> None:
    assert VersionRange(11, 12).covers(12) and not VersionRange(11, 12).covers(13)
    assert VersionRange(11, 12).overlaps(VersionRange(12)) and not VersionRange(1, 10).overlaps(VersionRange(11))
    with pytest.raises(ValueError, match="want 1 <= since <= until"):
        VersionRange(13, 12)


def test_a_defect_names_its_tool_and_an_op() -> None:
    with pytest.raises(ValueError, match="tool 'onnxruntime'"):
        Defect("onnxruntime", ("Add",), VersionRange(7), "", "")
    with pytest.raises(ValueError, match="at least one op"):
        Defect(OPENVINO_CPU, (), VersionRange(7), "", "")


def test_every_table_holds_rows_of_the_one_schema() -> None:
    tables = {
        defects.ONNX_REFERENCE: reference.DEFECTS,
        OPENVINO_FRONTEND: DEFECTS,
        OPENVINO_CPU: (*cpu_deviations.DEVIATIONS, *limits.CPU_CRASHES),
    }
    for tool, rows in tables.items():
        assert rows and all(isinstance(row, Defect) and row.tool == tool for row in rows), tool
    assert frontend_fixes.DEFECTS is DEFECTS


def test_is_last_axis_is_softmaxs_rule() -> None:
    assert is_last_axis(3, 4) and is_last_axis(-1, 4)
    assert not is_last_axis(4, 4) and not is_last_axis(-5, 4) and not is_last_axis(1, 3) and not is_last_axis(0, 0)
