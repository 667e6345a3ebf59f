"""``ovpool validate``: check the pooling layers of OpenVINO IR v10/v11 files without OpenVINO.

For every AvgPool/MaxPool layer: its ``<data>`` against the template of its type and version
(``ir_templates``), its declared output dims against the shape engine (static dims, ``-1``/``?``
and ranges such as ``1..10``), its ports against the template, and each edge into or out of it
against the port at the other end. OpenVINO's ``read_model`` does none of this: it re-infers output
dims and ignores attributes a version does not have.

ONNX's GlobalAveragePool and GlobalMaxPool become ReduceMean and ReduceMax over every spatial axis
(OpenVINO's frontend and ``ovpool convert`` alike), so a model whose only pooling is global (many
PaddleOCR models) has no AvgPool/MaxPool layer. A ReduceMean/ReduceMax whose axes come from a Const
(its values read from the ``.bin`` beside the ``.xml``) and are axes 2 to rank-1 of an input of
rank >= 3 is a global pool: it is counted, its edges are checked, and its declared output dims
must be the input's N and C followed by a 1 per spatial axis (``keep_dims="true"``) or nothing
(``keep_dims="false"``): [1, 4, 5, 5] -> [1, 4, 1, 1]. Without the ``.bin`` (or with axes that
are not all the spatial ones) the layer is an ordinary reduction and is not checked.

Findings carry a stable code (never renumbered):

=======  =========================  ============================================================
code     rule                       meaning
=======  =========================  ============================================================
OVP101   unknown-version            no template covers the layer's version (AvgPool opset17)
OVP102   unknown-attribute          the version has no such attribute (AvgPool-14 ``dilations``)
OVP103   missing-attribute          a required attribute is absent (AvgPool ``exclude-pad``)
OVP104   bad-value                  a value outside the version's domain (opset1 ``ceil_torch``)
OVP105   inconsistent-attributes    attributes that disagree (3 strides for a 2-D kernel)
OVP201   output-shape               declared output dims differ from the shape engine's
OVP202   port-count                 input or output ports missing or extra
OVP203   input-rank                 input rank outside 3-D..5-D or not the kernel's rank + 2
OVP204   window-too-large           the input plus pads is smaller than one window
OVP205   precision                  an output precision the layer cannot produce
OVP206   bad-dim                    a ``<dim>`` that is not an int, ``-1``, ``?`` or a range
OVP301   edge-shape                 a port's dims differ from the connected port's
OVP302   edge-missing               an input port with no edge, or an edge to nothing
OVP303   edge-precision             a port's precision differs from the connected port's
OVP304   graph-structure            outside the pooling layers: an edge to nothing, an unfed input, a cycle
OVP401   openvino-shape             (--strict) OpenVINO infers other output dims than declared
OVP402   openvino-refuses           (--strict) OpenVINO cannot read the model
OVP501   quantized-padding          OpenVINO CPU averages integers padded with 0, not the zero point
OVP502   quantized-reduce           OpenVINO CPU mixes batch and channels in a 3-D integer ReduceMean
OVP601   target-opset               (--target-openvino R) a layer of an opset release R cannot read
=======  =========================  ============================================================

OVP5xx is how OpenVINO's CPU plugin runs a layer that is valid as written: a quantized AvgPool
with padding whose integers have a non-zero zero point is averaged on integers padded with 0
(OVP501), and a quantized ReduceMean over the last axis of a 3-D tensor with a batch of 2 or more
mixes batch and channels up (OVP502); ``ovpool.ir.lowprecision`` says exactly which layers.

OVP601 checks every layer, pooling or not, bodies of If/Loop/TensorIterator included, against the
opsets of the OpenVINO release given (``ovpool.ir.releases``): 2023.3 reads up to opset13 and
refuses the file at a MaxPool of ``version="opset14"``. The finding says whether ``ovpool
convert --target-openvino`` writes an exact older form of it (``ovpool.ov.backport``).

A declared dim of ``-1``/``?`` is always accepted (less precise, not wrong); any other declared
dim must equal the expected one, bounds included: input ``1..10``, kernel 3, stride 2, pads 1/0
must declare ``1..5`` (or ``?``).
"""

