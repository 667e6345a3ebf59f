"""What every operator family checks of a node: its inputs' types against the schema of its version
(``type_guard``, ``check_type``; the first version allowing a type is named in the refusal) and its
attributes' values (``float_attr``, ``int_attr``, ``str_attr``).
"""

from __future__ import annotations

import functools
from collections.abc import Callable

import numpy as np

from ovpool.engine.ops.base import OpNode


@functools.cache
def _formal_types(op_type: str, since: int, domain: str) -> tuple[tuple[str, ...], dict[str, frozenset[np.dtype]]]:
    """The schema's type parameter of each formal input and the numpy dtypes each parameter allows;
    an input of one fixed type (ReverseSequence's ``sequence_lens``: "tensor(int64)") is its own
    parameter, allowing that type."""
    import onnx
    from onnx import TensorProto, helper

    schema = onnx.defs.get_schema(op_type, since, domain)
    constraints = [(c.type_param_str, tuple(c.allowed_type_strs)) for c in schema.type_constraints]
    constraints += [(formal.type_str, (formal.type_str,)) for formal in schema.inputs if formal.type_str.startswith("tensor(")]
    allowed: dict[str, frozenset[np.dtype]] = {}
    for param, names in constraints:
        dtypes = set()
        for name in names:
            if name.startswith("tensor(") and hasattr(TensorProto, name[7:-1].upper()):
                dtypes.add(np.dtype(helper.tensor_dtype_to_np_dtype(getattr(TensorProto, name[7:-1].upper()))))
        allowed[param] = frozenset(dtypes)
    return tuple(formal.type_str for formal in schema.inputs), allowed


_OBJECT = np.dtype(object)


@functools.cache
def first_allowing(op_type: str, domain: str, param: str, dtype: np.dtype) -> int | None:
    """The first since-version of ``op_type`` whose schema allows ``dtype`` for the type parameter
    ``param`` (bfloat16 for Det's T: 22), or None when none does."""
    import onnx

    versions = sorted(
        {s.since_version for s in onnx.defs.get_all_schemas_with_history() if s.name == op_type and s.domain == domain}
    )
    for since in versions:
        if dtype in _formal_types(op_type, since, domain)[1].get(param, frozenset()):
            return since
    return None


def _refusal(node: OpNode, what: str, param: str, dtype: np.dtype, allowed: frozenset[np.dtype]) -> str:
    """``input 0 has type bfloat16; Det-11 allows float16, float32, float64 (bfloat16 from Det-22)``."""
    names = ", ".join(sorted(str(t) for t in allowed))
    later = first_allowing(node.op_type, node.domain, param, dtype)
    hint = f" ({dtype} from {node.op_type}-{later})" if later is not None else ""
    return f"{what} has type {dtype}; {node.op_type}-{node.since} allows {names}{hint}"


def check_type(node: OpNode, param: str, dtype: np.dtype, attribute: str) -> None:
    """An output type chosen by ``attribute`` (EyeLike's ``dtype``, BitCast's ``to``) checked
    against the type parameter ``param`` of the node's version: bfloat16 for EyeLike-9 is the
    node's error, naming EyeLike-22, which allows it."""
    allowed = _formal_types(node.op_type, node.since, node.domain)[1][param]
    if dtype not in allowed:
        raise node.fail(_refusal(node, "the output", param, dtype, allowed), attribute)


def type_guard(node: OpNode) -> Callable[..., None]:
    """A check of a kernel's inputs against the node's schema version: each input's dtype is one its
    type parameter allows, and inputs sharing a parameter share a dtype (Add-7 of float32 and int64
    is the node's error). Inputs past the formal list are the last (variadic) one's; None is skipped;
    numpy unicode arrays count as ONNX strings, like object arrays of ``str``. The dtypes of one
    to three inputs that passed are remembered: the next call with them costs a set lookup."""
    params, allowed = _formal_types(node.op_type, node.since, node.domain)
    last = len(params) - 1
    passed: set[tuple[np.dtype, ...]] = set()

    def check(*arrays: np.ndarray | None) -> None:
        if len(arrays) == 2:
            a, b = arrays
            if a is not None and b is not None and (a.dtype, b.dtype) in passed:
                return
        elif len(arrays) == 1:
            if arrays[0] is not None and (arrays[0].dtype,) in passed:
                return
        elif len(arrays) == 3:
            a, b, c = arrays
            if a is not None and b is not None and c is not None and (a.dtype, b.dtype, c.dtype) in passed:
                return
        full_check(arrays)
        if len(arrays) <= 3 and all(array is not None for array in arrays):
            passed.add(tuple(array.dtype for array in arrays if array is not None))

    def full_check(arrays: tuple[np.ndarray | None, ...]) -> None:
        seen: dict[str, np.dtype] = {}
        for i, array in enumerate(arrays):
            if array is None:
                continue
            param = params[min(i, last)]
            dtype = _OBJECT if array.dtype.kind == "U" else array.dtype
            if dtype not in allowed[param]:
                raise node.fail(_refusal(node, f"input {i}", param, dtype, allowed[param]))
            if seen.setdefault(param, dtype) != dtype:
                raise node.fail(f"input {i} has type {dtype}, another input of type {param} has {seen[param]}")

    return check


def float_attr(node: OpNode, name: str, default: float) -> float:
    """A float attribute or its schema default, as the float32 value ONNX stores (a default alpha of
    0.01 is 0.009999999776482582, what a float64 input is multiplied by); an int is taken as a float."""
    value = node.attr(name, default)
    if isinstance(value, bool) or not isinstance(value, (int, float)):
        raise node.fail(f"{value!r} is not a number", name)
    return float(np.float32(value))


def int_attr(node: OpNode, name: str, default: int, choices: tuple[int, ...] | None = None) -> int:
    """An int attribute or its schema default, one of ``choices`` when given."""
    value = node.attr(name, default)
    if isinstance(value, bool) or not isinstance(value, int):
        raise node.fail(f"{value!r} is not an integer", name)
    if choices is not None and value not in choices:
        raise node.fail(f"{value} is not one of {', '.join(map(str, choices))}", name)
    return value


def str_attr(node: OpNode, name: str, default: str | None, choices: tuple[str, ...]) -> str:
    """A string attribute, one of ``choices``; ``default`` None means the attribute is required."""
    value = node.attr(name, default)
    if value is None:
        raise node.fail("is required", name)
    if value not in choices:
        raise node.fail(f"{value!r} is not one of {', '.join(map(repr, choices))}", name)
    return str(value)
