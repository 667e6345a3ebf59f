"""What onnx.reference (onnx 1.23) computes otherwise than the ONNX schemas: one table, ``DEFECTS``
(rows of ``ovpool.defects.Defect``).

ovpool's numpy executor runs no node on onnx.reference (every operator of ONNX's backend node
suite has a kernel of its own, tested against onnxruntime and the schema text). onnx.reference is
one more opinion in tests and in ``python -m ovpool.conformance``, never the only oracle: these are
the operator versions where it is wrong (measured against onnxruntime and the schema text, random
one-node models at opsets 7-17), each with what it does instead. The README's table of them is
``python -m ovpool.engine.ops``'s.
"""

from __future__ import annotations

from ovpool.defects import LATEST, ONNX_REFERENCE, Defect, VersionRange


def _wrong(op_type: str, since: int, until: int, reason: str) -> Defect:
    """onnx.reference is wrong on ``op_type`` since-versions ``since``..``until`` (``LATEST``: every
    later one); ``reason`` says what it does instead, and where."""
    return Defect(ONNX_REFERENCE, (op_type,), VersionRange(since, until), "", reason)


# onnx.reference (onnx 1.23) against the ONNX schemas, op by op; each reason says what it does instead.
DEFECTS: tuple[Defect, ...] = (
    _wrong("BatchNormalization", 7, 7, "onnx.reference has no BatchNormalization-7 and fails in BatchNormalization-6's code"),
    _wrong(
        "BatchNormalization",
        9,
        13,
        "onnx.reference blends batch statistics into mean/var with momentum instead of using the given ones",
    ),
    _wrong("Softmax", 1, 12, "onnx.reference softmaxes over the one axis, not over the 2-D coercion at axis"),
    _wrong("LogSoftmax", 1, 12, "onnx.reference log-softmaxes over the one axis, not over the 2-D coercion at axis"),
    _wrong("Hardmax", 1, 12, "onnx.reference takes the hardmax over the one axis, not over the 2-D coercion at axis"),
    _wrong("GridSample", 16, 19, "onnx.reference knows only GridSample-20's mode names and fails on bilinear/bicubic"),
    _wrong("ConvTranspose", 1, LATEST, "onnx.reference adds the first group's biases to every group (group > 1 with B)"),
    _wrong("LSTM", 1, LATEST, "onnx.reference ignores sequence_lens"),
    _wrong("GRU", 1, LATEST, "onnx.reference ignores sequence_lens"),
    _wrong("RNN", 1, LATEST, "onnx.reference ignores sequence_lens"),
    _wrong(
        "RoiAlign",
        10,
        15,
        "onnx.reference applies RoiAlign-16's default half_pixel offset; RoiAlign-10 has none (output_half_pixel)",
    ),
    _wrong("Pad", 1, LATEST, "onnx.reference cannot crop: negative pads"),
    _wrong("Resize", 10, 10, "onnx.reference reads Resize-10's scales input as roi"),
    _wrong("Resize", 11, 17, "onnx.reference has no tf_half_pixel_for_nn coordinate transformation"),
    _wrong("Upsample", 7, 9, "onnx.reference runs only nearest with integer scales"),
    _wrong("OneHot", 9, LATEST, "onnx.reference fails on a rank-1 depth (the schema allows a one-element tensor)"),
)
