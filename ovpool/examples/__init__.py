"""Bundled example models (``tiny_pool.onnx``: Conv, ceil-mode MaxPool with indices, include-pad
AveragePool, GlobalAveragePool; made by ``make_examples.py``)."""
