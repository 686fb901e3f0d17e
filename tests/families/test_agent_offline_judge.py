"""The offline (heuristic) judge of the agent family: dates worked out from "tomorrow", and
task completion when the agent said nothing or the outcome has no figure to look for."""

from __future__ import annotations

import copy
from typing import Any

from pytest_callqa.engine.evaluate import evaluate
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.lexicon import names_relative_day
from pytest_callqa.engine.text import tokens
from tests.engine.helpers import TFIDF, make_case

from .helpers import tool_call, tool_result
from .test_agent import EXPECTED as AGENT_EXPECTED
from .test_agent import TRANSCRIPT

# --- a date worked out from "tomorrow" ---------------------------------------------------------

BOOKING_CONFIG = {"system_prompt": "You book restaurant tables. Today is Tuesday, 2024-03-05.",
                  "tools": [{"name": "BookTable"}]}
BOOKING_EXPECTED = {
    "tool_calls": [{"name": "BookTable", "arguments": {"date": "2024-03-06", "time": "19:00"},
                    "turn": 1}],
    "task_outcome": "Table booked for tomorrow 7 pm, confirmation R-4471."}


def _booking(asked: str, reply: str, date: str = "2024-03-06") -> dict[str, Any]:
    transcript = [{"speaker": "customer", "text": asked},
                  tool_call("BookTable", date="2024-03-06", time="19:00"),
                  tool_result('{"status": "booked", "confirmation": "R-4471"}'),
                  {"speaker": "agent", "text": "Done, booked. Your confirmation is R-4471."}]
    output = {"tool_calls": [{"turn": 1, "name": "BookTable",
                              "arguments": {"date": date, "time": "19:00"}}],
              "responses": [{"turn": 3, "text": reply}]}
    case = make_case("agent", BOOKING_EXPECTED, config=BOOKING_CONFIG, transcript=transcript)
    return dict(evaluate(case, output, judge=HeuristicJudge(), embedder=TFIDF).metrics)


def test_a_date_worked_out_from_tomorrow_is_undecided_not_fabricated() -> None:
    # The agent turned "tomorrow" into March 6 and said so: grounding, information gathering
    # and result interpretation counted the date untraceable, never given and misreported,
    # and the correct agent scored 80.6 (71.0 with two such dates) instead of passing clean.
    metrics = _booking("Can you book me a table for tomorrow at 7 pm?",
                       "Done, your table is booked for Wednesday March 6 at 7 pm. Your "
                       "confirmation is R-4471.")
    for metric in ("grounding_fidelity", "information_gathering"):
        assert metrics[metric].value is None, metrics[metric].reason
        assert "named a day relative to today" in metrics[metric].reason
    interpretation = metrics["result_interpretation"]
    assert interpretation.value == 5.0, interpretation.reason
    assert metrics["overall_score"].value == 100.0


def test_a_relative_day_does_not_excuse_a_date_no_conversation_explains() -> None:
    # Without a day named relative to today, a date in no text is still untraceable.
    metrics = _booking("Can you book me a table at 7 pm, please?",
                       "Done, your table is booked for March 6 at 7 pm. Your confirmation "
                       "is R-4471.")
    grounding = metrics["grounding_fidelity"]
    assert grounding.value == 3.0 and "untraceable: turn 3: date 'March 6'" in grounding.reason


def test_an_argument_the_case_expects_is_never_called_never_given() -> None:
    # "The table we talked about" names the date in words no offline check reads; the case
    # expects 2024-03-06, so the agent did not invent it. A date the case does not expect
    # is still never given.
    asked = "Can you book the table we talked about, at 7 pm?"
    expected_date = _booking(asked, "Booked, confirmation R-4471.")["information_gathering"]
    assert expected_date.value == 5.0, expected_date.reason
    assert "1 as the case expects" in expected_date.reason
    invented = _booking(asked, "Booked, confirmation R-4471.",
                        date="2024-03-09")["information_gathering"]
    assert invented.value == 3.0
    assert "BookTable.date='2024-03-09' never given in the conversation" in invented.reason


