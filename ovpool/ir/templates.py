"""The IR layer templates (``ir_templates/*.json``, installed as ``ovpool.ir_templates``) as typed values.

One template per IR layer type and version, e.g. ``AvgPool-opset14.json``: the opsets whose ``version``
attribute selects it (``"opsets": [14, 15]``: OpenVINO reads ``version="opset15"`` as AvgPool-14),
the pooling kind, its ``<data>`` attributes in the order OpenVINO writes them, and its ports. Each
attribute says its text type, whether it is required, its default, its allowed values and the
``PoolSpec`` field it sets (``"means"`` maps each IR value to the field's enum value). The IR
emitter, the IR adapter and the validator read these and nothing else; this module also owns the
text form of attribute values: lists are ``"2, 2"`` when written and ``"2,2"`` or ``"2, 2"`` when
read, booleans ``true``/``false`` (OpenVINO also reads ``1``/``0`` and any letter case).

``template_at("AvgPool", 15)`` is the AvgPool-14 template (its file covers opsets 14 and 15).
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable
from dataclasses import dataclass
from functools import cache, cached_property
from importlib import resources
from typing import cast

from ovpool.errors import UnsupportedError
from ovpool.ir.reader import ir_int
from ovpool.spec import PoolKind

_BOOL_TEXT = {"true": True, "1": True, "false": False, "0": False}
_OPSET = re.compile(r"opset([0-9]+)")


class AttributeValueError(ValueError):
    """A ``<data>`` value that its declaration does not allow; ``str()`` says why."""


@dataclass(frozen=True)
class AttributeDecl:
    """One ``<data>`` attribute of a template.

    ``type``: ``ints`` (a list, every value >= ``minimum``), ``int``, ``bool`` or ``enum``.
    ``default`` is the text used when the attribute is absent (an ``ints`` default of ``"1"`` means
    one per spatial axis). ``field`` is the PoolSpec field it sets (``indices.axis`` for a field of
    the indices). ``means``: IR value -> field value, e.g. ``ceil`` -> ``ceil_no_drop``.
    ``range == "input_rank"``: an int in ``[-R, R-1]`` for an input of rank R (MaxPool-8 ``axis``).
    """

    name: str
    type: str
    required: bool
    field: str
    default: str | None = None
    minimum: int | None = None
    means: tuple[tuple[str, str], ...] = ()
    range: str | None = None

    @cached_property
    def allowed(self) -> tuple[str, ...]:
        """The IR spellings this version accepts for a bool or enum attribute (empty otherwise)."""
        return tuple(value for value, _ in self.means)

    @cached_property
    def parsed(self) -> dict[tuple[str, int | None], tuple[object, str | None]]:
        """``parse_value``'s results for this declaration: (text, rank) -> (value, error)."""
        return {}

    @cached_property
    def field_values(self) -> dict[object, object]:
        """``ovpool.ir.adapter``'s cache of the field value each legal text stands for: text (or
        (text, input rank) when ``range`` is ``input_rank``) -> value, e.g. "ceil_torch" ->
        Rounding.CEIL, "2, 2" -> (2, 2)."""
        return {}

    def meaning(self, value: str) -> str:
        """The field value an (already valid) IR value stands for: ``ceil_torch`` -> ``ceil``."""
        return self._meanings[value]

    @cached_property
    def _meanings(self) -> dict[str, str]:
        return dict(self.means)

    def spelling(self, meaning: str) -> str | None:
        """The IR value for a field value, or None when this version cannot say it."""
        return next((value for value, m in self.means if m == meaning), None)


@dataclass(frozen=True)
class PortDecl:
    """A port: ``id`` as OpenVINO numbers it (inputs from 0, outputs after them), ``ranks`` allowed
    for an input, and an output's ``element_type``: ``"data"`` (same as input 0) or the name of the
    attribute that gives it (``index_element_type``)."""

    id: int
    name: str
    ranks: tuple[int, ...] = ()
    element_type: str | None = None


@dataclass(frozen=True)
class Template:
    """One IR layer type and version, e.g. MaxPool ``opset8`` covering opsets 8 to 13."""

    type: str
    version: str
    since: int
    until: int
    kind: PoolKind
    description: str
    attributes: tuple[AttributeDecl, ...]
    inputs: tuple[PortDecl, ...]
    outputs: tuple[PortDecl, ...]

    @property
    def label(self) -> str:
        """``AvgPool-14``: the name OpenVINO's operation specs use."""
        return f"{self.type}-{self.since}"

    def attribute(self, name: str) -> AttributeDecl | None:
        return self._by_name.get(name)

    @cached_property
    def _by_name(self) -> dict[str, AttributeDecl]:
        return {a.name: a for a in self.attributes}

    def attribute_for(self, field: str) -> AttributeDecl | None:
        return next((a for a in self.attributes if a.field == field), None)


POOL_LAYER_TYPES: tuple[str, ...] = ("AvgPool", "MaxPool")


def templates() -> tuple[Template, ...]:
    """Every template, sorted by type then opset."""
    return tuple(t for layer_type in POOL_LAYER_TYPES for t in versions_of(layer_type))


