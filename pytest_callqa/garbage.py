"""The garbage collector of a process that runs evaluations.

Collection builds what the rest of the run keeps: pytest's items, the engine's modules and
types, pydantic's, the golden-case catalogue. Python's cyclic collector walks every one of
them again and again — while the catalogue loads, in the oldest generation's passes during
the tests, and twice more when pytest ends (its check for exceptions raised in finalisers
collects before and after unconfiguring) — for objects that are garbage only at exit. On a
warm re-run of 200 judged outputs that was ~0.2 s of a 1.7 s process. So the collector is
paused while the catalogue loads, what collection built is frozen (moved out of the
collector's reach, :func:`gc.freeze`) once a process knows it will run evaluations, and
unfrozen again after pytest's last check, so a host that goes on after ``pytest.main`` (an
IDE, several runs in one process) keeps its collector as it was. Objects made during the
tests are collected as before: pytest still reports an exception raised in their
finalisers. The xdist controller, which collects nothing and runs no test, freezes what it
built once its scorecard and report are written (``plugin.pytest_sessionfinish``). And at
the interpreter's exit the collector is frozen once more, so Python's shutdown does not walk
everything a last time."""

from __future__ import annotations

import atexit
import gc
from collections.abc import Iterator
from contextlib import contextmanager

_registered = False


@contextmanager
def paused() -> Iterator[None]:
    """No cyclic collection inside: what is built here (the catalogue, the engine's imports)
    lives to the end of the run, and each pass over it would find nothing to free."""
    enabled = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if enabled:
            gc.enable()


class CollectedFrozen:
    """Freezes what collection built (:meth:`freeze`, once ``wanted``: the process collected
    evaluation tests) and unfreezes it (:meth:`thaw`, which must run after pytest's last
    collection: see ``plugin.pytest_configure``)."""

    def __init__(self) -> None:
        self.wanted = False
        self.frozen = False

    def freeze(self) -> None:
        # A host that froze objects of its own, or turned the collector off, manages it
        # itself: unfreezing ours would unfreeze its objects too.
        if self.wanted and not self.frozen and gc.isenabled() and not gc.get_freeze_count():
            gc.freeze()
            self.frozen = True

    def thaw(self) -> None:
        if self.frozen:
            gc.unfreeze()
            self.frozen = False


def skip_exit_collection() -> None:
    """Freeze the garbage collector once the interpreter is exiting (an exit handler, so a
    host that goes on after ``pytest.main`` keeps collecting as before). Python's shutdown
    otherwise walks every tracked object of pytest, pydantic, numpy and openai's thousands of
    types once more before the process ends: about 0.1 s of every run, for memory the system
    reclaims anyway. Exit handlers still run, and objects are still released as the modules
    are torn down; only garbage in reference cycles is left to the system. Registered once
    per process."""
    global _registered
    if not _registered:
        atexit.register(gc.freeze)
        _registered = True
