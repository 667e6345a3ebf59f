"""IR -> ONNX (``ovpool convert model.xml --to onnx``) for graphs of Parameter, Const, Result, Pad
and pooling layers: what ovpool's own lowerings produce and plain pooling models.

Any other layer type is refused, listing every such layer. Each pooling layer becomes one ONNX node
(``onnx_adapter.node_from_spec``) after its meaning is restated in ONNX terms with the shape engine
on the layer's static input dims:

- ``rounding_type="ceil"`` (CEIL_NO_DROP) becomes ``ceil_mode=1`` when the drop rule changes nothing:
  the output sizes agree and no window lies wholly in padding. Otherwise it is refused, naming the
  layer (L=4, k=1, s=2, pads_end 1: OpenVINO makes a third window of pure padding).
- ``exclude-pad="false"`` (full kernel once any pad is non-zero) is ``count_include_pad=1`` when no
  window reaches past the end pad; when the ceil overhang does, it becomes an explicit zero ``Pad``
  of (pads_begin, ``shape.floor_end_pads``: pads_end plus the overhang) and a pad-free AveragePool,
  which divides by the full kernel.
- ``auto_pad`` is written as the explicit pads it resolves to.
- MaxPool-8/14 indices (``axis`` 0 is ONNX's layout) get ``Mod`` by the flattened size from
  ``axis`` for axis 1 or 2, and a ``Cast`` for ``i32``; an unused indices port is not emitted.
"""

from __future__ import annotations

import warnings
from collections.abc import Sequence
from pathlib import Path

import numpy as np
import onnx
from onnx import TensorProto, helper, numpy_helper

from ovpool import dtypes, shape
from ovpool.errors import InputFileError, ModelError, OvpoolError, SpecError, UnsupportedError
from ovpool.ir.adapter import spec_from_layer, template_for
from ovpool.ir.reader import IRDocument, Layer, declared_bounds, dim_bounds, read_ir, read_weights
from ovpool.ir.templates import POOL_LAYER_TYPES
from ovpool.names import FreshNames
from ovpool.onnx.adapter import node_from_spec
from ovpool.spec import Divisor, Indices, Padding, PoolKind, PoolSpec, Rounding

OPSET = 19
_HELPERS = ("Parameter", "Result", "Const", "Pad")


def ir_to_onnx(src: Path, out_suffix: str = ".onnx", **_options: object) -> dict[str, bytes]:
    """Convert the IR at ``src`` (its ``.bin`` beside it) to ONNX bytes: ``{".onnx": ...}``."""
    doc = read_ir(src)
    doc.check_structure()
    weights = read_weights(src)
    try:
        return {".onnx": _Converter(doc, weights).model().SerializeToString()}
    except OvpoolError as exc:
        raise exc.located(src) from None


