"""Where a model can run: the OpenVINO devices present on this machine, plus the numpy backend.

OpenVINO is optional at run time: when ``import openvino`` fails, the only device is ``numpy`` and
``openvino_status()`` says why. A device name may carry an instance (``GPU.1``); it is present when
``Core().available_devices`` lists it, or lists an instance of it (``GPU`` is present when ``GPU.0``
is). The virtual devices ``AUTO``, ``MULTI`` and ``HETERO`` are present whenever any real one is.
"""

from __future__ import annotations

import importlib
from dataclasses import dataclass
from types import ModuleType

from ovpool.errors import openvino_reason as openvino_reason  # moved to the core; still here

NUMPY = "numpy"
VIRTUAL_DEVICES = ("AUTO", "MULTI", "HETERO")
# The read-only properties `ovpool devices` shows besides FULL_DEVICE_NAME, when a device reports them.
CAPABILITY_PROPERTIES = ("OPTIMIZATION_CAPABILITIES", "DEVICE_TYPE", "DEVICE_ARCHITECTURE", "INFERENCE_PRECISION_HINT")


@dataclass(frozen=True)
class Device:
    """One place to run: ``name`` as passed to ``--device``, ``backend`` "openvino" or "numpy",
    ``full_name`` (OpenVINO's FULL_DEVICE_NAME) and ``capabilities`` as (property, value) pairs."""

    name: str
    backend: str
    full_name: str
    capabilities: tuple[tuple[str, str], ...] = ()


NUMPY_DEVICE = Device(
    NUMPY,
    NUMPY,
    "ovpool exact numpy executor (CPU)",
    (("OPERATORS", "ONNX: every operator (pooling on ovpool kernels); IR: pooling layers"),),
)


def openvino() -> ModuleType | None:
    """The ``openvino`` module, or None when it cannot be imported."""
    try:
        return importlib.import_module("openvino")
    except ImportError:
        return None


def openvino_status() -> str:
    """``"openvino 2026.4.1-..."`` or why it is unavailable."""
    try:
        module = importlib.import_module("openvino")
    except ImportError as exc:
        return f"OpenVINO is not available ({exc}); only the numpy backend can run models"
    return f"openvino {module.get_version()}"


def new_core():
    """A fresh ``openvino.Core``; raises ImportError when OpenVINO is missing."""
    module = openvino()
    if module is None:
        raise ImportError("openvino is not importable")
    return module.Core()


def openvino_device_names(core=None) -> list[str]:
    """Names of the OpenVINO devices present (``["CPU"]`` here); empty without OpenVINO."""
    if core is None:
        if openvino() is None:
            return []
        core = new_core()
    return list(core.available_devices)


def is_present(name: str, available: list[str]) -> bool:
    """Whether ``--device name`` can run given ``available`` OpenVINO devices: ``GPU`` is present
    with ``["CPU", "GPU.0"]``, ``GPU.1`` is not; ``AUTO`` is present when anything is."""
    base = name.split(":")[0].split(".")[0].upper()
    if base in VIRTUAL_DEVICES:
        return bool(available)
    return any(d.upper() == name.upper() or d.split(".")[0].upper() == name.upper() for d in available)


def list_devices(core=None) -> list[Device]:
    """Every device present, OpenVINO ones first, ``numpy`` last."""
    if core is None and openvino() is None:
        return [NUMPY_DEVICE]
    core = core if core is not None else new_core()
    return [_describe(core, name) for name in core.available_devices] + [NUMPY_DEVICE]


def describe_available(core=None) -> str:
    """``"CPU, numpy"``: what an error about a missing device lists."""
    return ", ".join(d.name for d in list_devices(core))


def _describe(core, name: str) -> Device:
    full_name = _property(core, name, "FULL_DEVICE_NAME") or name
    capabilities = []
    for key in CAPABILITY_PROPERTIES:
        value = _property(core, name, key)
        if value:
            capabilities.append((key, value))
    return Device(name, "openvino", full_name, tuple(capabilities))


def _property(core, device: str, key: str) -> str:
    """A property as text (lists joined by ", "), or "" when the device does not report it."""
    try:
        value = core.get_property(device, key)
    except Exception:  # plugins raise RuntimeError or their own types for unsupported keys
        return ""
    if isinstance(value, (list, tuple)):
        return ", ".join(_text(v) for v in value)
    return _text(value)


def _text(value: object) -> str:
    """OpenVINO values as users write them: ``Type.bf16`` -> "bf16", ``device.Type.INTEGRATED`` -> "INTEGRATED"."""
    if hasattr(value, "get_type_name"):
        return value.get_type_name()
    if hasattr(value, "name") and not isinstance(value, str):
        return str(value.name)
    return str(value)
