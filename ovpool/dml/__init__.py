"""The DirectML world: feature levels (``levels``), descriptors <-> PoolSpec and the JSON document
(``adapter``), ONNX/IR -> DirectML (``export``), DirectML -> ONNX/IR (``importer``), C++ (``cpp``).
"""
