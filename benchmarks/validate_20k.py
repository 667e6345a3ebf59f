"""``ovpool validate`` on IRs of 1,000 to 100,000 layers, against a process that imports OpenVINO and read_model()s them.

Run: ``python benchmarks/validate_20k.py [--layers 1000,20000,100000] [--repeat 5]``. Writes IRs to a
temporary directory, each a chain Parameter -> N layers -> Result:

- identical: AvgPool-14 and MaxPool-8 alternating, every layer the same but its name (real
  networks repeat a few configurations; the validator checks each configuration once), at every N;
- varied: every layer differs: AvgPool-1/14/16 and MaxPool-1/8/14 with random kernels, strides,
  dilations, pads, auto_pad, rounding, divisor and indices, and spatial dims wandering between 8
  and 40 (written by ovpool's IR emitter, dims from the shape engine), at the middle N;
- mixed: one layer in ten pooling, the rest ReLU, at the middle N.

The checkout's bytecode is compiled first (``compileall``, as ``pip install`` does), so start-up
is that of an installed ovpool. For each IR it prints the median over ``--repeat`` interleaved runs
of whole processes, wall and CPU (user + system) time, of ``ovpool validate FILE`` and ``python -c
"import openvino; Core().read_model(FILE)"``, and their ratio (the issue's goal: 0.5 or less).
Then the start-up of ``ovpool --help`` and of ``ovpool validate`` on a one-layer IR, and
in-process validation time per layer at each N (linear growth: the same us/layer).
"""

from __future__ import annotations

import argparse
import os
import random
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))  # this checkout's ovpool, not an installed one

from ovpool import shape
from ovpool.errors import SpecError
from ovpool.ir.validation import validate_file
from ovpool.ir.writer import IRGraph
from ovpool.spec import Divisor, Indices, Padding, PoolKind, PoolSpec, Rounding

OVPOOL = "import sys; from ovpool.cli.app import main; sys.argv = ['ovpool'] + sys.argv[1:]; main()"
OPENVINO = "import sys, openvino as ov; ov.Core().read_model(sys.argv[1])"


def make_ir(path: Path, layers: int) -> None:
    """Parameter -> ``layers`` identical pooling layers (AvgPool-14 and MaxPool-8 alternating) -> Result."""
    avg = PoolSpec(
        PoolKind.AVERAGE, (3, 3), (1, 1), pads_begin=(1, 1), pads_end=(1, 1), rounding=Rounding.CEIL, divisor=Divisor.EXCLUDE_PAD
    )
    mx = PoolSpec(PoolKind.MAX, (3, 3), (1, 1), dilations=(1, 1), pads_begin=(1, 1), pads_end=(1, 1), indices=Indices())
    _write_chain(path, (1, 8, 16, 16), [(avg if i % 2 == 0 else mx).with_(name=f"pool{i}") for i in range(layers)])


def make_varied_ir(path: Path, layers: int, seed: int = 0) -> None:
    """Parameter -> ``layers`` pooling layers that all differ -> Result (see the module docstring)."""
    rng = random.Random(seed)
    spatial: tuple[int, ...] = (24, 20)
    specs = []
    for i in range(layers):
        spec, spatial = _varied_spec(rng, f"pool{i}", spatial)
        specs.append(spec)
    _write_chain(path, (1, 8, 24, 20), specs)


def _varied_spec(rng: random.Random, name: str, spatial: tuple[int, ...]) -> tuple[PoolSpec, tuple[int, ...]]:
    """A random pooling spec whose output keeps every spatial dim within 8..40, and that output."""
    while True:
        kernel = tuple(rng.randint(1, 4) for _ in spatial)
        dilations = tuple(rng.choice((1, 1, 2)) for _ in spatial)
        strides = tuple(1 if min(spatial) < 12 else rng.choice((1, 1, 2)) for _ in spatial)
        padding = rng.choice((Padding.EXPLICIT,) * 6 + (Padding.SAME_UPPER, Padding.SAME_LOWER, Padding.VALID))
        pads: tuple[tuple[int, ...], tuple[int, ...]] = ((), ())
        if padding is Padding.EXPLICIT:
            extent = [d * (k - 1) + 1 for k, d in zip(kernel, dilations)]
            pads = (tuple(rng.randrange(e) for e in extent), tuple(rng.randrange(e) for e in extent))
        kind = rng.choice((PoolKind.AVERAGE, PoolKind.MAX))
        extra: dict[str, object] = {}
        if kind is PoolKind.AVERAGE:
            extra["divisor"] = rng.choice((Divisor.EXCLUDE_PAD, Divisor.FULL_KERNEL_IF_PADDED))
        elif rng.random() < 0.5:
            extra["indices"] = Indices(axis=rng.choice((0, 1, 2)), dtype=rng.choice(("int64", "int32")))
        spec = PoolSpec(
            kind, kernel, strides, dilations, *pads, padding=padding, rounding=rng.choice(tuple(Rounding)), name=name, **extra
        )  # type: ignore[arg-type]
        try:
            out = shape.output_spatial(spec, spatial)
        except SpecError:
            continue
        if all(8 <= n <= 40 for n in out):  # type: ignore[operator]
            return spec, out  # type: ignore[return-value]


