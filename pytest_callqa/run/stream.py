"""A process's up-front judge batch, run on a thread of its own beside the tests.

The batch's calls spend nearly all their time waiting on the server; its tests spend theirs
scoring. Sent in collection order, the first pairs' verdicts are in after one round trip,
so the tests start then, each waiting only for its own pair's verdicts, and by the time the
last reply is in, the tests before it have run. The batch sends exactly what it sent when it
ran before the first test (the same calls, in the same order, under the same limits): only
its results are used sooner.
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Generic, TypeVar

if TYPE_CHECKING:
    from ..engine.core.judging import JudgeVerdict

K = TypeVar("K", bound=Hashable)
# How the batch hands on each output's verdicts: its index in the batch and its verdicts.
OnReady = Callable[[int, "list[JudgeVerdict]"], None]


class VerdictStream(Generic[K]):
    """``batch(on_ready)`` run on a daemon thread; ``keys[i]`` names the batch's output
    ``i``. What it hands on waits in :meth:`take` until the main thread collects it; what
    it raises is kept in ``failure`` for the main thread to deal with."""

    def __init__(self, keys: list[K], batch: Callable[[OnReady], object]) -> None:
        self.keys = keys
        self.failure: BaseException | None = None
        self.ended = False
        self._handed: set[K] = set()
        self._ready: dict[K, list[JudgeVerdict]] = {}
        # The main thread is woken only for the key it waits for (or the batch's end), not
        # for every hand-over: each wake-up takes the interpreter from the batch's thread.
        self._lock = threading.Lock()
        self._wake = threading.Condition(self._lock)
        self._wanted: K | None = None
        self._sending = threading.Event()
        self._thread = threading.Thread(target=self._run, args=(batch,), name="callqa-judge",
                                        daemon=True)

    def start(self) -> None:
        self._thread.start()

    def _run(self, batch: Callable[[OnReady], object]) -> None:
        try:
            batch(self._hand_on)
        except BaseException as exc:  # the main thread deals with it, as with a reply's
            self.failure = exc
        finally:
            with self._lock:
                self.ended = True
                self._wake.notify_all()
            self._sending.set()

    def _hand_on(self, index: int, verdicts: list[JudgeVerdict]) -> None:
        key = self.keys[index]
        with self._lock:
            self._handed.add(key)
            self._ready[key] = verdicts
            if key == self._wanted:
                self._wake.notify_all()

    def sending(self) -> None:
        """The batch's endpoints are checked and its first call goes out (the cache
        answers the rest of the batch's requests it holds as the calls go)."""
        self._sending.set()

    def wait_sending(self) -> None:
        """Until the batch sends its first call, or ends (answered by the cache, or
        stopped before any call: see ``failure``)."""
        self._sending.wait()

    def wait_for(self, key: K) -> None:
        """Until ``key``'s verdicts are handed on, or the batch ends without them."""
        with self._lock:
            self._wanted = key
            try:
                self._wake.wait_for(lambda: key in self._handed or self.ended)
            finally:
                self._wanted = None

    def take(self) -> dict[K, list[JudgeVerdict]]:
        """The verdicts handed on since the last call, by key."""
        with self._lock:
            ready, self._ready = self._ready, {}
        return ready

    def unhanded(self) -> list[K]:
        """The batch's keys whose verdicts were never handed on, in batch order."""
        with self._lock:
            return [key for key in self.keys if key not in self._handed]

    def join(self, timeout: float | None = None) -> None:
        self._thread.join(timeout)
