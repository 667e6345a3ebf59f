"""DirectML conversion: operator choice per feature level, legalisation, refusals, the command
line, the C++ header (compiled with g++ against tests/data/directml_decls.h) and the table in docs/formats.md."""

from __future__ import annotations

import json
import re
import shutil
import subprocess
from pathlib import Path

import dml_emulator
import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper

import ovpool
from ovpool.dml import cpp as dml_cpp
from ovpool.dml import export as dml_export
from ovpool.dml import importer as dml_import
from ovpool.dml.levels import DML_LEVELS
from ovpool.errors import UnsupportedError

ROOT = Path(__file__).resolve().parents[1]


def model(op_type: str, shape, outputs=("y",), dtype=TensorProto.FLOAT, opset: int = 22, extra_nodes=(), **attrs):
    nodes = [*extra_nodes, helper.make_node(op_type, ["x"], list(outputs), name="pool", **attrs)]
    outs = [helper.make_tensor_value_info(o, TensorProto.INT64 if o == "indices" else dtype, None) for o in outputs]
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", dtype, list(shape))], outs)
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)], ir_version=8)


def only_operator(document):
    (op,) = document["operators"]
    return op["type"], op["min_feature_level"]


@pytest.mark.parametrize(
    "op_type, attrs, outputs, dtype, expected",
    [
        (
            "AveragePool",
            {"kernel_shape": [2, 2]},
            ("y",),
            TensorProto.FLOAT,
            ("DML_OPERATOR_AVERAGE_POOLING", "DML_FEATURE_LEVEL_1_0"),
        ),
        (
            "AveragePool",
            {"kernel_shape": [2, 2], "dilations": [2, 1]},
            ("y",),
            TensorProto.FLOAT,
            ("DML_OPERATOR_AVERAGE_POOLING1", "DML_FEATURE_LEVEL_6_2"),
        ),
        ("MaxPool", {"kernel_shape": [3, 3]}, ("y",), TensorProto.FLOAT16, ("DML_OPERATOR_MAX_POOLING", "DML_FEATURE_LEVEL_1_0")),
        ("MaxPool", {"kernel_shape": [3, 3]}, ("y",), TensorProto.INT8, ("DML_OPERATOR_MAX_POOLING", "DML_FEATURE_LEVEL_3_0")),
        (
            "MaxPool",
            {"kernel_shape": [2, 2], "dilations": [2, 2]},
            ("y",),
            TensorProto.FLOAT,
            ("DML_OPERATOR_MAX_POOLING2", "DML_FEATURE_LEVEL_2_1"),
        ),
        (
            "MaxPool",
            {"kernel_shape": [2, 2]},
            ("y", "indices"),
            TensorProto.FLOAT,
            ("DML_OPERATOR_MAX_POOLING1", "DML_FEATURE_LEVEL_5_0"),
        ),
        (
            "MaxPool",
            {"kernel_shape": [2, 2], "dilations": [1, 2]},
            ("y", "indices"),
            TensorProto.FLOAT,
            ("DML_OPERATOR_MAX_POOLING2", "DML_FEATURE_LEVEL_5_0"),
        ),
        ("GlobalAveragePool", {}, ("y",), TensorProto.FLOAT, ("DML_OPERATOR_AVERAGE_POOLING", "DML_FEATURE_LEVEL_1_0")),
        ("GlobalMaxPool", {}, ("y",), TensorProto.FLOAT16, ("DML_OPERATOR_MAX_POOLING", "DML_FEATURE_LEVEL_1_0")),
    ],
)
def test_lowest_feature_level_operator(op_type, attrs, outputs, dtype, expected):
    document = dml_export.document_from_onnx(model(op_type, (1, 2, 7, 7), outputs, dtype, **attrs))
    assert only_operator(document) == expected


