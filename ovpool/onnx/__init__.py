"""The ONNX world: the pooling versions table (``versions``), nodes <-> PoolSpec (``adapter``),
safe model loading and tensor types (``model``).
"""
