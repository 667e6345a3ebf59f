"""ovpool's shape and layout operators (ovpool/engine/ops/tensor.py) against onnxruntime, per
since-version, over hypothesis-drawn shapes, attributes and dtypes; against the ONNX schema text
where onnxruntime disagrees with it; and on ONNX's own node test cases."""

from __future__ import annotations

import math
from typing import Any

import numpy as np
import pytest
from harness import (
    check,
    check_node_case,
    examples,
    ints,
    make_model,
    module_ops,
    node_case_ops,
    node_case_params,
    opsets,
    ovpool_of,
    run_ort,
    seeds,
    shapes,
    since_opsets,
    values,
)
from hypothesis import given
from hypothesis import strategies as st

from ovpool.engine.graph import GraphSession
from ovpool.errors import ModelError
from ovpool.memory import MemoryBudgetError

INT64_MAX, INT64_MIN = np.iinfo(np.int64).max, np.iinfo(np.int64).min
ALL = ("float32", "float16", "float64", "int64", "int32", "int8", "uint8", "bool")
FLOATS = ("float32", "float16", "float64")


# ---------------------------------------------------------------------------------------------
# Concat


@pytest.mark.parametrize("opset", opsets("Concat"))
@examples(12)
@given(data=st.data(), seed=seeds)
def test_concat(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 4))
    rank = len(shape)
    axis = data.draw(st.integers(-rank if opset >= 11 else 0, rank - 1))
    n = data.draw(st.integers(1, 3))
    dtype = data.draw(st.sampled_from(ALL))
    inputs = []
    for i in range(n):
        s = list(shape)
        s[axis] = data.draw(st.integers(0, 3))
        inputs.append(values(seed + i, tuple(s), dtype))
    check("Concat", opset, inputs, {"axis": axis})


def test_concat_axis_by_version() -> None:
    """Concat-1's axis defaults to 1 (no onnxruntime kernel before 4); Concat-4 requires it and
    allows [0, r) only (onnxruntime accepts -1 there); Concat-11 reads -1 as the last axis."""
    x = np.ones((2, 3), np.float32)
    assert ovpool_of("Concat", 1, [x, x])[0].shape == (2, 6)
    with pytest.raises(ModelError, match="required"):
        ovpool_of("Concat", 6, [x, x])
    with pytest.raises(ModelError, match="axis"):
        ovpool_of("Concat", 7, [x, x], {"axis": -1})
    assert ovpool_of("Concat", 11, [x, x], {"axis": -1})[0].shape == (2, 6)


# ---------------------------------------------------------------------------------------------
# Reshape, Flatten, Transpose, Squeeze, Unsqueeze


@st.composite
def reshape_targets(draw: st.DrawFn, shape: tuple[int, ...], allowzero: bool) -> list[int]:
    """A shape with the same element count: adjacent input dims merged, then some dims replaced by
    0 (copy, where the input has that dim at that position) and one by -1."""
    groups: list[int] = []
    for d in shape:
        if groups and draw(st.booleans()):
            groups[-1] *= d
        else:
            groups.append(d)
    if draw(st.booleans()):
        groups.insert(draw(st.integers(0, len(groups))), 1)
    target = list(groups)
    if not allowzero:
        for i, d in enumerate(target):
            if i < len(shape) and shape[i] == d and draw(st.booleans()):
                target[i] = 0
    if target and math.prod(shape) and draw(st.booleans()):
        target[draw(st.integers(0, len(target) - 1))] = -1
    return target


