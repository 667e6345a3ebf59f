"""ONNX -> OpenVINO: the whole model through OpenVINO's ONNX frontend, pooling through ovpool.

Public functions:

* ``onnx_to_ov_model(model: str | PathLike | onnx.ModelProto) -> openvino.Model`` converts in
  memory (``ovpool run``/``bench`` use it). Every AveragePool, MaxPool, MaxUnpool,
  GlobalAveragePool and GlobalMaxPool node is lowered by ``ovpool.ov.lowering`` (exact ONNX semantics,
  see SEMANTICS.md); every other operator is OpenVINO's. Input and output tensor names are the
  ONNX ones.
* ``onnx_to_ir(src, out_suffix, **options) -> {".xml": bytes, ".bin": bytes}`` is the
  ``("onnx", "ir")`` route of ``ovpool.convert``: the IR files, float32 weights kept as they are
  (``compress_to_fp16=False``), for ``ovpool convert model.onnx``.

A file is read by ``ovpool.onnx.model.load`` first (a non-ONNX or truncated file, or external data that
is missing or points outside the model's folder, is an ``InputFileError`` before OpenVINO opens
anything); OpenVINO then reads the file itself, external data included, so models over 2 GB
convert. An operator neither OpenVINO nor ovpool converts is an ``UnsupportedError`` naming it
(``FooBar-13``). Before a model is returned, every pooling node whose input dims are static is
checked against the shape engine: the OpenVINO output shape must be ``shape.output_shape`` of the
node's spec (MaxUnpool: ``shape.unpool_output_spatial``), else ``ModelError`` names the node.
"""

from __future__ import annotations

import io
import os
import re
import tempfile
from collections.abc import Mapping
from pathlib import Path
from typing import TYPE_CHECKING

from onnx import ModelProto

from ovpool import shape
from ovpool.errors import InputFileError, ModelError, OvpoolError, UnsupportedError
from ovpool.onnx.model import load
from ovpool.ov.extension import PoolExtensions
from ovpool.ov.lowering import Lowered
from ovpool.runtime.devices import openvino_reason
from ovpool.spec import PoolKind

if TYPE_CHECKING:
    import openvino

_PROTOBUF_LIMIT = 2**31 - 1
_NO_RULE = re.compile(r"No conversion rule found for operations?: ([^\n]+)")


def onnx_to_ov_model(model: str | os.PathLike | ModelProto) -> openvino.Model:
    """An ``openvino.Model`` of the ONNX model (a path or a ModelProto) with exact pooling."""
    if isinstance(model, ModelProto):
        if model.ByteSize() > _PROTOBUF_LIMIT:
            with tempfile.TemporaryDirectory(prefix="ovpool-") as folder:
                path = Path(folder) / "model.onnx"
                import onnx

                onnx.save_model(model, str(path), save_as_external_data=True, location="model.onnx.data")
                return _convert(model, str(path), "model")
        return _convert(model, io.BytesIO(model.SerializeToString()), model.graph.name or "model")
    path = Path(model)
    proto = load(path, load_data=False)
    return _convert(proto, str(path), str(path))


def onnx_to_ir(src: Path, out_suffix: str = ".xml", **options: object) -> Mapping[str, bytes]:
    """The ``("onnx", "ir")`` route: ``{".xml": ..., ".bin": ...}`` of the converted model."""
    import openvino as ov

    if options:
        raise UnsupportedError.in_file(src, f"option(s) {', '.join(sorted(options))} do not apply to ONNX -> IR")
    converted = onnx_to_ov_model(src)
    with tempfile.TemporaryDirectory(prefix="ovpool-") as folder:
        xml = Path(folder) / "model.xml"
        ov.save_model(converted, str(xml), compress_to_fp16=False)
        return {".xml": xml.read_bytes(), ".bin": xml.with_suffix(".bin").read_bytes()}


def check_shapes(lowered: list[Lowered]) -> None:
    """Every lowered pool with static input dims has the output shape the shape engine gives."""
    for pool in lowered:
        pshape = pool.data.get_partial_shape()
        if not pshape.is_static:
            continue
        input_shape = tuple(d.get_length() for d in pshape)
        spec = pool.spec
        if spec.kind is PoolKind.UNPOOL and pool.shape_given:
            continue
        if spec.kind is PoolKind.UNPOOL:
            want = input_shape[:2] + shape.unpool_output_spatial(spec, input_shape[2:])
        else:
            want = shape.output_shape(spec, input_shape)
        for output in pool.outputs:
            got = output.get_partial_shape()
            if not got.is_static or tuple(d.get_length() for d in got) != tuple(want):
                raise ModelError(
                    f"node '{spec.name}': OpenVINO gives output shape {got} where the shape engine gives "
                    f"{list(want)} (input {list(input_shape)})"
                )


def _convert(proto: ModelProto, source: object, label: str) -> openvino.Model:
    from openvino.frontend import FrontEndManager

    pools = PoolExtensions(proto)
    frontend = FrontEndManager().load_by_framework("onnx")
    for extension in pools.extensions():
        frontend.add_extension(extension)
    try:
        converted = frontend.convert(frontend.load(source))
    except Exception as exc:  # OpenVINO's OpConversionFailure/GeneralFailure derive from Exception
        if pools.errors:
            raise pools.errors[0].located(label) from None
        raise _conversion_error(label, exc) from None
    if pools.errors:
        raise pools.errors[0].located(label)
    try:
        check_shapes(pools.lowered)
    except ModelError as exc:
        raise exc.located(label) from None
    if proto.graph.name:
        converted.set_friendly_name(proto.graph.name)
    return converted


def _conversion_error(label: str, exc: Exception) -> OvpoolError:
    text = str(exc)
    missing = _NO_RULE.search(text)
    if missing:
        return UnsupportedError.in_file(label, f"no OpenVINO conversion rule for {missing.group(1).strip()}")
    if "Cannot recognize" in text or "Unable to read" in text:
        return InputFileError.in_file(label, "OpenVINO cannot read the model")
    return ModelError.in_file(label, f"OpenVINO could not convert the model: {openvino_reason(exc)}")
