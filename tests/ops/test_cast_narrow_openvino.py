"""Cast and CastLike to the float 8 types through ``ovpool convert`` on OpenVINO CPU at f32 and on
IR-on-numpy, against the Cast schema's float 8 table and FLOAT8E8M0 rules written out in
``test_ops_basic`` (the oracle: onnxruntime departs from the table in FNUZ places and has no
FLOAT8E8M0 rounding modes), at every since-version of Cast and CastLike that has ``saturate`` (19
on) and ``round_mode`` (24 on); and the repros of OpenVINO's own conversion, which ignores both.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from harness import check_node_case, node_case_params, since_opsets
from onnx import TensorProto, helper
from test_ops_basic import E8M0_INPUT, E8M0_TABLE, F8_SPECIAL, F8_TABLE

import ovpool
from ovpool.ov.from_onnx import ir_files

pytest.importorskip("openvino")

FLOAT8 = ("FLOAT8E4M3FN", "FLOAT8E5M2")  # the float 8 types OpenVINO has
SATURATING = [opset for opset in since_opsets("Cast", highest=25) if opset >= 19]
LIKE_SATURATING = [opset for opset in since_opsets("CastLike", highest=25) if opset >= 19]


def _cast_model(op: str, opset: int, name: str, source: Any, saturate: int | None) -> onnx.ModelProto:
    """x (``source`` dtype, [14]) -> Cast (or CastLike of a constant ``name`` tensor) -> y."""
    to = getattr(TensorProto, name)
    attrs = {} if saturate is None else {"saturate": saturate}
    nodes = []
    if op == "Cast":
        nodes.append(helper.make_node("Cast", ["x"], ["y"], to=to, **attrs))
    else:
        like = helper.make_tensor("like_value", to, [1], [0.0])
        nodes.append(helper.make_node("Constant", [], ["like"], value=like))
        nodes.append(helper.make_node("CastLike", ["x", "like"], ["y"], **attrs))
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(source))
    graph = helper.make_graph(
        nodes, "cast", [helper.make_tensor_value_info("x", elem, [14])], [helper.make_tensor_value_info("y", to, [14])]
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])


def _both(model: onnx.ModelProto, x: np.ndarray, folder: Path) -> list[np.ndarray]:
    """y on OpenVINO CPU (ovpool's conversion) and on IR-on-numpy of the same IR, as float32."""
    files = ir_files(ovpool.convert_model(model))
    xml = folder / "m.xml"
    xml.write_bytes(files[".xml"])
    xml.with_suffix(".bin").write_bytes(files[".bin"])
    cpu = ovpool.run(model, {"x": x}, device="CPU", fallback="none")["y"]
    ours = ovpool.run(xml, {"x": x}, device="numpy", fallback="none")["y"]
    return [cpu.astype(np.float32), ours.astype(np.float32)]


def _assert_table(got: np.ndarray, name: str, saturate: int) -> None:
    want = np.array(F8_TABLE[(name, saturate)], np.float32)
    np.testing.assert_array_equal(got, want)
    np.testing.assert_array_equal(np.signbit(got[:2]), np.signbit(want[:2]))


@pytest.mark.parametrize("opset", SATURATING)
@pytest.mark.parametrize("name", FLOAT8)
@pytest.mark.parametrize("saturate", [None, 1, 0])
@pytest.mark.parametrize("source", [np.float32, np.float16])
def test_cast_to_float8_follows_the_table(opset: int, name: str, saturate: int | None, source: type, tmp_path: Path) -> None:
    """1e6, +-inf and 61440 saturate to +-448 (E4M3FN) and +-57344 (E5M2) unless saturate=0; NaN
    stays NaN. float16 holds F8_SPECIAL but for 1e6, which is inf there (the same row)."""
    with np.errstate(over="ignore"):  # 1e6 is inf in float16
        x = F8_SPECIAL.astype(source)
    for got in _both(_cast_model("Cast", opset, name, source, saturate), x, tmp_path):
        _assert_table(got, name, 1 if saturate is None else saturate)


@pytest.mark.parametrize("opset", LIKE_SATURATING)
@pytest.mark.parametrize("name", FLOAT8)
@pytest.mark.parametrize("saturate", [None, 0])
def test_cast_like_to_float8_follows_the_table(opset: int, name: str, saturate: int | None, tmp_path: Path) -> None:
    for got in _both(_cast_model("CastLike", opset, name, np.float32, saturate), F8_SPECIAL, tmp_path):
        _assert_table(got, name, 1 if saturate is None else saturate)


E8M0_OPSETS = [opset for opset in since_opsets("Cast", highest=25) if opset >= 24]
# More of the schema's rules, worked out by hand: 3 lies halfway between 2 and 4 (nearest: ties
# up), 2.5 below it; -1.5 is taken as 1.5.
E8M0_MORE = np.array([3.0, 2.5, -1.5, 0.5], np.float32)
E8M0_MORE_TABLE = {"up": [4, 4, 2, 0.5], "down": [2, 2, 1, 0.5], "nearest": [4, 2, 2, 0.5]}


def _e8m0_model(op: str, opset: int, size: int, attrs: dict[str, Any]) -> onnx.ModelProto:
    model = _cast_model(op, opset, "FLOAT8E8M0", np.float32, None)
    cast = model.graph.node[-1]
    cast.attribute.extend(helper.make_attribute(k, v) for k, v in attrs.items())
    model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = size
    model.graph.output[0].type.tensor_type.shape.dim[0].dim_value = size
    return model


@pytest.mark.parametrize("op", ["Cast", "CastLike"])
@pytest.mark.parametrize("opset", E8M0_OPSETS)
@pytest.mark.parametrize(("round_mode", "saturate"), sorted(E8M0_TABLE))
def test_cast_to_float8e8m0_follows_the_schema(op: str, opset: int, round_mode: str, saturate: int, tmp_path: Path) -> None:
    attrs = {"round_mode": round_mode, "saturate": saturate}
    model = _e8m0_model(op, opset, E8M0_INPUT.size, attrs)
    for got in _both(model, E8M0_INPUT, tmp_path):
        np.testing.assert_array_equal(got.astype(np.float64), np.array(E8M0_TABLE[(round_mode, saturate)], np.float64))
    if saturate:
        model = _e8m0_model(op, opset, E8M0_MORE.size, attrs)
        for got in _both(model, E8M0_MORE, tmp_path):
            np.testing.assert_array_equal(got, np.array(E8M0_MORE_TABLE[round_mode], np.float32))


def test_stock_openvino_ignores_round_mode() -> None:
    """The repro: OpenVINO's own conversion of Cast-24 to FLOAT8E8M0 (round_mode='up') gives 1 for
    1.1 (ONNX: 2) and 2 for 3 (ONNX: 4)."""
    import openvino as ov

    from ovpool.execution.policy import _raw_value, compile_config

    model = _e8m0_model("Cast", 24, 2, {})
    core = ov.Core()
    compiled = core.compile_model(
        ov.convert_model(io.BytesIO(model.SerializeToString())), "CPU", compile_config("f32", cache=False)
    )
    request = compiled.create_infer_request()
    request.infer({"x": np.array([1.1, 3.0], np.float32)})
    np.testing.assert_array_equal(_raw_value(request.get_output_tensor(0), "float8_e8m0fnu").astype(np.float32), [1.0, 2.0])


def test_stock_openvino_ignores_saturate() -> None:
    """The repro: OpenVINO's own conversion of Cast-19 to FLOAT8E4M3FN (saturate=1) gives NaN for
    +inf and 1e6 (ONNX: 448), and to FLOAT8E5M2 +inf (ONNX: 57344). When an OpenVINO release
    computes the table, this fails: the DEFECTS row can then go."""
    import openvino as ov

    from ovpool.execution.policy import _raw_value, compile_config

    x = np.array([np.inf, 1e6], np.float32)
    core = ov.Core()
    for name, stock in (("FLOAT8E4M3FN", [np.nan, np.nan]), ("FLOAT8E5M2", [np.inf, np.inf])):
        model = _cast_model("Cast", 19, name, np.float32, None)
        model.graph.input[0].type.tensor_type.shape.dim[0].dim_value = 2
        model.graph.output[0].type.tensor_type.shape.dim[0].dim_value = 2
        compiled = core.compile_model(
            ov.convert_model(io.BytesIO(model.SerializeToString())), "CPU", compile_config("f32", cache=False)
        )
        request = compiled.create_infer_request()
        request.infer({"x": x})
        dtype = helper.tensor_dtype_to_np_dtype(getattr(TensorProto, name)).name
        np.testing.assert_array_equal(_raw_value(request.get_output_tensor(0), dtype).astype(np.float32), stock)


def _on_cpu(model: onnx.ModelProto, feeds: Any) -> list[np.ndarray]:
    got = ovpool.run(model, feeds, device="CPU", fallback="none")
    return [got[o.name] for o in model.graph.output]


FLOAT8_CASES = [
    p
    for p in node_case_params(["Cast", "CastLike"])
    if any(p.id.endswith(f"_to_{name}") or p.id.endswith(f"_to_{name}_expanded") for name in (*FLOAT8, "FLOAT8E8M0"))
]


@pytest.mark.parametrize("case", FLOAT8_CASES)
def test_onnx_float8_cast_cases_on_openvino(case: Any) -> None:
    check_node_case(case, run=_on_cpu)


def test_the_float8_cases_are_collected() -> None:
    assert {"test_cast_FLOAT_to_FLOAT8E4M3FN", "test_castlike_FLOAT16_to_FLOAT8E5M2_expanded"} <= {p.id for p in FLOAT8_CASES}


# Casts to INT4, UINT4 and FLOAT4E2M1: ONNX's cases expect ml_dtypes' answers where the schema
# leaves the value undefined (a float beyond INT4's range) or says otherwise (NaN -> 6 in FLOAT4E2M1,
# docs/semantics.md); OpenVINO CPU gives ovpool's reading, which test_ops_basic holds to the texts.
NARROW_TARGET_CASES = [
    p for p in node_case_params(["Cast", "CastLike"]) if re.search(r"_to_(U?INT4|FLOAT4E2M1)(_expanded)?$", p.id)
]


@pytest.mark.parametrize("case", NARROW_TARGET_CASES)
def test_casts_to_4_bit_types_agree_with_ovpools_reading(case: Any) -> None:
    from harness import run_ovpool
    from onnx import numpy_helper

    inputs, _ = case.data_sets[0]
    feeds = {
        i.name: numpy_helper.to_array(v) if isinstance(v, onnx.TensorProto) else v for i, v in zip(case.model.graph.input, inputs)
    }
    (cpu,), (ours,) = _on_cpu(case.model, feeds), run_ovpool(case.model, feeds)
    assert cpu.dtype == ours.dtype
    np.testing.assert_array_equal(cpu.astype(np.float32), ours.astype(np.float32))
    np.testing.assert_array_equal(np.signbit(cpu.astype(np.float32)), np.signbit(ours.astype(np.float32)))
