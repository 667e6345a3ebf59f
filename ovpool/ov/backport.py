"""Older, exact forms of the layers an OpenVINO release cannot read: ``--target-openvino``.

``backport(model, "2023.3")`` rewrites a converted ``openvino.Model`` in place so that every layer
comes from an opset the release reads (``ovpool.ir.releases``), each newer layer replaced by a form
that computes the same values on the same windows:

* MaxPool-14 -> MaxPool-8 with the same attributes; ``ceil_torch`` becomes ``ceil`` (which keeps a
  last window that starts in the end pad) followed by a Slice of each output to the ceil_torch
  window count: input 7, kernel 2, stride 3, pads 1+1: ``ceil`` gives 4 windows, the fourth starting
  at 8 (past the input), and the Slice keeps 3. On static dims the count is a constant; on dynamic
  dims it is ``n - ((n - 1) * stride >= input + pad_begin)`` with ``n`` the MaxPool-8's own count.
  Indices are input coordinates in either form.
* AvgPool-14, and AvgPool-16 with all dilations 1 -> AvgPool-1 the same way: the kept windows are
  the same windows over the same pads, so each has the same divisor.
* AvgPool-16 with dilations, on static spatial dims: Pad (zeros) -> one strided Slice per kernel
  tap -> their sum / a constant divisor of ``shape.divisor_counts`` (``_dilated_average``); equal
  to the layer within float32 rounding (the sum runs in another order). Dynamic spatial dims,
  OpenVINO's own window counts of auto_pad same/valid with ceil rounding, and a window with no
  input cell (``ceil`` rounding past the end pad) have no such form here.
* Pad-12 (for 2023.0) -> Pad-1 where its pads are constants of at least 0: Pad-12 differs only in
  taking negative pads, which crop. Pads computed at run time, or negative, have no such form here.
* OneHot-16 -> OneHot-1: a negative index is normalized first (``indices + depth``) where the
  layer says ``negative_indices_mode="normalize"``; OneHot-1 leaves it off, as ``ignore_negative``.
* Identity-16 (the ONNX frontend's Identity since OpenVINO 2026.0) computes nothing: its consumers
  read its input instead (its internal tensor name is dropped). Where it is a model output, a
  Convert-1 to its own element type (also no computation) keeps the output a tensor of its own,
  so the names of a model input and a model output never merge (``x -> Identity -> z``: inputs
  ``x``, outputs ``z``).

Any other layer newer than the release is an ``UnsupportedError`` naming it: ``layer 'pool'
(AvgPool-16): OpenVINO 2023.3 reads layers up to opset13, and AvgPool-16 with dilations [2, 2] on
dynamic spatial dims (set them with --input) has no exact older form in ovpool``. The bodies of
If, Loop and TensorIterator layers are rewritten too. The nodes added are left unnamed for
``ovpool.ov.from_onnx.stable_names``.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING

from ovpool import shape
from ovpool.errors import UnsupportedError
from ovpool.ir import releases
from ovpool.spec import Rounding

if TYPE_CHECKING:
    import openvino
    from openvino import Node, Output

_BODIES = ("If", "Loop", "TensorIterator")


def backport(model: openvino.Model, release: releases.Release | str) -> None:
    """Rewrite ``model`` in place so that ``release`` reads every layer (see the module docstring);
    a layer with no exact older form is an ``UnsupportedError`` naming it and its version."""
    target = releases.parse(release) if isinstance(release, str) else release
    limit = releases.newest_opset(target)
    graphs = list(_graphs(model))
    changed = False
    for graph in graphs:
        for op in graph.get_ordered_ops():
            number = releases.opset_number(op.get_type_info().version_id)
            if number is None or number <= limit:
                continue
            form = OLDER_FORMS.get((op.get_type_name(), number))
            problem = form(op) if form is not None else ""
            if form is None or problem:
                raise UnsupportedError(
                    f"layer '{op.get_friendly_name()}' ({op.get_type_name()}-{number}): OpenVINO "
                    f"{releases.shown(target)} reads layers up to opset{limit}, and "
                    f"{op.get_type_name()}-{number}{problem} has no exact older form in ovpool"
                )
            changed = True
    if changed:
        for graph in reversed(graphs):  # bodies before the layers that hold them
            graph.validate_nodes_and_infer_types()


def newer_layers(model: openvino.Model, limit: int) -> list[tuple[str, str, int]]:
    """(friendly name, type, opset) of every layer of ``model`` newer than opset ``limit``."""
    found = []
    for graph in _graphs(model):
        for op in graph.get_ordered_ops():
            number = releases.opset_number(op.get_type_info().version_id)
            if number is not None and number > limit:
                found.append((op.get_friendly_name(), op.get_type_name(), number))
    return found


def _graphs(model: openvino.Model) -> Iterator[openvino.Model]:
    """``model`` and the bodies of its If, Loop and TensorIterator layers, nested ones included."""
    yield model
    for op in model.get_ordered_ops():
        if op.get_type_name() == "If":
            yield from _graphs(op.get_then_body())
            yield from _graphs(op.get_else_body())
        elif op.get_type_name() in _BODIES:
            yield from _graphs(op.get_function())


def _i64(values: int | Sequence[int]) -> Output:
    import numpy as np
    from openvino import opset1

    return opset1.constant(np.asarray(values, dtype=np.int64)).output(0)


def _take_place(old: Node, outputs: Sequence[Output], names: bool = True) -> None:
    """``outputs`` replace ``old``'s outputs for every consumer (with their tensor names unless
    ``names`` is False)."""
    for index, output in enumerate(outputs):
        replaced = old.output(index)
        own = output.get_names()
        given = replaced.get_names()
        replaced.replace(output)  # OpenVINO moves the names along; set them as wanted
        output.get_tensor().set_names(own | given if names else own)


def _window_count(pool: Node, data: Output, rank: int) -> Output | None:
    """The ceil_torch window count per spatial axis of ``pool`` (a ``ceil`` pool on ``data``),
    or None when it is every window ``pool`` makes: the shape engine's drop rule
    (``shape.last_window_in_end_pad``) on static shapes; on dynamic ones the same rule as
    OpenVINO nodes on the run-time shapes (no older release has ``ceil_torch`` to ask)."""
    from openvino import opset1, opset3, opset8

    attributes = pool.get_attributes()
    strides, begin = attributes["strides"], attributes["pads_begin"]
    in_shape, out_shape = data.get_partial_shape(), pool.get_output_partial_shape(0)
    spatial = [in_shape[2 + axis] for axis in range(rank)]
    counts = [out_shape[2 + axis] for axis in range(rank)]
    if all(d.is_static for d in spatial + counts):
        kept = [
            n.get_length() - int(shape.last_window_in_end_pad(n.get_length(), s, d.get_length(), b))
            for n, s, d, b in zip(counts, strides, spatial, begin)
        ]
        if kept == [n.get_length() for n in counts]:
            return None
        return _i64(kept)
    axes = _i64(list(range(2, 2 + rank)))
    n = opset8.gather(opset3.shape_of(pool.output(0), "i64"), axes, _i64(0))
    length = opset8.gather(opset3.shape_of(data, "i64"), axes, _i64(0))
    last_start = opset1.multiply(opset1.subtract(n, _i64(1)), _i64(list(strides)))
    in_pad = opset1.greater_equal(last_start, opset1.add(length, _i64(list(begin))))
    return opset1.subtract(n, opset1.convert(in_pad, "i64")).output(0)


def _sliced(outputs: Sequence[Output], stop: Output | None, rank: int) -> list[Output]:
    from openvino import opset8

    if stop is None:
        return list(outputs)
    zeros, ones, axes = _i64([0] * rank), _i64([1] * rank), _i64(list(range(2, 2 + rank)))
    return [opset8.slice(output, zeros, stop, ones, axes).output(0) for output in outputs]


def _rounding(attributes: dict) -> str:
    """``ceil_torch`` -> ``ceil`` (the extra windows are sliced away); others as they are."""
    return "ceil" if attributes["rounding_type"] == "ceil_torch" else attributes["rounding_type"]


def _max_pool_8(op: Node) -> str:
    """MaxPool-14 -> MaxPool-8 (+ Slice for ceil_torch)."""
    from openvino import opset8

    a = op.get_attributes()
    data = op.input_value(0)
    rank = len(a["kernel"])
    pool = opset8.max_pool(
        data,
        a["strides"],
        a["dilations"],
        a["pads_begin"],
        a["pads_end"],
        a["kernel"],
        _rounding(a),
        a["auto_pad"],
        a["index_element_type"],
        a["axis"],
    )
    stop = _window_count(pool, data, rank) if a["rounding_type"] == "ceil_torch" else None
    _name(pool, op, stop)
    _take_place(op, _sliced([pool.output(0), pool.output(1)], stop, rank))
    return ""


def _avg_pool_1(op: Node) -> str:
    """AvgPool-14, AvgPool-16 without dilations -> AvgPool-1 (+ Slice for ceil_torch); with
    dilations, on static spatial dims, the sum of the taps over the divisor (``_dilated_average``)."""
    from openvino import opset1

    a = op.get_attributes()
    if any(d != 1 for d in a.get("dilations", ())):
        return _dilated_average(op, a)
    data = op.input_value(0)
    rank = len(a["kernel"])
    pool = opset1.avg_pool(
        data, a["strides"], a["pads_begin"], a["pads_end"], a["kernel"], a["exclude-pad"], _rounding(a), a["auto_pad"]
    )
    stop = _window_count(pool, data, rank) if a["rounding_type"] == "ceil_torch" else None
    _name(pool, op, stop)
    _take_place(op, _sliced([pool.output(0)], stop, rank))
    return ""


_ROUNDING = {"floor": Rounding.FLOOR, "ceil": Rounding.CEIL_NO_DROP, "ceil_torch": Rounding.CEIL}


def _dilated_average(op: Node, a: dict) -> str:
    """A dilated AvgPool-16 on static spatial dims: the input zero-padded (pads_begin before, up
    to the last tap after), one strided Slice per kernel tap, their sum divided by a constant of
    ``shape.divisor_counts`` (OpenVINO's divisor: ``exclude-pad="false"`` the whole kernel when a
    pad is non-zero). f16 and bf16 are summed in f32 and rounded once, as the CPU plugin does.
    Input 7, kernel 2, dilation 2, stride 2, pads 1/1, ceil_torch: windows at -1, 1, 3, 5 read
    taps (-1, 1), (1, 3), (3, 5), (5, 7); exclude-pad divides by 1, 2, 2, 1."""
    from itertools import product

    import numpy as np
    from openvino import Type, opset1, opset8

    from ovpool import shape
    from ovpool.spec import Divisor, Padding, PoolKind, PoolSpec

    data = op.input_value(0)
    pshape = data.get_partial_shape()
    rank = len(a["kernel"])
    if not all(pshape[2 + axis].is_static for axis in range(rank)):
        return f" with dilations {list(a['dilations'])} on dynamic spatial dims (set them with --input)"
    spatial = tuple(pshape[2 + axis].get_length() for axis in range(rank))
    divisor = Divisor.EXCLUDE_PAD if a["exclude-pad"] else Divisor.FULL_KERNEL_IF_PADDED
    padding = Padding(a["auto_pad"])
    explicit = padding is Padding.EXPLICIT
    spec = PoolSpec(
        PoolKind.AVERAGE,
        tuple(a["kernel"]),
        tuple(a["strides"]),
        tuple(a["dilations"]),
        tuple(a["pads_begin"]) if explicit else (),
        tuple(a["pads_end"]) if explicit else (),
        padding,
        _ROUNDING[a["rounding_type"]],
        divisor,
        name=op.get_friendly_name(),
    )
    out = shape.output_spatial(spec, spatial)
    if list(out) != [op.get_output_partial_shape(0)[2 + axis].get_length() for axis in range(rank)]:
        # OpenVINO's own count for auto_pad same/valid with ceil rounding, which ONNX never has
        return f" with dilations {list(a['dilations'])}, auto_pad {a['auto_pad']} and rounding {a['rounding_type']}"
    if shape.empty_windows(spec, spatial):  # OpenVINO's value there is its own (0 or NaN)
        return f" with dilations {list(a['dilations'])} and a window with no input cell"
    begin, _ = shape.resolved_pads(spec, spatial)
    kernel, strides, dilations = spec.kernel, spec.strides, spec.dilations
    end = shape.floor_end_pads(spec, spatial, out)  # every tap of the last window inside the padded tensor
    element = data.get_element_type()
    wide = data if element == Type.f32 else opset1.convert(data, "f32").output(0)
    zero = opset1.constant(np.float32(0)).output(0)
    padded = opset1.pad(wide, _i64([0, 0, *begin]), _i64([0, 0, *end]), "constant", zero)
    axes = _i64(list(range(2, 2 + rank)))
    total: Output | None = None
    for taps in product(*(range(k) for k in kernel)):
        starts = [t * d for t, d in zip(taps, dilations)]
        stops = [start + (o - 1) * s + 1 for start, o, s in zip(starts, out, strides)]
        tap = opset8.slice(padded, _i64(starts), _i64(stops), _i64(list(strides)), axes).output(0)
        total = tap if total is None else opset1.add(total, tap).output(0)
    assert total is not None  # a kernel has at least one tap
    counts: np.ndarray = np.ones((1, 1), dtype=np.float32)  # N, C, then one axis per spatial axis
    for axis_counts in shape.divisor_counts(spec, spatial):
        counts = counts[..., None] * axis_counts.astype(np.float32)
    mean = opset1.divide(total, opset1.constant(counts))
    result = mean if element == Type.f32 else opset1.convert(mean, element)
    result.set_friendly_name(op.get_friendly_name())
    _take_place(op, [result.output(0)])
    return ""


def _name(pool: Node, old: Node, stop: Output | None) -> None:
    """The older pool keeps the layer's name; the ceil_torch count is ``<layer>/ceil_torch_count``."""
    pool.set_friendly_name(old.get_friendly_name())
    if stop is not None:
        stop.get_node().set_friendly_name(f"{old.get_friendly_name()}/ceil_torch_count")


