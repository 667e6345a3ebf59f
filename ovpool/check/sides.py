"""The two sides of ``ovpool compare``: the device (with its fallback notices) and the reference,
ovpool's numpy executor or OpenVINO CPU at f32; ``traceable`` is a side that can report each step
(numpy itself, or OpenVINO compiled again with taps, ``ovpool.check.taps``)."""

from __future__ import annotations

from ovpool.check.taps import TracedOpenVINOSession
from ovpool.errors import UsageError
from ovpool.execution import devices
from ovpool.execution.fallback import Opened, open_session, openvino_session
from ovpool.execution.model import Model
from ovpool.execution.sessions import DEFAULT_PRECISION, PRECISIONS, NumpySession, OpenVINOSession, Session

REFERENCES = (devices.NUMPY, "CPU")
# The device's own precision unless --precision says otherwise: what a deployment gets.
COMPARE_PRECISION = "default"


def check_reference(reference: str) -> str:
    """``"numpy"`` or ``"CPU"`` (any case); anything else is a ``UsageError`` (exit 2)."""
    for known in REFERENCES:
        if reference.lower() == known.lower():
            return known
    raise UsageError(f"reference '{reference}': expected one of {', '.join(REFERENCES)}")


def open_sides(
    model: Model,
    device: str,
    reference: str = devices.NUMPY,
    precision: str = COMPARE_PRECISION,
    fallback: str | bool = "none",
    cache: bool = True,
    per_layer: bool = False,
    reference_model: Model | None = None,
) -> tuple[Opened, Session]:
    """The device's session (``open_session``: its fallback notices in ``Opened``) and the
    reference's: numpy, or OpenVINO CPU at f32, traced when ``per_layer`` (no fallback: a reference
    elsewhere is no reference), running ``reference_model`` when given, else ``model``."""
    reference = check_reference(reference)
    opened = open_session(model, device, precision, fallback, cache)
    source = reference_model or model
    if reference == devices.NUMPY:
        return opened, NumpySession(source)
    kind = TracedOpenVINOSession if per_layer else OpenVINOSession
    return opened, openvino_session(source, reference, DEFAULT_PRECISION, cache, kind)


def traceable(model: Model, session: Session, cache: bool) -> NumpySession | TracedOpenVINOSession:
    """A session that can trace on the same device: numpy itself, or OpenVINO compiled again at
    the precision the device reported."""
    if isinstance(session, (NumpySession, TracedOpenVINOSession)):
        return session
    if isinstance(session, OpenVINOSession):
        precision = session.precision if session.precision in PRECISIONS else COMPARE_PRECISION
        traced = openvino_session(model, session.device, precision, cache, TracedOpenVINOSession)
        assert isinstance(traced, TracedOpenVINOSession)  # openvino_session makes a `kind`
        return traced
    raise UsageError(f"per-layer comparison needs an OpenVINO or numpy session, not {type(session).__name__}")
