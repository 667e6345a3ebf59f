"""``ovpool.onnx.protobuf_wire.raw_data_sizes`` against protobuf itself: the sizes it reads off the bytes
are ``len(raw_data)`` of the model protobuf parses from them, merged fields and unknown ones
included; and the structural check refuses a short raw data alike with and without the bytes."""

from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st
from onnx import ModelProto, TensorProto, helper, numpy_helper

from ovpool.errors import ModelError
from ovpool.onnx.check import check_model
from ovpool.onnx.protobuf_wire import raw_data_sizes


def _protobuf_sizes(data: bytes) -> list[int | None]:
    """The oracle: protobuf's parse, each initializer's ``len(raw_data)`` or None without one."""
    model = ModelProto.FromString(data)
    return [len(t.raw_data) if t.HasField("raw_data") else None for t in model.graph.initializer]


_TENSORS = st.lists(
    st.tuples(st.one_of(st.none(), st.binary(max_size=300)), st.lists(st.floats(width=32), max_size=3), st.text(max_size=8)),
    max_size=6,
)


@given(tensors=_TENSORS, nodes=st.integers(0, 4), parts=st.integers(1, 3))
def test_sizes_are_protobufs(tensors, nodes, parts):
    """Initializers with and without raw data (typed values, names of any text, around nodes), the
    model's bytes given in ``parts`` pieces, each a model of its own: protobuf merges their graphs."""
    pieces = []
    for part in range(parts):
        graph = helper.make_graph(
            [helper.make_node("Relu", [f"x{part}{i}"], [f"y{part}{i}"]) for i in range(nodes)], f"g{part}", [], []
        )
        for number, (raw, floats, name) in enumerate(tensors[part::parts]):
            tensor = graph.initializer.add(name=name or f"t{number}", data_type=TensorProto.FLOAT, dims=[len(floats)])
            tensor.float_data.extend(floats)
            if raw is not None:
                tensor.raw_data = raw
        pieces.append(ModelProto(ir_version=8, graph=graph).SerializeToString())
    data = b"".join(pieces)
    assert raw_data_sizes(data) == _protobuf_sizes(data)


def test_the_last_raw_data_of_a_tensor_counts():
    """A tensor's bytes followed by another raw_data field (protobuf: the last wins), and a field 9
    of the varint wire type (protobuf: an unknown field, not raw data)."""
    tensor = TensorProto(name="w", data_type=TensorProto.UINT8, dims=[3], raw_data=b"abc")
    twice = tensor.SerializeToString() + bytes([9 << 3 | 2, 5]) + b"hello"
    as_varint = TensorProto(name="v").SerializeToString() + bytes([9 << 3 | 0, 7])
    graph = bytes([5 << 3 | 2, len(twice)]) + twice + bytes([5 << 3 | 2, len(as_varint)]) + as_varint
    data = bytes([7 << 3 | 2, len(graph)]) + graph
    assert raw_data_sizes(data) == _protobuf_sizes(data) == [5, None]


@pytest.mark.parametrize("cut", [1, 2, 5, 9])
def test_bytes_that_are_not_wire_format_give_none(cut):
    """A model cut short, or holding a group (wire type 3), is not read: the caller asks protobuf."""
    model = ModelProto(ir_version=8, graph=helper.make_graph([], "g", [], [], [numpy_helper.from_array(np.ones(3, np.float32))]))
    data = model.SerializeToString()
    assert raw_data_sizes(data) == [12]
    assert raw_data_sizes(data[:-cut]) is None
    assert raw_data_sizes(bytes([1 << 3 | 3]) + data) is None


def test_a_short_raw_data_is_refused_alike_with_the_bytes():
    """The check reads the sizes off the bytes when given them: the same refusal, the same line."""
    x = helper.make_tensor_value_info("x", TensorProto.FLOAT, [4])
    short = TensorProto(name="w", data_type=TensorProto.FLOAT, dims=[4], raw_data=b"\0" * 12)
    ok = numpy_helper.from_array(np.ones(2, np.float32), "v")
    graph = helper.make_graph([helper.make_node("Add", ["x", "w"], ["y"])], "g", [x], [x], [ok, short])
    graph.output[0].name = "y"
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 17)])
    messages = []
    for data in (None, model.SerializeToString()):
        with pytest.raises(ModelError) as caught:
            check_model(model, "m.onnx", data)
        messages.append(str(caught.value))
    assert messages[0] == messages[1]
    assert messages[0] == "m.onnx: the graph: initializer 'w' [4] needs 16 bytes of data and holds 12"
