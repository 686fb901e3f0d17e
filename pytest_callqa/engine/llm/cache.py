"""The on-disk cache of model replies, and the file locks that let processes share it.

Entries are content-addressed JSON files, ``<dir>/<key[:2]>/<key>.json``, each written to a
temporary file in the same directory and moved into place with ``os.replace``: a reader sees
either no entry or a whole one, whatever happens to the writer. Each entry carries the
SHA-256 of the canonical JSON of the value it stores; an entry that does not match it (a
disk filled up, a file edited by hand or cut short, one filed under another key) is
*damaged*: a miss, counted, and rewritten by the next call. Entries of an older format are
plain misses; entries of a newer format (a newer version of the tool sharing the directory)
are plain misses left as they are. Entries hold the reply text, its token usage and what
produced it — never the API key, the endpoint or any HTTP header. No ``fsync``: a killed
process loses nothing the kernel already has, and a power cut at worst leaves a damaged
entry, which is a miss.

Entries and lock files get the mode ``open()`` would give them (0o666 less the umask). What
cannot be read, written or locked (another user's files, a directory that is a file) never
raises: a failed read is a miss, a failed write keeps nothing, an unusable lock file leaves
coordination per process — each noted in :class:`CacheStats` for the run to report.

The same directory coordinates processes (pytest-xdist workers, or two runs at once):

- a per-key lock held from the cache lookup to the cache write, so of several processes
  wanting one reply exactly one asks for it and the others read the entry. The lock is one
  byte of ``keys.lock`` at an offset taken from the key (a POSIX record lock): no file is
  created per key, which on a busy disk costs more than the rest of a call;
- ``slots/<i>.lock`` files, one per unit of the concurrency limit: a request is sent only
  while its process holds one, so the limit holds for all processes together;
- a shared request log for the requests-per-minute limit, and a spend ledger per run id in
  which every request reserves its worst-case cost before it is sent (under the ledger's
  lock), so the budget holds for all processes together.

The kernel drops every lock of a process that dies, so a killed worker never leaves one
behind. Locks are taken with non-blocking attempts and ``asyncio.sleep`` between them: a
thread blocked in a lock call would hold an executor thread that a lock holder in the same
process may need, which can deadlock two processes that wait on each other's keys. On
platforms without ``fcntl`` (Windows) the cache still works, but coordination is per
process.
"""

from __future__ import annotations

import asyncio
import contextlib
import errno
import hashlib
import json
import os
import secrets
import shutil
import sys
import threading
import time
from collections import deque
from collections.abc import AsyncIterator, Mapping
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..core.defaults import DEFAULT_CACHE_DIR

if sys.platform != "win32":
    import fcntl

CacheMode = Literal["off", "ro", "rw"]
CACHE_MODES: tuple[str, ...] = ("off", "ro", "rw")
# 2: entries carry the digest of their value; format-1 entries are read as misses.
ENTRY_FORMAT = 2
# A temporary file this old belongs to a writer that died; no live write takes minutes.
_STALE_TEMP_S = 600.0
# The runs' exchanges (JudgeCache.run_exchange), and the age past which one is a killed run's.
_EXCHANGES = "runs"
_STALE_EXCHANGE_S = 86_400.0
# Lock polling: start fast (a lock is typically held for one request), back off to keep
# a long wait cheap.
_POLL_FIRST_S = 0.002
_POLL_MAX_S = 0.02


def content_key(payload: Mapping[str, Any]) -> str:
    """SHA-256 of the canonical JSON of ``payload``: equal payloads, equal keys."""
    text = json.dumps(payload, sort_keys=True, ensure_ascii=False, separators=(",", ":"),
                      default=str)
    return hashlib.sha256(text.encode("utf-8")).hexdigest()


LookupStatus = Literal["hit", "miss", "damaged", "outdated", "newer", "unreadable", "off"]
# What open() asks for; the umask takes away what the user does not give others.
_FILE_MODE = 0o666


@dataclass
class CacheStats:
    """``damaged``: entries present but not whole (cut short, edited, another key's);
    ``outdated``: entries of an older format; ``newer``: entries of a newer format, left
    as they are; ``unreadable``: files the system would not read (permissions, an I/O
    error); ``error``: the first failed read or write, as the system worded it (it names the
    file); ``lock_error``: the first lock folder or file that could not be used, which left
    processes uncoordinated."""

    hits: int = 0
    misses: int = 0
    damaged: int = 0
    outdated: int = 0
    newer: int = 0
    unreadable: int = 0
    writes: int = 0
    write_errors: int = 0
    error: str | None = None
    lock_error: str | None = None