def _pad_1(op: Node) -> str:
    """Pad-12 -> Pad-1 where its pads are constants of at least 0 (Pad-12 only adds negative pads,
    which crop); a pad value is kept for ``constant`` mode, the only one that reads it."""
    from openvino import opset1

    pads = [op.input_value(i) for i in (1, 2)]
    constant = all(p.get_node().get_type_name() == "Constant" for p in pads)
    if not constant or any(min(p.get_node().get_data(), default=0) < 0 for p in pads):
        return " with pads that are not constants of at least 0"
    mode = op.get_attributes()["pad_mode"]
    value = op.input_value(3) if op.get_input_size() > 3 and mode == "constant" else None
    pad = opset1.pad(op.input_value(0), pads[0], pads[1], mode, value)
    pad.set_friendly_name(op.get_friendly_name())
    _take_place(op, [pad.output(0)])
    return ""


def _bypass(op: Node) -> str:
    """Identity-16: its consumers read its input, whose names stay its own (an internal name
    would otherwise become a model input's). A model output keeps its own tensor and names:
    Convert-1 to its own element type."""
    from openvino import opset1

    source = op.input_value(0)
    if any(target.get_node().get_type_name() == "Result" for target in op.output(0).get_target_inputs()):
        copy = opset1.convert(source, source.get_element_type())
        copy.set_friendly_name(op.get_friendly_name())
        _take_place(op, [copy.output(0)])
    else:
        _take_place(op, [source], names=False)
    return ""


