"""Rebuild the bundled example models: ``python -m ovpool.examples.make_examples``.

``tiny_pool.onnx`` (opset 13) is a small image model whose pooling is exactly where stock runtimes
disagree: MaxPool 3x3 s2 p1 with ceil_mode=1 and its indices, then AveragePool 3x3 s2 p1 with
ceil_mode=1 and count_include_pad=1, then GlobalAveragePool.

``tiny_qdq.onnx`` (opset 13) is a model quantized as onnxruntime's quantizer writes it, uint8:
the input quantized at zero point 100, ``DequantizeLinear -> AveragePool 3x3 s1 p1
(count_include_pad=1) -> QuantizeLinear`` (the include-pad average OpenVINO's INT8 execution pads
with integer 0 instead of the zero point), then a Conv with int8 weights and its QuantizeLinear.

The two IRs are what ``ovpool validate`` finds (the README's example), each a Parameter, one
AvgPool layer (line 8) and a Result:

* ``spec_example1.xml``: the first ``<layer>`` example of OpenVINO's AvgPool-1 specification,
  ``same_upper``, kernel 2, stride 2 on 32x32, declaring a 32x32 output where the rules give
  ceil(32 / 2) = 16 (OVP201);
* ``trap.xml``: an AvgPool-14 with ``dilations="2,2"``, an attribute only AvgPool-16 has; OpenVINO
  reads the file and pools undilated (6x6 input, kernel 2: 5x5, where dilation 2 gives 4x4) (OVP102).
"""

from __future__ import annotations

from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper


def tiny_pool() -> onnx.ModelProto:
    rng = np.random.default_rng(0)
    weights = numpy_helper.from_array(rng.standard_normal((4, 3, 3, 3)).astype(np.float32) * 0.2, "conv_w")
    nodes = [
        helper.make_node("Conv", ["input", "conv_w"], ["conv"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("Relu", ["conv"], ["relu"], name="relu1"),
        helper.make_node(
            "MaxPool",
            ["relu"],
            ["pool1", "pool1_indices"],
            name="pool1",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            ceil_mode=1,
        ),
        helper.make_node(
            "AveragePool",
            ["pool1"],
            ["pool2"],
            name="pool2",
            kernel_shape=[3, 3],
            strides=[2, 2],
            pads=[1, 1, 1, 1],
            ceil_mode=1,
            count_include_pad=1,
        ),
        helper.make_node("GlobalAveragePool", ["pool2"], ["output"], name="gap"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_pool",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 14, 14])],
        [
            helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4, 1, 1]),
            helper.make_tensor_value_info("pool1_indices", TensorProto.INT64, [1, 4, 8, 8]),
        ],
        [weights],
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ovpool", ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def tiny_qdq() -> onnx.ModelProto:
    rng = np.random.default_rng(1)
    weights = np.clip(np.rint(rng.standard_normal((4, 3, 3, 3)) * 40), -127, 127).astype(np.int8)
    constants = [
        numpy_helper.from_array(weights, "conv_wq"),
        numpy_helper.from_array(np.array(0.005, np.float32), "w_scale"),
        numpy_helper.from_array(np.array(0, np.int8), "w_zero"),
        numpy_helper.from_array(np.array(0.02, np.float32), "x_scale"),
        numpy_helper.from_array(np.array(100, np.uint8), "x_zero"),
        numpy_helper.from_array(np.array(0.05, np.float32), "a_scale"),
        numpy_helper.from_array(np.array(128, np.uint8), "a_zero"),
    ]
    nodes = [
        helper.make_node("QuantizeLinear", ["input", "x_scale", "x_zero"], ["input_q"], name="input_quantize"),
        helper.make_node("DequantizeLinear", ["input_q", "x_scale", "x_zero"], ["input_dq"], name="input_dequantize"),
        helper.make_node(
            "AveragePool", ["input_dq"], ["pool"], name="pool", kernel_shape=[3, 3], pads=[1, 1, 1, 1], count_include_pad=1
        ),
        helper.make_node("QuantizeLinear", ["pool", "x_scale", "x_zero"], ["pool_q"], name="pool_quantize"),
        helper.make_node("DequantizeLinear", ["pool_q", "x_scale", "x_zero"], ["pool_dq"], name="pool_dequantize"),
        helper.make_node("DequantizeLinear", ["conv_wq", "w_scale", "w_zero"], ["conv_w"], name="weights_dequantize"),
        helper.make_node("Conv", ["pool_dq", "conv_w"], ["conv"], name="conv1", kernel_shape=[3, 3], pads=[1, 1, 1, 1]),
        helper.make_node("QuantizeLinear", ["conv", "a_scale", "a_zero"], ["conv_q"], name="conv_quantize"),
        helper.make_node("DequantizeLinear", ["conv_q", "a_scale", "a_zero"], ["output"], name="output_dequantize"),
    ]
    graph = helper.make_graph(
        nodes,
        "tiny_qdq",
        [helper.make_tensor_value_info("input", TensorProto.FLOAT, [1, 3, 14, 14])],
        [helper.make_tensor_value_info("output", TensorProto.FLOAT, [1, 4, 14, 14])],
        constants,
    )
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], producer_name="ovpool", ir_version=8)
    onnx.checker.check_model(model, full_check=True)
    return model


def pool_ir(version: str, data: str, input_dims: tuple[int, ...], output_dims: tuple[int, ...]) -> str:
    """IR v11: Parameter ``x`` -> AvgPool ``pool`` (``<data {data}/>``, on line 8) -> Result."""

    def dims(values: tuple[int, ...]) -> str:
        return "".join(f"<dim>{d}</dim>" for d in values)

    return f"""<?xml version="1.0"?>
<net name="example" version="11">
	<layers>
		<layer id="0" name="x" type="Parameter" version="opset1">
			<data shape="{",".join(map(str, input_dims))}" element_type="f32"/>
			<output><port id="0" precision="FP32" names="x">{dims(input_dims)}</port></output>
		</layer>
		<layer id="1" name="pool" type="AvgPool" version="{version}">
			<data {data}/>
			<input><port id="0" precision="FP32">{dims(input_dims)}</port></input>
			<output><port id="1" precision="FP32" names="y">{dims(output_dims)}</port></output>
		</layer>
		<layer id="2" name="y" type="Result" version="opset1">
			<input><port id="0" precision="FP32">{dims(output_dims)}</port></input>
		</layer>
	</layers>
	<edges>
		<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
		<edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>
	</edges>
</net>
"""


def spec_example1() -> str:
    data = 'auto_pad="same_upper" exclude-pad="true" kernel="2,2" pads_begin="0,0" pads_end="1,1" strides="2,2"'
    return pool_ir("opset1", data, (1, 3, 32, 32), (1, 3, 32, 32))


def trap() -> str:
    data = 'kernel="2,2" strides="1,1" pads_begin="0,0" pads_end="0,0" exclude-pad="true" dilations="2,2"'
    return pool_ir("opset14", data, (1, 1, 6, 6), (1, 1, 4, 4))


if __name__ == "__main__":
    here = Path(__file__).parent
    onnx.save(tiny_pool(), here / "tiny_pool.onnx")
    onnx.save(tiny_qdq(), here / "tiny_qdq.onnx")
    (here / "spec_example1.xml").write_text(spec_example1())
    (here / "trap.xml").write_text(trap())
