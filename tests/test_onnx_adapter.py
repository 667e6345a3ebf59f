"""ONNX nodes <-> PoolSpec for every schema version onnx.defs knows."""

from __future__ import annotations

import numpy as np
import onnx.defs
import pytest
from onnx import TensorProto, helper

import ovpool
from ovpool.errors import SpecError, UnsupportedError
from ovpool.onnx import adapter as onnx_adapter
from ovpool.spec import Divisor, IndexOrder, Padding, PoolKind, PoolSpec, Rounding

OPS = ("AveragePool", "MaxPool", "MaxUnpool", "GlobalAveragePool", "GlobalMaxPool", "LpPool", "GlobalLpPool")


def _schema_versions():
    seen = set()
    for schema in onnx.defs.get_all_schemas_with_history():
        if schema.domain == "" and schema.name in OPS:
            seen.add((schema.name, schema.since_version))
    return sorted(seen)


@pytest.mark.parametrize("op_type,version", _schema_versions())
def test_every_schema_version_is_handled_explicitly(op_type, version):
    """A version the versions table does not list must be refused by name, never guessed; today all are listed."""
    row = onnx_adapter.version_row(op_type, version)
    assert (row.op_type, row.since) == (op_type, version)
    node = helper.make_node(
        op_type,
        ["x", "i"][: 2 if op_type == "MaxUnpool" else 1],
        ["y"],
        name="n",
        **({} if op_type.startswith("Global") else {"kernel_shape": [2, 2]}),
    )
    spec = onnx_adapter.spec_from_node(node, version)
    assert spec.name == "n"


def test_unknown_version_is_refused_by_name(monkeypatch):
    monkeypatch.setattr(onnx_adapter, "schema_version", lambda op, opset, where="": 26)
    with pytest.raises(UnsupportedError, match="AveragePool version 26 is not supported"):
        onnx_adapter.version_row("AveragePool", 26)


def test_versions_table_matches_onnx_defs():
    from ovpool.onnx.versions import ONNX_VERSIONS

    assert sorted((r.op_type, r.since) for r in ONNX_VERSIONS) == _schema_versions()


@pytest.mark.parametrize(
    "opset,attrs,expected",
    [
        (1, {}, {"divisor": Divisor.EXCLUDE_PAD, "rounding": Rounding.FLOOR}),
        (7, {"count_include_pad": 1}, {"divisor": Divisor.INCLUDE_PAD}),
        (10, {"ceil_mode": 1}, {"rounding": Rounding.CEIL}),
        (19, {"dilations": [2, 1]}, {"dilations": (2, 1)}),
        (11, {"auto_pad": "SAME_LOWER"}, {"padding": Padding.SAME_LOWER}),
    ],
)
def test_average_versions(opset, attrs, expected):
    node = helper.make_node("AveragePool", ["x"], ["y"], name="a", kernel_shape=[3, 3], **attrs)
    spec = onnx_adapter.spec_from_node(node, opset)
    for key, value in expected.items():
        assert getattr(spec, key) == value


@pytest.mark.parametrize(
    "op_type,opset,attr,value",
    [
        ("AveragePool", 1, "count_include_pad", 1),
        ("AveragePool", 7, "ceil_mode", 1),
        ("AveragePool", 11, "dilations", [1, 1]),
        ("MaxPool", 1, "storage_order", 0),
        ("MaxPool", 8, "dilations", [1, 1]),
    ],
)
def test_attribute_a_version_lacks_is_an_error_naming_it(op_type, opset, attr, value):
    node = helper.make_node(op_type, ["x"], ["y"], name="p", kernel_shape=[2, 2], **{attr: value})
    with pytest.raises(SpecError, match=f"attribute '{attr}'.*not an attribute of {op_type}-{opset}"):
        onnx_adapter.spec_from_node(node, opset)


@pytest.mark.parametrize(
    "attrs,attribute",
    [({"auto_pad": "SAME"}, "auto_pad"), ({"ceil_mode": 2}, "ceil_mode"), ({"pads": [1, 1, 1]}, "pads"), ({}, "kernel_shape")],
)
def test_bad_values_name_the_attribute(attrs, attribute):
    kernel = {} if attribute == "kernel_shape" else {"kernel_shape": [2, 2]}
    node = helper.make_node("MaxPool", ["x"], ["y"], name="m", **kernel, **attrs)
    with pytest.raises(SpecError, match=f"node 'm': attribute '{attribute}'"):
        onnx_adapter.spec_from_node(node, 13)


