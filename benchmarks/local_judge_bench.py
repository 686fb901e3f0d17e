"""The local judge on the example project: what a real llama.cpp server makes of a few cases.

    python benchmarks/local_judge_bench.py [--cases qa-hvb-0126ffdc-branch-hours ...]
        [--model northwind-mini] [--ctx 4096] [--mode per-metric|combined] [--benchmarks]
        [--judge-model PATH.gguf]

Runs ``pytest example_project -m eval --callqa-judge local`` on the chosen cases of one
recorded model (the cache off, so every call goes to the server; by default per-metric with
the Layer 2 benchmarks off, so a QA case is one judge call) and prints, from the run's JSON
report and its own clock:

- wall: the whole pytest process, server start and stop included; judge: the plugin's own
  timing of the judge phase;
- calls, requests (the first of which meets the server's refusal of ``json_schema``),
  retries, re-asks, unusable replies, judge errors;
- prompt and completion tokens as the server counted them, and per second of judge phase;
- the prompt tokens the size guard estimated for the calls it sent, against the real count;
- whether a llama.cpp server process is left afterwards (by the pids seen during the run).

Needs ``pip install -e '.[local]'``. Figures vary with the machine and its load.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

from pytest_callqa.engine.judges.prompts import build_messages
from pytest_callqa.engine.judges.replies import Item
from pytest_callqa.engine.llm.server import SERVER_MODULE
from pytest_callqa.engine.llm.windows import count_tokens

ROOT = Path(__file__).resolve().parents[1]
DEFAULT_CASES = ("qa-hvb-0126ffdc-branch-hours", "qa-hvb-0091a706-balance-no-verification",
                 "qa-sgd-5_00000-transfer-confirmation")


def servers_of(parent: int) -> set[int]:
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            ppid = int((entry / "stat").read_text().rsplit(")", 1)[1].split()[1])
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError, ValueError):
            continue
        if ppid == parent and SERVER_MODULE in cmdline:
            found.add(int(entry.name))
    return found


def alive(pid: int) -> bool:
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return False
    return state != "Z"


def estimated_prompts(report: dict[str, Any], model: str, benchmarks: bool) -> int | None:
    """The guard's estimate of the prompt tokens of the judge calls the run sent, in
    per-metric mode (None in combined mode, whose calls group several metrics)."""
    # The engine loads only for this figure, after the run.
    from pytest_callqa.engine.evaluate import prepare
    from pytest_callqa.engine.loading import load_cases

    cases = {c.id: c for c in load_cases(ROOT / "example_project" / "cases")}
    total = 0
    for entry in report["cases"]:
        if entry["model"] != model:
            continue
        case = cases[entry["case_id"]]
        path = ROOT / "example_project" / "outputs" / model / f"{case.id}.json"
        output = json.loads(path.read_text(encoding="utf-8"))
        for request in prepare(case, output, model=model, benchmarks=benchmarks).requests:
            scored = entry["metrics"].get(request.metric, {})
            if scored.get("scored"):
                messages = build_messages([Item(request.metric, request)])
                total += count_tokens(messages, estimate=True)[0]
    return total


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--cases", nargs="+", default=list(DEFAULT_CASES))
    parser.add_argument("--model", default="northwind-mini")
    parser.add_argument("--ctx", type=int, default=4096)
    parser.add_argument("--mode", default="per-metric", choices=("per-metric", "combined"))
    parser.add_argument("--judge-model", default=None)
    parser.add_argument("--benchmarks", action="store_true",
                        help="score the Layer 2 benchmarks too (more judge-scored metrics)")
    args = parser.parse_args()
    with tempfile.TemporaryDirectory() as tmp:
        report_path = Path(tmp) / "report.json"
        selected = " or ".join(args.cases)
        command = [sys.executable, "-m", "pytest", "example_project", "-m", "eval", "-q",
                   "-p", "no:cacheprovider", "-p", "no:xdist", "--callqa-judge", "local",
                   "--callqa-judge-mode", args.mode,
                   "--callqa-benchmarks" if args.benchmarks else "--no-callqa-benchmarks",
                   "--callqa-local-ctx", str(args.ctx), "--callqa-cache", "off",
                   "--callqa-report", str(report_path), "-k", f"{args.model} and ({selected})"]
        if args.judge_model:
            command += ["--callqa-judge-model", args.judge_model]
        started = time.monotonic()
        proc = subprocess.Popen(command, cwd=ROOT, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL)
        seen: set[int] = set()

        def watch() -> None:
            while proc.poll() is None:
                seen.update(servers_of(proc.pid))
                time.sleep(0.2)

        watcher = threading.Thread(target=watch, daemon=True)
        watcher.start()
        code = proc.wait()
        wall = time.monotonic() - started
        watcher.join(timeout=5)
        report = json.loads(report_path.read_text(encoding="utf-8"))
    usage = report["run"]["judge_usage"]
    judge_s = usage["per_process"]["resolve_s"]
    estimate = (estimated_prompts(report, args.model, args.benchmarks)
                if args.mode == "per-metric" else None)
    print(f"command: {' '.join(command[1:])}")
    print(f"exit status {code}; judge {usage['model']} ({args.mode}, context {args.ctx})")
    print(f"wall {wall:.1f} s, judge phase {judge_s:.1f} s")
    print(f"calls {usage['calls']:g}, requests {usage['requests']}, retries "
          f"{usage['retries']}, re-asks {usage['reasks']}, unusable {usage['unusable']}, "
          f"judge errors {report['judge_errors']['verdicts']}")
    print(f"tokens: {usage['prompt_tokens']:.0f} prompt + {usage['completion_tokens']:.0f} "
          f"completion; {usage['prompt_tokens'] / judge_s:.1f} prompt tokens per second of "
          "judge phase")
    if estimate is not None:
        print(f"size guard's estimate of the prompts sent: {estimate} tokens for "
              f"{usage['prompt_tokens']:.0f} counted by the server")
    left = sorted(pid for pid in seen if alive(pid))
    print(f"server processes seen {sorted(seen)}; left running: {left or 'none'}")
    return 0 if not left else 1


if __name__ == "__main__":
    raise SystemExit(main())
