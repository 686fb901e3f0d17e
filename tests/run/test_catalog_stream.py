"""The xdist controller reads the golden cases one file at a time for the report; it must
see exactly the cases the catalogue would have loaded."""

from __future__ import annotations

import json
from pathlib import Path
from types import SimpleNamespace

import yaml

from pytest_callqa.run.catalog import Catalog
from pytest_callqa.run.settings import Settings

EXAMPLE_CASE = (Path(__file__).resolve().parents[2] / "example_project" / "cases" / "entity"
                / "entity-abcd-5798-shipping-address.yaml")


def case(case_id: str) -> dict[str, object]:
    return {**yaml.safe_load(EXAMPLE_CASE.read_text(encoding="utf-8")), "id": case_id}


def test_streamed_cases_are_the_catalogues_and_nothing_is_kept(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps(case("one")), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(case("two")), encoding="utf-8")
    (tmp_path / "c.json").write_text("{not json", encoding="utf-8")  # a bad file: skipped
    # Reuses "one": bad as a whole, so its other case does not count either.
    (tmp_path / "d.json").write_text(json.dumps([case("one"), case("three")]),
                                     encoding="utf-8")
    host = SimpleNamespace(rootpath=tmp_path)
    streamed = Catalog(Settings(cases=tmp_path), host)  # type: ignore[arg-type]
    ids = [c.id for c in streamed.each_case()]
    assert ids == ["one", "two"]
    assert streamed._files is None
    loaded = Catalog(Settings(cases=tmp_path), host)  # type: ignore[arg-type]
    assert [c.id for c in loaded.files().cases] == ids
    assert [c.id for c in loaded.each_case()] == ids
    assert [e.path.name for e in loaded.files().errors] == ["c.json", "d.json"]


def test_no_cases_directory_streams_nothing(tmp_path: Path) -> None:
    host = SimpleNamespace(rootpath=tmp_path)
    assert list(Catalog(Settings(cases=tmp_path / "absent"), host).each_case()) == []  # type: ignore[arg-type]
    assert list(Catalog(Settings(), host).each_case()) == []  # type: ignore[arg-type]
