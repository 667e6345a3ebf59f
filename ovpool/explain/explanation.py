"""``ovpool explain``: how a pooling spec covers an input, axis by axis, with every number from the
shape engine.

For each spatial axis: the output-size derivation with the numbers substituted, and the windows
over the padded input: input cells, pads, the ceil overhang past the end pad, windows the drop rule
removes (ONNX ceil_mode / ``ceil_torch``) and windows that lie wholly in padding (OpenVINO ``ceil``),
and for average pooling the divisor factor of each output position (the divisor of an output is the
product of its axes' factors, shown as a grid for the first two axes). ``render_text`` draws it for
a terminal, ``render_svg`` as an SVG picture.

Example: L=7, k=3, s=2, pads 1/1, ceil_mode: ``ceil((7 + 1 + 1 - 3) / 2) + 1 = 4`` windows starting at
padded cells 0, 2, 4, 6; none starts at or after L+pb = 8, so none is dropped; no overhang.
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from xml.sax.saxutils import escape

import numpy as np

from ovpool import shape
from ovpool.axis import cell_region, drop_threshold, padded_range, window_taps
from ovpool.errors import UsageError
from ovpool.spec import Padding, PoolKind, PoolSpec, Rounding

AXIS_NAMES = {1: ("W",), 2: ("H", "W"), 3: ("D", "H", "W")}
# Every cell is drawn: an axis of more cells (input plus pads and overhang) is refused.
MAX_CELLS = 1024


@dataclass(frozen=True)
class Window:
    """One window on one axis: output ``index``, tap positions in input coordinates (negative or
    >= L are padding or overhang), its divisor factor (None for max) and what became of it."""

    index: int
    taps: tuple[int, ...]
    divisor: int | None
    dropped: bool = False
    empty: bool = False


@dataclass(frozen=True)
class AxisExplanation:
    axis: int
    name: str
    length: int
    kernel: int
    stride: int
    dilation: int
    extent: int
    pad_begin: int
    pad_end: int
    overhang: int
    output: int
    derivation: tuple[str, ...]
    windows: tuple[Window, ...]


@dataclass(frozen=True)
class Explanation:
    spec: PoolSpec
    input_shape: tuple[int, ...]
    output_shape: tuple[int, ...]
    axes: tuple[AxisExplanation, ...]
    divisor_grid: np.ndarray | None


def explain(spec: PoolSpec, input_shape: Sequence[int]) -> Explanation:
    """Everything ``render_text``/``render_svg`` draw, for ``spec`` on an ``(N, C, *spatial)`` input."""
    input_shape = tuple(int(d) for d in input_shape)
    if min(input_shape, default=0) < 1:
        raise UsageError(f"input shape {list(input_shape)}: every dim must be >= 1")
    spatial = input_shape[2:]
    window = spec.resolve_global(spatial)
    out_shape = shape.output_shape(window, input_shape)
    out = out_shape[2:]
    pads_begin, pads_end = shape.resolved_pads(window, spatial)
    for axis, length in enumerate(spatial):
        lo, hi = padded_range(length, int(pads_begin[axis] or 0), int(pads_end[axis] or 0))
        if hi - lo > MAX_CELLS:
            raise UsageError(
                f"input shape {list(input_shape)}: spatial axis {axis} has {hi - lo} cells with pads; explain draws at most {MAX_CELLS}"
            )
    overhang = shape.ceil_overhang(window, spatial)
    empty = set(shape.empty_windows(window, spatial))
    divisors = shape.divisor_counts(window, spatial) if window.kind is PoolKind.AVERAGE else None
    kept_and_dropped = out
    if window.padding is Padding.EXPLICIT and window.rounding is Rounding.CEIL:
        kept_and_dropped = shape.output_spatial(window.with_(rounding=Rounding.CEIL_NO_DROP), spatial)
    for axis, length in enumerate(spatial):  # a dropped ceil window may reach past the pads: drawn too
        pb = int(pads_begin[axis] or 0)
        lo, hi = padded_range(length, pb, int(pads_end[axis] or 0))
        last = window_taps(int(kept_and_dropped[axis]) - 1, window.kernel[axis], window.strides[axis], window.dilations[axis], pb)
        cells = max(hi, last[-1] + 1) - lo
        if cells > MAX_CELLS:
            raise UsageError(
                f"input shape {list(input_shape)}: spatial axis {axis} has windows over {cells} cells; explain draws at most {MAX_CELLS}"
            )
    names = AXIS_NAMES.get(len(spatial), tuple(f"axis{a}" for a in range(len(spatial))))
    axes = []
    for a, length in enumerate(spatial):
        k, s, d = window.kernel[a], window.strides[a], window.dilations[a]
        pb, pe = int(pads_begin[a] or 0), int(pads_end[a] or 0)
        windows = []
        for i in range(int(kept_and_dropped[a])):
            taps = window_taps(i, k, s, d, pb)
            dropped = i >= int(out[a])
            factor = int(divisors[a][i]) if divisors is not None and not dropped else None
            windows.append(Window(i, taps, factor, dropped, (a, i) in empty))
        derivation = _derivation(window, a, length, pb, pe, int(out[a]), int(kept_and_dropped[a]))
        axes.append(
            AxisExplanation(
                a,
                names[a],
                length,
                k,
                s,
                d,
                window.dilated_kernel[a],
                pb,
                pe,
                overhang[a],
                int(out[a]),
                derivation,
                tuple(windows),
            )
        )
    grid = None
    if divisors is not None and len(spatial) >= 2:
        grid = np.outer(divisors[0], divisors[1])
    return Explanation(window, input_shape, tuple(int(d) for d in out_shape), tuple(axes), grid)


def _derivation(spec: PoolSpec, axis: int, length: int, pb: int, pe: int, out: int, before_drop: int) -> tuple[str, ...]:
    k, s, d = spec.kernel[axis], spec.strides[axis], spec.dilations[axis]
    extent = spec.dilated_kernel[axis]
    lines = [f"L={length}, k={k}, s={s}, d={d}: window extent d*(k-1)+1 = {d}*({k}-1)+1 = {extent}"]
    if spec.padding in (Padding.SAME_UPPER, Padding.SAME_LOWER):
        lines.append(f"{spec.padding.value.upper()}: out = ceil(L/s) = ceil({length}/{s}) = {out}")
        lines.append(
            f"pads = max(0, (out-1)*s + extent - L) = max(0, ({out}-1)*{s} + {extent} - {length}), split {pb} begin / {pe} end"
        )
        return tuple(lines)
    if spec.padding is Padding.VALID:
        lines.append(f"VALID: no pads; out = floor((L - extent)/s) + 1 = floor(({length} - {extent})/{s}) + 1 = {out}")
        return tuple(lines)
    inner = f"({length} + {pb} + {pe} - {extent})/{s}"
    if spec.rounding is Rounding.FLOOR:
        lines.append(f"floor: out = floor((L + pb + pe - extent)/s) + 1 = floor({inner}) + 1 = {out}")
        return tuple(lines)
    lines.append(f"ceil: ceil((L + pb + pe - extent)/s) + 1 = ceil({inner}) + 1 = {before_drop}")
    if spec.rounding is Rounding.CEIL_NO_DROP:
        lines.append(f"no drop rule (OpenVINO ceil): out = {out}")
    else:
        last = window_taps(before_drop - 1, k, s, d, 0)[0]
        verdict = f"drops it: out = {out}" if out < before_drop else f"keeps it: out = {out}"
        lines.append(f"drop rule: last window starts at padded cell {last}, L + pb = {drop_threshold(length, pb)}; {verdict}")
    return tuple(lines)


def render_text(ex: Explanation) -> str:
    """The explanation as text: header, then per axis its derivation and an ASCII row of cells with
    one line per window (``#`` a tap on input, ``p`` on a pad, ``~`` on the ceil overhang)."""
    spec = ex.spec
    lines = [
        f"{spec.kind.value} pool, input {list(ex.input_shape)} -> output {list(ex.output_shape)}",
        f"padding {spec.padding.value}, rounding {spec.rounding.value}"
        + (f", divisor {spec.divisor.value}" if spec.kind is PoolKind.AVERAGE else "")
        + (f", p {spec.p:g}: (sum of |x|^p over the taps inside the input)^(1/p), a pad tap adds 0" if spec.is_lp else ""),
    ]
    for ax in ex.axes:
        lines.append("")
        lines.append(f"axis {ax.axis} ({ax.name})")
        lines.extend(f"  {line}" for line in ax.derivation)
        if ax.overhang:
            lines.append(f"  ceil overhang: the last window reaches {ax.overhang} cell(s) past the end pad")
        lo, hi = _extent(ax)
        cells = [_cell_kind(ax, c) for c in range(lo, hi)]
        header = "".join(
            f"{c:>3}" if kind == "input" else {"pad": "  P", "overhang": "  ~"}[kind] for c, kind in zip(range(lo, hi), cells)
        )
        lines.append(f"  {'cells':<12}{header}")
        for w in ax.windows:
            row = [" " * 3] * (hi - lo)
            for tap in w.taps:
                row[tap - lo] = "  " + {"input": "#", "pad": "p", "overhang": "~"}[_cell_kind(ax, tap)]
            label = f"out {w.index}"
            lines.append(f"  {label:<12}{''.join(row)}   {'; '.join(_notes(w))}".rstrip())
    if ex.divisor_grid is not None:
        lines.append("")
        lines.append(
            f"divisor per output position ({ex.axes[0].name} x {ex.axes[1].name}"
            + (", times the other axes' factors" if len(ex.axes) > 2 else "")
            + "):"
        )
        for row in ex.divisor_grid:
            lines.append("  " + " ".join(f"{int(v):>3}" for v in row))
    return "\n".join(lines) + "\n"


# Horizontal advance of one character of 11px monospace text (0.6 em), to size the picture.
_MONO_ADVANCE = 6.6


def render_svg(ex: Explanation) -> str:
    """An SVG picture: per axis a row of cells (input white, pads grey, overhang orange) and one bar
    per window with its taps coloured the same way; dropped windows dashed red, windows wholly in
    padding hatched. The width fits the longest derivation line."""
    cell, gap, left = 22, 6, 90
    parts: list[str] = []
    y = 20
    width: float = left
    parts.append(f'<text x="8" y="{y}" font-size="13" font-weight="bold">{escape(_title(ex))}</text>')
    y += 14
    fills = {"input": "#ffffff", "pad": "#d0d0d0", "overhang": "#f5b041"}
    for ax in ex.axes:
        y += 22
        parts.append(f'<text x="8" y="{y}" font-size="12" font-weight="bold">axis {ax.axis} ({ax.name}): out {ax.output}</text>')
        for line in ax.derivation:
            y += 15
            parts.append(f'<text x="16" y="{y}" font-size="11" font-family="monospace">{escape(line)}</text>')
            width = max(width, 16 + len(line) * _MONO_ADVANCE + 16)
        y += 10
        lo, hi = _extent(ax)
        width = max(width, left + (hi - lo) * cell + 220)
        for c in range(lo, hi):
            x = left + (c - lo) * cell
            kind = _cell_kind(ax, c)
            parts.append(f'<rect x="{x}" y="{y}" width="{cell}" height="{cell}" fill="{fills[kind]}" stroke="#333"/>')
            label = str(c) if kind == "input" else ("P" if kind == "pad" else "~")
            parts.append(f'<text x="{x + cell / 2}" y="{y + 15}" font-size="10" text-anchor="middle">{label}</text>')
        parts.append(f'<text x="8" y="{y + 15}" font-size="11">cells</text>')
        y += cell
        for w in ax.windows:
            y += gap + 4
            x0 = left + (w.taps[0] - lo) * cell
            x1 = left + (w.taps[-1] - lo + 1) * cell
            stroke = "#c0392b" if w.dropped else "#2e86c1"
            dash = ' stroke-dasharray="4,3"' if w.dropped else ""
            parts.append(f'<rect x="{x0}" y="{y}" width="{x1 - x0}" height="{cell - 6}" fill="none" stroke="{stroke}"{dash}/>')
            for tap in w.taps:
                tx = left + (tap - lo) * cell
                fill = {"input": "#2e86c1", "pad": "#aab7b8", "overhang": "#f5b041"}[_cell_kind(ax, tap)]
                parts.append(f'<rect x="{tx + 4}" y="{y + 3}" width="{cell - 8}" height="{cell - 12}" fill="{fill}"/>')
            note = "; ".join([f"out {w.index}", *_notes(w)])
            parts.append(f'<text x="{left + (hi - lo) * cell + 10}" y="{y + 12}" font-size="11">{escape(note)}</text>')
            y += cell - 6
        y += 8
    height = y + 20
    body = "\n".join(parts)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}">\n'
        f'<rect width="100%" height="100%" fill="white"/>\n{body}\n</svg>\n'
    )