@cache
def versions_of(layer_type: str) -> tuple[Template, ...]:
    """The templates of one layer type, oldest first (empty for a type that is not pooling); only
    that type's files (``AvgPool-opset*.json``) are read, on first use."""
    found = []
    for entry in resources.files("ovpool.ir_templates").iterdir():
        if entry.name.startswith(f"{layer_type}-opset") and entry.name.endswith(".json"):
            found.append(_template(json.loads(entry.read_text(encoding="utf-8"))))
    return tuple(sorted(found, key=lambda t: t.since))


def template_at(layer_type: str, opset: int, where: str = "") -> Template:
    """The template that ``version="opset{opset}"`` selects (AvgPool opset15 is AvgPool-14); a type
    that is not pooling or an opset no template covers is an ``UnsupportedError`` naming them."""
    prefix = f"{where}: " if where else ""
    versions = versions_of(layer_type)
    if not versions:
        raise UnsupportedError(f"{prefix}ir op '{layer_type}' is not a pooling op ovpool handles")
    for template in versions:
        if template.since <= opset <= template.until:
            return template
    known = ", ".join(str(v.since) if v.since == v.until else f"{v.since}-{v.until}" for v in versions)
    raise UnsupportedError(f"{prefix}ir {layer_type} version {opset} is not supported (known: {known})")


def opset_number(version: str) -> int | None:
    """``"opset14"`` -> 14; None for anything else (``"opset"``, ``"experimental"``)."""
    match = _OPSET.fullmatch(version.strip())
    return int(match.group(1)) if match else None


def parse_value(decl: AttributeDecl, text: str, input_rank: int | None = None) -> object:
    """The value of an attribute's text: ``ints`` "2, 2" -> (2, 2); ``bool`` "false" -> "false"
    (its canonical spelling, case and 1/0 folded); ``enum`` "CEIL" -> "ceil"; ``int`` "-2" -> -2.
    Raises ``AttributeValueError`` with the reason. Values are immutable and a model spells the
    same few texts over and over, so each (text, rank) is parsed once per declaration."""
    key = (text, input_rank if decl.range == "input_rank" else None)
    cache = decl.parsed
    if key not in cache:
        if len(cache) >= _PARSED_LIMIT:
            cache.clear()
        try:
            cache[key] = (_parse(decl, text, input_rank), None)
        except AttributeValueError as exc:
            cache[key] = (None, str(exc))
    value, error = cache[key]
    if error is not None:
        raise AttributeValueError(error)
    return value


_PARSED_LIMIT = 4096


def _parse(decl: AttributeDecl, text: str, input_rank: int | None) -> object:
    text = text.strip()
    if decl.type == "ints":
        parts = [ir_int(part) for part in text.split(",")]
        if None in parts:
            raise AttributeValueError("must be a comma-separated list of integers")
        values = cast("tuple[int, ...]", tuple(parts))
        if decl.minimum is not None and min(values) < decl.minimum:
            raise AttributeValueError(f"values must be >= {decl.minimum}")
        return values
    if decl.type == "int":
        read = ir_int(text)
        if read is None:
            raise AttributeValueError("must be an integer")
        value = read
        if decl.range == "input_rank" and input_rank is not None and not -input_rank <= value < input_rank:
            raise AttributeValueError(f"must be in [{-input_rank}, {input_rank - 1}] for a rank-{input_rank} input")
        return value
    folded = text.lower()
    if decl.type == "bool":
        folded = "true" if _BOOL_TEXT.get(folded) is True else "false" if _BOOL_TEXT.get(folded) is False else folded
    if folded not in decl.allowed:
        raise AttributeValueError(f"must be one of {', '.join(decl.allowed)}")
    return folded


def format_value(decl: AttributeDecl, value: object) -> str:
    """The text OpenVINO writes: (2, 2) -> "2, 2", True -> "true", 0 -> "0", "ceil" -> "ceil"."""
    if decl.type == "ints":
        # An "ints" field's value is a tuple of ints (a PoolSpec field or the template default).
        return ", ".join(str(int(v)) for v in cast("Iterable[int]", value))
    if isinstance(value, bool):
        return "true" if value else "false"
    return str(value)


def _template(doc: dict) -> Template:
    since, until = doc["opsets"]
    attributes = tuple(
        AttributeDecl(
            name=a["name"],
            type=a["type"],
            required=a["required"],
            field=a["field"],
            default=a.get("default"),
            minimum=a.get("min"),
            means=tuple(a.get("means", {}).items()),
            range=a.get("range"),
        )
        for a in doc["attributes"]
    )
    inputs = tuple(PortDecl(p["id"], p["name"], ranks=tuple(p.get("ranks", ()))) for p in doc["inputs"])
    outputs = tuple(PortDecl(p["id"], p["name"], element_type=p.get("element_type")) for p in doc["outputs"])
    return Template(
        doc["type"], doc["version"], since, until, PoolKind(doc["kind"]), doc["description"], attributes, inputs, outputs
    )
