"""String operators: StringConcat-20, StringSplit-20, StringNormalizer-10, RegexFullMatch-20.

Strings are object arrays of ``str`` (numpy unicode arrays are taken as well); results are object
arrays.

* StringConcat: element-wise ``x + y`` with numpy broadcasting: ``["a", "b"]`` and ``"!"`` give
  ``["a!", "b!"]``.
* StringSplit: each string cut at ``delimiter`` (consecutive delimiters delimit empty strings:
  ``"a--b"`` on ``"-"`` is ``["a", "", "b"]``), at most ``maxsplit`` times from the left (the rest
  is the last piece); with no delimiter (or ``""``) on runs of ASCII whitespace (space, \\t, \\n,
  \\v, \\f, \\r), leading and trailing ones dropped (``" a  b c "`` with ``maxsplit=1``:
  ``["a", "b c"]``; onnxruntime 1.31 takes only the space as whitespace: "a\\tb" stays whole).
  The pieces are padded with ``""`` to the longest count on a new last axis; the second output
  holds the counts. An empty string has no piece (count 0), as onnxruntime counts it.
* StringNormalizer: drops the ``stopwords`` from a [C] or [1, C] input (compared after lowering
  both when ``is_case_sensitive=0``, the default), then lowers or uppers (``case_change_action``).
  Case changes follow Unicode's one-character (simple) mappings, as glibc's en_US locale does:
  ``"Straße"`` upper is ``"STRAßE"``, ``"İ"`` lower is ``"i"``, ``"ᾳ"`` upper is ``"ᾼ"``; locales
  ``C``/``POSIX`` change ASCII letters only. Other locales (``tr_TR`` maps ``i`` to ``İ``) are
  refused. All words dropped: ``[""]`` (shape [1], or [1, 1] for a [1, C] input).
* RegexFullMatch: True where the whole string matches ``pattern``. ONNX says RE2 syntax; ovpool
  matches with Python's ``re`` (``\\d``, ``\\w``, ``\\s``, ``\\b`` ASCII-only as in RE2) and refuses,
  naming them, the constructs whose meaning differs between the two or that RE2 rejects
  (:func:`_re2_difference`).
"""

from __future__ import annotations

import re
from collections.abc import Callable
from typing import Any

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, register


def _strings(node: OpNode, x: np.ndarray, what: str = "input 0") -> np.ndarray:
    """``x`` as an object array of ``str``; another element type is the node's error."""
    array = np.asarray(x)
    if array.dtype.kind == "U":
        return array.astype(object)
    if array.dtype != object:
        raise node.fail(f"{what} has type {array.dtype}; {node.op_type}-{node.since} takes strings")
    return array


def _objects(values: Any, shape: tuple[int, ...]) -> np.ndarray:
    """A list (or a numpy result) as an object array of ``shape`` (numpy would make a 0-d ``str``
    a unicode array)."""
    result = np.empty(shape, dtype=object)
    result[...] = values if not isinstance(values, list) else np.array(values, dtype=object).reshape(shape)
    return result


