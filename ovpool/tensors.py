"""Inputs and outputs of ``ovpool run``: .npz / .npy files in, .npz and a summary out, and the
check of input arrays against what the model declares (``TensorDecl``).

A declared shape holds ints for static dims and None for dynamic ones (ONNX ``dim_param``, IR ``-1``
or ``?``); a declaration whose rank is unknown has ``shape=None`` and accepts any array of its dtype.
An ONNX input may be a sequence of tensors (fed as a list of arrays) or an optional (None when
empty): its ``TensorDecl`` names those containers, outermost first, and its dtype and shape are
the tensors'. A string tensor is a numpy object array of ``str``.
"""

from __future__ import annotations

import io
import math
import zipfile
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, cast

import numpy as np
from onnx import ModelProto, TypeProto

from ovpool.dtypes import RAW_DTYPES, STRING, np_dtype, numpy_from_onnx
from ovpool.errors import InputFileError, ModelError, OvpoolError, UnsupportedError, UsageError
from ovpool.files import regular_size, write_atomic
from ovpool.inputs import parse_shape_pairs
from ovpool.memory import check_tensor, holding, kernel_failure

# The containers an ONNX input may be (``TensorDecl.containers``): a sequence of tensors (a list of
# arrays) and an optional (None when empty).
SEQUENCE = "sequence"
OPTIONAL = "optional"


@dataclass(frozen=True)
class TensorDecl:
    """A model input as declared: ``TensorDecl("input", "float32", (1, 3, None, None))``. A
    sequence or optional input names its ``containers``, outermost first, and the dtype and shape
    of its tensors: ONNX ``optional(seq(tensor(float)))`` of tensors [N] is ``TensorDecl("s",
    "float32", (None,), ("optional", "sequence"))``."""

    name: str
    dtype: str
    shape: tuple[int | None, ...] | None
    containers: tuple[str, ...] = ()

    def shown(self) -> str:
        """``input: float32 [1, 3, ?, ?]``; ``s: optional(sequence(float32 [?]))``."""
        dims = "[?]" if self.shape is None else "[" + ", ".join("?" if d is None else str(d) for d in self.shape) + "]"
        text = f"{self.dtype} {dims}"
        for container in reversed(self.containers):
            text = f"{container}({text})"
        return f"{self.name}: {text}"

    @property
    def is_tensor(self) -> bool:
        """Whether the input is a plain tensor (no sequence, no optional around it)."""
        return not self.containers


def check_inputs(model: str, decls: Sequence[TensorDecl], arrays: Mapping[str, Any]) -> None:
    """Raise ``ModelError`` naming the model and the input when ``arrays`` do not fit ``decls``:
    a missing or unknown name, another rank, another dtype, or another size on a static dim
    (a (1, 3, 16, 16) array for a declared [1, 3, 14, 14] fails on axis 2: 16 != 14). A sequence
    input takes a list (or tuple) of arrays, each checked so (``input 's' item 1 is int64``), an
    optional one None too; a string tensor is an object array of ``str``."""
    mismatch = name_mismatch([d.name for d in decls], arrays)
    if mismatch:
        takes = "; ".join(d.shown() for d in decls)
        raise ModelError.in_file(model, f"{mismatch} (the model takes {takes})")
    for decl in decls:
        problem = _misfit(decl, decl.containers, arrays[decl.name], f"input '{decl.name}'")
        if problem is not None:
            raise ModelError.in_file(model, problem)


def _misfit(decl: TensorDecl, containers: tuple[str, ...], value: Any, label: str) -> str | None:
    """What is wrong with ``value`` (called ``label``) as ``containers`` of ``decl``'s tensors, or None."""
    if containers and containers[0] == OPTIONAL:
        return None if value is None else _misfit(decl, containers[1:], value, label)
    if containers:  # a sequence
        if not isinstance(value, (list, tuple)):
            return f"{label} is {_kind(value)}, the model declares {decl.shown()} (a list of arrays, which an .npz does not hold)"
        for index, item in enumerate(value):
            problem = _misfit(decl, containers[1:], item, f"{label} item {index}")
            if problem is not None:
                return problem
        return None
    if not isinstance(value, np.ndarray):
        return f"{label} is {_kind(value)}, the model declares {decl.shown()}"
    if value.dtype != np_dtype(decl.dtype):
        return f"{label} is {value.dtype}, the model declares {decl.shown()}"
    if decl.dtype == STRING:
        other = next((v for v in value.reshape(-1).tolist() if not isinstance(v, str)), None)
        if other is not None:
            return f"{label} holds {type(other).__name__} {other!r}, the model declares {decl.shown()} (an array of str)"
    if decl.shape is None:
        return None
    if value.ndim != len(decl.shape):
        return f"{label} has rank {value.ndim} {list(value.shape)}, the model declares {decl.shown()}"
    for axis, (got, want) in enumerate(zip(value.shape, decl.shape)):
        if want is not None and got != want:
            return f"{label} axis {axis} is {got}, the model declares {want} ({decl.shown()})"
    return None