def _write_chain(path: Path, input_shape: tuple[int, ...], specs: Sequence[PoolSpec]) -> None:
    graph = IRGraph("chain")
    x = graph.parameter("x", input_shape)
    for spec in specs:
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
    body = [
        '<?xml version="1.0"?>\n<net name="mixed" version="11">\n<layers>',
        f'<layer id="0" name="x" type="Parameter" version="opset1"><data shape="1,8,16,16" element_type="f32"/><output>{port.format(id=0)}</output></layer>',
    ]
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


def process_times(commands: dict[str, list[str]], repeat: int) -> dict[str, tuple[float, float]]:
    """Median (wall, CPU) seconds of each whole-process command, the commands run interleaved."""
    runs: dict[str, list[tuple[float, float]]] = {label: [] for label in commands}
    for _ in range(repeat):
        for label, command in commands.items():
            start = time.perf_counter()
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, cwd=ROOT)
            _, _, usage = os.wait4(process.pid, 0)
            runs[label].append((time.perf_counter() - start, usage.ru_utime + usage.ru_stime))
    return {label: (statistics.median(w for w, _ in r), statistics.median(c for _, c in r)) for label, r in runs.items()}


def compare(label: str, path: Path, repeat: int) -> None:
    findings = validate_file(path).findings
    times = process_times(
        {
            "ovpool": [sys.executable, "-c", OVPOOL, "validate", str(path)],
            "openvino": [sys.executable, "-c", OPENVINO, str(path)],
        },
        repeat,
    )
    (ours_wall, ours_cpu), (ov_wall, ov_cpu) = times["ovpool"], times["openvino"]
    print(
        f"{label}: {path.stat().st_size / 1e6:.1f} MB, {len(findings)} findings; whole process, median of {repeat}: "
        f"ovpool validate {ours_wall:.2f} s (CPU {ours_cpu:.2f} s), import openvino + read_model {ov_wall:.2f} s "
        f"(CPU {ov_cpu:.2f} s); ratio {ours_wall / ov_wall:.2f} wall, {ours_cpu / ov_cpu:.2f} CPU"
    )


def compile_checkout() -> None:
    """Compile the checkout's modules to bytecode, as installing the package does (a run with
    ``PYTHONDONTWRITEBYTECODE`` set would otherwise compile ~40 modules in every process)."""
    folders = [str(ROOT / name) for name in ("ovpool", "cli", "transforms") if (ROOT / name).is_dir()]
    subprocess.run([sys.executable, "-m", "compileall", "-q", *folders], check=True, stdout=subprocess.DEVNULL)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--layers", default="1000,20000,100000", help="comma-separated layer counts")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    sizes = sorted({int(n) for n in args.layers.split(",")})
    middle = sizes[len(sizes) // 2]
    compile_checkout()
    with tempfile.TemporaryDirectory() as tmp:
        identical = {n: Path(tmp) / f"identical{n}.xml" for n in sizes}
        for n, path in identical.items():
            make_ir(path, n)
        varied = Path(tmp) / f"varied{middle}.xml"
        make_varied_ir(varied, middle)
        mixed = Path(tmp) / f"mixed{middle}.xml"
        make_mixed_ir(mixed, middle)
        one = Path(tmp) / "one.xml"
        make_ir(one, 1)
        for n, path in identical.items():
            compare(f"{n} layers, all pooling, identical", path, args.repeat)
        compare(f"{middle} layers, all pooling, every layer different", varied, args.repeat)
        compare(f"{middle} layers, 1 in 10 pooling", mixed, args.repeat)
        startup = process_times(
            {
                "--help": [sys.executable, "-c", OVPOOL, "--help"],
                "validate": [sys.executable, "-c", OVPOOL, "validate", str(one)],
            },
            args.repeat,
        )
        print(
            f"start-up, median of {args.repeat}: ovpool --help {startup['--help'][0]:.2f} s, "
            f"ovpool validate (one layer) {startup['validate'][0]:.2f} s"
        )
        timed = [("identical", n, path) for n, path in identical.items()]
        timed += [("varied", middle, varied), ("mixed", middle, mixed)]
        for kind, n, path in timed:
            start = time.perf_counter()
            validate_file(path)
            elapsed = time.perf_counter() - start
            print(f"in process, {kind:9s} {n:>6} layers: {elapsed:.3f} s ({elapsed / n * 1e6:.1f} us/layer)")


if __name__ == "__main__":
    main()
