"""The SVG plot of ``ovpool compare --plot``: each layer's error, in execution order.

One point per step compared, at its position in the reference's execution order (step 235 of 672
sits at 235/672 of the width), at the height of its worst output's relative error ``max abs /
max|reference|`` on a logarithmic axis (one decade per gridline; an exact match sits on the
"exact" line at the bottom). Points within tolerance are blue, beyond it red; the first beyond is
circled and named under the title; a dashed line marks ``rtol``. Steps not compared (constants,
layers fused away at run time) are grey ticks under the axis. When some tensors are quantized, a
second panel shows their error in quantization steps (a bar per quantized tensor, a line at one
step). Hovering a point shows its step, type, name and figures (an SVG ``<title>``).

The picture is written by hand, no plotting library: a fixed 14-pixel font, a width growing with
the number of steps (4 pixels a step, 480 to 2400 pixels of plot).
"""

from __future__ import annotations

import math
from xml.sax.saxutils import escape

from ovpool.check.compare import Comparison, LayerDifference

_LEFT, _RIGHT, _TOP = 72, 24, 52
_PANEL, _STEP_PANEL, _GAP = 260, 120, 56
_BLUE, _RED, _GREY = "#2e86c1", "#c0392b", "#aab7b8"
_FLOOR = -9  # 1e-9: the lowest decade drawn; smaller errors sit on it


def render_plot(comparison: Comparison) -> str:
    """The plot (module docstring) of a per-layer comparison made with every layer kept
    (``compare(..., per_layer=True, every_layer=True)``)."""
    c = comparison
    every = c.every or ()
    total = max(c.steps, len(every), 1)
    plot_width = min(2400, max(480, 4 * total))
    quantized = [e for e in every if e.worst is not None and e.worst.steps is not None]
    height = _TOP + _PANEL + _GAP + (_STEP_PANEL + _GAP if quantized else 0)
    first = c.first_beyond
    subtitle = (
        "every layer compared is within tolerance"
        if first is None
        else f"first beyond tolerance (circled): {first.step.type} '{first.step.name}', step {first.index + 1} of {total}"
    )
    width = max(_LEFT + plot_width + _RIGHT, _LEFT + _RIGHT + 8.5 * len(_title(c)), _LEFT + _RIGHT + 7 * len(subtitle))

    def x_of(entry: LayerDifference) -> float:
        return _LEFT + plot_width * (entry.index + 0.5) / total

    compared = [e for e in every if e.worst is not None]
    rels = [e.worst.max_rel for e in compared if e.worst is not None and e.worst.max_rel]
    finite = [r for r in rels if r is not None and math.isfinite(r)]
    top = max(0, math.ceil(math.log10(max(finite)))) if finite else 0
    bottom = _FLOOR

    def y_of(rel: float | None) -> float:
        if rel is None or rel == 0:
            return _TOP + _PANEL - 6
        if not math.isfinite(rel):
            return _TOP
        level = min(max(math.log10(rel), bottom), top)
        return _TOP + (_PANEL - 22) * (top - level) / (top - bottom)

    parts = [
        f'<text x="{_LEFT}" y="22" font-size="14" font-weight="bold">{escape(_title(c))}</text>',
        f'<rect x="{_LEFT}" y="{_TOP}" width="{plot_width}" height="{_PANEL}" fill="none" stroke="#333"/>',
    ]
    for decade in range(bottom, top + 1):
        y = y_of(10.0**decade)
        parts.append(f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_width}" y2="{y:.1f}" stroke="#eee"/>')
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">1e{decade}</text>')
    parts.append(f'<text x="{_LEFT - 6}" y="{_TOP + _PANEL - 2}" font-size="11" text-anchor="end">exact</text>')
    if c.rtol > 0:
        y = y_of(c.rtol)
        parts.append(
            f'<line x1="{_LEFT}" y1="{y:.1f}" x2="{_LEFT + plot_width}" y2="{y:.1f}" stroke="{_RED}" stroke-dasharray="6,4"/>'
        )
        parts.append(
            f'<text x="{_LEFT + plot_width - 4}" y="{y - 4:.1f}" font-size="11" text-anchor="end">rtol {c.rtol:g}</text>'
        )
    parts.append(
        f'<text x="16" y="{_TOP + _PANEL / 2}" font-size="12" transform="rotate(-90 16 {_TOP + _PANEL / 2})" '
        'text-anchor="middle">max relative error (log)</text>'
    )
    for entry in every:
        worst = entry.worst
        x = x_of(entry)
        if worst is None:
            parts.append(
                f'<line x1="{x:.1f}" y1="{_TOP + _PANEL + 22}" x2="{x:.1f}" y2="{_TOP + _PANEL + 28}" stroke="{_GREY}">'
                f"<title>{escape(_hover(entry, total))}</title></line>"
            )
            continue
        colour = _BLUE if entry.within else _RED
        parts.append(
            f'<circle cx="{x:.1f}" cy="{y_of(worst.max_rel):.1f}" r="3" fill="{colour}">'
            f"<title>{escape(_hover(entry, total))}</title></circle>"
        )
    if first is not None and first.worst is not None:
        x, y = x_of(first), y_of(first.worst.max_rel)
        parts.append(f'<circle cx="{x:.1f}" cy="{y:.1f}" r="7" fill="none" stroke="{_RED}" stroke-width="1.5"/>')
    colour = "" if first is None else f' fill="{_RED}"'
    parts.append(f'<text x="{_LEFT}" y="38" font-size="12"{colour}>{escape(subtitle)}</text>')
    axis_y = _TOP + _PANEL + 44
    parts.extend(_x_ticks(total, plot_width, _TOP + _PANEL, axis_y))
    if quantized:
        parts.extend(_step_panel(quantized, x_of, plot_width, axis_y + _GAP - 30))
    body = "\n".join(parts)
    return (
        f'<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="{height}" viewBox="0 0 {width} {height}" '
        'font-family="sans-serif">\n'
        f'<rect width="100%" height="100%" fill="white"/>\n{body}\n</svg>\n'
    )


