"""An operator is one entry: its traits are given where it is registered, and hold together.

Each ONNX operator range (``ovpool.engine.ops.base.register``) and IR layer version
(``ovpool.engine.ir_layers.layer``) carries its ``Traits``; the memory budget, the shape-value
groups, the in-place rewrite and the random/remembered checks read them there. Where a reader
knows only the operator's name (a budget plan step, a body scanned for random draws), every range
of that name must say the same, and an ONNX operator and an IR layer of one name the same rule.
"""

from __future__ import annotations

import pytest

from ovpool.engine import budget, graph, inplace, shapevalues
from ovpool.engine.ir_layers import base as layers
from ovpool.engine.ops.base import PLAIN, Rule, Traits, covered, named_with, traits, traits_named


def test_every_range_of_one_name_states_the_same_traits() -> None:
    by_name: dict[str, set[Traits]] = {}
    for row in covered():
        by_name.setdefault(row.op_type, set()).add(row.traits)
    mixed = {name: found for name, found in by_name.items() if len(found) > 1}
    assert not mixed


def test_every_version_of_an_ir_layer_states_the_same_traits() -> None:
    by_type: dict[str, set[Traits]] = {}
    for (layer_type, _), found in layers._TRAITS.items():
        by_type.setdefault(layer_type, set()).add(found)
    assert not {name: found for name, found in by_type.items() if len(found) > 1}


def test_an_onnx_operator_and_an_ir_layer_of_one_name_have_one_rule() -> None:
    """MaxPool, GridSample, LRN, Reshape...: the budget reads the rule by name."""
    onnx_names = {row.op_type for row in covered()}
    shared = sorted(onnx_names & {layer_type for layer_type, _ in layers._TRAITS})
    assert "MaxPool" in shared and "GridSample" in shared
    for name in shared:
        onnx, ir = traits_named(name), layers.layer_traits_named(name)
        assert (onnx.work, onnx.work_indices) == (ir.work, ir.work_indices), name


def test_traits_are_looked_up_by_domain_op_and_version() -> None:
    assert traits("Conv", 11).fresh and traits("Conv", 11).work == Rule(3.0, 3.0, 16.0, 8 << 20)
    assert traits("BatchNormalization", 7).fresh and traits("BatchNormalization", 15).fresh
    assert traits("QLinearConv", 1, "com.microsoft").work == traits("QLinearConv", 10).work
    assert traits("MatMul", 13).remembered and not traits("MatMul", 13, "com.microsoft").remembered
    assert traits("RandomNormal", 1).random and traits("ReduceSum", 13).shape_value
    assert traits("Relu", 14) is PLAIN and traits("NoSuchOp", 1) is PLAIN
    assert layers.layer_traits("MaxPool", "opset8").work_indices == Rule(8.0, 2.0)
    assert layers.layer_traits("Convolution", "opset1").work == traits("Conv", 1).work


def test_a_trait_names_registered_operators_only() -> None:
    """Every rule, fresh, shape-value, random and remembered trait is on an operator or layer that
    exists, and a remembered product is never fresh (an in-place kernel would write into it)."""
    with pytest.raises(ValueError, match="remembered"):
        Traits(fresh=True, remembered=True)
    onnx_names = {row.op_type for row in covered()}
    ir_names = set(layers.supported())
    for field in ("fresh", "shape_value", "random", "remembered"):
        assert named_with(lambda t, f=field: getattr(t, f)) <= onnx_names
    with pytest.deprecated_call():
        assert set(budget.WORK) <= onnx_names | ir_names


def test_the_old_tables_are_derived_from_the_registrations() -> None:
    """The deprecated module names still read, from the traits (one source), with a warning."""
    with pytest.deprecated_call():
        assert graph.RANDOM_OPS == {
            "RandomNormal", "RandomUniform", "RandomNormalLike", "RandomUniformLike", "Multinomial", "Bernoulli"
        }  # fmt: skip
    with pytest.deprecated_call():
        assert graph.REMEMBERED_OPS == {"MatMul", "Gemm"} and inplace.FRESH_OPS == {"Conv", "BatchNormalization"}
    with pytest.deprecated_call():
        assert {"Gather", "Equal", "Reshape", "ReduceProd", "Cast"} <= shapevalues.DERIVED and "Shape" not in shapevalues.DERIVED
    with pytest.deprecated_call():
        assert budget.WORK["AvgPool"] == budget.WORK["MaxPool"] == budget.POOLING
    with pytest.deprecated_call():
        assert budget.WITH_INDICES == {"MaxPool": Rule(8.0, 2.0)}
    assert budget.rule_for("MaxPool", 2) == Rule(8.0, 2.0) and budget.rule_for("Relu", 1) == budget.DEFAULT_WORK
