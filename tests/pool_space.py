"""The whole ONNX pooling attribute space as single-node models with their expected outputs.

A ``PoolCase`` is one model (AveragePool, MaxPool with or without Indices, MaxUnpool with or
without an ``output_shape`` input, GlobalAveragePool, GlobalMaxPool; ranks 1-3; opsets 1-22 by
since-version; float, half, double, int8 and uint8 where the version allows them), its inputs
(small integers, so every sum is exact) and the outputs the naive loops of ``oracle`` give, never
ovpool's. Graph outputs are declared with a type and no shape, or with unknown dims, as
exporters write them, so the passes must size them by the ONNX rules.

``pool_cases()`` draws them for hypothesis; ``grid()`` enumerates a fixed sweep of about 1,800
(``sweep_transforms.py`` runs the issue-22 command over it).
"""

from __future__ import annotations

import itertools
from collections.abc import Iterator
from dataclasses import dataclass

import numpy as np
import onnx
import oracle
from hypothesis import strategies as st
from onnx import TensorProto, helper

SINCE = {
    "AveragePool": (1, 7, 10, 11, 19, 22),
    "MaxPool": (1, 8, 10, 11, 12, 22),
    "MaxUnpool": (9, 11, 22),
    "GlobalAveragePool": (1, 22),
    "GlobalMaxPool": (1, 22),
}
# Lp pooling: drawn by ``pool_cases(LP_OPS)``, kept out of ``SINCE`` (the transform sweeps' ops).
# Version 2 at opset 7, which selects it: onnx knows no IR version for opset 2, onnxruntime runs 7 up.
LP_SINCE = {"LpPool": (1, 7, 11, 18, 22), "GlobalLpPool": (1, 7, 22)}
LP_OPS = tuple(LP_SINCE)
ALL_SINCE = {**SINCE, **LP_SINCE}
# the first version of each op with dilations and with ceil_mode
DILATED_SINCE = {"AveragePool": 19, "MaxPool": 10, "LpPool": 18}
CEIL_SINCE = {"AveragePool": 10, "MaxPool": 10, "LpPool": 18}
FLOATS = (np.float32, np.float16, np.float64)
POINTS_PER_CELL = 14  # windowed points per (op, opset, dtype, rank) in ``grid``


@dataclass(frozen=True)
class PoolCase:
    """One single-node model, its feeds and the oracle's outputs (by graph output name)."""

    op: str
    opset: int
    attrs: dict
    dtype: type
    model: onnx.ModelProto
    feeds: dict[str, np.ndarray]
    expected: dict[str, np.ndarray]

    def __repr__(self) -> str:
        shape = list(self.feeds["x"].shape)
        extra = f" inputs={sorted(self.feeds)}" if len(self.feeds) > 1 else ""
        return f"PoolCase({self.op}-opset{self.opset} {np.dtype(self.dtype).name} x{shape} {self.attrs}{extra})"


def dtypes_for(op: str, opset: int) -> list[type]:
    """The tested element types the op's version at ``opset`` allows (int8/uint8: MaxPool-12+)."""
    if op == "MaxPool" and opset >= 12:
        return [*FLOATS, np.int8, np.uint8]
    return list(FLOATS)


def build(
    op: str,
    attrs: dict,
    shape: list[int],
    opset: int,
    dtype: type,
    *,
    indices: bool = False,
    output_shape: bool = False,
    declared: str = "none",
    seed: int = 0,
) -> PoolCase:
    """The case for one point of the space. ``declared``: graph outputs typed with no shape
    (``"none"``) or with unknown dims of the right rank (``"rank"``)."""
    rng = np.random.default_rng(seed)
    elem = helper.np_dtype_to_tensor_dtype(np.dtype(dtype))
    low = 0 if dtype == np.uint8 else -4
    x = rng.integers(low, low + 9, size=shape).astype(dtype)
    rank = len(shape)
    feeds = {"x": x}
    inputs = [helper.make_tensor_value_info("x", elem, shape)]
    outputs = ["y"]
    if op == "MaxUnpool":
        expected, extra_inputs = _unpool(x, attrs, rng, output_shape, feeds)
        inputs += extra_inputs
    elif op == "GlobalLpPool":  # LpPool with the whole plane as its window
        window = {"kernel_shape": list(shape[2:]), **attrs}
        expected = {"y": oracle.pool(x.astype(np.float64), "lp", window).astype(dtype)}
    elif op.startswith("Global"):
        reduce = np.max if op == "GlobalMaxPool" else np.mean
        expected = {"y": reduce(x.astype(np.float64), axis=tuple(range(2, rank)), keepdims=True).astype(dtype)}
    else:
        found = oracle.pool(x.astype(np.float64), {"AveragePool": "avg", "LpPool": "lp"}.get(op, "max"), attrs)
        if op in ("AveragePool", "LpPool"):
            expected = {"y": found.astype(dtype)}
        else:
            expected = {"y": found[0].astype(dtype)}
            if indices:
                expected["i"] = found[1]
                outputs.append("i")
    value_infos = [
        helper.make_tensor_value_info(
            name, TensorProto.INT64 if name == "i" else elem, None if declared == "none" else [None] * rank
        )
        for name in outputs
    ]
    node = helper.make_node(op, [i.name for i in inputs], outputs, name="pool", **attrs)
    graph = helper.make_graph([node], "pool_space", inputs, value_infos)
    model = helper.make_model(graph, opset_imports=[helper.make_opsetid("", opset)])
    model.ir_version = max(3, helper.find_min_ir_version_for(list(model.opset_import)))
    return PoolCase(op, opset, attrs, dtype, model, feeds, expected)


