"""An ONNX model read with its weights left in the file (``ovpool.onnx.protobuf_wire.without_weights``,
``ovpool.onnx.model.load_apart``), against independent readers: protobuf's own parse of the whole
model, onnx's external-data loader (the weights are external-data tensors pointing into the
model file), ``load`` of the whole model, and conversions of the model given whole."""

from __future__ import annotations

import os
import tempfile
from pathlib import Path
from unittest import mock

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st
from onnx import AttributeProto, ModelProto, TensorProto, external_data_helper, helper, numpy_helper

from ovpool.errors import InputFileError, ModelError
from ovpool.onnx.model import SHAPE_DATA_LIMIT, load, load_apart
from ovpool.onnx.protobuf_wire import FileBytes, NotWire, without_weights

_TYPES = st.sampled_from([TensorProto.FLOAT, TensorProto.FLOAT16, TensorProto.INT64, TensorProto.UINT8, TensorProto.DOUBLE])
_TENSORS = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=300)), _TYPES, st.integers(0, 2), st.text(max_size=8)),
    max_size=6,
)


_CONSTANTS = st.lists(
    st.tuples(
        st.binary(max_size=300),
        _TYPES,
        st.sampled_from(["Constant", "Identity"]),
        st.sampled_from(["", "ai.onnx", "com.other"]),
        st.sampled_from([("value",), ("value", "value"), ("value_float",), ("sparse_value", "value")]),
    ),
    max_size=4,
)


def _model_bytes(tensors, constants, nodes: int, parts: int) -> bytes:
    """``parts`` serialized models one after another (protobuf merges their graphs), each holding
    its share of ``tensors`` (raw data or none, element type, a repeated raw_data field or two,
    name) and of ``constants`` (nodes with tensor attributes: raw data, element type, op type,
    domain, attribute names), among Relu nodes."""
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
        for number, (raw, data_type, op_type, domain, names) in enumerate(constants[part::parts]):
            node = graph.node.add(op_type=op_type, domain=domain, output=[f"c{part}{number}"])
            for name in names:
                node.attribute.add(
                    name=name, type=AttributeProto.TENSOR, t=TensorProto(data_type=data_type, dims=[3], raw_data=raw)
                )
        pieces.append(ModelProto(ir_version=8, graph=graph).SerializeToString())
    return b"".join(pieces)


@pytest.fixture(autouse=True)
def _any_size(monkeypatch):
    """Every model here is taken apart, however small its file (``APART_BYTES``)."""
    monkeypatch.setattr("ovpool.onnx.model.APART_BYTES", 0)


def _leave_out(data_type: int, size: int) -> bool:
    return data_type in (TensorProto.FLOAT, TensorProto.DOUBLE) and size >= 16


def _weight_values(model: ModelProto) -> list[TensorProto | None]:
    """The oracle's Constant weights: each main-graph node's tensor ``without_weights`` may leave
    out (a default-domain Constant with one ``value`` attribute), else None."""
    found: list[TensorProto | None] = []
    for node in model.graph.node:
        values = [a for a in node.attribute if a.name == "value"]
        constant = node.op_type == "Constant" and node.domain in ("", "ai.onnx") and len(values) == 1
        found.append(values[0].t if constant and values[0].HasField("t") else None)
    return found


@settings(max_examples=80, deadline=None)
@given(tensors=_TENSORS, constants=_CONSTANTS, nodes=st.integers(0, 3), parts=st.integers(1, 3))
def test_without_weights_is_protobufs_model_less_the_weights(tensors, constants, nodes, parts):
    """The copy parses to protobuf's model of the whole bytes with the left-out raw data empty (of
    initializers, and of Constant nodes' ``value``); the sizes are protobuf's ``len(raw_data)``;
    each extent holds the raw data protobuf read. The bytes are read as bytes and as a file by
    ranges, alike. Every node is read (no node is too small to hold a weight here)."""
    data = _model_bytes(tensors, constants, nodes, parts)
    whole = ModelProto.FromString(data)
    with mock.patch("ovpool.onnx.protobuf_wire._SMALL_NODE", 0), tempfile.TemporaryDirectory() as folder:
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
    for index, value in enumerate(_weight_values(expected)):
        extent = apart.constants.get(index)
        if extent is not None:
            assert value is not None and data[extent[0] : extent[1]] == value.raw_data
            value.raw_data = b""
        else:
            assert value is None or not _leave_out(value.data_type, len(value.raw_data))
    assert ModelProto.FromString(apart.data) == expected
    assert apart.sizes == [len(t.raw_data) if t.HasField("raw_data") else None for t in whole.graph.initializer]
    with mock.patch("ovpool.onnx.protobuf_wire._SMALL_NODE", 10**9):
        assert without_weights(data, _leave_out).constants == {}