@dataclass(frozen=True)
class CacheLookup:
    """What a lookup found: the stored value on a ``hit``, else None and why."""

    value: dict[str, Any] | None
    status: LookupStatus


def _open_lock_file(path: Path) -> int:
    """A descriptor of lock file ``path``, made if missing; read-only when this user may not
    write it (another user's file): ``flock`` needs no write access. Raises OSError."""
    try:
        return os.open(path, os.O_RDWR | os.O_CREAT, _FILE_MODE)
    except PermissionError:
        return os.open(path, os.O_RDONLY)


def _try_flock(path: Path) -> int | None:
    """An fd holding an exclusive lock on ``path``, or None when another holder has it."""
    fd = _open_lock_file(path)
    if sys.platform == "win32":
        return fd
    try:
        fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        os.close(fd)
        return None
    return fd


def release_file_lock(fd: int) -> None:
    if sys.platform != "win32":
        fcntl.flock(fd, fcntl.LOCK_UN)
    os.close(fd)


async def acquire_file_lock(path: Path) -> int:
    delay = _POLL_FIRST_S
    while True:
        fd = _try_flock(path)
        if fd is not None:
            return fd
        await asyncio.sleep(delay)
        delay = min(delay * 1.5, _POLL_MAX_S)


class JudgeCache:
    """Replies of judge and generation calls, keyed by :func:`content_key`.

    ``mode``: ``rw`` reads and writes, ``ro`` only reads (a CI job that must not grow the
    cache), ``off`` neither — the directory is then only used to coordinate processes.
    """

    def __init__(
        self, directory: str | os.PathLike[str] | None = DEFAULT_CACHE_DIR,
        mode: CacheMode | str = "rw",
    ) -> None:
        if mode not in CACHE_MODES:
            raise ValueError(f"cache mode must be one of {', '.join(CACHE_MODES)}, got {mode!r}")
        if directory is None and mode != "off":
            raise ValueError(f"cache mode {mode!r} needs a directory")
        self.mode: str = mode
        self.directory = Path(directory) if directory is not None else None
        self.stats = CacheStats()
        self._made_dirs: set[Path] = set()
        # Keys whose entry a newer version wrote: put() leaves those entries to it.
        self._newer: set[str] = set()

    def __repr__(self) -> str:
        return f"JudgeCache({str(self.directory)!r}, mode={self.mode!r})"

    @property
    def readable(self) -> bool:
        return self.mode in ("ro", "rw")

    @property
    def writable(self) -> bool:
        return self.mode == "rw"

    def describe(self) -> str:
        if self.mode == "off":
            return "cache off"
        return f"cache {self.mode} ({self.directory})"

    def entry_path(self, key: str) -> Path:
        if self.directory is None:
            raise ValueError("this cache has no directory")
        return self.directory / key[:2] / f"{key}.json"

    # --- entries ----------------------------------------------------------------------

    def get(self, key: str) -> dict[str, Any] | None:
        """The stored value for ``key``, or None (absent, damaged, or cache not readable)."""
        return self.lookup(key).value

    def lookup(self, key: str) -> CacheLookup:
        """The stored value for ``key`` and, when there is none, why (see :class:`CacheStats`)."""
        if not self.readable:
            return CacheLookup(None, "off")
        path = self.entry_path(key)
        try:
            text = path.read_text(encoding="utf-8")
        except FileNotFoundError:
            self.stats.misses += 1
            return CacheLookup(None, "miss")
        except UnicodeDecodeError:
            return self._damaged()
        except OSError as exc:
            self.stats.unreadable += 1
            self._note_error(exc)
            return CacheLookup(None, "unreadable")
        try:
            data = json.loads(text)
        except (ValueError, RecursionError):
            # Not JSON, or JSON past Python's limits (nesting, a >4,300-digit number).
            return self._damaged()
        if not isinstance(data, dict):
            return self._damaged()
        # Another format's entry is shaped as that format says, so its shape is not checked.
        version = data.get("format")
        if isinstance(version, int) and version < ENTRY_FORMAT:
            self.stats.outdated += 1
            return CacheLookup(None, "outdated")
        if isinstance(version, int) and version > ENTRY_FORMAT:
            return self._newer_entry(key)
        if version != ENTRY_FORMAT or not isinstance(data.get("value"), dict):
            return self._damaged()
        value: dict[str, Any] = data["value"]
        if data.get("key") != key or data.get("digest") != content_key(value):
            return self._damaged()
        self.stats.hits += 1
        return CacheLookup(value, "hit")

    def _damaged(self) -> CacheLookup:
        self.stats.damaged += 1
        return CacheLookup(None, "damaged")

    def _newer_entry(self, key: str) -> CacheLookup:
        # A newer version of the tool shares the directory (two branches in one CI cache):
        # rewriting its entry in this format would have the two overwrite each other for ever.
        self.stats.newer += 1
        self._newer.add(key)
        return CacheLookup(None, "newer")

    def _note_error(self, exc: Exception) -> None:
        if self.stats.error is None:
            self.stats.error = str(exc)

    def _note_lock_error(self, reason: str) -> None:
        if self.stats.lock_error is None:
            self.stats.lock_error = reason

    def put(self, key: str, value: Mapping[str, Any]) -> bool:
        """Store ``value`` atomically; False when the cache is not writable, the entry is a
        newer version's (see :meth:`lookup`), or the write failed (a full disk must not fail
        an evaluation; the reply is simply not kept)."""
        if not self.writable or key in self._newer:
            return False
        path = self.entry_path(key)
        try:
            record = {"format": ENTRY_FORMAT, "key": key, "written": time.time(),
                      "digest": content_key(value), "value": value}
            payload = json.dumps(record, ensure_ascii=False, sort_keys=True, allow_nan=False)
            self._ensure_dir(path.parent)
            write_whole(path, payload, prefix=f".{key}.")
        except (OSError, ValueError) as exc:
            self.stats.write_errors += 1
            self._note_error(exc)
            return False
        self.stats.writes += 1
        return True

    def _ensure_root(self) -> None:
        assert self.directory is not None
        if self.directory in self._made_dirs:
            return
        self.directory.mkdir(parents=True, exist_ok=True)
        ignore = self.directory / ".gitignore"
        if not ignore.exists():
            # Same convention as .pytest_cache: the cache never ends up in a commit.
            with contextlib.suppress(OSError):
                ignore.write_text("# created by pytest-callqa\n*\n", encoding="utf-8")
        self._made_dirs.add(self.directory)

    def _ensure_dir(self, folder: Path) -> None:
        """Create an entry folder once per cache object, sweeping the temporary files that
        writers killed mid-write left in it."""
        if folder in self._made_dirs:
            return
        self._ensure_root()
        folder.mkdir(parents=True, exist_ok=True)
        cutoff = time.time() - _STALE_TEMP_S
        for tmp in folder.glob(".*.tmp"):
            with contextlib.suppress(OSError):
                if tmp.stat().st_mtime < cutoff:
                    tmp.unlink()
        self._made_dirs.add(folder)

    # --- coordination -----------------------------------------------------------------

    def _coordination_dir(self, name: str) -> Path | None:
        """A folder for lock files, or None without a directory or when it cannot be
        written (a read-only cache on a read-only disk, another user's folder): coordination
        is then per process."""
        if self.directory is None:
            return None
        folder = self.directory / name
        if folder not in self._made_dirs:
            try:
                self._ensure_root()
                folder.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                self._note_lock_error(str(exc))
                return None
            if not os.access(folder, os.W_OK):
                self._note_lock_error(f"{folder} is not writable")
                return None
            self._made_dirs.add(folder)
        return folder

    @contextlib.asynccontextmanager
    async def lock(self, key: str) -> AsyncIterator[None]:
        """Hold ``key`` against other processes from lookup to write (``rw`` mode only:
        without writes a waiter could not profit from the holder's reply)."""
        folder = self._coordination_dir("locks") if self.writable else None
        fd = None if folder is None or sys.platform == "win32" else self._keys_fd(folder)
        if fd is None:
            yield
            return
        offset = _lock_offset(key)
        delay = _POLL_FIRST_S
        while True:
            try:
                fcntl.lockf(fd, fcntl.LOCK_EX | fcntl.LOCK_NB, 1, offset)
                break
            except OSError as exc:
                if exc.errno not in (errno.EACCES, errno.EAGAIN):
                    raise
            await asyncio.sleep(delay)
            delay = min(delay * 1.5, _POLL_MAX_S)
        try:
            yield
        finally:
            fcntl.lockf(fd, fcntl.LOCK_UN, 1, offset)

    def _keys_fd(self, folder: Path) -> int | None:
        try:
            return _record_lock_fd(folder / "keys.lock")
        except OSError as exc:
            # A record lock for writing needs a descriptor open for writing: without one,
            # calls go on unlocked, and two processes may each ask for one reply.
            self._note_lock_error(str(exc))
            return None

    def slots(self, limit: int) -> FileSlots | None:
        """A concurrency limit shared by every process using this directory."""
        folder = self._coordination_dir("slots")
        if folder is None:
            return None
        try:
            return FileSlots(folder, limit)
        except OSError as exc:
            self._note_lock_error(str(exc))
            return None

    def rate_window(self, limit: int, window_s: float) -> FileRateWindow | None:
        """A requests-per-window limit shared by every process using this directory."""
        folder = self._coordination_dir("rate")
        if folder is None:
            return None
        try:
            return FileRateWindow(folder, limit, window_s)
        except OSError as exc:
            self._note_lock_error(str(exc))
            return None

    def run_exchange(self, run_id: str) -> JudgeCache | None:
        """A cache of run ``run_id`` alone: every reply of an ``off`` or ``ro`` cache, what no
        cache keeps (kept.py); removed by :meth:`end_exchange`, or swept after a day."""
        folder = self._coordination_dir(_EXCHANGES)
        if folder is None:
            return None
        for old in folder.iterdir():
            # One gone meanwhile (another run sweeping) is skipped, not the end of the sweep.
            with contextlib.suppress(OSError):
                if old.stat().st_mtime < time.time() - _STALE_EXCHANGE_S:
                    shutil.rmtree(old, ignore_errors=True)
        return JudgeCache(folder / _safe_name(run_id), "rw")

    def end_exchange(self, run_id: str) -> None:
        if self.directory is not None:
            shutil.rmtree(self.directory / _EXCHANGES / _safe_name(run_id), ignore_errors=True)

    def ledger_path(self, run_id: str) -> Path | None:
        """Where run ``run_id`` keeps its spend ledger (see ``budget.SpendLedger``)."""
        folder = self._coordination_dir("spend")
        return None if folder is None else folder / f"{_safe_name(run_id)}.log"