from __future__ import annotations

import gc
import os
from collections.abc import Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import TypedDict

from ovpool import dtypes, shape
from ovpool.errors import InputFileError, ModelError, SpecError, UnsupportedError
from ovpool.ir import releases
from ovpool.ir.adapter import AttributeIssue, read_layer, template_for
from ovpool.ir.lowprecision import GraphView, integer_padding, reduce_batch_mixup
from ovpool.ir.reader import Edge, IRDocument, Layer, Port, dim_bounds, read_bodies, read_ir, weights_file
from ovpool.ir.templates import POOL_LAYER_TYPES, Template
from ovpool.shape import Bound, format_bound
from ovpool.spec import PoolSpec

CODES = {
    "unknown-version": "OVP101",
    "unknown-attribute": "OVP102",
    "missing-attribute": "OVP103",
    "bad-value": "OVP104",
    "inconsistent-attributes": "OVP105",
    "output-shape": "OVP201",
    "port-count": "OVP202",
    "input-rank": "OVP203",
    "window-too-large": "OVP204",
    "precision": "OVP205",
    "bad-dim": "OVP206",
    "edge-shape": "OVP301",
    "edge-missing": "OVP302",
    "edge-precision": "OVP303",
    "graph-structure": "OVP304",
    "openvino-shape": "OVP401",
    "openvino-refuses": "OVP402",
    "quantized-padding": "OVP501",
    "quantized-reduce": "OVP502",
    "target-opset": "OVP601",
}


@dataclass(frozen=True)
class Finding:
    """One problem in one layer. ``declared``/``expected`` (shape findings) are lists of ints with
    -1 for a dim that is not static; ``declared_dims``/``expected_dims`` keep the IR spelling
    (``1..5``, ``?``)."""

    file: str
    layer_id: str
    name: str
    type: str
    version: str
    rule: str
    message: str
    line: int = 0
    attribute: str | None = None
    port: str | None = None
    declared: list[int] | None = None
    expected: list[int] | None = None
    declared_dims: list[str] | None = None
    expected_dims: list[str] | None = None

    @property
    def code(self) -> str:
        return CODES[self.rule]

    def as_dict(self) -> dict[str, object]:
        record = {"code": self.code, **asdict(self)}
        return {k: v for k, v in record.items() if v is not None}


@dataclass(frozen=True)
class FileReport:
    """The findings of one file and how many pooling layers it has."""

    file: str
    pooling_layers: list[tuple[str, str]] = field(default_factory=list)
    findings: list[Finding] = field(default_factory=list)


def validate(
    files: str | os.PathLike | Sequence[str | os.PathLike], strict: bool = False, target_openvino: str | None = None
) -> list[Finding]:
    """Findings for one IR file or several (empty when clean). An unreadable file raises
    ``InputFileError``. ``strict`` also compares with OpenVINO's shape inference;
    ``target_openvino`` (``"2023.3"``) reports the layers that release cannot read (OVP601)."""
    paths = [files] if isinstance(files, (str, os.PathLike)) else list(files)
    return [f for path in paths for f in validate_file(path, strict, target_openvino).findings]


def validate_file(path: str | os.PathLike, strict: bool = False, target_openvino: str | None = None) -> FileReport:
    """Check one IR file; linear in its layers and edges."""
    release = releases.parse(target_openvino) if target_openvino is not None else None
    with _collector_paused():
        return _validate_file(path, strict, release)