def test_file_bytes_without_pread(tmp_path, monkeypatch):
    """Where the platform has no ``os.pread`` (Windows), a seek and a read give the same bytes."""
    weights = [numpy_helper.from_array(np.arange(n, dtype=np.float32), f"w{n}") for n in (9_000, 3)]
    data = helper.make_model(helper.make_graph([], "g", [], [], weights)).SerializeToString()
    path = tmp_path / "m.onnx"
    path.write_bytes(data)
    monkeypatch.delattr(os, "pread")
    with open(path, "rb") as handle:
        assert without_weights(FileBytes(handle, len(data)), _leave_out) == without_weights(data, _leave_out)


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
    """(x (1, 2048) + W) * C -> y: W an initializer of 2048 float32 (a weight), C a Constant node
    of as many (a weight), beside s (4 float32: not one) and h (1025 float16: a weight); the
    constants by name."""
    rng = np.random.default_rng(0)
    values = {
        "W": rng.standard_normal((1, SHAPE_DATA_LIMIT * 2)).astype(np.float32),
        "s": np.arange(4, dtype=np.float32),
        "h": rng.standard_normal(SHAPE_DATA_LIMIT + 1).astype(np.float16),  # 2 KiB of float16: a weight
    }
    constant = rng.standard_normal((1, SHAPE_DATA_LIMIT * 2)).astype(np.float32)
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, SHAPE_DATA_LIMIT * 2])
    y = helper.make_tensor_value_info("y", TensorProto.FLOAT, None)
    nodes = [
        helper.make_node("Add", ["x", "W"], ["a"]),
        helper.make_node("Constant", [], ["C"], value=numpy_helper.from_array(constant)),
        helper.make_node("Mul", ["a", "C"], ["y"]),
        *extra_nodes,
    ]
    tensors = [numpy_helper.from_array(v, k) for k, v in values.items()]
    graph = helper.make_graph(nodes, "g", [x], [y], [*tensors, *extra_tensors])
    path.write_bytes(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)]).SerializeToString())
    return {**values, "C": constant}


def test_the_weights_are_external_data_in_the_model_file(tmp_path):
    """Each weight reads, by onnx's own external-data loader, as ``load`` reads it; a small tensor
    keeps its bytes; ``Weights.restore`` and ``Weights.tensors`` give the weights' values."""
    path = tmp_path / "m.onnx"
    values = _weighty_model(path)
    proto, weights = load_apart(path)
    assert weights is not None and sorted(weights.extents) == ["C", "W", "h"]
    by_name = {t.name: t for t in proto.graph.initializer}
    by_name["C"] = proto.graph.node[1].attribute[0].t
    assert by_name["W"].data_location == by_name["C"].data_location == TensorProto.EXTERNAL
    assert not by_name["W"].HasField("raw_data") and not by_name["C"].HasField("raw_data")
    assert by_name["s"].data_location == TensorProto.DEFAULT and by_name["s"].HasField("raw_data")
    whole = load(path)
    assert weights.restore(proto) == whole
    external_data_helper.load_external_data_for_model(proto, str(tmp_path))
    assert {name: numpy_helper.to_array(t).tobytes() for name, t in by_name.items()} == {
        k: v.tobytes() for k, v in values.items()
    }
    proto, weights = load_apart(path)
    tensors = weights.tensors(proto.graph)
    assert sorted(tensors) == ["C", "W", "h"]
    np.testing.assert_array_equal(numpy_helper.to_array(tensors["h"]), values["h"])
    np.testing.assert_array_equal(numpy_helper.to_array(tensors["C"]), values["C"])


