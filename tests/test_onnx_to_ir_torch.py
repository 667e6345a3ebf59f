"""Models with the pooling patterns real networks use, exported from PyTorch (TorchScript exporter),
converted by ovpool, run on OpenVINO CPU at f32 and compared with PyTorch itself; a small CNN is
also compared with onnxruntime.

PyTorch 2.13's TorchScript exporter has no rule for ``max_unpool2d``, so the SegNet-style model is
written as ONNX with the weights of a PyTorch module and its ``output_shape`` computed at run time
(``Shape`` of the pooled input), and compared with the module's own forward.
"""

from __future__ import annotations

import io

import numpy as np
import onnx
import pytest
from onnx import TensorProto, helper, numpy_helper
from test_onnx_to_ir import run_ov

torch = pytest.importorskip("torch")
nn = torch.nn
F = torch.nn.functional

pytestmark = [pytest.mark.openvino, pytest.mark.torch]


def export(module: nn.Module, x: torch.Tensor, opset: int = 13, dynamic: bool = False) -> onnx.ModelProto:
    buffer = io.BytesIO()
    axes = {"x": {i: f"d{i}" for i in range(2, x.dim())}} if dynamic else None
    torch.onnx.export(
        module.eval(), (x,), buffer, dynamo=False, input_names=["x"], output_names=["y"], opset_version=opset, dynamic_axes=axes
    )
    return onnx.load_from_string(buffer.getvalue())


class Lambda(nn.Module):
    def __init__(self, fn):
        super().__init__()
        self.fn = fn

    def forward(self, x):
        return self.fn(x)


PATTERNS = {
    "resnet_stem": (lambda x: F.max_pool2d(x, 3, 2, 1), (1, 4, 15, 15)),
    "googlenet_ceil_max": (lambda x: F.max_pool2d(x, 3, 2, ceil_mode=True), (1, 3, 14, 14)),
    "googlenet_branch_max": (lambda x: F.max_pool2d(x, 3, 1, 1, ceil_mode=True), (1, 3, 7, 7)),
    "inception_avg_ceil_include_pad": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True), (1, 3, 8, 8)),
    "avg_ceil_exclude_pad": (lambda x: F.avg_pool2d(x, 3, 2, 1, ceil_mode=True, count_include_pad=False), (1, 3, 10, 7)),
    "avg_k2_p1_ceil_start_in_pad": (lambda x: F.avg_pool2d(x, 2, 2, 1, ceil_mode=True), (1, 2, 4, 6)),
    "audio_1d_max": (lambda x: F.max_pool1d(x, 4, 3, 1, ceil_mode=True), (2, 3, 50)),
    "audio_1d_avg": (lambda x: F.avg_pool1d(x, 5, 2, 2, ceil_mode=True), (2, 3, 31)),
    "video_3d_max": (lambda x: F.max_pool3d(x, (1, 3, 3), (1, 2, 2), (0, 1, 1), ceil_mode=True), (1, 2, 4, 9, 9)),
    "video_3d_avg": (lambda x: F.avg_pool3d(x, (2, 3, 3), (2, 2, 2), (1, 1, 1), ceil_mode=True), (1, 2, 5, 8, 8)),
    "adaptive_avg": (lambda x: F.adaptive_avg_pool2d(x, 1), (1, 3, 6, 5)),
    "dilated_max": (lambda x: F.max_pool2d(x, 3, 2, 1, dilation=2, ceil_mode=True), (1, 2, 11, 12)),
}


@pytest.mark.parametrize("name", sorted(PATTERNS))
@pytest.mark.parametrize("dynamic", [False, True], ids=["static", "dynamic"])
def test_pattern_matches_pytorch(name, dynamic):
    fn, shape = PATTERNS[name]
    x = torch.randn(*shape, generator=torch.Generator().manual_seed(0))
    model = export(Lambda(fn), x, dynamic=dynamic)
    with torch.no_grad():
        want = fn(x).numpy()
    got = run_ov(model, {"x": x.numpy()})["y"]
    assert got.shape == want.shape
    np.testing.assert_allclose(got, want, rtol=1e-5, atol=1e-6)


def test_max_pool_indices_export():
    """PyTorch's per-channel indices are exported as ONNX MaxPool indices minus each plane's offset."""
    fn = lambda x: F.max_pool2d(x, 3, 2, 1, ceil_mode=True, return_indices=True)[1]  # noqa: E731
    x = torch.randn(2, 3, 9, 8, generator=torch.Generator().manual_seed(2))
    got = run_ov(export(Lambda(fn), x), {"x": x.numpy()})["y"]
    np.testing.assert_array_equal(got, fn(x).numpy())


