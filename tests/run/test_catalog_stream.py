"""The xdist controller reads the golden cases one file at a time for the report; it must
see exactly the cases the catalogue would have loaded."""

from __future__ import annotations

import gc
import json
import os
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from types import SimpleNamespace

import pytest
import yaml

from pytest_callqa.engine import loading
from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.loading import load_case_file
from pytest_callqa.run import catalog as catalog_module
from pytest_callqa.run.catalog import RECENT_FILES, Catalog
from pytest_callqa.run.settings import CallqaUsageError, Settings
from pytest_callqa.session import CallqaSession

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


def _catalog(root: Path) -> Catalog:
    return Catalog(Settings(cases=root), SimpleNamespace(rootpath=root))  # type: ignore[arg-type]


@pytest.fixture
def by_reference(monkeypatch: pytest.MonkeyPatch) -> None:
    """A catalogue over the size whose bodies are kept: every body is read again."""
    monkeypatch.setattr(catalog_module, "KEPT_CASES", 0)


def test_a_small_catalogue_keeps_the_bodies_it_read(tmp_path: Path,
                                                     monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(catalog_module, "KEPT_CASES", 2)
    (tmp_path / "a.json").write_text(json.dumps([case("one"), case("two")]), encoding="utf-8")
    small = _catalog(tmp_path)
    one, two = small.files().cases
    (tmp_path / "a.json").unlink()  # nothing is read again
    assert small.case(two).id == "two" and small.case(two) is small.case(two)
    assert small.case(one).id == "one"
    assert [c.id for c in small.each_case()] == ["one", "two"]  # the kept bodies
    (tmp_path / "a.json").write_text(json.dumps([case("one"), case("two")]), encoding="utf-8")
    (tmp_path / "b.json").write_text(json.dumps(case("three")), encoding="utf-8")
    large = _catalog(tmp_path)  # three cases: over the size, references only
    refs = large.files().cases
    assert large._kept == {}
    (tmp_path / "b.json").unlink()
    with pytest.raises(CallqaUsageError, match="changed during the run"):
        large.case(refs[-1])


@pytest.mark.usefixtures("by_reference")
def test_the_catalogue_keeps_references_and_reads_a_body_when_asked(tmp_path: Path) -> None:
    (tmp_path / "a.json").write_text(json.dumps([case("one"), case("two")]), encoding="utf-8")
    catalog = _catalog(tmp_path)
    refs = catalog.files().cases
    assert [(r.id, r.task, r.path) for r in refs] == [
        ("one", "entity", str(tmp_path / "a.json")), ("two", "entity", str(tmp_path / "a.json"))]
    # Collection holds no case body: every GoldenCase read to make the references is gone.
    gc.collect()
    assert not [o for o in gc.get_objects()
                if isinstance(o, GoldenCase) and str(o.path).startswith(str(tmp_path))]
    body = catalog.case(refs[1])
    assert isinstance(body, GoldenCase)
    assert body == load_case_file(tmp_path / "a.json")[1]
    assert catalog.case(refs[1]) is body  # the file is among the recent ones


@pytest.mark.usefixtures("by_reference")
def test_recent_case_files_are_bounded(tmp_path: Path) -> None:
    for i in range(RECENT_FILES + 2):
        (tmp_path / f"c{i:02d}.json").write_text(json.dumps(case(f"case-{i}")),
                                                 encoding="utf-8")
    catalog = _catalog(tmp_path)
    refs = catalog.files().cases
    first = catalog.case(refs[0])
    for ref in refs[1:]:
        catalog.case(ref)
    assert len(catalog._recent) == RECENT_FILES
    assert str(tmp_path / "c00.json") not in catalog._recent
    again = catalog.case(refs[0])
    assert again == first and again is not first  # read again, and the same case


@pytest.mark.usefixtures("by_reference")
def test_a_case_file_changed_during_the_run_is_a_clear_error(tmp_path: Path) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps([case("one"), case("two")]), encoding="utf-8")
    catalog = _catalog(tmp_path)
    one, two = catalog.files().cases
    path.write_text(json.dumps(case("one")), encoding="utf-8")
    with pytest.raises(CallqaUsageError,
                       match=r"golden case 'two' \(entity\) is no longer in .*a\.json"):
        catalog.case(two)
    assert catalog.case(one).id == "one"
    # The report's golden cases leave out what is no longer there.
    assert [c.id for c in catalog.each_case()] == ["one"]
    (tmp_path / "b.json").write_text(json.dumps(case("three")), encoding="utf-8")
    three = _catalog(tmp_path).files().cases[-1]
    (tmp_path / "b.json").write_text("{not json", encoding="utf-8")
    with pytest.raises(CallqaUsageError,
                       match=r"the golden case file changed during the run: invalid golden "
                             r"case file .*b\.json"):
        catalog.case(three)