def target_findings(doc: IRDocument, source: str | os.PathLike | bytes, release: releases.Release) -> Iterator[Finding]:
    """OVP601 for each layer of ``doc`` (read from ``source``) and of its layers' bodies whose
    opset is newer than ``release`` reads: on 2023.3, a ``MaxPool`` of ``version="opset14"``."""
    limit = releases.newest_opset(release)
    for layer in doc.layers.values():
        number = releases.opset_number(layer.version)
        if number is not None and number > limit:
            # a dilated AvgPool-16 has an older form on static spatial dims only (ovpool.ov.backport)
            dilations = layer.data.get("dilations", "").split(",")
            dilated = layer.type == "AvgPool" and any(d.strip() not in ("", "1") for d in dilations)
            static = bool(layer.inputs) and all(d.strip().isdigit() for d in layer.inputs[0].dims[2:])
            form = (layer.type, number) in releases.OLDER_FORM_NEEDS and (static or not dilated)
            needs = releases.OLDER_FORM_NEEDS.get((layer.type, number))
            remedy = (
                f"ovpool convert --target-openvino {releases.shown(release)} writes it in an exact older form"
                + (f" (given {needs})" if needs else "")
                if form
                else "it has no exact older form in ovpool"
            )
            message = (
                f"{layer.type}-{number}: OpenVINO {releases.shown(release)} reads layers up to opset{limit} "
                f"and refuses the file here; {remedy}"
            )
            yield Finding(doc.path, layer.id, layer.name, layer.type, layer.version, "target-opset", message, layer.line)
        if layer.type in ("If", "Loop", "TensorIterator"):
            for body in read_bodies(source, layer, doc.path).values():
                yield from target_findings(body.document, body.data, release)


