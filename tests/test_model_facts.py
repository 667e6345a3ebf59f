"""One view of a model being converted (``ovpool.onnx.facts.ModelFacts``): the file read once,
ONNX shape inference run once with ``--input`` pinned, the shapes handed on as objects, and the
one NodeProto attribute decoder."""

from __future__ import annotations

from collections import Counter
from pathlib import Path

import numpy as np
import onnx
import onnx.shape_inference
import pytest
from onnx import TensorProto, helper, numpy_helper

from ovpool.attributes import attribute, attributes
from ovpool.inputs import InputShape, input_shapes
from ovpool.onnx.facts import ModelFacts, input_index


def _three_stages(path: Path) -> None:
    """A model every stage asks types of: Softmax-11 at axis 1 of a rank-3 input (a frontend fix
    that needs the input's rank), QuantizeLinear/DequantizeLinear (the quantization forms' tensor
    kinds) and a ReduceMax of an undeclared int64 tensor (a CPU deviation found by its type)."""
    nodes = [
        helper.make_node("Softmax", ["x"], ["s"], axis=1),
        helper.make_node("QuantizeLinear", ["s", "scale", "zp"], ["q"]),
        helper.make_node("DequantizeLinear", ["q", "scale", "zp"], ["d"]),
        helper.make_node("Cast", ["d"], ["i"], to=TensorProto.INT64),
        helper.make_node("Add", ["i", "i"], ["i2"]),
        helper.make_node("ReduceMax", ["i2"], ["y"], keepdims=1),
    ]
    graph = helper.make_graph(
        nodes,
        "three",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, ["n", 3, 4])],
        [helper.make_tensor_value_info("y", TensorProto.INT64, ["a", "b", "c"])],
        [numpy_helper.from_array(np.array(0.01, np.float32), "scale"), numpy_helper.from_array(np.array(0, np.uint8), "zp")],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 11)])
    model.ir_version = 7
    onnx.save(model, str(path))


def test_a_conversion_reads_the_file_once_and_infers_once(tmp_path, monkeypatch):
    """``ovpool convert three.onnx --input x[1,3,4] --exact-quantization``: one parse of the file
    and one shape inference, which the frontend fixes, the quantization forms and the CPU deviation
    warning all read (before ModelFacts: 3 and 3)."""
    pytest.importorskip("openvino")
    import ovpool
    from ovpool.ov.cpu_deviations import CpuDeviationWarning

    path = tmp_path / "three.onnx"
    _three_stages(path)
    counts: Counter[str] = Counter()
    parse, infer = onnx.load_model_from_string, onnx.shape_inference.infer_shapes

    def counted_parse(*args, **kwargs):
        counts["parse"] += 1
        return parse(*args, **kwargs)

    def counted_infer(*args, **kwargs):
        counts["infer"] += 1
        return infer(*args, **kwargs)

    monkeypatch.setattr(onnx, "load_model_from_string", counted_parse)
    monkeypatch.setattr(onnx.shape_inference, "infer_shapes", counted_infer)
    with pytest.warns(CpuDeviationWarning, match="ReduceMax"):
        written = ovpool.convert(
            path, tmp_path / "m.xml", inputs=[InputShape("x", 0, ((1, 1), (3, 3), (4, 4)))], exact_quantization=True
        )
    assert [p.name for p in written] == ["m.xml", "m.bin"]
    assert counts == {"parse": 1, "infer": 1}


def test_shapes_as_objects_convert_as_their_text(tmp_path):
    """``inputs`` as ``InputShape`` objects (the command line's) write the IR their ovc text does."""
    pytest.importorskip("openvino")
    import ovpool
    from ovpool.ov.cpu_deviations import CpuDeviationWarning

    path = tmp_path / "three.onnx"
    _three_stages(path)
    shapes = input_shapes("x[1,3,4]")
    with pytest.warns(CpuDeviationWarning):
        ovpool.convert(path, tmp_path / "text.xml", inputs="x[1,3,4]")
        ovpool.convert(path, tmp_path / "objects.xml", inputs=shapes)
    for suffix in (".xml", ".bin"):
        assert (tmp_path / f"text{suffix}").read_bytes() == (tmp_path / f"objects{suffix}").read_bytes()
    assert input_shapes(shapes) == shapes


def test_facts_pin_static_input_shapes_for_inference(tmp_path):
    """Shape inference reads the ``weightless`` copy with ``x[1,3,4]`` pinned: Softmax's output is
    [1, 3, 4]; a range leaves the input as declared ([n, 3, 4] gives [None, 3, 4])."""
    path = tmp_path / "three.onnx"
    _three_stages(path)
    pinned = ModelFacts.read(path, input_shapes("x[1,3,4]"))
    assert pinned.types["s"] == ("float32", (1, 3, 4))
    assert pinned.tensor_kinds["q"] == ("uint8", 3)
    assert ModelFacts.read(path, input_shapes("x[1..2,3,4]")).types["s"] == ("float32", (None, 3, 4))
    assert sorted(pinned.nodes_by_op) == ["Add", "Cast", "DequantizeLinear", "QuantizeLinear", "ReduceMax", "Softmax"]
    assert pinned.graph_inputs == ("x",) and pinned.opset == 11 and pinned.label == str(path)


def test_input_index_names_the_input_a_shape_sets():
    """By name, else by position; None when the model has no such input."""
    names = ["x", "y"]
    assert input_index(names, InputShape("y", 0, ((1, 1),))) == 1
    assert input_index(names, InputShape(None, 1, ((1, 1),))) == 1
    assert input_index(names, InputShape(None, 2, ((1, 1),))) is None
    assert input_index(names, InputShape("z", 0, None)) is None


def test_one_attribute_decoder():
    """Text decoded unless asked raw; the default when the node has none; every kind of value."""
    node = helper.make_node("Resize", ["x"], ["y"], mode="linear", axes=[2, 3], cubic_coeff_a=-0.5, names=["a", "b"])
    assert attribute(node, "mode") == "linear"
    assert attribute(node, "mode", text=False) == b"linear"
    assert attribute(node, "names") == ["a", "b"]
    assert attribute(node, "axes") == [2, 3]
    assert attribute(node, "cubic_coeff_a") == pytest.approx(-0.5)
    assert attribute(node, "exclude_outside", 0) == 0
    assert attributes(node, text=False)["names"] == [b"a", b"b"]
