"""An ONNX model read with its weights left in the file (``ovpool.onnx.wire.without_weights``,
``ovpool.onnx.model.load_apart``), against independent readers: protobuf's own parse of the whole
model, onnx's external-data loader (the weights are external-data tensors pointing into the
model file), ``load`` of the whole model, and conversions of the model given whole."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import ModelProto, TensorProto, external_data_helper, helper, numpy_helper

from ovpool.errors import InputFileError, ModelError
from ovpool.onnx.model import SHAPE_DATA_LIMIT, load, load_apart
from ovpool.onnx.wire import FileBytes, NotWire, without_weights

_TYPES = st.sampled_from([TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.UINT8, TensorProto.DOUBLE])
_TENSORS = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=300)), _TYPES, st.integers(0, 2), st.text(max_size=8)),
    max_size=6,
)


def _model_bytes(tensors, nodes: int, parts: int) -> bytes:
    """``parts`` serialized models one after another (protobuf merges their graphs), each holding
    its share of ``tensors`` (raw data or none, element type, a repeated raw_data field or two, name)."""
    pieces = []
    for part in range(parts):
        graph = helper.make_graph(
            [helper.make_node("Relu", [f"x{part}{i}"], [f"y{part}{i}"]) for i in range(nodes)], f"g{part}", [], []
        )
        for number, (raw, data_type, repeats, name) in enumerate(tensors[part::parts]):
            tensor = graph.initializer.add(name=name or f"t{number}", data_type=data_type, dims=[3])
            if raw is not None:
                tensor.raw_data = raw
            serialized = tensor.SerializeToString()
            for extra in range(repeats):  # a tensor's earlier raw_data fields: protobuf keeps the last
                serialized = bytes([9 << 3 | 2, 2]) + bytes([extra, extra]) + serialized
            del graph.initializer[-1]
            graph.initializer.add().ParseFromString(serialized)
        pieces.append(ModelProto(ir_version=8, graph=graph).SerializeToString())
    return b"".join(pieces)


def _leave_out(data_type: int, size: int) -> bool:
    return data_type in (TensorProto.FLOAT, TensorProto.DOUBLE) and size >= 16


@settings(max_examples=60, deadline=None)
@given(tensors=_TENSORS, nodes=st.integers(0, 3), parts=st.integers(1, 3))
def test_without_weights_is_protobufs_model_less_the_weights(tensors, nodes, parts):
    """The copy parses to protobuf's model of the whole bytes with the left-out raw data empty;
    the sizes are protobuf's ``len(raw_data)``; each extent holds the raw data protobuf read. The
    bytes are read as bytes and as a file by ranges, alike."""
    data = _model_bytes(tensors, nodes, parts)
    whole = ModelProto.FromString(data)
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder) / "m.onnx"
        path.write_bytes(data)
        with open(path, "rb") as handle:
            from_file = without_weights(FileBytes(handle, len(data)), _leave_out)
    apart = without_weights(data, _leave_out)
    assert apart == from_file
    expected = ModelProto()
    expected.CopyFrom(whole)
    for tensor, extent in zip(expected.graph.initializer, apart.extents):
        if extent is not None:
            assert data[extent[0] : extent[1]] == tensor.raw_data
            tensor.raw_data = b""
        else:
            assert not (tensor.HasField("raw_data") and _leave_out(tensor.data_type, len(tensor.raw_data)))
    assert ModelProto.FromString(apart.data) == expected
    assert apart.sizes == [len(t.raw_data) if t.HasField("raw_data") else None for t in whole.graph.initializer]


def test_file_bytes_across_windows_and_a_shrunk_file(tmp_path):
    """Weights larger than the 64 KiB window, read by ranges; a file that ends before its size
    said (it shrank while read) is not wire format."""
    weights = [numpy_helper.from_array(np.arange(n, dtype=np.float32), f"w{n}") for n in (70_000, 3, 20_000)]
    data = helper.make_model(helper.make_graph([], "g", [], [], weights)).SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    with open(path, "rb") as handle:
        apart = without_weights(FileBytes(handle, len(data)), _leave_out)
        assert apart == without_weights(data, _leave_out)
        assert [e is not None for e in apart.extents] == [True, False, True]
        assert len(apart.data) < 1000
        with pytest.raises(NotWire, match="before its size"):
            without_weights(FileBytes(handle, len(data) + 10), _leave_out)


def _weighty_model(path: Path, extra_nodes: tuple = (), extra_tensors: tuple = ()) -> dict[str, np.ndarray]:
    """x (1, 2048) + W (2048 float32: a weight) * s (4 float32: not one) -> y; its constants."""
    rng = np.random.default_rng(0)
    values = {
        "W": rng.standard_normal((1, SHAPE_DATA_LIMIT * 2)).astype(np.float32),
        "s": np.arange(4, dtype=np.float32),
        "h": rng.standard_normal(SHAPE_DATA_LIMIT + 1).astype(np.float16),  # 2 KiB of float16: a weight
    }
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, SHAPE_DATA_LIMIT * 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [helper.make_node("Add", ["x", "W"], ["y"]), *extra_nodes]
    tensors = [numpy_helper.from_array(v, k) for k, v in values.items()]
    graph = helper.make_graph(nodes, "g", [x], [y], [*tensors, *extra_tensors])
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return values


def test_the_weights_are_external_data_in_the_model_file(tmp_path):
    """Each weight reads, by onnx's own external-data loader, as ``load`` reads it; a small tensor
    keeps its bytes; ``Weights.restore`` and ``Weights.tensors`` give the weights' values."""
    path = tmp_path / "m.onnx"
    values = _weighty_model(path)
    proto, weights = load_apart(path)
    assert weights is not None and sorted(weights.extents) == ["W", "h"]
    by_name = {t.name: t for t in proto.graph.initializer}
    assert by_name["W"].data_location == TensorProto.EXTERNAL and not by_name["W"].HasField("raw_data")
    assert by_name["s"].data_location == TensorProto.DEFAULT and by_name["s"].HasField("raw_data")
    whole = load(path)
    assert weights.restore(proto) == whole
    external_data_helper.load_external_data_for_model(proto, str(tmp_path))
    assert {t.name: numpy_helper.to_array(t).tobytes() for t in proto.graph.initializer} == {
        k: v.tobytes() for k, v in values.items()
    }
    proto, weights = load_apart(path)
    tensors = weights.tensors(proto.graph)
    assert sorted(tensors) == ["W", "h"]
    np.testing.assert_array_equal(numpy_helper.to_array(tensors["h"]), values["h"])


