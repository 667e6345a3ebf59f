"""The OpenVINO world: PoolSpec -> OpenVINO nodes (``lowering``), the ConversionExtension for
OpenVINO's ONNX frontend (``extension``), ONNX -> ``openvino.Model`` (``from_onnx``).
"""
