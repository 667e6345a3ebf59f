"""An error's file is data on the exception: shown first, named once."""

from __future__ import annotations

from ovpool.errors import InputFileError, ModelError, SpecError


def test_file_is_shown_first_and_only_once() -> None:
    error = ModelError.in_file("m.onnx", "node 'p': bad")
    assert str(error) == "m.onnx: node 'p': bad" and error.file == "m.onnx"
    assert str(error.located("other.onnx")) == "m.onnx: node 'p': bad"
    assert str(ModelError("node 'p': bad").located("m.onnx")) == "m.onnx: node 'p': bad"
    assert InputFileError.in_file("a.xml:3:4", "malformed XML").exit_code == 2


def test_spec_errors_keep_their_fields_and_take_a_file() -> None:
    error = SpecError("pool1", "strides", [0, 2], "must be >= 1").located("m.onnx")
    assert (error.node, error.attribute, error.value) == ("pool1", "strides", [0, 2])
    assert str(error) == "m.onnx: node 'pool1': attribute 'strides' = [0, 2]: must be >= 1"
