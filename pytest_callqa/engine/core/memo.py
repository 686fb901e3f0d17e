"""Per-text work remembered for the length of one batch.

Scoring a batch re-reads the same texts many times: every model's output for a case is
checked against the same transcript and truth, and an agent's every reply against the whole
conversation before it. Functions decorated with :func:`batch_memoised` keep their answers
while a :func:`batch_memo` scope is open — the engine opens one around each evaluation batch
— and forget them when it closes, so nothing outlives the batch, unless the caller keeps the
memo to open again (``batch_memo(keep=...)``: the pytest plugin keeps one per process across
its tests' evaluations). Each function's table is bounded: past ``limit`` entries the oldest
answer is dropped. Outside a scope the functions simply compute.

Only pure functions of hashable arguments may be memoised, and their answers must be
immutable (tuples, frozensets, strings, frozen dataclasses and pydantic models): the same
object is handed to every caller. An immutable argument that cannot be hashed (a frozen
pydantic model holding lists, such as a golden case) is passed as :class:`ByIdentity`.
"""

from __future__ import annotations

import functools
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from typing import Any, Generic, ParamSpec, TypeVar

P = ParamSpec("P")
R = TypeVar("R")
T = TypeVar("T")

# Entries per memoised function: enough for the distinct texts of a large batch (a
# transcript's turns, its outputs' sentences), small enough that a scope stays a few MB.
DEFAULT_LIMIT = 4096


class Memo:
    """The answers of a scope: a fresh one per :func:`batch_memo` block, or one a caller
    keeps and opens again (``batch_memo(keep=...)``), each function's table bounded by
    ``limit`` either way."""

    def __init__(self, limit: int = DEFAULT_LIMIT) -> None:
        if limit < 1:
            raise ValueError(f"a batch memo needs a limit of at least 1 entry, got {limit}")
        self.limit = limit
        self.tables: dict[Callable[..., Any], dict[Any, Any]] = {}


_ACTIVE: ContextVar[Memo | None] = ContextVar("callqa_batch_memo", default=None)
# The bound method, looked up once: every memoised call asks for the open scope.
_active = _ACTIVE.get
# What a table gives for arguments it has not seen (no answer is this object).
_MISSING: Any = object()


@contextmanager
def batch_memo(limit: int = DEFAULT_LIMIT, *, keep: Memo | None = None) -> Iterator[None]:
    """Remember memoised answers until the block ends; with ``keep``, in that memo, whose
    answers the next block opened with it finds again (one test's evaluation reuses what
    an earlier one worked out about the same case). A scope opened inside another one
    joins it (the outer batch is the longer one)."""
    if _ACTIVE.get() is not None:
        yield
        return
    token = _ACTIVE.set(keep if keep is not None else Memo(limit))
    try:
        yield
    finally:
        _ACTIVE.reset(token)


def in_batch_memo(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` run inside a :func:`batch_memo` scope (joining the caller's, if one is open)."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        with batch_memo():
            return fn(*args, **kwargs)

    return wrapper


def memo_sizes() -> dict[str, int]:
    """Entries held per memoised function in the open scope (empty outside one)."""
    memo = _ACTIVE.get()
    if memo is None:
        return {}
    return {getattr(fn, "__qualname__", repr(fn)): len(t) for fn, t in memo.tables.items()}


def batch_memoised(fn: Callable[P, R]) -> Callable[P, R]:
    """``fn`` answered from the open :func:`batch_memo` scope when it has seen the same
    positional arguments; see the module docstring for what ``fn`` must satisfy."""

    @functools.wraps(fn)
    def wrapper(*args: P.args, **kwargs: P.kwargs) -> R:
        memo = _active()
        if memo is None or kwargs:
            return fn(*args, **kwargs)
        try:
            table = memo.tables[fn]
        except KeyError:  # once per function and scope
            table = memo.tables[fn] = {}
        # get with a sentinel, not a KeyError caught: a third of the calls are new
        # arguments, and raising costs far more than the lookup.
        value = table.get(args, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[no-any-return]
        value = fn(*args, **kwargs)
        # _make_room, inlined: this runs for every new answer of every memoised function.
        if len(table) >= memo.limit:
            del table[next(iter(table))]
        table[args] = value
        return value

    return wrapper


def remember(memoised: Callable[..., R], args: tuple[Any, ...], value: R) -> None:
    """Make ``value`` the answer of the :func:`batch_memoised` function ``memoised`` to
    ``args`` until the open scope closes (nothing outside a scope): for answers worked out
    ahead, many at once, more cheaply than one call at a time would."""
    memo = _ACTIVE.get()
    if memo is None:
        return
    table = memo.tables.setdefault(memoised.__wrapped__, {})  # type: ignore[attr-defined]
    # An answer given again is the newest.
    table.pop(args, None)
    _make_room(memo, table)
    table[args] = value


def _make_room(memo: Memo, table: dict[Any, Any]) -> None:
    """Room for one more answer: a memoised function's arguments are hashed again for
    every lookup (a tuple's hash is not kept), so callers ask this only of a new one."""
    if len(table) >= memo.limit:
        # Oldest first: dicts keep insertion order, so this is a bounded FIFO.
        del table[next(iter(table))]


class ByIdentity(Generic[T]):
    """``value`` as the argument of a memoised function, equal only to a key of the very
    same object. The key keeps the object alive, so its ``id`` cannot pass to another
    object while the memo holds the entry."""

    __slots__ = ("value",)

    def __init__(self, value: T) -> None:
        self.value = value

    def __hash__(self) -> int:
        return id(self.value)

    def __eq__(self, other: object) -> bool:
        return isinstance(other, ByIdentity) and other.value is self.value
