"""``--verify``: a model ovpool is about to write, checked against its source before it is written.

The written model and its source run on the same inputs: an OpenVINO IR on OpenVINO CPU at f32,
an ONNX model on ovpool's numpy executor (the exact reference). So ``convert model.onnx --verify``
runs the IR on CPU against the ONNX model on numpy, ``convert model.xml --to onnx --verify`` the
source IR on CPU against the ONNX written, and ``transform --verify`` both ONNX models on numpy.
Every output is compared as ``ovpool compare`` compares (``compare.difference``): within tolerance
when ``max_abs <= atol + rtol * max|reference|``, with compare's defaults rtol 1e-4 and atol 1e-6;
an output of magnitude 10 may be off by 0.001001. Integer outputs must be equal.

Inputs are drawn from the written model's declared inputs with ``numpy.random.default_rng(seed)``
(standard normal floats, integers in [0, 10); ``runtime.tensors.random_inputs``), dynamic dims
filled from ``VerifyOptions.shapes``; ``VerifyOptions.inputs`` (an .npz file or arrays) gives real
data instead. When an output is beyond tolerance the comparison runs again layer by layer
(``compare(per_layer=True)``) to name the first node or layer beyond it, and ``verify`` raises a
``VerifyError`` (exit 1): one line with the output, its error, the tolerance and that layer.
"""

from __future__ import annotations

import os
import tempfile
from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np
from onnx import ModelProto

from ovpool.check.compare import DEFAULT_ATOL, DEFAULT_RTOL, Comparison, check_tolerances, compare
from ovpool.errors import OvpoolError, VerifyError
from ovpool.execution.fallback import DeviceError, openvino_session
from ovpool.execution.model import Model, open_model
from ovpool.execution.sessions import NumpySession, Session, budget_checks
from ovpool.tensors import check_inputs, load_inputs, random_inputs, typed_inputs

# The written IR runs where a deployment checks it first, at the precision of the ONNX model.
DEVICE, PRECISION = "CPU", "f32"


@dataclass(frozen=True)
class VerifyOptions:
    """How to verify: ``inputs`` (an .npz path or arrays by input name; default: drawn with
    ``seed``), ``shapes`` for dynamic dims of drawn inputs (``{"x": (1, 3, 640, 640)}``), and the
    tolerances ``rtol`` and ``atol`` (``ovpool compare``'s)."""

    inputs: str | os.PathLike | Mapping[str, np.ndarray] | None = None
    shapes: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    rtol: float = DEFAULT_RTOL
    atol: float = DEFAULT_ATOL
    seed: int = 0

    def __post_init__(self) -> None:
        check_tolerances(self.rtol, self.atol)


def verify_files(written: Mapping[str, bytes], suffix: str, source: Model, options: VerifyOptions) -> Comparison:
    """Verify the files a route returned (``{".xml": ..., ".bin": ...}`` or ``{".onnx": ...}``)
    against ``source``: they are written to a private temporary folder first and read from there,
    so what is checked is what will be written."""
    with tempfile.TemporaryDirectory(prefix="ovpool-verify-") as folder:
        main = Path(folder) / f"model{suffix}"
        for part, data in written.items():
            main.with_suffix(part).write_bytes(data)
        candidate = open_model(main)
        return verify(Model(candidate.format, "the converted model", candidate.path, candidate.proto), source, options)


def verify_proto(candidate: ModelProto, source: Model, options: VerifyOptions) -> Comparison:
    """Verify an ONNX model in memory (``transform``'s result) against ``source`` on numpy."""
    return verify(Model("onnx", "the rewritten model", proto=candidate), source, options)


def verify(candidate: Model, source: Model, options: VerifyOptions) -> Comparison:
    """The comparison of ``candidate`` with ``source`` (module docstring), or ``VerifyError``
    naming the first output beyond tolerance and the first layer beyond it. An IR side runs on
    OpenVINO CPU at f32 (the device), an ONNX side on numpy (the reference: the source when both
    are ONNX)."""
    device_model, reference_model = (source, candidate) if source.format == "ir" else (candidate, source)
    device = _open(device_model)
    reference = _numpy(reference_model)
    arrays = _inputs(device, reference, options)
    result = compare(device_model, device, reference, arrays, options.rtol, options.atol)
    if result.within:
        return result
    traced = compare(
        device_model,
        device,
        reference,
        arrays,
        options.rtol,
        options.atol,
        per_layer=True,
        cache=False,
        reference_model=reference_model,
    )
    first, second = ("the written model", "the source") if device_model is candidate else ("the source", "the written model")
    sides = f"{first} on {_side(result.device, result.precision)} against {second} on {result.reference}"
    raise VerifyError(_refusal(result, traced, sides))


def summary(result: Comparison) -> str:
    """One line for a verified model: ``verified: 2 outputs within rtol 0.0001, atol 1e-06 (largest
    max abs 1.19e-07) on CPU at f32 against numpy``."""
    worst = max((d.max_abs for d in result.outputs if d.max_abs is not None), default=0.0)
    count = len(result.outputs)
    return (
        f"verified: {count} output{'s' if count != 1 else ''} within rtol {result.rtol:g}, atol {result.atol:g} "
        f"(largest max abs {worst:.3g}) on {_side(result.device, result.precision)} against {result.reference}"
    )


def _open(model: Model) -> Session:
    if model.format == "onnx":
        return _numpy(model)
    try:
        return openvino_session(model, DEVICE, PRECISION, cache=False)
    except DeviceError as exc:
        raise VerifyError(f"--verify: {exc}") from None


def _numpy(model: Model) -> NumpySession:
    try:
        return NumpySession(model)
    except OvpoolError as exc:
        raise VerifyError(f"--verify: the numpy executor cannot run {model.label}: {exc}") from None


def _inputs(device: Session, reference: Session, options: VerifyOptions) -> dict[str, np.ndarray]:
    label = "--verify"
    try:
        if options.inputs is None:
            arrays = random_inputs(label, device.inputs, options.shapes, options.seed, budget_checks(device, reference))
        elif isinstance(options.inputs, Mapping):
            arrays = {name: np.asarray(value) for name, value in options.inputs.items()}
        else:
            arrays = typed_inputs(device.inputs, load_inputs(Path(options.inputs), []))
        check_inputs(label, device.inputs, arrays)
        check_inputs(label, reference.inputs, arrays)
    except OvpoolError as exc:
        text = str(exc)
        if "dynamic dims" in text:
            text += " (the shape sets the written model's input too; or give real inputs with --verify-inputs FILE.npz)"
        raise VerifyError(text) from None
    return arrays


def _side(device: str, precision: str) -> str:
    return f"{device} at {precision}" if precision else device


def _refusal(result: Comparison, traced: Comparison, sides: str) -> str:
    """``--verify: output 'y' max abs 0.31 (max rel 0.2) beyond rtol 0.0001, atol 1e-06 (the
    written model on CPU at f32 against the source on numpy); first beyond tolerance: Softmax 'sm'
    (step 3 of 9); nothing written``."""
    bad = next(d for d in result.outputs if not d.within)
    error = "a different shape" if bad.max_abs is None else f"max abs {bad.max_abs:.3g} (max rel {bad.max_rel:.3g})"
    text = f"--verify: output '{bad.name}' {error} beyond rtol {result.rtol:g}, atol {result.atol:g} ({sides})"
    first = traced.first_beyond
    if first is not None:
        text += f"; first beyond tolerance: {first.step.type} '{first.step.name}' (step {first.index + 1} of {traced.steps})"
    return text + "; nothing written"
