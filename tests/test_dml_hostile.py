"""Malformed DirectML documents: every one is a one-line error naming the operator (or tensor) and
the member, with exit code 2 for a file that is not a DirectML document and 1 for a document
that is wrong; never a traceback, never a silently different graph. And a document without the
optional ``tensors`` map still imports."""

from __future__ import annotations

import copy
import json
import subprocess

import numpy as np
import pytest
from onnx import TensorProto, helper, numpy_helper

import ovpool
from ovpool.dml import adapter as dml_adapter
from ovpool.dml import export as dml_export
from ovpool.dml import importer as dml_import
from ovpool.errors import InputFileError, ModelError, OvpoolError


def chain() -> dict:
    """x -> MaxPool with indices (1x1x8x8 -> 4x4) -> include-pad ceil average with an overhang
    (k3 s2 pads 1/1 on L=4: 3 windows, the last over padded cells 4..6 of 6), so PADDING + average."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 8, 8])
    nodes = [
        helper.make_node("MaxPool", ["x"], ["m", "mi"], name="mp", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node(
            "AveragePool",
            ["m"],
            ["y"],
            name="ap",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            ceil_mode=1,
            count_include_pad=1,
        ),
    ]
    outs = [
        helper.make_tensor_value_info("y", TensorProto.FLOAT, None),
        helper.make_tensor_value_info("mi", TensorProto.INT64, None),
    ]
    proto = helper.make_model(helper.make_graph(nodes, "g", [x], outs), opset_imports=[helper.make_opsetid("", 22)])
    return dml_export.document_from_onnx(proto)


BASE = chain()


def test_the_base_document_has_the_shapes_these_cases_edit():
    assert [op["name"] for op in BASE["operators"]] == ["mp", "ap/pad", "ap"]
    assert BASE["operators"][0]["desc"]["OutputIndicesTensor"]["DataType"] == "DML_TENSOR_DATA_TYPE_UINT64"
    assert BASE["operators"][2]["desc"]["IncludePadding"] is False


def edited(change) -> dict:
    document = copy.deepcopy(BASE)
    change(document)
    return document


def member(op: int, name: str, value):
    return lambda d: d["operators"][op]["desc"].__setitem__(name, value)


def field(op: int, name: str, value):
    return lambda d: d["operators"][op].__setitem__(name, value)


CASES = {
    "name not a string": (field(0, "name", ["mp"]), r"operator 0: 'name' must be a non-empty string"),
    "unknown operator type": (
        field(0, "type", "DML_OPERATOR_CONVOLUTION"),
        r'operator \'mp\': type "DML_OPERATOR_CONVOLUTION" is not',
    ),
    "unknown feature level": (
        field(0, "min_feature_level", "DML_FEATURE_LEVEL_9_9"),
        r'operator \'mp\': min_feature_level "DML_FEATURE_LEVEL_9_9"',
    ),
    "DataType not a string": (
        lambda d: d["operators"][0]["desc"]["InputTensor"].__setitem__("DataType", ["FLOAT"]),
        r'operator \'mp\': InputTensor: DataType \["FLOAT"\]',
    ),
    "negative size": (
        lambda d: d["operators"][0]["desc"]["InputTensor"].__setitem__("Sizes", [1, 1, -8, 8]),
        r"operator 'mp': InputTensor.Sizes must be a list of integers from 1 to 4294967295 \(UINT32\)",
    ),
    "size over UINT32": (
        lambda d: d["operators"][0]["desc"]["InputTensor"].__setitem__("Sizes", [1, 1, 2**32, 8]),
        r"operator 'mp': InputTensor.Sizes must be a list of integers from 1 to 4294967295 \(UINT32\)",
    ),
    "zero stride": (member(0, "Strides", [0, 2]), r"operator 'mp': attribute 'Strides' = \[0, 2\]: must be >= 1"),
    "zero window": (member(0, "WindowSize", [2, 0]), r"operator 'mp': attribute 'WindowSize' = \[2, 0\]: must be >= 1"),
    "DimensionCount a string": (member(0, "DimensionCount", "2"), r'operator \'mp\': DimensionCount "2" must be the integer 2'),
    "float indices": (
        lambda d: d["operators"][0]["desc"]["OutputIndicesTensor"].__setitem__("DataType", "DML_TENSOR_DATA_TYPE_FLOAT32"),
        r"operator 'mp': OutputIndicesTensor DataType must be DML_TENSOR_DATA_TYPE_UINT64 or DML_TENSOR_DATA_TYPE_UINT32",
    ),
    "IncludePadding a string": (member(2, "IncludePadding", 0), r"operator 'ap': IncludePadding must be true or false, got 0"),
    "cycle": (field(0, "inputs", ["y"]), r"operator 'mp': reads tensor 'y', which operator 'ap' writes at or after it"),
    "reads its own output": (
        field(1, "inputs", ["ap/pad"]),
        r"operator 'ap/pad': reads tensor 'ap/pad', which operator 'ap/pad' writes",
    ),
    "tensor written twice": (field(2, "outputs", ["m"]), r"operator 'ap': writes tensor 'm', already written by operator 'mp'"),
    "tensors entry of another type": (
        lambda d: d["tensors"]["x"].__setitem__("DataType", "DML_TENSOR_DATA_TYPE_FLOAT16"),
        r"operator 'mp': tensor 'x' is DML_TENSOR_DATA_TYPE_FLOAT32 in its desc but DML_TENSOR_DATA_TYPE_FLOAT16 in 'tensors'",
    ),
    "tensors entry of another size": (
        lambda d: d["tensors"]["x"].__setitem__("Sizes", [1, 1, 9, 8]),
        r"operator 'mp': InputTensor Sizes \[1, 1, 8, 8\] do not view tensor 'x'",
    ),
    "output entry of another size": (
        lambda d: d["tensors"]["y"].__setitem__("Sizes", [1, 1, 2, 2]),
        r"operator 'ap': tensor 'y' has Sizes \[1, 1, 2, 2\] in 'tensors' but \[1, 1, 3, 3\] in its desc",
    ),
    "tensors entry without Sizes": (
        lambda d: d["tensors"]["x"].pop("Sizes"),
        r"tensors\['x'\]: expected an object with DataType and Sizes",
    ),
    "OutputTensor no rounding gives": (
        lambda d: (d["operators"][2]["desc"]["OutputTensor"].__setitem__("Sizes", [1, 1, 1, 1]), d.pop("tensors")),
        r"operator 'ap': OutputTensor spatial sizes \[1, 1\] match neither floor nor ceil",
    ),
}


@pytest.mark.parametrize("change, message", CASES.values(), ids=list(CASES))
def test_malformed_operators_are_refused_naming_the_operator(change, message):
    document = edited(change)
    for convert in (dml_import.model_from_document, dml_import.ir_from_document):
        with pytest.raises(OvpoolError, match=message) as caught:
            convert(document)
        assert caught.value.exit_code == 1


@pytest.mark.parametrize(
    "text, message",
    [
        (b"{not json", r"not a JSON file"),
        (b"\xff\xfe\x00", r"not a JSON file"),
        (b"[1, 2]", r"not an ovpool DirectML document"),
        (json.dumps({**BASE, "format": "onnx"}).encode(), r"not an ovpool DirectML document"),
        (json.dumps({k: v for k, v in BASE.items() if k != "version"}).encode(), r"version null is not 1"),
    ],
)
def test_files_that_are_not_directml_documents_are_unreadable_input(text, message):
    with pytest.raises(InputFileError, match=message):
        dml_adapter.loads(text, "f.json")


def test_a_document_without_tensors_imports_from_its_descs():
    """``tensors`` is optional: each tensor then takes its desc's DataType and Sizes (the UINT64
    indices stay uint64, the same numbers), and the graph computes the same outputs."""
    document = {k: v for k, v in BASE.items() if k != "tensors"}
    x = np.random.default_rng(1).random((1, 1, 8, 8)).astype(np.float32)
    with_tensors = ovpool.run(dml_import.model_from_document(BASE), {"x": x}, device="numpy")
    without = ovpool.run(dml_import.model_from_document(document), {"x": x}, device="numpy")
    np.testing.assert_array_equal(without["y"], with_tensors["y"])
    assert without["mi"].dtype == np.uint64 and with_tensors["mi"].dtype == np.int64
    np.testing.assert_array_equal(without["mi"].astype(np.int64), with_tensors["mi"])
    files = dml_import.ir_from_document(document)
    assert b'type="Pad"' in files[".xml"] and b'type="AvgPool"' in files[".xml"]


def test_cli_gives_one_line_and_the_exit_code(tmp_path):
    cases = {"not_json.json": (b"{", 2), "cycle.json": (json.dumps(edited(CASES["cycle"][0])).encode(), 1)}
    for name, (data, code) in cases.items():
        src = tmp_path / name
        src.write_bytes(data)
        for to, suffix in (("onnx", ".onnx"), ("ir", ".xml")):
            result = subprocess.run(
                ["ovpool", "convert", str(src), "--to", to, "-o", str(tmp_path / f"out{suffix}")],
                capture_output=True,
                text=True,
                timeout=120,
            )
            assert result.returncode == code, result.stderr
            assert result.stderr.startswith("error: ") and result.stderr.count("\n") == 1 and "Traceback" not in result.stderr
            assert not (tmp_path / f"out{suffix}").exists()


def test_errors_are_ovpool_errors_not_python_ones():
    """A desc value of the wrong JSON type anywhere in a pooling desc is a ModelError."""
    for name, value in (("Strides", "2,2"), ("StartPadding", [0.5, 0]), ("Dilations", None), ("WindowSize", {"a": 1})):
        document = edited(member(0, name, value))
        with pytest.raises(OvpoolError):
            dml_import.model_from_document(document)


def test_unpool_output_shape_that_changes_n_or_c_is_refused():
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 1, 4, 4])
    nodes = [
        helper.make_node("MaxPool", ["x"], ["y", "i"], name="mp", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("MaxUnpool", ["y", "i", "s"], ["z"], name="up", kernel_shape=[2, 2], strides=[2, 2]),
    ]
    shape = numpy_helper.from_array(np.array([1, 2, 4, 4], dtype=np.int64), "s")
    graph = helper.make_graph(nodes, "g", [x], [helper.make_tensor_value_info("z", TensorProto.FLOAT, None)], initializer=[shape])
    with pytest.raises(OvpoolError, match=r"node 'up'.*output_shape \[1, 2, 4, 4\] must keep the input's rank, N and C"):
        dml_export.document_from_onnx(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)]))


def test_unpool_without_its_indices_tensor_is_refused_naming_the_operator():
    f32 = "DML_TENSOR_DATA_TYPE_FLOAT32"
    document = {
        "format": "ovpool-dml",
        "version": 1,
        "operators": [
            {
                "name": "u",
                "type": "DML_OPERATOR_MAX_UNPOOLING",
                "inputs": ["x", "i"],
                "outputs": ["y"],
                "desc": {
                    "InputTensor": {"DataType": f32, "Sizes": [1, 1, 2, 2]},
                    "IndicesTensor": None,
                    "OutputTensor": {"DataType": f32, "Sizes": [1, 1, 4, 4]},
                },
            }
        ],
    }
    with pytest.raises(ModelError, match="operator 'u': DML_OPERATOR_MAX_UNPOOLING needs its IndicesTensor"):
        dml_import.model_from_document(document)
