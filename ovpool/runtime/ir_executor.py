"""The numpy executor for OpenVINO IR: graphs of Parameter, pooling layers (AvgPool, MaxPool, every
version with a template) and Result, run on ovpool's kernels with the IR's own meaning (``ceil``
keeps a last window that lies in the padding, ``exclude-pad="false"`` divides by the full kernel).

Names follow OpenVINO's, so results line up with ``ovpool run --device CPU``: an input is its
Parameter's first tensor name (the port's ``names``, sorted) or else the layer name; an output is the
first tensor name of the port feeding the Result, or else the Result layer's name. Any other layer
type is refused up front with every unsupported layer listed.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ovpool import dtypes, kernels
from ovpool.errors import ModelError, UnsupportedError
from ovpool.ir.adapter import spec_from_layer, template_for
from ovpool.ir.reader import IRDocument, Layer, dim_bounds, read_ir
from ovpool.ir.templates import POOL_LAYER_TYPES
from ovpool.runtime.tensors import TensorDecl

STRUCTURAL = ("Parameter", "Result")


@dataclass(frozen=True)
class IrGraph:
    """A checked IR document: its inputs as declared, outputs by name, layers in execution order."""

    document: IRDocument
    inputs: tuple[TensorDecl, ...]
    outputs: tuple[tuple[str, Layer], ...]
    order: tuple[Layer, ...]

    @classmethod
    def read(cls, path: str | os.PathLike) -> IrGraph:
        document = read_ir(Path(path))
        pool_types = POOL_LAYER_TYPES
        others = [l for l in document.layers.values() if l.type not in STRUCTURAL and l.type not in pool_types]
        if others:
            listed = ", ".join(f"{l.type} '{l.name}' (line {l.line})" for l in others)
            raise UnsupportedError.in_file(
                document.path, f"the numpy backend runs IR pooling layers only ({', '.join(pool_types)}); unsupported: {listed}"
            )
        producers = document.producers()
        params = [l for l in document.layers.values() if l.type == "Parameter"]
        inputs = tuple(_parameter_decl(document, l) for l in params)
        outputs = []
        for layer in document.layers.values():
            if layer.type == "Result":
                edge = _feeding(document, producers, layer, layer.inputs[0].id if layer.inputs else "0")
                outputs.append((document.tensor_name(document.layers[edge.from_layer], edge.from_port), layer))
        return cls(document, inputs, tuple(outputs), _execution_order(document, producers))

    def run(self, inputs: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
        """Every output, ``{name: array}``; ``inputs`` keyed by the names in ``self.inputs``."""
        producers = self.document.producers()
        values: dict[tuple[str, str], np.ndarray] = {}
        params = (l for l in self.document.layers.values() if l.type == "Parameter")
        for decl, layer in zip(self.inputs, params):
            values[(layer.id, layer.outputs[0].id if layer.outputs else "0")] = np.asarray(inputs[decl.name])
        for layer in self.order:
            x = values[_source(producers, layer, layer.inputs[0].id)]
            where = f"{self.document.path}: layer '{layer.name}'"
            template = template_for(layer.type, layer.version, where)
            wanted = len(layer.outputs) > 1 and any(
                (layer.id, layer.outputs[1].id) == (e.from_layer, e.from_port) for e in self.document.edges
            )
            spec = spec_from_layer(template, layer.data, x.ndim, x.dtype.name, layer.name, with_indices=wanted)
            result = kernels.pool(x, spec)
            for port, value in zip(layer.outputs, result if isinstance(result, tuple) else (result,)):
                values[(layer.id, port.id)] = value
        return {
            name: values[_source(producers, result, result.inputs[0].id if result.inputs else "0")]
            for name, result in self.outputs
        }


def _parameter_decl(document: IRDocument, layer: Layer) -> TensorDecl:
    """``<data shape="1,3,?,14" element_type="f32"/>`` -> TensorDecl(name, "float32", (1, 3, None, 14))."""
    element = layer.data.get("element_type", "")
    dtype = dtypes.from_ir_type(element)
    if dtype is None:
        raise ModelError.in_file(
            document.path, f"Parameter '{layer.name}' (line {layer.line}): element_type '{element}' is not readable"
        )
    shape_text = layer.data.get("shape")
    shape: tuple[int | None, ...] | None = None
    if shape_text is not None and shape_text.strip() not in ("...", "?"):
        dims = []
        for text in (t for t in shape_text.split(",") if t.strip()):
            bound = dim_bounds(text)
            if bound is None:
                raise ModelError.in_file(
                    document.path, f"Parameter '{layer.name}' (line {layer.line}): shape '{shape_text}' is not readable"
                )
            dims.append(bound[0] if bound[0] == bound[1] else None)
        shape = tuple(dims)
    return TensorDecl(document.tensor_name(layer, layer.outputs[0].id if layer.outputs else "0"), dtype, shape)


def _feeding(document: IRDocument, producers, layer: Layer, port: str):
    edge = producers.get((layer.id, port))
    if edge is None or edge.from_layer not in document.layers:
        raise ModelError.in_file(document.path, f"layer '{layer.name}' (line {layer.line}) input port {port} is not connected")
    return edge


def _source(producers, layer: Layer, port: str) -> tuple[str, str]:
    edge = producers[(layer.id, port)]
    return edge.from_layer, edge.from_port


def _execution_order(document: IRDocument, producers) -> tuple[Layer, ...]:
    """The pooling layers in execution order (``IRDocument.execution_order``), each input connected."""
    order = tuple(layer for layer in document.execution_order() if layer.type not in STRUCTURAL)
    for layer in order:
        _feeding(document, producers, layer, layer.inputs[0].id if layer.inputs else "0")
    return order
