"""Judge-bound speed: N cases x 1 judge call against a fake server of fixed latency.

    python benchmarks/judge_throughput.py [--cases 200] [--latency 0.2] [--concurrency 16]
                                          [--runs 3] [--only pytest|engine] [--as-is]

The fake OpenAI-compatible server runs in its own process (a real judge is remote and does
not share this interpreter's CPU). Every scenario scores ``--cases`` QA outputs with the LLM
judge in per-metric mode and the Layer 2 benchmarks off, which is exactly one judge request
per case (``evidence_backed_reasoning``), and prints:

- wall: seconds (see below for what each scenario's wall covers);
- requests / unique: what the server received, and how many distinct request bodies;
- peak: the most requests the server had in flight at once;
- ratio: wall ÷ (requests × latency ÷ concurrency); 1.0 is the ideal.

**pytest scenarios** (the plugin, end to end): a generated project with ``--cases`` golden
cases and recorded outputs, run as ``pytest --callqa-judge openai --callqa-judge-mode
per-metric --no-callqa-benchmarks`` without xdist and with ``-n 2``, each with a cold cache
and then warm (which must send nothing), ``--runs`` times in turn (each cold run from a
cache directory of its own). Two walls: the whole ``pytest`` process (start-up,
imports, collection, xdist workers, the tests, the scorecard) and the judge phase, which the
plugin measures itself (``run.judge_usage.per_process.resolve_s`` of the JSON report: the
longest up-front judge batch of any process). Two ratios, one per wall. Then a bare
``pytest`` of as many trivial tests (with and without ``-n 2``, ``--runs`` times), the
medians of every scenario and the issue's targets checked against them (the same statistic
for callqa and for bare pytest: one noisy run decides nothing), and where the time of the
median run of each scenario goes: a conftest in
the project marks the phases of every process (start-up, collection and the case catalogue,
the time to the first test, the tests, the scorecard and report, exit, and when each process began
to exit). An xdist scenario whose slowest run is over 1.1 x its median has that run's
timeline printed too. pytest's temporary directories go to a folder of the benchmark's own
(see ``child_env``). The measured processes use bytecode caches, after untimed runs (one
process, then ``-n 2``) that write them (``--as-is`` keeps this shell's environment,
``PYTHONDONTWRITEBYTECODE`` included).

**engine scenarios** (``evaluate_many`` with no pytest): one process, cold then warm; two
processes sharing one cache directory, each with half of the cases, cold then warm (what
``-n 2`` workers do with their shares); and two processes that both evaluate every case —
the worst case for exactly-once. Wall is the ``evaluate_many`` call; for worker processes,
from the moment all are ready until the last one is done.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
import urllib.request
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.evaluate import evaluate_many, prepare
from pytest_callqa.engine.judges.llm import OpenAIJudge
from pytest_callqa.engine.llm.cache import JudgeCache

MODEL = "gpt-4o-mini"
API_KEY = "sk-callqa-benchmark-not-a-real-key"


def build_items(count: int) -> list[tuple[GoldenCase, Any, str]]:
    """``count`` distinct QA cases, each with a valid output of model ``candidate``."""
    items = []
    for i in range(count):
        case = GoldenCase.model_validate({
            "id": f"bench-qa-{i:04d}",
            "task": "qa",
            "transcript": [
                {"speaker": "agent", "text": f"Thank you for calling, this is desk {i}.",
                 "start": 0},
                {"speaker": "customer", "text": f"My order {1000 + i} arrived damaged.",
                 "start": 4},
                {"speaker": "agent", "text": "I am sorry, I will send a replacement today.",
                 "start": 9},
            ],
            "config": {"questions": [
                {"question_id": "greeting", "text": "Did the agent greet?", "type": "PASS_FAIL",
                 "max_score": 1},
                {"question_id": "resolution", "text": "Was it resolved?", "type": "SCORE",
                 "max_score": 5},
            ]},
            "expected_outcome": {"questions": [
                {"question_id": "greeting", "score": 1, "max_score": 1, "type": "PASS_FAIL",
                 "reason": "Agent said 'Thank you for calling' at 00:00."},
                {"question_id": "resolution", "score": 5, "max_score": 5, "type": "SCORE",
                 "reason": "Replacement promised at 00:09."},
            ]},
        })
        output = {"questions": [
            {"question_id": "greeting", "score": 1, "max_score": 1, "type": "PASS_FAIL",
             "reason": 'Agent said "Thank you for calling" at 00:00.'},
            {"question_id": "resolution", "score": 4, "max_score": 5, "type": "SCORE",
             "reason": 'Agent said "I will send a replacement today" at 00:09.'},
        ]}
        items.append((case, output, "candidate"))
    return items


def make_judge(base_url: str, cache_dir: str, concurrency: int) -> OpenAIJudge:
    return OpenAIJudge(MODEL, base_url=base_url, api_key=API_KEY, mode="per-metric",
                       concurrency=concurrency, cache=JudgeCache(cache_dir, "rw"),
                       timeout=30.0)


def control(base_url: str, action: str) -> dict[str, Any]:
    root = base_url.removesuffix("/v1")
    method = "POST" if action == "reset" else "GET"
    request = urllib.request.Request(f"{root}/_callqa/{action}", method=method,
                                     data=b"" if method == "POST" else None)
    with urllib.request.urlopen(request, timeout=10) as response:
        data: dict[str, Any] = json.loads(response.read())
        return data



@contextmanager
def fake_server(latency: float, lifetime: int = 900) -> Iterator[str]:
    """The fake OpenAI-compatible server in its own process, for as long as the block runs:
    its base URL."""
    server = subprocess.Popen(
        [sys.executable, "-m", "pytest_callqa.testing.fake_openai", "--latency", str(latency),
         "--max-lifetime", str(lifetime)], stdout=subprocess.PIPE, text=True)
    try:
        assert server.stdout is not None
        yield server.stdout.readline().strip()
    finally:
        server.terminate()
        server.wait(timeout=30)

# --- worker processes -------------------------------------------------------------------


def worker(args: argparse.Namespace) -> None:
    """Evaluate a shard once the parent says go; report wall time and verdict counts."""
    items = build_items(args.cases)
    if args.shard != "all":
        index, total = (int(x) for x in args.shard.split("/"))
        items = items[index::total]
    judge = make_judge(args.base_url, args.cache_dir, args.concurrency)
    # What an xdist worker has done before its first test runs: imports, collection.
    prepare(items[0][0], items[0][1])
    print("ready", flush=True)
    sys.stdin.readline()
    start = time.perf_counter()
    results = evaluate_many(items, judge=judge, benchmarks=False)
    wall = time.perf_counter() - start
    flagged = sum(1 for r in results for rec in r.judge_records if rec["flagged"])
    print(json.dumps({"wall": wall, "results": len(results), "flagged": flagged,
                      "usage": judge.usage_summary()}), flush=True)


def run_workers(args: argparse.Namespace, base_url: str, cache_dir: str,
                shards: list[str]) -> tuple[float, list[dict[str, Any]]]:
    procs = [
        subprocess.Popen(
            [sys.executable, __file__, "--worker", "--shard", shard, "--cases", str(args.cases),
             "--concurrency", str(args.concurrency), "--base-url", base_url,
             "--cache-dir", cache_dir],
            stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True,
        )
        for shard in shards
    ]
    try:
        for proc in procs:
            assert proc.stdout is not None
            line = proc.stdout.readline().strip()
            if line != "ready":
                raise RuntimeError(f"worker failed to start: {line!r}")
        start = time.perf_counter()
        for proc in procs:
            assert proc.stdin is not None
            proc.stdin.write("go\n")
            proc.stdin.flush()
        reports = []
        for proc in procs:
            assert proc.stdout is not None
            reports.append(json.loads(proc.stdout.readline()))
        wall = time.perf_counter() - start
    finally:
        for proc in procs:
            proc.wait(timeout=120)
    return wall, reports


# --- pytest runs --------------------------------------------------------------------------

PYPROJECT = """\
[tool.pytest.ini_options]
addopts = "-p no:cacheprovider -p no:randomly"
callqa_cases = "cases"
callqa_outputs = "outputs"
callqa_embeddings = "tfidf"
"""

TESTS = """\
def test_judged(callqa_result):
    assert callqa_result.metric("evidence_backed_reasoning").scored
