"""Einsum with an index repeated in one operand through ``ovpool convert`` on OpenVINO CPU at f32
and IR-on-numpy, against onnxruntime, at every since-version of Einsum; ONNX's Einsum node cases
(``test_einsum_batch_diagonal`` among them) the same way; and the repro of the implicit-output
form stock OpenVINO CPU does not compile."""

from __future__ import annotations

import io
from typing import Any

import numpy as np
import onnx
import pytest
from harness import check_node_case, feeds_of, make_model, node_case_params, run_ort, since_opsets
from on_openvino import outcome_of

import ovpool

pytest.importorskip("openvino")

RNG = np.random.default_rng(3)
# (equation, operand shapes): implicit outputs the lowering writes out, and explicit forms left alone
EQUATIONS = [
    ("ii", [(4, 4)]),
    ("...ii", [(2, 3, 3)]),
    ("iij", [(3, 3, 2)]),
    ("Bii,j", [(2, 3, 3), (4,)]),
    ("ii...", [(3, 3, 2)]),
    ("ii->i", [(4, 4)]),
    ("...ii->...i", [(2, 3, 3)]),
    ("bii->b", [(2, 3, 3)]),
]


@pytest.mark.parametrize("opset", since_opsets("Einsum"))
@pytest.mark.parametrize(("equation", "shapes"), EQUATIONS, ids=[e for e, _ in EQUATIONS])
def test_einsum_with_a_repeated_index_agrees(opset: int, equation: str, shapes: list[tuple[int, ...]]) -> None:
    inputs = [RNG.standard_normal(s).astype(np.float32) for s in shapes]
    model = make_model("Einsum", opset, inputs, {"equation": equation})
    feeds = feeds_of(model, inputs)
    # onnxruntime runs lower-case letters only; np.einsum computes the schema's sum otherwise
    expected = [np.einsum(equation, *inputs)] if equation.lower() != equation else run_ort(model, feeds)
    case, outcome, stage, detail = outcome_of(model, feeds, expected, rtol=1e-5, atol=1e-5)
    assert outcome == "agrees", f"{case.describe()}: {stage}: {detail}"


def test_the_implicit_output_is_the_schemas() -> None:
    """Indices appearing once, in increasing ASCII order (upper case first), after the ellipsis."""
    from onnx import helper

    from ovpool.ov.frontend_rewrites import explicit_output

    for equation, written in (("ii", "ii->"), ("...ii", "...ii->..."), ("Bii,j", "Bii,j->Bj"), ("bii,A", "bii,A->Ab")):
        node = helper.make_node("Einsum", ["x"], ["y"], equation=equation)
        (lowered,) = explicit_output(node, 12, None)  # type: ignore[arg-type]
        assert helper.get_attribute_value(lowered.attribute[0]).decode() == written


def test_stock_openvino_does_not_compile_an_implicit_trace() -> None:
    """The repro: OpenVINO's own conversion of Einsum 'ii' does not compile on CPU. When a release
    compiles it, this fails: the DEFECTS row can then go."""
    import openvino as ov

    model = make_model("Einsum", 12, [np.ones((3, 3), np.float32)], {"equation": "ii"})
    core = ov.Core()
    with pytest.raises(Exception, match="Input order must have shape"):
        core.compile_model(ov.convert_model(io.BytesIO(model.SerializeToString())), "CPU")


def _on_cpu(model: onnx.ModelProto, feeds: Any) -> list[np.ndarray]:
    got = ovpool.run(model, feeds, device="CPU", fallback="none")
    return [got[o.name] for o in model.graph.output]


@pytest.mark.parametrize("case", node_case_params(["Einsum"]))
def test_onnx_einsum_cases_on_openvino(case: Any) -> None:
    check_node_case(case, rtol=1e-4, atol=1e-5, run=_on_cpu)
