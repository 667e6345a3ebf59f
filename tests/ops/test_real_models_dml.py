"""The real third-party models (``real_models.py``) that hold pooling convert to DirectML with
``--input`` shapes, and every descriptor, run on the DirectML emulator (``tests/dml_emulator.py``,
written from DirectML's pages) on the tensor the model feeds it, equals the naive loop oracle
(``tests/oracle.py``) and ovpool's numpy executor.

Their inputs are dynamic (``x: float32 [?, 3, ?, ?]``), and some pooling inputs are sized only by
a shape-computing subgraph that onnx's inference does not follow; ``--input`` gives the graph
inputs the tests' shapes and ``ovpool.dml.sizes`` sizes the rest. Each pooling input's
dims in the document must be the dims the tensor has when the model runs. The emulator walks
every tap in Python, so each descriptor is run on the first two channels of its input (pooling is
per channel: the window, stride, padding and divisor fields are what is checked).
"""

from __future__ import annotations

import copy

import dml_emulator
import numpy as np
import oracle
import pytest
from onnx import NodeProto, helper
from real_models import MODELS, RealModel

from ovpool.dml.export import document_from_onnx
from ovpool.engine.graph import GraphSession
from ovpool.errors import UnsupportedError
from ovpool.onnx.model import load

CHANNELS = 2
_FIRST = {}
for _model in MODELS:
    _FIRST.setdefault(_model.file, _model)


def _values(model: RealModel, names: set[str]) -> dict[str, np.ndarray]:
    """The tensors ``names`` of a numpy run on the tests' inputs, of the model cut after the last
    node they need (SLANet's pools are in its backbone, before its decoder's Loop)."""
    proto = load(model.path)
    producer = {output: node for node in proto.graph.node for output in node.output}
    kept, todo = set(), list(names)
    while todo:
        node = producer.get(todo.pop())
        if node is not None and id(node) not in kept:
            kept.add(id(node))
            todo.extend(node.input)
    nodes = [node for node in proto.graph.node if id(node) in kept]
    del proto.graph.node[:]
    proto.graph.node.extend(nodes)
    del proto.graph.output[:]
    proto.graph.output.extend(helper.make_empty_tensor_value_info(name) for name in sorted(names))
    return GraphSession(proto).run(model.feeds())


def _narrowed(operator: dict) -> dict:
    """The operator alone on the first ``CHANNELS`` channels of its NCHW tensors."""
    op = copy.deepcopy(operator)
    for member in ("InputTensor", "OutputTensor", "OutputIndicesTensor"):
        if op["desc"].get(member):
            op["desc"][member]["Sizes"][1] = CHANNELS
    return {"operators": [op], "tensors": {}}


def _expected(node: NodeProto, x: np.ndarray) -> np.ndarray:
    attrs = {a.name: helper.get_attribute_value(a) for a in node.attribute}
    if node.op_type == "GlobalAveragePool":
        return x.astype(np.float64).mean(axis=tuple(range(2, x.ndim)), keepdims=True)
    if node.op_type == "GlobalMaxPool":
        return x.max(axis=tuple(range(2, x.ndim)), keepdims=True)
    if node.op_type == "AveragePool":
        return oracle.pool(x, "avg", attrs)
    return oracle.pool(x, "max", attrs)[0]


@pytest.mark.parametrize("model", sorted(_FIRST.values(), key=lambda m: m.name), ids=lambda m: m.name)
def test_descriptors_equal_the_oracle(model: RealModel) -> None:
    if not model.path.is_file():
        pytest.skip(f"{model.path} absent: run python tests/fetch_real_models.py")
    shapes = {name: list(given.shape) for name, given in model.inputs.items()}
    try:
        document = document_from_onnx(model.path, inputs=shapes)
    except UnsupportedError as exc:
        assert "has no pooling node" in str(exc)
        return
    nodes = {node.name: node for node in load(model.path, load_data=False).graph.node}
    values = _values(model, {name for op in document["operators"] for name in (*op["inputs"][:1], *op["outputs"][:1])})
    for operator in document["operators"]:
        node = nodes[operator["name"]]
        x, y = values[operator["inputs"][0]], values[operator["outputs"][0]]
        assert list(x.shape) == operator["desc"]["InputTensor"]["Sizes"], operator["name"]
        assert list(y.shape) == operator["desc"]["OutputTensor"]["Sizes"], operator["name"]
        part = x[:, :CHANNELS]
        got = dml_emulator.run(_narrowed(operator), {operator["inputs"][0]: part})[operator["outputs"][0]]
        want = _expected(node, part)
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6, err_msg=operator["name"])
        np.testing.assert_allclose(y[:, :CHANNELS], want, rtol=1e-5, atol=1e-6, err_msg=operator["name"])


def test_a_dim_nothing_sizes_names_the_tensor_and_the_inputs() -> None:
    model = _FIRST["320n.onnx"]
    if not model.path.is_file():
        pytest.skip(f"{model.path} absent: run python tests/fetch_real_models.py")
    with pytest.raises(UnsupportedError) as caught:
        document_from_onnx(model.path)
    assert str(caught.value) == (
        "node '/model.9/m/MaxPool' (MaxPool): input '/model.9/cv1/act/Mul_output_0' has dims [?, 128, ?, ?]; "
        "DirectML tensor descs need sizes: give the dynamic inputs static shapes with --input NAME[d0,d1,...] "
        "(images: float32 [?, 3, ?, ?])"
    )
