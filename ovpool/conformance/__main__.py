"""``python -m ovpool.conformance``: ONNX's backend node suite on ovpool's paths and its peers.

``--paths numpy,cpu`` chooses the paths (default every one of ``PATHS``), ``--only REGEX`` the
cases (``re.search`` on the name), ``--share K/N`` one share of them (``in_share``); it prints the
table, ``--list wrong`` (or ``refused``, ``crashed``, ``right``) the cases per outcome, and
``--json FILE`` writes one row per (case, path). ``--write-expected FILE`` writes the expected
outcomes of the ovpool paths (``tests/conformance_expected.json``); with ``--only``, ``--share``
or fewer paths it updates only the (case, path) pairs run.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
import time

from ovpool.conformance import (
    OUTCOMES,
    OVPOOL_PATHS,
    PATHS,
    TIME_LIMIT,
    in_share,
    listing,
    load_cases,
    parse_share,
    run_case,
    write_expected,
)
from ovpool.conformance import table as outcome_table


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ovpool.conformance", description=__doc__.split("\n\n")[0])
    parser.add_argument("--paths", default=",".join(PATHS), help=f"comma-separated, of: {', '.join(PATHS)}")
    parser.add_argument("--only", help="only the cases whose name matches this regular expression")
    parser.add_argument("--share", default="all", help="K/N: the K-th of N disjoint shares of the cases (0 <= K < N)")
    parser.add_argument("--list", action="append", choices=OUTCOMES, default=[], help="list the cases of this outcome")
    parser.add_argument("--json", help="write one JSON row per (case, path) to this file")
    parser.add_argument("--write-expected", metavar="FILE", help="write the ovpool paths' expected outcomes here")
    parser.add_argument("--time-limit", type=float, default=TIME_LIMIT, help="seconds per case and path (0: none)")
    parser.add_argument("--progress", action="store_true", help="print each case's outcomes as it runs")
    args = parser.parse_args(argv)
    paths = [p for p in args.paths.split(",") if p]
    unknown = [p for p in paths if p not in PATHS]
    if unknown:
        parser.error(f"unknown path(s) {', '.join(unknown)}: the paths are {', '.join(PATHS)}")
    try:
        share = parse_share(args.share)
    except ValueError as exc:
        parser.error(str(exc))
    try:
        only = re.compile(args.only or "")
    except re.error as exc:
        parser.error(f"--only '{args.only}': not a regular expression ({exc})")
    every = load_cases()
    cases = [c for c in every if only.search(c.name) and in_share(c.name, share)]
    outcomes = []
    start = time.perf_counter()
    for case in cases:
        found = run_case(case, paths, args.time_limit)
        outcomes.extend(found)
        if args.progress:
            print(case.name, " ".join(f"{o.path}={o.outcome}" for o in found), file=sys.stderr, flush=True)
    seconds = {p: sum(o.seconds for o in outcomes if o.path == p) for p in paths}
    print(
        f"{len(cases)} cases of {len(every)} in {time.perf_counter() - start:.0f} s "
        f"({', '.join(f'{p} {s:.0f} s' for p, s in seconds.items())})"
    )
    print(outcome_table(outcomes, paths))
    for outcome in args.list:
        print(f"\n{outcome}:")
        print(listing(outcomes, outcome))
    if args.json:
        with open(args.json, "w") as file:
            json.dump([o.as_json() for o in outcomes], file, indent=0)
    if args.write_expected:
        partial = bool(args.only) or share is not None or set(paths) < set(OVPOOL_PATHS)
        write_expected(args.write_expected, [o for o in outcomes if o.path in OVPOOL_PATHS], [c.name for c in every], partial)
    return 0


if __name__ == "__main__":
    sys.exit(main())
