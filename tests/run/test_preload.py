"""What the end of a run imports, the only process loads while its judge batch waits on the
server: after the first reply, never before the first request. The xdist controller loads it
while its workers run and, when they wait on a model server, reads the golden cases ahead
once an evaluation has reported."""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_callqa.run.settings import CallqaUsageError, Settings
from pytest_callqa.session import CallqaSession

# A server these tests kill, or start on a taken port, keeps its log for the user to read.
pytestmark = pytest.mark.usefixtures("temp_files_in_tmp_path")


def _session(tmp_path: Path, monkeypatch: pytest.MonkeyPatch, *,
             worker: bool = False) -> tuple[CallqaSession, list[int]]:
    host = SimpleNamespace(rootpath=tmp_path, is_worker=worker, run_uid=None,
                           worker_value=lambda key: None)
    session = CallqaSession(host, Settings())  # type: ignore[arg-type]
    loaded: list[int] = []
    monkeypatch.setattr(session.summary, "preload", lambda: loaded.append(1))
    # The endpoints' check is the resolver's business; here the batch is about to send.
    monkeypatch.setattr(session.resolver, "check_endpoints", lambda: None)
    return session, loaded


def _settle(session: CallqaSession) -> None:
    if session._preload is not None:
        session._preload.join(timeout=10)