def _kind(value: Any) -> str:
    """A fed value as an error names it: ``a float32 array``, ``a sequence of 2``, ``None``."""
    if value is None:
        return "None"
    if isinstance(value, np.ndarray):
        return f"a {value.dtype} array"
    if isinstance(value, (list, tuple)):
        return f"a sequence of {len(value)}"
    return f"a {type(value).__name__}"


def fed_values(decls: Sequence[TensorDecl], inputs: Mapping[str, Any]) -> dict[str, Any]:
    """``inputs`` as ``check_inputs`` and the sessions take them, by what each input declares: a
    tensor as a numpy array (``np.asarray``: [1.0, 2.0] for a float64 input is that array; numpy
    strings ``<U2`` for a string input an object array of ``str``), a sequence as a list of such,
    an empty optional's None kept. What does not fit (a float array for a sequence, a name the
    model lacks) is left for ``check_inputs`` to name."""
    declared = {decl.name: decl for decl in decls}
    fed = dict(inputs)
    for name, value in inputs.items():
        decl = declared.get(name)
        fed[name] = _fed(decl.containers, decl.dtype, value) if decl is not None else _fed((), "", value)
    return fed


def _fed(containers: tuple[str, ...], dtype: str, value: Any) -> Any:
    if value is None:
        return None
    if containers and containers[0] == OPTIONAL:
        return _fed(containers[1:], dtype, value)
    if containers:
        return [_fed(containers[1:], dtype, item) for item in value] if isinstance(value, (list, tuple)) else value
    array = np.asarray(value)
    return array.astype(object) if dtype == STRING and array.dtype.kind in "UT" else array


def typed_inputs(decls: Sequence[TensorDecl], arrays: Mapping[str, np.ndarray]) -> dict[str, np.ndarray]:
    """``arrays`` with each raw-byte array (numpy kind "V", as an .npy file holds ml_dtypes'
    types: uint4, uint2 and float8_e4m3fn are ``<V1``, bfloat16 ``<V2``) given for an input declared
    of such a type (``dtypes.RAW_DTYPES``) read as that type, bit for bit, when the sizes agree: the
    byte 0x38 of a ``<V1`` array for a float8_e4m3fn input is 1.0; and each numpy string array
    (``<U5``, which .npy holds without pickles) for a string input as an object array of ``str``.
    Other arrays are left as they are."""
    declared = {decl.name: decl.dtype for decl in decls if decl.is_tensor}
    typed = dict(arrays)
    for name, array in arrays.items():
        dtype = declared.get(name)
        if dtype in RAW_DTYPES and array.dtype.kind == "V" and array.dtype.itemsize == np_dtype(dtype).itemsize:
            typed[name] = array.view(np_dtype(dtype))
        elif dtype == STRING and array.dtype.kind == "U":
            typed[name] = array.astype(object)
    return typed


def name_mismatch(expected: Sequence[str], given: Iterable[str]) -> str | None:
    """What is wrong with the input names ``given`` for a model taking ``expected``, or None:
    ``(["a", "b"], ["a", ""])`` -> ``missing input(s) 'b'; unknown input(s) ''``. Names are quoted
    as Python writes strings, so an empty or odd one shows (an .npz member named ``.npy`` is the
    input ``''``)."""
    given = list(given)
    missing = [n for n in expected if n not in given]
    unknown = [n for n in given if n not in expected]
    parts = [f"missing input(s) {_quoted(missing)}"] if missing else []
    parts += [f"unknown input(s) {_quoted(unknown)}"] if unknown else []
    return "; ".join(parts) or None


def _quoted(names: Sequence[str]) -> str:
    """Names as ``name_mismatch`` quotes them: ``['', 'x']`` -> ``'', 'x'``."""
    return ", ".join(repr(name) for name in names)


