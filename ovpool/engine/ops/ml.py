"""The ai.onnx.ml operators of ONNX's node cases: ArrayFeatureExtractor-1, Binarizer-1,
LabelEncoder-1/2/4 and TreeEnsemble-5.

* ArrayFeatureExtractor: ``X[..., Y]`` on the last axis, ``Y`` flattened; a 1-D ``X`` gives a
  [1, len(Y)] result (onnxruntime's shape): ``[[0, 1, 2], [3, 4, 5]]`` at ``[2, 0]`` is
  ``[[2, 0], [5, 3]]``. An index outside ``[0, last)`` is the node's error.
* Binarizer: 1 where ``X > threshold`` (the float attribute, compared exactly: int64 7 against
  6.5 is 1, against 7.0 is 0), else 0, in X's type; NaN gives 0 (onnxruntime refuses NaN).
* LabelEncoder-1: strings to int64 (the index in ``classes_strings``, else ``default_int64``) or
  int64 to strings (``classes_strings[i]``, else ``default_string``).
  LabelEncoder-2: ``keys_*`` mapped to ``values_*`` (strings, int64s, floats), else ``default_*``
  of the values' type; float keys compared bit for bit, as the schema says (a NaN key matches a NaN
  of the same bits, -0.0 does not match 0.0; onnxruntime compares values). A repeated key keeps
  its first value (onnxruntime's choice; the schema does not say).
  LabelEncoder-4: also ``keys_tensor``/``values_tensor`` (int16, int32, int64, float, double,
  string) and ``default_tensor`` (else the ``default_*`` of the values' type where they are string,
  int64 or float, else -1 or -0.0: double values ignore ``default_float``); float keys compared
  by value, a NaN key matching every NaN; a repeated key takes its last value, as the schema says
  (onnxruntime keeps the first).
* TreeEnsemble-5: each row of ``X`` [N, F] walks every tree from its root: at an interior node,
  feature ``nodes_featureids`` against ``nodes_splits`` by ``nodes_modes`` (0 ``<=``, 1 ``<``,
  2 ``>=``, 3 ``>``, 4 ``==``, 5 ``!=``, 6 membership in the node's set of ``membership_values``,
  sets in node order delimited by NaN), compared exactly (in float64, which holds every float16,
  float32 and double value: 0.5 is no member of {0, 1}, where onnxruntime truncates it to 0); a NaN
  feature takes the true branch where ``nodes_missing_value_tracks_true`` is 1, else the false one,
  at every mode (onnxruntime's != takes the true one). The leaf reached adds its weight to
  its target: SUM (default), AVERAGE (the sum over the number of trees), MIN, MAX (a target no
  leaf reached is 0), accumulated in X's type in tree order; then ``post_transform``: NONE,
  SOFTMAX, LOGISTIC (the schema's codes 1 and 2; onnxruntime swaps them, and leaves a single
  target untransformed), SOFTMAX_ZERO (softmax of the non-zero scores, zeros kept), PROBIT (the
  inverse normal CDF, exact: onnxruntime approximates erfinv to about 1e-3). A score of 2.0 under
  LOGISTIC is 0.8808; scores [1, 0] under SOFTMAX_ZERO are [1, 0].
"""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from statistics import NormalDist
from typing import Any

import numpy as np

from ovpool.engine.ops.base import Kernel, OpNode, register

ML = "ai.onnx.ml"


def _types(node: OpNode, x: np.ndarray, allowed: Sequence[str], what: str = "input 0") -> str:
    """The element type name of ``x`` (``str`` for strings), refused unless ``allowed``."""
    name = "str" if x.dtype == object or x.dtype.kind == "U" else x.dtype.name
    if name not in allowed:
        shown = ", ".join("string" if a == "str" else a for a in allowed)
        raise node.fail(f"{what} has type {'string' if name == 'str' else name}; {node.op_type}-{node.since} takes {shown}")
    return name


# ---------------------------------------------------------------- ArrayFeatureExtractor, Binarizer


