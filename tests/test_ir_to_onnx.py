"""IR -> ONNX: OpenVINO-written IR converts, and the ONNX model run on ovpool's numpy executor
equals OpenVINO on the IR (CPU, f32) and the naive oracle."""

from __future__ import annotations

import numpy as np
import pytest

import ovpool
from ovpool.errors import UnsupportedError
from ovpool.ir.writer import IRGraph
from tests import oracle

ov = pytest.importorskip("openvino")
pytestmark = pytest.mark.openvino

F32 = {"INFERENCE_PRECISION_HINT": "f32"}


def _build(case, shape):
    from openvino import opset1, opset8, opset14, opset16

    p = opset1.parameter(list(shape), ov.Type.f32, name="x")
    op, version, kw = case["op"], case["version"], dict(case["ov"])
    if op == "avg":
        builder = {1: opset1, 14: opset14, 16: opset16}[version].avg_pool
        node = builder(p, kw.pop("strides"), kw.pop("pads_begin"), kw.pop("pads_end"), kw.pop("kernel"), **kw, name="pool")
        return ov.Model([node.output(0)], [p])
    if version == 1:
        node = opset1.max_pool(
            p, kw.pop("strides"), kw.pop("pads_begin"), kw.pop("pads_end"), kw.pop("kernel"), **kw, name="pool"
        )
        return ov.Model([node.output(0)], [p])
    builder = {8: opset8, 14: opset14}[version].max_pool
    node = builder(
        p, kw.pop("strides"), kw.pop("dilations"), kw.pop("pads_begin"), kw.pop("pads_end"), kw.pop("kernel"), **kw, name="pool"
    )
    return ov.Model(list(node.outputs()), [p])


# "oracle": ONNX-style attributes plus the rounding/divisor/index axis the IR layer means.
CASES = {
    "avg1_full_kernel_ceil_overhang": dict(
        op="avg",
        version=1,
        shape=(1, 2, 6, 6),
        ov=dict(strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1], kernel=[3, 3], exclude_pad=False, rounding_type="ceil"),
        oracle=dict(
            attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]},
            rounding="ceil_no_drop",
            divisor="full_if_padded",
        ),
    ),
    "avg14_ceil_torch": dict(
        op="avg",
        version=14,
        shape=(1, 2, 11, 9),
        ov=dict(strides=[2, 2], pads_begin=[1, 0], pads_end=[0, 1], kernel=[3, 3], exclude_pad=True, rounding_type="ceil_torch"),
        oracle=dict(attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 0, 0, 1]}, rounding="ceil", divisor="exclude"),
    ),
    "avg16_same_upper_dilated_full_kernel": dict(
        op="avg",
        version=16,
        shape=(1, 1, 9, 8),
        ov=dict(
            strides=[2, 2],
            pads_begin=[0, 0],
            pads_end=[0, 0],
            kernel=[3, 2],
            exclude_pad=False,
            auto_pad="same_upper",
            dilations=[2, 1],
        ),
        oracle=dict(
            attrs={"kernel_shape": [3, 2], "strides": [2, 2], "dilations": [2, 1], "auto_pad": "SAME_UPPER"},
            divisor="full_if_padded",
        ),
    ),
    "max1_ceil_no_drop": dict(
        op="max",
        version=1,
        shape=(1, 2, 7, 7),
        ov=dict(strides=[2, 2], pads_begin=[1, 1], pads_end=[1, 1], kernel=[3, 3], rounding_type="ceil"),
        oracle=dict(attrs={"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1]}, rounding="ceil_no_drop"),
    ),
    "max8_valid_axis2_i32": dict(
        op="max",
        version=8,
        shape=(2, 3, 7, 6),
        ov=dict(
            strides=[2, 1],
            dilations=[1, 2],
            pads_begin=[0, 0],
            pads_end=[0, 0],
            kernel=[3, 2],
            auto_pad="valid",
            index_element_type="i32",
            axis=-2,
        ),
        oracle=dict(attrs={"kernel_shape": [3, 2], "strides": [2, 1], "dilations": [1, 2]}, index_axis=2),
    ),
    "max8_axis1": dict(
        op="max",
        version=8,
        shape=(2, 3, 5, 5),
        ov=dict(
            strides=[2, 2], dilations=[1, 1], pads_begin=[1, 1], pads_end=[1, 1], kernel=[2, 2], index_element_type="i64", axis=1
        ),
        oracle=dict(attrs={"kernel_shape": [2, 2], "strides": [2, 2], "pads": [1, 1, 1, 1]}, index_axis=1),
    ),
    "max14_ceil_torch_same_lower": dict(
        op="max",
        version=14,
        shape=(1, 2, 8, 7),
        ov=dict(
            strides=[3, 2],
            dilations=[1, 1],
            pads_begin=[0, 0],
            pads_end=[0, 0],
            kernel=[3, 3],
            rounding_type="ceil_torch",
            auto_pad="same_lower",
        ),
        oracle=dict(attrs={"kernel_shape": [3, 3], "strides": [3, 2], "auto_pad": "SAME_LOWER"}, index_axis=0),
    ),
}


@pytest.mark.parametrize("name", CASES)
def test_ir_to_onnx_matches_openvino_and_oracle(tmp_path, name):
    case = CASES[name]
    xml = tmp_path / f"{name}.xml"
    ov.save_model(_build(case, case["shape"]), xml, compress_to_fp16=False)
    assert ovpool.validate(xml) == []
    [onnx_path] = ovpool.convert(xml, tmp_path / f"{name}.onnx")
    x = np.random.default_rng(7).standard_normal(case["shape"]).astype(np.float32)
    ours = list(ovpool.run(onnx_path, {"x": x}).values())
    theirs = list(ov.Core().compile_model(ov.Core().read_model(xml), "CPU", F32)(x).values())
    kind = "avg" if case["op"] == "avg" else "max"
    expected = oracle.pool(x, kind, case["oracle"]["attrs"], **{k: v for k, v in case["oracle"].items() if k != "attrs"})
    expected = [expected] if kind == "avg" else list(expected)
    assert len(ours) == len(theirs)
    for got, want, ref in zip(ours, theirs, expected):
        assert got.shape == want.shape == ref.shape
        assert got.dtype == want.dtype
        np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)
        np.testing.assert_allclose(got, ref, rtol=1e-5, atol=1e-6)


