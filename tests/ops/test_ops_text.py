"""TfIdfVectorizer-9 against onnxruntime and the schema's n-gram counting computed here (every
mode, n-gram lengths 1-3, skips, integer and string pools, 1-D and 2-D inputs, weights); the
node's errors; ONNX's node test cases."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from harness import check, check_node_case, node_case_params, ovpool_of
from hypothesis import given, settings
from hypothesis import strategies as st

from ovpool.errors import ModelError


def schema_tfidf(x: np.ndarray, grams: list[tuple[Any, ...]], attrs: dict[str, Any]) -> np.ndarray:
    """The schema: Y[ngram_indexes[k]] counts the k-th pool n-gram among the n-grams of lengths
    min..max whose tokens are skip + 1 apart (skip 0..max_skip_count; unigrams once); IDF clips
    counts to 1; IDF/TFIDF scale Y[ngram_indexes[k]] by weights[k]."""
    indexes = attrs["ngram_indexes"]
    rows = x.reshape(-1, x.shape[-1]).tolist() if x.ndim == 2 else [x.tolist()]
    y = np.zeros((len(rows), max(indexes) + 1), np.float64)
    for r, tokens in enumerate(rows):
        for n in range(attrs["min_gram_length"], attrs["max_gram_length"] + 1):
            for skip in range(attrs["max_skip_count"] + 1) if n > 1 else [0]:
                for start in range(len(tokens)):
                    positions = [start + j * (skip + 1) for j in range(n)]
                    if positions[-1] >= len(tokens):
                        continue
                    gram = tuple(tokens[p] for p in positions)
                    for k, pool_gram in enumerate(grams):
                        if gram == pool_gram:
                            y[r, indexes[k]] += 1
    if attrs["mode"] == "IDF":
        y = np.minimum(y, 1)
    if attrs["mode"] != "TF" and "weights" in attrs:
        for k, w in enumerate(attrs["weights"]):
            y[:, indexes[k]] *= np.float32(w)
    return (y if x.ndim == 2 else y[0]).astype(np.float32)


@st.composite
def tfidf_cases(draw: st.DrawFn, strings: bool) -> tuple[np.ndarray, list[tuple[Any, ...]], dict[str, Any]]:
    alphabet = ["a", "b", "c", "d"] if strings else [0, 1, 2, 3]
    grams: list[tuple[Any, ...]] = []
    counts, pool = [], []
    for n in (1, 2, 3):  # onnxruntime wants an ngram_counts entry up to max_gram_length
        counts.append(len(pool))
        chosen = draw(st.lists(st.tuples(*[st.sampled_from(alphabet)] * n), min_size=n == 1, max_size=4, unique=True))
        for gram in chosen:
            grams.append(gram)
            pool.extend(gram)
    indexes = draw(st.permutations(list(range(len(grams)))))
    min_n = draw(st.integers(1, 3))
    attrs: dict[str, Any] = {
        "mode": draw(st.sampled_from(["TF", "IDF", "TFIDF"])),
        "min_gram_length": min_n,
        "max_gram_length": draw(st.integers(min_n, 3)),
        "max_skip_count": draw(st.integers(0, 3)),
        "ngram_counts": counts,
        "ngram_indexes": list(indexes),
        ("pool_strings" if strings else "pool_int64s"): pool,
    }
    if draw(st.booleans()):
        attrs["weights"] = [draw(st.sampled_from([0.5, 1.0, 2.0, 3.25])) for _ in grams]
    shape = draw(st.sampled_from([(8,), (2, 6), (3, 1), (1, 10)]))
    rng = np.random.default_rng(draw(st.integers(0, 2**16)))
    tokens = rng.choice(np.array(alphabet, dtype=object if strings else np.int64), shape)
    if not strings:
        tokens = tokens.astype(draw(st.sampled_from([np.int32, np.int64])))
    return tokens, grams, attrs


@pytest.mark.parametrize("strings", [False, True], ids=["int", "string"])
@settings(max_examples=30, deadline=None)
@given(data=st.data())
def test_tfidf_vectorizer(strings: bool, data: st.DataObject) -> None:
    x, grams, attrs = data.draw(tfidf_cases(strings))
    (y,) = ovpool_of("TfIdfVectorizer", 9, [x], attrs)
    np.testing.assert_array_equal(y, schema_tfidf(x, grams, attrs))
    check("TfIdfVectorizer", 9, [x], attrs)


def test_tfidf_schema_example() -> None:
    """The schema's example: [94, 17, 36, 12, 28] with skip 2 has the bigrams (94, 12), (17, 28)."""
    attrs = {"mode": "TF", "min_gram_length": 2, "max_gram_length": 2, "max_skip_count": 2}
    attrs |= {"ngram_counts": [0, 0], "ngram_indexes": [0, 1], "pool_int64s": [94, 12, 17, 36]}
    (y,) = ovpool_of("TfIdfVectorizer", 9, [np.array([94, 17, 36, 12, 28], np.int64)], attrs)
    assert y.tolist() == [1, 1]  # (94, 12) at skip 2, (17, 36) at skip 0


BASE = {"mode": "TF", "min_gram_length": 1, "max_gram_length": 1, "max_skip_count": 0, "ngram_counts": [0]}
ERRORS = [
    (BASE | {"ngram_indexes": [0, 1]}, np.int64([1]), "pool_int64s"),  # no pool
    (BASE | {"ngram_indexes": [0], "pool_int64s": [1], "pool_strings": ["a"]}, np.int64([1]), "pool_int64s"),
    (BASE | {"ngram_indexes": [0], "pool_int64s": [1, 2]}, np.int64([1]), "ngram_indexes"),  # 2 n-grams, 1 index
    (BASE | {"ngram_counts": [0, 3], "ngram_indexes": [0, 1], "pool_int64s": [1, 2]}, np.int64([1]), "ngram_counts"),
    (BASE | {"mode": "BM25", "ngram_indexes": [0], "pool_int64s": [1]}, np.int64([1]), "mode"),
    (BASE | {"min_gram_length": 2, "ngram_indexes": [0], "pool_int64s": [1]}, np.int64([1]), "max_gram_length"),
    (BASE | {"mode": "IDF", "ngram_indexes": [0], "pool_int64s": [1], "weights": [1.0, 2.0]}, np.int64([1]), "weights"),
    (BASE | {"ngram_indexes": [0], "pool_int64s": [1]}, np.array(["a"], dtype=object), "pool_int64s"),
    (BASE | {"ngram_indexes": [0], "pool_int64s": [1]}, np.float32([1]), "float32"),
    (BASE | {"ngram_indexes": [0], "pool_int64s": [1]}, np.zeros((1, 1, 1), np.int64), "shape"),
    ({k: v for k, v in BASE.items() if k != "mode"} | {"ngram_indexes": [0], "pool_int64s": [1]}, np.int64([1]), "mode"),
]


@pytest.mark.parametrize(("attrs", "x", "match"), ERRORS, ids=[f"error-{i}" for i in range(len(ERRORS))])
def test_tfidf_errors(attrs: dict[str, Any], x: np.ndarray, match: str) -> None:
    with pytest.raises(ModelError, match=match):
        ovpool_of("TfIdfVectorizer", 9, [x], attrs)


@pytest.mark.parametrize("case", node_case_params(("TfIdfVectorizer",)))
def test_onnx_node_cases(case: Any) -> None:
    check_node_case(case)