def _step_panel(quantized: list[LayerDifference], x_of, plot_width: int, top: float) -> list[str]:
    """Bars of the quantized tensors' errors in quantization steps, a dashed line at one step."""
    steps = [e.worst.steps for e in quantized if e.worst is not None and e.worst.steps is not None]
    finite = [s for s in steps if math.isfinite(s)]
    ceiling = max(2.0, math.ceil(max(finite, default=0.0)))
    parts = [f'<rect x="{_LEFT}" y="{top}" width="{plot_width}" height="{_STEP_PANEL}" fill="none" stroke="#333"/>']

    def y_of(value: float) -> float:
        return top + _STEP_PANEL * (1 - min(value, ceiling) / ceiling)

    for label in sorted({0.0, 1.0, ceiling}):
        y = y_of(label)
        parts.append(f'<text x="{_LEFT - 6}" y="{y + 4:.1f}" font-size="11" text-anchor="end">{label:g}</text>')
    y1 = y_of(1.0)
    parts.append(
        f'<line x1="{_LEFT}" y1="{y1:.1f}" x2="{_LEFT + plot_width}" y2="{y1:.1f}" stroke="#777" stroke-dasharray="6,4"/>'
    )
    parts.append(
        f'<text x="16" y="{top + _STEP_PANEL / 2}" font-size="12" transform="rotate(-90 16 {top + _STEP_PANEL / 2})" '
        'text-anchor="middle">steps</text>'
    )
    for entry in quantized:
        worst = entry.worst
        assert worst is not None and worst.steps is not None
        x, y = x_of(entry), y_of(worst.steps if math.isfinite(worst.steps) else ceiling)
        colour = _BLUE if entry.within else _RED
        parts.append(
            f'<rect x="{x - 1.5:.1f}" y="{y:.1f}" width="3" height="{top + _STEP_PANEL - y:.1f}" fill="{colour}">'
            f"<title>{escape(_hover(entry, 0))}</title></rect>"
        )
    return parts


def _x_ticks(total: int, plot_width: int, panel_bottom: float, label_y: float) -> list[str]:
    """Ticks at round step numbers (1, 2, 5 times a power of ten, about eight of them)."""
    power = 10 ** math.floor(math.log10(max(total / 8, 1)))
    spacing = next(base * power for base in (1, 2, 5, 10) if base * power * 8 >= total)
    parts = []
    for step in range(spacing, total + 1, spacing):
        x = _LEFT + plot_width * (step - 0.5) / total
        parts.append(f'<line x1="{x:.1f}" y1="{panel_bottom}" x2="{x:.1f}" y2="{panel_bottom + 5}" stroke="#333"/>')
        parts.append(f'<text x="{x:.1f}" y="{panel_bottom + 17}" font-size="11" text-anchor="middle">{step}</text>')
    parts.append(
        f'<text x="{_LEFT + plot_width / 2}" y="{label_y}" font-size="12" text-anchor="middle">'
        f"layer, in execution order (of {total}); grey ticks: not compared</text>"
    )
    return parts


def _title(c: Comparison) -> str:
    precision = f" at {c.precision}" if c.precision else ""
    return f"{c.model}: {c.device}{precision} against {c.reference}, per layer"


def _hover(entry: LayerDifference, total: int) -> str:
    worst = entry.worst
    where = f"step {entry.index + 1}" + (f" of {total}" if total else "")
    head = f"{where}: {entry.step.type} '{entry.step.name}'"
    if worst is None:
        return f"{head}: {entry.note or 'not compared'}"
    steps = "" if worst.steps is None else f", {worst.steps:.3g} steps"
    return f"{head}: max abs {worst.max_abs:.3g}, max rel {worst.max_rel:.3g}{steps}, {'within' if entry.within else 'BEYOND'}"
