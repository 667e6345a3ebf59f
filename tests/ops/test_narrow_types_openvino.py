"""bfloat16 and the narrow element types (``ovpool.dtypes.NARROW``: float8, 4-bit, float8e8m0) as
graph inputs and outputs through ``ovpool.convert_model`` -> OpenVINO CPU at f32, IR-on-numpy,
``ovpool run``'s files and ``--verify``.

Oracles: values each type holds exactly (a Cast of them is the identity on the value, by the Cast
schema of every version), and ONNX's own node cases of the casts from these types (their
expected data).
"""

from __future__ import annotations

import io
import re
import zipfile
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from harness import check_node_case, node_case_params
from onnx import TensorProto, helper

import ovpool
from ovpool import dtypes
from ovpool.errors import OvpoolError, UnsupportedError
from ovpool.ov.from_onnx import ir_files
from ovpool.tensors import TensorDecl, save_outputs, typed_inputs

pytest.importorskip("openvino")

# Values each type holds exactly (float8e8m0: powers of two; 4-bit: its whole range's ends).
EXACT = {
    "bfloat16": [0.0, -0.0, 1.25, -3.0, 65280.0],
    "float8_e4m3fn": [0.0, -0.0, 0.46875, -448.0, 2.5],
    "float8_e5m2": [0.0, -0.0, 0.5, -57344.0, 3.0],
    "float4_e2m1fn": [0.0, -0.0, 0.5, -6.0, 1.5],
    "float8_e8m0fnu": [0.125, 1.0, 2.0, 2.0**-127, 2.0**127],
    "int4": [-8.0, 7.0, 0.0, -1.0, 3.0],
    "uint4": [0.0, 15.0, 1.0, 8.0, 3.0],
}
TYPES = sorted(EXACT)
# Cast-24 is the first version whose type constraints hold every one of them (FLOAT8E8M0).
OPSET = 24


def _elem(dtype: str) -> int:
    narrow = dtypes.narrow_row(dtype)
    return narrow.onnx if narrow is not None else dtypes.to_onnx(dtype)


def _round_trip_model(dtype: str, back: bool = True) -> onnx.ModelProto:
    """x (``dtype``) -> Cast float -> y; with ``back``, z (float) -> Cast ``dtype`` -> w too."""
    elem = _elem(dtype)
    nodes = [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)]
    inputs = [helper.make_tensor_value_info("x", elem, [5])]
    outputs = [helper.make_tensor_value_info("y", TensorProto.FLOAT, [5])]
    if back:
        nodes.append(helper.make_node("Cast", ["z"], ["w"], to=elem))
        inputs.append(helper.make_tensor_value_info("z", TensorProto.FLOAT, [5]))
        outputs.append(helper.make_tensor_value_info("w", elem, [5]))
    graph = helper.make_graph(nodes, "round_trip", inputs, outputs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)])


def _check_round_trip(got: dict[str, np.ndarray], dtype: str) -> None:
    values = np.array(EXACT[dtype], np.float32)
    np.testing.assert_array_equal(got["y"], values)
    assert got["w"].dtype == dtypes.np_dtype(dtype)
    np.testing.assert_array_equal(got["w"].astype(np.float32), values)
    np.testing.assert_array_equal(np.signbit(got["w"].astype(np.float32)), np.signbit(values))


@pytest.mark.parametrize("dtype", TYPES)
def test_inputs_and_outputs_cross_openvino_cpu(dtype: str) -> None:
    """In: the array's bits as OpenVINO holds them (4-bit packed two a byte); out: back to ml_dtypes."""
    values = np.array(EXACT[dtype], np.float32)
    feeds = {"x": values.astype(dtypes.np_dtype(dtype)), "z": values}
    _check_round_trip(ovpool.run(_round_trip_model(dtype), feeds, device="CPU", fallback="none"), dtype)


@pytest.mark.parametrize("dtype", TYPES)
def test_inputs_and_outputs_of_the_ir_on_numpy(dtype: str, tmp_path: Path) -> None:
    values = np.array(EXACT[dtype], np.float32)
    files = ir_files(ovpool.convert_model(_round_trip_model(dtype)))
    xml = tmp_path / "m.xml"
    xml.write_bytes(files[".xml"])
    xml.with_suffix(".bin").write_bytes(files[".bin"])
    feeds = {"x": values.astype(dtypes.np_dtype(dtype)), "z": values}
    _check_round_trip(ovpool.run(xml, feeds, device="numpy", fallback="none"), dtype)
    _check_round_trip(ovpool.run(xml, feeds, device="CPU", fallback="none"), dtype)


def test_a_rank_0_bfloat16_input_stays_rank_0() -> None:
    """OpenVINO read a 0-d bfloat16 array as shape [1] (``Range`` of bfloat16 scalars failed)."""
    x = np.array(1.5, dtypes.np_dtype("bfloat16"))
    graph = helper.make_graph(
        [helper.make_node("Cast", ["x"], ["y"], to=TensorProto.FLOAT)],
        "scalar",
        [helper.make_tensor_value_info("x", TensorProto.BFLOAT16, [])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, [])],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)])
    got = ovpool.run(model, {"x": x}, device="CPU", fallback="none")["y"]
    assert got.shape == () and got == 1.5


@pytest.mark.parametrize("dtype", TYPES)
def test_verify_draws_narrow_inputs(dtype: str) -> None:
    """``convert_model(verify=True)``: drawn inputs of the type, CPU against the numpy executor."""
    ovpool.convert_model(_round_trip_model(dtype, back=False), verify=True)


