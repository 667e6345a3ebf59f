"""Input shapes given on the command line, in ``ovc``'s ``--input`` syntax and ``run``'s ``--shape`` form.

``ovc model.onnx --input x[1,3,640,640]`` and ``ovpool convert model.onnx --input x[1,3,640,640]``
(or ``--shape x=1,3,640,640``) both convert with input ``x`` fixed at 1x3x640x640. The grammar is
``ovc``'s (``openvino.tools.ovc.cli_parser.parse_inputs`` is the test oracle):

* a comma-separated list of items (commas inside brackets separate dims): ``x[1,3,640,640],y[1,10]``;
* an item is ``NAME``, ``NAME[DIMS]`` or ``[DIMS]``; unnamed items set the model's inputs in order;
* dims are separated by commas or spaces: an int, ``?`` or ``-1`` (dynamic), ``1..10``, ``..10``
  and ``4..`` (bounds); ``[]`` is a scalar.

Each dim is a ``Bound`` ``(lower, upper)`` as the IR reader has them: ``7`` is (7, 7), ``?`` is
(0, None), ``1..10`` is (1, 10). Every number, a static dim or either bound of a range, is at most
``MAX_DIM`` (2**31-1): ``x[1,3,2147483648,14]`` and ``x[1,3,4294967296..]`` are refused as they are
parsed, naming the option and the dim. An input named twice is refused too (``x[1,3],x[1,4]``).
This module parses only; ``ovpool.ov.from_onnx`` applies the shapes to the model's inputs
(refusing an unknown name or a rank the model does not have).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ovpool.errors import UsageError
from ovpool.shape import MAX_DIM, Bound, format_bound

_ITEM = re.compile(r"^(?P<name>[^\[\]()<]*?)\s*(?:\[(?P<dims>[0-9.?,\s-]*)\])?$")
_DIM = re.compile(r"^(?:(?P<value>-1|\?|[0-9]+)|(?P<low>[0-9]*)\.\.(?P<high>[0-9]*))$")


@dataclass(frozen=True)
class InputShape:
    """One input's shape: ``name`` (None: the model's input at ``index``) and its dims (None: only
    the name was given, the input keeps its declared shape)."""

    name: str | None
    index: int
    dims: tuple[Bound, ...] | None

    def __str__(self) -> str:
        """ovc's spelling: ``x[1,3,?,1..10]``, ``[1,3]`` unnamed, ``x`` without dims."""
        dims = "" if self.dims is None else "[" + ",".join(format_bound(b) for b in self.dims) + "]"
        return f"{self.name or ''}{dims}"

    @property
    def is_static(self) -> bool:
        """Every dim is one number (``x[1,3,640,640]``; ``x[?,3]`` is not)."""
        return self.dims is not None and all(low == high for low, high in self.dims)


def parse_input(value: str) -> list[InputShape]:
    """``ovc --input`` text: ``"x[1,3,640,640],y[1 10]"`` -> x (1,3,640,640) and y (1,10);
    ``"[1,3,224,224]"`` -> the first input; a malformed value, a dim over ``MAX_DIM`` or an input
    named twice is a ``UsageError`` naming it."""
    shapes = []
    for index, item in enumerate(_split(value)):
        match = _ITEM.match(item.strip())
        if match is None or not item.strip():
            raise UsageError(f"--input {value}: '{item}' is not NAME, NAME[d0,d1,...] or [d0,d1,...]")
        name = match["name"].strip() or None
        dims = None if match["dims"] is None else _dims(match["dims"], re.compile(r",\s*|\s+"), f"--input {value}")
        if name is None and dims is None:
            raise UsageError(f"--input {value}: an empty item")
        shapes.append(InputShape(name, index, dims))
    return _distinct(shapes, "--input", [item.strip() for item in _split(value)])


def parse_shape_pairs(pairs: Sequence[str], static: bool = False) -> list[InputShape]:
    """``run``'s form, ``["x=1,3,640,640"]``: each pair names an input and its dims (the same dim
    tokens as ``parse_input``; with ``static`` numbers only, as ``--random-inputs`` draws one
    shape); a malformed pair, a dim over ``MAX_DIM`` or an input named twice
    (``["x=1,3", "x=1,4"]``) is a ``UsageError`` naming it."""
    shapes = []
    for index, pair in enumerate(pairs):
        name, sep, dims = pair.partition("=")
        if not sep or not name.strip() or not dims.strip():
            raise UsageError(f"--shape {pair}: expected NAME=d0,d1,...")
        shapes.append(InputShape(name.strip(), index, _dims(dims, re.compile(r",\s*"), f"--shape {pair}", static)))
    return _distinct(shapes, "--shape", [pair.strip() for pair in pairs])


