"""Input shapes given on the command line, in ``ovc``'s ``--input`` syntax and ``run``'s ``--shape`` form.

``ovc model.onnx --input x[1,3,640,640]`` and ``ovpool convert model.onnx --input x[1,3,640,640]``
(or ``--shape x=1,3,640,640``) both convert with input ``x`` fixed at 1x3x640x640. The grammar is
``ovc``'s (``openvino.tools.ovc.cli_parser.parse_inputs`` is the test oracle):

* a comma-separated list of items (commas inside brackets separate dims): ``x[1,3,640,640],y[1,10]``;
* an item is ``NAME``, ``NAME[DIMS]`` or ``[DIMS]``; unnamed items set the model's inputs in order;
* dims are separated by commas or spaces: an int, ``?`` or ``-1`` (dynamic), ``1..10``, ``..10``
  and ``4..`` (bounds); ``[]`` is a scalar.

Each dim is a ``Bound`` ``(lower, upper)`` as the IR reader has them: ``7`` is (7, 7), ``?`` is
(0, None), ``1..10`` is (1, 10). This module parses only; ``ovpool.ov.from_onnx`` applies the shapes
to the model's inputs (refusing an unknown name or a rank the model does not have).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from ovpool.errors import UsageError
from ovpool.ir.reader import Bound, format_bound

_ITEM = re.compile(r"^(?P<name>[^\[\]()<]*?)\s*(?:\[(?P<dims>[0-9.?,\s-]*)\])?$")
_DIM = re.compile(r"^(?:(?P<value>-1|\?|\d+)|(?P<low>\d*)\.\.(?P<high>\d*))$")


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
    ``"[1,3,224,224]"`` -> the first input; a malformed value is a ``UsageError`` naming it."""
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
    return shapes


def parse_shape_pairs(pairs: Sequence[str]) -> list[InputShape]:
    """``run``'s form, ``["x=1,3,640,640"]``: each pair names an input and its dims (the same dim
    tokens as ``parse_input``); a malformed pair is a ``UsageError`` naming it."""
    shapes = []
    for index, pair in enumerate(pairs):
        name, sep, dims = pair.partition("=")
        if not sep or not name.strip() or not dims.strip():
            raise UsageError(f"--shape {pair}: expected NAME=d0,d1,...")
        shapes.append(InputShape(name.strip(), index, _dims(dims, re.compile(r",\s*"), f"--shape {pair}")))
    return shapes


def input_shapes(value: str | Sequence[str] | Mapping[str, Sequence[int | str]] | None) -> list[InputShape]:
    """The shapes the Python API takes: ovc text (``"x[1,3,640,640]"``, or several such strings),
    or a mapping ``{"x": [1, 3, 640, 640]}`` whose dims are ints or dim tokens (``"?"``, ``"1..10"``)."""
    if value is None:
        return []
    if isinstance(value, str):
        return parse_input(value)
    if isinstance(value, Mapping):
        return [
            InputShape(str(name), index, _dims(",".join(str(d) for d in dims), re.compile(","), f"input '{name}'"))
            for index, (name, dims) in enumerate(value.items())
        ]
    found = [shape for text in value for shape in parse_input(text)]
    return [InputShape(s.name, index, s.dims) for index, s in enumerate(found)]


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


def _dims(text: str, separator: re.Pattern[str], where: str) -> tuple[Bound, ...]:
    """``"1, 3, ?, 1..10"`` -> ((1, 1), (3, 3), (0, None), (1, 10)); ``""`` -> () (a scalar)."""
    bounds: list[Bound] = []
    for token in (t for t in separator.split(text.strip()) if t):
        match = _DIM.match(token)
        if match is None:
            raise UsageError(f"{where}: dim '{token}' is not an int, ?, -1 or a range like 1..10")
        value = match["value"]
        if value is not None:
            bounds.append((0, None) if value in ("-1", "?") else (int(value), int(value)))
            continue
        low, high = int(match["low"] or 0), int(match["high"]) if match["high"] else None
        if high is not None and high < low:
            raise UsageError(f"{where}: dim '{token}' has its upper bound below its lower bound")
        bounds.append((low, high))
    return tuple(bounds)
