"""The OpenVINO world: PoolSpec -> OpenVINO nodes (``lowering``), the ConversionExtension for
OpenVINO's ONNX frontend (``extension``), ONNX -> ``openvino.Model`` (``from_onnx``).

``DOMAIN`` is the private ONNX domain of the nodes ovpool writes before OpenVINO's frontend sees a
model, for its own ``ConversionExtension``s to take back (``ai.ovpool.Div``, ``ai.ovpool.QuantizedPool``).
"""

DOMAIN = "ai.ovpool"