def test_feature_level_caps_the_choice_and_names_what_is_needed():
    m = model("MaxPool", (1, 1, 6, 6), ("y", "indices"), kernel_shape=[2, 2])
    with pytest.raises(
        UnsupportedError, match=r"node 'pool'.*int64 indices.*DML_OPERATOR_MAX_POOLING1 at DML_FEATURE_LEVEL_5_0.*4\.0"
    ):
        dml_export.document_from_onnx(m, "4.0")
    avg = model("AveragePool", (1, 1, 6, 6), kernel_shape=[2, 2], dilations=[2, 2])
    with pytest.raises(UnsupportedError, match=r"AVERAGE_POOLING1 at DML_FEATURE_LEVEL_6_2"):
        dml_export.document_from_onnx(avg, "6.1")
    assert only_operator(dml_export.document_from_onnx(avg, "6.2"))[1] == "DML_FEATURE_LEVEL_6_2"


def test_one_d_pool_gets_a_unit_axis_and_comes_back_one_d():
    m = model("MaxPool", (1, 2, 9), ("y", "indices"), kernel_shape=[3], strides=[2], pads=[1, 1], ceil_mode=1)
    document = dml_export.document_from_onnx(m)
    desc = document["operators"][0]["desc"]
    assert desc["DimensionCount"] == 2 and desc["WindowSize"] == [1, 3] and desc["StartPadding"] == [0, 1]
    assert desc["InputTensor"]["Sizes"] == [1, 2, 1, 9] and desc["OutputTensor"]["Sizes"] == [1, 2, 1, 5]
    assert document["tensors"]["x"]["Sizes"] == [1, 2, 9]
    back = dml_import.model_from_document(document)
    (node,) = back.graph.node
    assert [a.ints for a in node.attribute if a.name == "kernel_shape"] == [[3]]
    x = np.arange(18, dtype=np.float32).reshape(1, 2, 9)
    want = ovpool.run(m, {"x": x}, device="numpy")
    got = ovpool.run(back, {"x": x}, device="numpy")
    np.testing.assert_array_equal(got["y"], want["y"])
    np.testing.assert_array_equal(got["indices"], want["indices"])


def test_include_pad_with_ceil_overhang_becomes_padding_then_exclude_pad_average():
    """SEMANTICS.md's case: 4x4, k3 s2 p1, ceil, count_include_pad=1. On all ones, the last
    window per axis covers input cell 3, end pad 4 and overhang 5: 1 input cell over 2x2 counted
    cells gives 1/4; the first covers pad -1 and cells 0, 1: 4 over 3x3 = 4/9."""
    m = model(
        "AveragePool", (1, 1, 4, 4), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1
    )
    document = dml_export.document_from_onnx(m)
    pad, pool = document["operators"]
    assert pad["type"] == "DML_OPERATOR_PADDING" and pad["name"] == "pool/pad" and pad["outputs"] == ["pool/pad"]
    assert pad["desc"]["StartPadding"] == [0, 0, 1, 1] and pad["desc"]["EndPadding"] == [0, 0, 1, 1]
    assert pool["desc"]["IncludePadding"] is False and pool["desc"]["StartPadding"] == [0, 0]
    assert pool["desc"]["OutputTensor"]["Sizes"] == [1, 1, 3, 3]
    y = dml_emulator.run(document, {"x": np.ones((1, 1, 4, 4), np.float32)})["y"]
    assert y[0, 0, 2, 2] == pytest.approx(1 / 4) and y[0, 0, 0, 0] == pytest.approx(4 / 9)
    no_overhang = model(
        "AveragePool", (1, 1, 5, 5), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1, count_include_pad=1
    )
    (op,) = dml_export.document_from_onnx(no_overhang)["operators"]
    assert op["desc"]["IncludePadding"] is True