def input_shapes(
    value: str | Sequence[str] | Sequence[InputShape] | Mapping[str, Sequence[int | str]] | None,
) -> list[InputShape]:
    """The shapes the Python API takes: ovc text (``"x[1,3,640,640]"``, or several such strings),
    or a mapping ``{"x": [1, 3, 640, 640]}`` whose dims are ints or dim tokens (``"?"``, ``"1..10"``),
    or ``InputShape``s parsed already (the command line's: no text in between), renumbered in
    order as several strings are.
    Several strings naming one input (``["x[1,3]", "x[1,4]"]``) are a ``UsageError``."""
    if value is None:
        return []
    if isinstance(value, str):
        return parse_input(value)
    if isinstance(value, Mapping):
        return [
            InputShape(str(name), index, _dims(",".join(str(d) for d in dims), re.compile(","), f"input '{name}'"))
            for index, (name, dims) in enumerate(value.items())
        ]
    found = [shape for text in value for shape in (parse_input(text) if isinstance(text, str) else [text])]
    return _distinct([InputShape(s.name, index, s.dims) for index, s in enumerate(found)], "--input", [str(s) for s in found])


def _distinct(shapes: list[InputShape], option: str, spelled: Sequence[str]) -> list[InputShape]:
    """``shapes`` if no input is named twice, else a ``UsageError`` quoting the two as given
    (``spelled``, one per shape): ``x[1,3],x[1,4]`` reads ``--input: input 'x' is given twice
    (x[1,3] and x[1,4])``, where the last would otherwise silently win."""
    seen: dict[str, str] = {}
    for shape, text in zip(shapes, spelled):
        if shape.name is None:
            continue
        if shape.name in seen:
            raise UsageError(f"{option}: input '{shape.name}' is given twice ({seen[shape.name]} and {text})")
        seen[shape.name] = text
    return shapes


def _split(value: str) -> list[str]:
    """Items at the top level of ``value``: ``"x[1,2],y"`` -> ``["x[1,2]", "y"]``."""
    items, depth, start = [], 0, 0
    for at, char in enumerate(value):
        depth += (char == "[") - (char == "]")
        if depth < 0 or depth > 1:
            raise UsageError(f"--input {value}: unbalanced brackets")
        if char == "," and depth == 0:
            items.append(value[start:at])
            start = at + 1
    if depth:
        raise UsageError(f"--input {value}: unbalanced brackets")
    return [*items, value[start:]]


def _dims(text: str, separator: re.Pattern[str], where: str, static: bool = False) -> tuple[Bound, ...]:
    """``"1, 3, ?, 1..10"`` -> ((1, 1), (3, 3), (0, None), (1, 10)); ``""`` -> () (a scalar).
    Each number is at most ``MAX_DIM`` (``_number``); with ``static`` only numbers are dims."""
    bounds: list[Bound] = []
    for token in (t for t in separator.split(text.strip()) if t):
        match = _DIM.match(token)
        if match is None:
            kinds = "a number" if static else "an int, ?, -1 or a range like 1..10"
            raise UsageError(f"{where}: dim '{token}' is not {kinds}")
        value = match["value"]
        if static and (value is None or value in ("-1", "?")):
            raise UsageError(f"{where}: dim '{token}' is not a number (the inputs drawn have one shape)")
        if value in ("-1", "?"):
            bounds.append((0, None))
            continue
        if value is not None:
            number = _number(value, token, where)
            bounds.append((number, number))
            continue
        low = _number(match["low"] or "0", token, where)
        high = _number(match["high"], token, where) if match["high"] else None
        if high is not None and high < low:
            raise UsageError(f"{where}: dim '{token}' has its upper bound below its lower bound")
        bounds.append((low, high))
    return tuple(bounds)


def _number(digits: str, token: str, where: str) -> int:
    """The ASCII ``digits`` of a static dim or a range's bound as an int, at most ``MAX_DIM``:
    ``"2147483647"`` -> 2147483647; ``"2147483648"`` (or ``"9223372036854775808"``, or
    ``4294967296..``'s bound) is a ``UsageError`` naming ``where`` and the dim ``token``."""
    significant = digits.lstrip("0")
    if len(significant) > len(str(MAX_DIM)) or int(significant or "0") > MAX_DIM:
        raise UsageError(
            f"{where}: dim '{token}' is over {MAX_DIM} (2**31-1), the longest dim ovpool takes "
            "(OpenVINO's CPU plugin pools in 32-bit integers)"
        )
    return int(significant or "0")