# Record locks belong to the process and are all dropped when it closes *any* descriptor of
# the file, so each process opens a lock file once and never closes it.
_RECORD_LOCK_FDS: dict[str, int] = {}
_RECORD_LOCK_GUARD = threading.Lock()


def _record_lock_fd(path: Path) -> int:
    with _RECORD_LOCK_GUARD:
        fd = _RECORD_LOCK_FDS.get(str(path))
        if fd is None:
            fd = _RECORD_LOCK_FDS[str(path)] = os.open(path, os.O_RDWR | os.O_CREAT, _FILE_MODE)
        return fd


def _lock_offset(key: str) -> int:
    """A byte offset per key, below 2**60; keys are SHA-256 hex digests already."""
    try:
        return int(key[:15], 16)
    except ValueError:
        return int(hashlib.sha256(key.encode("utf-8")).hexdigest()[:15], 16)


def write_whole(path: Path, text: str, *, prefix: str) -> None:
    """Write ``text`` to ``path`` through a temporary file in the same directory (named
    ``prefix``, 16 random hex digits, ``.tmp``) moved into place: a reader sees the old file
    or the whole new one. The file gets the mode ``open()`` would give it (``mkstemp``'s
    0600 would shut every other user of a shared cache out). Raises OSError; the temporary
    file is removed whatever stopped the write."""
    tmp = path.parent / f"{prefix}{secrets.token_hex(8)}.tmp"
    # O_EXCL: a name already taken (one chance in 2**64) fails this write like any error.
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL, _FILE_MODE)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(OSError):
            os.unlink(tmp)
        raise


