"""ImageDecoder-20, refused: it would decode JPEG, PNG, BMP, TIFF, WebP, JPEG 2000 and PNM bytes
into an image tensor. No exact decoder exists within numpy, and ovpool's runtime takes no image
codec dependency, so the node is refused by name when the session is prepared (registered here so
that it never falls back to onnx.reference, whose decoding depends on what Pillow is installed).
"""

from __future__ import annotations

from ovpool.engine.ops.base import Kernel, OpNode, register


@register("ImageDecoder", 20)
def image_decoder(node: OpNode) -> Kernel:
    """ImageDecoder-20: the node's error, always."""
    raise node.fail(
        "decoding JPEG, PNG, BMP, TIFF, WebP, JPEG 2000 or PNM needs an image codec library, which "
        "ovpool's runtime does not depend on (there is no exact decoder within numpy): decode the "
        "image before the model, or run this node elsewhere"
    )
