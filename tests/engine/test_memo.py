"""The per-batch memo: answers are kept while a scope is open, bounded, and forgotten after."""

from __future__ import annotations

import pytest

from pytest_callqa.engine.core.memo import (
    ByIdentity,
    Memo,
    batch_memo,
    batch_memoised,
    in_batch_memo,
    memo_sizes,
    remember,
)

CALLS: list[str] = []


@batch_memoised
def shout(text: str) -> str:
    CALLS.append(text)
    return text.upper()


@pytest.fixture(autouse=True)
def _fresh_calls() -> None:
    CALLS.clear()


def test_outside_a_scope_every_call_computes() -> None:
    assert [shout("a"), shout("a")] == ["A", "A"]
    assert CALLS == ["a", "a"]
    assert memo_sizes() == {}


def test_inside_a_scope_a_repeated_argument_is_answered_from_the_memo() -> None:
    with batch_memo():
        assert [shout("a"), shout("b"), shout("a")] == ["A", "B", "A"]
        assert memo_sizes() == {"shout": 2}
    assert CALLS == ["a", "b"]
    assert memo_sizes() == {}


def test_the_memo_is_forgotten_when_its_scope_closes() -> None:
    with batch_memo():
        shout("a")
    with batch_memo():
        shout("a")
    assert CALLS == ["a", "a"]


def test_a_kept_memo_answers_again_in_the_next_scope_opened_with_it() -> None:
    kept = Memo(limit=2)
    with batch_memo(keep=kept):
        shout("a")
    assert memo_sizes() == {}
    with batch_memo(keep=kept):
        shout("a")
        shout("b")
        shout("c")  # past its limit too: drops "a"
        assert memo_sizes() == {"shout": 2}
    with batch_memo():
        shout("b")  # a scope of its own starts empty
    with batch_memo(keep=kept):
        shout("b")
        shout("a")
    assert CALLS == ["a", "b", "c", "b", "a"]


def test_a_scope_opened_inside_another_joins_it_rather_than_the_kept_memo() -> None:
    kept = Memo()
    with batch_memo():
        shout("a")
        with batch_memo(keep=kept):
            shout("a")
    assert kept.tables == {}
    assert CALLS == ["a"]


def test_past_its_limit_the_oldest_answer_is_dropped() -> None:
    with batch_memo(limit=2):
        shout("a")
        shout("b")
        shout("c")  # drops "a"
        shout("b")
        shout("a")  # computed again, drops "b"
        assert memo_sizes() == {"shout": 2}
    assert CALLS == ["a", "b", "c", "a"]


def test_a_scope_opened_inside_another_joins_it() -> None:
    @in_batch_memo
    def twice(text: str) -> str:
        return shout(text) + shout(text)

    with batch_memo():
        assert twice("x") == "XX"
        assert twice("x") == "XX"
    assert CALLS == ["x"]


def test_keyword_arguments_bypass_the_memo() -> None:
    with batch_memo():
        shout(text="k")
        shout(text="k")
    assert CALLS == ["k", "k"]


def test_a_limit_below_one_is_refused_with_its_value() -> None:
    with pytest.raises(ValueError, match="at least 1 entry, got 0"), batch_memo(limit=0):
        pass


@batch_memoised
def _length(items: ByIdentity[list[str]]) -> int:
    CALLS.append("length")
    return len(items.value)


def test_an_unhashable_argument_is_remembered_by_identity() -> None:
    first, equal = ["a", "b"], ["a", "b"]
    with batch_memo():
        assert [_length(ByIdentity(first)), _length(ByIdentity(first))] == [2, 2]
        assert _length(ByIdentity(equal)) == 2
    # The same list once, an equal but distinct one again.
    assert CALLS == ["length", "length"]
    assert ByIdentity(first) == ByIdentity(first)
    assert ByIdentity(first) != ByIdentity(equal)
    assert ByIdentity(first) != first


def test_an_answer_remembered_ahead_is_given_without_computing() -> None:
    with batch_memo():
        remember(shout, ("a",), "worked out ahead")
        assert shout("a") == "worked out ahead"
        assert shout("b") == "B"
    assert CALLS == ["b"]


def test_outside_a_scope_nothing_is_remembered() -> None:
    remember(shout, ("a",), "lost")
    assert shout("a") == "A"
    assert CALLS == ["a"]


def test_answers_remembered_ahead_keep_to_the_limit() -> None:
    with batch_memo(limit=2):
        remember(shout, ("a",), "1")
        remember(shout, ("b",), "2")
        remember(shout, ("a",), "3")  # replaces, drops nothing, and is now the newest
        assert memo_sizes() == {"shout": 2}
        remember(shout, ("c",), "4")  # drops the oldest, "b"
        assert memo_sizes() == {"shout": 2}
        assert [shout("a"), shout("c"), shout("b")] == ["3", "4", "B"]
    assert CALLS == ["b"]


@batch_memoised
def _pair_of(pair: tuple[str, str]) -> str:
    CALLS.append("pair")
    return "+".join(pair)


def test_a_tuple_argument_remembered_ahead_is_found_and_a_wrong_arity_is_not() -> None:
    # A function of one argument keys its answers on the argument itself; remember()
    # must find the same key, and an answer to two arguments (no call of it passes two)
    # must not pass for the answer to the one tuple of the same two.
    with batch_memo():
        remember(_pair_of, (("a", "b"),), "ahead")
        remember(_pair_of, ("c", "d"), "never asked")
        assert _pair_of(("a", "b")) == "ahead"
        assert _pair_of(("c", "d")) == "c+d"
        assert memo_sizes() == {"_pair_of": 2}
    assert CALLS == ["pair"]


def test_a_call_without_its_argument_is_refused_and_remembers_nothing() -> None:
    with batch_memo():
        with pytest.raises(TypeError, match="shout"):
            shout()  # type: ignore[call-arg]
        with pytest.raises(TypeError, match="shout"):
            shout("a", "b")  # type: ignore[call-arg]
        assert memo_sizes().get("shout", 0) == 0
    assert CALLS == []


@batch_memoised
def _joined(first: str, second: str = "-", *rest: str) -> str:
    CALLS.append(first + second + "".join(rest))
    return first + second + "".join(rest)


def test_a_function_of_several_or_optional_arguments_keys_on_all_it_is_given() -> None:
    with batch_memo():
        assert [_joined("a"), _joined("a", "-"), _joined("a"), _joined("a", "-", "x")] == [
            "a-", "a-", "a-", "a-x"]
        remember(_joined, ("b",), "ahead")
        assert _joined("b") == "ahead"
        assert _joined("b", "-") == "b-"
    assert CALLS == ["a-", "a-", "a-x", "b-"]
