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
- Lp pooling as ovpool's lowering writes it (``ovpool.ov.lowering``) becomes LpPool or
  GlobalLpPool: ``Abs``, ``Power`` by a constant p (none for p 1), optionally a zero ``Pad``, an
  AvgPool whose every window divides by the whole kernel times that kernel's tap count (or a
  ``ReduceSum`` over the spatial axes), and the root (``Sqrt`` for p 2, ``Power`` by 1/p). Each
  link feeds only the next. The Pad's pads become the LpPool's where ONNX allows them (below the
  window extent), else an ONNX Pad precedes it: a zero adds 0 to a p-norm either way.
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Callable, Sequence
from dataclasses import dataclass
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
        self.lp_chains: dict[str, _LpChain] = {}  # root layer id -> its Lp chain

    def model(self) -> onnx.ModelProto:
        pool_types = POOL_LAYER_TYPES
        self.lp_chains = {chain.root.id: chain for chain in _lp_chains(self.doc, self._const_value)}
        absorbed = {member for chain in self.lp_chains.values() for member in chain.members}
        others = [
            f"{l.id} '{l.name}' ({l.type} {l.version})"
            for l in self.doc.layers.values()
            if l.type not in pool_types and l.type not in _HELPERS and l.id not in absorbed
        ]
        if others:
            raise UnsupportedError.in_file(
                self.doc.path,
                "IR -> ONNX handles pooling (and ovpool's Lp pooling layers), Pad, Const, Parameter and Result; "
                f"not layer(s) {', '.join(others)}",
            )
        for layer in self.doc.execution_order():
            if layer.type == "Result" or (layer.id in absorbed and layer.id not in self.lp_chains):
                continue
            if layer.id in self.lp_chains:
                self._lp(self.lp_chains[layer.id])
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
        value = self._const_value(layer)
        name = self._name(layer, layer.outputs[0].id if layer.outputs else "0")
        self.constants[name] = value
        self.initializers.append(numpy_helper.from_array(value, name))

    def _const_value(self, layer: Layer) -> np.ndarray:
        """A Const layer's value from the .bin (errors name the layer)."""
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
        return value.reshape(dims)

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

    def _lp(self, chain: _LpChain) -> None:
        """The LpPool (or GlobalLpPool) node of an Lp chain, from its Abs's input to its root's output."""
        root, x = chain.root, self._input(chain.magnitude, 0)
        where = f"layer {root.id} '{root.name}' ({root.type} {root.version}, the root of an Lp pooling)"
        dtype = chain.magnitude.inputs[0].dtype
        if chain.pool.type == "ReduceSum":
            spec = PoolSpec(PoolKind.GLOBAL_LP, dtype=dtype, name=root.name, p=chain.p)
        else:
            spec = self._lp_window(chain, where)
            if chain.pad is not None:
                folded = _folded(spec, chain.pad_begin, chain.pad_end)
                if folded is None:
                    x = self._zero_pad(root.name, x, chain.pad_begin, chain.pad_end)
                else:
                    spec = folded
        self.nodes.append(node_from_spec(spec.with_(name=root.name), OPSET, [x], [self._name(root, root.outputs[0].id)]))

    def _lp_window(self, chain: _LpChain, where: str) -> PoolSpec:
        """The windowed Lp spec of a chain's AvgPool: its windows, which must each divide by the whole
        kernel (the AvgPool times the tap count is then the window sum), in ONNX's terms."""
        layer = chain.pool
        template = template_for(layer.type, layer.version, where)
        dims = [dim_bounds(d) for d in layer.inputs[0].dims]
        if any(b is None or b[0] != b[1] for b in dims):
            raise UnsupportedError(f"{where}: input dims of its AvgPool are not static; IR -> ONNX needs them")
        input_shape = tuple(b[0] for b in dims)  # type: ignore[index]
        try:
            average = spec_from_layer(template, layer.data, len(input_shape), layer.inputs[0].dtype, layer.name)
            spatial = input_shape[2:]  # the padded tensor's, after a Pad
            counts = shape.divisor_counts(average, spatial)
            if chain.taps != math.prod(average.kernel) or any((c != k).any() for c, k in zip(counts, average.kernel)):
                raise UnsupportedError(
                    f"{where}: its AvgPool does not divide every window by the whole kernel times {chain.taps}; "
                    "it is not a window sum ovpool can restate as LpPool"
                )
            window = average.with_(kind=PoolKind.LP, divisor=Divisor.EXCLUDE_PAD, p=chain.p, name=chain.root.name)
            spec, padded_end = _onnx_meaning(window, spatial, where)
        except SpecError as exc:
            raise exc.at(where) from None
        assert padded_end is None  # an Lp spec has no divisor to restate
        return spec

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