def parse_shapes(pairs: Sequence[str]) -> dict[str, tuple[int, ...]]:
    """``["x=1,3,224,224"]`` -> ``{"x": (1, 3, 224, 224)}``: ``--shape`` for ``--random-inputs``,
    parsed by ``ovpool.inputs.parse_shape_pairs`` (numbers only, each at most 2**31-1, no input
    named twice); anything else is a ``UsageError`` naming the pair."""
    return {str(given.name): tuple(low for low, _ in given.dims or ()) for given in parse_shape_pairs(pairs, static=True)}


def random_inputs(
    model: str,
    decls: Sequence[TensorDecl],
    shapes: Mapping[str, tuple[int, ...]],
    seed: int = 0,
    checks: Sequence[Callable[[Mapping[str, np.ndarray]], None]] = (),
) -> dict[str, np.ndarray]:
    """One array per declared input: standard normal for floats, integers in [0, 10) for integer
    types, from ``numpy.random.default_rng(seed)``. Shapes are the declared ones, with ``shapes``
    (``--shape``) filling dynamic dims; a dynamic dim without a ``--shape`` is an error, and so are
    inputs over the memory budget together (``ovpool.memory``: two of 600 MiB under 1 GiB), before
    anything is generated. ``checks`` (a session's ``check_budget``: the run those shapes make) are
    called first with stand-ins of the inputs, zero-stride views of their shapes and dtypes that
    allocate nothing."""
    unknown = [n for n in shapes if n not in {d.name for d in decls}]
    if unknown:
        raise ModelError.in_file(
            model, f"--shape for unknown input(s) {_quoted(unknown)} (the model takes {'; '.join(d.shown() for d in decls)})"
        )
    drawn: dict[str, tuple[int, ...]] = {}
    total = 0  # the inputs checked so far: all of them together within the budget
    for decl in decls:
        if not decl.is_tensor or decl.dtype == STRING:
            where = "an .npz (--inputs) may hold a string array" if decl.is_tensor else "ovpool.run takes lists and None"
            raise UnsupportedError.in_file(model, f"input {decl.shown()}: random inputs are tensors of numbers only ({where})")
        shape = shapes.get(decl.name)
        if shape is None:
            if decl.shape is None or None in decl.shape:
                raise ModelError.in_file(model, f"input {decl.shown()} has dynamic dims; give --shape {decl.name}=d0,d1,...")
            shape = cast("tuple[int, ...]", decl.shape)  # every dim static (checked above)
        try:
            with holding(total):
                total += check_tensor(f"input '{decl.name}'", shape, decl.dtype)
        except OvpoolError as exc:
            raise exc.located(model) from None
        drawn[decl.name] = shape
    for check in checks:
        check({decl.name: stand_in(decl.dtype, drawn[decl.name]) for decl in decls})
    rng = np.random.default_rng(seed)
    arrays = {}
    for decl in decls:
        shape = drawn[decl.name]
        try:
            arrays[decl.name] = _draw(rng, shape, np_dtype(decl.dtype))
        except MemoryError as exc:  # within --max-memory, beyond what the machine gives
            raise kernel_failure(f"input '{decl.name}' {list(shape)} {decl.dtype}", exc).located(model) from None
    check_inputs(model, decls, arrays)
    return arrays


def stand_in(dtype: str, shape: tuple[int, ...]) -> np.ndarray:
    """An array of ``shape`` and ``dtype`` that allocates nothing (one zero, read at every index):
    what a budget check needs of an input not yet drawn or read (``nbytes`` is that of the real
    one: 4 MB for float32 (1000, 1000))."""
    return np.broadcast_to(np.zeros((), np_dtype(dtype)), shape)


_DRAW_CHUNK = 1 << 20


def _draw(rng: np.random.Generator, shape: tuple[int, ...], dtype: np.dtype) -> np.ndarray:
    """A ``dtype`` array of ``shape`` filled from ``rng`` a million values at a time, so drawing
    costs the array and 8 MiB, not a float64 copy of it (a 3 GiB float32 input would otherwise
    take 9 GiB). The values are those of one ``rng.standard_normal(shape)`` (or
    ``rng.integers(0, 10, shape)``; [0, 8) for int4 and uint4, [0, 2) for int2 and uint2, the
    absolute values for the unsigned float8_e8m0fnu) cast to ``dtype``: the generator draws in
    sequence."""
    out = np.empty(shape, dtype)
    flat = out.reshape(-1)
    narrow_high = {"int4": 8, "uint4": 8, "int2": 2, "uint2": 2}.get(dtype.name)
    integer = np.issubdtype(dtype, np.integer) or dtype == np.bool_ or narrow_high is not None
    high = 2 if dtype == np.bool_ else narrow_high or 10
    for start in range(0, flat.size, _DRAW_CHUNK):
        count = min(_DRAW_CHUNK, flat.size - start)
        drawn = rng.integers(0, high, size=count) if integer else rng.standard_normal(count)
        # float8_e8m0fnu holds powers of two without a sign: a negative value would be NaN
        flat[start : start + count] = np.abs(drawn) if dtype.name == "float8_e8m0fnu" else drawn
    return out


