"""Voice agents that call tools: did they route, fill arguments and finish the job?

The judge scores each metric 0–5 (tool routing and parameters are also checked against the
expected tool calls); the weighted overall score must reach the case's pass threshold.
"""

import pytest

from pytest_callqa import assert_agent_passes, assert_metric


@pytest.mark.callqa(task="agent")
def test_agent_reaches_the_pass_threshold(callqa_result):
    assert_agent_passes(callqa_result)


@pytest.mark.callqa(task="agent")
def test_tool_arguments_come_from_what_the_customer_said(callqa_result):
    """A fabricated order id or amount sends a refund to the wrong place: at most one minor
    argument slip (4 of 5) is tolerated."""
    assert_metric(callqa_result, "parameter_extraction", min=4)
