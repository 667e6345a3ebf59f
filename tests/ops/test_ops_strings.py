"""StringConcat, StringSplit, StringNormalizer and RegexFullMatch against onnxruntime (their one
since-version each), ONNX's node and model cases, drawn strings, and the refusals by name."""

from __future__ import annotations

import warnings
from typing import Any

import harness
import numpy as np
import pytest
from harness import assert_node_error, assert_same, check, check_node_case, node_case_params, ovpool_of
from hypothesis import given
from hypothesis import strategies as st

STRING_OPS = ("StringConcat", "StringSplit", "StringNormalizer", "RegexFullMatch")


def strs(*values: str) -> np.ndarray:
    return np.array(values, dtype=object)


def _model_cases() -> list[Any]:
    from onnx.backend.test.case import model

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import onnx.backend.test.case.model.stringnormalizer  # noqa: F401  (registers the model cases)
    return [pytest.param(c, id=c.name) for c in model._SimpleModelTestCases if c.name.startswith("test_strnorm")]


@pytest.mark.parametrize("case", node_case_params(STRING_OPS) + _model_cases())
def test_onnx_cases(case: Any) -> None:
    check_node_case(case)


# ---------------------------------------------------------------- StringConcat

texts = st.text(alphabet=st.sampled_from("ab -\t\nÄß✓"), max_size=6)


@given(
    a=st.lists(texts, min_size=1, max_size=6),
    b=st.lists(texts, min_size=1, max_size=3),
    shape=st.sampled_from(["same", "row", "0d"]),
)
@harness.examples(15)
def test_string_concat(a: list[str], b: list[str], shape: str) -> None:
    """Same shapes, a row broadcast against a column, a 0-d operand."""
    x = strs(*a)
    if shape == "same":
        y = strs(*(b * len(a))[: len(a)])
    elif shape == "row":
        x, y = x.reshape(-1, 1), strs(*b).reshape(1, -1)
    else:
        y = np.array(b[0], dtype=object)
    check("StringConcat", 20, [x, y])


def test_string_concat_of_two_scalars_is_a_string_scalar() -> None:
    (z,) = check("StringConcat", 20, [np.array("ab", dtype=object), np.array("c", dtype=object)])
    assert z.dtype == object and z.shape == () and z.item() == "abc"


# ---------------------------------------------------------------- StringSplit


def _whitespace_split(text: str, maxsplit: int | None) -> list[str]:
    """The schema's split on whitespace runs, by hand: tokens of non-whitespace characters (ASCII
    whitespace), after ``maxsplit`` of them the rest up to the last token's end."""
    tokens: list[tuple[int, int]] = []
    i = 0
    while i < len(text):
        if text[i] in " \t\n\x0b\x0c\r":
            i += 1
            continue
        j = i
        while j < len(text) and text[j] not in " \t\n\x0b\x0c\r":
            j += 1
        tokens.append((i, j))
        i = j
    if maxsplit is not None and len(tokens) > maxsplit + 1:
        tokens = tokens[:maxsplit] + [(tokens[maxsplit][0], tokens[-1][1])]
    return [text[a:b] for a, b in tokens]


