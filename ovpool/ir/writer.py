"""Writing OpenVINO IR v11 (``.xml`` + ``.bin``) from PoolSpecs, without OpenVINO.

Pooling layers are rendered from the ``ir_templates`` (``ovpool.ir.adapter.layer_from_spec`` picks the
oldest version that says the spec); output dims come from the shape engine. Two forms:

``emit_single(spec, input_shape, dtype)`` -> ``{".xml": bytes, ".bin": bytes}``: Parameter -> pool ->
Result (a MaxPool with indices gets a second Result).

``IRGraph`` for anything longer (DirectML -> IR builds one per file)::

    g = IRGraph("model")
    x = g.parameter("x", (1, 3, 8, 8), "float32")
    p = g.pad(x, (0, 0, 1, 1), (0, 0, 1, 1))         # Pad-12 with zero constants
    y, = g.pool(spec, p)                               # (values,) or (values, indices)
    g.result(y, "y")
    files = g.render()                                 # {".xml": ..., ".bin": ...}

Each ``Output`` handle carries its dims and dtype, so a layer's input port repeats the producer's
output port exactly (as ``ovpool validate`` checks). Dims of None are written ``-1``.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass, field

import numpy as np
from lxml import etree

from ovpool import dtypes, shape
from ovpool.ir.adapter import layer_from_spec
from ovpool.spec import PoolSpec


@dataclass(frozen=True)
class Output:
    """One output port of an emitted layer: its layer id, port id, dims and dtype."""

    layer: int
    port: int
    dims: tuple[int | None, ...]
    dtype: str


@dataclass
class _Layer:
    id: int
    name: str
    type: str
    version: str
    data: dict[str, str]
    inputs: list[Output]
    outputs: list[Output]
    output_names: list[str] = field(default_factory=list)


class IRGraph:
    """An IR being built: layers in order, their edges and the constants' ``.bin``."""

    def __init__(self, name: str = "model") -> None:
        self.name = name
        self._layers: list[_Layer] = []
        self._weights = bytearray()

    def parameter(self, name: str, dims: Sequence[int | None], dtype: str = "float32") -> Output:
        """A model input named ``name``."""
        shape_text = ",".join("?" if d is None else str(d) for d in dims)
        layer = self._add(name, "Parameter", "opset1", {"shape": shape_text, "element_type": _element(dtype)}, [])
        return self._output(layer, tuple(dims), dtype, name)

    def constant(self, name: str, value: np.ndarray) -> Output:
        """A Const layer whose bytes go to the ``.bin`` (offsets 8-byte aligned)."""
        value = np.asarray(value)
        dtype = value.dtype.name
        self._weights.extend(b"\0" * (-len(self._weights) % 8))
        offset = len(self._weights)
        self._weights.extend(value.tobytes())
        data = {
            "element_type": _element(dtype),
            "shape": ",".join(str(d) for d in value.shape),
            "offset": str(offset),
            "size": str(value.nbytes),
        }
        layer = self._add(name, "Const", "opset1", data, [])
        return self._output(layer, tuple(value.shape), dtype, name)

    def pad(self, x: Output, pads_begin: Sequence[int], pads_end: Sequence[int], value: float = 0.0, name: str = "") -> Output:
        """Pad-12 in constant mode with ``value`` (all dims of ``x``, begin and end per axis)."""
        name = name or f"pad{len(self._layers)}"
        begin = self.constant(f"{name}/pads_begin", np.asarray(pads_begin, dtype=np.int64))
        end = self.constant(f"{name}/pads_end", np.asarray(pads_end, dtype=np.int64))
        fill = self.constant(f"{name}/value", np.asarray(value, dtype=np.dtype(x.dtype)))
        dims = shape.padded_shape(x.dims, pads_begin, pads_end)
        layer = self._add(name, "Pad", "opset12", {"pad_mode": "constant"}, [x, begin, end, fill])
        return self._output(layer, dims, x.dtype, name)

    def pool(self, spec: PoolSpec, x: Output, min_opset: int = 1) -> tuple[Output, ...]:
        """A pooling layer for ``spec`` on ``x``: (values,) or (values, indices) for MaxPool-8/14.

        Its version is the oldest that says the spec (``ovpool.ir.adapter.layer_from_spec``); its dims are
        ``shape.output_shape`` (dynamic spatial dims stay dynamic)."""
        if any(d is None for d in x.dims[2:]):
            spatial = None
        else:
            spatial = tuple(int(d) for d in x.dims[2:])  # type: ignore[arg-type]
        ir = layer_from_spec(spec, spatial, min_opset)
        name = spec.name or f"pool{len(self._layers)}"
        layer = self._add(name, ir.type, ir.version, ir.data, [x])
        dims = shape.output_shape(spec, x.dims)
        outputs = [self._output(layer, dims, x.dtype, name)]
        if len(ir.template.outputs) > 1:
            index_dtype = spec.indices.dtype if spec.indices is not None else "int64"
            outputs.append(self._output(layer, dims, index_dtype, f"{name}/indices"))
        return tuple(outputs)

    def result(self, x: Output, name: str) -> None:
        """A model output; ``name`` becomes the producer port's tensor name."""
        producer = self._layers[x.layer]
        producer.output_names[x.port - len(producer.inputs)] = name
        self._add(f"{name}/sink", "Result", "opset1", {}, [x])

    def render(self) -> dict[str, bytes]:
        """``{".xml": ..., ".bin": ...}`` in IR v11."""
        net = etree.Element("net", name=self.name, version="11")
        layers = etree.SubElement(net, "layers")
        edges = etree.SubElement(net, "edges")
        for layer in self._layers:
            node = etree.SubElement(layers, "layer", id=str(layer.id), name=layer.name, type=layer.type, version=layer.version)
            if layer.data:
                etree.SubElement(node, "data", layer.data)
            if layer.inputs:
                ports = etree.SubElement(node, "input")
                for index, source in enumerate(layer.inputs):
                    _port(ports, index, source)
                    etree.SubElement(
                        edges,
                        "edge",
                        {
                            "from-layer": str(source.layer),
                            "from-port": str(source.port),
                            "to-layer": str(layer.id),
                            "to-port": str(index),
                        },
                    )
            if layer.outputs:
                ports = etree.SubElement(node, "output")
                for out, names in zip(layer.outputs, layer.output_names):
                    _port(ports, out.port, out, names)
        xml = etree.tostring(net, pretty_print=True, xml_declaration=True, encoding="UTF-8")
        return {".xml": xml, ".bin": bytes(self._weights)}

    def _add(self, name: str, type_: str, version: str, data: dict[str, str], inputs: list[Output]) -> _Layer:
        layer = _Layer(len(self._layers), name, type_, version, dict(data), list(inputs), [])
        self._layers.append(layer)
        return layer

    def _output(self, layer: _Layer, dims: Sequence[int | None], dtype: str, tensor_name: str) -> Output:
        out = Output(layer.id, len(layer.inputs) + len(layer.outputs), tuple(dims), dtype)
        layer.outputs.append(out)
        layer.output_names.append(tensor_name)
        return out


def emit_single(
    spec: PoolSpec, input_shape: Sequence[int | None], dtype: str = "float32", min_opset: int = 1
) -> dict[str, bytes]:
    """Parameter ``x`` -> the pooling layer -> Result ``y`` (and ``indices`` for a MaxPool with indices)."""
    graph = IRGraph(spec.name or "pool")
    outputs = graph.pool(spec, graph.parameter("x", input_shape, dtype), min_opset)
    graph.result(outputs[0], "y")
    if spec.indices is not None:
        graph.result(outputs[1], "indices")
    return graph.render()


def _element(dtype: str) -> str:
    return dtypes.ir_type(dtype)


def _port(parent: etree._Element, port_id: int, out: Output, names: str = "") -> None:
    attrs = {"id": str(port_id), "precision": dtypes.ir_precision(out.dtype)}
    if names:
        attrs["names"] = names
    node = etree.SubElement(parent, "port", attrs)
    for d in out.dims:
        etree.SubElement(node, "dim").text = "-1" if d is None else str(d)
