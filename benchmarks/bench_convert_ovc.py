"""``ovpool convert MODEL.onnx`` against ``ovc MODEL.onnx`` on the real models, whole processes.

Run: ``python benchmarks/bench_convert_ovc.py [--repeat 5] [--telemetry off,on]`` (the models of
``tests/ops/real_models.py``, fetched by ``python tests/fetch_real_models.py``; a model whose file
is missing is skipped). Each model is converted by ``ovpool convert MODEL --output-dir DIR
--force`` and by ``ovc MODEL --output_model DIR/MODEL.xml`` (this Python's ovc script, not a
version manager's shim: ``ovc_script``; ovc replaces its outputs; it also
compresses weights to f16, which ovpool does with ``--compress-to-fp16`` only), the two run in
turn ``--repeat`` times, and the median wall and CPU (user + system) time of each is printed with
their ratio (the issue's goal: 1.0 or less). With telemetry off both run with ``CI=true``, which
turns OpenVINO's telemetry off; with telemetry on, with ``CI`` removed from the environment (the
opt-out file of ``opt_in_out``, if any, still applies). The checkout's bytecode is compiled first,
as installing the package does. A model both refuse (silero's If, ``OpenVINO could not convert``)
is timed all the same; one that only ovc fails (the SLANet table model's Loop, which ovpool converts)
is printed but left out of the median: ovc's failure is no conversion to compare with.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path[:0] = [str(ROOT), str(ROOT / "tests"), str(ROOT / "tests" / "ops")]

from real_models import MODELS  # noqa: E402

OVPOOL = "import sys; from ovpool.cli.app import main; sys.argv = ['ovpool'] + sys.argv[1:]; main()"


def medians(commands: dict[str, list[str]], env: dict[str, str], repeat: int) -> dict[str, tuple[float, float, bool]]:
    """Median (wall, CPU) seconds of each whole-process command, the commands run in turn, and
    whether it succeeded (exit 0) every time."""
    runs: dict[str, list[tuple[float, float, int]]] = {label: [] for label in commands}
    for _ in range(repeat):
        for label, command in commands.items():
            start = time.perf_counter()
            process = subprocess.Popen(command, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, env=env, cwd=ROOT)
            _, status, usage = os.wait4(process.pid, 0)
            runs[label].append((time.perf_counter() - start, usage.ru_utime + usage.ru_stime, status))
    return {
        label: (statistics.median(w for w, _, _ in r), statistics.median(c for _, c, _ in r), not any(s for _, _, s in r))
        for label, r in runs.items()
    }


def ovc_script() -> str | None:
    """The ``ovc`` console script of this Python's environment, run as it is (its ``#!`` line names
    this Python), else the one on PATH. A version manager's shim on PATH (pyenv's ``ovc`` is a bash
    script that runs ``pyenv exec``) adds ~50 ms to each run: timing it would favour ovpool, which
    runs as ``python -c``."""
    script = Path(sysconfig.get_path("scripts")) / "ovc"
    return str(script) if script.is_file() else shutil.which("ovc")


def environment(telemetry: str) -> dict[str, str]:
    """This process's environment with OpenVINO's telemetry ``off`` (``CI=true``) or ``on``."""
    env = {k: v for k, v in os.environ.items() if k != "CI"}
    if telemetry == "off":
        env["CI"] = "true"
    return env


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--repeat", type=int, default=5)
    parser.add_argument("--telemetry", default="off,on", help="off, on, or both (off,on)")
    parser.add_argument("--only", default="", metavar="TEXT", help="only the models whose file name holds TEXT")
    args = parser.parse_args()
    ovc = ovc_script()
    if ovc is None:
        sys.exit("bench_convert_ovc: no ovc next to this Python nor on PATH (it comes with the openvino package)")
    subprocess.run(
        [sys.executable, "-m", "compileall", "-q", "ovpool", "cli", "transforms"], cwd=ROOT, check=True, stdout=subprocess.DEVNULL
    )
    files = sorted({model.path for model in MODELS if model.path.is_file() and args.only in model.path.name})
    if not files:
        sys.exit("bench_convert_ovc: no real models; run python tests/fetch_real_models.py")
    print(f"median of {args.repeat} whole processes each; ratio = ovpool / ovc ({ovc})")
    for telemetry in args.telemetry.split(","):
        env = environment(telemetry)
        ratios = []
        for path in files:
            with tempfile.TemporaryDirectory() as tmp:
                times = medians(
                    {
                        "ovpool": [sys.executable, "-c", OVPOOL, "convert", str(path), "--output-dir", tmp, "--force"],
                        "ovc": [ovc, str(path), "--output_model", str(Path(tmp) / f"ovc-{path.stem}.xml")],
                    },
                    env,
                    args.repeat,
                )
            (ours_wall, ours_cpu, ours_ok), (ovc_wall, ovc_cpu, ovc_ok) = times["ovpool"], times["ovc"]
            outcome = "" if ours_ok == ovc_ok else f" ({'ovc' if ours_ok else 'ovpool'} fails: not in the median)"
            if not outcome:
                ratios.append(ours_wall / ovc_wall)
            print(
                f"telemetry {telemetry:3s} {path.name:40s} ovpool {ours_wall:5.2f} s (CPU {ours_cpu:5.2f}), "
                f"ovc {ovc_wall:5.2f} s (CPU {ovc_cpu:5.2f}); ratio {ours_wall / ovc_wall:.2f} wall, {ours_cpu / ovc_cpu:.2f} CPU"
                f"{outcome}"
            )
        print(
            f"telemetry {telemetry}: median ratio {statistics.median(ratios):.2f} wall over {len(ratios)} models "
            f"(range {min(ratios):.2f}-{max(ratios):.2f})"
        )


if __name__ == "__main__":
    main()