def _unpool(x, attrs, rng, output_shape, feeds):
    """MaxUnpool's expected output: distinct random positions in the output (its inferred size, or
    a drawn ``output_shape`` one cell larger on some axes, fed as a graph input)."""
    rank = x.ndim - 2
    strides = attrs.get("strides", [1] * rank)
    pads = attrs.get("pads", [0] * 2 * rank)
    size = [(x.shape[2 + a] - 1) * strides[a] + attrs["kernel_shape"][a] - pads[a] - pads[rank + a] for a in range(rank)]
    if output_shape:
        size = [n + int(rng.integers(0, 2)) for n in size]
    full = [*x.shape[:2], *size]
    plane = int(np.prod(size))
    per_plane = int(np.prod(x.shape[2:]))
    where = np.stack([rng.choice(plane, per_plane, replace=False) + p * plane for p in range(x.shape[0] * x.shape[1])])
    feeds["i"] = where.reshape(x.shape).astype(np.int64)
    inputs = [helper.make_tensor_value_info("i", TensorProto.INT64, list(x.shape))]
    if output_shape:
        feeds["s"] = np.asarray(full, dtype=np.int64)
        inputs.append(helper.make_tensor_value_info("s", TensorProto.INT64, [len(full)]))
        expected = oracle.unpool(x, feeds["i"], attrs, output_shape=full)
    else:
        expected = oracle.unpool(x, feeds["i"], attrs)
    return {"y": expected}, inputs


def windowed_attrs(
    op: str,
    opset: int,
    kernel: list[int],
    strides: list[int],
    dilations: list[int],
    pads: list[int] | None,
    auto_pad: str,
    ceil: bool,
    include: bool,
    column_major: bool,
) -> dict:
    """ONNX attributes for one windowed point, keeping only what the version has (dilations:
    MaxPool-10+, AveragePool-19+, LpPool-18+; ceil_mode 10+, LpPool-18+; count_include_pad 7+)."""
    attrs: dict = {"kernel_shape": kernel}
    if any(s != 1 for s in strides):
        attrs["strides"] = strides
    dilated = opset >= DILATED_SINCE[op]
    if dilated and any(d != 1 for d in dilations):
        attrs["dilations"] = dilations
    if auto_pad != "NOTSET":
        attrs["auto_pad"] = auto_pad
    elif pads is not None and any(pads):
        attrs["pads"] = pads
    if ceil and opset >= CEIL_SINCE[op]:
        attrs["ceil_mode"] = 1
    if include and op == "AveragePool" and opset >= 7:
        attrs["count_include_pad"] = 1
    if column_major and op == "MaxPool" and opset >= 8:
        attrs["storage_order"] = 1
    return attrs


