"""Names: fresh names for the nodes and tensors ovpool adds, and the name of the tensor behind an
IR port, the same in every world (IR -> ONNX, IR -> DirectML, ``ovpool run`` on numpy or OpenVINO).
"""

from __future__ import annotations

from collections.abc import Collection, Iterable


class FreshNames:
    """Names not yet taken: ``fresh("pool1/pad")`` is that name, else ``pool1/pad_1``, ``pool1/pad_2``...;
    every name it returns is taken from then on."""

    def __init__(self, taken: Iterable[str] = ()) -> None:
        self._taken = set(taken)

    def fresh(self, base: str) -> str:
        name, suffix = base, 0
        while name in self._taken:
            suffix += 1
            name = f"{base}_{suffix}"
        self._taken.add(name)
        return name

    def take(self, name: str) -> None:
        """Mark ``name`` as taken."""
        self._taken.add(name)


def port_tensor_name(
    names: str | Iterable[str], layer_name: str, port_id: str, first_output: bool, inputs: Collection[str] = ()
) -> str:
    """The tensor behind an IR output port.

    The smallest of the port's tensor names, which is the first that OpenVINO writes (it sorts them)
    and what its ``get_any_name()`` returns: ``names="alpha,mid,zeta"`` -> ``alpha``; a name one of
    the model's ``inputs`` (its Parameters' names) also holds only when the port has no other: the
    identity that a pass-through node leaves (inference Dropout, a one-input Max) writes
    ``names="x,y"`` for ONNX's ``y = Dropout(x)``, and that tensor is ``y``. A port without names
    is named after its layer: ``pool1`` for the layer's first output port, ``pool1:2`` for output
    port 2.
    """
    listed = names.split(",") if isinstance(names, str) else names
    cleaned = sorted(n.strip() for n in listed if n.strip())
    own = [n for n in cleaned if n not in inputs]
    if own or cleaned:
        return (own or cleaned)[0]
    return layer_name if first_output else f"{layer_name}:{port_id}"
