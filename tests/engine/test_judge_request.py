"""``JudgeRequest`` builds its fields by hand (a frozen dataclass's own ``__init__`` is slow):
the hand-written ``__init__`` must take exactly the declared fields, with their defaults, and
leave a request that behaves as a frozen dataclass."""

from __future__ import annotations

import dataclasses
import inspect

import pytest

from pytest_callqa.engine.core.judging import FOCUS_VIEW, FULL_VIEW, JudgeRequest
from tests.engine.helpers import asked, make_case, question

_EXPECTED = {"questions": [question("Q1", 4)]}
CASE = make_case("qa", _EXPECTED, config=asked(_EXPECTED))


def _request(**kwargs) -> JudgeRequest:
    return JudgeRequest(case=CASE, task="qa", metric="m", scale="unit",  # type: ignore[arg-type]
                        instructions="judge it", model_output={"a": 1}, **kwargs)


def test_init_takes_the_declared_fields_in_order_with_their_defaults() -> None:
    params = list(inspect.signature(JudgeRequest.__init__).parameters.values())[1:]
    fields = dataclasses.fields(JudgeRequest)
    assert [p.name for p in params] == [f.name for f in fields]
    for param, f in zip(params, fields, strict=True):
        if f.default is not dataclasses.MISSING:
            assert param.default == f.default, f.name
        elif f.default_factory is not dataclasses.MISSING:
            # A field built by a factory defaults to None, which the init replaces.
            assert param.default is None, f.name
        else:
            assert param.default is inspect.Parameter.empty, f.name


def test_a_request_holds_its_fields_and_stays_frozen() -> None:
    request = _request(item="t1", view=FOCUS_VIEW, run=2)
    assert request.focus == {} and request.item == "t1" and request.view is FOCUS_VIEW
    assert request.run == 2 and request.repeat == 0 and request.reply_fields == ()
    assert _request().view is FULL_VIEW and _request().focus is not _request().focus
    with pytest.raises(dataclasses.FrozenInstanceError):
        request.metric = "other"  # type: ignore[misc]
    again = dataclasses.replace(request, repeat=1)
    assert (again.repeat, again.run, again.item) == (1, 2, "t1")
    assert again != request and dataclasses.replace(again, repeat=0) == request
    assert again.key != request.key == dataclasses.replace(again, repeat=0).key
