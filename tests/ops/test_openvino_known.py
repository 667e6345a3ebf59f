"""Each row of ``openvino_known.KNOWN`` with a repro still fails as the row says: the minimal case
converted by ``ovpool convert`` disagrees at the row's stage and the row explains it. When a branch
fixes a gap (fefix, irlayers, gridsample) its row's test fails here: remove the row."""

from __future__ import annotations

import numpy as np
import pytest
from harness import feeds_of, make_model, run_ort, tolerance
from on_openvino import outcome_of
from openvino_known import KNOWN, Known, match

pytest.importorskip("openvino")

ROWS = [pytest.param(row, id=f"{row.ops[0]}-{row.condition}") for row in KNOWN if row.repro is not None]


@pytest.mark.parametrize("row", ROWS)
def test_known_gap_still_fails_so(row: Known) -> None:
    assert row.repro is not None
    op, opset, inputs, attrs, n_outputs = row.repro
    model = make_model(op, opset, inputs, attrs, n_outputs, constant=row.repro_constant)
    feeds = feeds_of(model, inputs)
    expected = run_ort(model, feeds)
    dtype = next((np.asarray(v).dtype for v in inputs if v is not None), np.dtype(np.float32))
    case, outcome, stage, detail = outcome_of(model, feeds, expected, **tolerance(dtype))
    assert outcome == "disagrees", f"{case.describe()}: {outcome} ({detail or 'agrees'}); the row is no longer needed"
    assert match(case, stage, detail) is row, f"{case.describe()}: fails at {stage} with {detail}, not as the row says"


def test_every_layer_row_names_an_ir_layer_version() -> None:
    """Layer rows read ``Type-opsetN``, as the numpy refusal writes them."""
    for row in KNOWN:
        if row.layer:
            name, _, version = row.layer.partition("-opset")
            assert name and version.isdigit(), row.layer


def test_numpy_layer_rows_name_only_layers_numpy_does_not_run() -> None:
    """A layer that runs on numpy now needs no row (a row never hides a pass, but it misleads)."""
    from ovpool.engine.ir_layers import supported

    table = supported()
    for row in KNOWN:
        if row.layer:
            layer_type, version = row.layer.split("-opset")
            assert int(version) not in table.get(layer_type, ()), row.why()
