"""Parameter extraction (agent_calls.score_parameters), its call alignment and reference
calls: each test asserts the whole error list or reason, worked out by hand. Written for the
mutants a targeted mutation run left alive after session 33's speed work (docs/testing.md)."""

from __future__ import annotations

from typing import Any

from pytest_callqa.engine.tasks.agent_calls import align_calls, reference_calls, score_parameters
from pytest_callqa.engine.tasks.agent_schemas import (
    AgentConfig,
    AgentToolCall,
    ToolCall,
    ToolParameter,
    ToolSpec,
)
from tests.engine.helpers import make_case

from .helpers import tool_call, tool_result

VIEW = [{"turn": 0, "speaker": "customer",
         "text": "Send 200 dollars to Svetlana. My phone is 555-201-3344."}]


def _transfer(expected: dict[str, str], got: dict[str, str], config: AgentConfig) -> Any:
    """The rubric of one expected Transfer call against one made at turn 1."""
    rubric = score_parameters([ToolCall(name="Transfer", arguments=expected)],
                              [AgentToolCall(turn=1, name="Transfer", arguments=got)],
                              config, VIEW)
    assert rubric is not None
    return rubric


def test_a_value_only_the_instructions_give_is_wrong_not_invented() -> None:
    # "Olga" is in the business rules alone: grounded in what the agent was told (the
    # config passed to contexts_before), so a wrong value, not an invented one.
    config = AgentConfig(system_prompt="Bank assistant.",
                         business_rules=["Olga handles every transfer dispute."])
    rubric = _transfer({"recipient": "Svetlana"}, {"recipient": "Olga"}, config)
    assert rubric.details["errors"] == [
        {"call": "Transfer", "parameter": "recipient", "kind": "wrong", "critical": True,
         "turn": 1, "expected": "Svetlana", "got": "Olga"}]
    assert rubric.score == 3.0  # one critical error


def test_a_wrong_value_of_a_tools_list_is_wrong_not_invented() -> None:
    # "business" was never said, but it is one of the tool's listed values.
    config = AgentConfig(tools=[ToolSpec(name="Transfer", parameters={
        "account": ToolParameter(enum=["checking", "savings", "business"])})])
    assert _transfer({"account": "checking"}, {"account": "business"},
                     config).details["errors"] == [
        {"call": "Transfer", "parameter": "account", "kind": "wrong", "critical": True,
         "turn": 1, "expected": "checking", "got": "business"}]


def test_an_unexpected_listed_argument_is_no_error_and_the_next_one_is_still_checked() -> None:
    # account: a listed value, not an error though never said; memo: invented, and
    # checked after it.
    config = AgentConfig(tools=[ToolSpec(name="Transfer", parameters={
        "amount": ToolParameter(), "account": ToolParameter(enum=["checking", "business"])})])
    got = {"amount": "200", "account": "business", "memo": "birthday gift"}
    assert _transfer({"amount": "200"}, got, config).details["errors"] == [
        {"call": "Transfer", "parameter": "memo", "kind": "fabricated", "critical": True,
         "turn": 1, "got": "birthday gift"}]


def test_an_extra_calls_arguments_are_checked_against_what_was_said() -> None:
    # The look-up is no expected call: its phone was said, its pin was not.
    made = [AgentToolCall(turn=1, name="Transfer", arguments={"amount": "200"}),
            AgentToolCall(turn=1, name="Lookup",
                          arguments={"phone": "555-201-3344", "pin": "9999"})]
    rubric = score_parameters([ToolCall(name="Transfer", arguments={"amount": "200"})], made,
                              AgentConfig(), VIEW)
    assert rubric is not None
    assert rubric.details["errors"] == [
        {"call": "Lookup", "parameter": "pin", "kind": "fabricated", "critical": True,
         "turn": 1, "got": "9999"}]


def test_the_call_agreeing_on_more_arguments_is_paired_though_further() -> None:
    # _same_args counts agreeing arguments (2 against 1), not whether any agree.
    expected = [ToolCall(name="Find", arguments={"x": "1", "y": "2"})]
    made = [AgentToolCall(turn=1, name="Find", arguments={"x": "1", "y": "3"}),
            AgentToolCall(turn=1, name="Find", arguments={"x": "1", "y": "2"})]
    al = align_calls(expected, made)
    assert (al.pairs, al.extra) == ([(0, 1, True)], [0])


def test_a_call_recorded_last_with_its_result_is_a_reference_call() -> None:
    transcript = [{"speaker": "customer", "text": "Balance please."},
                  {"speaker": "agent", "text": "One moment."},
                  tool_call("CheckBalance", account_type="checking"),
                  tool_result('{"balance": "$12"}')]
    case = make_case("agent", {"tool_calls": None, "task_outcome": "told"},
                     config={"system_prompt": "Bank assistant."}, transcript=transcript)
    refs = reference_calls(case)
    assert [(r.call.name, r.result) for r in refs] == [("CheckBalance", '{"balance": "$12"}')]


def test_nothing_expected_and_nothing_made_is_not_assessed() -> None:
    assert score_parameters([], [], AgentConfig(), VIEW) is None


def test_a_call_without_arguments_made_as_expected() -> None:
    rubric = score_parameters([ToolCall(name="EndCall", arguments={})],
                              [AgentToolCall(turn=1, name="EndCall", arguments={})],
                              AgentConfig(), VIEW)
    assert rubric is not None
    assert (rubric.score, rubric.reason, rubric.failure_code, rubric.details) == (
        5.0, "no argument expected and none invented", None,
        {"arguments_checked": 0, "correct": 0, "errors": []})


def test_no_expected_call_made_reason() -> None:
    rubric = score_parameters([ToolCall(name="EndCall", arguments={})], [], AgentConfig(), VIEW)
    assert rubric is not None
    assert (rubric.score, rubric.reason) == (
        0.0, "no expected tool was called, so no argument was extracted")


def test_the_calls_never_made_are_named_one_after_the_other() -> None:
    expected = [ToolCall(name="Transfer", arguments={"amount": "200"}),
                ToolCall(name="Notify", arguments={}), ToolCall(name="EndCall", arguments={})]
    rubric = score_parameters(expected,
                              [AgentToolCall(turn=1, name="Transfer", arguments={"amount": "200"})],
                              AgentConfig(), VIEW)
    assert rubric is not None
    assert rubric.reason == ("all 1 arguments correct in the calls made; never called (see "
                             "tool routing): Notify, EndCall")


def test_a_minor_error_scores_4_without_a_failure_code() -> None:
    config = AgentConfig(tools=[ToolSpec(name="lookup", parameters={
        "note": ToolParameter(required=False)})])
    rubric = score_parameters([ToolCall(name="lookup", arguments={"note": "phone"})],
                              [AgentToolCall(turn=1, name="lookup", arguments={})], config, VIEW)
    assert rubric is not None and (rubric.score, rubric.failure_code) == (4.0, None)
