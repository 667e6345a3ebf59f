"""IR templates and the IR adapter: every layer OpenVINO writes parses to the right PoolSpec, every
layer ovpool emits reads back in OpenVINO with the same attributes and dims, and OpenVINO's
exclude-pad="false" divisor is what Divisor.FULL_KERNEL_IF_PADDED says."""

from __future__ import annotations

import numpy as np
import pytest

from ovpool import kernels, shape
from ovpool.errors import SpecError, UnsupportedError
from ovpool.ir.adapter import layer_from_spec, spec_from_layer, template_for
from ovpool.ir.reader import read_ir
from ovpool.ir.templates import template_at, templates
from ovpool.ir.writer import emit_single
from ovpool.spec import Divisor, Indices, Padding, PoolKind, PoolSpec, Rounding
from tests import oracle

A, M = PoolKind.AVERAGE, PoolKind.MAX


def test_templates_cover_every_opset_once():
    assert [(t.type, t.version, t.since, t.until) for t in templates()] == [
        ("AvgPool", "opset1", 1, 13),
        ("AvgPool", "opset14", 14, 15),
        ("AvgPool", "opset16", 16, 16),
        ("MaxPool", "opset1", 1, 7),
        ("MaxPool", "opset8", 8, 13),
        ("MaxPool", "opset14", 14, 16),
    ]
    assert template_at("AvgPool", 15).label == "AvgPool-14"
    with pytest.raises(UnsupportedError, match="known: 1-13, 14-15, 16"):
        template_for("AvgPool", "opset17")


def test_bad_layer_raises_spec_error_naming_layer_and_attribute():
    with pytest.raises(SpecError, match=r"node 'p1': attribute 'rounding_type' = 'ceil_torch'.*AvgPool-14 has it"):
        spec_from_layer(
            template_for("AvgPool", "opset1"),
            {
                "kernel": "2,2",
                "strides": "1,1",
                "pads_begin": "0,0",
                "pads_end": "0,0",
                "exclude-pad": "true",
                "rounding_type": "ceil_torch",
            },
            name="p1",
        )


def test_oldest_version_that_expresses_a_spec():
    cases = [
        (PoolSpec(A, (3, 3), (2, 2)), "opset1"),
        (PoolSpec(A, (3, 3), (2, 2), rounding=Rounding.CEIL), "opset14"),
        (PoolSpec(A, (3, 3), (2, 2), dilations=(2, 1)), "opset16"),
        (PoolSpec(M, (3, 3), rounding=Rounding.CEIL_NO_DROP), "opset1"),
        (PoolSpec(M, (3, 3), dilations=(1, 2)), "opset8"),
        (PoolSpec(M, (3, 3), indices=Indices()), "opset8"),
        (PoolSpec(M, (3, 3), rounding=Rounding.CEIL, indices=Indices(axis=2, dtype="int32")), "opset14"),
    ]
    assert [layer_from_spec(spec).version for spec, _ in cases] == [v for _, v in cases]
    include_ceil = PoolSpec(A, (3,), (2,), pads_begin=(1,), pads_end=(1,), rounding=Rounding.CEIL, divisor=Divisor.INCLUDE_PAD)
    assert layer_from_spec(include_ceil, spatial=(5,)).data["exclude-pad"] == "false"  # no overhang on 5
    with pytest.raises(UnsupportedError, match="overhang"):
        layer_from_spec(include_ceil, spatial=(4,))  # 4: the last window reaches past the end pad
    with pytest.raises(UnsupportedError, match="no IR pooling layer"):
        layer_from_spec(PoolSpec(PoolKind.GLOBAL_MAX))


ov = pytest.importorskip("openvino")


