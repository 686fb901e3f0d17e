"""The scorecard's intervals kept in the cache directory: read back only when written by the
same statistics code and numpy, following the cache's mode, and never at the cost of a run."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from pytest_callqa.engine import stats
from pytest_callqa.run import intervals
from pytest_callqa.run.intervals import MEMO_FILE, load_memo, save_memo
from pytest_callqa.run.settings import Settings

VALUES = [(i % 5) / 4 for i in range(12)]


def _settings(cache_dir: Path, mode: str = "rw") -> Settings:
    return Settings(cache_dir=cache_dir, cache=mode)


def _drawn_memo(settings: Settings) -> tuple[stats.IntervalMemo, stats.Interval | None]:
    memo = load_memo(settings)
    assert memo is not None
    with stats.remembered(memo):
        interval = stats.bootstrap_mean(VALUES)
    return memo, interval


def test_intervals_stored_by_one_run_are_found_by_the_next(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    memo, interval = _drawn_memo(settings)
    assert memo.found == {} and memo.drawn == 1
    save_memo(memo, settings)
    again, same = _drawn_memo(settings)
    assert same == interval and again.drawn == 0 and again.found == memo.kept


def test_the_file_keeps_the_last_runs_intervals_only(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    memo, _ = _drawn_memo(settings)
    save_memo(memo, settings)
    stored = (tmp_path / MEMO_FILE).stat()
    # Nothing drawn and nothing dropped: the file is left as it is (a rewrite moves a new
    # file into place, with an inode of its own).
    unchanged, _ = _drawn_memo(settings)
    save_memo(unchanged, settings)
    assert (tmp_path / MEMO_FILE).stat().st_ino == stored.st_ino
    # A run that used none of them leaves a file without them.
    unused = load_memo(settings)
    assert unused is not None and unused.found
    save_memo(unused, settings)
    assert json.loads((tmp_path / MEMO_FILE).read_text(encoding="utf-8"))["intervals"] == {}


@pytest.mark.parametrize("change", ["numpy", "stats"])
def test_intervals_of_other_code_are_ignored_and_replaced(
        tmp_path: Path, monkeypatch: pytest.MonkeyPatch, change: str) -> None:
    settings = _settings(tmp_path)
    memo, _ = _drawn_memo(settings)
    save_memo(memo, settings)
    stamp = intervals._stamp()
    assert stamp is not None
    monkeypatch.setattr(intervals, "_stamp", lambda: {**stamp, change: "other"})
    other, _ = _drawn_memo(settings)
    assert other.found == {} and other.drawn == 1
    save_memo(other, settings)
    data = json.loads((tmp_path / MEMO_FILE).read_text(encoding="utf-8"))
    assert data["stamp"][change] == "other"


@pytest.mark.parametrize("text", [
    "{not json", '"a string"', '{"format": 99}', "",
    '{"format": 1, "stamp": null, "intervals": {}}', "[" * 100_000,
])
def test_an_unreadable_or_foreign_file_is_an_empty_memo(tmp_path: Path, text: str) -> None:
    (tmp_path / MEMO_FILE).write_text(text, encoding="utf-8")
    memo = load_memo(_settings(tmp_path))
    assert memo is not None and memo.found == {}


def test_malformed_entries_are_drawn_again(tmp_path: Path) -> None:
    settings = _settings(tmp_path)
    memo, interval = _drawn_memo(settings)
    save_memo(memo, settings)
    path = tmp_path / MEMO_FILE
    data = json.loads(path.read_text(encoding="utf-8"))
    (key,) = data["intervals"]
    bad = {"inverted": [0.9, 0.1], "short": [0.5], "text": ["a", "b"], "bool": [True, True],
           "huge": [0, 10 ** 400], "none": None, "good": [0.25, 0.75]}
    data["intervals"] = {key: [0.9, 0.1], **bad}
    path.write_text(json.dumps(data), encoding="utf-8")
    found = load_memo(settings)
    assert found is not None
    assert found.found == {"none": None, "good": (0.25, 0.75)}
    with stats.remembered(found):
        assert stats.bootstrap_mean(VALUES) == interval
    assert found.drawn == 1


def test_the_cache_mode_decides_reading_and_writing(tmp_path: Path) -> None:
    assert load_memo(_settings(tmp_path, "off")) is None
    read_only = _settings(tmp_path, "ro")
    memo, _ = _drawn_memo(read_only)
    save_memo(memo, read_only)
    assert not (tmp_path / MEMO_FILE).exists()
    writer = _settings(tmp_path)
    save_memo(_drawn_memo(writer)[0], writer)
    again, _ = _drawn_memo(read_only)
    assert again.drawn == 0


def test_a_missing_cache_directory_is_not_created(tmp_path: Path) -> None:
    settings = _settings(tmp_path / "absent")
    assert load_memo(settings) is None
    save_memo(stats.IntervalMemo(), settings)
    assert not (tmp_path / "absent").exists()
    assert load_memo(Settings(cache_dir=None, cache="off")) is None


def test_a_failed_store_costs_the_run_nothing(tmp_path: Path,
                                              monkeypatch: pytest.MonkeyPatch) -> None:
    settings = _settings(tmp_path)
    memo, _ = _drawn_memo(settings)

    def full_disk(*args: object, **kwargs: object) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr("pytest_callqa.engine.llm.cache.os.replace", full_disk)
    save_memo(memo, settings)
    assert not (tmp_path / MEMO_FILE).exists()
    assert list(tmp_path.iterdir()) == []
