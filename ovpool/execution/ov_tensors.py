"""OpenVINO's objects in numpy's terms: the numpy dtype and shape of an OpenVINO element type and
partial shape, the tensor name an OpenVINO port goes by, a model reshaped to a run's inputs, and
bfloat16 and the narrow types (float8, 4-bit) crossing as raw bits, where OpenVINO's Python layer
would read them otherwise (an ml_dtypes bfloat16 [1.25] as float16, 1.906). OpenVINO itself is
imported where a function needs it."""

from __future__ import annotations

from collections.abc import Collection
from typing import Any

import numpy as np

from ovpool import dtypes
from ovpool.dtypes import np_dtype
from ovpool.errors import UnsupportedError
from ovpool.names import port_tensor_name


def port_name(port, preferred: set[str], inputs: Collection[str] = ()) -> str:
    """An OpenVINO port's name (a Result's: its source port's): the ONNX tensor name when it has one, else the IR rule
    (``ovpool.names.port_tensor_name``: its smallest name not also one of the model's ``inputs``,
    else the producing layer's name, with ``:<IR port id>`` for any output but the layer's first)."""
    names = port.get_names()
    node, index = port.get_node(), port.get_index()
    if node.get_type_name() == "Result":  # its source's names: a Result's own may be stale in memory (not in a file)
        source = node.input(0).get_source_output()
        names, node, index = source.get_names() or names, source.get_node(), source.get_index()
    chosen = sorted(names & preferred)
    if chosen:
        return chosen[0]
    return port_tensor_name(names, node.get_friendly_name(), str(node.get_input_size() + index), index == 0, inputs)


def reshaped(ov_model: Any, shapes: tuple[tuple[int, ...] | None, ...]) -> Any:
    """A copy of ``ov_model`` with its inputs set to ``shapes`` (in input order; None keeps one),
    so its intermediates and outputs have the sizes of a run; ``ov_model`` itself when OpenVINO
    cannot reshape it to them (the run then says why)."""
    import openvino as ov

    clone = ov_model.clone()
    try:
        clone.reshape({port: ov.PartialShape(list(dims)) for port, dims in zip(clone.inputs, shapes) if dims is not None})
    except Exception:  # OpenVINO raises RuntimeError and its own classes for shapes it cannot propagate
        return ov_model
    return clone


def raw_tensor(value: np.ndarray) -> Any:
    """An ``openvino.Tensor`` of a bfloat16 or narrow array, its bits as OpenVINO holds them:
    bfloat16 [1.25] is the bf16 tensor of the bits 0x3FA0, uint4 [1, 2, 3] the u4 tensor of the
    bytes 0x21 0x03 (``dtypes.pack_narrow``)."""
    import openvino as ov

    tensor = ov.Tensor(getattr(ov.Type, dtypes.any_ir_type(value.dtype.name)), ov.Shape(list(value.shape)))
    if value.size:
        bits = np.ascontiguousarray(value).view(np.uint16) if value.dtype.name == "bfloat16" else dtypes.pack_narrow(value)
        tensor.data.reshape(-1).view(np.uint8)[...] = bits.reshape(-1).view(np.uint8)
    return tensor


def raw_value(tensor: Any, dtype: str) -> np.ndarray:
    """The array of an output ``tensor`` of a bfloat16 or narrow type (``raw_tensor`` reversed):
    a copy, as ml_dtypes' type of ``dtype``."""
    shape = tuple(tensor.shape)
    kind = np_dtype(dtype)
    data = np.asarray(tensor.data)
    if dtype == "bfloat16":
        return data.view(np.uint16).view(kind).reshape(shape).copy()
    return dtypes.unpack_narrow(data.view(np.uint8), int(np.prod(shape, dtype=np.int64)), kind).reshape(shape)


def ov_dtype(element_type) -> str:
    """OpenVINO element type -> numpy dtype name (bf16 is ml_dtypes' bfloat16, not float16; u4 is
    ml_dtypes' uint4)."""
    dtype = dtypes.any_from_ov_type(element_type)
    if dtype is None:
        raise UnsupportedError(f"OpenVINO element type {element_type.get_type_name()} has no numpy form ovpool handles")
    return dtype


def ov_shape(partial_shape) -> tuple[int | None, ...] | None:
    if partial_shape.rank.is_dynamic:
        return None
    return tuple(d.get_length() if d.is_static else None for d in partial_shape)
