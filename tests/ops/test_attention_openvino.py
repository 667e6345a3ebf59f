"""Attention-23/24/25 through ``ovpool convert`` on OpenVINO CPU at f32 and IR-on-numpy against
ONNX's Attention node cases (their expected data; the ``_expanded`` ones are the schema's function
body as plain ops), and the two defects behind the wrong ones:

* ReduceMax (ReduceMin) of a row of -inf (+inf) only: OpenVINO CPU gives -FLT_MAX, so the function
  body's Equal(max, -inf) misses a fully masked row and gives NaN where ONNX gives 0. ovpool keeps
  the infinity (``value_fixes.infinity_kept``), tested here at every since-version from opset 11
  against onnxruntime;
* Attention-25's local window (OpenVINO ignores it), and is_causal with past keys when the new
  keys are not as many as the queries (OpenVINO aligns the causal mask to the end of all keys,
  the schema offsets it by the past keys: the case's expected data and onnxruntime follow the
  schema): ovpool composes them into ``attn_mask`` (``frontend_rewrites.bounds_as_mask``).

Each with the repro of stock OpenVINO's own conversion, which must keep failing.
"""

from __future__ import annotations

import io
import re
from pathlib import Path
from typing import Any

import numpy as np
import onnx
import pytest
from harness import check_node_case, feeds_of, make_model, node_case_params, run_ort, since_opsets
from on_openvino import outcome_of

import ovpool
from ovpool.errors import UnsupportedError
from ovpool.ov.from_onnx import ir_files

pytest.importorskip("openvino")

ROWS = np.array([[-np.inf, -np.inf, -np.inf], [1.0, -np.inf, 2.0], [np.inf, np.inf, np.inf], [0.5, -0.5, np.inf]], np.float32)


@pytest.mark.parametrize(("op", "opset"), [(op, o) for op in ("ReduceMax", "ReduceMin") for o in since_opsets(op, lowest=11)])
@pytest.mark.parametrize("keepdims", [0, 1])
def test_a_row_of_infinities_reduces_to_the_infinity(op: str, opset: int, keepdims: int) -> None:
    """[-inf, -inf, -inf] -> -inf by ReduceMax (OpenVINO CPU: -FLT_MAX), +inf rows by ReduceMin."""
    if opset >= 18:
        inputs: list[Any] = [ROWS, np.array([1], np.int64)]
        model = make_model(op, opset, inputs, {"keepdims": keepdims}, constant=(1,))
    else:
        inputs = [ROWS]
        model = make_model(op, opset, inputs, {"axes": [1], "keepdims": keepdims})
    feeds = feeds_of(model, inputs)
    case, outcome, stage, detail = outcome_of(model, feeds, run_ort(model, feeds), rtol=0, atol=0)
    assert outcome == "agrees", f"{case.describe()}: {stage}: {detail}"


def _stock(model: onnx.ModelProto, feeds: dict[str, np.ndarray]) -> list[np.ndarray]:
    """``model`` through OpenVINO's own conversion on CPU at f32."""
    import openvino as ov

    from ovpool.execution.policy import compile_config

    compiled = ov.Core().compile_model(
        ov.convert_model(io.BytesIO(model.SerializeToString())), "CPU", compile_config("f32", cache=False)
    )
    result = compiled(feeds)
    return [np.array(result[port]) for port in compiled.outputs]


def test_stock_openvino_reduces_a_row_of_minus_infinity_to_minus_flt_max() -> None:
    """The repro: when a release gives -inf, this fails and the DEFECTS rows can go."""
    model = make_model("ReduceMax", 13, [ROWS[:1]], {"axes": [1]})
    (got,) = _stock(model, {"x0": ROWS[:1]})
    np.testing.assert_array_equal(got, [[np.finfo(np.float32).min]])


def _on_cpu(model: onnx.ModelProto, feeds: Any) -> list[np.ndarray]:
    got = ovpool.run(model, feeds, device="CPU", fallback="none")
    return [got[o.name] for o in model.graph.output]


def _ir_on_numpy(model: onnx.ModelProto, feeds: Any, folder: Path) -> list[np.ndarray]:
    files = ir_files(ovpool.convert_model(model))
    xml = folder / "m.xml"
    xml.write_bytes(files[".xml"])
    xml.with_suffix(".bin").write_bytes(files[".bin"])
    got = ovpool.run(xml, feeds, device="numpy", fallback="none")
    return [got[o.name] for o in model.graph.output]


