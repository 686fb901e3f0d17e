"""Fixtures shared by the test folders."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

REAL_LLM = "real_llm"


def pytest_collection_modifyitems(config: pytest.Config, items: list[pytest.Item]) -> None:
    """Leave the ``real_llm`` tier out unless ``-m`` names it: it builds on a real model
    server and takes minutes, so neither a plain ``pytest`` nor ``-m eval`` (or any other
    expression) runs it by accident."""
    if REAL_LLM in (config.option.markexpr or ""):
        return
    dropped = [item for item in items if item.get_closest_marker(REAL_LLM) is not None]
    if dropped:
        config.hook.pytest_deselected(items=dropped)
        items[:] = [item for item in items if item.get_closest_marker(REAL_LLM) is None]


@pytest.fixture
def fake() -> Iterator[Callable[..., Any]]:
    """Start fake OpenAI-compatible servers on 127.0.0.1; all are stopped after the test.

    Every server stops itself after 60 s or 2000 requests, so no test can leave one running.
    """
    from pytest_callqa.testing import FakeOpenAIServer

    started: list[FakeOpenAIServer] = []

    def start(**options: Any) -> FakeOpenAIServer:
        options.setdefault("max_lifetime_s", 60.0)
        options.setdefault("max_requests", 2000)
        server = FakeOpenAIServer(**options).start()
        started.append(server)
        return server

    yield start
    for server in started:
        server.stop()


@pytest.fixture
def temp_files_in_tmp_path(monkeypatch: pytest.MonkeyPatch, tmp_path: Any) -> None:
    """Temporary files the code under test makes land in the test's own directory: a local
    server that a test kills or starts on a taken port keeps its log for the user to read,
    which would otherwise pile up in the machine's temporary directory run after run."""
    import tempfile

    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path))