class _Converter:
    def __init__(self, doc: IRDocument, weights: bytes) -> None:
        self.doc, self.weights = doc, weights
        self.nodes: list[onnx.NodeProto] = []
        self.initializers: list[TensorProto] = []
        self.inputs: list[onnx.ValueInfoProto] = []
        self.outputs: list[onnx.ValueInfoProto] = []
        self.tensor: dict[tuple[str, str], str] = {}
        self.constants: dict[str, np.ndarray] = {}
        self.producer = doc.producers()
        self.used = {(e.from_layer, e.from_port) for e in doc.edges}
        self._names = FreshNames()
        self.declared: dict[str, tuple[str, list[int | None]]] = {}  # graph output -> (its Result, the IR's dims)

    def model(self) -> onnx.ModelProto:
        pool_types = POOL_LAYER_TYPES
        others = [
            f"{l.id} '{l.name}' ({l.type} {l.version})"
            for l in self.doc.layers.values()
            if l.type not in pool_types and l.type not in _HELPERS
        ]
        if others:
            raise UnsupportedError.in_file(
                self.doc.path, f"IR -> ONNX handles pooling, Pad, Const, Parameter and Result; not layer(s) {', '.join(others)}"
            )
        for layer in self.doc.execution_order():
            if layer.type == "Result":
                continue
            {"Parameter": self._parameter, "Const": self._const, "Pad": self._pad}.get(layer.type, self._pool)(layer)
        for layer in self.doc.layers.values():
            if layer.type == "Result":
                self._result(layer)
        graph = helper.make_graph(self.nodes, self.doc.name or "model", self.inputs, self.outputs, self.initializers)
        model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", OPSET)], ir_version=9, producer_name="ovpool")
        return self._settled(model)

    def _settled(self, model: onnx.ModelProto) -> onnx.ModelProto:
        """``model`` with each graph output declared as ONNX's shape inference computes it, and
        checked as ``onnx.checker.check_model(full_check=True)`` checks it: ovpool writes no ONNX
        file that ONNX refuses. An output the IR declares otherwise is declared as computed, with a
        ``DeclaredShapeWarning`` (OpenVINO's AvgPool-1 example declares 32x32 where its rules give
        16x16, which ``ovpool validate`` reports as OVP201)."""
        probe = onnx.ModelProto()
        probe.CopyFrom(model)
        for output in probe.graph.output:
            output.type.tensor_type.ClearField("shape")
        try:
            inferred = onnx.shape_inference.infer_shapes(probe, check_type=True, strict_mode=True)
            computed = {o.name: o for o in inferred.graph.output}
            for output in model.graph.output:
                declared = self.declared[output.name]
                dims = [
                    d.dim_value if d.HasField("dim_value") else None for d in computed[output.name].type.tensor_type.shape.dim
                ]
                if computed[output.name].type.tensor_type.HasField("shape") and _disagree(declared[1], dims):
                    warnings.warn(
                        f"{self.doc.path}: {declared[0]} declares {_shown(declared[1])}; its layers give {_shown(dims)}, "
                        "which the ONNX output declares",
                        DeclaredShapeWarning,
                        stacklevel=2,
                    )
                    output.type.CopyFrom(computed[output.name].type)
            onnx.checker.check_model(model, full_check=True)
        except (onnx.checker.ValidationError, onnx.shape_inference.InferenceError) as exc:
            first = str(exc).strip().splitlines()[0] if str(exc).strip() else type(exc).__name__
            raise ModelError.in_file(self.doc.path, f"IR -> ONNX makes a graph that ONNX refuses: {first}") from None
        return model

    def _name(self, layer: Layer, port: str) -> str:
        name = self._names.fresh(self.doc.tensor_name(layer, port))
        self.tensor[(layer.id, port)] = name
        return name

    def _input(self, layer: Layer, index: int) -> str:
        port = layer.inputs[index].id if index < len(layer.inputs) else str(index)
        edge = self.producer.get((layer.id, port))
        if edge is None:
            raise ModelError.in_file(self.doc.path, f"layer {layer.id} '{layer.name}' input port {port} has no incoming edge")
        return self.tensor[(edge.from_layer, edge.from_port)]

    def _parameter(self, layer: Layer) -> None:
        dtype = _element(layer, layer.data.get("element_type", ""))
        texts = [text for text in layer.data.get("shape", "").split(",") if text.strip()]
        dims = _dims(texts, f"layer {layer.id} '{layer.name}' (Parameter)")
        name = self._name(layer, layer.outputs[0].id if layer.outputs else "0")
        self.inputs.append(helper.make_tensor_value_info(name, dtypes.to_onnx(dtype), dims))

    def _const(self, layer: Layer) -> None:
        dtype = _element(layer, layer.data.get("element_type", ""))
        try:
            offset, size = int(layer.data["offset"]), int(layer.data["size"])
            dims = [int(d) for d in layer.data.get("shape", "").split(",") if d.strip()]
        except (KeyError, ValueError):
            raise ModelError(f"layer {layer.id} '{layer.name}' (Const): offset, size and shape must be integers") from None
        if offset < 0 or offset + size > len(self.weights):
            raise InputFileError.in_file(
                self.doc.path,
                f"layer {layer.id} '{layer.name}' reads bytes {offset}..{offset + size} of a {len(self.weights)}-byte .bin",
            )
        value = np.frombuffer(self.weights[offset : offset + size], dtype=dtypes.np_dtype(dtype))
        if value.size != int(np.prod(dims)):
            raise ModelError(f"layer {layer.id} '{layer.name}' (Const): {size} bytes do not hold shape {dims} of {dtype}")
        value = value.reshape(dims)
        name = self._name(layer, layer.outputs[0].id if layer.outputs else "0")
        self.constants[name] = value
        self.initializers.append(numpy_helper.from_array(value, name))

    def _pad(self, layer: Layer) -> None:
        mode = layer.data.get("pad_mode", "constant")
        if mode != "constant" or len(layer.inputs) < 3:
            raise UnsupportedError(f"layer {layer.id} '{layer.name}' (Pad): only constant padding converts (pad_mode is {mode})")
        begin, end = (self.constants.get(self._input(layer, i)) for i in (1, 2))
        if begin is None or end is None:
            raise UnsupportedError(f"layer {layer.id} '{layer.name}' (Pad): pads must come from Const layers")
        pads = self._constant(layer.name + "/pads", np.concatenate([begin, end]).astype(np.int64))
        inputs = [self._input(layer, 0), pads]
        if len(layer.inputs) > 3:
            inputs.append(self._input(layer, 3))
        self.nodes.append(
            helper.make_node("Pad", inputs, [self._name(layer, layer.outputs[0].id)], name=layer.name, mode="constant")
        )

    def _result(self, layer: Layer) -> None:
        name = self._input(layer, 0)
        port = layer.inputs[0]
        dtype = port.dtype
        if dtype is None:
            raise ModelError(f"layer {layer.id} '{layer.name}' (Result): unknown precision '{port.precision}'")
        where = f"layer {layer.id} '{layer.name}' (Result)"
        dims = _dims(port.dims, where)
        self.declared[name] = (where, dims)
        self.outputs.append(helper.make_tensor_value_info(name, dtypes.to_onnx(dtype), dims))

    def _pool(self, layer: Layer) -> None:
        where = f"layer {layer.id} '{layer.name}' ({layer.type} {layer.version})"
        template = template_for(layer.type, layer.version, where)
        if not layer.inputs or not layer.outputs:
            raise ModelError(f"{where}: has no input or output port")
        in_port = layer.inputs[0]
        dims = [dim_bounds(d) for d in in_port.dims]
        if any(b is None or b[0] != b[1] for b in dims):
            raise UnsupportedError(
                f"{where}: input dims [{', '.join(in_port.dims)}] are not static; IR -> ONNX needs them to restate ceil and divisor rules"
            )
        input_shape = tuple(b[0] for b in dims)  # type: ignore[index]
        indices_port = layer.outputs[1].id if len(layer.outputs) > 1 else None
        with_indices = indices_port is not None and (layer.id, indices_port) in self.used
        try:
            spec = spec_from_layer(template, layer.data, len(input_shape), in_port.dtype, layer.name, with_indices)
            spec, padded_end = _onnx_meaning(spec, input_shape[2:], where)
        except SpecError as exc:
            raise exc.at(where) from None
        x = self._input(layer, 0)
        if padded_end is not None:
            x = self._zero_pad(layer.name, x, spec.pads_begin, padded_end)
            spec = spec.with_(
                pads_begin=(0,) * len(spec.kernel),
                pads_end=(0,) * len(spec.kernel),
                rounding=Rounding.FLOOR,
                divisor=Divisor.EXCLUDE_PAD,
            )
        values = self._name(layer, layer.outputs[0].id)
        outputs = [values]
        if with_indices:
            outputs.append(self._names.fresh(f"{layer.name}/indices_onnx"))
        onnx_spec = spec if spec.indices is None else spec.with_(indices=Indices(spec.indices.order, 0, "int64"))
        self.nodes.append(node_from_spec(onnx_spec, OPSET, [x], outputs))
        if with_indices:
            self._indices(layer, spec, input_shape, outputs[1])

    def _zero_pad(self, name: str, x: str, pads_begin: Sequence[int], pads_end: Sequence[int]) -> str:
        pads = self._constant(f"{name}/pads", np.asarray([0, 0, *pads_begin, 0, 0, *pads_end], dtype=np.int64))
        out = self._names.fresh(f"{name}/padded")
        self.nodes.append(helper.make_node("Pad", [x, pads], [out], name=f"{name}/pad", mode="constant"))
        return out

    def _indices(self, layer: Layer, spec: PoolSpec, input_shape: Sequence[int], onnx_indices: str) -> None:
        assert spec.indices is not None
        current = onnx_indices
        if spec.indices.axis:
            size = self._constant(
                f"{layer.name}/index_span", np.asarray(shape.index_span(input_shape, spec.indices.axis), dtype=np.int64)
            )
            modded = self._names.fresh(f"{layer.name}/indices_axis")
            self.nodes.append(helper.make_node("Mod", [current, size], [modded], name=f"{layer.name}/axis"))
            current = modded
        final = self._name(layer, layer.outputs[1].id)
        if spec.indices.dtype == "int64":
            self.nodes.append(helper.make_node("Identity", [current], [final], name=f"{layer.name}/indices"))
        else:
            self.nodes.append(
                helper.make_node("Cast", [current], [final], name=f"{layer.name}/indices", to=dtypes.to_onnx(spec.indices.dtype))
            )

    def _constant(self, name: str, value: np.ndarray) -> str:
        name = self._names.fresh(name)
        self.initializers.append(numpy_helper.from_array(value, name))
        return name


