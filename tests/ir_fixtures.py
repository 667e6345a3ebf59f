"""Hand-written IR documents for tests: one pooling layer between a Parameter and Result(s)."""

from __future__ import annotations

from pathlib import Path


def dims_xml(dims) -> str:
    return "".join(f"<dim>{d}</dim>" for d in dims)


def pool_ir(
    data: str,
    input_dims,
    output_dims,
    layer_type: str = "AvgPool",
    version: str = "opset1",
    outputs: int = 1,
    index_precision: str = "I64",
    result_dims=None,
    parameter_shape: str | None = None,
) -> str:
    """IR v11: Parameter (id 0) -> pooling layer (id 1, name "pool", ``<data {data}/>``) -> Result(s).
    ``result_dims`` overrides the dims of the first Result's input port (edge mismatches);
    ``parameter_shape`` the Parameter's ``shape`` attribute (where OpenVINO keeps ranges: its ports
    hold only ints and -1)."""
    out_ports = f'<port id="1" precision="FP32">{dims_xml(output_dims)}</port>'
    if outputs > 1:
        out_ports += f'<port id="2" precision="{index_precision}">{dims_xml(output_dims)}</port>'
    results = f"""<layer id="2" name="out" type="Result" version="opset1">
      <input><port id="0" precision="FP32">{dims_xml(result_dims or output_dims)}</port></input></layer>"""
    edges = '<edge from-layer="0" from-port="0" to-layer="1" to-port="0"/><edge from-layer="1" from-port="1" to-layer="2" to-port="0"/>'
    shape = parameter_shape or ",".join(str(d) for d in input_dims)
    return f"""<?xml version="1.0"?>
<net name="t" version="11">
  <layers>
    <layer id="0" name="x" type="Parameter" version="opset1">
      <data shape="{shape}" element_type="f32"/>
      <output><port id="0" precision="FP32" names="x">{dims_xml(input_dims)}</port></output>
    </layer>
    <layer id="1" name="pool" type="{layer_type}" version="{version}">
      <data {data}/>
      <input><port id="0" precision="FP32">{dims_xml(input_dims)}</port></input>
      <output>{out_ports}</output>
    </layer>
    {results}
  </layers>
  <edges>{edges}</edges>
</net>
"""


def write(tmp_path: Path, text: str, name: str = "model.xml") -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path