def test_a_figure_no_result_could_give_is_not_a_misreported_result() -> None:
    # The results hold no date: a date in the reply is grounding's question. A time the
    # results do hold, contradicted, is still misreported.
    transcript = [{"speaker": "customer", "text": "Book me a table at 7 pm, please."},
                  tool_call("BookTable", time="19:00"),
                  tool_result('{"status": "booked", "time": "7:30 pm"}'),
                  {"speaker": "agent", "text": "Booked for 7:30 pm."}]
    expected = {"tool_calls": [{"name": "BookTable", "arguments": {"time": "19:00"}}],
                "task_outcome": "Table booked for 7:30 pm."}
    output = {"tool_calls": [{"turn": 1, "name": "BookTable", "arguments": {"time": "19:00"}}],
              "responses": [{"turn": 3, "text": "Booked for 7:30 pm on March 9."}]}
    case = make_case("agent", expected, config=BOOKING_CONFIG, transcript=transcript)

    def interpretation(out: dict[str, Any]) -> Any:
        return evaluate(case, out, judge=HeuristicJudge(),
                        embedder=TFIDF).metrics["result_interpretation"]

    dated = interpretation(output)
    assert dated.value == 5.0, dated.reason
    contradicted = copy.deepcopy(output)
    contradicted["responses"][0]["text"] = "Booked for 8:15 pm."
    wrong = interpretation(contradicted)
    assert wrong.value == 1.0 and "8:15 pm" in wrong.reason
    assert wrong.details["failure_code"] == "contradicted_tool_result"


def test_which_words_name_a_day_relative_to_today() -> None:
    for said in ("tomorrow at 7", "for Friday", "la semana que viene", "next month",
                 "cette semaine", "मुझे कल चाहिए", "domani sera"):
        assert names_relative_day(tokens(said)), said
    for said in ("twice a month", "per week", "my monthly bill", "the 6th at 7 pm"):
        assert not names_relative_day(tokens(said)), said


# --- task completion ---------------------------------------------------------------------------

# The bank scenario of test_agent.py, its outcome told in words: no figure to look for.
EXPECTED = {**AGENT_EXPECTED,
            "task_outcome": "The customer hears the checking balance and that the transfer to "
                            "Svetlana went through."}
CONFIG = {"system_prompt": "You are a bank's voice assistant.",
          "business_rules": ["Savings is the default source account for transfers."],
          "metrics": [{"metric": "tool_routing"}, {"metric": "task_completion", "weight": 0.5}]}
CALLS = [
    {"turn": 1, "name": "CheckBalance", "arguments": {"account_type": "checking"}},
    {"turn": 5, "name": "TransferMoney", "arguments": {
        "account_type": "savings", "recipient_name": "svetlana", "transfer_amount": 1540}},
]


def _completion(responses: list[dict[str, Any]], expected: Any = None) -> Any:
    case = make_case("agent", EXPECTED if expected is None else expected, config=CONFIG,
                     transcript=TRANSCRIPT)
    result = evaluate(case, {"tool_calls": CALLS, "responses": responses},
                      judge=HeuristicJudge(), embedder=TFIDF)
    return result.metrics["task_completion"]


def test_an_agent_that_said_nothing_did_not_complete_its_task() -> None:
    # The right calls and not a word to the customer scored 1 ("every expected tool call
    # made"), and the case passed at 100.
    silent = _completion([])
    assert silent.value == 0.0
    assert silent.details["failure_code"] == "no_response"
    assert silent.details["turns"] == [3, 7, 9]
    assert "said nothing" in silent.reason


def test_completion_with_no_figure_to_check_needs_reading() -> None:
    # Only refusals after the right calls scored 1 as well: with no figure in the outcome,
    # whether it was told is not something the offline judge can see.
    refusals = [{"turn": 3, "text": "Sorry, I can't help with that."},
                {"turn": 7, "text": "Sorry, I can't help with that."},
                {"turn": 9, "text": "Bye."}]
    completion = _completion(refusals)
    assert completion.value is None
    assert completion.reason.startswith("not scored:")
    assert "no number, date, amount or id" in completion.reason
    # With figures in the outcome, they are what the replies are checked for.
    with_figures = {**EXPECTED, "task_outcome": "Balance of $23,509.52 given; $1,540 sent."}
    refused = _completion(refusals, with_figures)
    assert refused.value == 0.0
    assert refused.details["failure_code"] == "task_not_completed"
    # Replies after the calls, one turn left silent: not a silent agent, a figure untold.
    partly = _completion([{"turn": 3, "text": "Your checking account has $23,509.52."}],
                         with_figures)
    assert partly.value == 0.0 and partly.details["failure_code"] == "task_not_completed"
    told = [{"turn": 3, "text": "Your checking account has $23,509.52."},
            {"turn": 7, "text": "Done: $1,540 is on its way."}]
    assert _completion(told, with_figures).value == 1.0