def test_models_read_whole(tmp_path):
    """No weight, a quantization node (its checks read constants), or bytes that are no model:
    ``load``'s reading and its error line."""
    path = tmp_path / "m.onnx"
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    small = helper.make_model(helper.make_graph([helper.make_node("Relu", ["x"], ["y"])], "g", [x], [x]))
    small.graph.output[0].name = "y"
    path.write_bytes(small.SerializeToString())
    assert load_apart(path) == (load(path, load_data=False), None)
    scale, zero = numpy_helper.from_array(np.float32(0.5), "q_s"), numpy_helper.from_array(np.uint8(3), "q_z")
    quantize = helper.make_node("QuantizeLinear", ["x", "q_s", "q_z"], ["q"])
    _weighty_model(path, (quantize,), (scale, zero))
    assert load_apart(path)[1] is None
    path.write_bytes(b"\x08\x07junk that is no protobuf \xff\xff")
    with pytest.raises(InputFileError) as whole:
        load(path)
    with pytest.raises(InputFileError) as apart:
        load_apart(path)
    assert str(apart.value) == str(whole.value)


def test_a_short_weight_is_refused_as_load_refuses_it(tmp_path):
    """A weight whose raw data is shorter than its dims need: the structural check's line, its
    size read off the bytes left in the file."""
    path = tmp_path / "m.onnx"
    _weighty_model(path)
    model = load(path)
    weight = next(t for t in model.graph.initializer if t.name == "W")
    weight.raw_data = weight.raw_data[:-4]
    path.write_bytes(model.SerializeToString())
    with pytest.raises(ModelError) as whole:
        load(path)
    with pytest.raises(ModelError) as apart:
        load_apart(path)
    assert str(apart.value) == str(whole.value)
    assert "initializer 'W' [1, 2048] needs 8192 bytes of data and holds 8188" in str(whole.value)