"""

# Marks the moments that split a pytest process's wall time (seconds since the epoch, the
# benchmark's own clock), one file per process. Its hooks run last, or around every other
# implementation, so each phase includes the plugin's own work in it.
TIMING_CONFTEST = '''
import atexit
import json
import os
import time
from pathlib import Path

import pytest

from pytest_callqa.run.catalog import Catalog

MARKS = {}
_files = Catalog.files


def _timed_files(self):
    # The case catalogue is parsed on the first call, during collection.
    if self._files is not None:
        return _files(self)
    started = time.time()
    found = _files(self)
    MARKS["catalogue_s"] = time.time() - started
    return found


Catalog.files = _timed_files


@pytest.hookimpl(trylast=True)
def pytest_configure(config):
    MARKS["configured"] = time.time()


@pytest.hookimpl(wrapper=True)
def pytest_collection(session):
    try:
        return (yield)
    finally:
        MARKS["collected"] = time.time()


@pytest.hookimpl(wrapper=True, tryfirst=True)
def pytest_runtestloop(session):
    # Around the plugin's own wrapper, which sends the judge batch before the first test.
    MARKS["loop"] = time.time()
    try:
        return (yield)
    finally:
        MARKS["tests_done"] = time.time()


def pytest_runtest_setup(item):
    MARKS.setdefault("first_test", time.time())


@pytest.hookimpl(wrapper=True)
def pytest_sessionfinish(session):
    MARKS["finishing"] = time.time()
    try:
        return (yield)
    finally:
        MARKS["finished"] = time.time()


@pytest.hookimpl(wrapper=True)
def pytest_terminal_summary(terminalreporter):
    MARKS["summary"] = time.time()
    try:
        return (yield)
    finally:
        MARKS["summarised"] = time.time()


@pytest.hookimpl(trylast=True)
def pytest_unconfigure(config):
    MARKS["end"] = time.time()
    name = os.environ.get("PYTEST_XDIST_WORKER", "main")
    path = Path(config.rootpath, f"timing-{name}.json")
    path.write_text(json.dumps(MARKS))

    def exiting():
        # Registered after the plugin's exit handler, so run before it: the moment this
        # process starts to exit (an xdist worker: once its controller has told it to).
        MARKS["exiting"] = time.time()
        path.write_text(json.dumps(MARKS))

    atexit.register(exiting)
'''


def write_project(root: Path, count: int) -> None:
    """``count`` golden cases, recorded outputs of model ``candidate``, one test, and the
    conftest that times the phases of each process."""
    (root / "pyproject.toml").write_text(PYPROJECT, encoding="utf-8")
    (root / "test_judge.py").write_text(TESTS, encoding="utf-8")
    (root / "conftest.py").write_text(TIMING_CONFTEST, encoding="utf-8")
    for folder in ("cases", "outputs/candidate"):
        (root / folder).mkdir(parents=True)
    for case, output, model in build_items(count):
        data = case.model_dump(mode="json", exclude_none=True)
        (root / "cases" / f"{case.id}.json").write_text(json.dumps(data), encoding="utf-8")
        (root / "outputs" / model / f"{case.id}.json").write_text(json.dumps(output),
                                                                   encoding="utf-8")


def write_bare_project(root: Path, count: int) -> None:
    """``count`` trivial tests and nothing else: what pytest itself costs."""
    root.mkdir()
    (root / "pyproject.toml").write_text(
        '[tool.pytest.ini_options]\naddopts = "-p no:cacheprovider -p no:randomly"\n',
        encoding="utf-8")
    (root / "test_bare.py").write_text(
        "import pytest\n\n\n"
        f"@pytest.mark.parametrize('i', range({count}))\n"
        "def test_trivial(i):\n    assert i >= 0\n", encoding="utf-8")


def child_env(args: argparse.Namespace, project: Path) -> dict[str, str]:
    """The environment of the measured processes: bytecode caches on, as an installed
    package has them (pip compiles its modules; an editable tree writes ``__pycache__`` on
    first import), unless ``--as-is``. A ``PYTHONDONTWRITEBYTECODE`` in this shell would
    have every process compile the plugin again, and pytest rewrite it again.

    pytest's temporary directories go under a folder beside ``project`` (pytest's
    ``PYTEST_DEBUG_TEMPROOT``). An xdist controller makes a numbered base directory for its
    workers and, at the end of its session, deletes all but the last three of the machine's
    (``/tmp/pytest-of-<user>/pytest-<n>``): right after a test suite that left a large one,
    a ``-n 2`` run spent 0.7 s of its end deleting it (found with the marks below), which
    measures what ran before, not this run."""
    env = {**os.environ, "OPENAI_API_KEY": API_KEY}
    if not args.as_is:
        env.pop("PYTHONDONTWRITEBYTECODE", None)
    temproot = project.parent / "pytest-temproot"
    temproot.mkdir(exist_ok=True)
    env["PYTEST_DEBUG_TEMPROOT"] = str(temproot)
    return env


def pytest_command(args: argparse.Namespace, base_url: str, cache_dir: Path,
                   xdist: list[str]) -> list[str]:
    return [
        sys.executable, "-m", "pytest", "-q", *xdist, "--callqa-judge", "openai",
        "--callqa-judge-base-url", base_url, "--callqa-judge-mode", "per-metric",
        "--no-callqa-benchmarks", "--callqa-concurrency", str(args.concurrency),
        "--callqa-cache-dir", str(cache_dir), "--callqa-report", "report.json",
    ]


def timed_run(args: argparse.Namespace, command: list[str],
              root: Path) -> tuple[float, float, str]:
    """One process: (wall seconds, its start on the epoch clock, its summary line)."""
    started = time.time()
    begin = time.perf_counter()
    done = subprocess.run(command, cwd=root, env=child_env(args, root), capture_output=True,
                          text=True, timeout=600)
    wall = time.perf_counter() - begin
    if done.returncode != 0:
        raise RuntimeError(f"pytest failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return wall, started, done.stdout.strip().splitlines()[-1]


def take_marks(root: Path) -> dict[str, dict[str, float]]:
    """Each process's marks (``main``: the only process or the xdist controller; ``gw0``,
    ``gw1``...: the workers), removed once read."""
    found = {}
    for path in sorted(root.glob("timing-*.json")):
        found[path.stem.removeprefix("timing-")] = json.loads(path.read_text(encoding="utf-8"))
        path.unlink()
    return found


TESTS_PHASE = "{tests} tests (the judge batch goes on beside them)"


def breakdown(marks: dict[str, float], started: float, wall: float,
              tests: int) -> list[tuple[str, float]]:
    """Where the wall time of a run in one process went, phase by phase, in seconds."""
    first = marks.get("first_test", marks["tests_done"])
    phases = [
        ("start-up: interpreter, pytest, plugins", marks["configured"] - started),
        ("collection: engine import, case catalogue, parametrize",
         marks["collected"] - marks["configured"]),
        ("  of which the case catalogue (read and validated)", marks.get("catalogue_s", 0.0)),
        ("before the first test: outputs, prepare, judge start", first - marks["loop"]),
        (TESTS_PHASE.format(tests=tests), marks["tests_done"] - first),
        ("scorecard and JSON report (sessionfinish)", marks["finished"] - marks["finishing"]),
        ("terminal summary (the rendered scorecard)", marks["summarised"] - marks["summary"]),
        ("exit: unconfigure, interpreter shutdown", started + wall - marks["end"]),
    ]
    counted = sum(seconds for name, seconds in phases if not name.startswith("  "))
    phases.append(("between those (pytest's own hooks)", wall - counted))
    return phases


# A run this much slower than its scenario's median has its timeline printed too.
OUTLIER = 1.1


def print_timeline(title: str, processes: dict[str, dict[str, float]],
                   started: float) -> None:
    """When each process of an xdist run reached each phase, from the start of the
    command; ``exiting`` is when it began to exit (a worker: once the controller let it)."""
    print(f"\n{title}: seconds from the start of the command")
    print(f"  {'process':<10} {'imported':>9} {'collected':>10} {'first test':>11} "
          f"{'tests done':>11} {'ended':>7} {'exiting':>8}")
    for process, got in sorted(processes.items()):
        # The controller collects nothing and runs no test itself.
        cells = [got.get(m) for m in ("configured", "collected", "first_test",
                                      "tests_done", "end", "exiting")]
        text = " ".join(f"{'—' if v is None else f'{v - started:.3f}':>{w}}"
                        for v, w in zip(cells, (9, 10, 11, 11, 7, 8), strict=True))
        print(f"  {'controller' if process == 'main' else process:<10} {text}")


def pytest_scenarios(args: argparse.Namespace, base_url: str) -> dict[str, Any]:
    print(f"\npytest runs ({args.cases} tests; ratio of the whole run, and of the judge "
          f"phase the plugin measured), {args.runs} of each, in turn")
    print(f"{'scenario':<26} {'wall s':>7} {'phase s':>7} {'requests':>9} {'unique':>7} "
          f"{'peak':>5} {'ideal s':>7} {'ratio':>6} {'phase ratio':>11}")
    every: dict[str, list[float]] = {}
    served: dict[str, list[dict[str, int]]] = {}
    runs: dict[str, list[tuple[dict[str, dict[str, float]], float, float]]] = {}
    with tempfile.TemporaryDirectory() as tmp:
        root = Path(tmp) / "project"
        root.mkdir()
        write_project(root, args.cases)
        bare = Path(tmp) / "bare"
        write_bare_project(bare, args.cases)
        # Untimed, with and without xdist: the bytecode caches (and pytest's rewritten
        # plugin modules) are written, those only xdist's processes import included.
        for warm_up in (["-p", "no:xdist"], ["-n", "2"]):
            timed_run(args, pytest_command(args, base_url, Path(tmp) / f"warm-up{warm_up[-1]}",
                                           warm_up), root)
            take_marks(root)
        # Each repetition runs every scenario once, so a drift of the machine's speed
        # reaches them all alike; each cold run starts from a cache directory of its own.
        for repetition in range(args.runs):
            for label, xdist in (("no xdist", ["-p", "no:xdist"]), ("-n 2", ["-n", "2"])):
                cache_dir = Path(tmp) / f"cache-{xdist[-1]}-{repetition}"
                for temperature in ("cold", "warm"):
                    control(base_url, "reset")
                    command = pytest_command(args, base_url, cache_dir, xdist)
                    wall, started, summary = timed_run(args, command, root)
                    report = json.loads((root / "report.json").read_text(encoding="utf-8"))
                    phase = report["run"]["judge_usage"]["per_process"]["resolve_s"]
                    name = f"{label}, {temperature} cache"
                    stats = control(base_url, "stats")
                    print(row(name, wall, stats, args, phase=phase,
                              width=26) + f"   ({summary})")
                    served.setdefault(name, []).append(
                        {k: stats[k] for k in ("requests", "unique_requests", "peak_in_flight")})
                    every.setdefault(name, []).append(wall)
                    runs.setdefault(name, []).append((take_marks(root), started, wall))
        for label, xdist in (("bare pytest", ["-p", "no:xdist"]),
                             ("bare pytest -n 2", ["-n", "2"])):
            command = [sys.executable, "-m", "pytest", "-q", *xdist]
            timed_run(args, command, bare)  # untimed, as above
            every[label] = [timed_run(args, command, bare)[0] for _ in range(args.runs)]
    walls = {name: statistics.median(seen) for name, seen in every.items()}
    print(f"\nmedians of {args.runs} runs:")
    for name, seen in every.items():
        print(f"  {name:<26} {walls[name]:7.3f} s   ({' / '.join(f'{w:.3f}' for w in seen)})")
    print(f"bare pytest, {args.cases} trivial tests: xdist's own start-up "
          f"+{walls['bare pytest -n 2'] - walls['bare pytest']:.3f} s")
    floor = args.cases * args.latency / args.concurrency
    print("targets (issue #13), on the medians:")
    targets = []
    for text, value, bound in (
        (f"cold, no xdist <= floor + 1.5 s = {floor + 1.5:.2f} s",
         walls["no xdist, cold cache"], floor + 1.5),
        ("cold, -n 2 / no xdist <= 1.05",
         walls["-n 2, cold cache"] / walls["no xdist, cold cache"], 1.05),
        ("warm, no xdist <= 1.5 s", walls["no xdist, warm cache"], 1.5),
        ("warm, no xdist / bare pytest <= 2",
         walls["no xdist, warm cache"] / walls["bare pytest"], 2.0),
        ("warm, -n 2 / bare pytest -n 2 <= 2",
         walls["-n 2, warm cache"] / walls["bare pytest -n 2"], 2.0),
    ):
        print(f"  {text:<46} {value:7.3f}  {'met' if value <= bound else 'NOT met'}")
        targets.append({"target": text, "value": value, "bound": bound})
    for name, seen_runs in runs.items():
        # The run whose wall is the median's, to say where that time went.
        processes, started, wall = min(seen_runs, key=lambda r: abs(r[2] - walls[name]))
        if "gw0" not in processes:
            print(f"\nwhere the time goes: {name}, wall {wall:.3f} s")
            phases = breakdown(processes["main"], started, wall, args.cases)
            for phase, seconds in phases:
                print(f"  {phase:<56} {seconds:6.3f} s")
            per_test = dict(phases)[TESTS_PHASE.format(tests=args.cases)] / args.cases * 1000
            print(f"  {'per test':<56} {per_test:6.2f} ms")
            continue
        print_timeline(f"{name}, wall {wall:.3f} s", processes, started)
        slowest = max(seen_runs, key=lambda r: r[2])
        if slowest[2] > OUTLIER * walls[name]:
            print_timeline(f"{name}, its slowest run ({slowest[2]:.3f} s, over {OUTLIER} x "
                           "the median)", slowest[0], slowest[1])
    return {"medians_s": walls, "targets": targets, "served": served}


# --- main -------------------------------------------------------------------------------


def row(name: str, wall: float, stats: dict[str, Any], args: argparse.Namespace, *,
        phase: float | None = None, width: int = 38) -> str:
    requests = stats["requests"]
    ideal = requests * args.latency / args.concurrency
    ratio = f"{wall / ideal:6.3f}" if ideal else "   n/a"
    text = f"{name:<{width}} {wall:7.3f}"
    if phase is not None:
        text += f" {phase:7.3f}"
    text += (f" {requests:9d} {stats['unique_requests']:7d} {stats['peak_in_flight']:5d} "
             f"{ideal:7.3f} {ratio}")
    if phase is not None:
        text += f" {phase / ideal:11.3f}" if ideal else f" {'n/a':>11}"
    return text


def engine_scenarios(args: argparse.Namespace, base_url: str) -> dict[str, Any]:
    print("\nengine only (evaluate_many, no pytest)")
    print(f"{'scenario':<38} {'wall s':>7} {'requests':>9} {'unique':>7} {'peak':>5} "
          f"{'ideal s':>7} {'ratio':>6}")
    items = build_items(args.cases)
    served: dict[str, dict[str, Any]] = {}
    with tempfile.TemporaryDirectory() as one, tempfile.TemporaryDirectory() as halves, \
            tempfile.TemporaryDirectory() as both:
        # Imports and the task registry, as at the start of a pytest session.
        prepare(items[0][0], items[0][1])
        for label in ("1 process, cold cache", "1 process, warm cache"):
            judge = make_judge(base_url, one, args.concurrency)
            control(base_url, "reset")
            start = time.perf_counter()
            results = evaluate_many(items, judge=judge, benchmarks=False)
            wall = time.perf_counter() - start
            assert len(results) == args.cases
            stats = control(base_url, "stats")
            print(row(label, wall, stats, args))
            served[label] = {"wall_s": wall, **stats}
        for label, cache_dir, shards in (
            ("2 processes (halves), cold cache", halves, ["0/2", "1/2"]),
            ("2 processes (halves), warm cache", halves, ["0/2", "1/2"]),
            ("2 processes (both all cases), cold", both, ["all", "all"]),
        ):
            control(base_url, "reset")
            wall, reports = run_workers(args, base_url, cache_dir, shards)
            assert sum(r["results"] for r in reports) == args.cases * (
                2 if shards == ["all", "all"] else 1)
            stats = control(base_url, "stats")
            print(row(label, wall, stats, args))
            served[label] = {"wall_s": wall, **stats}
    return served


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--cases", type=int, default=200)
    parser.add_argument("--latency", type=float, default=0.2, help="seconds per request")
    parser.add_argument("--concurrency", type=int, default=16)
    parser.add_argument("--runs", type=int, default=3,
                        help="runs of each pytest scenario (and of bare pytest); the targets "
                             "are checked on their medians")
    parser.add_argument("--only", choices=("pytest", "engine"), default=None,
                        help="run only the pytest or only the engine scenarios")
    parser.add_argument("--as-is", action="store_true",
                        help="run pytest in this shell's environment as it is (by default "
                             "PYTHONDONTWRITEBYTECODE is dropped: bytecode caches are used)")
    parser.add_argument("--json", type=Path, metavar="PATH",
                        help="also write the medians, the targets and what the server saw as "
                             "JSON (benchmarks/speed.py reads them)")
    parser.add_argument("--worker", action="store_true", help=argparse.SUPPRESS)
    parser.add_argument("--shard", default="all", help=argparse.SUPPRESS)
    parser.add_argument("--base-url", help=argparse.SUPPRESS)
    parser.add_argument("--cache-dir", help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.worker:
        worker(args)
        return

    with fake_server(args.latency) as base_url:
        print(f"{args.cases} QA cases x 1 judge call, latency {args.latency * 1000:g} ms, "
              f"concurrency {args.concurrency}, fake server {base_url}; ideal = requests x "
              "latency / concurrency")
        figures: dict[str, Any] = {"cases": args.cases, "latency_s": args.latency,
                                   "concurrency": args.concurrency}
        if args.only != "engine":
            figures["pytest"] = pytest_scenarios(args, base_url)
        if args.only != "pytest":
            figures["engine"] = engine_scenarios(args, base_url)
        if args.json is not None:
            args.json.write_text(json.dumps(figures, indent=1), encoding="utf-8")


if __name__ == "__main__":
    main()
