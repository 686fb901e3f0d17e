"""A test's payload crosses to the xdist controller packed: its result, output and later runs
as one JSON text, which the controller spools as it came."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest
from execnet.gateway_base import dumps_internal, loads_internal

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.run.settings import CallqaUsageError
from pytest_callqa.run.spool import (
    ENTRY,
    GOLDEN,
    RUNS,
    VIEWS,
    ResultSpool,
    entry_text,
    golden_entry,
    packed,
    scorecard_view,
)
from pytest_callqa.run.summary import Summary, _for_scorecard

from .conftest import EXAMPLE


def result(case_id: str, run: int = 0, score: float = 0.8) -> dict[str, Any]:
    return {"task": "qa", "case_id": case_id, "model": "alpha", "run": run, "score": score,
            "valid": True, "blocked": False,
            "metrics": {"accuracy": {"value": score, "scored": True, "rating": "good",
                                     "details": {"numerator": 4, "denominator": 5,
                                                 "reason": "four of five"}}}}


def summary() -> Summary:
    nothing = SimpleNamespace()
    # A catalogue whose case files all read: what is not evaluated comes from the tests.
    catalog = SimpleNamespace(bad_files=list)
    return Summary(nothing, nothing, catalog, nothing, nothing)  # type: ignore[arg-type]


def test_the_entry_and_later_runs_become_json_texts_and_the_rest_stays() -> None:
    payload = {"result": result("qa-1"), "output": {"answer": "Grüße, ₹1,200"},
               "runs": [result("qa-1", run=1, score=0.4)], "passed": [True, False]}
    sent = packed(payload)
    assert sent.keys() == {ENTRY, RUNS, VIEWS, "passed"}
    assert sent["passed"] == [True, False]
    # The case entry as the report writes it: the result, then what the model answered.
    assert sent[ENTRY] == entry_text({**result("qa-1"), "output": payload["output"]})
    assert json.loads(sent[RUNS]) == payload["runs"]
    # Not escaped: the spool and the report keep the text as the model wrote it.
    assert "Grüße, ₹1,200" in sent[ENTRY]
    # What execnet carries to the controller reads back equal.
    assert loads_internal(dumps_internal(sent)) == sent


def test_a_payload_without_a_result_is_sent_as_it_is() -> None:
    for payload in ({"missing": {"model": "alpha", "case_id": "qa-1", "reason": "no file"}},
                    {"case_file": {"path": "cases/bad.json", "error": "not JSON"}}):
        assert packed(payload) is payload


def test_a_result_without_output_or_runs_packs_no_output_and_no_runs() -> None:
    sent = packed({"result": result("qa-1"), "runs": []})
    assert sent.keys() == {ENTRY, VIEWS}
    assert json.loads(sent[ENTRY]) == {**result("qa-1"), "output": None}


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
        entry = gathered.spool.entry("t.py::test[alpha-qa-2]")
        assert entry == {"result": result("qa-2", score=0.5), "output": {"n": 2},
                         "runs": []}
    finally:
        gathered.close()


def scorecard_of(results: list[Any]) -> Any:
    return SimpleNamespace(results=results)


def test_an_entry_run_once_is_written_as_its_test_sent_it_and_the_rest_rebuilt(
        monkeypatch: pytest.MonkeyPatch) -> None:
    gathered = summary()
    once = packed({"result": result("qa-1"), "output": {"answer": "yes"}})
    gathered.record("t.py::test[alpha-qa-1]", once)
    gathered.record("t.py::test[alpha-qa-2]",
                    packed({"result": result("qa-2"), "output": "first",
                            "runs": [result("qa-2", run=1, score=0.4)],
                            "passed": [True, False]}))
    # A score that is not a number: the report must refuse it, not write it.
    gathered.record("t.py::test[alpha-qa-3]",
                    packed({"result": result("qa-3", score=float("nan")), "output": None}))
    # "NaN" in what the model said is not a NaN.
    said_nan = packed({"result": result("qa-4"), "output": "NaN and Infinity"})
    gathered.record("t.py::test[alpha-qa-4]", said_nan)
    try:
        results = gathered.results()
        card = scorecard_of(results)
        read: list[str] = []
        monkeypatch.setattr(gathered.spool, "entry", lambda nodeid, read_entry=gathered.spool.entry:
                            read.append(nodeid) or read_entry(nodeid))
        by_case = {r.case_id: r for r in results if r.run == 0}
        assert list(gathered.case_entry_texts(scorecard_of([by_case["qa-1"]]))) == [
            once[ENTRY]]
        assert read == []
        # Every entry reads the same as the one rebuilt from the parsed result.
        for case_id in ("qa-1", "qa-2", "qa-4"):
            one = scorecard_of([r for r in card.results if r.case_id == case_id])
            assert [json.loads(t) for t in gathered.case_entry_texts(one)] == list(
                gathered.case_entries(one))
        # A pair run twice carries its runs and outcomes: rebuilt, not copied.
        rebuilt = [json.loads(t) for t in gathered.case_entry_texts(
            scorecard_of([r for r in results if r.case_id == "qa-2"]))]
        assert [(e["run"], e["passed"], e["runs"]) for e in rebuilt] == [(0, True, 2),
                                                                        (1, False, 2)]
        read.clear()
        assert list(gathered.case_entry_texts(scorecard_of([by_case["qa-4"]]))) == [
            entry_text({**result("qa-4"), "output": "NaN and Infinity"})]
        assert read == ["t.py::test[alpha-qa-4]"]
        with pytest.raises(ValueError, match="Out of range float values"):
            list(gathered.case_entry_texts(scorecard_of([by_case["qa-3"]])))
    finally:
        gathered.close()


def rich_result() -> dict[str, Any]:
    """A result with everything the scorecard leaves out, and everything it reads."""
    return {**result("qa-9", score=0.6),
            "blockers": ["pii_leak"], "not_scored": ["tone"], "renormalised": True,
            "usage": {"prompt_tokens": 120, "cost_usd": 0.0004}, "notes": ["judge retried"],
            "judge_errors": ["faithfulness: timed out"], "pass_bar": 0.5, "passed": True,
            "metrics": {
                "accuracy": {"value": 0.8, "scored": True, "rating": "good",
                             "reason": "long text " * 50, "blocker": False, "flagged": True,
                             "judge_error": False,
                             "details": {"numerator": 4, "denominator": 5, "claims": [1, 2]}},
                "tone": {"value": None, "scored": False, "rating": None,
                         "reason": "not scored: no judge", "details": {}},
                "pii": {"value": 0.0, "scored": True, "rating": "blocker", "blocker": True,
                        "judge_error": True, "details": {"spans": ["555-0100"]}}},
            "judge_records": [
                {"metric": "accuracy", "score": 4, "reason": "cited turn 3", "flagged": False},
                {"metric": "faithfulness", "judge_error": True, "reason": "timed out"},
                {"metric": "tone", "score": 3, "reason": "r", "repeats": [3, 3, 4],
                 "repeat_spread": 1, "repeats_disagree": False}]}


def test_the_scorecard_reads_the_same_from_a_view_as_from_the_whole_result() -> None:
    whole = rich_result()
    view = json.loads(json.dumps(scorecard_view(whole)))
    assert _for_scorecard(view, {}) == _for_scorecard(whole, {})
    assert "reason" not in json.dumps(view["metrics"])
    assert view["metrics"]["accuracy"]["details"] == {"numerator": 4, "denominator": 5}
    assert [r["metric"] for r in view["judge_records"]] == ["faithfulness", "tone"]


def test_the_controller_builds_its_results_from_the_views() -> None:
    gathered = summary()
    first, later = rich_result(), {**rich_result(), "run": 1, "score": 0.2}
    gathered.record("t.py::test[alpha-qa-9]",
                    packed({"result": first, "output": "out", "runs": [later],
                            "passed": [True, True]}))
    try:
        built = gathered.results()
        expected = [_for_scorecard(first, {}), _for_scorecard(later, {})]
        for one in expected:
            one.passed = True
        assert built == expected
        # The whole entry is still what the report reads.
        assert gathered.spool.entry("t.py::test[alpha-qa-9]") == {"result": first, "output": "out",
                                                             "runs": [later]}
    finally:
        gathered.close()


def golden_case(case_id: str, text: str = "Hello, how can I help?") -> GoldenCase:
    return GoldenCase.model_validate({
        "id": case_id, "task": "qa",
        "transcript": [{"speaker": "agent", "text": text},
                       {"speaker": "customer", "text": "x" * 400}],
        "expected_outcome": {"answer": "help"}})


def test_a_tests_golden_case_crosses_as_its_id_and_entry_text() -> None:
    case = golden_case("qa-1")
    sent = packed({"result": result("qa-1"), "output": "o",
                   GOLDEN: [case.id, golden_entry(case), 7]})
    assert sent[GOLDEN][0] == "qa-1"
    assert sent[GOLDEN][2] == 7
    assert json.loads(sent[GOLDEN][1]) == golden_entry(case) == {
        "task": "qa", "turns": 2, "expected_outcome": {"answer": "help"},
        "transcript_excerpt": ["turn 1: agent: Hello, how can I help?",
                               "turn 2: customer: " + "x" * 300]}
    assert loads_internal(dumps_internal(sent)) == sent


def catalogue_of(cases: list[GoldenCase], read: list[str]) -> Any:
    refs = [SimpleNamespace(id=c.id) for c in cases]
    by_id = {c.id: c for c in cases}

    def case(ref: Any) -> GoldenCase:
        read.append(ref.id)
        if ref.id == "qa-gone":
            raise CallqaUsageError("its file changed since collection")
        return by_id[ref.id]

    return SimpleNamespace(loaded=True, files=lambda: SimpleNamespace(cases=refs), case=case)


def test_the_report_shows_each_case_as_its_first_test_sent_it_in_the_catalogues_order() -> None:
    gathered = summary()
    sent = golden_case("qa-2", "as the test saw it")
    for nodeid, model in (("t.py::test[alpha-qa-2]", "alpha"), ("t.py::test[beta-qa-2]", "beta")):
        text = "as the test saw it" if model == "alpha" else "sent second: not kept"
        gathered.record(nodeid, packed({"result": {**result("qa-2"), "model": model},
                                        "output": "o",
                                        GOLDEN: ["qa-2", golden_entry(golden_case("qa-2",
                                                                                  text)), 2]}))
    # A result with no golden case sent (as a scorecard hook adds one), and one whose file
    # is gone: read from the catalogue, and left out.
    for case_id in ("qa-1", "qa-gone"):
        gathered.record(f"t.py::test[alpha-{case_id}]",
                        packed({"result": result(case_id), "output": "o"}))
    read: list[str] = []
    cases = [golden_case("qa-1"), golden_case("qa-unused"), sent, golden_case("qa-gone")]
    gathered.catalog = catalogue_of(cases, read)
    try:
        entries = list(gathered.golden_case_entries(scorecard_of(gathered.results())))
        assert entries == [("qa-1", golden_entry(cases[0])), ("qa-2", golden_entry(sent))]
        assert read == ["qa-1", "qa-gone"]
        assert gathered.collected["t.py::test[beta-qa-2]"] == {}
    finally:
        gathered.close()


def test_a_controller_orders_the_sent_golden_cases_by_their_catalogue_places_unread() -> None:
    # The xdist controller collects nothing: its catalogue is not loaded, and reading it
    # would scan and check every case file again.
    gathered = summary()
    places = {"qa-b": 0, "qa-c": 1, "qa-a": 2}
    for case_id in ("qa-a", "qa-b", "qa-c"):
        for model in ("alpha", "beta"):
            gathered.record(f"t.py::test[{model}-{case_id}]", packed({
                "result": {**result(case_id), "model": model}, "output": "o",
                GOLDEN: [case_id, golden_entry(golden_case(case_id, f"{case_id} by {model}")),
                         places[case_id]]}))

    def scan() -> Any:
        raise AssertionError("the case files were read")

    gathered.catalog = SimpleNamespace(loaded=False, each_case=scan)
    try:
        entries = list(gathered.golden_case_entries(scorecard_of(gathered.results())))
        assert [case_id for case_id, _ in entries] == ["qa-b", "qa-c", "qa-a"]
        assert entries[0][1] == golden_entry(golden_case("qa-b", "qa-b by alpha"))
    finally:
        gathered.close()


def test_a_controller_scans_the_case_files_when_a_case_was_not_sent() -> None:
    gathered = summary()
    gathered.record("t.py::test[alpha-qa-a]", packed({
        "result": result("qa-a"), "output": "o",
        GOLDEN: ["qa-a", golden_entry(golden_case("qa-a")), 1]}))
    # A result a scorecard hook added: no test sent its case.
    gathered.record("t.py::test[alpha-qa-z]", packed({"result": result("qa-z"), "output": "o"}))
    on_disk = [golden_case("qa-z", "from its file"), golden_case("qa-a", "from its file")]
    gathered.catalog = SimpleNamespace(loaded=False, each_case=lambda: iter(on_disk))
    try:
        entries = list(gathered.golden_case_entries(scorecard_of(gathered.results())))
        assert entries == [("qa-z", golden_entry(on_disk[0])), ("qa-a", golden_entry(on_disk[1]))]
    finally:
        gathered.close()


def test_the_spool_appends_after_a_read_where_its_last_line_ended() -> None:
    # Appends do not seek (a seek writes out the buffer); a read moves the file's position,
    # and the next append must still land after the last line, not where the read stopped.
    spool = ResultSpool()
    try:
        texts = {}
        for i in range(3):
            texts[f"t{i}"] = json.dumps({**result(f"qa-{i}"), "output": "é" * (i + 1)})
            spool.keep(f"t{i}", {ENTRY: texts[f"t{i}"], VIEWS: json.dumps([{"n": i}])})
            if i == 1:
                assert spool.texts("t0") == (texts["t0"].encode(), b"")
        spool.keep("t3", {ENTRY: "{}", VIEWS: "[]", GOLDEN: ["qa-3", '{"task": "qa"}', 0]})
        assert [spool.texts(f"t{i}")[0] for i in range(3)] == [texts[f"t{i}"].encode()
                                                              for i in range(3)]
        assert [spool.views(f"t{i}") for i in range(3)] == [[{"n": i}] for i in range(3)]
        assert spool.sent_golden("qa-3") == {"task": "qa"}
        assert spool.views("t3") == []
    finally:
        spool.close()


def test_a_cases_excerpt_numbers_its_turns_as_its_judge_and_details_do() -> None:
    # A QA reason cites "turn 1" for the first turn (the numbers the model under test and the
    # judge are shown); an agent's details index turns from 0, as its case file does.
    from pytest_callqa.engine.loading import load_cases

    cases = {c.task: c for c in load_cases(EXAMPLE / "cases")}
    qa = golden_entry(cases["qa"])["transcript_excerpt"]
    agent = golden_entry(cases["agent"])["transcript_excerpt"]
    assert qa[0].startswith("turn 1: ") and qa[1].startswith("turn 2: ")
    assert agent[0].startswith("turn 0: ") and agent[1].startswith("turn 1: ")