@dataclass(frozen=True)
class _LpChain:
    """The layers of one Lp pooling as ovpool's lowering writes it: ``magnitude`` (Abs), a zero
    ``pad`` (or None) with its spatial pads, ``pool`` (AvgPool or ReduceSum), ``root`` (the layer
    whose output is the result), ``p``, ``taps`` (the Multiply's constant; 1 after a ReduceSum) and
    ``members``, every layer id the chain stands for (its Consts included)."""

    magnitude: Layer
    pad: Layer | None
    pad_begin: tuple[int, ...]
    pad_end: tuple[int, ...]
    pool: Layer
    root: Layer
    p: float
    taps: float
    members: frozenset[str]


def _lp_chains(doc: IRDocument, const_value: Callable[[Layer], np.ndarray]) -> list[_LpChain]:
    """Every Lp chain of ``doc`` (the module text): found from each Abs, forward along single consumers."""
    producers = doc.producers()
    consumers: dict[str, list[Layer]] = {}
    for edge in doc.edges:
        target = doc.layers.get(edge.to_layer)
        if target is not None:
            consumers.setdefault(edge.from_layer, []).append(target)

    def constant(layer: Layer, port_index: int) -> tuple[np.ndarray, str] | None:
        if port_index >= len(layer.inputs):
            return None
        edge = producers.get((layer.id, layer.inputs[port_index].id))
        source = doc.layers.get(edge.from_layer) if edge is not None else None
        if source is None or source.type != "Const" or len(consumers.get(source.id, [])) != 1:
            return None
        return const_value(source), source.id

    def only_next(layer: Layer) -> Layer | None:
        following = consumers.get(layer.id, [])
        return following[0] if len(following) == 1 and len(layer.outputs) == 1 else None

    def scalar(layer: Layer, port_index: int) -> tuple[np.ndarray, str] | None:
        """A one-element Const at the port, as a 0-d array of its own element type."""
        found = constant(layer, port_index)
        return None if found is None or found[0].size != 1 else (found[0].reshape(()), found[1])

    chains = []
    for magnitude in doc.layers.values():
        if magnitude.type != "Abs":
            continue
        members, p = {magnitude.id}, 1.0
        link = only_next(magnitude)
        if link is not None and link.type == "Power":
            exponent = scalar(link, 1)
            if exponent is None or exponent[0] < 1:
                continue
            p = float(exponent[0])
            members |= {link.id, exponent[1]}
            link = only_next(link)
        pad: Layer | None = None
        begin: tuple[int, ...] = ()
        end: tuple[int, ...] = ()
        if link is not None and link.type == "Pad" and link.data.get("pad_mode", "constant") == "constant":
            pads = [constant(link, i) for i in (1, 2)]
            value = scalar(link, 3) if len(link.inputs) > 3 else (np.zeros(()), "")
            if None in pads or value is None or value[0] != 0:
                continue
            (b, b_id), (e, e_id) = pads  # type: ignore[misc]
            if b.ndim != 1 or b.size < 3 or b[:2].any() or e[:2].any() or (b < 0).any() or (e < 0).any():
                continue
            pad, begin, end = link, tuple(int(v) for v in b[2:]), tuple(int(v) for v in e[2:])
            members |= {link.id, b_id, e_id} | ({value[1]} if value[1] else set())
            link = only_next(link)
        if link is None or link.type not in ("AvgPool", "ReduceSum"):
            continue
        pool, taps = link, 1.0
        members.add(pool.id)
        if pool.type == "ReduceSum":
            axes = constant(pool, 1)
            rank = len(pool.inputs[0].dims)
            if pad is not None or axes is None or sorted(int(a) % rank for a in axes[0].ravel()) != list(range(2, rank)):
                continue
            if pool.data.get("keep_dims", "false").lower() != "true":
                continue
            members.add(axes[1])
            root = pool
        else:
            link = only_next(pool)
            factor = None if link is None or link.type != "Multiply" else scalar(link, 1)
            if link is None or factor is None:
                continue
            taps = float(factor[0])
            members |= {link.id, factor[1]}
            root = link
        if p != 1:
            link = only_next(root)
            if link is None:
                continue
            if p == 2 and link.type == "Sqrt":
                root = link
            elif (
                link.type == "Power"
                and (inverse := scalar(link, 1)) is not None
                and inverse[0] == np.asarray(1 / p, inverse[0].dtype)
            ):
                root, members = link, members | {inverse[1]}
            else:
                continue
        members.add(root.id)
        chains.append(_LpChain(magnitude, pad, begin, end, pool, root, p, taps, frozenset(members)))
    return chains


def _folded(spec: PoolSpec, begin: Sequence[int], end: Sequence[int]) -> PoolSpec | None:
    """A floor Lp spec over a zero-padded tensor as the same spec with those pads added to its own,
    or None where ONNX cannot say it (a pad as long as the window extent)."""
    if spec.rounding is not Rounding.FLOOR:
        return None
    try:
        return spec.with_(
            pads_begin=tuple(a + b for a, b in zip(spec.pads_begin, begin)),
            pads_end=tuple(a + b for a, b in zip(spec.pads_end, end)),
        )
    except SpecError:
        return None


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
