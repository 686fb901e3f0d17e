"""The reply cache's keys, modes and counters, read directly (no server, no process), and
what it does with a directory another user made."""

from __future__ import annotations

import hashlib
import json
import os
import re
import stat
from pathlib import Path

import pytest

from pytest_callqa.engine.llm.cache import ENTRY_FORMAT, CacheLookup, JudgeCache, content_key

from .helpers import bound_by_permissions, umask


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
    assert re.fullmatch(rf"\.{key}\.[0-9a-f]{{16}}\.tmp", src.name)


@pytest.mark.parametrize(("mask", "mode"), [(0o000, 0o666), (0o022, 0o644), (0o077, 0o600)])
def test_an_entry_gets_the_mode_the_umask_allows(tmp_path: Path, mask: int, mode: int) -> None:
    # As open() makes a file: a cache a team shares is as open to the others as the writer's
    # umask says (entries used to be 0600 whatever it said: unreadable to anyone else).
    cache = JudgeCache(tmp_path / "cache")
    key = content_key({"m": mask})
    with umask(mask):
        assert cache.put(key, {"content": "x"})
    assert stat.S_IMODE(cache.entry_path(key).stat().st_mode) == mode
    assert stat.S_IMODE(cache.entry_path(key).parent.stat().st_mode) == 0o777 & ~mask


def test_a_value_json_cannot_hold_is_a_counted_write_error(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path)
    key = content_key({"s": 1})
    assert cache.put(key, {"score": float("nan")}) is False
    assert (cache.stats.write_errors, cache.stats.writes) == (1, 0)
    # Worded by json; newer Pythons add the value.
    assert (cache.stats.error or "").startswith("Out of range float values are not JSON")
    assert cache.lookup(key).status == "miss"
    # No temporary file is left behind by the failed write.
    assert list(tmp_path.glob("??/.*.tmp")) == []


@pytest.mark.parametrize(("record", "status"), [
    ({"format": 1, "value": {"content": "old"}}, "outdated"),
    ({"format": 0, "value": {"content": "older"}}, "outdated"),
    ({"format": "2", "value": {"content": "text format"}}, "damaged"),
    ({"format": 1, "value": "format 1's business"}, "outdated"),
    ({"format": 3, "value": {"content": "newer"}}, "newer"),
    ({"format": 3, "reply": "any shape it likes"}, "newer"),
    ({"format": 2, "value": "not an object"}, "damaged"),
], ids=["format-1", "format-0", "format-as-text", "format-1-any-shape", "format-3",
        "format-3-any-shape", "value-not-object"])
def test_entries_not_of_this_format_are_told_apart(tmp_path: Path, record: dict,
                                                    status: str) -> None:
    cache = JudgeCache(tmp_path)
    key = content_key({"t": 1})
    path = cache.entry_path(key)
    path.parent.mkdir(parents=True)
    path.write_text(json.dumps({**record, "key": key}), encoding="utf-8")
    assert cache.lookup(key) == CacheLookup(None, status)  # type: ignore[arg-type]
    stats = cache.stats
    assert {name: getattr(stats, name) for name in ("outdated", "newer", "damaged", "hits",
                                                     "misses") if getattr(stats, name)} == {
        status: 1}


def test_an_entry_of_a_newer_format_is_left_as_it_is(tmp_path: Path) -> None:
    # Another version of the tool shares the directory (two branches in one CI cache): its
    # entry is neither damage nor this version's to replace, or the two would overwrite each
    # other's entries for ever.
    key, other = content_key({"w": 1}), content_key({"w": 2})
    path = JudgeCache(tmp_path).entry_path(key)
    path.parent.mkdir(parents=True)
    newer = json.dumps({"format": ENTRY_FORMAT + 1, "key": key, "reply": "theirs"})
    path.write_text(newer, encoding="utf-8")
    cache = JudgeCache(tmp_path)
    assert cache.lookup(key).status == "newer"
    assert cache.lookup(key).status == "newer"
    assert cache.stats.newer == 2
    assert cache.put(key, {"content": "ours"}) is False
    assert path.read_text(encoding="utf-8") == newer
    assert (cache.stats.writes, cache.stats.write_errors, cache.stats.error) == (0, 0, None)
    # Only the keys found newer are left alone.
    assert cache.put(other, {"content": "ours"}) is True
    assert cache.get(other) == {"content": "ours"}
    # What another cache object has not looked up it writes, as it cannot know.
    assert JudgeCache(tmp_path).put(key, {"content": "ours"}) is True


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
    assert cache.stats.error == f"[Errno 21] Is a directory: '{cache.entry_path(key)}'"


def test_the_first_failure_is_kept_as_the_reason(tmp_path: Path) -> None:
    # The cache directory given is a file: nothing under it can be read or written, and the
    # run must say so rather than quietly ask for every reply again.
    root = tmp_path / "cache"
    root.write_text("a file", encoding="utf-8")
    cache = JudgeCache(root)
    first, second = content_key({"f": 1}), content_key({"f": 2})
    assert cache.put(first, {"content": "x"}) is False
    assert cache.stats.error == f"[Errno 17] File exists: '{root}'"
    assert cache.lookup(second).status == "unreadable"
    assert cache.put(second, {"score": float("nan")}) is False
    assert (cache.stats.unreadable, cache.stats.write_errors) == (1, 2)
    assert cache.stats.error == f"[Errno 17] File exists: '{root}'"
    reader = JudgeCache(root)
    assert reader.lookup(first).status == "unreadable"
    assert reader.stats.error == f"[Errno 20] Not a directory: '{reader.entry_path(first)}'"


def test_a_cache_this_user_may_only_read_serves_reads_and_says_why_writes_fail(
    shared_dir: Path
) -> None:
    # Another user's cache, as the default umask leaves it (0644 files, 0755 folders): an
    # entry is read; a write fails, counted, with the reason, and never raises.
    root = shared_dir / "cache"
    kept, new = content_key({"g": 1}), content_key({"g": 2})
    with umask(0o022):
        JudgeCache(root).put(kept, {"content": "kept"})
    for path in [root, *root.rglob("*")]:
        # The bits another user sees, for a user the owner's bits would let write.
        path.chmod(stat.S_IMODE(path.stat().st_mode) & ~0o222)
    with bound_by_permissions():
        cache = JudgeCache(root)
        assert cache.get(kept) == {"content": "kept"}
        assert cache.put(new, {"content": "new"}) is False
        assert cache.put(kept, {"content": "again"}) is False
    assert (cache.stats.hits, cache.stats.writes, cache.stats.write_errors) == (1, 0, 2)
    assert cache.stats.error == f"[Errno 13] Permission denied: '{root / new[:2]}'"
    assert JudgeCache(root).get(kept) == {"content": "kept"}


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
