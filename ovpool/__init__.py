"""ovpool: one meaning of pooling across ONNX, OpenVINO IR and DirectML.

``import ovpool`` is light: OpenVINO and onnxruntime are imported only by the functions that use them.
"""

from __future__ import annotations

import os
from collections.abc import Mapping
from typing import TYPE_CHECKING

from ovpool import examples, shape
from ovpool.errors import InputFileError, ModelError, OvpoolError, SpecError, UnsupportedError, VerifyError
from ovpool.spec import Divisor, IndexOrder, Indices, Padding, PoolKind, PoolSpec, Rounding

if TYPE_CHECKING:
    from collections.abc import Sequence

    import numpy as np
    import openvino
    from onnx import ModelProto

    from ovpool.check.verify import VerifyOptions

__version__ = "0.2.0.dev0"

# In a source checkout, ovpool.cli, ovpool.transforms and ovpool.ir_templates are the top-level
# folders cli/, transforms/ and ir_templates/ (pyproject.toml's package-dir). When this folder is
# the ovpool Python imports (the checkout's root is the current folder), they are found there too,
# so the checkout behaves as the installed package does whether or not it was installed editable.
_CHECKOUT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
if not os.path.isdir(os.path.join(os.path.dirname(__file__), "cli")) and os.path.isfile(
    os.path.join(_CHECKOUT, "cli", "__init__.py")
):
    __path__.append(_CHECKOUT)

__all__ = [
    "Divisor",
    "IndexOrder",
    "Indices",
    "InputFileError",
    "ModelError",
    "OvpoolError",
    "Padding",
    "PoolKind",
    "PoolSpec",
    "Rounding",
    "SpecError",
    "UnsupportedError",
    "VerifyError",
    "convert",
    "convert_model",
    "examples",
    "run",
    "shape",
    "transform",
    "validate",
]


def run(
    model: str | os.PathLike | ModelProto,
    inputs: Mapping[str, np.ndarray],
    device: str = "CPU",
    precision: str = "f32",
    fallback: str | bool = "numpy",
    cache: bool = True,
) -> dict[str, np.ndarray]:
    """Run a model (ONNX path or proto, or IR .xml) and return ``{output name: array}``.

    ``device`` is an OpenVINO device ("CPU", "GPU", "NPU", "AUTO") compiled at ``precision``
    ("f32" unless asked otherwise), or "numpy", the exact executor. When OpenVINO is missing or the
    device cannot run the model, the next device of the chain runs it: the device asked, then
    OpenVINO CPU, then numpy, each device given up a ``FallbackWarning`` naming it and why (its
    ``device`` is where the model ran). ``fallback`` says how far the chain goes: "numpy" (or
    True), "cpu", "none" (or False: a ``DeviceError``). See ``ovpool.execution``.
    """
    from ovpool.execution import run as _run

    return _run(model, inputs, device=device, precision=precision, fallback=fallback, cache=cache)


def convert(
    src: str | os.PathLike,
    out: str | os.PathLike | None = None,
    to: str | None = None,
    force: bool = False,
    output_dir: str | os.PathLike | None = None,
    verify: bool | VerifyOptions = False,
    **options: object,
) -> list:
    """Convert a model file (ONNX, IR or DirectML JSON); returns the paths written. ONNX -> IR takes
    ``target_openvino="2023.3"``: only layers that OpenVINO release reads. ``verify=True``
    (or a ``VerifyOptions``) checks an ONNX <-> IR conversion against its source first
    (``ovpool convert --verify``; ``VerifyError`` and nothing written beyond tolerance)."""
    from ovpool.conversions import convert as _convert

    return _convert(src, out, to=to, force=force, output_dir=output_dir, verify=verify, **options)


def convert_model(
    model: str | os.PathLike | ModelProto,
    inputs: str | Sequence[str] | Mapping[str, Sequence[int | str]] | None = None,
    verify: bool | VerifyOptions = False,
    exact_quantization: bool = False,
    allow_inexact: bool = False,
    target_openvino: str | None = None,
) -> openvino.Model:
    """An ONNX model (a path or a ModelProto) as an ``openvino.Model``, called as
    ``openvino.convert_model`` is, with ovpool's exact pooling: save it with ``openvino.save_model``
    or compile it. ``inputs`` sets input shapes first (``"x[1,3,640,640]"`` or ``{"x": [1, 3, 640,
    640]}``); ``verify`` (True, or ``ovpool.check.verify.VerifyOptions``) runs it on OpenVINO CPU
    at f32 against the ONNX model on ovpool's numpy executor and raises ``VerifyError`` beyond
    tolerance; ``exact_quantization`` as ``ovpool convert --exact-quantization``, ``allow_inexact``
    as ``--allow-inexact`` (the nodes OpenVINO's frontend converts wrong and ovpool cannot rewrite
    are written as OpenVINO converts them, a warning each, instead of refused);
    ``target_openvino="2023.3"`` as ``ovpool convert --target-openvino 2023.3`` (only layers that
    release reads)."""
    from ovpool.check.verify import VerifyOptions, verify_files
    from ovpool.execution import open_model
    from ovpool.ov.from_onnx import ir_files, onnx_to_ov_model

    converted = onnx_to_ov_model(model, inputs, exact_quantization, allow_inexact, target_openvino)
    if verify:
        checks = verify if isinstance(verify, VerifyOptions) else VerifyOptions()
        verify_files(ir_files(converted), ".xml", open_model(model), checks)
    return converted


def transform(
    src: str | os.PathLike | ModelProto,
    passes: list[str],
    out: str | os.PathLike | None = None,
    force: bool = False,
    verify: bool | VerifyOptions = False,
    inputs: str | Sequence[str] | Mapping[str, Sequence[int | str]] | None = None,
) -> ModelProto:
    """Rewrite an ONNX model with passes run in order (``["no-ceil", "opset=11"]``; every pass and
    what it does: ``ovpool.transforms.catalog.catalog()``, ``ovpool transform --list-passes``);
    returns the new model and writes it to ``out`` if given. ``verify`` runs it against the source on numpy first (``VerifyError``);
    ``inputs`` (``"x[1,3,640,640]"``) gives dynamic inputs static dims first."""
    from ovpool.transforms.apply import transform as _transform

    return _transform(src, passes, out, force, verify, inputs).model


def validate(files: str | os.PathLike | list, strict: bool = False, target_openvino: str | None = None) -> list:
    """Check the pooling layers of IR files (``ovpool validate``); returns the findings (empty when
    clean). ``strict`` also compares with OpenVINO's shape inference; ``target_openvino``
    (``"2023.3"``) reports every layer that release cannot read (OVP601: a MaxPool-14 there)."""
    from ovpool.ir.validation import validate as _validate

    return _validate(files, strict=strict, target_openvino=target_openvino)
