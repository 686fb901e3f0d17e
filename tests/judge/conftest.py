"""Fixtures for the LLM-judge tests: a fake server per test and judges wired to it.

Every network test is bounded: the server stops itself after 60 s, client timeouts are at
most 2 s, and backoff waits are milliseconds unless a test measures them.
"""

from __future__ import annotations

import os
import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.judges.llm import OpenAIJudge
from pytest_callqa.engine.llm.cache import JudgeCache
from pytest_callqa.engine.llm.limits import Backoff
from pytest_callqa.engine.llm.transport import ChatRunner
from pytest_callqa.testing import FakeOpenAIServer

from .helpers import MODEL, SECRET

FAST_BACKOFF = Backoff(base_s=0.005, cap_s=0.02)


@pytest.fixture
def cache_dir(tmp_path: Path) -> Path:
    return tmp_path / "callqa_cache"


@pytest.fixture
def shared_dir() -> Iterator[Path]:
    """An empty directory everyone may reach and write, as a team's share is: pytest's own
    temporary directories are private to their user, so ``bound_by_permissions`` could not
    reach into them."""
    folder = Path(tempfile.mkdtemp(prefix="callqa-shared-"))
    os.chmod(folder, 0o777)
    try:
        yield folder
    finally:
        # A test may leave folders no one may write, which their owner cannot empty.
        for path in [folder, *folder.rglob("*")]:
            if path.is_dir() and not path.is_symlink():
                path.chmod(0o777)
        shutil.rmtree(folder, ignore_errors=True)


@pytest.fixture(autouse=True)
def _no_ambient_openai(monkeypatch: pytest.MonkeyPatch) -> None:
    # Tests pass endpoints and keys explicitly; a developer's environment must not leak in.
    monkeypatch.delenv("OPENAI_API_KEY", raising=False)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)


def make_runner(cache: JudgeCache | None = None, **options: Any) -> ChatRunner:
    options.setdefault("timeout", 2.0)
    options.setdefault("backoff", FAST_BACKOFF)
    options.setdefault("seed", 1)
    return ChatRunner(cache=cache, **options)


def make_judge(server: FakeOpenAIServer, cache: JudgeCache | None = None, *,
               mode: str = "per-metric", **options: Any) -> OpenAIJudge:
    runner = options.pop("runner", None) or make_runner(cache, **options)
    return OpenAIJudge(MODEL, base_url=server.base_url, api_key=SECRET, mode=mode,
                       runner=runner)
