"""Graph passes over ONNX models (installed as ``ovpool.transforms``).

Each runtime gets a different slice of pooling wrong; these passes rewrite a model into the
plainest exact form so that none of those slices matters. ``framework`` defines passes and their
contract, ``graph`` the graph access they share, ``shapes`` the tensor types with pooling sizes
from ovpool's shape engine (never onnx's shape inference), ``legal`` the Pad forms that keep every
pad below the kernel for onnxruntime, and one module per family holds the passes:
``pads`` (explicit-pads, no-ceil), ``opset`` (opset=N), ``dml`` (dml-legal), ``global_pools``
(expand-global). ``catalog`` maps names to passes and ``apply.transform`` runs them on a file.
"""
