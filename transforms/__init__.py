"""Graph passes over ONNX models (installed as ``ovpool.transforms``).

Each runtime gets a different slice of pooling wrong; these passes rewrite a model into the
plainest exact form so that none of those slices matters. ``framework`` defines passes and their
contract, ``graph`` the graph access they share, ``shapes`` the tensor types with pooling sizes
from ovpool's shape engine (never onnx's shape inference), ``legal`` the Pad forms that keep every
pad below the kernel for onnxruntime, and one module per family holds the passes (``pads``,
``opset``, ``dml``, ``global_pools``). ``catalog`` is the one list of passes (name, summary, the
module holding each; ``ovpool transform --list-passes`` prints it) and ``apply.transform`` runs
them on a file.
"""