def _one_hot_1(op: Node) -> str:
    """OneHot-16 -> OneHot-1: ``negative_indices_mode="normalize"`` (what the ONNX frontend
    writes: -1 of depth 4 is 3) becomes ``indices + depth`` where an index is negative, before a
    OneHot-1, which leaves every index outside [0, depth) off (OneHot-16's ``ignore_negative``)."""
    from openvino import opset1

    indices, depth = op.input_value(0), op.input_value(1)
    attributes = op.get_attributes()
    if attributes.get("negative_indices_mode", "ignore_negative") == "normalize":
        shift = opset1.convert_like(depth, indices)
        zero = opset1.convert_like(_i64(0), indices)
        indices = opset1.select(opset1.less(indices, zero), opset1.add(indices, shift), indices).output(0)
    hot = opset1.one_hot(indices, depth, op.input_value(2), op.input_value(3), int(attributes["axis"]))
    hot.set_friendly_name(op.get_friendly_name())
    _take_place(op, [hot.output(0)])
    return ""


# (layer type, opset) -> the function that replaces such a layer in its graph by an exact older
# form; it returns "" when done, else the reason there is none (" with dilations [2, 2]"). Which
# layers have one is ``releases.OLDER_FORM_NEEDS``' (``ovpool validate`` reads it too).
_OLDER_FORM_OF = {"MaxPool": _max_pool_8, "AvgPool": _avg_pool_1, "Identity": _bypass, "Pad": _pad_1, "OneHot": _one_hot_1}
OLDER_FORMS: dict[tuple[str, int], Callable[[Node], str]] = {key: _OLDER_FORM_OF[key[0]] for key in releases.OLDER_FORM_NEEDS}
# What an older form needs that an IR's XML does not show (``ovpool validate`` says it).
OLDER_FORM_NEEDS: dict[tuple[str, int], str] = {key: needs for key, needs in releases.OLDER_FORM_NEEDS.items() if needs}
