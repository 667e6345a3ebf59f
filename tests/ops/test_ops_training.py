"""The optimizers of ai.onnx.preview.training (Adagrad-1, Momentum-1, Adam-1) against their schemas'
pseudo code computed here in float64, over one to three optimized tensors, update counts 0 to 5,
float32 and float64, and every attribute; the nodes' errors; ONNX's node test cases. onnxruntime
has no kernel of these ops (its training build only), so the schema text is the oracle."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import check_node_case, drawn_rng, examples, node_case_params, ovpool_of
from hypothesis import given
from hypothesis import strategies as st

DOMAIN = "ai.onnx.preview.training"
# per optimized tensor: inputs after R and T, outputs
ROLES = {"Adagrad": (3, 2), "Momentum": (3, 2), "Adam": (4, 3)}


def schema_step(op: str, r: float, t: int, tensors: list[np.ndarray], attrs: dict[str, Any]) -> list[np.ndarray]:
    """The schema's pseudo code, in float64, one optimized tensor at a time; outputs grouped by role."""
    n_in, n_out = ROLES[op]
    count = len(tensors) // n_in
    groups = [[tensors[role * count + i].astype(np.float64) for role in range(n_in)] for i in range(count)]

    def stored(name: str, default: float = 0.0) -> float:
        """An attribute as ONNX stores it (float32), in float64."""
        return float(np.float32(attrs.get(name, default)))

    norm = stored("norm_coefficient")
    results: list[list[np.ndarray]] = [[] for _ in range(n_out)]
    for x, g, *state in groups:
        g_reg = norm * x + g
        if op == "Adagrad":
            (h,) = state
            rate = r / (1 + t * stored("decay_factor", 0.0))
            h_new = h + g_reg * g_reg
            x_new = x - rate * g_reg / (np.sqrt(h_new) + stored("epsilon", 1e-6))
            news = [x_new, h_new]
        elif op == "Momentum":
            (v,) = state
            alpha, beta = stored("alpha"), stored("beta")
            v_new = alpha * v + (beta if t > 0 else 1.0) * g_reg
            x_new = x - r * (g_reg + alpha * v_new if attrs["mode"] == "nesterov" else v_new)
            news = [x_new, v_new]
        else:
            v, h = state
            alpha, beta = stored("alpha", 0.9), stored("beta", 0.999)
            v_new = alpha * v + (1 - alpha) * g_reg
            h_new = beta * h + (1 - beta) * g_reg * g_reg
            rate = r * np.sqrt(1 - beta**t) / (1 - alpha**t) if t > 0 else r
            x_new = x - rate * v_new / (np.sqrt(h_new) + stored("epsilon", 1e-6))
            news = [(1 - stored("norm_coefficient_post", 0.0)) * x_new, v_new, h_new]
        for role, value in enumerate(news):
            results[role].append(value)
    return [value for role in results for value in role]


@st.composite
def steps(draw: st.DrawFn) -> tuple[str, list[np.ndarray], dict[str, Any]]:
    op = draw(st.sampled_from(sorted(ROLES)))
    rng = drawn_rng(draw)
    dtype = draw(st.sampled_from([np.float32, np.float64]))
    count = draw(st.integers(1, 3))
    shapes = [tuple(draw(st.lists(st.integers(1, 3), max_size=3))) for _ in range(count)]
    n_in = ROLES[op][0]
    tensors = []
    for role in range(n_in):
        for shape in shapes:
            value = rng.standard_normal(shape)
            tensors.append((np.abs(value) if role >= 2 and op != "Momentum" else value).astype(dtype))
    r = np.array(draw(st.sampled_from([0.1, 0.01, 1.0])), dtype=draw(st.sampled_from([np.float32, np.float64])))
    t = np.array(draw(st.integers(0, 5)), np.int64)
    small = st.sampled_from([0.0, 0.001, 0.1])
    attrs: dict[str, Any] = {"norm_coefficient": draw(small)}
    if op == "Adagrad":
        attrs |= {"decay_factor": draw(small), "epsilon": draw(st.sampled_from([1e-6, 1e-5]))}
    elif op == "Momentum":
        attrs |= {
            "alpha": draw(st.sampled_from([0.9, 0.5])),
            "beta": draw(st.sampled_from([1.0, 0.1])),
            "mode": draw(st.sampled_from(["standard", "nesterov"])),
        }
    else:
        attrs |= {
            "alpha": draw(st.sampled_from([0.9, 0.5])),
            "beta": draw(st.sampled_from([0.999, 0.9])),
            "norm_coefficient_post": draw(small),
        }
    return op, [r, t, *tensors], attrs


@examples(40)
@given(steps())
def test_optimizer_step_is_the_schema_pseudo_code(step: tuple[str, list[np.ndarray], dict[str, Any]]) -> None:
    op, inputs, attrs = step
    r, t, *tensors = inputs
    n_in, n_out = ROLES[op]
    actual = ovpool_of(op, 1, inputs, attrs, n_out * len(tensors) // n_in, domain=DOMAIN)
    expected = schema_step(op, float(r), int(t), tensors, attrs)
    for a, e, source in zip(actual, expected, tensors):
        assert a.dtype == source.dtype and a.shape == e.shape
        tight = 1e-12 if a.dtype == np.float64 else 1e-5
        np.testing.assert_allclose(a, e, rtol=tight, atol=tight)


@pytest.mark.parametrize(
    ("op", "inputs", "attrs", "n_outputs", "match"),
    [
        ("Adagrad", [np.float32(0.1), np.int64(0), np.ones(2, np.float32)], {}, 1, "3 tensors per optimized tensor"),
        ("Adagrad", [np.float32(0.1), np.int64(0), *[np.ones(2, np.float32)] * 3], {}, 1, "it needs 2"),
        ("Adam", [np.float32([0.1, 0.2]), np.int64(0), *[np.ones(2, np.float32)] * 4], {}, 3, "both must be scalars"),
        (
            "Momentum",
            [np.float32(0.1), np.int64(0), *[np.ones(2, np.float32)] * 3],
            {"alpha": 0.9, "beta": 1.0},
            2,
            "'norm_coefficient': is required",
        ),
        (
            "Momentum",
            [np.float32(0.1), np.int64(0), *[np.ones(2, np.float32)] * 3],
            {"alpha": 0.9, "beta": 1.0, "norm_coefficient": 0.0, "mode": "adam"},
            2,
            "mode",
        ),
    ],
)
def test_optimizer_errors_name_the_node(
    op: str, inputs: list[np.ndarray], attrs: dict[str, Any], n_outputs: int, match: str
) -> None:
    from ovpool.errors import ModelError

    with pytest.raises(ModelError, match=match):
        ovpool_of(op, 1, inputs, attrs, n_outputs, domain=DOMAIN)


def test_gradient_is_refused_by_name() -> None:
    from ovpool.errors import ModelError

    with pytest.raises(ModelError, match="has no ai.onnx.preview.training.Gradient-1"):
        ovpool_of("Gradient", 1, [np.ones(2, np.float32)], {"xs": ["x0"], "y": "x0"}, domain=DOMAIN)


@pytest.mark.parametrize("case", node_case_params(ROLES))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case)
