"""One tensor of the device against the reference's: a ``Difference`` and the rule that says
whether it is within tolerance.

* ``max_abs``: the largest ``|device - reference|`` over its elements (NaN against NaN and equal
  infinities count 0; NaN against a number, or a shape mismatch, is infinite);
* ``max_rel``: ``max_abs`` over the reference's largest finite magnitude, the scale the tensor
  lives on (a probability map whose largest value is 0.8, off by 0.004 somewhere: 0.005);
* within tolerance when ``max_abs <= atol + rtol * max|reference|``: with the defaults rtol 1e-4,
  atol 1e-6 and a reference whose largest magnitude is 10, up to 0.001001. Integer and boolean
  tensors (indices, shapes, masks) must be equal;
* ``steps``, for a quantized tensor: the largest difference in its quantization steps (0.024 off
  with a step of 0.024 is 1 step).
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

import numpy as np

from ovpool.errors import UsageError

DEFAULT_RTOL = 1e-4
DEFAULT_ATOL = 1e-6


@dataclass(frozen=True)
class Difference:
    """One tensor compared: the reference's shape, ``max_abs`` and ``max_rel`` (None when the
    tensor was not compared: a model input, a constant), whether it is within tolerance, a note."""

    name: str
    shape: tuple[int, ...] | None
    max_abs: float | None
    max_rel: float | None
    within: bool
    note: str = ""
    steps: float | None = None

    def record(self) -> dict[str, object]:
        """The ``--json`` form: infinities and NaN become strings (``json_number``; JSON has none)."""
        return {
            "name": self.name,
            "shape": None if self.shape is None else list(self.shape),
            "max_abs": json_number(self.max_abs),
            "max_rel": json_number(self.max_rel),
            "steps": json_number(self.steps),
            "within": self.within,
            "note": self.note,
        }


def difference(
    name: str, got: Any, want: Any, rtol: float = DEFAULT_RTOL, atol: float = DEFAULT_ATOL, quantum: Any = None
) -> Difference:
    """``got`` (the device's) against ``want`` (the reference's), by the rule in the module's
    docstring: [1.0, 2.5] against [1.0, 2.0] gives max_abs 0.5, max_rel 0.25, beyond tolerance.
    With ``quantum``, the quantization step of the tensor (per tensor, or broadcasting per channel),
    ``steps`` is the largest difference in steps: off by 0.5 with a step of 0.25 is 2 steps."""
    device, reference = np.asarray(got), np.asarray(want)
    shape = tuple(int(d) for d in reference.shape)
    if device.shape != reference.shape:
        note = f"shape {list(device.shape)} on the device, {list(reference.shape)} on the reference"
        return Difference(name, shape, float("inf"), float("inf"), False, note)
    exact = all(np.issubdtype(a.dtype, np.integer) or a.dtype == np.bool_ for a in (device, reference))
    if device.dtype.kind in "OSU" or reference.dtype.kind in "OSU":
        same = bool(np.array_equal(device, reference))
        return Difference(name, shape, 0.0 if same else float("inf"), 0.0 if same else float("inf"), same)
    a, b = device.astype(np.float64), reference.astype(np.float64)
    with np.errstate(invalid="ignore"):
        gap = np.where((a == b) | (np.isnan(a) & np.isnan(b)), 0.0, np.abs(a - b))
    gap = np.where(np.isnan(gap), np.inf, gap)
    max_abs = float(gap.max()) if gap.size else 0.0
    finite = np.abs(b[np.isfinite(b)])
    scale = float(finite.max()) if finite.size else 0.0
    max_rel = max_abs / scale if scale > 0 else (0.0 if max_abs == 0 else float("inf"))
    allowed = 0.0 if exact else atol + rtol * scale
    return Difference(name, shape, max_abs, max_rel, max_abs <= allowed, steps=_steps(gap, quantum))


def _steps(gap: np.ndarray, quantum: Any) -> float | None:
    """The largest of ``gap / quantum`` (None without a quantum, or one that does not fit)."""
    if quantum is None:
        return None
    step = np.abs(np.asarray(quantum, np.float64))
    try:
        if np.broadcast_shapes(step.shape, gap.shape) != gap.shape:
            return None
    except ValueError:
        return None
    with np.errstate(divide="ignore", invalid="ignore"):
        ratio = np.where(gap == 0, 0.0, gap / step)
    return float(ratio.max()) if ratio.size else 0.0


def check_tolerances(rtol: float, atol: float) -> None:
    """``rtol`` and ``atol`` are finite numbers >= 0, else a ``UsageError`` naming the flag: a NaN
    tolerance would put every tensor beyond it (``max_abs <= nan`` is false) and an infinite one
    every tensor within. ``check_tolerances(float("nan"), 1e-6)`` raises ``--rtol nan: must be a
    finite number >= 0``."""
    for flag, value in (("--rtol", rtol), ("--atol", atol)):
        if not math.isfinite(value) or value < 0:
            raise UsageError(f"{flag} {value}: must be a finite number >= 0")


def output_difference(name: str, got: Mapping[str, Any], want: Mapping[str, Any], rtol: float, atol: float) -> Difference:
    if name not in got:
        return Difference(name, None, float("inf"), float("inf"), False, f"the device gives no output '{name}'")
    return difference(name, got[name], want[name], rtol, atol)


def json_number(value: float | None) -> float | str | None:
    """A number as ``--json`` writes it, which JSON can hold: infinities are the string ``"inf"``
    (``"-inf"`` below zero) and NaN the string ``"nan"``, so the document is valid JSON
    (``json.dumps(..., allow_nan=False)`` would refuse a NaN or infinite float); 0.5 stays 0.5."""
    if value is None or math.isfinite(value):
        return value
    return "nan" if math.isnan(value) else "inf" if value > 0 else "-inf"