@register("ArrayFeatureExtractor", 1, domain=ML)
def array_feature_extractor(node: OpNode) -> Kernel:
    """ArrayFeatureExtractor: the entries ``Y`` of X's last axis (module docstring)."""

    def kernel(x: np.ndarray, y: np.ndarray) -> tuple[np.ndarray, ...]:
        _types(node, x, ("float32", "float64", "int64", "int32", "str"))
        _types(node, y, ("int64",), "input 1 (Y)")
        if x.ndim == 0:
            raise node.fail("input 0 is a scalar: it has no last axis to select from")
        indices = y.reshape(-1)
        last = x.shape[-1]
        bad = indices[(indices < 0) | (indices >= last)]
        if bad.size:
            raise node.fail(f"index {int(bad[0])} of Y is outside [0, {last})")
        picked = x[..., indices]
        return (picked.reshape(1, -1) if x.ndim == 1 else picked,)

    return kernel


@register("Binarizer", 1, domain=ML)
def binarizer(node: OpNode) -> Kernel:
    """Binarizer: ``X > threshold`` as 1 or 0 in X's type (module docstring)."""
    threshold = float(node.attr("threshold", 0.0))

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        kind = _types(node, x, ("float32", "float64", "int64", "int32"))
        if kind.startswith("int"):
            # integers above t are those above floor(t); compared in the integer type, exactly
            info = np.iinfo(x.dtype)
            if math.isnan(threshold) or threshold >= int(info.max):
                above = np.zeros(x.shape, dtype=bool)
            elif threshold < int(info.min):
                above = np.ones(x.shape, dtype=bool)
            else:
                above = x > math.floor(threshold)
        else:
            above = x.astype(np.float64) > threshold
        return (above.astype(x.dtype),)

    return kernel


# ---------------------------------------------------------------- LabelEncoder


def _lookup(keys: Sequence[Any], values: Sequence[Any], last_wins: bool) -> dict[Any, Any]:
    table: dict[Any, Any] = {}
    for key, value in zip(keys, values):
        if last_wins or key not in table:
            table[key] = value
    return table


def _encoder(
    node: OpNode, table: dict[Any, Any], default: Any, out_dtype: np.dtype, key_of: Callable[[np.ndarray], list[Any]], takes: str
) -> Kernel:
    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        _types(node, x, (takes,))
        mapped = [table.get(k, default) for k in key_of(x)]
        result = np.empty(x.shape, dtype=out_dtype)
        result.reshape(-1)[...] = np.array(mapped, dtype=out_dtype) if mapped else np.zeros(0, out_dtype)
        return (result,)

    return kernel


def _plain_keys(x: np.ndarray) -> list[Any]:
    return [str(v) for v in x.reshape(-1).tolist()] if x.dtype.kind in "OU" else x.reshape(-1).tolist()


@register("LabelEncoder", 1, 1, domain=ML)
def label_encoder_1(node: OpNode) -> Kernel:
    """LabelEncoder-1: ``classes_strings`` ["a", "b"] maps "b" to 1 and 1 to "b"; strings not
    there to ``default_int64`` (-1), indices outside to ``default_string`` ("_Unused")."""
    classes = [str(c) for c in node.attr("classes_strings", [])]
    default_int = int(node.attr("default_int64", -1))
    default_str = str(node.attr("default_string", "_Unused"))
    to_int = _lookup(classes, range(len(classes)), last_wins=False)
    to_str = dict(enumerate(classes))
    from_strings = _encoder(node, to_int, default_int, np.dtype(np.int64), _plain_keys, "str")
    from_ints = _encoder(node, to_str, default_str, np.dtype(object), _plain_keys, "int64")

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        return from_strings(x) if x.dtype.kind in "OU" else from_ints(x)

    return kernel


_LIST_TYPES = {
    "strings": ("str", np.dtype(object)),
    "int64s": ("int64", np.dtype(np.int64)),
    "floats": ("float32", np.dtype(np.float32)),
}
_DEFAULTS = {"str": ("default_string", "_Unused"), "int": ("default_int64", -1), "float": ("default_float", -0.0)}


