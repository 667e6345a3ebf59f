"""``ovpool compare``: where a device's results leave a reference's, per output and per layer.

The model runs on the device (OpenVINO at the device's own default precision unless asked, or
numpy) and on the reference (ovpool's numpy executor, or OpenVINO CPU at f32), with the same
inputs. Each tensor compared gives a ``Difference``:

* ``max_abs``: the largest ``|device - reference|`` over its elements (NaN against NaN and equal
  infinities count 0; NaN against a number, or a shape mismatch, is infinite);
* ``max_rel``: ``max_abs`` over the reference's largest finite magnitude, the scale the tensor
  lives on (a probability map whose largest value is 0.8, off by 0.004 somewhere: 0.005);
* within tolerance when ``max_abs <= atol + rtol * max|reference|``: with the defaults rtol 1e-4,
  atol 1e-6 and a reference whose largest magnitude is 10, up to 0.001001. Integer and boolean
  tensors (indices, shapes, masks) must be equal;
* ``steps``, for a quantized tensor: the largest difference in its quantization steps (0.024 off
  with a step of 0.024 is 1 step).

With ``per_layer`` the intermediate tensors of both sides are compared in the reference's
execution order: ONNX models by ONNX tensor name (OpenVINO keeps them on the ports that compute
them; ports of OpenVINO's own decompositions and constant-folded nodes have none and are not
compared), IR models by ``ovpool.names.port_tensor_name``. On OpenVINO every such port becomes an
extra output of a second compile of the model; that can stop the plugin fusing layers, so those
figures can differ slightly from the per-output ones, which come from the model compiled as is.
The first step beyond tolerance is reported with its type, its inputs' differences (within
tolerance, or not compared, since every step before it was) and its own.

A low-precision model (FakeQuantize; INT8) is traced where its runtime graph computes anyway
(``TracedOpenVINOSession``): a layer fused into another runtime node, or gone from the runtime
graph, has no value on the device and is reported with the reason, not compared. With
``every_layer`` the comparison keeps a row for every step, compared or not (``Comparison.every``;
``compare_plot`` draws it). With a ``reference_model`` (the float model a quantized one was made
from) tensors are matched by name, a float tensor against the quantized model's real-valued copy
of it (``quantized_views``).
"""

from __future__ import annotations

from collections.abc import Mapping

import numpy as np

from ovpool.check.layers import LayerDifference, LayerWalk, Progress, onnx_quanta, quantized_views, walk
from ovpool.check.report import Comparison, every_layer_table, report
from ovpool.check.sides import COMPARE_PRECISION, REFERENCES, check_reference, open_sides
from ovpool.check.taps import Placement, TracedOpenVINOSession, is_low_precision, placement
from ovpool.check.tolerance import DEFAULT_ATOL, DEFAULT_RTOL, Difference, check_tolerances, difference, output_difference
from ovpool.execution.model import Model
from ovpool.execution.sessions import Session


def compare(
    model: Model,
    device: Session,
    reference: Session,
    inputs: Mapping[str, np.ndarray],
    rtol: float = DEFAULT_RTOL,
    atol: float = DEFAULT_ATOL,
    per_layer: bool = False,
    cache: bool = True,
    progress: Progress = lambda label, total: lambda: None,
    every_layer: bool = False,
    reference_model: Model | None = None,
) -> Comparison:
    """Run both sessions on ``inputs`` and compare (module docstring); ``per_layer`` also traces
    both sides (OpenVINO sessions are compiled again with intermediates as outputs), and
    ``every_layer`` keeps a row for every step, compared or not (``Comparison.every``, with the
    reason a step was not compared). ``reference`` runs ``reference_model`` when given (the float
    model an INT8 model was quantized from): tensors are matched by name."""
    check_tolerances(rtol, atol)
    advance = progress(f"{device.device}: outputs", 1)
    got = device.infer(inputs)
    advance()
    walked: LayerWalk | None = None
    if per_layer:
        walked = walk(model, device, reference, inputs, got, rtol, atol, cache, progress, every_layer, reference_model)
        want = walked.outputs
    else:
        advance = progress(f"{reference.device}: outputs", 1)
        want = reference.infer(inputs)
        advance()
    outputs = tuple(output_difference(name, got, want, rtol, atol) for name in want)
    return Comparison(
        model.label,
        device.device,
        getattr(device, "precision", ""),
        reference.device if reference_model is None else f"{reference.device} running {reference_model.label}",
        rtol,
        atol,
        outputs,
        None if walked is None else walked.layers,
        0 if walked is None else walked.steps,
        walked.every if walked is not None and every_layer else None,
        "" if walked is None else walked.trace_note,
    )


__all__ = [
    "COMPARE_PRECISION",
    "DEFAULT_ATOL",
    "DEFAULT_RTOL",
    "REFERENCES",
    "Comparison",
    "Difference",
    "LayerDifference",
    "Placement",
    "Progress",
    "TracedOpenVINOSession",
    "check_reference",
    "check_tolerances",
    "compare",
    "difference",
    "every_layer_table",
    "is_low_precision",
    "onnx_quanta",
    "open_sides",
    "placement",
    "quantized_views",
    "report",
]