def test_the_bytes_of_narrow_arrays() -> None:
    """[1, 2, 3] as uint4 is 0x21 0x03; 8-bit types one a byte; back bit for bit."""
    uint4 = np.array([1, 2, 3], dtypes.np_dtype("uint4"))
    assert dtypes.pack_narrow(uint4).tolist() == [0x21, 0x03]
    assert dtypes.unpack_narrow(np.array([0xF1], np.uint8), 2, dtypes.np_dtype("int4")).tolist() == [1, -1]
    for dtype in TYPES:
        if dtype == "bfloat16":
            continue
        values = np.array(EXACT[dtype], np.float32).astype(dtypes.np_dtype(dtype))
        back = dtypes.unpack_narrow(dtypes.pack_narrow(values), values.size, values.dtype)
        assert back.dtype == values.dtype
        np.testing.assert_array_equal(back.view(np.uint8), values.view(np.uint8))


def test_the_element_type_table_knows_the_narrow_types() -> None:
    for row in dtypes.NARROW:
        assert dtypes.any_from_onnx(row.onnx) == row.name
        assert np.dtype(helper.tensor_dtype_to_np_dtype(row.onnx)) == dtypes.np_dtype(row.name)
        assert dtypes.any_from_ir_type(row.ir_type) == row.name
        assert dtypes.any_from_ov_type(dtypes.ov_type(row.name)) == row.name
        assert dtypes.itemsize(row.name) == 1
    with pytest.raises(UnsupportedError, match="FLOAT8E4M3FNUZ"):
        dtypes.any_from_onnx(TensorProto.FLOAT8E4M3FNUZ)  # OpenVINO has no such type


def test_files_hold_narrow_arrays_as_raw_bytes(tmp_path: Path) -> None:
    """An .npy holds ml_dtypes' types as ``<V1``/``<V2`` (float8_e5m2's ``<f1`` is unreadable):
    outputs are written so, and such inputs read as the declared type."""
    arrays = {name: np.array(EXACT[name], np.float32).astype(dtypes.np_dtype(name)) for name in TYPES}
    out = tmp_path / "out.npz"
    save_outputs(out, arrays, force=False)
    with zipfile.ZipFile(out) as archive:
        read = {m[:-4]: np.lib.format.read_array(io.BytesIO(archive.read(m))) for m in archive.namelist()}
    assert {name: value.dtype.kind for name, value in read.items()} == dict.fromkeys(TYPES, "V")
    typed = typed_inputs([TensorDecl(name, name, (5,)) for name in TYPES], read)
    for name in TYPES:
        assert typed[name].dtype == arrays[name].dtype
        np.testing.assert_array_equal(typed[name].astype(np.float32), arrays[name].astype(np.float32))


def _on_cpu(model: onnx.ModelProto, feeds: Any) -> list[np.ndarray]:
    got = ovpool.run(model, feeds, device="CPU", fallback="none")
    return [got[o.name] for o in model.graph.output]


def _ir_on_numpy(model: onnx.ModelProto, feeds: Any, folder: Path) -> list[np.ndarray]:
    files = ir_files(ovpool.convert_model(model))
    xml = folder / f"{model.graph.name or 'm'}.xml"
    xml.write_bytes(files[".xml"])
    xml.with_suffix(".bin").write_bytes(files[".bin"])
    got = ovpool.run(xml, feeds, device="numpy", fallback="none")
    return [got[o.name] for o in model.graph.output]


# ONNX's cases whose inputs are of the narrow types or bfloat16 (Cast and CastLike from them, the
# 4-bit QuantizeLinear/DequantizeLinear); the casts *to* them are tests of the Cast lowering.
NARROW_INPUT = re.compile(
    r"^test_cast(like)?_(e8m0_)?(UINT4|INT4|FLOAT4E2M1|FLOAT8E4M3FN|FLOAT8E5M2|FLOAT8E8M0|BFLOAT16)_to_"
    r"|^test_(de)?quantizelinear_(u?int4|float4e2m1)$|^test_dequantizelinear_(e4m3fn|e5m2)"
)
NARROW_CASES = [
    p for p in node_case_params(["Cast", "CastLike", "QuantizeLinear", "DequantizeLinear"]) if NARROW_INPUT.search(p.id)
]


# OpenVINO's frontend converts no QuantizeLinear to float4 ("Bad format for f8 conversion type").
REFUSED_BY_OPENVINO = {"test_quantizelinear_float4e2m1"}


@pytest.mark.parametrize("case", NARROW_CASES)
def test_onnx_node_cases_with_narrow_inputs_on_openvino(case: Any, tmp_path: Path) -> None:
    if case.name in REFUSED_BY_OPENVINO:
        with pytest.raises(OvpoolError, match=r"QuantizeLinear-\d+ \(node 'y'\)"):
            ovpool.convert_model(case.model)
        return
    check_node_case(case, run=_on_cpu)
    check_node_case(case, run=lambda model, feeds: _ir_on_numpy(model, feeds, tmp_path))


def test_the_narrow_cases_are_collected() -> None:
    names = {p.id for p in NARROW_CASES}
    assert {"test_cast_UINT4_to_FLOAT", "test_cast_FLOAT8E5M2_to_FLOAT16", "test_dequantizelinear_int4"} <= names
    assert len(names) >= 30
