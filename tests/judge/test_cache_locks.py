"""The cache directory's coordination parts, read directly: concurrency slots, the shared
request window, lock files, the per-key lock offsets and the names of spend ledgers.

Two ``FileSlots`` (or lock-file holders) in one process stand for two processes: ``flock``
locks belong to an open file, so each object's files conflict with the other's exactly as
another process's would.
"""

from __future__ import annotations

import asyncio
import contextlib
import hashlib
import json
import os
import stat
import tempfile
import time
from collections.abc import Coroutine
from pathlib import Path
from typing import Any, TypeVar

import pytest

from pytest_callqa.engine.llm import cache as cache_module
from pytest_callqa.engine.llm.cache import (
    FileRateWindow,
    FileSlots,
    JudgeCache,
    _lock_offset,
    _record_lock_fd,
    _safe_name,
    _try_flock,
    acquire_file_lock,
    release_file_lock,
)

from .helpers import bound_by_permissions, umask

T = TypeVar("T")


def run(coroutine: Coroutine[Any, Any, T]) -> T:
    return asyncio.run(asyncio.wait_for(coroutine, timeout=10))


# --- slots ----------------------------------------------------------------------------------


def test_a_slot_limit_below_one_is_refused(tmp_path: Path) -> None:
    with pytest.raises(ValueError, match=r"^concurrency limit must be at least 1, got 0$"):
        FileSlots(tmp_path, 0)


def test_slots_are_handed_out_in_order_and_one_freed_goes_to_the_oldest_waiter(
    tmp_path: Path
) -> None:
    async def scenario() -> list[object]:
        slots = FileSlots(tmp_path, 2)
        first, second = await slots.acquire(), await slots.acquire()
        early = asyncio.ensure_future(slots.acquire())
        late = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0.02)
        waiting = (early.done(), late.done())
        slots.release(second)
        handed = await early
        still_waiting = late.done()
        slots.release(handed)
        last = await late
        await slots.close()
        return [first, second, waiting, handed, still_waiting, last]

    assert run(scenario()) == [0, 1, (False, False), 1, False, 1]


def test_releasing_a_slot_not_held_changes_nothing(tmp_path: Path) -> None:
    async def scenario() -> list[int]:
        slots = FileSlots(tmp_path, 2)
        held = await slots.acquire()
        slots.release(1)  # never taken
        slots.release(held)
        slots.release(held)  # twice
        again = [await slots.acquire(), await slots.acquire()]
        await slots.close()
        return [held, *again]

    assert run(scenario()) == [0, 0, 1]


def test_a_slot_freed_by_another_process_is_found_by_polling(tmp_path: Path) -> None:
    async def scenario() -> tuple[list[int], bool, int, bool, int]:
        # The default poll, a few milliseconds: a slot another process frees is taken at
        # once, not a second later.
        mine = FileSlots(tmp_path, 2)
        theirs = FileSlots(tmp_path, 2)
        taken = [await theirs.acquire(), await theirs.acquire()]
        waiting = asyncio.ensure_future(mine.acquire())
        await asyncio.sleep(0.03)
        blocked = not waiting.done()
        theirs.release(taken[1])
        freed = time.monotonic()
        got = await waiting
        soon = time.monotonic() - freed < 0.5
        # Closing drops the other's lock on slot 0 too, so it is free for this process.
        await theirs.close()
        other = await mine.acquire()
        await mine.close()
        return taken, blocked, got, soon, other

    assert run(scenario()) == ([0, 1], True, 1, True, 0)


def test_a_process_holding_every_slot_does_not_poll(tmp_path: Path) -> None:
    async def scenario() -> tuple[bool, int]:
        slots = FileSlots(tmp_path, 1, poll_s=0.001)
        held = await slots.acquire()
        waiting = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0.01)
        polling = slots._poller is not None
        slots.release(held)
        got = await waiting
        await slots.close()
        return polling, got

    assert run(scenario()) == (False, 0)


def test_a_cancelled_waiter_gives_its_slot_to_the_next(tmp_path: Path) -> None:
    async def scenario() -> int:
        slots = FileSlots(tmp_path, 1)
        held = await slots.acquire()
        cancelled = asyncio.ensure_future(slots.acquire())
        kept = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0.01)
        cancelled.cancel()
        slots.release(held)
        got = await kept
        await slots.close()
        return got

    assert run(scenario()) == 0