@register("StringConcat", 20)
def string_concat(node: OpNode) -> Kernel:
    """StringConcat: ``x + y`` element-wise, broadcast."""

    def kernel(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        a, b = _strings(node, x), _strings(node, y, "input 1")
        try:
            shape = np.broadcast_shapes(a.shape, b.shape)
        except ValueError:
            raise node.fail(f"shapes {list(a.shape)} and {list(b.shape)} do not broadcast") from None
        return (_objects(np.add(a, b, dtype=object), shape),)

    return kernel


_SPACES = " \t\n\v\f\r"
_SPACE_RUN = re.compile(f"[{_SPACES}]+")


@register("StringSplit", 20)
def string_split(node: OpNode) -> Kernel:
    """StringSplit: pieces padded with ``""`` on a new last axis, and their counts (module docstring):
    ``["a-b-c", "d"]`` on ``"-"`` with ``maxsplit=1`` gives ``[["a", "b-c"], ["d", ""]]``, ``[2, 1]``."""
    delimiter = str(node.attr("delimiter", ""))
    maxsplit = node.attr("maxsplit")
    if maxsplit is not None and int(maxsplit) < 0:
        raise node.fail(f"{maxsplit} must not be negative", "maxsplit")
    limit = -1 if maxsplit is None else int(maxsplit)

    def split(text: str) -> list[str]:
        if delimiter:
            return text.split(delimiter, limit) if text else []
        stripped = text.strip(_SPACES)
        if not stripped:
            return []
        return [stripped] if limit == 0 else _SPACE_RUN.split(stripped, max(limit, 0))

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        strings = _strings(node, x)
        pieces = [split(text) for text in strings.reshape(-1).tolist()]
        counts = np.array([len(p) for p in pieces], dtype=np.int64).reshape(strings.shape)
        width = int(counts.max()) if counts.size else 0
        padded = [p + [""] * (width - len(p)) for p in pieces]
        result = np.empty((*strings.shape, width), dtype=object)
        if result.size:
            result.reshape(-1, width)[...] = np.array(padded, dtype=object).reshape(-1, width)
        return result, counts

    return kernel


def _simple_upper(c: str) -> str:
    """Unicode's one-character uppercase of ``c``: its full mapping when that is one character,
    else its titlecase when that is ("ᾳ" -> "ᾼ"), else ``c`` itself ("ß")."""
    upper = c.upper()
    if len(upper) == 1:
        return upper
    title = c.title()
    return title if len(title) == 1 else c


def _simple_lower(c: str) -> str:
    """Unicode's one-character lowercase of ``c`` ("İ" -> "i"; it is the one letter whose full
    lowercase is longer, "i" and a combining dot)."""
    return c.lower()[0]


def _case_changer(action: str, locale: str) -> Callable[[str], str]:
    """``str -> str`` lowering or uppering (``action``) by the one-character mappings, ASCII
    letters only in the C and POSIX locales."""
    ascii_only = locale in ("C", "POSIX")
    one_char = _simple_upper if action == "UPPER" else _simple_lower
    whole = str.upper if action == "UPPER" else str.lower

    def change(text: str) -> str:
        if text.isascii():
            return whole(text)
        return "".join(whole(c) if c.isascii() else c if ascii_only else one_char(c) for c in text)

    return change


_ACTIONS = ("NONE", "LOWER", "UPPER")


def _is_utf8_locale(locale: str) -> bool:
    """The locales whose case mappings are Unicode's simple ones: "" (the default, en_US),
    en_* and C.UTF-8, with or without an encoding suffix naming UTF-8."""
    base, _, encoding = locale.partition(".")
    if encoding and encoding.lower().replace("-", "") != "utf8":
        return False
    return base == "" or base == "en" or base.startswith("en_") or (base == "C" and bool(encoding))


@register("StringNormalizer", 10)
def string_normalizer(node: OpNode) -> Kernel:
    """StringNormalizer: stopwords dropped, then the case changed (module docstring):
    ``["monday", "Tuesday"]`` with stopwords ``["MONDAY"]`` and ``UPPER`` gives ``["TUESDAY"]``."""
    action = str(node.attr("case_change_action", "NONE"))
    if action not in _ACTIONS:
        raise node.fail(f"'{action}' is not one of {', '.join(_ACTIONS)}", "case_change_action")
    sensitive = int(node.attr("is_case_sensitive", 0))
    if sensitive not in (0, 1):
        raise node.fail(f"{sensitive} must be 0 or 1", "is_case_sensitive")
    locale = str(node.attr("locale", ""))
    if locale not in ("C", "POSIX") and not _is_utf8_locale(locale):
        raise node.fail(
            f"'{locale}': ovpool changes case by Unicode's locale-independent one-character mappings "
            "(as en_US, C.UTF-8, or C for ASCII only); this locale may map letters otherwise (tr_TR maps i to İ)",
            "locale",
        )
    change = None if action == "NONE" else _case_changer(action, locale)
    fold = _case_changer("LOWER", locale)
    stopwords = [str(w) for w in node.attr("stopwords", [])]
    dropped = frozenset(stopwords if sensitive else (fold(w) for w in stopwords))

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        strings = _strings(node, x)
        if strings.ndim not in (1, 2) or (strings.ndim == 2 and strings.shape[0] != 1):
            raise node.fail(f"input 0 has shape {list(strings.shape)}; StringNormalizer takes [C] or [1, C]")
        words = strings.reshape(-1).tolist()
        kept = [w for w in words if (w if sensitive else fold(w)) not in dropped]
        if change is not None:
            kept = [change(w) for w in kept]
        if not kept:
            kept = [""]
        shape = (len(kept),) if strings.ndim == 1 else (1, len(kept))
        return (_objects(kept, shape),)

    return kernel


# RE2 constructs Python's re reads otherwise, or that RE2 rejects (which Python may accept), as
# (regex, what it is): escapes looked for in the pattern with its character classes blanked, the
# others with its escapes blanked too (an escaped "\\*+" is no possessive quantifier).
_REFUSED_ESCAPES = (
    (
        re.compile(r"(?:^|[^\\])(?:\\\\)*\\[0-9]"),
        "a backslash and a digit (Python: a back reference; RE2: an octal escape or an error)",
    ),
    (
        re.compile(r"(?:^|[^\\])(?:\\\\)*\\[ZzQEpPCGXNuU]"),
        r"\Z, \z, \Q..\E, \p, \C, \G, \X, \N or \u (the two engines differ or one lacks it)",
    ),
)
_REFUSED_SYNTAX = (
    (re.compile(r"\(\?[=!]|\(\?<[=!]"), "a lookaround (RE2 has none)"),
    (re.compile(r"\(\?>|\(\?\(|\(\?P=|\(\?#"), "an atomic group, conditional, named back reference or comment (RE2 has none)"),
    (re.compile(r"[*+?}][+]"), "a possessive quantifier (RE2 has none)"),
    (re.compile(r"\{,"), "'{,n}' (Python: at most n; RE2: literal text)"),
    (re.compile(r"\(\?[a-zA-Z-]*[xauLU]"), "an inline flag RE2 and Python do not share (x, a, u, L, U)"),
)
_COUNT = re.compile(r"\{(\d+)(?:,(\d*))?\}")
_CASELESS = re.compile(r"\(\?[a-zA-Z]*i")
_MULTILINE = re.compile(r"\(\?[a-zA-Z]*m")


def _outside_classes(pattern: str) -> tuple[str, str]:
    """``pattern`` with its character classes blanked (``a[bc]d`` -> ``a____d``), escapes kept, and
    the text of the classes alone: the refused constructs are looked for outside classes, POSIX
    classes ("[:alpha:]") inside."""
    outside, inside = [], []
    i, in_class, start = 0, False, 0
    while i < len(pattern):
        c = pattern[i]
        step = pattern[i : i + 2] if c == "\\" else c
        if in_class:
            inside.append(step)
            outside.append("_" * len(step))
            # "]" right after "[" or "[^" is a member, not the end
            if c == "]" and i > start + 1 and not (i == start + 2 and pattern[start + 1] == "^"):
                in_class = False
        elif c == "[":
            in_class, start = True, i
            inside.append(c)
            outside.append("_")
        else:
            outside.append(step)
        i += len(step)
    return "".join(outside), "".join(inside)


def _python_pattern(pattern: str) -> str:
    """``pattern`` for Python's re: without (?m), each unescaped ``$`` outside a class becomes
    ``\\Z`` (RE2's ``$`` is the end of the text; Python's also matches before a final newline, so
    ``a$\\n`` would match "a\\n"): ``(\\W|$)`` -> ``(\\W|\\Z)``."""
    outside, _ = _outside_classes(pattern)
    if _MULTILINE.search(outside):
        return pattern
    plain = re.sub(r"\\.", "__", outside)
    return "".join("\\Z" if c == "$" and plain[i] == "$" else c for i, c in enumerate(pattern))


def _re2_difference(pattern: str) -> str | None:
    """What in ``pattern`` RE2 and Python's ``re`` read differently (or RE2 rejects), or None.
    ``(a)\\1`` is a back reference in Python, an error in RE2; under (?m) ``$`` is allowed last
    only (elsewhere :func:`_python_pattern` makes it Python's ``\\Z``); POSIX classes
    ``[[:alpha:]]`` are RE2's only; counts above 1000 are RE2's errors; ``(?i)`` is refused together
    with ``\\d \\w \\s \\b`` (RE2 folds case by Unicode, matches those classes by ASCII; Python's
    re.ASCII would fold by ASCII too)."""
    outside, inside = _outside_classes(pattern)
    plain = re.sub(r"\\.", "__", outside)
    for finder, what in _REFUSED_ESCAPES:
        if finder.search(outside):
            return what
    for finder, what in _REFUSED_SYNTAX:
        if finder.search(plain):
            return what
    if "$" in plain[:-1] and _MULTILINE.search(plain):
        return "(?m) and '$' before the end of the pattern"
    if "[:" in inside:
        return "a POSIX class such as [[:alpha:]] (RE2's only)"
    if any(int(n) > 1000 for m in _COUNT.finditer(plain) for n in m.groups() if n):
        return "a repeat count above 1000 (RE2 rejects it)"
    if _CASELESS.search(plain) and re.search(r"\\[dwsbDWSB]", outside + inside):
        return r"(?i) with \d, \w, \s or \b (RE2 folds case by Unicode, matches these classes by ASCII)"
    return None


@register("RegexFullMatch", 20)
def regex_full_match(node: OpNode) -> Kernel:
    """RegexFullMatch: ``re.fullmatch(pattern, s)`` for each string (module docstring):
    ``"www\\.[\\w.-]+\\.\\bcom\\b"`` on ``["www.google.com", "www.facebook.com", "www.bbc.co.uk"]``
    gives ``[True, True, False]``."""
    if "pattern" not in node.attrs:
        raise node.fail("is required", "pattern")
    pattern = str(node.attrs["pattern"])
    difference = _re2_difference(pattern)
    if difference:
        raise node.fail(f"'{pattern}' has {difference}: ovpool matches with Python's re, not RE2", "pattern")
    ascii_classes = not _CASELESS.search(pattern)
    try:
        compiled = re.compile(_python_pattern(pattern), re.ASCII if ascii_classes else 0)
    except re.error as exc:
        raise node.fail(
            f"'{pattern}' is not a pattern Python's re reads ({exc}): ovpool matches with it, not RE2", "pattern"
        ) from None

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        strings = _strings(node, x)
        flat = [compiled.fullmatch(text) is not None for text in strings.reshape(-1).tolist()]
        return (np.array(flat, dtype=bool).reshape(strings.shape),)

    return kernel