def test_the_imports_start_with_the_first_reply_of_a_batch_that_sends(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session, loaded = _session(tmp_path, monkeypatch)
    # Verdicts the cache holds are counted before anything is sent: the CPU is busy then.
    session.services.on_progress(1, 3)
    _settle(session)
    assert loaded == [] and session._preload is None
    assert session.services.before_send is not None
    session.services.before_send()
    session.services.on_progress(2, 3)
    session.services.on_progress(3, 3)
    _settle(session)
    assert loaded == [1]


def test_a_worker_leaves_the_imports_to_the_controller(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session, loaded = _session(tmp_path, monkeypatch, worker=True)
    assert session.services.before_send is not None
    session.services.before_send()
    session.services.on_progress(1, 1)
    _settle(session)
    assert loaded == [] and session._preload is None
    # The xdist controller starts them itself, once, as its workers have collected.
    session.preload_in_background()
    session.preload_in_background()
    _settle(session)
    assert loaded == [1]


def _cut_by_a_test_report(session: CallqaSession) -> None:
    from pytest_callqa.gather import ResultsGatherer

    report = SimpleNamespace(when="setup", nodeid="t.py::test[m-c]")
    ResultsGatherer(session).pytest_runtest_logreport(report)  # type: ignore[arg-type]


@pytest.mark.parametrize("cut", [CallqaSession.preload_now, _cut_by_a_test_report],
                         ids=["preload_now", "a-test-report"])
def test_the_controllers_preload_waits_for_its_workers_first_requests(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        cut: Callable[[CallqaSession], None]) -> None:
    session, loaded = _session(tmp_path, monkeypatch)
    monkeypatch.setattr("pytest_callqa.session.WORKERS_PREPARE_S", 30.0)
    # A worker has collected: its judge client and first requests are still to come.
    session.preload_once_workers_send()
    assert session._preload is not None
    session._preload.join(timeout=0.3)
    assert loaded == [] and session._preload.is_alive()
    # A first test ended: the workers are past their up-front batch.
    cut(session)
    _settle(session)
    assert loaded == [1]


def test_the_controllers_preload_starts_by_itself_after_the_wait(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session, loaded = _session(tmp_path, monkeypatch)
    monkeypatch.setattr("pytest_callqa.session.WORKERS_PREPARE_S", 0.05)
    session.preload_once_workers_send()
    _settle(session)
    assert loaded == [1]


def test_the_end_of_the_run_waits_for_a_preload_under_way(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    # A preload still importing when the run moved on: in a test harness that puts
    # sys.modules back after an in-process run (pytester), a module it was importing went
    # missing under it (KeyError 'numpy.random._common' in the thread).
    session, loaded = _session(tmp_path, monkeypatch)
    monkeypatch.setattr("pytest_callqa.session.WORKERS_PREPARE_S", 30.0)
    session.preload_once_workers_send()
    assert session._preload is not None and session._preload.is_alive()
    session.finish_preload()
    assert loaded == [1] and not session._preload.is_alive()
    # Nothing started, nothing to wait for.
    idle, _ = _session(tmp_path, monkeypatch)
    idle.finish_preload()
    assert idle._preload is None


def _evaluation_report(session: CallqaSession, *, when: str = "teardown",
                       payload: dict[str, object] | None = None) -> None:
    """A worker's report reaching the controller's gatherer (an evaluation test's teardown
    report carries the test's payload)."""
    from pytest_callqa.gather import REPORT_ATTR, ResultsGatherer

    report = SimpleNamespace(when=when, nodeid=f"t.py::test[m-c-{when}]")
    if payload is not None:
        setattr(report, REPORT_ATTR, payload)
    ResultsGatherer(session).pytest_runtest_logreport(report)  # type: ignore[arg-type]


def _controller_with_cases(tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
                           settings: Settings) -> tuple[CallqaSession, list[str]]:
    """A controller whose catalogue records each reading of the files."""
    host = SimpleNamespace(rootpath=tmp_path, is_worker=False, run_uid=None,
                           worker_value=lambda key: None)
    session = CallqaSession(host, settings)  # type: ignore[arg-type]
    read: list[str] = []
    monkeypatch.setattr(session.catalog, "_load",
                        lambda: read.append(threading.current_thread().name))
    return session, read


def _settle_reading(session: CallqaSession) -> None:
    if session._reading_cases is not None:
        session._reading_cases.join(timeout=10)


@pytest.mark.parametrize(("settings", "reads"), [
    (Settings(judge="openai"), True),
    (Settings(judge="local"), True),
    (Settings(), False),
], ids=["openai-judge", "local-judge", "offline-judge"])
def test_the_controller_reads_the_cases_ahead_once_an_evaluation_has_reported(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, settings: Settings,
        reads: bool) -> None:
    session, read = _controller_with_cases(tmp_path, monkeypatch, settings)
    # Reports of other tests, and an evaluation's setup and call reports, read nothing.
    _evaluation_report(session, when="call")
    _evaluation_report(session, when="teardown")
    _evaluation_report(session, when="call", payload={"case_id": "c"})
    _settle_reading(session)
    assert read == [] and session._reading_cases is None
    _evaluation_report(session, payload={"case_id": "c"})
    _evaluation_report(session, payload={"case_id": "d"})
    _settle_reading(session)
    assert read == (["callqa-read-cases"] if reads else [])


def _live_model() -> dict[str, object]:
    return {"live": object()}


def _bad_models_table() -> dict[str, object]:
    raise CallqaUsageError("callqa: bad models table")  # the workers report it


@pytest.mark.parametrize(("live_models", "reads"), [(_live_model, True),
                                                    (_bad_models_table, False)],
                         ids=["a-live-model", "a-bad-models-table"])
def test_live_models_have_the_controller_read_the_cases_ahead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch,
        live_models: Callable[[], dict[str, object]], reads: bool) -> None:
    session, read = _controller_with_cases(tmp_path, monkeypatch, Settings())
    monkeypatch.setattr(session.catalog, "live_models", live_models)
    _evaluation_report(session, payload={"case_id": "c"})
    _settle_reading(session)
    assert read == (["callqa-read-cases"] if reads else [])


def test_a_process_that_collected_its_cases_does_not_read_them_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session, read = _controller_with_cases(tmp_path, monkeypatch, Settings(judge="openai"))
    monkeypatch.setattr(type(session.catalog), "loaded", property(lambda self: True))
    _evaluation_report(session, payload={"case_id": "c"})
    assert session._reading_cases is None and read == []


def test_the_controller_decides_once_whether_to_read_the_cases_ahead(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    session, read = _controller_with_cases(tmp_path, monkeypatch, Settings())
    asked: list[int] = []

    def no_live_models() -> dict[str, object]:
        asked.append(1)
        return {}

    monkeypatch.setattr(session.catalog, "live_models", no_live_models)
    for case_id in ("c", "d", "e"):
        _evaluation_report(session, payload={"case_id": case_id})
    assert asked == [1] and read == [] and session._reading_cases is None
