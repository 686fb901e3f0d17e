"""When each judge request of a cold run reaches the server, with and without xdist: where a
change to start-up or to the up-front batch shows first.

    python benchmarks/first_requests.py [--runs 3] [--cases 200] [--modes one n2]

The throughput benchmark (``judge_throughput.py``) gives each run's wall and phases; this one
runs the fake OpenAI-compatible server in its own process too, but reads back the arrival
time of every request. For each cold run it prints the wall, when the first and the 16th
request arrived and when the last one did (seconds from the start of the ``pytest``
command), the mean slot cycle (the time between a request and the one sent in its slot 16
requests later: the latency plus what the client spends per request), and when each
process had collected and ended. ``one`` is one process, ``n2`` is ``-n 2``; the modes run in
turn, each cold run from a cache directory of its own.
"""

from __future__ import annotations

import argparse
import statistics
import subprocess
import tempfile
import time
from pathlib import Path

from judge_throughput import (
    child_env,
    control,
    fake_server,
    pytest_command,
    take_marks,
    write_project,
)

MODES = {"one": ["-p", "no:xdist"], "n2": ["-n", "2"]}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2)
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--modes", nargs="+", choices=sorted(MODES), default=["one", "n2"])
    parser.add_argument("--as-is", action="store_true", help=argparse.SUPPRESS)
    args = parser.parse_args()
    with fake_server(args.latency, lifetime=1800) as base_url, \
            tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        write_project(root, args.cases)
        # Untimed: bytecode caches written, with and without xdist.
        for mode in args.modes:
            subprocess.run(pytest_command(args, base_url, Path(tmp) / f"warm-{mode}",
                                          MODES[mode]), cwd=root, env=child_env(args, root),
                           capture_output=True, check=True)
        take_marks(root)
        print(f"{'mode':<5} {'wall':>6} {'first':>6} {'16th':>6} {'last':>6} "
              f"{'cycle ms':>8}  processes: collected / ended")
        for repetition in range(args.runs):
            for mode in args.modes:
                control(base_url, "reset")
                cache = Path(tmp) / f"cache-{mode}-{repetition}"
                started, clock = time.time(), time.monotonic()
                done = subprocess.run(pytest_command(args, base_url, cache, MODES[mode]),
                                      cwd=root, env=child_env(args, root), capture_output=True,
                                      text=True)
                wall = time.time() - started
                if done.returncode != 0:
                    raise RuntimeError(f"pytest failed:\n{done.stdout}\n{done.stderr}")
                arrivals = sorted(t - clock for t in
                                  control(base_url, "arrivals")["monotonic"])
                cycles = [b - a for a, b in zip(arrivals, arrivals[args.concurrency:],
                                                strict=False)]
                marks = take_marks(root)
                processes = "  ".join(
                    f"{name} {m['collected'] - started:.3f} / {m['end'] - started:.3f}"
                    for name, m in sorted(marks.items()))
                print(f"{mode:<5} {wall:6.3f} {arrivals[0]:6.3f} "
                      f"{arrivals[min(15, len(arrivals) - 1)]:6.3f} {arrivals[-1]:6.3f} "
                      f"{statistics.mean(cycles) * 1000 if cycles else 0:8.1f}  "
                      f"{processes}")


if __name__ == "__main__":
    main()