def _safe_name(text: str) -> str:
    cleaned = "".join(c if c.isalnum() or c in "-_." else "_" for c in text)
    return cleaned[:80] or "run"


class FileSlots:
    """``limit`` lock files; a request is in flight only while its process holds one.

    The slot files stay open for the life of the object, so taking a slot is one
    non-blocking ``flock`` per candidate. A slot released while calls of the same process
    wait goes straight to the oldest of them, still locked: no scan, no poll, which is what
    keeps a single process at full speed. Calls that find no free slot are served by one
    poller per process that scans for slots freed by other processes.
    """

    def __init__(self, folder: Path, limit: int, poll_s: float = 0.004) -> None:
        if limit < 1:
            raise ValueError(f"concurrency limit must be at least 1, got {limit}")
        self.limit = limit
        self.poll_s = poll_s
        self._fds: list[int] = []
        try:
            for index in range(limit):
                self._fds.append(_open_lock_file(folder / f"{index}.lock"))
        except OSError:
            for fd in self._fds:
                os.close(fd)
            raise
        self._held: set[int] = set()
        self._waiters: deque[asyncio.Future[int]] = deque()
        self._poller: asyncio.Task[None] | None = None

    def _grab(self) -> int | None:
        for index, fd in enumerate(self._fds):
            if index in self._held:
                continue
            if sys.platform != "win32":
                try:
                    fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                except BlockingIOError:
                    continue
            self._held.add(index)
            return index
        return None

    def _next_waiter(self) -> asyncio.Future[int] | None:
        while self._waiters:
            waiter = self._waiters.popleft()
            if not waiter.done():
                return waiter
        return None

    async def acquire(self) -> int:
        if not self._waiters:
            slot = self._grab()
            if slot is not None:
                return slot
        future: asyncio.Future[int] = asyncio.get_running_loop().create_future()
        self._waiters.append(future)
        if (self._poller is None or self._poller.done()) and len(self._held) < self.limit:
            self._poller = asyncio.create_task(self._poll())
        try:
            return await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release(future.result())
            raise

    def release(self, slot: int) -> None:
        if slot not in self._held:
            return
        waiter = self._next_waiter()
        if waiter is not None:
            waiter.set_result(slot)
            return
        self._held.discard(slot)
        if sys.platform != "win32":
            fcntl.flock(self._fds[slot], fcntl.LOCK_UN)

    async def _poll(self) -> None:
        while self._waiters:
            if len(self._held) == self.limit:
                # Every slot is this process's: releases reach the waiters directly, and
                # there is nothing another process could free.
                return
            slot = self._grab()
            if slot is None:
                await asyncio.sleep(self.poll_s)
                continue
            # Goes to the oldest waiter still waiting; with none left (all cancelled) it is
            # freed again and the loop ends, as release() emptied the queue.
            self.release(slot)

    async def close(self) -> None:
        if self._poller is not None and not self._poller.done():
            self._poller.cancel()
            with contextlib.suppress(asyncio.CancelledError):
                await self._poller
        for fd in self._fds:
            os.close(fd)  # closing drops any lock still held
        self._fds = []
        self._held.clear()