@contextmanager
def _collector_paused() -> Iterator[None]:
    """Reading a big IR makes ~10 objects per layer and no cycles; the cyclic collector would
    rescan them all many times (a third of the time on 20,000 layers)."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


def _validate_file(path: str | os.PathLike, strict: bool, release: releases.Release | None = None) -> FileReport:
    kind = {".onnx": "an ONNX model", ".json": "a DirectML JSON document"}.get(Path(path).suffix.lower())
    if kind is not None:
        raise InputFileError.in_file(
            path, f"is {kind}; ovpool validate checks OpenVINO IR (.xml): convert it first (ovpool convert)"
        )
    doc = read_ir(path)
    report = FileReport(doc.path)
    producers = doc.producers()
    consumers: dict[tuple[str, str], list[Edge]] = {}
    for edge in doc.edges:
        consumers.setdefault((edge.from_layer, edge.from_port), []).append(edge)
    pool_types = POOL_LAYER_TYPES
    content = _ContentCheck()
    view = GraphView(doc, producers, consumers)
    for layer in doc.layers.values():
        if layer.type in pool_types:
            items = content.items(layer)
        elif layer.type in GLOBAL_POOL_TYPES and _is_global_pool(layer, view.constants.ints(producers.get((layer.id, "1")))):
            items = _check_global(layer)
        else:
            continue
        report.pooling_layers.append((layer.id, layer.name))
        out = _Layer(doc.path, layer)
        _check_edges(out, doc, layer, producers, consumers)
        out.items.extend(items)
        if layer.type == "AvgPool" and not items and view.has_fake_quantize():
            _check_integer_padding(out, view, content.spec(layer))
        elif layer.type == "ReduceMean" and not items and view.has_fake_quantize():
            _check_batch_mixup(out, view)
        if out.items:
            report.findings.extend(out.findings())
    report.findings.extend(_structure_findings(doc, {layer_id for layer_id, _ in report.pooling_layers}))
    if release is not None:
        report.findings.extend(target_findings(doc, path, release))
    if strict:
        report.findings.extend(_check_with_openvino(doc, {layer_id for layer_id, _ in report.pooling_layers}))
    return report


def _structure_findings(doc: IRDocument, pooling: set[str]) -> Iterator[Finding]:
    """OVP304 for the graph around the pooling layers (whose own edges OVP302 covers): each edge
    that connects nothing, each unfed input port, else a cycle (OpenVINO loads none of these)."""
    every = list(doc.edge_problems())
    problems = [(line, at, why) for line, at, why in every if at not in pooling]
    if not every:
        try:
            doc.execution_order()
        except ModelError as exc:
            problems.append((0, "", str(exc.args[0])))
    for line, at, why in problems:
        layer = doc.layer(at)
        if layer is None:
            yield Finding(doc.path, "", "", "", "", "graph-structure", why, line)
        else:
            yield Finding(doc.path, layer.id, layer.name, layer.type, layer.version, "graph-structure", why, line)


GLOBAL_POOL_TYPES = frozenset({"ReduceMean", "ReduceMax"})


def _check_batch_mixup(out: _Layer, view: GraphView) -> None:
    """OVP502: a 3-D ReduceMean OpenVINO CPU computes on integers with batch and channels mixed up."""
    found = reduce_batch_mixup(view, out.layer)
    if found is not None:
        out.add("quantized-reduce", found.message(), port=out.layer.inputs[0].id)


def _check_integer_padding(out: _Layer, view: GraphView, spec: PoolSpec | None) -> None:
    """OVP501: an average OpenVINO CPU computes on integers padded with 0, not the zero point
    (``ovpool.ir.lowprecision``)."""
    found = integer_padding(view, out.layer, spec) if spec is not None else None
    if found is not None:
        out.add("quantized-padding", found.message(), port=out.layer.inputs[0].id)


def _is_global_pool(layer: Layer, axes: tuple[int, ...] | None) -> bool:
    """A reduction over exactly the spatial axes (2 .. rank-1, negatives counted from the end) of
    an input of rank >= 3: ReduceMean axes (2, 3) or (-2, -1) on [1, 4, 5, 5]."""
    if axes is None or not layer.inputs:
        return False
    rank = len(layer.inputs[0].dims)
    return rank >= 3 and sorted(a + rank if a < 0 else a for a in axes) == list(range(2, rank))


def _check_global(layer: Layer) -> list[tuple[str, str, dict]]:
    """A global pool's declared output dims and precision against its input's."""
    out = _Layer("", layer)
    if len(layer.outputs) != 1:
        out.add("port-count", f"has {len(layer.outputs)} output ports; {layer.type} has 1")
        return out.items
    source, port = layer.inputs[0], layer.outputs[0]
    bounds = [dim_bounds(d) for d in source.dims]
    declared = [dim_bounds(d) for d in port.dims]
    if None in bounds or None in declared:
        out.add(
            "bad-dim", f"a dim of input port {source.id} or output port {port.id} is not an int, -1, ? or a range", port=port.id
        )
        return out.items
    keep = layer.data.get("keep_dims", "false").lower() in ("true", "1")
    expected = [b for b in bounds[:2] if b is not None] + ([(1, 1)] * (len(bounds) - 2) if keep else [])
    if not _fits(declared, expected):
        out.add(
            "output-shape",
            f"output port {port.id} declares [{', '.join(port.dims)}]; a global pool of [{', '.join(source.dims)}] "
            f"(keep_dims {'true' if keep else 'false'}) gives [{', '.join(format_bound(b) for b in expected)}]",
            **_shape_fields(port, declared, expected),
        )
    if port.precision and source.precision and port.precision.upper() != source.precision.upper():
        out.add("precision", f"output port {port.id} is {port.precision}; expected {source.precision}", port=port.id)
    return out.items


class _Layer:
    """Collects (rule, message, extra fields) for one layer, then makes its Findings."""

    def __init__(self, path: str, layer: Layer) -> None:
        self.path, self.layer = path, layer
        self.items: list[tuple[str, str, dict]] = []

    def add(self, rule: str, message: str, **extra: object) -> None:
        self.items.append((rule, message, extra))

    def findings(self) -> list[Finding]:
        layer = self.layer
        return [
            Finding(self.path, layer.id, layer.name, layer.type, layer.version, rule, message, layer.line, **extra)
            for rule, message, extra in self.items
        ]


class _ContentCheck:
    """The findings that depend only on a layer itself (type, version, data, ports), not its
    neighbours. Real models repeat layer configurations, and even layers that all differ share
    their templates, attribute sets and dims, so each of those is worked out once per file; the
    checks are the same as for a layer seen alone. Keys hold a layer's ``<data>`` mapping by
    identity: the reader shares one mapping among layers with the same ``<data>``, and every
    mapping lives as long as the document being checked."""

    def __init__(self) -> None:
        self._layers: dict[tuple, list[tuple[str, str, dict]]] = {}
        self._templates: dict[tuple[str, str], Template | str] = {}
        self._specs: dict[tuple, tuple[list[AttributeIssue], PoolSpec | SpecError | None]] = {}
        self._dims: dict[tuple[str, ...], tuple[Bound, ...] | int] = {}  # dims -> bounds, or the first unreadable dim

    def items(self, layer: Layer) -> list[tuple[str, str, dict]]:
        key = (layer.type, layer.version, id(layer.data), _port_key(layer.inputs), _port_key(layer.outputs))
        found = self._layers.get(key)
        if found is None:
            found = self._layers[key] = self._check(_Layer("", layer))
        return found

    def spec(self, layer: Layer) -> PoolSpec | None:
        """The spec of a layer ``items`` found clean (from the same caches), or None."""
        template = self._template(layer.type, layer.version)
        if isinstance(template, str) or not layer.inputs:
            return None
        spec = self._spec(template, layer.data, len(layer.inputs[0].dims))[1]
        return spec if isinstance(spec, PoolSpec) else None

    def _check(self, out: _Layer) -> list[tuple[str, str, dict]]:
        layer = out.layer
        template = self._template(layer.type, layer.version)
        if isinstance(template, str):
            out.add("unknown-version", template, attribute="version")
            return out.items
        input_port = _check_ports(out, template)
        in_bounds = self._bounds(out, input_port, "input") if input_port is not None else None
        rank = len(in_bounds) if in_bounds is not None else None
        issues, spec = self._spec(template, layer.data, rank)
        for issue in issues:
            out.add(issue.code, f"'{issue.attribute}': {issue.message}", attribute=issue.attribute)
        if issues:
            return out.items
        if isinstance(spec, SpecError):
            out.add("inconsistent-attributes", spec.message, attribute=spec.attribute)
            return out.items
        if in_bounds is None or input_port is None or spec is None:  # no input port gives no bounds
            return out.items
        if len(in_bounds) != len(spec.kernel) + 2 or rank not in template.inputs[0].ranks:
            out.add(
                "input-rank",
                f"input rank {rank} does not fit a {len(spec.kernel)}-D kernel (expected rank {len(spec.kernel) + 2}, 3 to 5)",
                port=input_port.id,
            )
            return out.items
        self._check_outputs(out, template, spec, in_bounds, input_port)
        return out.items

    def _template(self, layer_type: str, version: str) -> Template | str:
        """The layer's template, or why there is none."""
        found = self._templates.get((layer_type, version))
        if found is None:
            try:
                found = template_for(layer_type, version)
            except UnsupportedError as exc:
                found = str(exc)
            self._templates[layer_type, version] = found
        return found

    def _spec(
        self, template: Template, data: Mapping[str, str], rank: int | None
    ) -> tuple[list[AttributeIssue], PoolSpec | SpecError | None]:
        """The attribute issues of ``data``, and its spec (or why it is inconsistent) when it has none."""
        key = (template.type, template.version, id(data), rank)
        found = self._specs.get(key)
        if found is None:
            found = self._specs[key] = read_layer(template, data, rank)
        return found

    def _bounds(self, out: _Layer, port: Port, what: str) -> tuple[Bound, ...] | None:
        """The bounds of a port's dims, or None after reporting the first unreadable one."""
        bounds = self._dims.get(port.dims)
        if bounds is None:
            read = tuple(dim_bounds(text) for text in port.dims)
            bounds = self._dims[port.dims] = read.index(None) if None in read else read  # type: ignore[assignment]
        if isinstance(bounds, int):
            out.add(
                "bad-dim",
                f"{what} port {port.id} dim {bounds} is '{port.dims[bounds]}' (expected an int >= 0, -1, ? or a range like 1..10)",
                port=port.id,
            )
            return None
        return bounds

    def _check_outputs(
        self, out: _Layer, template: Template, spec: PoolSpec, in_bounds: tuple[Bound, ...], input_port: Port
    ) -> None:
        try:
            spatial = shape.output_spatial_bounds(spec, in_bounds[2:])
        except SpecError as exc:
            out.add("window-too-large", exc.message, port=input_port.id)
            return
        expected = in_bounds[:2] + spatial
        for decl, port in zip(template.outputs, out.layer.outputs):
            declared = self._bounds(out, port, "output")
            if declared is None:
                continue
            if declared != expected and not _fits(declared, expected):
                out.add(
                    "output-shape",
                    f"output port {port.id} ({decl.name}) declares [{', '.join(port.dims)}]; the rules give "
                    f"[{', '.join(format_bound(b) for b in expected)}]",
                    **_shape_fields(port, declared, expected),
                )
            if decl.element_type == "data":
                want = input_port.precision
            else:
                index_type = dtypes.from_ir_type(out.layer.data.get(decl.element_type or "", "i64"))
                want = dtypes.ir_precision(index_type) if index_type in ("int64", "int32") else ""
            if port.precision and want and port.precision.upper() != want.upper():
                out.add("precision", f"output port {port.id} ({decl.name}) is {port.precision}; expected {want}", port=port.id)