def test_indices_and_storage_order():
    node = helper.make_node("MaxPool", ["x"], ["y", "i"], name="m", kernel_shape=[2, 2], storage_order=1)
    spec = onnx_adapter.spec_from_node(node, 12)
    assert spec.indices.order is IndexOrder.COLUMN_MAJOR
    node = helper.make_node("MaxPool", ["x"], ["y", ""], name="m", kernel_shape=[2, 2], storage_order=1)
    assert onnx_adapter.spec_from_node(node, 12).indices is None


@pytest.mark.parametrize(
    "spec,opset,feature",
    [
        (PoolSpec(PoolKind.AVERAGE, kernel=(2,), dilations=(2,)), 18, "dilations"),
        (PoolSpec(PoolKind.AVERAGE, kernel=(2,), rounding=Rounding.CEIL), 9, "ceil_mode"),
        (PoolSpec(PoolKind.AVERAGE, kernel=(2,), pads_begin=(1,), divisor=Divisor.INCLUDE_PAD), 6, "count_include_pad"),
        (PoolSpec(PoolKind.MAX, kernel=(2,), indices=ovpool.Indices()), 7, "indices output"),
        (PoolSpec(PoolKind.MAX, kernel=(2,), dtype="int8"), 11, "int8"),
        (PoolSpec(PoolKind.MAX, kernel=(2,), rounding=Rounding.CEIL_NO_DROP), 22, "drop rule"),
    ],
)
def test_emission_refuses_what_the_version_cannot_say(spec, opset, feature):
    with pytest.raises(UnsupportedError, match=feature):
        onnx_adapter.node_from_spec(spec.with_(name="e"), opset, ["x"], ["y"])


def test_include_pad_without_pads_needs_no_attribute():
    spec = PoolSpec(PoolKind.AVERAGE, kernel=(2,), divisor=Divisor.INCLUDE_PAD, name="e")
    node = onnx_adapter.node_from_spec(spec, 1, ["x"], ["y"])
    assert {a.name for a in node.attribute} == {"kernel_shape", "strides", "pads"}


@pytest.mark.parametrize("opset", [1, 7, 8, 10, 11, 12, 19, 22])
def test_round_trip_spec_node_spec(opset):
    specs = [
        PoolSpec(
            PoolKind.AVERAGE,
            kernel=(3, 3),
            strides=(2, 1),
            pads_begin=(1, 0),
            pads_end=(0, 1),
            name="a",
            divisor=Divisor.INCLUDE_PAD if opset >= 7 else Divisor.EXCLUDE_PAD,
            rounding=Rounding.CEIL if opset >= 10 else Rounding.FLOOR,
        ),
        PoolSpec(
            PoolKind.MAX,
            kernel=(2,),
            padding=Padding.SAME_UPPER,
            name="m",
            indices=ovpool.Indices(order=IndexOrder.COLUMN_MAJOR) if opset >= 8 else None,
        ),
        PoolSpec(PoolKind.GLOBAL_MAX, name="g"),
    ]
    for spec in specs:
        outputs = ["y", "i"] if spec.indices else ["y"]
        node = onnx_adapter.node_from_spec(spec, opset, ["x"], outputs)
        assert onnx_adapter.spec_from_node(node, opset) == spec


def test_dtype_outside_the_type_constraint_is_refused_at_run_time():
    graph = helper.make_graph(
        [helper.make_node("MaxPool", ["x"], ["y"], name="q", kernel_shape=[2])],
        "g",
        [helper.make_tensor_value_info("x", TensorProto.INT8, [1, 1, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT8, None)],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)], ir_version=8)
    with pytest.raises(UnsupportedError, match=r"node 'q' \(MaxPool-11\): data type int8 .*MaxPool-12 has it"):
        ovpool.run(model, {"x": np.zeros((1, 1, 4), np.int8)}, device="numpy")


def test_opset_newer_than_onnx_knows_is_refused():
    node = helper.make_node("MaxPool", ["x"], ["y"], name="m", kernel_shape=[2])
    newest = onnx.defs.onnx_opset_version()
    with pytest.raises(
        UnsupportedError, match=f"node 'm' \\(MaxPool\\): opset {newest + 1} is newer than the newest this onnx knows"
    ):
        onnx_adapter.spec_from_node(node, newest + 1)
