"""Graph passes over ONNX models (installed as ``ovpool.transforms``)."""
