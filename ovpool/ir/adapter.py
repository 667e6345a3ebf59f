"""OpenVINO IR pooling layers <-> PoolSpec, driven by the ``ir_templates`` (see ``ovpool.ir.templates``).

Reading: ``check_layer`` lists every problem of a layer's ``<data>`` against its type and version
(an attribute the version does not have, a missing required one, a value outside its domain);
``spec_from_layer`` turns a clean layer into a PoolSpec. The meanings come from the templates:
``rounding_type`` floor/ceil/ceil_torch -> Rounding.FLOOR/CEIL_NO_DROP/CEIL, ``exclude-pad``
true/false -> Divisor.EXCLUDE_PAD/FULL_KERNEL_IF_PADDED, ``auto_pad`` explicit/same_upper/same_lower/
valid (OpenVINO refuses ``notset``), MaxPool-8/14 ``axis`` and ``index_element_type`` -> Indices.
Pads are ignored when ``auto_pad`` is not explicit (as OpenVINO does; the AvgPool-1 spec's own
``valid`` example carries pads 1,1).

Writing: ``layer_from_spec`` picks the oldest version whose template can say the spec (AvgPool with
dilations needs opset16, ``ceil_torch`` opset14, MaxPool indices opset8) and renders ``<data>``.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import Enum
from typing import cast

from ovpool import shape
from ovpool.errors import SpecError, UnsupportedError
from ovpool.ir.templates import (
    AttributeDecl,
    AttributeValueError,
    Template,
    format_value,
    opset_number,
    parse_value,
    template_at,
    versions_of,
)
from ovpool.spec import Divisor, IndexOrder, Indices, Padding, PoolKind, PoolSpec, Rounding

_ENUM_FIELDS: dict[str, type[Enum]] = {"padding": Padding, "rounding": Rounding, "divisor": Divisor}
_ENUM_VALUES = {(field, member.value): member for field, enum in _ENUM_FIELDS.items() for member in enum}
_TUPLE_FIELDS = ("kernel", "strides", "dilations", "pads_begin", "pads_end")
_UNREAD = object()
_FIELD_VALUES_LIMIT = 4096


@dataclass(frozen=True)
class AttributeIssue:
    """A problem with one ``<data>`` attribute. ``code``: ``unknown-attribute``,
    ``missing-attribute`` or ``bad-value``."""

    code: str
    attribute: str
    value: str | None
    message: str


@dataclass(frozen=True)
class IRLayer:
    """A pooling layer as IR writes it: ``type``, ``version`` ("opset14") and ``data`` in template order."""

    type: str
    version: str
    data: dict[str, str]
    template: Template


def template_for(layer_type: str, version: str, where: str = "") -> Template:
    """The template of a layer; ``UnsupportedError`` for a version no template covers
    (``AvgPool`` ``opset17``) or a type that is not a pooling layer."""
    number = opset_number(version)
    if number is None:
        prefix = f"{where}: " if where else ""
        raise UnsupportedError(f"{prefix}version '{version}' is not an opset (expected e.g. opset14)")
    return template_at(layer_type, number, where)


def check_layer(template: Template, data: Mapping[str, str], input_rank: int | None = None) -> list[AttributeIssue]:
    """Every problem of ``data`` against ``template``, in attribute order (empty when legal).

    AvgPool opset14 with ``dilations="2,2"``: unknown-attribute (OpenVINO would silently ignore it
    and pool undilated); AvgPool opset1 with ``rounding_type="ceil_torch"``: bad-value.
    """
    return _read_data(template, data, input_rank)[0]


def read_layer(
    template: Template,
    data: Mapping[str, str],
    input_rank: int | None = None,
    dtype: str | None = None,
    name: str = "",
    with_indices: bool = True,
) -> tuple[list[AttributeIssue], PoolSpec | SpecError | None]:
    """``check_layer`` and ``spec_from_layer`` in one pass over ``data``: its issues, and when it
    has none its PoolSpec, or the ``SpecError`` saying why the attributes are inconsistent
    (``strides="1,1,1"`` with ``kernel="2,2"``). The validator reads every layer this way."""
    issues, values = _read_data(template, data, input_rank)
    if issues:
        return issues, None
    kernel = values["kernel"]
    dilations = values.get("dilations", ())
    if dilations == (1,):
        dilations = dilations * len(kernel)  # type: ignore[arg-type]
    padding = values.get("padding", Padding.EXPLICIT)
    explicit = padding is Padding.EXPLICIT
    indices = None
    if "indices.axis" in values and with_indices:
        axis = int(values["indices.axis"])  # type: ignore[call-overload]
        if axis < 0 and input_rank is not None:
            axis += input_rank
        indices = Indices(IndexOrder.ROW_MAJOR, axis, str(values["indices.dtype"]))
    try:
        spec = PoolSpec(
            template.kind,
            kernel,  # type: ignore[arg-type]
            values.get("strides", ()),  # type: ignore[arg-type]
            dilations,  # type: ignore[arg-type]
            values.get("pads_begin", ()) if explicit else (),  # type: ignore[arg-type]
            values.get("pads_end", ()) if explicit else (),  # type: ignore[arg-type]
            padding,  # type: ignore[arg-type]
            values.get("rounding", Rounding.FLOOR),  # type: ignore[arg-type]
            values.get("divisor", Divisor.EXCLUDE_PAD),  # type: ignore[arg-type]
            indices,
            dtype,
            name,
        )
    except SpecError as exc:
        return [], exc
    return [], spec


def spec_from_layer(
    template: Template,
    data: Mapping[str, str],
    input_rank: int | None = None,
    dtype: str | None = None,
    name: str = "",
    with_indices: bool = True,
) -> PoolSpec:
    """The PoolSpec of a layer. The first ``check_layer`` issue, or an inconsistent spec (lists of
    different lengths, a pad as wide as the window), raises ``SpecError`` naming the layer.
    MaxPool-8/14 always has an indices output; ``with_indices=False`` (nothing reads it) leaves
    ``indices`` None. A negative ``axis`` counts from the end of ``input_rank``."""
    issues, spec = read_layer(template, data, input_rank, dtype, name, with_indices)
    if issues:
        issue = issues[0]
        raise SpecError(name, issue.attribute, issue.value, issue.message)
    if isinstance(spec, SpecError):
        raise spec
    assert spec is not None
    return spec


def _read_data(
    template: Template, data: Mapping[str, str], input_rank: int | None
) -> tuple[list[AttributeIssue], dict[str, object]]:
    """The issues of ``data`` (unknown attributes first, then per attribute in template order) and
    the field value of each attribute, its default when absent (``rounding`` -> Rounding.CEIL for
    ``ceil_torch``; ``indices.dtype`` -> "int64" for ``i64``)."""
    issues: list[AttributeIssue] = []
    values: dict[str, object] = {}
    known = 0
    for decl in template.attributes:
        text = data.get(decl.name)
        if text is None:
            if decl.required:
                issues.append(AttributeIssue("missing-attribute", decl.name, None, f"is required by {template.label}"))
                continue
            text = decl.default
            if text is None:
                continue
        else:
            known += 1
        cache = decl.field_values
        key = (text, input_rank) if decl.range == "input_rank" else text
        value = cache.get(key, _UNREAD)
        if value is _UNREAD:
            try:
                value = parse_value(decl, text, input_rank)
            except AttributeValueError as exc:
                hint = _later_value_hint(template, decl, text)
                issues.append(AttributeIssue("bad-value", decl.name, text, f"{exc} in {template.label}{hint}"))
                continue
            if decl.means:
                value = decl.meaning(value)  # type: ignore[arg-type]
                if decl.field in _ENUM_FIELDS:
                    value = _ENUM_VALUES[decl.field, value]
            if len(cache) >= _FIELD_VALUES_LIMIT:
                cache.clear()
            cache[key] = value
        values[decl.field] = value
    if known != len(data):
        issues[:0] = _unknown_attributes(template, data)
    return issues, values


def _unknown_attributes(template: Template, data: Mapping[str, str]) -> list[AttributeIssue]:
    issues = []
    for name, text in data.items():
        if template.attribute(name) is None:
            later = _first_version_with(template.type, name)
            hint = f"; {later.label} has it" if later and later.since > template.since else ""
            issues.append(
                AttributeIssue(
                    "unknown-attribute", name, text, f"{template.label} has no attribute '{name}' (OpenVINO ignores it){hint}"
                )
            )
    return issues


def layer_from_spec(spec: PoolSpec, spatial: Sequence[int] | None = None, min_opset: int = 1) -> IRLayer:
    """The oldest IR version (from ``min_opset``) that says ``spec``, with its ``<data>``.

    ``spatial`` (the input's spatial dims) lets an INCLUDE_PAD divisor become ``exclude-pad="false"``
    when no window reaches past the end pad (``shape.ceil_overhang`` all 0); without it that holds
    only under floor rounding, SAME/VALID padding or zero pads. Refused, naming the spec and the
    feature: global pools, unpooling, column-major indices.
    """
    layer_type = {PoolKind.AVERAGE: "AvgPool", PoolKind.MAX: "MaxPool"}.get(spec.kind)
    where = f"node '{spec.name}'" if spec.name else "pooling spec"
    if layer_type is None:
        hint = "; convert it to ONNX, then `ovpool convert` lowers the ONNX LpPool to IR" if spec.is_lp else ""
        raise UnsupportedError(f"{where}: {spec.kind.value} pooling has no IR pooling layer{hint}")
    if spec.indices is not None and spec.indices.order is IndexOrder.COLUMN_MAJOR:
        raise UnsupportedError(f"{where}: IR MaxPool indices are row-major; column-major (storage_order=1) has no IR form")
    if spatial is not None:
        spec = shape.simplest_form(spec, spatial)
    wanted = _field_values(spec, spatial, where)
    reasons = []
    for template in versions_of(layer_type):
        if template.until < min_opset:
            continue
        data, missing = _render(template, wanted)
        if not missing:
            return IRLayer(template.type, template.version, data, template)
        reasons.append(f"{template.label} lacks {missing}")
    raise UnsupportedError(f"{where}: no {layer_type} version can express it ({'; '.join(reasons)})")


def _field_values(spec: PoolSpec, spatial: Sequence[int] | None, where: str) -> dict[str, object]:
    """What each template field must say for ``spec``; None where any value will do."""
    rank = len(spec.kernel)
    wanted: dict[str, object] = {field: getattr(spec, field) for field in _TUPLE_FIELDS}
    if spec.padding is not Padding.EXPLICIT:
        wanted["pads_begin"] = wanted["pads_end"] = (0,) * rank
    wanted["padding"] = spec.padding.value
    wanted["rounding"] = spec.rounding.value
    if spec.kind is PoolKind.AVERAGE:
        wanted["divisor"] = _ir_divisor(spec, spatial, where).value
    if spec.indices is not None:
        wanted["indices.axis"] = spec.indices.axis
        wanted["indices.dtype"] = spec.indices.dtype
    return wanted


def _ir_divisor(spec: PoolSpec, spatial: Sequence[int] | None, where: str) -> Divisor:
    """INCLUDE_PAD counts the pads but not the ceil overhang; ``exclude-pad="false"`` counts both,
    so they agree exactly when nothing overhangs."""
    if spec.divisor is not Divisor.INCLUDE_PAD:
        return spec.divisor
    padded = any(spec.pads_begin + spec.pads_end)
    if spec.padding is not Padding.EXPLICIT or spec.rounding is Rounding.FLOOR or not padded:
        return Divisor.FULL_KERNEL_IF_PADDED
    if spatial is not None and not any(shape.ceil_overhang(spec, spatial)):
        return Divisor.FULL_KERNEL_IF_PADDED
    raise UnsupportedError(
        f"{where}: count_include_pad with ceil rounding and pads counts the pads but not the ceil overhang; "
        "IR exclude-pad=false counts both (lower it as an explicit zero Pad then exclude-pad=true)"
    )


def _render(template: Template, wanted: Mapping[str, object]) -> tuple[dict[str, str], str]:
    """``<data>`` of ``template`` for the wanted field values, or what it lacks."""
    data: dict[str, str] = {}
    for decl in template.attributes:
        value = wanted[decl.field] if decl.field in wanted else _default_value(decl, wanted)
        if decl.means:
            spelled = decl.spelling(str(value))
            if spelled is None:
                return {}, f"{decl.name} for {value}"
            value = spelled
        data[decl.name] = format_value(decl, value)
    for field, value in wanted.items():
        if template.attribute_for(field) is None and not _is_default(field, value):
            return {}, field
    return data, ""


def _default_value(decl: AttributeDecl, wanted: Mapping[str, object]) -> object:
    """A field the spec leaves open (MaxPool-8 indices when none are used): the template default."""
    assert decl.default is not None, decl.name
    if decl.type == "ints":
        return (int(decl.default),) * len(wanted["kernel"])  # type: ignore[arg-type]
    return decl.meaning(decl.default) if decl.means else decl.default


def _is_default(field: str, value: object) -> bool:
    """Fields an older version lacks but whose value it implies: dilations of all ones."""
    # The wanted dilations are the spec's, a tuple.
    return field == "dilations" and all(v == 1 for v in cast("Iterable[object]", value))


def _first_version_with(layer_type: str, attribute: str) -> Template | None:
    return next((t for t in versions_of(layer_type) if t.attribute(attribute) is not None), None)


def _later_value_hint(template: Template, decl: AttributeDecl, text: str) -> str:
    folded = text.strip().lower()
    for later in versions_of(template.type):
        other = later.attribute(decl.name)
        if later.since > template.since and other is not None and folded in other.allowed:
            return f"; {later.label} has it"
    return ""