def test_ceil_window_wholly_in_padding_is_refused(tmp_path):
    """L=6, k=2, s=3, ceil: OpenVINO's third window starts at 6 and holds no input cell."""
    from openvino import opset1

    p = opset1.parameter([1, 1, 6, 6], ov.Type.f32, name="x")
    node = opset1.max_pool(p, [3, 3], [0, 0], [0, 0], [2, 2], rounding_type="ceil", name="pool")
    xml = tmp_path / "m.xml"
    ov.save_model(ov.Model([node.output(0)], [p]), xml, compress_to_fp16=False)
    with pytest.raises(UnsupportedError, match=r"layer \d+ 'pool'.*wholly in padding"):
        ovpool.convert(xml, tmp_path / "m.onnx")
    assert not (tmp_path / "m.onnx").exists()


def test_bad_layer_attribute_names_the_layer(tmp_path):
    """A zero stride hand-edited into an ovpool-emitted IR: the error says the layer, not a node."""
    from ovpool.errors import SpecError
    from ovpool.ir.writer import emit_single
    from ovpool.spec import PoolKind, PoolSpec

    files = emit_single(PoolSpec(PoolKind.AVERAGE, (2, 2), (2, 2), name="pool"), (1, 1, 4, 4))
    (tmp_path / "m.xml").write_bytes(
        files[".xml"].replace(b'strides="2, 2"', b'strides="0, 2"').replace(b'strides="2,2"', b'strides="0,2"')
    )
    (tmp_path / "m.bin").write_bytes(files[".bin"])
    with pytest.raises(SpecError, match=r"m\.xml: layer 1 'pool' \(AvgPool opset1\): attribute 'strides'"):
        ovpool.convert(tmp_path / "m.xml", tmp_path / "m.onnx")


def test_other_layer_types_are_listed(tmp_path):
    from openvino import opset1

    p = opset1.parameter([1, 1, 6, 6], ov.Type.f32, name="x")
    pooled = opset1.max_pool(opset1.relu(p, name="r1"), [2, 2], [0, 0], [0, 0], [2, 2], name="pool")
    xml = tmp_path / "m.xml"
    ov.save_model(ov.Model([opset1.sigmoid(pooled, name="s1").output(0)], [p]), xml, compress_to_fp16=False)
    with pytest.raises(UnsupportedError, match=r"'r1' \(ReLU opset1\).*'s1' \(Sigmoid opset1\)"):
        ovpool.convert(xml, tmp_path / "m.onnx")