def test_models_read_whole(tmp_path, monkeypatch):
    """A file under ``APART_BYTES``, no weight, a quantization node (its checks read constants),
    or bytes that are no model: ``load``'s reading and its error line."""
    path = tmp_path / "m.onnx"
    _weighty_model(path)
    assert load_apart(path)[1] is not None
    monkeypatch.setattr("ovpool.onnx.model.APART_BYTES", path.stat().st_size + 1)
    assert load_apart(path) == (load(path, load_data=False), None)
    assert load_apart(path, least=0)[1] is not None
    monkeypatch.setattr("ovpool.onnx.model.APART_BYTES", 0)
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
    values = _weighty_model(path, (helper.make_node("Div", ["y", "W"], ["z"]), helper.make_node("Div", ["z", "C"], ["v"])))
    proto, weights = load_apart(path)
    assert weights is not None
    constants = frontend_fixes._constants(proto, weights)
    assert sorted(constants) == ["C", "W", "h", "s"]
    np.testing.assert_array_equal(constants["W"], values["W"])
    np.testing.assert_array_equal(constants["C"], values["C"])
    assert frontend_fixes.rewrite(proto, "m", weights=weights) == frontend_fixes.rewrite(load(path), "m")


@pytest.mark.parametrize("rewritten", [False, True])
def test_a_conversion_from_the_file_is_the_conversion_of_the_whole_model(tmp_path, monkeypatch, rewritten):
    """The IR of the file read apart is byte for byte its IR read whole (``load``), with and
    without a node ``frontend_fixes`` rewrites (Softmax-11 on axis 1 of a 3-d tensor: the
    rewritten model is given to OpenVINO with its weights put back)."""
    import openvino as ov

    from ovpool.onnx import facts
    from ovpool.ov.from_onnx import onnx_to_ov_model

    path = tmp_path / "m.onnx"
    shape3 = numpy_helper.from_array(np.array([1, 2, SHAPE_DATA_LIMIT], np.int64), "shape3")
    reshape = helper.make_node("Reshape", ["y", "shape3"], ["y3"])
    _weighty_model(path, (reshape, helper.make_node("Softmax", ["y3"], ["z"], axis=1)) if rewritten else (), (shape3,))
    if rewritten:
        model = load(path)
        model.opset_import[0].version = 11
        model.graph.output[0].name = "z"
        path.write_bytes(model.SerializeToString())
    written = []
    for name in ("apart", "whole"):
        if name == "whole":
            monkeypatch.setattr(facts, "load_apart", lambda path: (load(path, load_data=False), None))
        ov.save_model(onnx_to_ov_model(path), str(tmp_path / f"{name}.xml"), compress_to_fp16=False)
        written.append(((tmp_path / f"{name}.xml").read_bytes(), (tmp_path / f"{name}.bin").read_bytes()))
    from ovpool.ov import frontend_fixes

    assert load_apart(path)[1] is not None
    assert bool(frontend_fixes.rewrite(load(path), "m")) == rewritten
    assert written[0][1] == written[1][1]
    assert written[0][0] == written[1][0]


@settings(max_examples=150, deadline=None)
@given(
    damage=st.lists(
        st.tuples(st.sampled_from(["flip", "cut", "insert"]), st.floats(0, 1, exclude_max=True), st.integers(0, 255)),
        min_size=1,
        max_size=3,
    )
)
def test_damaged_files_read_apart_as_read_whole(damage):
    """A weighty model's bytes flipped, cut short or grown at any place: ``load_apart`` refuses it
    with ``load``'s error line, or reads the model ``load`` reads (its weights put back), never
    anything else (no traceback of its own)."""
    with tempfile.TemporaryDirectory() as folder:
        _compare_damaged(Path(folder) / "m.onnx", damage)


def _compare_damaged(path: Path, damage: list[tuple[str, float, int]]) -> None:
    _weighty_model(path)
    data = bytearray(path.read_bytes())
    for kind, where, value in damage:
        at = int(where * len(data))
        if kind == "flip" and at < len(data):
            data[at] ^= value or 1
        elif kind == "cut":
            del data[at:]
        elif kind == "insert":
            data[at:at] = bytes([value])
    path.write_bytes(bytes(data))
    try:
        whole: object = load(path)
    except (InputFileError, ModelError) as exc:
        whole = f"{type(exc).__name__}: {exc}"
    with mock.patch("ovpool.onnx.model.APART_BYTES", 0):
        try:
            proto, weights = load_apart(path)
            apart: object = weights.restore(proto) if weights is not None else load(path)
        except (InputFileError, ModelError) as exc:
            apart = f"{type(exc).__name__}: {exc}"
    assert apart == whole