class SegNetBlock(nn.Module):
    """conv-relu, max_pool2d with indices, conv-relu, max_unpool2d to the pre-pool size, conv."""

    def __init__(self):
        super().__init__()
        self.enc = nn.Conv2d(3, 4, 3, padding=1)
        self.mid = nn.Conv2d(4, 4, 3, padding=1)
        self.dec = nn.Conv2d(4, 2, 3, padding=1)

    def forward(self, x):
        e = F.relu(self.enc(x))
        p, i = F.max_pool2d(e, 2, 2, return_indices=True)
        m = F.relu(self.mid(p))
        return self.dec(F.max_unpool2d(m, i, 2, 2, output_size=e.shape[2:]))


def _segnet_onnx(block: SegNetBlock, spatial: list) -> onnx.ModelProto:
    weights = []
    for name in ("enc", "mid", "dec"):
        conv = getattr(block, name)
        weights += [
            numpy_helper.from_array(conv.weight.detach().numpy(), f"{name}.w"),
            numpy_helper.from_array(conv.bias.detach().numpy(), f"{name}.b"),
        ]
    conv = {"kernel_shape": [3, 3], "pads": [1, 1, 1, 1]}
    nodes = [
        helper.make_node("Conv", ["x", "enc.w", "enc.b"], ["e0"], **conv),
        helper.make_node("Relu", ["e0"], ["e"]),
        helper.make_node("MaxPool", ["e"], ["p", "i"], kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["p", "mid.w", "mid.b"], ["m0"], **conv),
        helper.make_node("Relu", ["m0"], ["m"]),
        helper.make_node("Shape", ["e"], ["e_shape"]),
        helper.make_node("MaxUnpool", ["m", "i", "e_shape"], ["u"], name="unpool", kernel_shape=[2, 2], strides=[2, 2]),
        helper.make_node("Conv", ["u", "dec.w", "dec.b"], ["y"], **conv),
    ]
    graph = helper.make_graph(
        nodes,
        "segnet",
        [helper.make_tensor_value_info("x", TensorProto.FLOAT, [1, 3, *spatial])],
        [helper.make_tensor_value_info("y", TensorProto.FLOAT, None)],
        weights,
    )
    return helper.make_model(graph, opset_imports=[helper.make_opsetid("", 13)], ir_version=8)


@pytest.mark.parametrize("size", [(7, 9), (11, 6)])
def test_segnet_pool_unpool_odd_sizes(size):
    torch.manual_seed(0)
    block = SegNetBlock().eval()
    x = torch.randn(1, 3, *size)
    with torch.no_grad():
        want = block(x).numpy()
    for spatial in (list(size), ["h", "w"]):
        got = run_ov(_segnet_onnx(block, spatial), {"x": x.numpy()})["y"]
        np.testing.assert_allclose(got, want, rtol=1e-4, atol=1e-5)


class TinyCNN(nn.Module):
    def __init__(self):
        super().__init__()
        self.features = nn.Sequential(
            nn.Conv2d(3, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.MaxPool2d(3, 2, 1, ceil_mode=True),
            nn.Conv2d(8, 8, 3, padding=1),
            nn.BatchNorm2d(8),
            nn.ReLU(),
            nn.AvgPool2d(3, 2, 1, ceil_mode=True),
        )
        self.head = nn.Linear(8, 5)

    def forward(self, x):
        return self.head(torch.flatten(F.adaptive_avg_pool2d(self.features(x), 1), 1))


def test_tiny_cnn_matches_onnxruntime_and_pytorch():
    ort = pytest.importorskip("onnxruntime")
    torch.manual_seed(0)
    net = TinyCNN()
    for bn in (net.features[1], net.features[5]):
        bn.running_mean.uniform_(-0.5, 0.5)
        bn.running_var.uniform_(0.5, 1.5)
    x = torch.randn(2, 3, 13, 13)
    model = export(net, x)
    model.ir_version = 8
    got = run_ov(model, {"x": x.numpy()})["y"]
    session = ort.InferenceSession(model.SerializeToString(), providers=["CPUExecutionProvider"])
    np.testing.assert_allclose(got, session.run(None, {"x": x.numpy()})[0], rtol=1e-4, atol=1e-5)
    with torch.no_grad():
        np.testing.assert_allclose(got, net.eval()(x).numpy(), rtol=1e-4, atol=1e-5)