@given(
    words=st.lists(st.text(alphabet=st.sampled_from("ab- \t\n\x0b\x0c\r\xa0\u2003"), max_size=8), min_size=1, max_size=6),
    delimiter=st.sampled_from([None, "", "-", "--", " ", "ab"]),
    maxsplit=st.none() | st.integers(0, 3),
    rows=st.booleans(),
)
@harness.examples(40)
def test_string_split(words: list[str], delimiter: str | None, maxsplit: int | None, rows: bool) -> None:
    """Delimiters of one and two characters, none (runs of whitespace; no-break and em spaces are
    not ASCII whitespace), empty strings, maxsplit 0..3; a 1-D and a 2-D input. onnxruntime is the
    oracle except where a string split on whitespace holds other ASCII whitespace than the space
    (it takes only the space): there the schema's rule, by hand."""
    x = strs(*words)
    if rows and len(words) % 2 == 0:
        x = x.reshape(2, -1)
    attrs: dict[str, Any] = {}
    if delimiter is not None:
        attrs["delimiter"] = delimiter
    if maxsplit is not None:
        attrs["maxsplit"] = maxsplit
    if delimiter or not any(c in w for w in words for c in "\t\n\x0b\x0c\r"):
        check("StringSplit", 20, [x], attrs, n_outputs=2)
        return
    pieces = [_whitespace_split(w, maxsplit) for w in x.reshape(-1).tolist()]
    width = max(len(p) for p in pieces)
    expected = np.array([p + [""] * (width - len(p)) for p in pieces], dtype=object).reshape(*x.shape, width)
    y, z = ovpool_of("StringSplit", 20, [x], attrs, n_outputs=2)
    assert_same(y, expected)
    assert_same(z, np.array([len(p) for p in pieces], dtype=np.int64).reshape(x.shape))


def test_string_split_examples() -> None:
    y, z = ovpool_of("StringSplit", 20, [strs("a-b-c", "d", "")], {"delimiter": "-", "maxsplit": 1}, n_outputs=2)
    assert_same(y, np.array([["a", "b-c"], ["d", ""], ["", ""]], dtype=object))
    assert_same(z, np.array([2, 1, 0], dtype=np.int64))


# ---------------------------------------------------------------- StringNormalizer

WORDS = ["monday", "Monday", "MONDAY", "tuesday", "Straße", "İstanbul", "ﬁne", "ᾳ", "Ǆemal", "ΣΑΣ", "k", "\u212a", ""]


@pytest.mark.parametrize("action", ["NONE", "LOWER", "UPPER"])
@pytest.mark.parametrize("sensitive", [0, 1])
@pytest.mark.parametrize("locale", ["C", "C.UTF-8"])
@pytest.mark.parametrize("stopwords", [None, ["monday"], ["MONDAY", "k", "ᾳ"], WORDS])
@pytest.mark.parametrize("rows", [False, True])
def test_string_normalizer(action: str, sensitive: int, locale: str, stopwords: list[str] | None, rows: bool) -> None:
    """Every action and case sensitivity, stopwords matched with and without case (the Kelvin sign
    lowers to k), all words dropped (the [1] / [1, 1] empty string), letters whose full case
    mapping is longer than one character ("ß", "İ", "ﬁ", "ᾳ"). Locale C changes ASCII only; C.UTF-8
    is en_US's mapping (onnxruntime needs the locale installed; en_US is not, here)."""
    x = strs(*WORDS).reshape((1, -1) if rows else (-1,))
    attrs: dict[str, Any] = {"case_change_action": action, "is_case_sensitive": sensitive, "locale": locale}
    if stopwords is not None:
        attrs["stopwords"] = stopwords
    check("StringNormalizer", 10, [x], attrs)


def test_string_normalizer_default_locale_is_unicode() -> None:
    """The default locale (en_US) maps by Unicode's one-character rules, as C.UTF-8 does."""
    (y,) = ovpool_of("StringNormalizer", 10, [strs("Straße", "İx", "ᾳ")], {"case_change_action": "UPPER"})
    assert_same(y, strs("STRAßE", "İX", "ᾼ"))
    (y,) = ovpool_of("StringNormalizer", 10, [strs("Straße", "İx", "ᾼ")], {"case_change_action": "LOWER", "locale": "en_GB"})
    assert_same(y, strs("straße", "ix", "ᾳ"))


# ---------------------------------------------------------------- RegexFullMatch

