"""Bot turns a caller hears: clear, well segmented, and in context.

A turn is garbled when any of its three 1–5 scores is 2 or lower; fewer than 10 % of turns
may be garbled.
"""

import pytest

from pytest_callqa import assert_no_garbled_turns


@pytest.mark.callqa(task="conversation")
def test_fewer_than_one_in_ten_turns_is_garbled(callqa_result):
    assert_no_garbled_turns(callqa_result)
