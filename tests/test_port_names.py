"""The tensor behind an IR port has one name everywhere: IR -> ONNX, IR -> DirectML, ``run`` on
numpy and on OpenVINO (the smallest of the port's names, else the layer's name, ``layer:port``
for a second output)."""

from __future__ import annotations

import json

import numpy as np
import onnx
import pytest
from ir_fixtures import dims_xml, write

import ovpool
from ovpool.names import FreshNames, port_tensor_name

DIMS_IN, DIMS_OUT = (1, 2, 4, 4), (1, 2, 2, 2)
IR = f"""<?xml version="1.0"?>
<net name="t" version="11">
  <layers>
    <layer id="0" name="x" type="Parameter" version="opset1">
      <data shape="1,2,4,4" element_type="f32"/>
      <output><port id="0" precision="FP32" names="x">{dims_xml(DIMS_IN)}</port></output>
    </layer>
    <layer id="1" name="pool" type="MaxPool" version="opset8">
      <data strides="2,2" dilations="1,1" pads_begin="0,0" pads_end="0,0" kernel="2,2" rounding_type="floor"
            auto_pad="explicit" index_element_type="i64" axis="0"/>
      <input><port id="0" precision="FP32">{dims_xml(DIMS_IN)}</port></input>
      <output><port id="1" precision="FP32" names="zeta,alpha">{dims_xml(DIMS_OUT)}</port>
              <port id="2" precision="I64">{dims_xml(DIMS_OUT)}</port></output>
    </layer>
    <layer id="2" name="r0" type="Result" version="opset1"><input><port id="0" precision="FP32">{dims_xml(DIMS_OUT)}</port></input></layer>
    <layer id="3" name="r1" type="Result" version="opset1"><input><port id="0" precision="I64">{dims_xml(DIMS_OUT)}</port></input></layer>
  </layers>
  <edges><edge from-layer="0" from-port="0" to-layer="1" to-port="0"/>
         <edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>
         <edge from-layer="1" from-port="2" to-layer="3" to-port="0"/></edges>
</net>
"""
EXPECTED = ["alpha", "pool:2"]


def test_the_rule() -> None:
    assert port_tensor_name("zeta, alpha,mid", "pool", "1", True) == "alpha"
    assert port_tensor_name("", "pool", "1", True) == "pool"
    assert port_tensor_name([], "pool", "2", False) == "pool:2"
    # a name an input also holds, only when the port has no other (the identity of y = Dropout(x))
    assert port_tensor_name("x,y", "id", "1", True, {"x"}) == "y"
    assert port_tensor_name("x", "x", "0", True, {"x"}) == "x"
    names = FreshNames(["a", "a_1"])
    assert [names.fresh("a"), names.fresh("a"), names.fresh("b")] == ["a_2", "a_3", "b"]


def test_every_world_names_the_ports_alike(tmp_path) -> None:
    xml = write(tmp_path, IR)
    onnx_path, dml_path = tmp_path / "m.onnx", tmp_path / "m.json"
    ovpool.convert(xml, onnx_path, to="onnx")
    assert [o.name for o in onnx.load(str(onnx_path)).graph.output] == EXPECTED
    ovpool.convert(xml, dml_path, to="dml")
    (operator,) = json.loads(dml_path.read_text())["operators"]
    assert operator["outputs"] == EXPECTED
    x = np.random.default_rng(0).standard_normal(DIMS_IN).astype(np.float32)
    on_numpy = ovpool.run(xml, {"x": x}, device="numpy")
    assert list(on_numpy) == EXPECTED
    pytest.importorskip("openvino")
    on_cpu = ovpool.run(xml, {"x": x}, device="CPU", fallback=False, cache=False)
    assert list(on_cpu) == EXPECTED
    np.testing.assert_array_equal(on_cpu["alpha"], on_numpy["alpha"])