# Fully masked rows (the function body's ReduceMax of -inf rows: NaN before the fix), windows and
# causal frontiers with past keys (the mask ovpool composes): on IR-on-numpy too.
ON_NUMPY = r"(nan_robustness|fullymasked|structural_empty|gqa_rank4_mask)_expanded$|window|_mask_causal$"


@pytest.mark.parametrize("case", [p for p in node_case_params(["Attention"]) if not re.search(r"flex|linear", p.id)])
def test_onnx_attention_cases_on_openvino(case: Any, tmp_path: Path) -> None:
    # bfloat16, float16: OpenVINO CPU at f32 rounds once, the expected data at each step (a step apart)
    elem = case.model.graph.input[0].type.tensor_type.elem_type
    tolerance = {
        onnx.TensorProto.BFLOAT16: {"rtol": 1e-2, "atol": 4e-3},
        onnx.TensorProto.FLOAT16: {"rtol": 1e-3, "atol": 1e-3},
    }.get(elem, {"rtol": 1e-4, "atol": 1e-5})
    check_node_case(case, run=_on_cpu, **tolerance)
    if re.search(ON_NUMPY, case.name):
        check_node_case(case, run=lambda model, feeds: _ir_on_numpy(model, feeds, tmp_path), **tolerance)


@pytest.mark.parametrize("opset", since_opsets("Attention", highest=25))
@pytest.mark.parametrize(("queries", "new_keys"), [(4, 6), (4, 2), (3, 3)])
def test_causal_attention_with_past_keys(opset: int, queries: int, new_keys: int) -> None:
    """is_causal=1 with 5 past keys: query i sees keys up to i + 5 (the schema's offset), whatever
    the number of new keys; against onnxruntime, which follows the schema."""
    rng = np.random.default_rng(opset + queries + new_keys)
    q = rng.standard_normal((1, 2, queries, 4)).astype(np.float32)
    k, v = (rng.standard_normal((1, 2, new_keys, 4)).astype(np.float32) for _ in range(2))
    past_k, past_v = (rng.standard_normal((1, 2, 5, 4)).astype(np.float32) for _ in range(2))
    inputs: list[Any] = [q, k, v, None, past_k, past_v]
    model = make_model("Attention", opset, inputs, {"is_causal": 1}, n_outputs=3)
    feeds = feeds_of(model, inputs)
    case, outcome, stage, detail = outcome_of(model, feeds, run_ort(model, feeds), rtol=1e-5, atol=1e-5)
    assert outcome == "agrees", f"{case.describe()}: {stage}: {detail}"


def test_a_window_beside_a_shorter_mask_is_refused_by_name() -> None:
    """nonpad_kv_seqlen lets attn_mask be shorter than the keys: ovpool cannot compose the window."""
    from harness import onnx_node_cases

    (case,) = [c for c in onnx_node_cases(["Attention"]) if c.name == "test_attention_local_window_ext_cache_rank2_mask"]
    model = onnx.ModelProto()
    model.CopyFrom(case.model)
    mask = next(i for i in model.graph.input if i.name == model.graph.node[0].input[3])
    mask.type.tensor_type.shape.dim[-1].dim_value -= 1
    with pytest.raises(UnsupportedError, match=r"\(Attention-25\): left_window_size=2: .* as long as the keys"):
        ovpool.convert_model(model)


@pytest.mark.parametrize(
    "name", ["test_attention_local_window", "test_attention_4d_with_past_and_present_qk_matmul_bias_3d_mask_causal"]
)
def test_stock_openvino_computes_another_attention(name: str) -> None:
    """The repros: OpenVINO's own conversion gives other values than the case expects (a local
    window ignored: 0.429 where ONNX gives 0.539; the causal mask aligned to the end of all keys,
    not offset by the past keys as the schema says)."""
    from harness import onnx_node_cases
    from onnx import numpy_helper

    (case,) = [c for c in onnx_node_cases(["Attention"]) if c.name == name]
    inputs, expected = case.data_sets[0]
    feeds = {i.name: v for i, v in zip(case.model.graph.input, inputs)}
    got = _stock(case.model, feeds)[0]
    want = expected[0] if isinstance(expected[0], np.ndarray) else numpy_helper.to_array(expected[0])
    assert not np.allclose(got, want, atol=1e-3)