def _saved_layers(tmp_path):
    """Every pooling builder of OpenVINO's Python opsets, saved as IR by OpenVINO itself."""
    from openvino import opset1, opset8, opset14, opset16

    p = opset1.parameter([1, 3, 11, 9], ov.Type.f32, name="x")
    built = [
        opset1.avg_pool(p, [2, 2], [1, 1], [0, 1], [3, 3], exclude_pad=False, rounding_type="ceil", name="ap1"),
        opset14.avg_pool(p, [2, 2], [1, 1], [0, 1], [3, 3], exclude_pad=True, rounding_type="ceil_torch", name="ap14"),
        opset16.avg_pool(
            p, [2, 1], [0, 0], [0, 0], [3, 3], exclude_pad=False, auto_pad="same_upper", dilations=[2, 1], name="ap16"
        ),
        opset1.max_pool(p, [2, 2], [1, 1], [1, 1], [3, 3], rounding_type="ceil", auto_pad="same_lower", name="mp1"),
        opset8.max_pool(
            p, [2, 1], [1, 2], [1, 1], [1, 1], [3, 2], auto_pad="valid", index_element_type="i32", axis=-2, name="mp8"
        ),
        opset14.max_pool(p, [2, 2], [1, 1], [1, 1], [0, 0], [3, 3], rounding_type="ceil_torch", name="mp14"),
    ]
    outputs = [o for node in built for o in node.outputs()]
    path = tmp_path / "all.xml"
    ov.save_model(ov.Model(outputs, [p]), path, compress_to_fp16=False)
    doc = read_ir(path)
    return {layer.name: layer for layer in doc.layers.values() if layer.type in ("AvgPool", "MaxPool")}


def test_every_layer_openvino_writes_parses_through_the_templates(tmp_path):
    layers = _saved_layers(tmp_path)
    expected = {
        "ap1": PoolSpec(
            A,
            (3, 3),
            (2, 2),
            pads_begin=(1, 1),
            pads_end=(0, 1),
            rounding=Rounding.CEIL_NO_DROP,
            divisor=Divisor.FULL_KERNEL_IF_PADDED,
        ),
        "ap14": PoolSpec(
            A, (3, 3), (2, 2), pads_begin=(1, 1), pads_end=(0, 1), rounding=Rounding.CEIL, divisor=Divisor.EXCLUDE_PAD
        ),
        "ap16": PoolSpec(A, (3, 3), (2, 1), dilations=(2, 1), padding=Padding.SAME_UPPER, divisor=Divisor.FULL_KERNEL_IF_PADDED),
        "mp1": PoolSpec(M, (3, 3), (2, 2), padding=Padding.SAME_LOWER, rounding=Rounding.CEIL_NO_DROP),
        "mp8": PoolSpec(M, (3, 2), (2, 1), dilations=(1, 2), padding=Padding.VALID, indices=Indices(axis=2, dtype="int32")),
        "mp14": PoolSpec(M, (3, 3), (2, 2), pads_begin=(1, 1), rounding=Rounding.CEIL, indices=Indices(axis=0, dtype="int64")),
    }
    assert {l.version for l in layers.values()} == {"opset1", "opset8", "opset14", "opset16"}
    for name, layer in layers.items():
        spec = spec_from_layer(template_for(layer.type, layer.version), layer.data, 4, name=name)
        assert spec == expected[name], name


SPECS = [
    PoolSpec(
        A,
        (3, 3),
        (2, 2),
        pads_begin=(1, 0),
        pads_end=(1, 1),
        rounding=Rounding.CEIL_NO_DROP,
        divisor=Divisor.FULL_KERNEL_IF_PADDED,
    ),
    PoolSpec(A, (3, 2), (2, 2), pads_begin=(1, 1), pads_end=(0, 1), rounding=Rounding.CEIL),
    PoolSpec(A, (2, 3), (1, 2), dilations=(2, 2), padding=Padding.SAME_LOWER, divisor=Divisor.FULL_KERNEL_IF_PADDED),
    PoolSpec(M, (3, 3), (2, 2), pads_begin=(1, 1), pads_end=(1, 1), rounding=Rounding.CEIL_NO_DROP),
    PoolSpec(M, (3, 2), (2, 1), dilations=(1, 2), padding=Padding.VALID, indices=Indices(axis=2, dtype="int32")),
    PoolSpec(M, (2, 2), (2, 2), pads_begin=(1, 1), rounding=Rounding.CEIL, indices=Indices(axis=1)),
    PoolSpec(M, (3,), (2,), pads_end=(1,), rounding=Rounding.CEIL),
    PoolSpec(A, (2, 2, 2), (2, 1, 2), padding=Padding.SAME_UPPER),
]


