"""What ``ovpool compare`` gives: the ``Comparison`` (the sides, the tolerance, each output's
difference and the per-layer walk's steps), its text (``report``, ``every_layer_table``) and its
``--json`` document (``Comparison.record``: strict JSON, a NaN is ``"nan"``)."""

from __future__ import annotations

from dataclasses import dataclass

from ovpool.check.layers import LayerDifference
from ovpool.check.tolerance import Difference, json_number


@dataclass(frozen=True)
class Comparison:
    """The result of ``compare``: the sides (``device`` and ``reference`` as they ran, e.g.
    ``"CPU"``, ``"numpy"``; ``precision`` the device's reported inference precision, "" on numpy),
    the tolerance, each output's difference, and with per-layer comparison every step compared
    (``layers``; ``steps`` how many steps the reference executed), every step with or without a
    comparison when asked (``every``), and ``trace_note`` when the per-layer run's outputs are
    not the device's own run's (the taps changed how the device computes)."""

    model: str
    device: str
    precision: str
    reference: str
    rtol: float
    atol: float
    outputs: tuple[Difference, ...]
    layers: tuple[LayerDifference, ...] | None = None
    steps: int = 0
    every: tuple[LayerDifference, ...] | None = None
    trace_note: str = ""

    @property
    def first_beyond(self) -> LayerDifference | None:
        """The first step in execution order with an output beyond tolerance."""
        return next((layer for layer in self.layers or () if not layer.within), None)

    @property
    def within(self) -> bool:
        """Every output, and every step compared, within tolerance: exit 0."""
        return all(d.within for d in self.outputs) and self.first_beyond is None

    def record(self) -> dict[str, object]:
        """The ``--json`` document (README, "Comparing a device with a reference"). It is strict
        JSON: a NaN is the string ``"nan"`` and an infinity ``"inf"`` (``json_number``), never the
        ``NaN``/``Infinity`` tokens, so ``json.dumps(record, allow_nan=False)`` (what the CLI
        prints) holds."""
        first = self.first_beyond
        return {
            "model": self.model,
            "device": self.device,
            "precision": self.precision,
            "reference": self.reference,
            "rtol": json_number(self.rtol),
            "atol": json_number(self.atol),
            "within": self.within,
            "outputs": [d.record() for d in self.outputs],
            "per_layer": None
            if self.layers is None
            else {
                "steps": self.steps,
                "compared": len(self.layers),
                "first_beyond": None if first is None else first.record(),
                "note": self.trace_note,
                "layers": [layer.record() for layer in self.layers],
                **({} if self.every is None else {"every_layer": [layer.record() for layer in self.every]}),
            },
        }


def report(comparison: Comparison) -> str:
    """The text ``ovpool compare`` prints: a line per output, then the first step beyond tolerance."""
    c = comparison
    precision = f" at {c.precision}" if c.precision else ""
    lines = [f"{c.model}: {c.device}{precision} against {c.reference}, rtol {c.rtol:g}, atol {c.atol:g}"]
    lines.append(f"{'output':<24} {'shape':<20} {'max abs':>10} {'max rel':>10}  within")
    for d in c.outputs:
        lines.append(f"{d.name:<24} {_shape(d):<20} {_number(d.max_abs):>10} {_number(d.max_rel):>10}  {_yes(d)}")
        if d.note:
            lines.append(f"  {d.note}")
    if c.layers is not None:
        first = c.first_beyond
        lines.append(f"per layer: {len(c.layers)} of {c.steps} steps compared")
        if c.trace_note:
            lines.append(f"note: {c.trace_note}")
        if first is None:
            lines.append("every step compared is within tolerance")
        else:
            compared = c.layers.index(first)
            lines.append(
                f"first beyond tolerance: {first.step.type} '{first.step.name}' (step {first.index + 1} of {c.steps} in "
                f"execution order; {compared} compared step(s) before it within tolerance)"
            )
            for kind, group in (("input", first.inputs), ("output", first.outputs)):
                for d in group:
                    figures = "" if d.max_abs is None else f"max abs {_number(d.max_abs)}  max rel {_number(d.max_rel)}  "
                    steps = "" if d.steps is None else f"steps {_number(d.steps)}  "
                    lines.append(f"  {kind:<6} {d.name:<32} {_shape(d):<20} {figures}{steps}{d.note or _yes(d)}")
    if c.every is not None:
        lines.extend(every_layer_table(c))
    lines.append("within tolerance" if c.within else "beyond tolerance")
    return "\n".join(lines)


def every_layer_table(comparison: Comparison) -> list[str]:
    """Every step in execution order, one line each: its worst output's max abs, max rel and
    error in quantization steps (for a quantized tensor), and whether it is within tolerance, or
    why it was not compared (``fused into Convolution 'conv1' on CPU: no value of its own``)."""
    every = comparison.every or ()
    width = max((len(e.step.name) for e in every), default=4)
    lines = [
        "every layer, in execution order (steps: the error in quantization steps of a quantized tensor):",
        f"{'#':>5}  {'type':<18} {'name':<{width}} {'max abs':>10} {'max rel':>10} {'steps':>8}  within",
    ]
    for entry in every:
        worst = entry.worst
        head = f"{entry.index + 1:>5}  {entry.step.type:<18} {entry.step.name:<{width}}"
        if worst is None:
            lines.append(f"{head} {'-':>10} {'-':>10} {'-':>8}  {entry.note or 'no output compared'}")
        else:
            steps = "-" if worst.steps is None else f"{worst.steps:.3g}"
            lines.append(
                f"{head} {_number(worst.max_abs):>10} {_number(worst.max_rel):>10} {steps:>8}  {'yes' if entry.within else 'NO'}"
            )
    return lines


def _number(value: float | None) -> str:
    return "-" if value is None else f"{value:.3g}"


def _shape(d: Difference) -> str:
    return "?" if d.shape is None else "[" + ", ".join(map(str, d.shape)) + "]"


def _yes(d: Difference) -> str:
    return "yes" if d.within else "NO"