def load_inputs(npz: Path | None, pairs: Sequence[str]) -> dict[str, np.ndarray]:
    """Arrays from an .npz (keyed by input name) and ``NAME=file.npy`` pairs. Each array's header
    is read first: Python objects (pickles), a negative dim, a size over the memory budget or data
    shorter than the header says are refused before the data is read. An input given twice (two
    ``-i x=...``, an ``-i x=...`` for a member of the .npz, an .npz holding ``x.npy`` twice) is
    refused, not the last silently winning. A big-endian array is read in native byte order:
    ``>f4`` is float32."""
    given: dict[str, str] = {}
    for pair in pairs:
        name, sep, file = pair.partition("=")
        if not sep or not name or not file:
            raise InputFileError(f"-i {pair}: expected NAME=file.npy")
        if name in given:
            raise UsageError(f"-i: input '{name}' is given twice ({given[name]} and {pair})")
        given[name] = pair
    arrays: dict[str, np.ndarray] = {}
    if npz is not None:
        regular_size(npz)
        try:
            with zipfile.ZipFile(npz) as archive:
                for member in archive.infolist():
                    if not member.filename.endswith(".npy"):
                        raise InputFileError.in_file(npz, f"member '{member.filename}' is not an .npy array")
                    name = member.filename[: -len(".npy")]
                    if name in arrays:
                        raise InputFileError.in_file(npz, f"member '{member.filename}' appears twice")
                    if name in given:
                        raise UsageError(f"-i {given[name]}: input '{name}' is also in --inputs {npz}")
                    with archive.open(member) as stream:
                        arrays[name] = _read_npy(stream, member.file_size, f"{npz}: member '{member.filename}'")
        except (zipfile.BadZipFile, zipfile.LargeZipFile, EOFError, OSError, ValueError, NotImplementedError) as exc:
            raise InputFileError.in_file(npz, f"not a readable .npz ({type(exc).__name__}: {exc})") from None
    for name, pair in given.items():
        file = pair.partition("=")[2]
        size = regular_size(file)
        with open(file, "rb") as stream:
            if stream.read(4) == b"PK\x03\x04":
                raise InputFileError(f"-i {pair}: {file} is an .npz archive, not one .npy array (use --inputs {file})")
            stream.seek(0)
            try:
                arrays[name] = _read_npy(stream, size, file)
            except (EOFError, OSError, ValueError) as exc:
                raise InputFileError.in_file(file, f"not a readable .npy ({type(exc).__name__}: {exc})") from None
    return arrays


def _read_npy(stream: IO[bytes], size: int, label: str) -> np.ndarray:
    """One .npy array from ``stream`` (``size`` bytes in all), its header checked before its data
    is read (see ``load_inputs``); ``label`` names it in errors."""
    version = np.lib.format.read_magic(stream)
    if version == (1, 0):
        shape, fortran, dtype = np.lib.format.read_array_header_1_0(stream)
    else:
        shape, fortran, dtype = np.lib.format.read_array_header_2_0(stream)
    if dtype.hasobject:
        raise InputFileError.in_file(label, "holds Python objects (a pickle); ovpool reads plain numeric arrays only")
    if any(d < 0 for d in shape):
        raise InputFileError.in_file(label, f"declares a negative dim {list(shape)}")
    needed = check_tensor(f"{label}: array", shape, dtype.name, dtype.itemsize)
    if size - stream.tell() < needed:
        raise InputFileError.in_file(
            label, f"is truncated: its header says {list(shape)} {dtype} ({needed} bytes) and it holds {size - stream.tell()}"
        )
    data = stream.read(needed)
    array = np.frombuffer(data, dtype=dtype, count=math.prod(shape)) if needed else np.zeros(0, dtype)
    # A copy in C order and native byte order (a big-endian >f4 array is float32 all the same).
    return array.reshape(shape, order="F" if fortran else "C").astype(dtype.newbyteorder("="), order="C")