@pytest.mark.parametrize("spec", SPECS, ids=lambda s: f"{s.kind.value}{len(s.kernel)}d-{s.rounding.value}-{s.padding.value}")
def test_emitted_ir_reads_back_in_openvino_identically(spec):
    input_shape = (1, 2) + (9, 8, 7)[: len(spec.kernel)]
    files = emit_single(spec.with_(name="pool"), input_shape)
    weights = ov.Tensor(np.frombuffer(files[".bin"], np.uint8)) if files[".bin"] else ov.Tensor(np.empty(0, np.uint8))
    model = ov.Core().read_model(files[".xml"], weights)
    [op] = [o for o in model.get_ops() if o.get_friendly_name() == "pool"]
    doc = read_ir(files[".xml"], "emitted.xml")
    [layer] = [l for l in doc.layers.values() if l.name == "pool"]
    assert op.get_type_info().version_id == layer.version
    ours = {k: v.replace(" ", "") for k, v in layer.data.items()}
    if spec.padding in (Padding.SAME_UPPER, Padding.SAME_LOWER):  # OpenVINO reports the pads it resolved
        begin, end = shape.resolved_pads(spec, input_shape[2:])
        ours.update(pads_begin=",".join(map(str, begin)), pads_end=",".join(map(str, end)))
    theirs = {k: (",".join(str(x) for x in v) if isinstance(v, list) else str(v).lower()) for k, v in op.get_attributes().items()}
    assert ours == theirs
    for index, port in enumerate(layer.outputs):
        assert str(op.get_output_partial_shape(index)) == "[" + ",".join(port.dims) + "]"
    assert spec_from_layer(
        template_for(layer.type, layer.version), layer.data, len(input_shape), with_indices=spec.indices is not None
    ) == shape.simplest_form(spec, input_shape[2:])  # the emitter writes the simplest form of the same windows


@pytest.mark.openvino
@pytest.mark.parametrize(
    "pads_begin, pads_end, rounding",
    [((1, 0), (0, 0), "ceil"), ((0, 0), (0, 1), "ceil_torch"), ((0, 0), (0, 0), "ceil"), ((1, 1), (1, 1), "floor")],
)
def test_openvino_exclude_pad_false_divisor_is_full_kernel_if_padded(pads_begin, pads_end, rounding):
    """Measured on CPU at f32: with any pad (even on another axis) OpenVINO divides by the whole
    kernel, ceil overhang included; with no pads it counts the taps inside the input."""
    from openvino import opset1, opset14

    x = np.random.default_rng(1).standard_normal((1, 2, 5, 6)).astype(np.float32)
    p = opset1.parameter(list(x.shape), ov.Type.f32)
    node = opset14.avg_pool(p, [2, 2], pads_begin, pads_end, [3, 2], exclude_pad=False, rounding_type=rounding)
    got = ov.Core().compile_model(ov.Model([node], [p]), "CPU", {"INFERENCE_PRECISION_HINT": "f32"})(x)[0]
    ir_layer = {
        "kernel": "3,2",
        "strides": "2,2",
        "pads_begin": ",".join(map(str, pads_begin)),
        "pads_end": ",".join(map(str, pads_end)),
        "exclude-pad": "false",
        "rounding_type": rounding,
    }
    spec = spec_from_layer(template_for("AvgPool", "opset14"), ir_layer, 4)
    assert spec.divisor is Divisor.FULL_KERNEL_IF_PADDED
    np.testing.assert_allclose(kernels.pool(x, spec), got, rtol=1e-5, atol=1e-6)
    attrs = {"kernel_shape": [3, 2], "strides": [2, 2], "pads": list(pads_begin + pads_end)}
    naive = oracle.pool(
        x,
        "avg",
        attrs,
        rounding={"ceil": "ceil_no_drop", "ceil_torch": "ceil", "floor": "floor"}[rounding],
        divisor="full_if_padded",
    )
    np.testing.assert_allclose(naive, got, rtol=1e-5, atol=1e-6)