def _port_key(ports: tuple[Port, ...]) -> tuple[tuple[str, str, tuple[str, ...]], ...]:
    """What the content checks read of ports, a Port's first three fields: id, precision, dims (not tensor names)."""
    return tuple([p[:3] for p in ports])


def _check_ports(out: _Layer, template: Template) -> Port | None:
    layer = out.layer
    if len(layer.inputs) != len(template.inputs):
        out.add("port-count", f"has {len(layer.inputs)} input ports; {template.label} has {len(template.inputs)}")
    if len(layer.outputs) != len(template.outputs):
        names = ", ".join(p.name for p in template.outputs)
        out.add("port-count", f"has {len(layer.outputs)} output ports; {template.label} has {len(template.outputs)} ({names})")
    return layer.inputs[0] if layer.inputs else None


def _check_edges(out: _Layer, doc: IRDocument, layer: Layer, producers: dict, consumers: dict) -> None:
    """Each port of ``layer`` against the port at the other end of each of its edges (``_check_edge``,
    called only for a pair that differs: an edge between equal ports is the common case)."""
    layers = doc.layers
    for port in layer.inputs:
        edge = producers.get((layer.id, port.id))
        if edge is None:
            out.add("edge-missing", f"input port {port.id} has no incoming edge", port=port.id)
            continue
        source = layers.get(edge.from_layer)
        other = source.output(edge.from_port) if source is not None else None
        if other is None or port.dims != other.dims or port.precision != other.precision:
            _check_edge(out, doc, port, "input", edge.from_layer, edge.from_port)
    for port in layer.outputs:
        for edge in consumers.get((layer.id, port.id), ()):
            target = layers.get(edge.to_layer)
            other = target.input(edge.to_port) if target is not None else None
            if other is None or port.dims != other.dims or port.precision != other.precision:
                _check_edge(out, doc, port, "output", edge.to_layer, edge.to_port)