def _one_of(node: OpNode, prefix: str, tensor: bool) -> tuple[str, np.ndarray]:
    """The one ``keys_*`` (or ``values_*``) attribute given: its type name and values as an array."""
    names = [f"{prefix}_{kind}" for kind in _LIST_TYPES] + ([f"{prefix}_tensor"] if tensor else [])
    given = [name for name in names if name in node.attrs]
    if len(given) != 1:
        raise node.fail(
            f"needs exactly one of {', '.join(names)}; it has {len(given)}" + (f" ({', '.join(given)})" if given else "")
        )
    name = given[0]
    if name.endswith("_tensor"):
        array = np.asarray(node.attrs[name])
        if array.ndim != 1:
            raise node.fail(f"must be 1-D, got shape {list(array.shape)}", name)
        kind = _types(node, array, ("str", "int64", "float32", "int32", "int16", "float64"), f"attribute '{name}'")
        return kind, array.astype(object) if kind == "str" else array
    kind, dtype = _LIST_TYPES[name.rpartition("_")[2]]
    return kind, np.array(node.attrs[name], dtype=dtype)


def _family(kind: str) -> str:
    return "str" if kind == "str" else "float" if kind.startswith("float") else "int"


def _float_key_v2(x: np.ndarray) -> list[Any]:
    """LabelEncoder-2's float keys: the float32 bits."""
    return np.asarray(x, dtype=np.float32).view(np.uint32).reshape(-1).tolist()


def _float_key_v4(x: np.ndarray) -> list[Any]:
    """LabelEncoder-4's float keys: the value, every NaN one key (None); -0.0 and 0.0 one key."""
    return [None if v != v else v for v in x.reshape(-1).tolist()]


@register("LabelEncoder", 2, domain=ML)
def label_encoder(node: OpNode) -> Kernel:
    """LabelEncoder-2/4: keys_strings ["Amy", "Sally"], values_int64s [5, 6], default_int64 -1
    map ["Dori", "Amy", "Sally"] to [-1, 5, 6] (module docstring for the rules of each version)."""
    v4 = node.since >= 4
    key_kind, keys = _one_of(node, "keys", v4)
    value_kind, values = _one_of(node, "values", v4)
    if len(keys) != len(values):
        raise node.fail(f"{len(keys)} keys and {len(values)} values: they must be as many")
    out_dtype = np.dtype(object) if value_kind == "str" else values.dtype
    if v4 and "default_tensor" in node.attrs:
        default_array = np.asarray(node.attrs["default_tensor"])
        if default_array.size != 1 or _family(
            _types(node, default_array, (value_kind,), "attribute 'default_tensor'")
        ) != _family(value_kind):
            raise node.fail(f"must hold one value of the values' type {value_kind}", "default_tensor")
        default = default_array.reshape(-1).tolist()[0]
    else:
        name, fallback = _DEFAULTS[_family(value_kind)]
        # a default_* attribute holds a string, an int64 or a float32: it is the default of values
        # of just that type; others (double, int32, int16) take the schema's -1 or -0.0
        default = node.attr(name, fallback) if value_kind in ("str", "int64", "float32") else fallback
    value_list = [str(v) for v in values.tolist()] if value_kind == "str" else values.tolist()
    if key_kind.startswith("float"):
        key_of = _float_key_v4 if v4 else _float_key_v2
    else:
        key_of = _plain_keys
    table = _lookup(key_of(keys), value_list, last_wins=v4)
    return _encoder(node, table, default, out_dtype, key_of, key_kind)


# ---------------------------------------------------------------- TreeEnsemble

_MODES = ("BRANCH_LEQ", "BRANCH_LT", "BRANCH_GTE", "BRANCH_GT", "BRANCH_EQ", "BRANCH_NEQ", "BRANCH_MEMBER")
_MEMBER = 6
_AGGREGATES = ("AVERAGE", "SUM", "MIN", "MAX")
_TRANSFORMS = ("NONE", "SOFTMAX", "LOGISTIC", "SOFTMAX_ZERO", "PROBIT")
_TREE_TYPES = ("float32", "float64", "float16")


def _ints(node: OpNode, name: str, count: int | None = None) -> np.ndarray:
    if name not in node.attrs:
        raise node.fail("is required", name)
    values = np.array(node.attrs[name], dtype=np.int64).reshape(-1)
    if count is not None and len(values) != count:
        raise node.fail(f"has {len(values)} entries; nodes_featureids has {count}", name)
    return values


def _floats(node: OpNode, name: str) -> np.ndarray:
    if name not in node.attrs:
        raise node.fail("is required", name)
    array = np.asarray(node.attrs[name])
    _types(node, array, _TREE_TYPES, f"attribute '{name}'")
    return array.reshape(-1)


