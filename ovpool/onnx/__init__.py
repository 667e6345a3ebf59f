"""onnx"""