def _onnx_meaning(spec: PoolSpec, spatial: Sequence[int], where: str) -> tuple[PoolSpec, tuple[int, ...] | None]:
    """``spec`` restated with ONNX's rules on this input, and the end pads of an explicit zero Pad
    that must precede it (None when the pool alone is exact). A window longer than the padded
    input is a ``SpecError`` (kernel 30 on 9 cells)."""
    shape.output_spatial(spec, spatial)
    pads_begin, pads_end = shape.resolved_pads(spec, spatial)
    explicit = spec.with_(padding=Padding.EXPLICIT, pads_begin=pads_begin, pads_end=pads_end)
    if spec.padding is not Padding.EXPLICIT:
        explicit = explicit.with_(rounding=Rounding.FLOOR)
    if explicit.rounding is Rounding.CEIL_NO_DROP:
        as_onnx = explicit.with_(rounding=Rounding.CEIL)
        empty = shape.empty_windows(explicit, spatial)
        if empty or shape.output_spatial(as_onnx, spatial) != shape.output_spatial(explicit, spatial):
            axis, index = empty[0] if empty else (0, 0)
            raise UnsupportedError(
                f"{where}: rounding_type 'ceil' keeps windows that lie wholly in padding on this input "
                f"(axis {axis}, output {index}); ONNX ceil_mode drops them, so there is no exact ONNX form"
            )
        explicit = as_onnx
    if explicit.kind is not PoolKind.AVERAGE or explicit.divisor is not Divisor.FULL_KERNEL_IF_PADDED:
        return explicit, None
    if not any(pads_begin + pads_end):
        return explicit.with_(divisor=Divisor.EXCLUDE_PAD), None
    padded_end = shape.floor_end_pads(explicit, spatial)
    if padded_end == explicit.pads_end:
        return explicit.with_(divisor=Divisor.INCLUDE_PAD), None
    return explicit, padded_end


class DeclaredShapeWarning(UserWarning):
    """An IR output declares a shape other than the one its layers compute (IR -> ONNX declares the computed one)."""


def _disagree(declared: Sequence[int | None], computed: Sequence[int | None]) -> bool:
    """Whether two shapes differ where both know the dim (``[1, 3, 32, 32]`` vs ``[1, 3, 16, 16]``)."""
    return len(declared) != len(computed) or any(a is not None and b is not None and a != b for a, b in zip(declared, computed))


def _shown(dims: Sequence[int | None]) -> str:
    return "[" + ", ".join("?" if d is None else str(d) for d in dims) + "]"


def _element(layer: Layer, element_type: str) -> str:
    dtype = dtypes.from_ir_type(element_type)
    if dtype is None:
        raise UnsupportedError(
            f"layer {layer.id} '{layer.name}' ({layer.type}): element type '{element_type}' has no ONNX form here"
        )
    return dtype


def _dims(texts: Sequence[str], where: str) -> list[int | None]:
    """A port's or Parameter's dims (None: dynamic or unreadable), refused past the bound
    (``declared_bounds``)."""
    return [b[0] if b is not None and b[0] == b[1] else None for b in declared_bounds(texts, where)]
