"""The openai package is imported with the cyclic garbage collector paused, and the
collector is left as it was found."""

from __future__ import annotations

import gc
import importlib.abc
import importlib.machinery
import sys
import types
from collections.abc import Iterator, Sequence

import pytest

from pytest_callqa.engine.llm.endpoint import load_openai


class _RecordingLoader(importlib.abc.Loader):
    """Stands in for the openai package: records whether the collector ran its import."""

    def __init__(self) -> None:
        self.collector_enabled: list[bool] = []

    def create_module(self, spec: importlib.machinery.ModuleSpec) -> None:
        return None

    def exec_module(self, module: types.ModuleType) -> None:
        self.collector_enabled.append(gc.isenabled())
        module.AsyncOpenAI = object  # type: ignore[attr-defined]


class _Finder(importlib.abc.MetaPathFinder):
    def __init__(self, loader: _RecordingLoader) -> None:
        self.loader = loader

    def find_spec(self, name: str, path: Sequence[str] | None = None,
                  target: types.ModuleType | None = None) -> importlib.machinery.ModuleSpec | None:
        if name != "openai":
            return None
        return importlib.machinery.ModuleSpec(name, self.loader)


@pytest.fixture
def stand_in(monkeypatch: pytest.MonkeyPatch) -> Iterator[_RecordingLoader]:
    loader = _RecordingLoader()
    # Set, then removed: the undo puts back the real package, or removes the stand-in when
    # openai was not imported yet (a bare delitem would record nothing to undo).
    monkeypatch.setitem(sys.modules, "openai", None)
    monkeypatch.delitem(sys.modules, "openai")
    monkeypatch.setattr(sys, "meta_path", [_Finder(loader), *sys.meta_path])
    enabled = gc.isenabled()
    yield loader
    if enabled:
        gc.enable()
    else:
        gc.disable()


def test_the_import_runs_with_the_collector_paused_and_restarted(
        stand_in: _RecordingLoader) -> None:
    gc.enable()
    module = load_openai()
    assert module.AsyncOpenAI is object
    assert stand_in.collector_enabled == [False]
    assert gc.isenabled()


def test_a_collector_the_host_turned_off_stays_off(stand_in: _RecordingLoader) -> None:
    gc.disable()
    load_openai()
    assert stand_in.collector_enabled == [False]
    assert not gc.isenabled()


def test_the_stand_in_is_gone_after_the_tests_that_used_it() -> None:
    # Runs after the tests above (file order): a later test importing openai gets the real
    # package, never the stand-in.
    import openai

    assert hasattr(openai, "types") and openai.AsyncOpenAI is not object


def test_an_imported_openai_is_returned_as_it_is(stand_in: _RecordingLoader) -> None:
    first = load_openai()
    assert load_openai() is first
    assert stand_in.collector_enabled == [False]


def test_a_failed_import_restarts_the_collector(monkeypatch: pytest.MonkeyPatch) -> None:
    # None in sys.modules makes the import raise, as a missing package would.
    monkeypatch.setitem(sys.modules, "openai", None)
    enabled = gc.isenabled()
    gc.enable()
    try:
        with pytest.raises(ImportError):
            load_openai()
        assert gc.isenabled()
    finally:
        if not enabled:
            gc.disable()