class _Trees:
    """TreeEnsemble-5's attributes, checked: the node arrays, the member sets, the leaves."""

    def __init__(self, node: OpNode) -> None:
        self.features = _ints(node, "nodes_featureids")
        n = len(self.features)
        modes = np.asarray(node.attrs.get("nodes_modes", []))
        if "nodes_modes" not in node.attrs:
            raise node.fail("is required", "nodes_modes")
        if modes.dtype != np.uint8:
            raise node.fail(f"must be a uint8 tensor, got {modes.dtype}", "nodes_modes")
        self.modes = modes.reshape(-1).astype(np.int64)
        if len(self.modes) != n or np.any(self.modes > _MEMBER):
            raise node.fail(f"must hold {n} modes, each 0..6 ({', '.join(_MODES)})", "nodes_modes")
        self.splits = _floats(node, "nodes_splits").astype(np.float64)
        if len(self.splits) != n:
            raise node.fail(f"has {len(self.splits)} entries; nodes_featureids has {n}", "nodes_splits")
        self.true_ids = _ints(node, "nodes_truenodeids", n)
        self.false_ids = _ints(node, "nodes_falsenodeids", n)
        self.true_leaf = _ints(node, "nodes_trueleafs", n).astype(bool)
        self.false_leaf = _ints(node, "nodes_falseleafs", n).astype(bool)
        tracks = node.attr("nodes_missing_value_tracks_true")
        self.nan_true = (
            np.zeros(n, dtype=bool) if tracks is None else _ints(node, "nodes_missing_value_tracks_true", n).astype(bool)
        )
        self.weights = _floats(node, "leaf_weights")
        self.targets = _ints(node, "leaf_targetids", len(self.weights)) if len(self.weights) else _ints(node, "leaf_targetids")
        if "n_targets" not in node.attrs:
            raise node.fail("is required (the number of output columns)", "n_targets")
        self.n_targets = int(node.attrs["n_targets"])
        if self.n_targets < 1 or np.any((self.targets < 0) | (self.targets >= self.n_targets)):
            raise node.fail(f"leaf_targetids must lie in [0, {self.n_targets})", "n_targets")
        self.roots = _ints(node, "tree_roots")
        if np.any((self.roots < 0) | (self.roots >= n)):
            raise node.fail(f"{self.roots.tolist()} must index nodes_* (0..{n - 1})", "tree_roots")
        for name, ids, leaf in (
            ("nodes_truenodeids", self.true_ids, self.true_leaf),
            ("nodes_falsenodeids", self.false_ids, self.false_leaf),
        ):
            limit = np.where(leaf, len(self.weights), n)
            if np.any((ids < 0) | (ids >= limit)):
                raise node.fail("an entry is outside the leaves (for a leaf branch) or the nodes it indexes", name)
        self.members = self._member_sets(node)

    def _member_sets(self, node: OpNode) -> dict[int, np.ndarray]:
        """Node index -> its set, from ``membership_values`` split at NaN, in node order."""
        where = np.flatnonzero(self.modes == _MEMBER)
        if not len(where):
            return {}
        values = _floats(node, "membership_values").astype(np.float64)
        cuts = np.flatnonzero(np.isnan(values))
        sets = np.split(values, cuts) if len(cuts) else [values]
        sets = [s[~np.isnan(s)] for s in sets]
        if len(cuts) and cuts[-1] == len(values) - 1:
            sets = sets[:-1]  # a closing NaN ends the last set
        if len(sets) != len(where):
            raise node.fail(
                f"holds {len(sets)} sets (delimited by NaN); there are {len(where)} BRANCH_MEMBER nodes", "membership_values"
            )
        return dict(zip(where.tolist(), sets))

    def leaves(self, x: np.ndarray, root: int) -> np.ndarray:
        """The leaf index each row of ``x`` (float64) reaches from ``root``."""
        rows = np.arange(len(x))
        current = np.full(len(x), root, dtype=np.int64)
        leaf = np.full(len(x), -1, dtype=np.int64)
        for _ in range(len(self.features) + 1):
            if not len(rows):
                return leaf
            value = x[rows, self.features[current]]
            split, mode = self.splits[current], self.modes[current]
            conditions = (value <= split, value < split, value >= split, value > split, value == split, value != split)
            go_true = np.select([mode == m for m in range(6)], conditions, default=False)
            for index in np.unique(current[mode == _MEMBER]).tolist():
                here = current == index
                go_true[here] = np.isin(value[here], self.members[index])
            missing = np.isnan(value)
            go_true[missing] = self.nan_true[current[missing]]
            following = np.where(go_true, self.true_ids[current], self.false_ids[current])
            done = np.where(go_true, self.true_leaf[current], self.false_leaf[current])
            leaf[rows[done]] = following[done]
            rows, current = rows[~done], following[~done]
        raise ValueError(f"the tree at node {root} loops")


