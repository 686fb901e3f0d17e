"""A test's payload crosses to the xdist controller packed: its result, output and later runs
as one JSON text, which the controller spools as it came."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

from execnet.gateway_base import dumps_internal, loads_internal

from pytest_callqa.run.summary import ENTRY, Summary, packed


def result(case_id: str, run: int = 0, score: float = 0.8) -> dict[str, Any]:
    return {"task": "qa", "case_id": case_id, "model": "alpha", "run": run, "score": score,
            "valid": True, "blocked": False,
            "metrics": {"accuracy": {"value": score, "scored": True, "rating": "good",
                                     "details": {"numerator": 4, "denominator": 5,
                                                 "reason": "four of five"}}}}


def summary() -> Summary:
    nothing = SimpleNamespace()
    return Summary(nothing, nothing, nothing, nothing, nothing)  # type: ignore[arg-type]


def test_the_result_output_and_runs_become_one_json_text_and_the_rest_stays() -> None:
    payload = {"result": result("qa-1"), "output": {"answer": "Grüße, ₹1,200"},
               "runs": [result("qa-1", run=1, score=0.4)], "passed": [True, False]}
    sent = packed(payload)
    assert sent.keys() == {ENTRY, "passed"}
    assert sent["passed"] == [True, False]
    assert json.loads(sent[ENTRY]) == {"result": payload["result"],
                                       "output": payload["output"], "runs": payload["runs"]}
    # Not escaped: the spool and the report keep the text as the model wrote it.
    assert "Grüße, ₹1,200" in sent[ENTRY]
    # What execnet carries to the controller reads back equal.
    assert loads_internal(dumps_internal(sent)) == sent


def test_a_payload_without_a_result_is_sent_as_it_is() -> None:
    for payload in ({"missing": {"model": "alpha", "case_id": "qa-1", "reason": "no file"}},
                    {"case_file": {"path": "cases/bad.json", "error": "not JSON"}}):
        assert packed(payload) is payload


def test_a_result_without_output_or_runs_packs_them_empty() -> None:
    assert json.loads(packed({"result": result("qa-1")})[ENTRY]) == {
        "result": result("qa-1"), "output": None, "runs": []}


def test_the_controller_spools_the_text_and_reads_each_run_back() -> None:
    gathered = summary()
    gathered.record("t.py::test[alpha-qa-1]",
                    packed({"result": result("qa-1"), "output": "first",
                            "runs": [result("qa-1", run=1, score=0.4)],
                            "passed": [True, False]}))
    gathered.record("t.py::test[alpha-qa-2]",
                    packed({"result": result("qa-2", score=0.5), "output": {"n": 2}}))
    gathered.record("t.py::test[alpha-qa-3]", {"missing": {"model": "alpha",
                                                          "case_id": "qa-3"}})
    try:
        # Only what the scorecard does not read stays in memory.
        assert gathered.collected == {
            "t.py::test[alpha-qa-1]": {"passed": [True, False]},
            "t.py::test[alpha-qa-2]": {},
            "t.py::test[alpha-qa-3]": {"missing": {"model": "alpha", "case_id": "qa-3"}}}
        results = {(r.case_id, r.run): r for r in gathered.results()}
        assert sorted(results) == [("qa-1", 0), ("qa-1", 1), ("qa-2", 0)]
        assert [results[k].score for k in sorted(results)] == [0.8, 0.4, 0.5]
        assert [results[k].passed for k in sorted(results)] == [True, False, None]
        assert results[("qa-1", 0)].metrics["accuracy"].details == {"numerator": 4,
                                                                    "denominator": 5}
        entry = gathered._entry("t.py::test[alpha-qa-2]")
        assert entry == {"result": result("qa-2", score=0.5), "output": {"n": 2},
                         "runs": []}
    finally:
        gathered.close()
