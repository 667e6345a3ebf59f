"""PoolSpec validation and the shape engine, on hand-worked numbers (SEMANTICS.md)."""

from __future__ import annotations

import dataclasses

import pytest

from ovpool import shape
from ovpool.errors import SpecError
from ovpool.spec import Divisor, IndexOrder, Indices, Padding, PoolKind, PoolSpec, Rounding


def test_defaults_fill_per_axis():
    spec = PoolSpec(PoolKind.MAX, kernel=(3, 3))
    assert spec.strides == (1, 1) and spec.dilations == (1, 1) and spec.pads_begin == (0, 0)


def test_spec_is_frozen():
    with pytest.raises(dataclasses.FrozenInstanceError):
        PoolSpec(PoolKind.MAX, kernel=(2,)).kernel = (3,)


@pytest.mark.parametrize(
    "changes,attribute,shown",
    [
        ({"strides": (0, 2)}, "strides", "[0, 2]"),
        ({"dilations": (1, 0)}, "dilations", "[1, 0]"),
        ({"kernel": (3, 0)}, "kernel_shape", "[3, 0]"),
        ({"pads_begin": (-1, 0)}, "pads", "[-1, 0, 0, 0]"),
        ({"strides": (1, 1, 1)}, "strides", "[1, 1, 1]"),
        ({"pads_begin": (3, 0)}, "pads", "[3, 0, 0, 0]"),
        ({"padding": Padding.SAME_UPPER, "pads_end": (1, 1)}, "pads", "[0, 0, 1, 1]"),
    ],
)
def test_errors_name_the_node_the_attribute_and_the_value(changes, attribute, shown):
    base = {"kind": PoolKind.MAX, "kernel": (3, 3), "name": "pool7"}
    with pytest.raises(SpecError) as err:
        PoolSpec(**{**base, **changes})
    assert err.value.node == "pool7" and err.value.attribute == attribute
    assert str(err.value).startswith(f"node 'pool7': attribute '{attribute}' = {shown}: ")


def test_pad_below_the_dilated_extent_is_fine():
    PoolSpec(PoolKind.MAX, kernel=(2,), dilations=(3,), pads_begin=(3,), pads_end=(3,))


def test_indices_only_on_max_and_globals_have_no_window():
    with pytest.raises(SpecError, match="only max pooling has indices"):
        PoolSpec(PoolKind.AVERAGE, kernel=(2,), indices=Indices())
    with pytest.raises(SpecError, match="global pool has no window"):
        PoolSpec(PoolKind.GLOBAL_MAX, kernel=(2,))


@pytest.mark.parametrize(
    "length,k,s,d,pb,pe,rounding,expected",
    [
        (4, 3, 2, 1, 1, 1, Rounding.FLOOR, 2),
        (4, 3, 2, 1, 1, 1, Rounding.CEIL, 3),  # last window 3..5 starts inside the input
        (5, 2, 2, 1, 0, 0, Rounding.FLOOR, 2),
        (5, 2, 2, 1, 0, 0, Rounding.CEIL, 3),
        (4, 1, 2, 1, 0, 1, Rounding.CEIL, 2),  # the third window would start in the end pad: dropped
        (4, 1, 2, 1, 0, 1, Rounding.CEIL_NO_DROP, 3),  # OpenVINO ceil keeps it
        (2, 3, 3, 1, 1, 1, Rounding.CEIL, 1),  # ONNX test_averagepool_2d_ceil_last_window_starts_on_pad
        (7, 3, 1, 2, 0, 0, Rounding.FLOOR, 3),  # dilation 2: extent 5
    ],
)
def test_axis_output(length, k, s, d, pb, pe, rounding, expected):
    assert shape.axis_output(length, k, s, d, pb, pe, rounding) == expected


def test_same_padding_includes_dilation():
    # L=5, k=3, d=2, s=2: out 3, extent 5, total pad (3-1)*2+5-5 = 4
    assert shape.auto_pads(5, 3, 2, 2, Padding.SAME_UPPER) == (2, 2)
    # L=4, k=2, s=1: total 1, odd cell at the end for UPPER, at the start for LOWER
    assert shape.auto_pads(4, 2, 1, 1, Padding.SAME_UPPER) == (0, 1)
    assert shape.auto_pads(4, 2, 1, 1, Padding.SAME_LOWER) == (1, 0)
    spec = PoolSpec(PoolKind.MAX, kernel=(3,), strides=(2,), dilations=(2,), padding=Padding.SAME_LOWER, rounding=Rounding.CEIL)
    assert shape.output_spatial(spec, (5,)) == (3,)


def test_dynamic_dims_stay_dynamic():
    spec = PoolSpec(PoolKind.MAX, kernel=(3, 3), strides=(2, 2), padding=Padding.SAME_UPPER)
    assert shape.output_shape(spec, (None, 64, None, 56)) == (None, 64, None, 28)
    assert shape.resolved_pads(spec, (None, 56)) == ((None, 0), (None, 1))


def test_input_smaller_than_window_names_the_node():
    spec = PoolSpec(PoolKind.MAX, kernel=(5,), name="tiny")
    with pytest.raises(SpecError, match="node 'tiny'.*input length 3"):
        shape.output_spatial(spec, (3,))


def test_divisor_rules():
    spec = PoolSpec(PoolKind.AVERAGE, kernel=(3,), strides=(2,), pads_begin=(1,), pads_end=(1,), rounding=Rounding.CEIL)
    assert shape.divisor_counts(spec, (4,))[0].tolist() == [2, 3, 1]
    assert shape.divisor_counts(spec.with_(divisor=Divisor.INCLUDE_PAD), (4,))[0].tolist() == [3, 3, 2]
    assert shape.divisor_counts(spec.with_(divisor=Divisor.FULL_KERNEL_IF_PADDED), (4,))[0].tolist() == [3, 3, 3]
    unpadded = PoolSpec(
        PoolKind.AVERAGE, kernel=(2,), strides=(2,), rounding=Rounding.CEIL, divisor=Divisor.FULL_KERNEL_IF_PADDED
    )
    assert shape.divisor_counts(unpadded, (5,))[0].tolist() == [2, 2, 1]


def test_index_strides():
    assert shape.index_strides((1, 2, 4, 4), Indices()) == (32, 16, (4, 1))
    assert shape.index_strides((1, 2, 4, 4), Indices(order=IndexOrder.COLUMN_MAJOR)) == (32, 16, (1, 4))
    assert shape.index_strides((3, 2, 4, 5), Indices(axis=2)) == (0, 0, (5, 1))
    assert shape.index_strides((3, 2, 2, 3, 4), Indices(order=IndexOrder.COLUMN_MAJOR, axis=1)) == (0, 24, (1, 2, 6))


def test_unpool_output():
    spec = PoolSpec(PoolKind.UNPOOL, kernel=(2, 3), strides=(2, 2), pads_begin=(0, 1), pads_end=(0, 1))
    assert shape.unpool_output_spatial(spec, (2, 3)) == (4, 5)


def test_empty_windows_of_openvino_ceil():
    spec = PoolSpec(PoolKind.MAX, kernel=(2,), strides=(2,), pads_end=(1,), rounding=Rounding.CEIL_NO_DROP)
    assert shape.output_spatial(spec, (4,)) == (3,)
    assert shape.empty_windows(spec, (4,)) == [(0, 2)]
    assert shape.empty_windows(spec.with_(rounding=Rounding.CEIL), (4,)) == []