@pytest.mark.usefixtures("by_reference")
def test_an_unchanged_file_is_read_again_without_the_families_checks(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    path = tmp_path / "a.json"
    path.write_text(json.dumps({"$schema": "case.schema.json", **case("one")}),
                    encoding="utf-8")
    expected = load_case_file(path)[0]
    ref = _catalog(tmp_path).files().cases[0]
    assert ref.stamp == (path.stat().st_mtime_ns, path.stat().st_size)

    def checked(*args: object) -> object:
        raise AssertionError("read with the families' checks")

    monkeypatch.setattr(loading, "load_case_file", checked)
    assert _catalog(tmp_path).case(ref) == expected
    # Touched since collection: read with the checks again.
    os.utime(path, ns=(ref.stamp[0] + 1_000_000_000, ref.stamp[0] + 1_000_000_000))
    with pytest.raises(AssertionError, match="read with the families' checks"):
        _catalog(tmp_path).case(ref)



def _controller(root: Path) -> CallqaSession:
    host = SimpleNamespace(rootpath=root, is_worker=False, run_uid=None,
                           worker_value=lambda key: None, register_metrics=lambda registry: None)
    return CallqaSession(host, Settings(cases=root, judge="openai"))  # type: ignore[arg-type]


def _read_ahead(session: CallqaSession) -> None:
    session.read_cases_ahead()
    assert session._reading_cases is not None
    session._reading_cases.join(timeout=10)


def test_cases_read_ahead_are_not_read_again_at_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.json").write_text(json.dumps([case("one"), case("two")]),
                                     encoding="utf-8")
    session = _controller(tmp_path)
    _read_ahead(session)
    assert session.catalog.loaded
    monkeypatch.setattr(session.catalog, "_scan", _no_reading)
    assert [c.id for c in session.catalog.each_case()] == ["one", "two"]


def _no_reading(root: Path) -> None:
    raise AssertionError(f"{root} read again")


def test_a_reading_ahead_that_fails_leaves_the_cases_to_the_end(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.json").write_text(json.dumps(case("one")), encoding="utf-8")
    session = _controller(tmp_path)

    def unreadable(root: Path) -> None:
        raise PermissionError(f"{root}: permission denied")

    monkeypatch.setattr(session.catalog, "_scan", unreadable)
    _read_ahead(session)
    assert not session.catalog.loaded
    monkeypatch.undo()
    assert [c.id for c in session.catalog.each_case()] == ["one"]


def test_the_end_waits_for_a_reading_in_progress_instead_of_reading_again(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    (tmp_path / "a.json").write_text(json.dumps(case("one")), encoding="utf-8")
    catalog = _catalog(tmp_path)
    real_scan = catalog._scan
    scanned_by: list[str] = []
    started = threading.Event()

    def slow_scan(root: Path) -> Iterator[list[GoldenCase] | loading.CaseFileError]:
        scanned_by.append(threading.current_thread().name)
        started.set()
        time.sleep(0.2)  # the end of the run arrives meanwhile
        return real_scan(root)

    monkeypatch.setattr(catalog, "_scan", slow_scan)
    reader = threading.Thread(target=catalog.files, name="reader")
    reader.start()
    assert started.wait(timeout=10)
    assert [c.id for c in catalog.each_case()] == ["one"]
    reader.join(timeout=10)
    assert scanned_by == ["reader"]