class FileRateWindow:
    """At most ``limit`` request starts in any ``window_s`` seconds, across processes.

    The start times live in one small JSON file, rewritten atomically under a lock file;
    an unreadable log counts as empty (a killed writer can at worst allow one extra window).
    Raises OSError when the lock file cannot be opened at all, so that is found before the
    first request rather than at it.
    """

    def __init__(self, folder: Path, limit: int, window_s: float) -> None:
        if limit < 1 or window_s <= 0:
            raise ValueError(f"a rate limit needs limit >= 1 and a positive window, got "
                             f"{limit} per {window_s}s")
        self.limit = limit
        self.window_s = window_s
        self._lock = folder / "requests.lock"
        self._log = folder / "requests.json"
        os.close(_open_lock_file(self._lock))

    def _read(self, now: float) -> list[float]:
        try:
            data = json.loads(self._log.read_text(encoding="utf-8"))
        except (OSError, ValueError):
            return []
        if not isinstance(data, list):
            return []
        return [t for t in data if isinstance(t, (int, float)) and now - t < self.window_s]

    def _write(self, starts: list[float]) -> None:
        write_whole(self._log, json.dumps(starts), prefix=".requests.")

    async def acquire(self) -> None:
        while True:
            fd = await acquire_file_lock(self._lock)
            try:
                now = time.time()
                starts = self._read(now)
                if len(starts) < self.limit:
                    starts.append(now)
                    self._write(starts)
                    return
                wait = min(starts) + self.window_s - now
            finally:
                release_file_lock(fd)
            await asyncio.sleep(max(wait, _POLL_FIRST_S))