@pytest.mark.parametrize("opset", opsets("Reshape"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_reshape(opset: int, data: st.DataObject, seed: int) -> None:
    allowzero = opset >= 14 and data.draw(st.booleans())
    shape = data.draw(shapes(0, 4, 0 if allowzero else 1))
    if allowzero and 0 in shape:
        target = data.draw(st.permutations(shape)).copy()
    else:
        target = data.draw(reshape_targets(shape, allowzero))
    x = values(seed, shape, data.draw(st.sampled_from(ALL)))
    attrs = {"allowzero": 1} if allowzero else {}
    check("Reshape", opset, [x, ints(*target)], attrs, constant=(1,) if data.draw(st.booleans()) else ())


def test_reshape_zero_copies_unless_allowzero() -> None:
    x = np.arange(24, dtype=np.float32).reshape(2, 3, 4)
    assert check("Reshape", 13, [x, ints(0, -1)])[0].shape == (2, 12)
    assert check("Reshape", 14, [np.zeros((0, 3), np.float32), ints(3, 0)], {"allowzero": 1})[0].shape == (3, 0)
    with pytest.raises(ModelError, match="both 0 and -1"):
        ovpool_of("Reshape", 14, [x, ints(0, -1)], {"allowzero": 1})
    with pytest.raises(ModelError, match="elements"):
        ovpool_of("Reshape", 14, [x, ints(5, 5)])


@pytest.mark.parametrize("opset", opsets("Flatten"))
@examples(12)
@given(data=st.data(), seed=seeds)
def test_flatten(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 4, 0))
    rank = len(shape)
    axis = data.draw(st.integers(-rank if opset >= 11 else 0, rank))
    dtype = data.draw(st.sampled_from(FLOATS if opset < 9 else ALL))
    check("Flatten", opset, [values(seed, shape, dtype)], {"axis": axis})


def test_flatten_negative_axis_before_11() -> None:
    """Flatten-1/9 take axis in [0, r]; -1 is an error there (onnxruntime agrees)."""
    with pytest.raises(ModelError, match="axis"):
        ovpool_of("Flatten", 9, [np.ones((2, 3), np.float32)], {"axis": -1})


@pytest.mark.parametrize("opset", opsets("Transpose"))
@examples(12)
@given(data=st.data(), seed=seeds)
def test_transpose(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(0, 5))
    perm = data.draw(st.none() | st.permutations(range(len(shape)))) if shape else None
    attrs = {} if perm is None else {"perm": list(perm)}
    check("Transpose", opset, [values(seed, shape, data.draw(st.sampled_from(ALL)))], attrs)


@pytest.mark.parametrize("opset", opsets("Squeeze"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_squeeze(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(st.lists(st.sampled_from([1, 1, 2, 3]), min_size=0, max_size=5).map(tuple))
    ones = [i for i, d in enumerate(shape) if d == 1]
    axes = data.draw(st.none() | st.lists(st.sampled_from(ones), unique=True, min_size=1) if ones else st.none())
    if axes is not None and opset >= 11:
        axes = [a - len(shape) if data.draw(st.booleans()) else a for a in axes]
    x = values(seed, shape, data.draw(st.sampled_from(ALL)))
    if opset < 13:
        check("Squeeze", opset, [x], {} if axes is None else {"axes": axes})
    else:
        check("Squeeze", opset, [x, None if axes is None else ints(*axes)])


def test_squeeze_errors_and_empty_axes() -> None:
    """A non-1 axis is an error; Squeeze-13 with an EMPTY axes input removes nothing (ONNX shape
    inference keeps (1,3,1)); onnxruntime instead removes every 1."""
    x = np.ones((1, 3, 1), np.float32)
    with pytest.raises(ModelError, match="not 1"):
        ovpool_of("Squeeze", 13, [x, ints(1)])
    with pytest.raises(ModelError, match="negative"):
        ovpool_of("Squeeze", 7, [x], {"axes": [-1]})
    assert ovpool_of("Squeeze", 13, [x, np.zeros(0, np.int64)])[0].shape == (1, 3, 1)


@pytest.mark.parametrize("opset", opsets("Unsqueeze"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_unsqueeze(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(0, 3))
    out_rank = len(shape) + data.draw(st.integers(1, 3))
    axes = data.draw(
        st.lists(st.integers(0, out_rank - 1), unique=True, min_size=out_rank - len(shape), max_size=out_rank - len(shape))
    )
    if opset >= 11:
        axes = [a - out_rank if data.draw(st.booleans()) else a for a in axes]
    x = values(seed, shape, data.draw(st.sampled_from(ALL)))
    if opset < 13:
        check("Unsqueeze", opset, [x], {"axes": axes})
    else:
        check("Unsqueeze", opset, [x, ints(*axes)], constant=(1,))


def test_unsqueeze_axes_are_output_positions() -> None:
    assert check("Unsqueeze", 13, [np.ones((3, 4, 5), np.float32), ints(4, 0)])[0].shape == (1, 3, 4, 5, 1)
    with pytest.raises(ModelError, match="twice"):
        ovpool_of("Unsqueeze", 11, [np.ones(3, np.float32)], {"axes": [0, -3]})


# ---------------------------------------------------------------------------------------------
# Slice


@pytest.mark.parametrize("opset", opsets("Slice"))
@examples(20)
@given(data=st.data(), seed=seeds)
def test_slice(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 4, 0, 6))
    rank = len(shape)
    axes = data.draw(st.lists(st.integers(0, rank - 1), unique=True, min_size=1, max_size=rank))
    bound = st.integers(-8, 8) | st.sampled_from([INT64_MAX, INT64_MIN, INT64_MAX - 1, INT64_MIN + 1])
    starts = [data.draw(bound) for _ in axes]
    ends = [data.draw(bound) for _ in axes]
    x = values(seed, shape, data.draw(st.sampled_from(ALL)))
    if opset < 10:
        attrs = {"starts": starts, "ends": ends}
        if axes != list(range(len(axes))) or data.draw(st.booleans()):
            attrs["axes"] = axes
        check("Slice", opset, [x], attrs)
        return
    steps = [data.draw(st.integers(-3, 3).filter(bool)) for _ in axes] if data.draw(st.booleans()) else None
    if steps is not None:  # onnxruntime reads a huge end with a negative step as INT_MIN: test_slice_int_max_end_backwards
        ends = [INT64_MIN if step < 0 and end >= 2**31 - 1 else end for step, end in zip(steps, ends)]
    if opset >= 11:
        axes = [a - rank if data.draw(st.booleans()) else a for a in axes]
    omit_axes = axes == list(range(len(axes))) and steps is None and data.draw(st.booleans())
    index = np.int32 if data.draw(st.booleans()) else np.int64
    clip = (lambda v: np.clip(v, np.iinfo(np.int32).min, np.iinfo(np.int32).max)) if index == np.int32 else (lambda v: v)
    inputs = [x, np.array(clip(starts), index), np.array(clip(ends), index)]
    inputs += [None if omit_axes else np.array(axes, index), None if steps is None else np.array(steps, index)]
    constant = (1, 2, 3, 4) if data.draw(st.booleans()) else ()
    check("Slice", opset, inputs, constant=tuple(i for i in constant if inputs[i] is not None))


def test_slice_negative_steps_and_sentinels() -> None:
    """The Slice-13 clamping rule: end clamps to -1 for negative steps (through index 0)."""
    x = np.arange(1, 6, dtype=np.float32)
    out = check("Slice", 13, [x, ints(INT64_MAX), ints(INT64_MIN), ints(0), ints(-1)])[0]
    np.testing.assert_array_equal(out, [5, 4, 3, 2, 1])
    out = check("Slice", 13, [x, ints(-1), ints(-100), ints(0), ints(-2)])[0]
    np.testing.assert_array_equal(out, [5, 3, 1])
    with pytest.raises(ModelError, match="0"):
        ovpool_of("Slice", 13, [x, ints(0), ints(3), ints(0), ints(0)])
    with pytest.raises(ModelError, match="negative"):
        ovpool_of("Slice", 10, [x, ints(0), ints(3), ints(-1)])


@pytest.mark.parametrize("opset", since_opsets("Slice", lowest=10))
def test_slice_with_starts_and_ends_of_each_run(opset: int) -> None:
    """One session, starts and ends fed at each run (a Loop's counter does so): the axes are
    checked once per shape, the clamping follows each run's values, against onnxruntime (every
    version that takes them as inputs)."""
    model = make_model("Slice", opset, [np.zeros((3, 7), np.float32), ints(0), ints(1), ints(1), ints(2)], constant=(3, 4))
    session = GraphSession(model)
    x = np.arange(21, dtype=np.float32).reshape(3, 7)
    for start, end in ((0, 1), (1, 2), (6, 7), (-3, 100), (5, -1), (-100, 3), (0, 1), (4, 2)):
        feeds = {"x0": x, "x1": ints(start), "x2": ints(end)}
        np.testing.assert_array_equal(session.run(feeds)[session.output_names[0]], run_ort(model, feeds)[0])
    other = np.arange(10, dtype=np.float32).reshape(1, 10)
    feeds = {"x0": other, "x1": ints(1), "x2": ints(9)}
    np.testing.assert_array_equal(session.run(feeds)[session.output_names[0]], [[1, 3, 5, 7]])


def test_slice_int_max_end_backwards() -> None:
    """Slice-10+ with a negative step clamps end to [-1, d-1]: end=INT64_MAX becomes d-1, so
    starts=[3], steps=[-1] on d=5 selects nothing. onnxruntime instead reads INT_MAX (int32 or
    int64) there as "through index 0" and gives [3, 2, 1, 0]; ovpool follows the schema."""
    x = np.arange(5, dtype=np.float32)
    for opset in (10, 13):
        assert ovpool_of("Slice", opset, [x, ints(3), ints(INT64_MAX), ints(0), ints(-1)])[0].shape == (0,)
        np.testing.assert_array_equal(
            ovpool_of("Slice", opset, [x, ints(3), ints(INT64_MIN), ints(0), ints(-1)])[0], [3, 2, 1, 0]
        )


# ---------------------------------------------------------------------------------------------
# Split


@pytest.mark.parametrize("opset", opsets("Split"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_split(opset: int, data: st.DataObject, seed: int) -> None:
    shape = list(data.draw(shapes(1, 3)))
    rank = len(shape)
    axis = data.draw(st.integers(-rank if opset >= 11 else 0, rank - 1))
    n = data.draw(st.integers(1, 4))
    form = data.draw(st.sampled_from(["sizes", "equal", "num_outputs"] if opset >= 18 else ["sizes", "equal"]))
    attrs: dict = {"axis": axis}
    inputs: list = []
    if form == "sizes":
        sizes = data.draw(st.lists(st.integers(0, 3), min_size=n, max_size=n))
        shape[axis] = sum(sizes)
        if opset < 13:
            attrs["split"] = sizes
        else:
            inputs = [ints(*sizes)]
    elif form == "equal":
        shape[axis] = n * data.draw(st.integers(1 if opset >= 18 else 0, 3))
    else:
        attrs["num_outputs"] = n
        chunk = data.draw(st.integers(1, 3))
        shape[axis] = chunk * (n - 1) + data.draw(st.integers(1, chunk))
    if form == "equal" and opset >= 18:
        attrs["num_outputs"] = n
    x = values(seed, tuple(shape), data.draw(st.sampled_from(ALL)))
    check("Split", opset, [x, *inputs], attrs, n_outputs=n, constant=(1,) if inputs and data.draw(st.booleans()) else ())


def test_split18_uneven_last_chunk_may_be_empty() -> None:
    """Split-18 chunks are ceil(d/n) with the last one smaller: 4 into 3 is 2,2,0 (ONNX shape
    inference says so; onnxruntime refuses it); 5 into 4 overruns and is an error."""
    x = np.arange(4, dtype=np.float32)
    parts = ovpool_of("Split", 18, [x], {"num_outputs": 3}, n_outputs=3)
    assert [p.tolist() for p in parts] == [[0, 1], [2, 3], []]
    with pytest.raises(ModelError, match="overrun"):
        ovpool_of("Split", 18, [np.arange(5, dtype=np.float32)], {"num_outputs": 4}, n_outputs=4)
    with pytest.raises(ModelError, match="neither"):
        ovpool_of("Split", 18, [x], {}, n_outputs=2)
    with pytest.raises(ModelError, match="equal parts"):
        ovpool_of("Split", 13, [np.arange(5, dtype=np.float32)], {}, n_outputs=2)


# ---------------------------------------------------------------------------------------------
# Expand, Tile


@pytest.mark.parametrize("opset", opsets("Expand"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_expand(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(st.lists(st.sampled_from([1, 1, 2, 3]), max_size=4).map(tuple))
    target = [data.draw(st.sampled_from([1, 3]) if d == 1 else st.sampled_from([1, d])) for d in shape]
    target = data.draw(st.lists(st.integers(1, 3), max_size=2)) + target
    target = target[data.draw(st.integers(0, max(len(target) - len(shape), 0))) :]
    x = values(seed, shape, data.draw(st.sampled_from(ALL)))
    check("Expand", opset, [x, ints(*target)], constant=(1,) if data.draw(st.booleans()) else ())


@pytest.mark.parametrize("opset", opsets("Tile"))
@examples(12)
@given(data=st.data(), seed=seeds)
def test_tile(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(1, 4, 0, 3))
    repeats = data.draw(st.lists(st.integers(0, 3), min_size=len(shape), max_size=len(shape)))
    check("Tile", opset, [values(seed, shape, data.draw(st.sampled_from(ALL))), ints(*repeats)])


# ---------------------------------------------------------------------------------------------
# Pad


def pad_dtypes(opset: int) -> tuple[str, ...]:
    return FLOATS if opset < 11 else ALL[:-1] if opset < 13 else ALL


@pytest.mark.parametrize("opset", opsets("Pad"))
@examples(25)
@given(data=st.data(), seed=seeds)
def test_pad(opset: int, data: st.DataObject, seed: int) -> None:
    modes = ["constant", "reflect", "edge"] + (["wrap"] if opset >= 19 else [])
    mode = data.draw(st.sampled_from(modes))
    shape = data.draw(shapes(1, 4, 1 if mode == "constant" else 2, 5))
    rank = len(shape)
    axes = list(range(rank))
    if opset >= 18 and data.draw(st.booleans()):
        axes = data.draw(st.lists(st.integers(0, rank - 1), unique=True, min_size=1, max_size=rank))
    begins, ends = [], []
    for a in axes:
        d = shape[a]
        crop_b, crop_e = data.draw(st.integers(0, (d - 1) // 2)), data.draw(st.integers(0, (d - 1) // 2))
        left = d - crop_b - crop_e
        most = left - 1 if mode == "reflect" else 2 * left
        b = -crop_b if crop_b and data.draw(st.booleans()) else data.draw(st.integers(0, most))
        e = -crop_e if crop_e and data.draw(st.booleans()) else data.draw(st.integers(0, most))
        begins.append(b)
        ends.append(e)
    x = values(seed, shape, data.draw(st.sampled_from(pad_dtypes(opset))))
    if opset < 11:
        attrs: dict = {"pads": begins + ends, "mode": mode}
        if data.draw(st.booleans()):
            attrs["value"] = 1.5
        check("Pad", opset, [x], attrs)
        return
    value = values(seed + 1, (), x.dtype.name) if mode == "constant" and data.draw(st.booleans()) else None
    inputs = [x, ints(*begins, *ends), value]
    if axes != list(range(rank)):
        inputs.append(ints(*[a - rank if data.draw(st.booleans()) else a for a in axes]))
    check("Pad", opset, inputs, {"mode": mode}, constant=(1,) if data.draw(st.booleans()) else ())


def test_pad_negative_and_modes() -> None:
    """Negative pads remove values; edge/reflect/wrap pad what is left (onnxruntime's reading; the
    ONNX text is silent and onnx.reference refuses negative pads)."""
    x = np.arange(1, 6, dtype=np.float32)
    cases = {
        ("constant", (-1, 2)): [2, 3, 4, 5, 0, 0],
        ("reflect", (2, -1)): [3, 2, 1, 2, 3, 4],
        ("edge", (-2, 3)): [3, 4, 5, 5, 5, 5],
        ("wrap", (-1, 2)): [2, 3, 4, 5, 2, 3],
        ("wrap", (6, -2)): [1, 2, 3, 1, 2, 3, 1, 2, 3],
    }
    for (mode, pads), expected in cases.items():
        np.testing.assert_array_equal(check("Pad", 19, [x, ints(*pads)], {"mode": mode})[0], expected, err_msg=f"{mode} {pads}")
    with pytest.raises(ModelError, match="reflect"):
        ovpool_of("Pad", 19, [x, ints(0, 5)], {"mode": "reflect"})
    with pytest.raises(ModelError, match="wrap"):
        ovpool_of("Pad", 18, [x, ints(0, 1)], {"mode": "wrap"})
    with pytest.raises(ModelError, match="removes more"):
        ovpool_of("Pad", 18, [x, ints(-3, -3)])


def test_pad_layouts_per_shape_in_one_session() -> None:
    """One session, input widths 5, 2 and 5: each width's reflect layout is its own (pads [2, 1]
    reflect 3,2 | 1..5 | 4), and a width too small is refused on every run, not remembered."""
    session = GraphSession(
        make_model("Pad", 19, [np.zeros((1, 5), np.float32), ints(0, 2, 0, 1)], {"mode": "reflect"}, constant=(1,))
    )
    x = np.arange(1, 6, dtype=np.float32).reshape(1, 5)
    np.testing.assert_array_equal(session.run({"x0": x})["y0"], [[3, 2, 1, 2, 3, 4, 5, 4]])
    for _ in range(2):
        with pytest.raises(ModelError, match="reflect padding of 2,1 needs more than the 2 values"):
            session.run({"x0": x[:, :2]})
    np.testing.assert_array_equal(session.run({"x0": x[:, ::-1].copy()})["y0"], [[3, 4, 5, 4, 3, 2, 1, 2]])


# ---------------------------------------------------------------------------------------------
# DepthToSpace, SpaceToDepth


def block_dtypes(op: str, opset: int) -> tuple[str, ...]:
    return FLOATS if op == "DepthToSpace" and opset < 11 else (*FLOATS, "int8", "uint8")


@pytest.mark.parametrize("opset", opsets("DepthToSpace"))
@examples(12)
@given(data=st.data(), seed=seeds)
def test_depth_to_space(opset: int, data: st.DataObject, seed: int) -> None:
    bs = data.draw(st.integers(1, 3))
    shape = (
        data.draw(st.integers(1, 2)),
        bs * bs * data.draw(st.integers(1, 3)),
        data.draw(st.integers(1, 3)),
        data.draw(st.integers(1, 3)),
    )
    attrs = {"blocksize": bs}
    if opset >= 11 and data.draw(st.booleans()):
        attrs["mode"] = data.draw(st.sampled_from(["DCR", "CRD"]))
    check("DepthToSpace", opset, [values(seed, shape, data.draw(st.sampled_from(block_dtypes("DepthToSpace", opset))))], attrs)


@pytest.mark.parametrize("opset", opsets("SpaceToDepth"))
@examples(12)
@given(data=st.data(), seed=seeds)
def test_space_to_depth(opset: int, data: st.DataObject, seed: int) -> None:
    bs = data.draw(st.integers(1, 3))
    shape = (
        data.draw(st.integers(1, 2)),
        data.draw(st.integers(1, 3)),
        bs * data.draw(st.integers(1, 3)),
        bs * data.draw(st.integers(1, 3)),
    )
    check(
        "SpaceToDepth",
        opset,
        [values(seed, shape, data.draw(st.sampled_from(block_dtypes("SpaceToDepth", opset))))],
        {"blocksize": bs},
    )


@pytest.mark.parametrize("mode", ["DCR", "CRD"])
def test_space_to_depth_28_inverts_depth_to_space(mode: str) -> None:
    """SpaceToDepth-28 (mode attribute; onnxruntime has no opset 28): per the schema it is the
    inverse of DepthToSpace in the same mode, whose formula the DepthToSpace text gives; checked
    on the CRD case element by element: output channel c*bs*bs + i*bs + j holds pixel (i, j) of
    each block of channel c."""
    x = values(3, (2, 3, 4, 6), "float32")
    y = ovpool_of("SpaceToDepth", 28, [x], {"blocksize": 2, "mode": mode})[0]
    assert y.shape == (2, 12, 2, 3)
    np.testing.assert_array_equal(ovpool_of("DepthToSpace", 13, [y], {"blocksize": 2, "mode": mode})[0], x)
    if mode == "CRD":
        for c in range(3):
            for i in range(2):
                for j in range(2):
                    np.testing.assert_array_equal(y[:, c * 4 + i * 2 + j], x[:, c, i::2, j::2])


# ---------------------------------------------------------------------------------------------
# Trilu, Range


@pytest.mark.parametrize("opset", opsets("Trilu"))
@examples(15)
@given(data=st.data(), seed=seeds)
def test_trilu(opset: int, data: st.DataObject, seed: int) -> None:
    shape = data.draw(shapes(2, 4, 0, 5))
    k = data.draw(st.none() | st.integers(-6, 6))
    attrs = {"upper": data.draw(st.integers(0, 1))} if data.draw(st.booleans()) else {}
    x = values(seed, shape, data.draw(st.sampled_from(("float32", "float16", "float64", "int64", "int32", "bool"))))
    check("Trilu", opset, [x, None if k is None else np.array(k, np.int64)], attrs)


@pytest.mark.parametrize("opset", opsets("Range"))
@examples(20)
@given(data=st.data())
def test_range(opset: int, data: st.DataObject) -> None:
    """Floats against onnxruntime at 1e-5: onnxruntime accumulates (start + delta + delta ...)
    where the schema says start + i*delta, one rounding apart per step; test_range_schema checks
    the schema's values exactly."""
    dtype = data.draw(st.sampled_from(("float32", "float64", "int64", "int32")))
    if dtype.startswith("int"):
        start, limit = data.draw(st.integers(-50, 50)), data.draw(st.integers(-50, 50))
        delta = data.draw(st.integers(-7, 7).filter(bool))
    else:
        start, limit = data.draw(st.integers(-50, 50)) / 8, data.draw(st.integers(-50, 50)) / 8
        delta = data.draw(st.integers(-30, 30).filter(bool)) / 10
    inputs = [np.array(v, dtype) for v in (start, limit, delta)]
    check("Range", opset, inputs, atol=1e-5)


@pytest.mark.parametrize("dtype", ["float32", "float64"])
def test_range_schema(dtype: str) -> None:
    """The schema: count max(ceil((limit - start)/delta), 0) (in exact arithmetic), values
    output[i] = start + i * delta in T, one element at a time."""
    for start, limit, delta in [(0.0, 1.0, 0.1), (-1.0, -4.8, -0.1), (-2.1, 3.2, 0.1), (2.7, -1.1, -0.2), (3, 1, 1)]:
        s, lim, d = (np.array(v, dtype) for v in (start, limit, delta))
        out = ovpool_of("Range", 11, [s, lim, d])[0]
        count = max(math.ceil((float(lim) - float(s)) / float(d)), 0)
        expected = np.array([s + np.array(i, dtype) * d for i in range(count)], dtype=dtype)
        assert out.dtype == np.dtype(dtype)
        np.testing.assert_array_equal(out, expected)


def test_range_27_stash_type() -> None:
    """Range-27 (no onnxruntime kernel): float16 values are start + i*delta worked in float32 and
    rounded once (stash_type=1, the default), or in float16 (stash_type=0)."""
    s, lim, d = np.float16(1000), np.float16(1100), np.float16(0.7)
    count = math.ceil((float(lim) - float(s)) / float(d))
    stashed = ovpool_of("Range", 27, [s, lim, d])[0]
    assert stashed.dtype == np.float16 and stashed.shape == (count,)
    np.testing.assert_array_equal(stashed, [np.float16(np.float32(s) + np.float32(i) * np.float32(d)) for i in range(count)])
    plain = ovpool_of("Range", 27, [s, lim, d], {"stash_type": 0})[0]
    np.testing.assert_array_equal(plain, [s + np.float16(i) * d for i in range(count)])
    with pytest.raises(ModelError, match="delta"):
        ovpool_of("Range", 11, [np.int64(0), np.int64(3), np.int64(0)])


@pytest.mark.parametrize(
    ("op", "opset", "inputs", "attrs", "match"),
    [
        (
            "Expand",
            8,
            [np.ones((1, 1), np.float32), ints(1, 40000, 40000)],
            {},
            r"output \[1, 40000, 40000\] float32 would need 6\.0 GiB",
        ),
        ("Expand", 13, [np.ones((1, 1), np.float32), ints(1, 40000, 40000)], {}, r"output \[1, 40000, 40000\] float32"),
        ("Tile", 6, [np.ones((1, 1), np.float32), ints(40000, 40000)], {}, r"output \[40000, 40000\] float32"),
        ("Tile", 13, [np.ones((1, 1), np.float32), ints(40000, 40000)], {}, r"output \[40000, 40000\] float32"),
        ("Pad", 7, [np.ones((1, 1), np.float32)], {"pads": [0, 0, 39999, 39999]}, r"output \[40000, 40000\] float32"),
        ("Pad", 11, [np.ones((1, 1), np.float32), ints(0, 0, 39999, 39999)], {}, r"output \[40000, 40000\] float32"),
        (
            "Pad",
            19,
            [np.ones((1, 1), np.float32), ints(0, 0, 39999, 39999)],
            {"mode": "wrap"},
            r"output \[40000, 40000\] float32",
        ),
        ("Range", 11, [np.array(v, np.float32) for v in (0, 2**31, 1)], {}, r"output \[2147483648\] float32 would need 8\.0 GiB"),
        # int32 output of 4 GiB (the budget itself), computed in int64: 8 GiB
        ("Range", 11, [np.array(v, np.int32) for v in (0, 2**30, 1)], {}, r"int64 work \[1073741824\] int64"),
    ],
)
def test_sizes_over_the_budget_are_refused_before_any_work(
    op: str, opset: int, inputs: list[np.ndarray], attrs: dict[str, Any], match: str
) -> None:
    """Output dims the values of a graph input decide (shape inference cannot know them) within
    the memory budget before the kernel allocates: Expand to [1, 40000, 40000] float32 is 6.0 GiB."""
    with pytest.raises(MemoryBudgetError, match=f"{op.lower()}_node.*{match}"):
        ovpool_of(op, opset, inputs, attrs)


# ---------------------------------------------------------------------------------------------
# EyeLike, ReverseSequence, CenterCropPad, Col2Im

ONNX_TYPES = {"float32": 1, "uint8": 2, "int8": 3, "int32": 6, "int64": 7, "bool": 9, "float16": 10, "float64": 11}


@pytest.mark.parametrize("opset", since_opsets("EyeLike", highest=26))
@examples(20)
@given(data=st.data())
def test_eye_like(opset: int, data: st.DataObject) -> None:
    """EyeLike-9/22: ones where j - i == k (the schema's rule, checked by loops), of ``dtype`` or the input's type."""
    rows, cols = data.draw(st.integers(0, 5)), data.draw(st.integers(0, 5))
    k = data.draw(st.integers(-6, 6))
    source = data.draw(st.sampled_from(("float32", "int32", "int64", "float64")))
    attrs: dict[str, Any] = {"k": k} if k or data.draw(st.booleans()) else {}
    target = data.draw(st.sampled_from((None, *ONNX_TYPES)))
    if target is not None:
        attrs["dtype"] = ONNX_TYPES[target]
    x = np.zeros((rows, cols), source)
    if target in (None, "float32", "float64", "int32", "int64"):  # onnxruntime's EyeLike types
        (y,) = check("EyeLike", opset, [x], attrs)
    else:
        (y,) = ovpool_of("EyeLike", opset, [x], attrs)
    expected = [[1 if j - i == k else 0 for j in range(cols)] for i in range(rows)]
    assert y.dtype == np.dtype(target or source)
    np.testing.assert_array_equal(y.astype(np.int64), np.array(expected, np.int64).reshape(rows, cols))


def test_eye_like_bfloat16_and_errors() -> None:
    """bfloat16 output from EyeLike-22 (EyeLike-9 refuses it naming -22); rank 3; a string dtype."""
    import ml_dtypes

    (y,) = ovpool_of("EyeLike", 22, [np.zeros((2, 3), np.float32)], {"dtype": 16, "k": -1})
    assert y.dtype == ml_dtypes.bfloat16
    np.testing.assert_array_equal(y.astype(np.float32), [[0, 0, 0], [1, 0, 0]])
    for opset, x, attrs, match in [
        (9, np.zeros((2, 2), np.float32), {"dtype": 16}, "from EyeLike-22"),
        (22, np.zeros((2, 2, 2), np.float32), {}, "2-D"),
        (22, np.zeros((2, 2), np.float32), {"dtype": 8}, "dtype"),
    ]:
        with pytest.raises(ModelError, match=match):
            ovpool_of("EyeLike", opset, [x], attrs)


def schema_reverse_sequence(x: np.ndarray, lens: np.ndarray, batch_axis: int, time_axis: int) -> np.ndarray:
    """The schema's rule by loops: output[b, t] = input[b, lens[b] - 1 - t] for t < lens[b], else input[b, t]."""
    y = x.copy()
    for b in range(x.shape[batch_axis]):
        for t in range(x.shape[time_axis]):
            source = lens[b] - 1 - t if t < lens[b] else t
            target: list[Any] = [slice(None)] * x.ndim
            target[batch_axis], target[time_axis] = b, t
            origin = list(target)
            origin[time_axis] = source
            y[tuple(target)] = x[tuple(origin)]
    return y


@pytest.mark.parametrize("opset", since_opsets("ReverseSequence", highest=26))
@examples(20)
@given(data=st.data(), seed=seeds)
def test_reverse_sequence(opset: int, data: st.DataObject, seed: int) -> None:
    """ReverseSequence-10 (and -28 on the schema: onnxruntime 1.31 runs up to 26): both axis orders, ranks 2-4."""
    shape = data.draw(shapes(2, 4, 1, 4))
    batch_axis = data.draw(st.integers(0, 1))
    time_axis = 1 - batch_axis
    dtype = data.draw(st.sampled_from(ALL))
    x = values(seed, shape, dtype)
    lens = np.array([data.draw(st.integers(1, shape[time_axis])) for _ in range(shape[batch_axis])], np.int64)
    attrs = {"batch_axis": batch_axis, "time_axis": time_axis}
    (y,) = check("ReverseSequence", opset, [x, lens], attrs)
    np.testing.assert_array_equal(y, schema_reverse_sequence(x, lens, batch_axis, time_axis))


def test_reverse_sequence_28_and_errors() -> None:
    """ReverseSequence-28 (bfloat16, strings; a length of 0 copies the entry) on the schema's loops;
    bfloat16 refused at -10 naming -28; equal axes, lengths beyond the steps, int32 lengths."""
    import ml_dtypes

    words = np.array([["a", "b", "c"], ["d", "e", "f"]], dtype=object)
    lens = np.array([3, 0], np.int64)
    (y,) = ovpool_of("ReverseSequence", 28, [words, lens], {"batch_axis": 0, "time_axis": 1})
    assert y.tolist() == schema_reverse_sequence(words, lens, 0, 1).tolist() == [["c", "b", "a"], ["d", "e", "f"]]
    x = np.arange(6).reshape(3, 2).astype(ml_dtypes.bfloat16)
    (y,) = ovpool_of("ReverseSequence", 28, [x, np.array([2, 3], np.int64)], {})
    np.testing.assert_array_equal(y.astype(np.float32), schema_reverse_sequence(x, [2, 3], 1, 0).astype(np.float32))
    for opset, inputs, attrs, match in [
        (10, [x, np.array([2, 3], np.int64)], {}, "from ReverseSequence-28"),
        (28, [np.zeros((2, 2), np.float32), np.array([1, 1], np.int64)], {"batch_axis": 0}, "batch_axis"),
        (28, [np.zeros((2, 2), np.float32), np.array([1, 3], np.int64)], {}, "sequence_lens"),
        (28, [np.zeros((2, 2), np.float32), np.array([1, 1], np.int32)], {}, "int32"),
        (28, [np.zeros((2, 2), np.float32), np.array([1], np.int64)], {}, "sequence_lens"),
    ]:
        with pytest.raises(ModelError, match=match):
            ovpool_of("ReverseSequence", opset, inputs, attrs)


def schema_center_crop_pad(x: np.ndarray, sizes: list[int], axes: list[int]) -> np.ndarray:
    """The schema's rule by loops over every output cell: along a cropped axis the output starts at
    input (in - out) // 2; along a padded one input 0 lands at (out - in) // 2; cells outside are 0."""
    out_shape = list(x.shape)
    offsets = [0] * x.ndim
    for axis, size in zip(axes, sizes):
        axis %= x.ndim
        out_shape[axis] = size
        offsets[axis] = (x.shape[axis] - size) // 2 if x.shape[axis] >= size else -((size - x.shape[axis]) // 2)
    y = np.zeros(out_shape, x.dtype)
    for index in np.ndindex(*out_shape):
        source = tuple(i + o for i, o in zip(index, offsets))
        if all(0 <= s < d for s, d in zip(source, x.shape)):
            y[index] = x[source]
    return y


@examples(25)
@given(data=st.data(), seed=seeds)
def test_center_crop_pad(data: st.DataObject, seed: int) -> None:
    """CenterCropPad-18 (its only version): crops and pads (odd differences too), every axis or
    some (negative included), int64 shapes against onnxruntime, int32 too against the schema."""
    shape = data.draw(shapes(1, 4, 1, 6))
    rank = len(shape)
    axes = data.draw(st.none() | st.lists(st.integers(-rank, rank - 1), min_size=1, max_size=rank, unique_by=lambda a: a % rank))
    sizes = [data.draw(st.integers(1, 8)) for _ in (axes if axes is not None else shape)]
    x = values(seed, shape, data.draw(st.sampled_from(ALL)))
    attrs = {} if axes is None else {"axes": axes}
    expected = schema_center_crop_pad(x, sizes, axes if axes is not None else list(range(rank)))
    # onnxruntime expands the function body, which does not type-check with int32 shapes
    (y,) = ovpool_of("CenterCropPad", 18, [x, np.array(sizes, np.int32)], attrs)
    np.testing.assert_array_equal(y, expected)
    (y,) = check("CenterCropPad", 18, [x, np.array(sizes, np.int64)], attrs)
    np.testing.assert_array_equal(y, expected)


def test_center_crop_pad_strings_and_errors() -> None:
    """Strings pad with ""; a shape input of the wrong length, a repeated axis, a negative size."""
    (y,) = ovpool_of("CenterCropPad", 18, [np.array(["a", "b"], dtype=object), ints(4)])
    assert y.tolist() == ["", "a", "b", ""]
    x = np.zeros((2, 3), np.float32)
    for sizes, attrs, match in [(ints(2), {}, "shape"), (ints(2, 2), {"axes": [0, -2]}, "axes"), (ints(2, -1), {}, "negative")]:
        with pytest.raises(ModelError, match=match):
            ovpool_of("CenterCropPad", 18, [x, sizes], attrs)


def schema_col2im(
    x: np.ndarray, image: list[int], block: list[int], strides: list[int], dilations: list[int], pads: list[int]
) -> np.ndarray:
    """Col2Im by loops: column (c, block offset j) at block position o adds to image cell
    o * stride - pad_begin + j * dilation of each axis when that cell is inside the image."""
    rank = len(image)
    positions = [(image[i] + pads[i] + pads[rank + i] - dilations[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(rank)]
    n, channels = x.shape[0], x.shape[1] // math.prod(block)
    y = np.zeros((n, channels, *image), np.float64)
    for b in range(n):
        for c in range(channels):
            for j_flat, j in enumerate(np.ndindex(*block)):
                for o_flat, o in enumerate(np.ndindex(*positions)):
                    cell = tuple(o[i] * strides[i] - pads[i] + j[i] * dilations[i] for i in range(rank))
                    if all(0 <= cell[i] < image[i] for i in range(rank)):
                        y[(b, c, *cell)] += x[b, c * math.prod(block) + j_flat, o_flat]
    return y


@examples(25)
@given(data=st.data(), seed=seeds)
def test_col2im(data: st.DataObject, seed: int) -> None:
    """Col2Im-18 (its only version) on 1-3 spatial axes with drawn blocks, strides, dilations and pads."""
    rank = data.draw(st.integers(1, 3))
    block = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [data.draw(st.integers(1, 3)) for _ in range(rank)]
    dilations = [data.draw(st.integers(1, 2)) for _ in range(rank)]
    pads = [data.draw(st.integers(0, 2)) for _ in range(2 * rank)]
    image = [data.draw(st.integers(max(1, dilations[i] * (block[i] - 1) + 1 - pads[i] - pads[rank + i]), 6)) for i in range(rank)]
    positions = [(image[i] + pads[i] + pads[rank + i] - dilations[i] * (block[i] - 1) - 1) // strides[i] + 1 for i in range(rank)]
    shape = (data.draw(st.integers(1, 2)), data.draw(st.integers(1, 2)) * math.prod(block), math.prod(positions))
    dtype = data.draw(st.sampled_from(("float32", "float64")))
    x = values(seed, shape, dtype)
    attrs = {"strides": strides, "dilations": dilations, "pads": pads}
    (y,) = ovpool_of("Col2Im", 18, [x, ints(*image), ints(*block)], attrs)
    assert y.dtype == x.dtype
    np.testing.assert_allclose(y, schema_col2im(x, image, block, strides, dilations, pads), rtol=1e-5, atol=1e-5)
    # float32 is onnxruntime's only type; its Col2Im of 1 or 3 spatial axes with dilations is wrong (below)
    if dtype == "float32" and (rank == 2 or dilations == [1] * rank):
        check("Col2Im", 18, [x, ints(*image), ints(*block)], attrs, rtol=1e-5, atol=1e-5)


def test_col2im_dilated_forms_agree() -> None:
    """One spatial axis with dilation 2 equals the same blocks on a (1, 3) image and on a (1, 1, 3)
    one: channel 1's block cells 3 and 4 land at 0 and 2. onnxruntime 1.31 puts 4 at 0 in the 1-D
    and 3-D forms (its N-d path; the 2-D one is right), so the dilated draws of 1 or 3 axes above
    are checked against the schema only."""
    x = np.arange(1, 5, dtype=np.float32).reshape(1, 4, 1)
    (one,) = ovpool_of("Col2Im", 18, [x, ints(3), ints(2)], {"dilations": [2]})
    (two,) = check("Col2Im", 18, [x, ints(1, 3), ints(1, 2)], {"dilations": [1, 2]})
    (three,) = ovpool_of("Col2Im", 18, [x, ints(1, 1, 3), ints(1, 1, 2)], {"dilations": [1, 1, 2]})
    np.testing.assert_array_equal(one, [[[1, 0, 2], [3, 0, 4]]])
    np.testing.assert_array_equal(one, two[:, :, 0])
    np.testing.assert_array_equal(one, three[:, :, 0, 0])


def test_col2im_integers_and_errors() -> None:
    """Integers (which onnxruntime does not run) wrap in T; L that does not match the positions,
    pads of the wrong length, a string input."""
    x = np.full((1, 4, 4), 100, np.int8)  # 2x2 blocks on a 3x3 image: the centre cell sums 4 blocks
    (y,) = ovpool_of("Col2Im", 18, [x, ints(3, 3), ints(2, 2)])
    assert y.dtype == np.int8 and y[0, 0, 1, 1] == np.int8(400 - 512)
    np.testing.assert_array_equal(y, schema_col2im(x, [3, 3], [2, 2], [1, 1], [1, 1], [0] * 4).astype(np.int64).astype(np.int8))
    f = np.zeros((1, 4, 5), np.float32)
    for inputs, attrs, match in [
        ([f, ints(3, 3), ints(2, 2)], {}, "must be"),
        ([np.zeros((1, 4, 4), np.float32), ints(3, 3), ints(2, 2)], {"pads": [1, 1]}, "pads"),
        ([np.zeros((1, 4, 4), np.float32), ints(3, 3), ints(2, 2)], {"strides": [0, 1]}, "strides"),
        ([np.full((1, 4, 4), "a", dtype=object), ints(3, 3), ints(2, 2)], {}, "numbers"),
    ]:
        with pytest.raises(ModelError, match=match):
            ovpool_of("Col2Im", 18, inputs, attrs)


# ---------------------------------------------------------------------------------------------
# ONNX's own node test cases

OPS = module_ops("ovpool.engine.ops.tensor")


def test_onnx_cases_cover_every_op() -> None:
    assert node_case_ops(OPS) == OPS


@pytest.mark.parametrize("case", node_case_params(OPS))
def test_onnx_node_case(case: Any) -> None:
    check_node_case(case)
