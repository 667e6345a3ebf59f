"""Per-shape memos of the numpy executor's kernels (``ovpool/engine/memo.py``): what a kernel
derives from its inputs' dims is computed once per dims, checked again for new dims, and a failed
derivation is not remembered; sessions run on changing dims and index inputs against onnxruntime."""

from __future__ import annotations

import numpy as np
import pytest
from harness import I64, F, compare, model_of, vi
from onnx import helper, numpy_helper

from ovpool.engine.graph import GraphSession
from ovpool.engine.memo import LIMIT, ShapeMemo, scalar
from ovpool.errors import ModelError


def test_a_memo_derives_once_per_key_and_forgets_failures() -> None:
    calls: list[int] = []

    def derive(key: int) -> int:
        calls.append(key)
        if key < 0:
            raise ValueError(f"negative {key}")
        return key * 2

    memo = ShapeMemo(derive)
    assert (memo(3), memo(3), memo(4)) == (6, 6, 8)
    for _ in range(2):
        with pytest.raises(ValueError, match="negative -1"):
            memo(-1)
    assert calls == [3, 4, -1, -1]
    for key in range(LIMIT + 5):
        assert memo(key) == key * 2  # past the limit the memo starts again, values unchanged
    assert len(memo._values) <= LIMIT


@pytest.mark.parametrize("dtype", [np.float16, np.float32, np.float64])
@pytest.mark.parametrize("value", [0, 1, 0.5, 1 / 6, 0.2, -np.inf, np.inf, 12345678901])
def test_a_scalar_is_the_python_number_as_a_ufunc_converts_it(value: float, dtype: type) -> None:
    """``scalar(v, t)`` gives the bits numpy's ufuncs give for the Python number ``v`` next to an
    array of ``t`` (checked on x * v against 1.0 * v: 1/6 in float32 is 0.16666667), read-only,
    one array per value and type."""
    x = np.ones(3, dtype)
    with np.errstate(over="ignore"):
        expected = np.multiply(x, value)
    constant = scalar(value, np.dtype(dtype))
    assert constant.dtype == dtype and constant.shape == ()
    assert np.multiply(x, constant).tobytes() == expected.tobytes()
    assert not constant.flags.writeable
    assert scalar(value, np.dtype(dtype)) is constant


def test_a_session_checks_every_new_shape() -> None:
    """Squeeze-13 of axis 0 is fine on (1, 3), the node's error on (2, 3) (not the memo of the
    first run), and fine again on (1, 3); each run as onnxruntime gives it."""
    nodes = [helper.make_node("Squeeze", ["x", "axes"], ["y"], name="sq")]
    model = model_of(nodes, [vi("x", F, ["a", 3])], ["y"], initializers=[numpy_helper.from_array(np.array([0]), "axes")])
    session = GraphSession(model)
    one = np.arange(3, dtype=np.float32).reshape(1, 3)
    np.testing.assert_array_equal(session.run({"x": one})["y"], [0, 1, 2])
    with pytest.raises(ModelError, match=r"node 'sq' \(Squeeze-13\): attribute 'axes': \[0\] names an axis of \(2, 3\)"):
        session.run({"x": np.zeros((2, 3), np.float32)})
    np.testing.assert_array_equal(session.run({"x": one + 1})["y"], [1, 2, 3])
    compare(model, {"x": one})


@pytest.mark.parametrize(("starts", "ends", "steps"), [(1, 4, 1), (-1, -6, -2), (0, 2, 1), (4, 1, -1)])
def test_slice_with_index_inputs_known_at_run_time(starts: int, ends: int, steps: int) -> None:
    """Slice-13 whose starts/ends/steps are graph inputs (a Loop body's counters): each set of
    values is its own index, one session running them in turn, as onnxruntime does."""
    nodes = [helper.make_node("Slice", ["x", "s", "e", "a", "t"], ["y"], name="slice")]
    inputs = [vi("x", F, [2, 5]), vi("s", I64, [1]), vi("e", I64, [1]), vi("a", I64, [1]), vi("t", I64, [1])]
    model = model_of(nodes, inputs, ["y"])
    x = np.arange(10, dtype=np.float32).reshape(2, 5)
    session = GraphSession(model)
    for start, end, step in ((0, 5, 1), (starts, ends, steps)):
        feeds = {"x": x, "s": np.array([start]), "e": np.array([end]), "a": np.array([1]), "t": np.array([step])}
        np.testing.assert_array_equal(session.run(feeds)["y"], x[:, start:end:step])
        compare(model, feeds)