@pytest.mark.parametrize(
    "attrs, outputs, dtype, opset, reason",
    [
        ({"kernel_shape": [2, 2], "storage_order": 1}, ("y", "indices"), TensorProto.FLOAT, 22, "storage_order=1"),
        ({"kernel_shape": [2, 2]}, ("y",), TensorProto.DOUBLE, 22, "float64"),
        ({"kernel_shape": [2, 2]}, ("y",), TensorProto.BFLOAT16, 22, "bfloat16"),
    ],
)
def test_refusals_name_the_node_and_reason(attrs, outputs, dtype, opset, reason):
    with pytest.raises(UnsupportedError, match=rf"node 'pool'.*{re.escape(reason)}"):
        dml_export.document_from_onnx(model("MaxPool", (1, 1, 4, 4), outputs, dtype, opset, **attrs))


def test_rank_beyond_three_spatial_axes_is_refused():
    with pytest.raises(UnsupportedError, match=r"node 'pool'.*4 spatial axes"):
        dml_export.document_from_onnx(model("MaxPool", (1, 1, 2, 2, 2, 2), kernel_shape=[1, 1, 1, 1]))


def test_other_nodes_are_skipped_and_reported(tmp_path):
    relu = helper.make_node("Relu", ["x"], ["r"], name="relu")
    m = model("MaxPool", (1, 1, 4, 4), kernel_shape=[2, 2], extra_nodes=[relu])
    m.graph.node[1].input[0] = "r"
    src = tmp_path / "m.onnx"
    src.write_bytes(m.SerializeToString())
    with pytest.warns(dml_export.SkippedNodesWarning, match="m.onnx: skipped 1 non-pooling node\\(s\\): Relu 'relu'"):
        written = ovpool.convert(src, tmp_path / "m.json", to="dml")
    document = json.loads(written[0].read_text())
    assert document["skipped"] == [{"name": "relu", "op_type": "Relu"}]
    assert document["operators"][0]["inputs"] == ["r"]
    result = run_cli("convert", src, "-o", tmp_path / "cli.json", "--to", "dml")
    assert result.returncode == 0
    assert "warning: m.onnx: skipped 1 non-pooling node(s): Relu 'relu'" in result.stderr


def run_cli(*args):
    return subprocess.run(["ovpool", *map(str, args)], capture_output=True, text=True, timeout=120)


def test_cli_round_trip_and_exit_codes(tmp_path):
    src = tmp_path / "m.onnx"
    src.write_bytes(model("MaxPool", (1, 1, 4, 4), ("y", "indices"), kernel_shape=[2, 2]).SerializeToString())
    refused = run_cli("convert", src, "--to", "dml", "-o", tmp_path / "m.json", "--feature-level", "4.0")
    assert refused.returncode == 1 and "node 'pool'" in refused.stderr and "Traceback" not in refused.stderr
    assert not (tmp_path / "m.json").exists()
    bad_level = run_cli("convert", src, "-o", tmp_path / "m.json", "--feature-level", "4.7")
    assert bad_level.returncode == 2 and "not a DirectML feature level" in bad_level.stderr
    assert run_cli("convert", src, "-o", tmp_path / "m.json").returncode == 0
    back = run_cli("convert", tmp_path / "m.json", "--to", "onnx", "-o", tmp_path / "back.onnx")
    assert back.returncode == 0, back.stderr
    x = np.random.default_rng(0).random((1, 1, 4, 4)).astype(np.float32)
    want, got = ovpool.run(src, {"x": x}, device="numpy"), ovpool.run(tmp_path / "back.onnx", {"x": x}, device="numpy")
    np.testing.assert_array_equal(got["indices"], want["indices"])
    broken = tmp_path / "broken.json"
    broken.write_text(
        '{"format": "ovpool-dml", "version": 1, "operators": [{"name": "p", "type": "DML_OPERATOR_MAX_POOLING", "desc": {}}]}'
    )
    result = run_cli("convert", broken, "--to", "onnx", "-o", tmp_path / "b.onnx")
    assert result.returncode == 1 and "operator 'p'" in result.stderr and "missing InputTensor" in result.stderr