def _post_transform(scores: np.ndarray, transform: str) -> np.ndarray:
    """``scores`` [N, T] in float64 after ``transform``."""
    if transform == "SOFTMAX":
        e = np.exp(scores - scores.max(axis=1, keepdims=True))
        return e / e.sum(axis=1, keepdims=True)
    if transform == "SOFTMAX_ZERO":
        nonzero = scores != 0
        top = np.where(nonzero, scores, -np.inf).max(axis=1, keepdims=True)
        e = np.where(nonzero, np.exp(scores - np.where(np.isfinite(top), top, 0)), 0.0)
        total = e.sum(axis=1, keepdims=True)
        return np.divide(e, total, out=np.zeros_like(e), where=total > 0)
    if transform == "LOGISTIC":
        return 1.0 / (1.0 + np.exp(-scores))
    if transform == "PROBIT":
        inverse = NormalDist().inv_cdf
        flat = [
            inverse(p) if 0 < p < 1 else -math.inf if p == 0 else math.inf if p == 1 else math.nan
            for p in scores.reshape(-1).tolist()
        ]
        return np.array(flat, dtype=np.float64).reshape(scores.shape)
    return scores


@register("TreeEnsemble", 5, domain=ML)
def tree_ensemble(node: OpNode) -> Kernel:
    """TreeEnsemble-5 (module docstring): one tree whose root tests x0 <= 3.14 with leaves 5.23
    (true, target 0) and 12.12 (false, target 1) maps rows x0 = 1.2, 4.1 to [[5.23, 0], [0, 12.12]]."""
    trees = _Trees(node)
    aggregate = int(node.attr("aggregate_function", 1))
    if not 0 <= aggregate < len(_AGGREGATES):
        raise node.fail(f"{aggregate} is not one of 0..3 ({', '.join(_AGGREGATES)})", "aggregate_function")
    transform = int(node.attr("post_transform", 0))
    if not 0 <= transform < len(_TRANSFORMS):
        raise node.fail(f"{transform} is not one of 0..4 ({', '.join(_TRANSFORMS)})", "post_transform")
    how, then = _AGGREGATES[aggregate], _TRANSFORMS[transform]

    def kernel(x: np.ndarray) -> tuple[np.ndarray, ...]:
        _types(node, x, _TREE_TYPES)
        if x.ndim != 2:
            raise node.fail(f"input 0 has shape {list(x.shape)}; TreeEnsemble takes [N, F]")
        if len(trees.features) and np.any(trees.features >= x.shape[1]):
            raise node.fail(f"nodes_featureids reach feature {int(trees.features.max())}; the input has {x.shape[1]}")
        dtype = x.dtype
        weights = trees.weights.astype(dtype)
        wide = x.astype(np.float64)
        scores = np.zeros((len(x), trees.n_targets), dtype=dtype)
        reached = np.zeros((len(x), trees.n_targets), dtype=bool)
        rows = np.arange(len(x))
        for root in trees.roots.tolist():
            try:
                leaf = trees.leaves(wide, root)
            except ValueError as exc:
                raise node.fail(str(exc)) from None
            target, weight = trees.targets[leaf], weights[leaf]
            here = scores[rows, target]
            if how in ("SUM", "AVERAGE"):
                scores[rows, target] = here + weight
            else:
                pick = np.minimum if how == "MIN" else np.maximum
                scores[rows, target] = np.where(reached[rows, target], pick(here, weight), weight)
            reached[rows, target] = True
        if how == "AVERAGE" and len(trees.roots):
            scores = (scores / dtype.type(len(trees.roots))).astype(dtype)
        if then != "NONE":
            scores = _post_transform(scores.astype(np.float64), then).astype(dtype)
        return (scores,)

    return kernel