def test_a_file_changed_after_reading_is_refused(tmp_path):
    """The model file cut short between reading its structure and reading its weights: one line."""
    path = tmp_path / "m.onnx"
    _weighty_model(path)
    proto, weights = load_apart(path)
    assert weights is not None
    os.truncate(path, 100)
    with pytest.raises(InputFileError, match="changed while being read"):
        weights.restore(proto)


def test_rewrites_read_the_weights_as_constants(tmp_path):
    """``frontend_fixes.rewrite`` of the model read apart, given its weights, is the rewrite of the
    model read whole, and its constants hold the weights: a Div by a weight (its constant tells a
    Div of floats without shape inference)."""
    from ovpool.ov import frontend_fixes

    path = tmp_path / "m.onnx"
    values = _weighty_model(path, (helper.make_node("Div", ["y", "W"], ["z"]),))
    proto, weights = load_apart(path)
    assert weights is not None
    constants = frontend_fixes._constants(proto, weights)
    assert "W" in constants and len(constants) == 3
    np.testing.assert_array_equal(constants["W"], values["W"])
    assert frontend_fixes.rewrite(proto, "m", weights=weights) == frontend_fixes.rewrite(load(path), "m")


@pytest.mark.parametrize("rewritten", [False, True])
def test_a_conversion_from_the_file_is_the_conversion_of_the_whole_model(tmp_path, monkeypatch, rewritten):
    """The IR of the file read apart is byte for byte its IR read whole (``load``), with and
    without a node ``frontend_fixes`` rewrites (Softmax-11 on axis 1 of a 3-d tensor: the
    rewritten model is given to OpenVINO with its weights put back)."""
    import openvino as ov

    from ovpool.ov import from_onnx
    from ovpool.ov.from_onnx import onnx_to_ov_model

    path = tmp_path / "m.onnx"
    extra = (helper.make_node("Softmax", ["y"], ["z"], axis=1),) if rewritten else ()
    _weighty_model(path, extra)
    if rewritten:
        model = load(path)
        model.opset_import[0].version = 11
        model.graph.output[0].name = "z"
        reshape = numpy_helper.from_array(np.array([1, 2, SHAPE_DATA_LIMIT], np.int64), "shape3")
        model.graph.initializer.append(reshape)
        model.graph.node.insert(1, helper.make_node("Reshape", ["y", "shape3"], ["y3"]))
        model.graph.node[2].input[0] = "y3"
        path.write_bytes(model.SerializeToString())
    written = []
    for name in ("apart", "whole"):
        if name == "whole":
            monkeypatch.setattr(from_onnx, "load_apart", lambda path: (load(path, load_data=False), None))
        ov.save_model(onnx_to_ov_model(path), str(tmp_path / f"{name}.xml"), compress_to_fp16=False)
        written.append(((tmp_path / f"{name}.xml").read_bytes(), (tmp_path / f"{name}.bin").read_bytes()))
    from ovpool.ov import frontend_fixes

    assert load_apart(path)[1] is not None
    assert bool(frontend_fixes.rewrite(load(path), "m")) == rewritten
    assert written[0][1] == written[1][1]
    assert written[0][0] == written[1][0]