@st.composite
def pool_cases(draw, ops: tuple[str, ...] = tuple(SINCE)) -> PoolCase:
    """Any point of the space: op, since-version opset, dtype, rank 1-3, every attribute."""
    op = draw(st.sampled_from(ops))
    opset = draw(st.sampled_from(ALL_SINCE[op]))
    dtype = draw(st.sampled_from(dtypes_for(op, opset)))
    rank = draw(st.integers(1, 3))
    batch = [draw(st.integers(1, 2)), draw(st.integers(1, 2))]
    declared = draw(st.sampled_from(["none", "rank"]))
    seed = draw(st.integers(0, 2**16))
    lp = _lp_attrs(draw, opset) if op in LP_SINCE else {}
    if op.startswith("Global"):
        shape = batch + [draw(st.integers(1, 4)) for _ in range(rank)]
        return build(op, lp, shape, opset, dtype, declared=declared, seed=seed)
    kernel = [draw(st.integers(1, 3)) for _ in range(rank)]
    strides = [draw(st.integers(1, 3)) for _ in range(rank)]
    if op == "MaxUnpool":
        pads = [draw(st.integers(0, k - 1)) for k in kernel * 2]
        spatial = [draw(st.integers(1, 3)) for _ in range(rank)]
        attrs = {"kernel_shape": kernel, "strides": strides}
        if any(pads):
            attrs["pads"] = pads
        size = _unpool_size(spatial, attrs)
        if any(n < 1 for n in size) or np.prod(size) < np.prod(spatial):  # room for distinct indices
            attrs.pop("pads", None)
        output_shape = draw(st.booleans())
        return build(op, attrs, batch + spatial, opset, dtype, output_shape=output_shape, declared=declared, seed=seed)
    dilations = [draw(st.integers(1, 3)) for _ in range(rank)]
    dilations = dilations if opset >= DILATED_SINCE[op] else [1] * rank
    extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilations)]
    spatial = [draw(st.integers(e, e + 4)) for e in extent]
    pads = [draw(st.integers(0, e - 1)) for e in extent * 2]
    auto_pad = draw(st.sampled_from(["NOTSET", "NOTSET", "SAME_UPPER", "SAME_LOWER", "VALID"]))
    indices = op == "MaxPool" and opset >= 8 and draw(st.booleans())
    attrs = windowed_attrs(
        op,
        opset,
        kernel,
        strides,
        dilations,
        pads,
        auto_pad,
        draw(st.booleans()),
        draw(st.booleans()),
        indices and rank > 1 and draw(st.booleans()),
    )
    return build(op, {**attrs, **lp}, batch + spatial, opset, dtype, indices=indices, declared=declared, seed=seed)


def _lp_attrs(draw, opset: int) -> dict:
    """An Lp pool's ``p``: absent (2) or 1-3, a float in version 1 (2.5 too), an int after."""
    choice = draw(st.sampled_from([None, 1, 2, 3, 2.5] if opset == 1 else [None, 1, 2, 3]))
    if choice is None:
        return {}
    return {"p": float(choice) if opset == 1 else choice}


def _unpool_size(spatial: list[int], attrs: dict) -> list[int]:
    rank = len(spatial)
    pads = attrs.get("pads", [0] * 2 * rank)
    strides = attrs.get("strides", [1] * rank)
    return [
        (n - 1) * s + k - pads[a] - pads[rank + a] for a, (n, s, k) in enumerate(zip(spatial, strides, attrs["kernel_shape"]))
    ]


def grid() -> Iterator[PoolCase]:
    """A fixed sweep of about 1,800 cases: every since-version and dtype of every op, ranks 1-3,
    and for the windowed ops a rotating choice of kernel, stride, dilation, pads, auto_pad,
    ceil_mode, count_include_pad, storage_order and indices (the issue-22 sweep's mix)."""
    shapes = {1: [1, 2, 7], 2: [1, 2, 7, 5], 3: [1, 1, 5, 4, 6]}
    counter = itertools.count()  # rotates the points each (op, opset, dtype, rank) cell takes
    points = list(
        itertools.product(
            [(2, 3, 1), (2, 2, 2), (3, 2, 1), (2, 1, 3)],  # kernel, stride, dilation
            ["pads", "SAME_UPPER", "SAME_LOWER", "VALID"],
            [False, True],  # ceil
        )
    )
    for op, versions in SINCE.items():
        for opset in versions:
            for dtype in dtypes_for(op, opset):
                for rank, shape in shapes.items():
                    if op.startswith("Global"):
                        yield build(op, {}, shape, opset, dtype, seed=next(counter))
                        continue
                    if op == "MaxUnpool":
                        small = [1, 2, *[3] * rank]
                        for output_shape in (False, True):
                            attrs = {"kernel_shape": [2] * rank, "strides": [2] * rank}
                            yield build(op, attrs, small, opset, dtype, output_shape=output_shape, seed=next(counter))
                        continue
                    start = next(counter)
                    for offset in range(POINTS_PER_CELL):
                        (k, s, d), mode, ceil = points[(start * 5 + offset) % len(points)]
                        seed = start * POINTS_PER_CELL + offset
                        pads = [1] * rank + [min(1, k * d - d)] * rank if mode == "pads" else None
                        auto_pad = "NOTSET" if mode == "pads" else mode
                        include = op == "AveragePool" and seed % 2 == 1
                        indices = op == "MaxPool" and opset >= 8 and seed % 3 != 0
                        attrs = windowed_attrs(
                            op,
                            opset,
                            [k] * rank,
                            [s] * rank,
                            [d] * rank,
                            pads,
                            auto_pad,
                            ceil,
                            include,
                            indices and seed % 2 == 0,
                        )
                        yield build(op, attrs, shape, opset, dtype, indices=indices, seed=seed)
