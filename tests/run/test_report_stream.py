"""The JSON report's case entries are streamed into the file one at a time; the file must
read back as the same data a one-piece ``json.dumps`` would have written."""

from __future__ import annotations

import json
import os
import stat
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.run.deliver import write_atomically, write_report
from pytest_callqa.run.spool import entry_text
from pytest_callqa.run.summary import CASES_MARK, GOLDEN_MARK

ENTRIES = [
    {"model": "alpha", "case_id": "qa-1", "score": 0.75, "output": {"text": "Grüße, ₹1,200"}},
    {"model": "beta", "case_id": "qa-1", "score": None, "output": "not JSON at all"},
]


def texts(entries: list[dict[str, Any]]) -> Iterator[str]:
    return (entry_text(entry) for entry in entries)


def data_with_mark() -> dict[str, Any]:
    return {"schema": "callqa-report/1", "golden_cases": {"qa-1": {"task": "qa"}},
            "cases": CASES_MARK, "notes": ["kept after the cases"]}


def test_streamed_entries_read_back_as_the_whole_report(tmp_path: Path) -> None:
    path = tmp_path / "build" / "report.json"
    write_report(path, data_with_mark(), texts(ENTRIES))
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == {**data_with_mark(), "cases": ENTRIES}
    # One line per entry, inside an otherwise indented document; nothing escaped.
    lines = text.splitlines()
    assert lines[lines.index('  "cases": [') + 1].startswith('    {"model": "alpha"')
    assert "Grüße, ₹1,200" in text
    assert list(tmp_path.joinpath("build").iterdir()) == [path]


def test_no_entry_writes_an_empty_list(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    write_report(path, data_with_mark(), iter([]))
    assert json.loads(path.read_text(encoding="utf-8"))["cases"] == []
    assert '"cases": [],' in path.read_text(encoding="utf-8")


def test_a_report_without_the_mark_is_written_whole(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    write_report(path, {"schema": "callqa-report/1", "cases": ENTRIES}, iter(["unused"]))
    assert json.loads(path.read_text(encoding="utf-8"))["cases"] == ENTRIES


def test_an_entry_that_is_not_json_leaves_no_file_behind(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    path.write_text('{"previous": "report"}', encoding="utf-8")
    with pytest.raises(ValueError, match="Out of range float values"):
        write_report(path, data_with_mark(), texts([ENTRIES[0], {"score": float("nan")}]))
    # The previous report stays whole, and no temporary file is left.
    assert json.loads(path.read_text(encoding="utf-8")) == {"previous": "report"}
    assert [p.name for p in tmp_path.iterdir()] == ["report.json"]


GOLDEN = [("qa-1", {"task": "qa", "turns": 3, "expected_outcome": {"answer": "Grüße"}}),
          ("qa-2", {"task": "qa", "turns": 0, "expected_outcome": None})]


def test_golden_cases_stream_in_as_an_object_before_the_entries(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    data = {**data_with_mark(), "golden_cases": GOLDEN_MARK}
    write_report(path, data, texts(ENTRIES), iter(GOLDEN))
    text = path.read_text(encoding="utf-8")
    assert json.loads(text) == {**data, "golden_cases": dict(GOLDEN), "cases": ENTRIES}
    lines = text.splitlines()
    assert lines[lines.index('  "golden_cases": {') + 1].startswith('    "qa-1": {"task": "qa"')
    assert list(json.loads(text)) == list(data)  # the keys keep their order


def test_no_golden_case_writes_an_empty_object(tmp_path: Path) -> None:
    path = tmp_path / "report.json"
    write_report(path, {**data_with_mark(), "golden_cases": GOLDEN_MARK}, texts(ENTRIES),
                 iter([]))
    assert '"golden_cases": {},' in path.read_text(encoding="utf-8")
    assert json.loads(path.read_text(encoding="utf-8"))["golden_cases"] == {}


def test_a_report_through_a_symlink_is_written_to_the_file_it_points_to(tmp_path: Path) -> None:
    # Before: the link was replaced by a regular file and the file it pointed to was left
    # as it was.
    target = tmp_path / "real" / "report.json"
    target.parent.mkdir()
    target.write_text("old", encoding="utf-8")
    link = tmp_path / "link.json"
    link.symlink_to(Path("real") / "report.json")
    write_report(link, data_with_mark(), texts(ENTRIES))
    assert link.is_symlink() and json.loads(target.read_text(encoding="utf-8")) == {
        **data_with_mark(), "cases": ENTRIES}
    write_atomically(link, "summary\n")
    assert link.is_symlink() and target.read_text(encoding="utf-8") == "summary\n"
    # No temporary file left beside the link or the target.
    assert sorted(p.name for p in tmp_path.rglob("*")) == ["link.json", "real", "report.json"]


def test_a_report_into_a_fifo_is_written_into_it(tmp_path: Path) -> None:
    # Before: the FIFO was replaced by a regular file and its reader got nothing (so would a
    # device such as /dev/stdout, as root, have been replaced).
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    reader = os.open(fifo, os.O_RDONLY | os.O_NONBLOCK)
    try:
        write_atomically(fifo, "summary\n")
        assert stat.S_ISFIFO(fifo.lstat().st_mode)
        assert os.read(reader, 1000) == b"summary\n"
        write_report(fifo, data_with_mark(), texts(ENTRIES))
        assert stat.S_ISFIFO(fifo.lstat().st_mode)
        assert json.loads(os.read(reader, 100_000)) == {**data_with_mark(), "cases": ENTRIES}
    finally:
        os.close(reader)
    assert sorted(p.name for p in tmp_path.iterdir()) == ["pipe"]


@pytest.mark.parametrize("flags", [os.O_APPEND, os.O_TRUNC], ids=[">>", ">"])
def test_a_report_into_a_descriptor_is_written_after_what_it_holds(
        tmp_path: Path, flags: int) -> None:
    # Before: --callqa-report=/dev/stdout with stdout sent to a CI log (`>> ci.log`) followed
    # /dev/stdout -> /proc/self/fd/1 -> ci.log and renamed the report over the log: what the
    # shell had written there was lost, and so was the rest of the run's output. Then, with
    # `> ci.log`, the report appended by a new opening of the file was written over by the
    # run's later lines, at the shell's own offset.
    log = tmp_path / "ci.log"
    descriptor = os.open(log, os.O_WRONLY | os.O_CREAT | flags)
    os.write(descriptor, b"an earlier line\n")
    stdout = tmp_path / "stdout"  # as /dev/stdout is made
    stdout.symlink_to(f"/proc/self/fd/{descriptor}")
    try:
        write_report(stdout, data_with_mark(), texts(ENTRIES))
        write_atomically(Path(f"/proc/self/fd/{descriptor}"), "summary\n")
        os.write(descriptor, b"the run's last line\n")
    finally:
        os.close(descriptor)
    text = log.read_text(encoding="utf-8")
    first, last = "an earlier line\n", "summary\nthe run's last line\n"
    assert text.startswith(first) and text.endswith(last)
    assert json.loads(text[len(first):-len(last)]) == {**data_with_mark(), "cases": ENTRIES}
    assert stdout.is_symlink() and sorted(p.name for p in tmp_path.iterdir()) == [
        "ci.log", "stdout"]