def _check_edge(out: _Layer, doc: IRDocument, port: Port, direction: str, other_id: str, other_port: str) -> None:
    """``port`` (of ``direction``) against the port at the other end of an edge."""
    side = "output" if direction == "input" else "input"
    other_layer = doc.layer(other_id)
    other = None
    if other_layer is not None:
        other = other_layer.output(other_port) if side == "output" else other_layer.input(other_port)
    if other_layer is None or other is None:
        out.add(
            "edge-missing",
            f"{direction} port {port.id}: its edge names layer {other_id} {side} port {other_port}, which does not exist",
            port=port.id,
        )
    elif port.dims != other.dims or port.precision != other.precision:
        _compare_ports(
            out, port, other, f"{direction} port {port.id}", f"layer {other_layer.id} '{other_layer.name}' {side} port {other.id}"
        )


def _compare_ports(out: _Layer, port: Port, other: Port, mine: str, theirs: str) -> None:
    if port.dims != other.dims:
        a, b = [dim_bounds(d) for d in port.dims], [dim_bounds(d) for d in other.dims]
        if a != b or None in a:
            out.add(
                "edge-shape",
                f"{mine} is [{', '.join(port.dims)}] but the connected {theirs} is [{', '.join(other.dims)}]",
                port=port.id,
                declared=[_static(x) for x in a],
                expected=[_static(x) for x in b],
                declared_dims=list(port.dims),
                expected_dims=list(other.dims),
            )
    if port.precision and other.precision and port.precision.upper() != other.precision.upper():
        out.add("edge-precision", f"{mine} is {port.precision} but the connected {theirs} is {other.precision}", port=port.id)