def save_outputs(path: Path, results: Mapping[str, np.ndarray], force: bool, sources: Sequence[Path] = ()) -> None:
    """Write ``results`` to an .npz keyed by output name, atomically (``--force`` to replace).
    The archive is written member by member, so any output name works as a key (``np.savez(**kw)``
    would reject names such as "file"). An output of ml_dtypes' types (bfloat16, float8, 4-bit,
    2-bit) is written as its raw bytes (``<V1``, ``<V2``), which every numpy reads (float8_e5m2
    would be ``<f1``, which numpy cannot read back); ``typed_inputs`` reads such bytes back as the
    type. A string output is written as numpy strings (``<U5``: an .npz holds no pickles). A
    sequence or empty optional output is an ``UnsupportedError`` naming it, before anything is
    written (an .npz holds arrays)."""
    for name, value in results.items():
        if value is None or isinstance(value, (list, tuple)):
            raise UnsupportedError(
                f"output '{name}' is {_kind(value)}: an .npz holds arrays only (ovpool.run returns sequences and optionals)"
            )
    buffer = io.BytesIO()
    with zipfile.ZipFile(buffer, "w") as archive:
        for name, value in results.items():
            array = np.asarray(value)
            if array.dtype.name in RAW_DTYPES:
                array = array.view(f"V{array.dtype.itemsize}")
            elif array.dtype == object:
                array = array.astype(str)
            with archive.open(f"{name}.npy", "w") as member:
                np.lib.format.write_array(member, array, allow_pickle=False)
    write_atomic({path: buffer.getvalue()}, force, sources)


def summary(results: Mapping[str, Any]) -> str:
    """One line per output: ``y: shape [1, 3, 16, 16] float32 min -1.2 max 3.4``; a sequence
    ``s: sequence of 2: shape [2] float32 min 1.0 max 2.0; shape [0] float32``, an empty optional
    ``o: None``."""
    return "\n".join(f"{name}: {_described(value)}" for name, value in results.items())


def _described(value: Any) -> str:
    if value is None:
        return "None"
    if isinstance(value, (list, tuple)):
        return f"sequence of {len(value)}" + (": " + "; ".join(_described(item) for item in value) if value else "")
    extent = f" min {value.min()} max {value.max()}" if value.size else ""
    return f"shape {list(value.shape)} {value.dtype}{extent}"


def onnx_inputs(proto: ModelProto) -> tuple[TensorDecl, ...]:
    """The graph inputs that are not initializers, as declared, of every element type the numpy
    executor holds (``dtypes.numpy_from_onnx``: strings, FNUZ float8, 2-bit integers too), tensors
    or sequences and optionals of them (``TensorDecl.containers``). A dim that is a dim_param,
    unset, or a dim_value of -1 or 0 (how paddle2onnx and old exporters write a dynamic dim) is
    dynamic: ``float[-1, 3, 640, 640]`` is ``(None, 3, 640, 640)``. A map or sparse tensor input
    is an ``UnsupportedError`` naming it."""
    initializers = {t.name for t in proto.graph.initializer}
    decls = []
    for value in proto.graph.input:
        if value.name in initializers:
            continue
        containers, tensor = _unwrapped(value.name, value.type)
        shape = None
        if tensor.HasField("shape"):
            shape = tuple(d.dim_value if d.HasField("dim_value") and d.dim_value > 0 else None for d in tensor.shape.dim)
        try:
            dtype = numpy_from_onnx(tensor.elem_type)
        except UnsupportedError as exc:
            raise UnsupportedError(f"input '{value.name}': {exc}") from None
        decls.append(TensorDecl(value.name, dtype, shape, containers))
    return tuple(decls)


def _unwrapped(name: str, value_type: TypeProto) -> tuple[tuple[str, ...], TypeProto.Tensor]:
    """The containers of an input's type, outermost first, and its tensor type:
    ``optional(seq(tensor(float)))`` -> ``(("optional", "sequence"), tensor(float))``. A type that
    is neither (a map, a sparse tensor) is an ``UnsupportedError`` naming the input; an input
    without a type is a tensor of element type 0 (UNDEFINED), refused by its element type."""
    containers: list[str] = []
    while True:
        kind = value_type.WhichOneof("value")
        if kind == "sequence_type":
            containers.append(SEQUENCE)
            value_type = value_type.sequence_type.elem_type
        elif kind == "optional_type":
            containers.append(OPTIONAL)
            value_type = value_type.optional_type.elem_type
        elif kind in ("tensor_type", None):
            return tuple(containers), value_type.tensor_type
        else:
            shown = kind.removesuffix("_type").replace("_", " ")
            raise UnsupportedError(f"input '{name}': a {shown} input; ovpool runs tensors, and sequences and optionals of them")