def _notes(w: Window) -> list[str]:
    notes = [f"divisor factor {w.divisor}"] if w.divisor is not None else []
    if w.dropped:
        notes.append("dropped by the drop rule")
    if w.empty:
        notes.append("wholly in padding")
    return notes


def _title(ex: Explanation) -> str:
    return f"{ex.spec.kind.value} pool {list(ex.input_shape)} -> {list(ex.output_shape)} ({ex.spec.padding.value}, {ex.spec.rounding.value})"


def _extent(ax: AxisExplanation) -> tuple[int, int]:
    """Cells drawn: from the first pad to the end of the last window (dropped ones included)."""
    lo, hi = padded_range(ax.length, ax.pad_begin, ax.pad_end)
    return lo, max([hi] + [w.taps[-1] + 1 for w in ax.windows])


def _cell_kind(ax: AxisExplanation, c: int) -> str:
    return cell_region(c, ax.length, ax.pad_begin, ax.pad_end)


def input_shape_for(spec: PoolSpec, dims: Sequence[int]) -> tuple[int, ...]:
    """``--input-shape``: a full ``(N, C, *spatial)`` shape, or only the spatial dims (N=C=1)."""
    dims = tuple(int(d) for d in dims)
    rank = spec.rank
    if rank is not None and len(dims) == rank:
        return (1, 1) + dims
    if len(dims) < 3:
        raise UsageError(
            f"--input-shape {','.join(map(str, dims))}: give N,C and {rank or 'the'} spatial dims, or only the spatial dims"
        )
    return dims
