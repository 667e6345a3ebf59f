"""``ovpool validate`` on a 20,000-layer IR, against a process that imports OpenVINO and read_model()s it.

Run: ``python benchmarks/validate_20k.py [--layers 20000] [--repeat 3]``. Writes the IR to a temporary
directory (a chain Parameter -> 20,000 alternating AvgPool-14/MaxPool-8 layers -> Result, written by
ovpool's own IR emitter), then reports the best of ``--repeat`` wall times of whole processes:
``ovpool validate`` and ``python -c "import openvino; Core().read_model(...)"``, on that chain and on
a chain where one layer in ten is pooling and the rest ReLU; and, in process, validation time at
1/4, 1/2 and all of the layers to show it grows linearly.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

from ovpool.ir_emit import IRGraph
from ovpool.spec import Divisor, Indices, PoolKind, PoolSpec, Rounding
from ovpool.validation import validate_file


def make_ir(path: Path, layers: int) -> None:
    """Parameter -> ``layers`` pooling layers (AvgPool-14 and MaxPool-8 alternating) -> Result."""
    graph = IRGraph("chain")
    x = graph.parameter("x", (1, 8, 16, 16))
    avg = PoolSpec(PoolKind.AVERAGE, (3, 3), (1, 1), pads_begin=(1, 1), pads_end=(1, 1), rounding=Rounding.CEIL, divisor=Divisor.EXCLUDE_PAD)
    mx = PoolSpec(PoolKind.MAX, (3, 3), (1, 1), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1), indices=Indices())
    for i in range(layers):
        spec = (avg if i % 2 == 0 else mx).with_(name=f"pool{i}")
        x = graph.pool(spec, x)[0]
    graph.result(x, "y")
    files = graph.render()
    path.write_bytes(files[".xml"])
    path.with_suffix(".bin").write_bytes(files[".bin"])


def make_mixed_ir(path: Path, layers: int, every: int = 10) -> None:
    """A chain of ``layers`` layers where one in ``every`` is a pooling layer and the rest ReLU,
    closer to real networks (written as text: ovpool's emitter only writes what ovpool needs)."""
    dims = "<dim>1</dim><dim>8</dim><dim>16</dim><dim>16</dim>"
    port = '<port id="{id}" precision="FP32">' + dims + "</port>"
    body = ['<?xml version="1.0"?>\n<net name="mixed" version="11">\n<layers>',
            f'<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,8,16,16" element_type="f32"/><output>{port.format(id=0)}</output></layer>']
    edges = []
    for i in range(1, layers + 1):
        if i % every == 0:
            head = f'<layer id="{i}" name="pool{i}" type="AvgPool" version="opset14"><data kernel="3, 3" strides="1, 1" pads_begin="1, 1" pads_end="1, 1" exclude-pad="true" auto_pad="explicit" rounding_type="floor"/>'
        else:
            head = f'<layer id="{i}" name="relu{i}" type="ReLU" version="opset1">'
        body.append(f"{head}<input>{port.format(id=0)}</input><output>{port.format(id=1)}</output></layer>")
        edges.append(f'<edge from-layer="{i - 1}" from-port="{0 if i == 1 else 1}" to-layer="{i}" to-port="0"/>')
    body.append(f'<layer id="{layers + 1}" name="y" type="Result" version="opset1"><input>{port.format(id=0)}</input></layer>')
    edges.append(f'<edge from-layer="{layers}" from-port="1" to-layer="{layers + 1}" to-port="0"/>')
    path.write_text("\n".join(body) + "\n</layers>\n<edges>\n" + "\n".join(edges) + "\n</edges>\n</net>\n")


def compare(label: str, path: Path, repeat: int) -> None:
    findings = validate_file(path).findings
    cli = "import sys; from ovpool.cli.app import main; sys.argv = ['ovpool', 'validate', sys.argv[1]]; main()"
    ovpool_s = best([sys.executable, "-c", cli, str(path)], repeat)
    openvino_s = best([sys.executable, "-c", "import sys, openvino as ov; ov.Core().read_model(sys.argv[1])", str(path)], repeat)
    print(f"{label}: {path.stat().st_size / 1e6:.1f} MB, {len(findings)} findings; whole process: "
          f"ovpool validate {ovpool_s:.2f} s, import openvino + read_model {openvino_s:.2f} s")


def best(command: list[str], repeat: int) -> float:
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        subprocess.run(command, check=False, capture_output=True)
        times.append(time.perf_counter() - start)
    return min(times)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", type=int, default=20000)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        sizes = sorted({args.layers // 4, args.layers // 2, args.layers})
        paths = {}
        for n in sizes:
            paths[n] = Path(tmp) / f"chain{n}.xml"
            make_ir(paths[n], n)
        mixed = Path(tmp) / "mixed.xml"
        make_mixed_ir(mixed, args.layers)
        compare(f"{args.layers} layers, 1 in 10 pooling", mixed, args.repeat)
        compare(f"{args.layers} layers, all pooling", paths[args.layers], args.repeat)
        for n in sizes:
            start = time.perf_counter()
            validate_file(paths[n])
            elapsed = time.perf_counter() - start
            print(f"in process: {n:>6} layers {elapsed:.3f} s ({elapsed / n * 1e6:.1f} us/layer)")


if __name__ == "__main__":
    main()