PATTERNS = [
    r"www\.[\w.-]+\.\bcom\b",
    r"[a-z]+@[a-z]+\.(com|org)",
    r"\d{2,3}-\d+",
    r"\s*\w+\s*",
    r"(?i)straße|K",
    r"(?s)a.b",
    r"a.b",
    r"^ab$",
    r"(?m)ab$",
    r"[^a-c]*",
    r"(a|ab)(c|bcd)",
    r"",
    r"[\d\-]+",
    r"\bx\b.*",
    r"(?:ab)+?c",
    r"\x41\t\.\\",
]
SUBJECTS = ["www.google.com", "www.bbc.co.uk", "me@x.org", "12-345", " word ", "wörd", "٣٤-١", "STRASSE", "Straße", "\u212a"]
SUBJECTS += ["a\nb", "axb", "ab\n", "ab", "def", "abcd", "", "x y", "xy", "ababc", "A\t.\\", "\u00e9"]


@pytest.mark.parametrize("pattern", PATTERNS)
def test_regex_full_match(pattern: str) -> None:
    """Unicode digits and letters against \\d and \\w (ASCII in RE2), case folding of ß and the
    Kelvin sign, dot and newlines, anchors, alternation, lazy repeats, escapes."""
    check("RegexFullMatch", 20, [strs(*SUBJECTS).reshape(2, -1)], {"pattern": pattern})


@pytest.mark.parametrize(
    "pattern, what",
    [
        (r"(a)\1", "back reference"),
        (r"a(?=b)", "lookaround"),
        (r"a(?<!b)", "lookaround"),
        (r"(?>a)", "atomic group"),
        (r"a++", "possessive"),
        (r"a{,2}", "at most n"),
        (r"a\Z", r"\\Z"),
        (r"\p{Greek}", r"\\p"),
        (r"(?m)a$b", "'\\$' before the end"),
        (r"[[:alpha:]]+", "POSIX class"),
        (r"a{1001}", "above 1000"),
        (r"(?i)\w+", r"\(\?i\)"),
        (r"(?x) a", "inline flag"),
        (r"(a", "not a pattern Python.s re reads"),
        (r"\x{41}", "not a pattern Python.s re reads"),
    ],
)
def test_regex_differences_are_refused(pattern: str, what: str) -> None:
    assert_node_error("RegexFullMatch", 20, [strs("a")], {"pattern": pattern}, match=rf"regexfullmatch_node.*'pattern'.*{what}")


def test_escaped_constructs_are_not_refused() -> None:
    """An escaped backslash before a digit or Z, a '$' in a class or escaped, an escaped '*+'."""
    (y,) = ovpool_of("RegexFullMatch", 20, [strs("\\1", "a$b", "*", "\\Z")], {"pattern": r"\\1|a[$]b|a\$b|\*+|\\Z"})
    assert y.tolist() == [True, True, True, True]


# ---------------------------------------------------------------- refusals


@pytest.mark.parametrize(
    "op, inputs, attrs, match",
    [
        ("StringSplit", [strs("a")], {"maxsplit": -1}, "attribute 'maxsplit'"),
        ("StringNormalizer", [strs("a")], {"case_change_action": "TITLE"}, "attribute 'case_change_action'"),
        ("StringNormalizer", [strs("a")], {"is_case_sensitive": 2}, "attribute 'is_case_sensitive'"),
        ("StringNormalizer", [strs("a")], {"locale": "tr_TR"}, "attribute 'locale': 'tr_TR'"),
        ("StringNormalizer", [strs("a", "b").reshape(2, 1)], {}, r"shape \[2, 1\]"),
        ("RegexFullMatch", [strs("a")], {}, "attribute 'pattern': is required"),
        ("StringConcat", [strs("a", "b"), strs("a", "b", "c")], {}, "do not broadcast"),
    ],
)
def test_bad_nodes_are_refused(op: str, inputs: list[np.ndarray], attrs: dict[str, Any], match: str) -> None:
    assert_node_error(op, 20 if op != "StringNormalizer" else 10, inputs, attrs, match=rf"{op.lower()}_node.*{match}")