def test_ovpool_pad_lowering_round_trips(tmp_path):
    """The exact include-pad + ceil lowering (zero Pad, then exclude-pad pool) emitted by ovpool's
    IR writer converts back and equals the ONNX count_include_pad=1, ceil_mode=1 oracle."""
    spec = ovpool.PoolSpec(ovpool.PoolKind.AVERAGE, (3, 3), (2, 2), rounding=ovpool.Rounding.CEIL, name="pool")
    graph = IRGraph("lowered")
    x = graph.parameter("x", (1, 2, 4, 5))
    (y,) = graph.pool(spec, graph.pad(x, (0, 0, 1, 1), (0, 0, 1, 1)))
    graph.result(y, "y")
    files = graph.render()
    (tmp_path / "m.xml").write_bytes(files[".xml"])
    (tmp_path / "m.bin").write_bytes(files[".bin"])
    [onnx_path] = ovpool.convert(tmp_path / "m.xml", tmp_path / "m.onnx")
    data = np.random.default_rng(3).standard_normal((1, 2, 4, 5)).astype(np.float32)
    got = ovpool.run(onnx_path, {"x": data})["y"]
    want = oracle.pool(
        data, "avg", {"kernel_shape": [3, 3], "strides": [2, 2], "pads": [1, 1, 1, 1], "ceil_mode": 1, "count_include_pad": 1}
    )
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_ovpool_onnx_to_ir_output_validates_and_converts_back(tmp_path):
    """ONNX -> IR (ovpool's lowering: Pad + AvgPool for include-pad with ceil, MaxPool-14 ceil_torch)
    -> ONNX again: the IR validates clean (also against OpenVINO) and both ONNX models agree."""
    import onnx
    from onnx import TensorProto, helper

    nodes = [
        helper.make_node("MaxPool", ["x"], ["m"], name="mp", kernel_shape=[3, 3], strides=[2, 2], pads=[1, 1, 1, 1], ceil_mode=1),
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
    graph = helper.make_graph(
        nodes,
        "g",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 2, 9, 8])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
    )
    source = tmp_path / "pools.onnx"
    onnx.save(helper.make_model(graph, opset_imports=[helper.make_opsetid("", 19)], ir_version=9), source)
    [xml, _] = ovpool.convert(source, tmp_path / "pools.xml")
    assert ovpool.validate(xml, strict=True) == []
    [back] = ovpool.convert(xml, tmp_path / "back.onnx")
    x = np.random.default_rng(5).standard_normal((1, 2, 9, 8)).astype(np.float32)
    want = ovpool.run(source, {"x": x})["y"]
    [got] = ovpool.run(back, {"x": x}).values()
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_every_onnx_file_it_writes_passes_onnx_s_full_check(tmp_path, recwarn):
    """OpenVINO's own AvgPool-1 example declares 32x32 where ``same_upper`` with stride 2 gives
    16x16: the ONNX output declares 16x16 (ONNX's checker refuses the other) and a warning says so."""
    import onnx

    from ovpool.ir.to_onnx import DeclaredShapeWarning

    out = tmp_path / "s.onnx"
    ovpool.convert(ovpool.examples.path("spec_example1.xml"), out)
    model = onnx.load(str(out))
    onnx.checker.check_model(model, full_check=True)
    assert [d.dim_value for d in model.graph.output[0].type.tensor_type.shape.dim] == [1, 3, 16, 16]
    [warning] = [w for w in recwarn if w.category is DeclaredShapeWarning]
    assert "layer 2 'y' (Result) declares [1, 3, 32, 32]; its layers give [1, 3, 16, 16]" in str(warning.message)


def _edited_ir(tmp_path, old: str, new: str):
    from openvino import opset1

    p = opset1.parameter([1, 2, 9, 9], ov.Type.f32, name="x")
    pool = opset1.max_pool(p, [1, 1], [0, 0], [0, 0], [3, 3], name="pool")
    xml = tmp_path / "m.xml"
    ov.save_model(ov.Model([pool.output(0)], [p]), str(xml))
    text = xml.read_text()
    assert old in text
    xml.write_text(text.replace(old, new, 1))
    return xml


@pytest.mark.parametrize(
    ("old", "new", "message"),
    [
        (
            'kernel="3, 3"',
            'kernel="30, 3"',
            "'pool' (MaxPool opset1): attribute 'kernel_shape' = [30, 3]: axis 0: input length 9",
        ),
        ('element_type="f32"', 'element_type="boolean"', "IR -> ONNX makes a graph that ONNX refuses: [ShapeInferenceError]"),
        ('kernel="3, 3"', 'kernel="3_0, 3"', "attribute 'kernel' = '3_0, 3': must be a comma-separated list of integers"),
    ],
)
def test_an_ir_whose_onnx_form_onnx_would_refuse_is_refused(tmp_path, old, new, message):
    """A kernel longer than the input, a Parameter whose element type is not its port's, and
    ``3_0`` (Python's int reads 30, OpenVINO 3): one error naming the file, nothing written."""
    from ovpool.errors import OvpoolError

    xml = _edited_ir(tmp_path, old, new)
    with pytest.raises(OvpoolError) as raised:
        ovpool.convert(xml, tmp_path / "m.onnx")
    assert str(raised.value).startswith(f"{xml}:") and message in str(raised.value)
    assert not (tmp_path / "m.onnx").exists()