def test_a_waiter_cancelled_after_it_was_handed_a_slot_gives_it_back(tmp_path: Path) -> None:
    async def scenario() -> int:
        slots = FileSlots(tmp_path, 1)
        held = await slots.acquire()
        waiter = asyncio.ensure_future(slots.acquire())
        await asyncio.sleep(0.01)
        slots.release(held)  # handed to the waiter, which has not resumed yet
        waiter.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await waiter
        # Given back: the only slot is free again rather than held by nobody for ever.
        got = await asyncio.wait_for(slots.acquire(), timeout=1.0)
        await slots.close()
        return got

    assert run(scenario()) == 0


def test_closing_stops_the_poller_of_a_waiting_call(tmp_path: Path) -> None:
    async def scenario() -> bool:
        theirs = FileSlots(tmp_path, 1)
        await theirs.acquire()
        mine = FileSlots(tmp_path, 1)
        waiting = asyncio.ensure_future(mine.acquire())
        await asyncio.sleep(0.02)
        poller = mine._poller
        await mine.close()
        waiting.cancel()
        await theirs.close()
        return poller is not None and poller.done()

    assert run(scenario()) is True


# --- the request window ---------------------------------------------------------------------


@pytest.mark.parametrize(("limit", "window"), [(0, 1.0), (1, 0.0), (2, -1.0)])
def test_a_rate_window_needs_a_limit_and_a_positive_window(
    tmp_path: Path, limit: int, window: float
) -> None:
    with pytest.raises(ValueError, match=rf"^a rate limit needs limit >= 1 and a positive "
                                         rf"window, got {limit} per {window}s$"):
        FileRateWindow(tmp_path, limit, window)


def test_the_window_lets_limit_starts_through_then_waits_for_the_oldest_to_age(
    tmp_path: Path
) -> None:
    window = FileRateWindow(tmp_path, 2, 0.3)

    async def scenario() -> tuple[float, float]:
        began = time.monotonic()
        await window.acquire()
        await window.acquire()
        quick = time.monotonic() - began
        await window.acquire()
        return quick, time.monotonic() - began

    quick, third = run(scenario())
    assert quick < 0.25 <= third
    starts = json.loads((tmp_path / "requests.json").read_text(encoding="utf-8"))
    # Starts that aged out of the window were dropped when the third was written (the
    # second may have aged out too by the time the third woke).
    assert 1 <= len(starts) <= 2 and max(starts) - min(starts) < 0.3


