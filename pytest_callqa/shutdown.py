"""The end of a process that ran evaluations."""

from __future__ import annotations

import atexit
import gc

_registered = False


def skip_exit_collection() -> None:
    """Freeze the garbage collector once the interpreter is exiting (an exit handler, so a
    host that goes on after ``pytest.main`` — an IDE, an inline pytester run — keeps
    collecting as before). Python's shutdown otherwise walks every tracked object of
    pytest, pydantic, numpy and openai's thousands of types once more before the process
    ends: about 0.1 s of every run, for memory the system reclaims anyway. Exit handlers
    still run, and objects are still released as the modules are torn down; only garbage in
    reference cycles is left to the system. Registered once per process."""
    global _registered
    if not _registered:
        atexit.register(gc.freeze)
        _registered = True