def _fits(declared: Sequence[Bound | None], expected: Sequence[Bound]) -> bool:
    """Each declared dim is the expected one or ``-1``/``?`` (less precise, not wrong): declared
    [1, 4, ?, 1] fits expected [1, 4, 1, 1]; [1, 4, 5, 5] or [1, 4] does not."""
    return len(declared) == len(expected) and all(d == e or d == (0, None) for d, e in zip(declared, expected))


class _ShapeFields(TypedDict):
    port: str
    declared: list[int]
    expected: list[int]
    declared_dims: list[str]
    expected_dims: list[str]


def _shape_fields(port: Port, declared: Sequence[Bound | None], expected: Sequence[Bound]) -> _ShapeFields:
    """A shape finding's port and dims: as int lists (-1 for a dim that is not static) and as the IR spells them."""
    return {
        "port": port.id,
        "declared": [_static(b) for b in declared],
        "expected": [_static(b) for b in expected],
        "declared_dims": list(port.dims),
        "expected_dims": [format_bound(b) for b in expected],
    }


def _static(bound: Bound | None) -> int:
    return bound[0] if bound is not None and bound[0] == bound[1] else -1


def _check_with_openvino(doc: IRDocument, pool_ids: set[str]) -> list[Finding]:
    """Declared output dims of each pooling layer (``pool_ids``, global pools included) against
    OpenVINO's own inference (by layer name)."""
    try:
        import openvino as ov
    except ImportError:
        return []
    found: list[Finding] = []
    weights_file(doc.path)  # OpenVINO reads the .bin: a FIFO would block it
    try:
        model = ov.Core().read_model(doc.path)
    except Exception as exc:  # OpenVINO raises RuntimeError and its own classes
        last = [line for line in str(exc).splitlines() if line.strip()]
        found.append(
            Finding(doc.path, "", "", "", "", "openvino-refuses", f"OpenVINO cannot read the model: {last[-1] if last else exc}")
        )
        return found
    by_name = {layer.name: layer for layer in doc.layers.values() if layer.id in pool_ids}
    for op in model.get_ops():
        layer = by_name.get(op.get_friendly_name())
        if layer is None:
            continue
        for index, port in enumerate(layer.outputs[: op.get_output_size()]):
            inferred = op.get_output_partial_shape(index)
            ov_bounds = [(d.get_min_length(), None if d.get_max_length() < 0 else d.get_max_length()) for d in inferred]
            declared = [dim_bounds(t) for t in port.dims]
            if not _fits(declared, ov_bounds):
                found.append(
                    Finding(
                        doc.path,
                        layer.id,
                        layer.name,
                        layer.type,
                        layer.version,
                        "openvino-shape",
                        f"output port {port.id} declares [{', '.join(port.dims)}]; OpenVINO infers {inferred}",
                        layer.line,
                        **_shape_fields(port, declared, ov_bounds),
                    )
                )
    return found


def exit_code(reports: Sequence[FileReport], unreadable: int) -> int:
    """2 if any input was unreadable, else 1 if any finding, else 0."""
    if unreadable:
        return 2
    return 1 if any(r.findings for r in reports) else 0
