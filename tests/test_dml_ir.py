"""OpenVINO IR <-> DirectML: IR meanings (``ceil`` without the drop rule, ``exclude-pad="false"``,
i32 indices) lowered exactly or refused, checked on the naive emulator against the naive oracle;
DirectML -> IR run on OpenVINO (f32) gives the emulator's outputs."""

from __future__ import annotations

import dml_emulator
import numpy as np
import oracle
import pytest

import ovpool
from ovpool.dml import export as dml_export
from ovpool.dml import importer as dml_import
from ovpool.errors import UnsupportedError
from ovpool.ir import writer as ir_emit
from ovpool.spec import Divisor, Indices, PoolKind, PoolSpec, Rounding

CASES = [
    # spec, input shape, oracle rounding, oracle divisor
    (
        PoolSpec(
            PoolKind.AVERAGE,
            (3, 3),
            (2, 2),
            pads_begin=(1, 1),
            pads_end=(1, 1),
            rounding=Rounding.CEIL_NO_DROP,
            divisor=Divisor.FULL_KERNEL_IF_PADDED,
            name="p",
        ),
        (1, 2, 4, 4),
        "ceil_no_drop",
        "full_if_padded",
    ),
    (
        PoolSpec(
            PoolKind.AVERAGE,
            (3,),
            (2,),
            pads_begin=(1,),
            pads_end=(1,),
            rounding=Rounding.CEIL,
            divisor=Divisor.FULL_KERNEL_IF_PADDED,
            name="p",
        ),
        (1, 2, 6),
        "ceil",
        "full_if_padded",
    ),
    (
        PoolSpec(
            PoolKind.AVERAGE, (2, 2, 2), (1, 2, 2), dilations=(1, 2, 1), pads_end=(1, 0, 1), rounding=Rounding.CEIL, name="p"
        ),
        (1, 1, 3, 5, 4),
        "ceil",
        "exclude",
    ),
    # full kernel, pads and no overhang: IncludePadding=TRUE; no pads but a ceil overhang: divide by the cells inside
    (
        PoolSpec(
            PoolKind.AVERAGE, (3, 3), (2, 2), pads_begin=(1, 1), pads_end=(1, 1), divisor=Divisor.FULL_KERNEL_IF_PADDED, name="p"
        ),
        (1, 1, 5, 5),
        "floor",
        "full_if_padded",
    ),
    (
        PoolSpec(
            PoolKind.AVERAGE, (2, 2), (2, 2), rounding=Rounding.CEIL_NO_DROP, divisor=Divisor.FULL_KERNEL_IF_PADDED, name="p"
        ),
        (1, 1, 5, 5),
        "ceil_no_drop",
        "full_if_padded",
    ),
    (
        PoolSpec(
            PoolKind.MAX,
            (2, 2),
            (2, 2),
            pads_begin=(1, 0),
            rounding=Rounding.CEIL_NO_DROP,
            indices=Indices(dtype="int32"),
            name="p",
        ),
        (2, 2, 5, 5),
        "ceil_no_drop",
        None,
    ),
]


def oracle_attrs(spec: PoolSpec) -> dict:
    return {
        "kernel_shape": list(spec.kernel),
        "strides": list(spec.strides),
        "dilations": list(spec.dilations),
        "pads": list(spec.pads_begin + spec.pads_end),
    }


def write_ir(tmp_path, spec, shape):
    files = ir_emit.emit_single(spec, shape)
    for suffix, data in files.items():
        (tmp_path / f"m{suffix}").write_bytes(data)
    return tmp_path / "m.xml"


@pytest.mark.parametrize("spec, shape, rounding, divisor", CASES)
def test_ir_to_dml_keeps_openvino_meaning(tmp_path, spec, shape, rounding, divisor):
    document = dml_export.document_from_ir(write_ir(tmp_path, spec, shape))
    x = (np.random.default_rng(1).integers(-8, 8, shape) / 4).astype(np.float32)
    got = dml_emulator.run(document, {"x": x})
    if spec.kind is PoolKind.MAX:
        want, index = oracle.pool(x, "max", oracle_attrs(spec), rounding=rounding)
        np.testing.assert_array_equal(got["indices"].astype(np.int64), index)
        assert document["tensors"]["indices"]["DataType"] == "DML_TENSOR_DATA_TYPE_INT32"
        assert document["operators"][0]["desc"]["OutputIndicesTensor"]["DataType"] == "DML_TENSOR_DATA_TYPE_UINT32"
    else:
        want = oracle.pool(x, "avg", oracle_attrs(spec), rounding=rounding, divisor=divisor)
    np.testing.assert_allclose(got["y"], want, rtol=1e-6, atol=1e-6)


def test_ir_refusals_name_the_layer(tmp_path):
    per_channel = PoolSpec(PoolKind.MAX, (2, 2), indices=Indices(axis=2), name="p")
    with pytest.raises(UnsupportedError, match=r"layer 1 'p' \(MaxPool opset8\).*axis 2"):
        dml_export.document_from_ir(write_ir(tmp_path, per_channel, (1, 2, 4, 4)))
    # L=6, k=2, s=3, end pad 1, OpenVINO ceil: windows at 0, 3, 6; the last is end pad and overhang
    empty = PoolSpec(PoolKind.MAX, (2,), (3,), pads_end=(1,), rounding=Rounding.CEIL_NO_DROP, name="q")
    with pytest.raises(UnsupportedError, match=r"layer 1 'q' \(MaxPool opset1\).*no input cell"):
        dml_export.document_from_ir(write_ir(tmp_path, empty, (1, 1, 6)))


@pytest.mark.openvino
@pytest.mark.parametrize("spec, shape, rounding, divisor", CASES)
def test_dml_to_ir_runs_on_openvino_like_the_emulator(tmp_path, spec, shape, rounding, divisor):
    pytest.importorskip("openvino")
    document = dml_export.document_from_ir(write_ir(tmp_path, spec, shape))
    files = dml_import.ir_from_document(document, "back")
    for suffix, data in files.items():
        (tmp_path / f"back{suffix}").write_bytes(data)
    x = (np.random.default_rng(2).integers(-8, 8, shape) / 4).astype(np.float32)
    want = dml_emulator.run(document, {"x": x})
    got = ovpool.run(tmp_path / "back.xml", {"x": x}, device="CPU", precision="f32", fallback=False)
    np.testing.assert_allclose(got["y"], want["y"], rtol=1e-6, atol=1e-6)
    if "indices" in want:
        np.testing.assert_array_equal(got["indices"].astype(np.int64), want["indices"].astype(np.int64))


def test_dml_to_ir_refuses_unpool():
    document = {
        "format": "ovpool-dml",
        "version": 1,
        "operators": [
            {
                "name": "u",
                "type": "DML_OPERATOR_MAX_UNPOOLING",
                "min_feature_level": "DML_FEATURE_LEVEL_5_0",
                "inputs": ["x", "i"],
                "outputs": ["y"],
                "desc": {
                    "InputTensor": {"DataType": "DML_TENSOR_DATA_TYPE_FLOAT32", "Sizes": [1, 1, 2, 2]},
                    "IndicesTensor": {"DataType": "DML_TENSOR_DATA_TYPE_UINT64", "Sizes": [1, 1, 2, 2]},
                    "OutputTensor": {"DataType": "DML_TENSOR_DATA_TYPE_FLOAT32", "Sizes": [1, 1, 4, 4]},
                },
            }
        ],
    }
    with pytest.raises(UnsupportedError, match=r"operator 'u'.*no MaxUnpool"):
        dml_import.ir_from_document(document)
