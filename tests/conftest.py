"""Fixtures shared by the test folders."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest


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
