"""The reply cache's keys, modes and counters, read directly (no server, no process)."""

from __future__ import annotations

import hashlib
import json
import os
import re
from pathlib import Path

import pytest

from pytest_callqa.engine.llm.cache import ENTRY_FORMAT, JudgeCache, content_key


def test_a_content_key_is_the_sha256_of_canonical_json() -> None:
    canonical = '{"a":1,"b":"é"}'
    assert content_key({"b": "é", "a": 1}) == hashlib.sha256(
        canonical.encode("utf-8")).hexdigest()
    assert content_key({"a": 1, "b": "é"}) == content_key({"b": "é", "a": 1})
    assert content_key({"a": 1}) != content_key({"a": 2})
    # Values JSON cannot hold are keyed by their text rather than refused.
    assert content_key({"p": Path("x")}) == content_key({"p": "x"})


@pytest.mark.parametrize(("mode", "readable", "writable", "described"), [
    ("rw", True, True, "cache rw (DIR)"),
    ("ro", True, False, "cache ro (DIR)"),
    ("off", False, False, "cache off"),
])
def test_each_mode_reads_and_writes_what_it_says(tmp_path: Path, mode: str, readable: bool,
                                                  writable: bool, described: str) -> None:
    key = content_key({"q": 1})
    JudgeCache(tmp_path).put(key, {"content": "kept"})
    cache = JudgeCache(tmp_path, mode)
    assert (cache.readable, cache.writable) == (readable, writable)
    assert cache.describe() == described.replace("DIR", str(tmp_path))
    assert repr(cache) == f"JudgeCache({str(tmp_path)!r}, mode={mode!r})"
    found = cache.lookup(key)
    assert (found.status, found.value) == (("hit", {"content": "kept"}) if readable
                                           else ("off", None))
    assert cache.put(content_key({"q": 2}), {"content": "new"}) is writable
    assert cache.stats.writes == int(writable)


def test_a_cache_without_a_directory_is_off_and_has_no_entry_paths() -> None:
    cache = JudgeCache(None, "off")
    assert cache.describe() == "cache off"
    assert cache.lookup("ab" * 32).status == "off"
    with pytest.raises(ValueError, match=r"^this cache has no directory$"):
        cache.entry_path("ab" * 32)


def test_an_entry_is_written_with_its_format_key_and_digest(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = content_key({"r": 1})
    value = {"content": "é", "usage": {"prompt_tokens": 2}}
    assert cache.put(key, value) is True
    record = json.loads(cache.entry_path(key).read_text(encoding="utf-8"))
    assert record["format"] == ENTRY_FORMAT == 2
    assert record["key"] == key
    assert record["digest"] == content_key(value)
    assert record["value"] == value
    assert "é" in cache.entry_path(key).read_text(encoding="utf-8")
    assert [p.name for p in cache.entry_path(key).parent.iterdir()] == [f"{key}.json"]
    # Keys in order, so one reply always makes the same bytes; "written" says when.
    assert list(record) == ["digest", "format", "key", "value", "written"]
    assert isinstance(record["written"], float)


def test_an_entry_is_made_as_a_hidden_temporary_file_beside_it(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # Beside it, so the move into place is one rename on one file system; named
    # ".<key>.*.tmp", so the sweep of files left by killed writers finds it.
    moved: list[tuple[Path, Path]] = []
    replace = os.replace

    def recorded(src: str, dst: str) -> None:
        moved.append((Path(src), Path(dst)))
        replace(src, dst)

    monkeypatch.setattr(os, "replace", recorded)
    cache = JudgeCache(tmp_path)
    key = content_key({"r": 2})
    assert cache.put(key, {"content": "x"})
    [(src, dst)] = moved
    assert dst == cache.entry_path(key) and src.parent == dst.parent
    assert re.fullmatch(rf"\.{key}\..+\.tmp", src.name)


def test_a_value_json_cannot_hold_is_a_counted_write_error(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = content_key({"s": 1})
    assert cache.put(key, {"score": float("nan")}) is False
    assert (cache.stats.write_errors, cache.stats.writes) == (1, 0)
    assert cache.lookup(key).status == "miss"
    # No temporary file is left behind by the failed write.
    assert list(tmp_path.glob("??/.*.tmp")) == []


@pytest.mark.parametrize(("record", "status"), [
    ({"format": 1, "value": {"content": "old"}}, "outdated"),
    ({"format": 0, "value": {"content": "older"}}, "outdated"),
    ({"format": "2", "value": {"content": "text format"}}, "damaged"),
    ({"format": 3, "value": {"content": "newer"}}, "damaged"),
    ({"format": 2, "value": "not an object"}, "damaged"),
], ids=["format-1", "format-0", "format-as-text", "format-3", "value-not-object"])
def test_entries_not_of_this_format_are_told_apart(tmp_path: Path, record: dict,
                                                    status: str) -> None:
    cache = JudgeCache(tmp_path)
    key = content_key({"t": 1})
    path = cache.entry_path(key)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**record, "key": key}), encoding="utf-8")
    assert cache.lookup(key).status == status
    assert (cache.stats.outdated, cache.stats.damaged, cache.stats.hits) == (
        (1, 0, 0) if status == "outdated" else (0, 1, 0))


def test_an_entry_that_is_not_text_is_damaged(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = content_key({"u": 1})
    path = cache.entry_path(key)
    path.parent.mkdir(parents=True)
    path.write_bytes(b"\xff\xfe\x00")
    assert cache.lookup(key).status == "damaged"
    assert cache.stats.damaged == 1


def test_an_entry_that_cannot_be_read_is_unreadable(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = content_key({"v": 1})
    # A directory where the entry should be: reading it is an OSError other than "absent".
    cache.entry_path(key).mkdir(parents=True)
    assert cache.lookup(key).status == "unreadable"
    assert (cache.stats.unreadable, cache.stats.misses, cache.stats.damaged) == (1, 0, 0)


def test_every_lookup_and_write_is_counted(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    keys = [content_key({"n": n}) for n in range(6)]
    for key in keys[:2]:
        assert cache.put(key, {"content": key})
        assert cache.lookup(key).status == "hit"
    for key in keys[2:4]:
        assert cache.lookup(key).status == "miss"
        assert cache.put(key, {"score": float("inf")}) is False
    for key in keys[4:]:
        cache.entry_path(key).mkdir(parents=True)
        assert cache.lookup(key).status == "unreadable"
    stats = cache.stats
    assert (stats.hits, stats.writes, stats.misses, stats.write_errors, stats.unreadable) == (
        2, 2, 2, 2, 2)


def test_a_write_that_fails_at_the_move_leaves_no_temporary_file(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    def full_disk(src: str, dst: str) -> None:
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", full_disk)
    cache = JudgeCache(tmp_path)
    key = content_key({"d": 1})
    assert cache.put(key, {"content": "x"}) is False
    assert cache.stats.write_errors == 1
    assert list(cache.entry_path(key).parent.iterdir()) == []