def test_import_refuses_an_undocumented_include_padding_divisor():
    document = dml_export.document_from_onnx(
        model("AveragePool", (1, 1, 5, 5), kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], count_include_pad=1)
    )
    op = document["operators"][0]
    op["desc"]["OutputTensor"]["Sizes"] = [1, 1, 4, 4]  # a ceil overhang past EndPadding would need 6x6 input: not 5x5
    op["desc"]["InputTensor"]["Sizes"] = op["desc"]["InputTensor"]["Sizes"][:2] + [6, 6]
    document["tensors"] = {}
    with pytest.raises(UnsupportedError, match=r"operator 'pool'.*IncludePadding=TRUE.*undocumented"):
        dml_import.model_from_document(document)


@pytest.mark.skipif(shutil.which("g++") is None, reason="g++ is not installed")
def test_header_compiles_against_the_directml_declarations(tmp_path):
    relu = helper.make_node("Relu", ["x"], ["r"], name="relu")
    nodes = [
        relu,
        helper.make_node(
            "AveragePool",
            ["r"],
            ["a"],
            name="avg/ceil",
            kernel_shape=[3],
            strides=[2],
            pads=[1, 1],
            ceil_mode=1,
            count_include_pad=1,
        ),
        helper.make_node("MaxPool", ["r"], ["m", "i"], name="max", kernel_shape=[2], dilations=[2]),
        helper.make_node("MaxPool", ["r"], ["d"], name="dilated", kernel_shape=[2], dilations=[2]),
        helper.make_node("AveragePool", ["r"], ["e"], name="avg1", kernel_shape=[2], dilations=[2]),
        helper.make_node("MaxUnpool", ["m", "i"], ["u"], name="unpool", kernel_shape=[2], strides=[1]),
        helper.make_node("GlobalAveragePool", ["r"], ["g"], name="gap"),
        helper.make_node("LpPool", ["r"], ["l"], name="lp", kernel_shape=[2], p=3),
        helper.make_node("LpPool", ["r"], ["l1"], name="lp1", kernel_shape=[2], dilations=[2]),
    ]
    outs = [helper.make_tensor_value_info(n, TensorProto.FLOAT, None) for n in ("a", "d", "e", "u", "g", "l", "l1")]
    graph = helper.make_graph(nodes, "m", [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 6])], outs)
    m = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 22)], ir_version=8)
    document = dml_export.document_from_onnx(m)
    types = {op["type"] for op in document["operators"]}
    assert {
        "DML_OPERATOR_PADDING",
        "DML_OPERATOR_MAX_POOLING2",
        "DML_OPERATOR_AVERAGE_POOLING1",
        "DML_OPERATOR_MAX_UNPOOLING",
        "DML_OPERATOR_LP_POOLING",
        "DML_OPERATOR_LP_POOLING1",
    } <= types
    header = dml_cpp.render(document, "m.onnx")
    assert header.count("static const DML_OPERATOR_DESC op") == len(document["operators"])
    (tmp_path / "DirectML.h").write_text(f'#include "{ROOT / "tests" / "data" / "directml_decls.h"}"\n')
    (tmp_path / "generated.h").write_text(header)
    (tmp_path / "main.cpp").write_text(
        '#include "generated.h"\n'
        "static_assert(sizeof(ovpool_dml::kOperators) / sizeof(ovpool_dml::kOperators[0]) == "
        f'{len(document["operators"])}, "one DML_OPERATOR_DESC per operator");\n'
        "int main() { return ovpool_dml::kOperators[0]->Type == DML_OPERATOR_PADDING ? 0 : 1; }\n"
    )
    result = subprocess.run(
        [
            "g++",
            "-std=c++17",
            "-fsyntax-only",
            "-Wall",
            "-Wextra",
            "-pedantic",
            "-Werror",
            "-I",
            str(tmp_path),
            str(tmp_path / "main.cpp"),
        ],
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert result.returncode == 0, result.stderr


def test_documented_feature_level_table_matches_the_levels():
    formats = (ROOT / "docs" / "formats.md").read_text()
    section = formats.split("## DirectML", 1)[1].split("\n## ", 1)[0]
    rows = re.findall(r"^\| `(DML_OPERATOR_\w+)` \| (\d)\.(\d) \| ([^|]+) \| ([^|]*) \| ([^|]+) \|$", section, re.M)
    documented = {
        (
            op,
            int(a) * 10 + int(b),
            tuple(t.split(", ")),
            tuple(i.split(", ")) if i.strip() else (),
            tuple(int(r) for r in d.split(", ")),
        )
        for op, a, b, t, i, d in [(r[0], r[1], r[2], r[3].strip(), r[4].strip(), r[5].strip()) for r in rows]
    }
    levels = {(r.op_type, r.since, r.data_types, r.index_types, r.tensor_ranks) for r in DML_LEVELS}
    assert documented == levels


def _pad_fed_by_shape_model():
    """x [?, 2, ?, ?] -> Pad (pads computed from Shape(x): 0 on N, C, ceil... here H//4 and W//4 at
    the end) -> MaxPool 2x2: onnx's shape inference cannot size the Pad's output."""
    nodes = [
        helper.make_node("Shape", ["x"], ["s"]),
        helper.make_node("Slice", ["s", "two", "four"], ["hw"]),
        helper.make_node("Div", ["hw", "four_1"], ["quarter"]),
        helper.make_node("Concat", ["zeros4", "zeros2", "quarter"], ["pads"], axis=0),
        helper.make_node("Pad", ["x", "pads"], ["p"], mode="constant"),
        helper.make_node("MaxPool", ["p"], ["y"], name="pool", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    consts = {
        "two": np.array([2], np.int64),
        "four": np.array([4], np.int64),
        "four_1": np.array([4], np.int64),
        "zeros4": np.zeros(4, np.int64),
        "zeros2": np.zeros(2, np.int64),
    }
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 2, "h", "w"])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        [numpy_helper.from_array(v, k) for k, v in consts.items()],
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("sizer", ["openvino", "numpy"])
def test_dml_input_shapes_size_what_onnx_inference_cannot(sizer, monkeypatch):
    from ovpool.dml import sizes as static_shapes
    from ovpool.dml.export import document_from_onnx

    if sizer == "numpy":
        monkeypatch.setattr(static_shapes, "_openvino_dims", lambda proto, names: {})
    document = document_from_onnx(_pad_fed_by_shape_model(), inputs="x[1,2,8,12]")
    [operator] = document["operators"]
    assert operator["desc"]["InputTensor"]["Sizes"] == [1, 2, 10, 15]
    assert operator["desc"]["OutputTensor"]["Sizes"] == [1, 2, 5, 7]


def test_dml_input_shapes_from_the_cli(tmp_path, capsys):
    from runtime_support import invoke

    src = tmp_path / "m.onnx"
    onnx.save(_pad_fed_by_shape_model(), src)
    code, _, err = invoke(capsys, "convert", src, "--to", "dml", "-o", tmp_path / "m.json")
    assert (
        code == 1
        and "input 'p' has dims [?, ?, ?, ?]; DirectML tensor descs need sizes: give the dynamic inputs static shapes with --input NAME[d0,d1,...] (x: float32 [?, 2, ?, ?])"
        in err
    )
    code, _, err = invoke(capsys, "convert", src, "--to", "dml", "-o", tmp_path / "m.json", "--input", "x[1,2,1..8,12]")
    assert code == 2 and "give every dim as a number" in err
    code, _, err = invoke(capsys, "convert", src, "--to", "dml", "-o", tmp_path / "m.json", "--shape", "x=1,2,8,12")
    assert code == 0, err
    assert json.loads((tmp_path / "m.json").read_text())["operators"][0]["desc"]["InputTensor"]["Sizes"] == [1, 2, 10, 15]
