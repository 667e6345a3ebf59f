"""Text features: TfIdfVectorizer-9.

TfIdfVectorizer counts, in each row of a 1-D [C] or 2-D [N, C] input (int32/int64 tokens against
``pool_int64s``, strings against ``pool_strings``), the n-grams of its pool. The pool holds the
n-grams by length: ``ngram_counts[i]`` is where the (i+1)-grams start (each takes i+1 pool
entries), so pool [2, 3, 5, 4, 5, 6, 7, 8, 6, 7] with ngram_counts [0, 4] holds the unigrams 2, 3,
5, 4 and the bigrams (5, 6), (7, 8), (6, 7); the k-th n-gram of the pool (in that order) is
counted at output coordinate ``ngram_indexes[k]``. The output has ``max(ngram_indexes) + 1``
columns (float32).

An n-gram of length n in ``[min_gram_length, max_gram_length]`` takes tokens ``skip + 1`` apart
for each skip in ``0..max_skip_count`` (unigrams are counted once, not once per skip): tokens
[94, 17, 36, 12, 28] have the bigrams (94, 17), (17, 36), (36, 12), (12, 28) at skip 0 and (94,
12), (17, 28) at skip 2. ``mode`` "TF" gives the counts, "IDF" 1 for each n-gram found, "TFIDF"
the counts; "IDF" and "TFIDF" then multiply the k-th n-gram's value by ``weights[k]`` (when
given): ``Y[ngram_indexes[k]] *= weights[k]``, as the schema and onnxruntime do.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, register
from ovpool.engine.ops.checks import int_attr, str_attr, type_guard

MODES = ("TF", "IDF", "TFIDF")


def _pool_table(node: OpNode, pool: Sequence[Any], counts: Sequence[int], indexes: Sequence[int]) -> dict[tuple[Any, ...], int]:
    """The pool's n-grams mapped to their output coordinates, checked against ``ngram_counts``."""
    starts = [int(c) for c in counts] + [len(pool)]
    table: dict[tuple[Any, ...], int] = {}
    ordinal = 0
    for length, (start, end) in enumerate(zip(starts, starts[1:]), start=1):
        if not 0 <= start <= end <= len(pool) or (end - start) % length:
            raise node.fail(
                f"{list(counts)}: the {length}-grams span pool entries {start}..{end}, not a whole number of "
                f"{length}-grams within the pool of {len(pool)}",
                "ngram_counts",
            )
        for first in range(start, end, length):
            if ordinal >= len(indexes):
                raise node.fail(f"has {len(indexes)} entries; the pool holds more n-grams", "ngram_indexes")
            table.setdefault(tuple(pool[first : first + length]), int(indexes[ordinal]))
            ordinal += 1
    if ordinal != len(indexes):
        raise node.fail(f"has {len(indexes)} entries for the {ordinal} n-grams of the pool", "ngram_indexes")
    return table


@register("TfIdfVectorizer", 9)
def tfidf_vectorizer(node: OpNode) -> Kernel:
    """TfIdfVectorizer-9: tokens [2, 5, 6, 2] with the pool above, bigrams only (min = max = 2),
    skip 0, ngram_indexes 0..6 give Y = [0, 0, 0, 0, 1, 0, 0] (one (5, 6), at coordinate 4)."""
    for name in ("mode", "min_gram_length", "max_gram_length", "max_skip_count", "ngram_counts", "ngram_indexes"):
        if name not in node.attrs:
            raise node.fail("is required", name)
    mode = str_attr(node, "mode", None, MODES)
    min_n = int_attr(node, "min_gram_length", 0)
    max_n = int_attr(node, "max_gram_length", 0)
    max_skip = int_attr(node, "max_skip_count", 0)
    if min_n < 1 or max_n < min_n:
        raise node.fail(f"min_gram_length {min_n} and max_gram_length {max_n}: 1 <= min <= max is needed", "max_gram_length")
    if max_skip < 0:
        raise node.fail(f"{max_skip} is negative", "max_skip_count")
    ints, strings = node.attr("pool_int64s"), node.attr("pool_strings")
    if (ints is None) == (strings is None):
        raise node.fail("exactly one of pool_int64s and pool_strings must be set", "pool_int64s")
    indexes = [int(i) for i in node.attr("ngram_indexes")]
    if not indexes or min(indexes) < 0:
        raise node.fail(f"{indexes} must be non-negative output coordinates, at least one", "ngram_indexes")
    width = max(indexes) + 1
    table = _pool_table(node, ints if ints is not None else strings, node.attr("ngram_counts"), indexes)
    weights = node.attr("weights")
    scale = None
    if weights is not None and mode != "TF":
        if len(weights) != len(indexes):
            raise node.fail(f"has {len(weights)} values for the {len(indexes)} n-grams of the pool", "weights")
        scale = np.ones(width, np.float32)
        scale[indexes] = np.array(weights, np.float32)
    check = type_guard(node)
    lengths = range(min_n, max_n + 1)

    def row_counts(tokens: list[Any], out: np.ndarray) -> None:
        for n in lengths:
            for skip in range(max_skip + 1) if n > 1 else (0,):
                step = skip + 1
                for start in range(len(tokens) - (n - 1) * step):
                    found = table.get(tuple(tokens[start : start + (n - 1) * step + 1 : step]))
                    if found is not None:
                        out[found] += 1

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        check(x)
        if (x.dtype == object or x.dtype.kind == "U") != (strings is not None):
            raise node.fail(f"input of type {x.dtype} against {'pool_strings' if strings is not None else 'pool_int64s'}")
        if x.ndim not in (1, 2):
            raise node.fail(f"input of shape {x.shape}: it must be [C] or [N, C]")
        rows = x.reshape(x.shape[0] if x.ndim == 2 else 1, x.shape[-1])
        y = np.zeros((rows.shape[0], width), np.float32)
        for row, out in zip(rows.tolist(), y):
            row_counts([str(t) for t in row] if strings is not None else row, out)
        if mode == "IDF":
            y = (y > 0).astype(np.float32)
        if scale is not None:
            y *= scale
        return (y if x.ndim == 2 else y[0],)

    return kernel