def test_a_full_window_is_read_again_once_it_frees_not_polled(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    window = FileRateWindow(tmp_path, 1, 0.2)
    reads: list[float] = []
    read = window._read

    def counted(now: float) -> list[float]:
        reads.append(now)
        return read(now)

    monkeypatch.setattr(window, "_read", counted)
    run(window.acquire())
    run(window.acquire())
    # One read per acquire, plus the one that found the window full and slept until the
    # first start aged out (and one more should the clock wake it a hair early): a poll
    # every few milliseconds would read it dozens of times.
    assert 3 <= len(reads) <= 4


def test_the_window_keeps_its_lock_and_log_and_writes_beside_the_log(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # The log is replaced by renaming a temporary file, which is atomic only within one
    # file system: the temporary file must be made in the log's folder, not the system's.
    monkeypatch.setattr(tempfile, "tempdir", str(tmp_path / "no such folder"))
    folder = tmp_path / "rate"
    folder.mkdir()
    run(FileRateWindow(folder, 3, 60.0).acquire())
    assert sorted(p.name for p in folder.iterdir()) == ["requests.json", "requests.lock"]


@pytest.mark.parametrize("log", ["{not json", '{"starts": [1]}', '["x", null]'])
def test_an_unreadable_request_log_counts_as_empty(tmp_path: Path, log: str) -> None:
    (tmp_path / "requests.json").write_text(log, encoding="utf-8")
    window = FileRateWindow(tmp_path, 1, 60.0)
    began = time.time()
    run(window.acquire())
    [start] = json.loads((tmp_path / "requests.json").read_text(encoding="utf-8"))
    assert start >= began


def test_starts_of_other_processes_in_the_log_count_against_the_limit(tmp_path: Path) -> None:
    now = time.time()
    (tmp_path / "requests.json").write_text(json.dumps([now - 120.0, now - 0.05]),
                                            encoding="utf-8")
    window = FileRateWindow(tmp_path, 2, 60.0)
    run(window.acquire())
    starts = json.loads((tmp_path / "requests.json").read_text(encoding="utf-8"))
    # The start two minutes old is outside the window; the recent one and the new one count.
    assert len(starts) == 2 and starts[0] == pytest.approx(now - 0.05)


# --- lock files -----------------------------------------------------------------------------


def test_a_lock_file_has_one_holder_at_a_time(tmp_path: Path) -> None:
    path = tmp_path / "ledger.lock"
    held = _try_flock(path)
    assert held is not None and path.exists()
    assert _try_flock(path) is None

    async def wait_then_take() -> int:
        waiting = asyncio.ensure_future(acquire_file_lock(path))
        await asyncio.sleep(0.02)
        assert not waiting.done()
        release_file_lock(held)
        return await waiting

    second = run(wait_then_take())
    assert _try_flock(path) is None
    release_file_lock(second)
    again = _try_flock(path)
    assert again is not None
    release_file_lock(again)


# --- names and offsets ----------------------------------------------------------------------


def test_a_keys_lock_offset_is_its_first_fifteen_hex_digits() -> None:
    key = hashlib.sha256(b"x").hexdigest()
    assert _lock_offset(key) == int(key[:15], 16)
    assert _lock_offset("fff" + "0" * 61) == 0xFFF000000000000
    # A key that is not hex (a hand-made one) is hashed first, never refused.
    assert _lock_offset("my key") == int(hashlib.sha256(b"my key").hexdigest()[:15], 16)
    assert _lock_offset("my key") < 2**60


@pytest.mark.parametrize(("run_id", "name"), [
    ("2026-11-23_run.1", "2026-11-23_run.1"),
    ("ci job/7 ä", "ci_job_7_ä"),
    ("../../etc", ".._.._etc"),
    ("", "run"),
    ("x" * 100, "x" * 80),
])
def test_a_run_id_becomes_a_safe_file_name(run_id: str, name: str) -> None:
    assert _safe_name(run_id) == name


def test_the_ledger_slots_and_window_live_in_the_cache_directory(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "cache")
    assert cache.ledger_path("ci job/7") == tmp_path / "cache" / "spend" / "ci_job_7.log"
    assert (tmp_path / "cache" / ".gitignore").exists()
    window = cache.rate_window(5, 30.0)
    assert window is not None and (window.limit, window.window_s) == (5, 30.0)
    slots = cache.slots(3)
    assert slots is not None and slots.limit == 3
    assert sorted(p.name for p in (tmp_path / "cache" / "slots").iterdir()) == [
        "0.lock", "1.lock", "2.lock"]
    run(slots.close())
    off = JudgeCache(None, "off")
    assert (off.ledger_path("x"), off.rate_window(5, 30.0), off.slots(3)) == (None, None, None)
    assert sorted(p.name for p in (tmp_path / "cache").iterdir()) == [
        ".gitignore", "rate", "slots", "spend"]


def test_a_process_opens_the_key_lock_file_once(tmp_path: Path) -> None:
    # Record locks are dropped when a process closes any descriptor of the file, so the
    # file is opened once and kept; a new descriptor per lock would also leak one per call.
    path = tmp_path / "keys.lock"
    first = _record_lock_fd(path)
    assert _record_lock_fd(path) == first
    assert _record_lock_fd(tmp_path / "other.lock") != first


@pytest.mark.parametrize(("mask", "mode"), [(0o000, 0o666), (0o022, 0o644), (0o077, 0o600)])
def test_lock_files_get_the_mode_the_umask_allows(tmp_path: Path, mask: int, mode: int) -> None:
    # Readable and writable, never executable, and as open to other users as the umask
    # says: every user of a shared cache must be able to lock them.
    with umask(mask):
        release_file_lock(_try_flock(tmp_path / "a.lock") or -1)
        _record_lock_fd(tmp_path / "b.lock")
        run(FileSlots(tmp_path, 1).close())
    for name in ("a.lock", "b.lock", "0.lock"):
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == mode


def test_a_lock_file_this_user_may_only_read_is_locked_all_the_same(shared_dir: Path) -> None:
    # Another user's lock files in a folder all may write (an older version made them 0644):
    # flock needs no write access, so they are opened read-only and still exclude.
    for name in ("0.lock", "ledger.lock"):
        (shared_dir / name).touch()
        (shared_dir / name).chmod(0o444)
    with bound_by_permissions():
        with pytest.raises(PermissionError):
            os.open(shared_dir / "0.lock", os.O_RDWR)
        held = _try_flock(shared_dir / "ledger.lock")
        assert held is not None and _try_flock(shared_dir / "ledger.lock") is None
        release_file_lock(held)
        first, second = FileSlots(shared_dir, 1), FileSlots(shared_dir, 1)
        assert (first._grab(), second._grab()) == (0, None)
        first.release(0)
        assert second._grab() == 0
        run(first.close())
        run(second.close())


def test_a_keys_file_this_user_may_only_read_leaves_keys_unlocked_and_says_why(
    shared_dir: Path
) -> None:
    # A record lock for writing needs a descriptor open for writing: without one the call
    # goes on unlocked (two processes may each ask for a reply) rather than fail.
    keys = shared_dir / "locks" / "keys.lock"
    keys.parent.mkdir()
    keys.parent.chmod(0o777)
    keys.touch()
    keys.chmod(0o444)
    with bound_by_permissions():
        cache = JudgeCache(shared_dir)

        async def locked() -> str:
            async with cache.lock("ab" * 32):
                return "entered"

        assert run(locked()) == "entered"
    assert cache.stats.lock_error == f"[Errno 13] Permission denied: '{keys}'"


def test_lock_files_that_cannot_be_opened_leave_limits_per_process_and_say_why(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A folder where a lock file should be: it opens neither read-write nor read-only.
    cache = JudgeCache(tmp_path)
    (tmp_path / "slots" / "1.lock").mkdir(parents=True)
    (tmp_path / "rate" / "requests.lock").mkdir(parents=True)
    opened: list[int] = []
    closed: list[int] = []
    real_open, real_close = os.open, os.close

    def counted_open(*args: Any, **kwargs: Any) -> int:
        opened.append(real_open(*args, **kwargs))
        return opened[-1]

    def counted_close(fd: int) -> None:
        closed.append(fd)
        real_close(fd)

    monkeypatch.setattr(os, "open", counted_open)
    monkeypatch.setattr(os, "close", counted_close)
    assert cache.slots(2) is None
    # The slot file that did open is closed again, not leaked.
    assert len(opened) == 1 and closed == opened
    assert cache.stats.lock_error == f"[Errno 21] Is a directory: '{tmp_path / 'slots' / '1.lock'}'"
    assert cache.rate_window(5, 60.0) is None
    assert cache.stats.lock_error == f"[Errno 21] Is a directory: '{tmp_path / 'slots' / '1.lock'}'"
    second = JudgeCache(tmp_path)
    assert second.rate_window(5, 60.0) is None
    assert second.stats.lock_error == (
        f"[Errno 21] Is a directory: '{tmp_path / 'rate' / 'requests.lock'}'")
    # What opens is used as before.
    window = JudgeCache(tmp_path / "fine").rate_window(5, 60.0)
    assert window is not None and (tmp_path / "fine" / "rate" / "requests.lock").is_file()


def test_a_lock_folder_that_cannot_be_made_is_named(tmp_path: Path) -> None:
    root = tmp_path / "cache"
    root.write_text("a file", encoding="utf-8")
    cache = JudgeCache(root)
    assert (cache.slots(2), cache.rate_window(5, 60.0), cache.ledger_path("run")) == (
        None, None, None)
    assert cache.stats.lock_error == f"[Errno 17] File exists: '{root}'"


def test_a_waiter_for_a_lock_file_backs_off_instead_of_spinning(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    path = tmp_path / "ledger.lock"
    held = _try_flock(path)
    assert held is not None
    tries: list[int] = []

    def counted(target: Path) -> int | None:
        tries.append(1)
        return _try_flock(target)

    monkeypatch.setattr(cache_module, "_try_flock", counted)

    async def hold_then_release() -> int:
        waiting = asyncio.ensure_future(acquire_file_lock(path))
        await asyncio.sleep(0.15)
        release_file_lock(held)
        return await waiting

    release_file_lock(run(hold_then_release()))
    # Waits grow from 2 ms by half each time up to 20 ms: about ten tries in 150 ms.
    assert 5 <= len(tries) <= 15


def test_the_cache_directory_is_made_with_its_parents(tmp_path: Path) -> None:
    cache = JudgeCache(tmp_path / "deep" / "er" / "cache")
    assert cache.put("ab" + "0" * 62, {"content": "x"})
    assert cache.get("ab" + "0" * 62) == {"content": "x"}


def test_a_gitignore_that_cannot_be_written_does_not_stop_the_cache(tmp_path: Path) -> None:
    # A dangling symbolic link: not there to read, and no file can be written through it.
    root = tmp_path / "cache"
    root.mkdir()
    (root / ".gitignore").symlink_to(tmp_path / "nowhere" / "ignore")
    cache = JudgeCache(root)
    assert cache.put("cd" + "0" * 62, {"content": "x"})
    assert cache.stats.write_errors == 0


def test_a_temporary_file_that_vanishes_during_the_sweep_is_skipped(tmp_path: Path) -> None:
    # Another process's sweep can remove a stale file between the listing and the stat; a
    # dangling link is the same sight: listed, then not found.
    cache = JudgeCache(tmp_path / "cache")
    folder = tmp_path / "cache" / "ef"
    folder.mkdir(parents=True)
    (folder / ".gone.tmp").symlink_to(tmp_path / "nowhere")
    assert cache.put("ef" + "0" * 62, {"content": "x"})
