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
import inspect
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
        # Per memoised function, its answers by arguments: keyed on the argument itself
        # for a function of one argument, on the tuple of them otherwise.
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
    if _takes_one_argument(fn):
        return _memoised_one(fn)

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
        value = fn(*args)  # type: ignore[call-arg]  # kwargs is empty here
        # _make_room, inlined: this runs for every new answer of every memoised function.
        if len(table) >= memo.limit:
            del table[next(iter(table))]
        table[args] = value
        return value

    return wrapper


def _takes_one_argument(fn: Callable[..., Any]) -> bool:
    """Whether ``fn`` is a plain function of exactly one positional parameter, without a
    default: every call it can answer then passes exactly one argument."""
    code = getattr(fn, "__code__", None)
    return (code is not None and code.co_argcount == 1 and not code.co_kwonlyargcount
            and not code.co_flags & (inspect.CO_VARARGS | inspect.CO_VARKEYWORDS)
            and not getattr(fn, "__defaults__", None))


def _memoised_one(fn: Callable[P, R]) -> Callable[P, R]:
    """:func:`batch_memoised` for a function of one argument (most are: a text), its
    table keyed on the argument itself, not on a tuple of it: no ``*args`` tuple to build,
    hash and compare per call (a hit costs ~2,550 instructions, not ~2,950, under
    callgrind). :func:`remember` keys it the same way. ``arg`` is optional only so that a
    call by keyword reaches ``fn`` (and bypasses the memo); a call with more than one
    argument is refused by the wrapper's signature, one with none by ``fn``."""

    @functools.wraps(fn)
    def wrapper(arg: Any = _MISSING, /, **kwargs: Any) -> R:
        memo = _active()
        if memo is None or kwargs:
            # Unmemoised: outside a scope, or the argument given by keyword.
            return fn(*(() if arg is _MISSING else (arg,)), **kwargs)
        try:
            table = memo.tables[fn]
        except KeyError:  # once per function and scope
            table = memo.tables[fn] = {}
        value = table.get(arg, _MISSING)
        if value is not _MISSING:
            return value  # type: ignore[no-any-return]
        if arg is _MISSING:  # no argument at all: fn refuses it with its own message
            return fn()  # type: ignore[call-arg]
        value = fn(arg)  # type: ignore[call-arg]
        if len(table) >= memo.limit:
            del table[next(iter(table))]
        table[arg] = value
        return value

    wrapper._memo_keyed_on_argument = True  # type: ignore[attr-defined]
    return wrapper  # type: ignore[return-value]


def remember(memoised: Callable[..., R], args: tuple[Any, ...], value: R) -> None:
    """Make ``value`` the answer of the :func:`batch_memoised` function ``memoised`` to
    ``args`` until the open scope closes (nothing outside a scope): for answers worked out
    ahead, many at once, more cheaply than one call at a time would."""
    memo = _ACTIVE.get()
    if memo is None:
        return
    table = memo.tables.setdefault(memoised.__wrapped__, {})  # type: ignore[attr-defined]
    # The key the memoised function looks its answers up by.
    key: Any = args
    if getattr(memoised, "_memo_keyed_on_argument", False):
        if len(args) != 1:
            return  # no call a function of one argument answers asks for it
        key = args[0]
    # An answer given again is the newest.
    table.pop(key, None)
    _make_room(memo, table)
    table[key] = value


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
