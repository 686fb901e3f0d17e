"""Model outputs: recorded files that are broken, generated outputs, usage and cost."""

from __future__ import annotations

import json
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.pricing import ModelPrice, PriceTable
from pytest_callqa.outputs import (
    ModelOutput,
    OutputsError,
    discover_models,
    output_problem,
    own_copy,
    read_output,
    read_usage,
    with_cost,
)

from .conftest import MiniProject

RECORD = """
def test_r(callqa_result, callqa_output, record_property):
    record_property("structure", callqa_result.metrics["response_structure_compliance"].value)
    assert callqa_result.valid, callqa_result.notes
"""


def test_non_json_output_scores_structure_zero_without_crashing(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    project.write_output("beta", "qa-refund", "Sure! Here is the QA scorecard: Q1 passed.")
    project.write_output("beta", "entity-transfer", b"\xff\xfe not utf-8".decode("latin-1"))
    project.write_tests(RECORD)
    result = pytester.runpytest("-k", "beta-qa or beta-entity", "--callqa-report=report.json")
    result.assert_outcomes(failed=2)
    result.stdout.fnmatch_lines(["*structure check failed: output is not valid JSON*"])
    report = project.report()
    qa = next(c for c in report["cases"] if c["case_id"] == "qa-refund")
    assert qa["valid"] is False and qa["score"] is None
    assert qa["metrics"]["response_structure_compliance"]["value"] == 0.0
    assert "not valid JSON" in qa["metrics"]["response_structure_compliance"]["reason"]
    assert "1/1 invalid" in result.stdout.str()


def test_an_output_past_pythons_json_limits_is_scored_and_a_directory_is_a_clear_error(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    # Before, both raised inside the test with a traceback, and the pair fell out of the
    # scorecard: beta's QA was then left out of its final score instead of counting 0.
    project.write_output("beta", "qa-refund", "[" * 100_000 + "]" * 100_000)
    path = project.write_output("beta", "entity-transfer", {})
    path.unlink()
    path.mkdir()
    project.write_tests(RECORD)
    result = pytester.runpytest("-k", "beta-qa or beta-entity", "--callqa-report=report.json")
    result.assert_outcomes(failed=1, errors=1)
    result.stdout.fnmatch_lines(["*entity-transfer.json: cannot be read as an output (Is a "
                                 "directory)*"])
    assert "Traceback" not in result.stdout.str() and "IsADirectoryError" not in \
        result.stdout.str()
    qa = next(c for c in project.report()["cases"] if c["case_id"] == "qa-refund")
    assert qa["valid"] is False
    assert "nested deeper than Python reads" in \
        qa["metrics"]["response_structure_compliance"]["reason"]


def test_undecodable_output_file_is_scored_not_a_crash(tmp_path: Path) -> None:
    path = tmp_path / "out.json"
    path.write_bytes(b"\xff\xfe\x00garbage")
    output = read_output(path)
    assert output is not None and output.value == b"\xff\xfe\x00garbage"


def test_a_byte_order_mark_is_the_files_not_the_models(tmp_path: Path) -> None:
    # Before: "not valid JSON (Unexpected UTF-8 BOM)", a structure blocker charged to the
    # model for how the file was saved.
    path = tmp_path / "out.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps({"answer": "yes"}).encode())
    output = read_output(path)
    assert output is not None and output.value == {"answer": "yes"}


def test_renamed_key_names_the_field(project: MiniProject, pytester: pytest.Pytester) -> None:
    renamed = dict(project.cases["entity-transfer"]["expected_outcome"])
    renamed["keywords"] = renamed.pop("detected_keywords")
    project.write_output("beta", "entity-transfer", renamed)
    project.write_tests(RECORD)
    result = pytester.runpytest("-k", "beta-entity")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*detected_keywords: Field required*"])


def test_generate_hook_supplies_outputs_and_falls_back_to_recorded(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest("""
        import json
        from pytest_callqa import ModelOutput

        def pytest_callqa_generate(model, case, config):
            if model != "live":
                return None
            return ModelOutput(json.dumps(case.expected_outcome),
                               usage={"prompt_tokens": 100, "completion_tokens": 10})
    """)
    project.write_tests(RECORD)
    result = pytester.runpytest("--callqa-models=live,alpha", "--callqa-prices=live: 1 10",
                                "--callqa-report=report.json")
    result.assert_outcomes(passed=8)
    report = project.report()
    assert set(report["models"]) == {"live", "alpha"}
    live = [c for c in report["cases"] if c["model"] == "live"]
    assert all(c["usage"]["cost_usd"] == pytest.approx(0.0002) for c in live)
    assert report["models"]["live"]["cost_per_1000_calls"] == pytest.approx(0.2)


def test_generate_hook_returning_plain_text_is_scored(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest("""
        def pytest_callqa_generate(model, case, config):
            return "I cannot help with that."
    """)
    project.write_tests(RECORD)
    result = pytester.runpytest("--callqa-models=chatty", "-k", "qa")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*output is not valid JSON*"])


def test_a_failing_generator_errors_every_test_of_the_pair_with_its_message(
    project: MiniProject, pytester: pytest.Pytester
) -> None:
    pytester.makeconftest("""
        calls = []

        def pytest_callqa_generate(model, case, config):
            calls.append(case.id)
            if case.id == "qa-refund":
                raise ConnectionError("model server refused the connection")
            return None

        def pytest_sessionfinish(session):
            print(f"\\ngenerate calls: {len(calls)}")
    """)
    project.write_tests(RECORD + "\ndef test_output(callqa_output):\n    assert callqa_output\n")
    result = pytester.runpytest("--callqa-models=alpha", "-s")
    result.assert_outcomes(passed=6, errors=2)
    result.stdout.fnmatch_lines(["*ConnectionError: model server refused the connection*"])
    # Produced once per (model, case) pair, however many tests use it.
    result.stdout.fnmatch_lines(["generate calls: 4"])


def test_usage_file_and_prices(tmp_path: Path) -> None:
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "_usage.json").write_text(json.dumps(
        {"c1": {"prompt_tokens": 2000, "completion_tokens": 1000}}))
    usage = read_usage(tmp_path / "m", {"c1"})
    assert usage == {"c1": {"prompt_tokens": 2000.0, "completion_tokens": 1000.0}}
    prices = PriceTable.parse(["m: 0.5 1.5", "# a comment", ""])
    assert prices.get("m") == ModelPrice(0.5, 1.5)
    assert with_cost(usage["c1"], prices, "m")["cost_usd"] == pytest.approx(0.0025)
    assert "cost_usd" not in with_cost({"prompt_tokens": 5}, prices, "m")
    assert with_cost({"cost_usd": 1.0}, prices, "m") == {"cost_usd": 1.0}
    # No price, no cost: never a guess.
    assert "cost_usd" not in with_cost(usage["c1"], prices, "unpriced")
    # The built-in defaults price common models unless a line overrides them.
    assert with_cost(usage["c1"], prices, "gpt-4o-mini")["cost_usd"] == pytest.approx(0.0009)
    assert discover_models(tmp_path) == ["m"]


def test_model_names_with_colons_keep_them_in_prices() -> None:
    assert PriceTable.parse(["ollama:llama3: 0 0"]).get("ollama:llama3") == ModelPrice(0, 0)


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ("not json", "not valid JSON"),
        ("[1, 2]", "must map case ids to token counts"),
        ('{"c1": {"prompt_tokens": -3}}',
         "c1.prompt_tokens: must be a finite, non-negative number, got -3"),
        # Python's json reads NaN and Infinity: a cost made of them ended the run in a crash.
        ('{"c1": {"prompt_tokens": NaN}}',
         "c1.prompt_tokens: must be a finite, non-negative number, got nan"),
        ('{"c1": {"completion_tokens": Infinity}}',
         "c1.completion_tokens: must be a finite, non-negative number, got inf"),
        # Past the largest float: math.isfinite raised OverflowError, a crash.
        ('{"c1": {"completion_tokens": 1' + "0" * 400 + "}}",
         "c1.completion_tokens: must be a finite, non-negative number, got 10000"),
        # Past Python's limits: a ValueError and a RecursionError escaped as tracebacks.
        ('{"c1": {"prompt_tokens": ' + "1" * 5000 + "}}", r"not valid JSON \(Exceeds the limit"),
        ("[" * 100_000 + "]" * 100_000, r"not valid JSON \(nested deeper than Python reads\)"),
    ],
)
def test_bad_usage_file_names_the_file(tmp_path: Path, content: str, message: str) -> None:
    (tmp_path / "_usage.json").write_text(content)
    with pytest.raises(OutputsError, match=message) as info:
        read_usage(tmp_path, {"c1"})
    assert "_usage.json" in str(info.value)


def test_a_usage_file_that_cannot_be_read_names_the_file(tmp_path: Path) -> None:
    # A folder named _usage.json: each test of the model ended in a raw IsADirectoryError.
    (tmp_path / "_usage.json").mkdir()
    with pytest.raises(OutputsError) as info:
        read_usage(tmp_path, {"c1"})
    assert str(info.value) == f"{tmp_path / '_usage.json'}: cannot be read (Is a directory)"


def test_a_usage_key_naming_no_case_names_the_file_and_the_key(tmp_path: Path) -> None:
    # A typo ("c01" for "c1") or a stale id was ignored: the case meant had no cost, and the
    # model's cost was the mean over the other cases, shown as its whole cost.
    counts = {"prompt_tokens": 5, "completion_tokens": 5}
    (tmp_path / "_usage.json").write_text(json.dumps({"c1": counts, "c01": counts}))
    with pytest.raises(OutputsError) as info:
        read_usage(tmp_path, {"c1", "c2"})
    assert str(info.value) == (f"{tmp_path / '_usage.json'}: 'c01': names no golden case and "
                               "no output file beside it (a typo or a stale id: the case "
                               "meant has no usage)")
    # Beside an output of its name, a case of another catalogue (--callqa-cases narrowed to
    # some families): the key is the model's usage there.
    (tmp_path / "c01.json").write_text("{}")
    assert set(read_usage(tmp_path, {"c1", "c2"})) == {"c1", "c01"}
    many = {f"x{i}": counts for i in range(5)}
    (tmp_path / "_usage.json").write_text(json.dumps(many))
    with pytest.raises(OutputsError, match=r"'x0', 'x1', 'x2' and 2 more: names no golden"):
        read_usage(tmp_path, {"c1"})


def test_a_usage_key_naming_no_case_errors_the_models_pairs_and_a_selection_is_no_typo(
        project: MiniProject, pytester: pytest.Pytester) -> None:
    counts = {"prompt_tokens": 1_000_000, "completion_tokens": 1_000_000}
    project.write_usage("alpha", {"qa-refund": counts, "entity-transfr": counts})
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("--callqa-prices=alpha: 1 1", "--callqa-report=report.json")
    result.assert_outcomes(passed=4, errors=4)
    result.stdout.fnmatch_lines(["*_usage.json: 'entity-transfr': names no golden case*"])
    # Every pair of alpha errored: its column is kept, every figure of it unknown.
    alpha = project.report()["models"]["alpha"]
    assert (alpha["final_score_b"], alpha["any_blocker"], alpha["cost_adjusted_rank"]) == (
        None, None, None)
    # Checked against the catalogue, not the run's selection: a case left out by -k is one.
    project.write_usage("alpha", {cid: counts for cid in project.cases})
    selected = pytester.runpytest("--callqa-prices=alpha: 1 1", "-k", "alpha-qa",
                                  "--callqa-report=report.json")
    selected.assert_outcomes(passed=1)
    assert project.report()["models"]["alpha"]["cost_per_1000_calls"] == pytest.approx(2000.0)


def test_a_cost_that_overflows_is_unknown_not_infinite() -> None:
    prices = PriceTable.parse(["m: 1e308 1e308"])
    assert "cost_usd" not in with_cost({"prompt_tokens": 1e6, "completion_tokens": 1e6},
                                       prices, "m")


def test_json_python_will_not_read_is_an_unreadable_reply_and_a_directory_no_output(
        tmp_path: Path) -> None:
    # Valid JSON, but past Python's limits: scored as the unreadable reply it is (structure
    # 0), never an error that drops the pair from the scorecard.
    deep, long_number = "[" * 100_000 + "]" * 100_000, '{"questions": ' + "1" * 5000 + "}"
    for name, text in (("deep", deep), ("long", long_number)):
        (tmp_path / f"{name}.json").write_text(text)
        output = read_output(tmp_path / f"{name}.json")
        assert output is not None and output.value == text
    (tmp_path / "dir.json").mkdir()
    with pytest.raises(OutputsError, match=r"dir\.json: cannot be read as an output"):
        read_output(tmp_path / "dir.json")


def test_an_unusable_outputs_file_errors_its_pairs_and_lists_them_across_workers(
        project: MiniProject, pytester: pytest.Pytester) -> None:
    # beta's usage file is unusable: each of its pairs is an error of the input, never a
    # failure of the model, and the report lists every one of them with the file's problem
    # (under xdist the payload crosses from the workers).
    (project.root / "outputs" / "beta" / "_usage.json").write_text(
        '{"qa-refund": {"prompt_tokens": NaN}}', encoding="utf-8")
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("-n", "2", "--callqa-report=report.json")
    result.assert_outcomes(passed=4, errors=4)
    report = project.report()
    errors = [e for e in report["not_evaluated"] if e["kind"] == "test_error"]
    assert sorted(e["case_id"] for e in errors) == sorted(
        c["case_id"] for c in report["cases"] if c["model"] == "alpha")
    assert all(e["model"] == "beta" and "_usage.json" in e["reason"]
               and "must be a finite, non-negative number" in e["reason"] for e in errors)
    # Not dropped from the scorecard (alpha was then ranked as if beta had never run): its
    # column is kept, its tasks and final scores unknown, not ranked.
    beta = report["models"]["beta"]
    assert report["model_order"] == ["alpha", "beta"]
    assert all(t["score"] is None and t["errored_cases"] for t in beta["tasks"].values())
    assert (beta["final_score_b"], beta["any_blocker"], beta["cost_adjusted_rank"]) == (
        None, None, None)
    result.stdout.fnmatch_lines(["*test errors, not evaluated: beta: entity-transfer, *"])


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_a_lone_surrogate_in_a_recorded_output_is_scored_and_reported(
        project: MiniProject, pytester: pytest.Pytester, workers: list[str]) -> None:
    # A "\\ud800" escape alone in an output: the run ended in an INTERNALERROR after a few
    # tests, its reports holding only the pairs before (and saying nothing was missing).
    path = project.root / "outputs" / "beta" / "text-appointment.json"
    output = json.loads(path.read_text(encoding="utf-8"))
    output["summary"]["call_purpose"] += " \\ud800"
    path.write_text(json.dumps(output).replace("\\\\ud800", "\\ud800"), encoding="utf-8")
    assert "\\ud800" in path.read_text(encoding="utf-8")
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    result = pytester.runpytest(*workers, "--callqa-report=report.json",
                                "--callqa-html=report.html")
    result.assert_outcomes(passed=8)
    report = project.report()
    entry = next(c for c in report["cases"]
                 if (c["model"], c["case_id"]) == ("beta", "text-appointment"))
    assert entry["output"]["summary"]["call_purpose"].endswith(" \ufffd")
    assert any("unpaired UTF-16 surrogates" in note for note in entry["notes"])
    assert len(report["cases"]) == 8


def test_usage_a_generate_hook_gives_must_be_counts(
        project: MiniProject, pytester: pytest.Pytester) -> None:
    # A NaN or a text in a hook's usage ended the run in a TypeError at the scorecard, after
    # every test, with no scorecard and no report.
    pytester.makeconftest("""
        from pytest_callqa import ModelOutput

        def pytest_callqa_generate(model, case, config):
            if model == "beta" and case.task == "qa":
                return ModelOutput(case.expected_outcome, usage={"cost_usd": float("nan")})
            return None
    """)
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    result = pytester.runpytest("--callqa-report=report.json")
    result.assert_outcomes(passed=7, errors=1)
    result.stdout.fnmatch_lines([
        "*the output of model 'beta' for case 'qa-refund' from pytest_callqa_generate: "
        "usage[[]'cost_usd'[]] must be a finite, non-negative number, got nan*"])
    assert len(project.report()["cases"]) == 7


def test_a_generate_hook_must_give_an_output(
        project: MiniProject, pytester: pytest.Pytester) -> None:
    # An object() was scored as beta's reply (structure 0, a blocker, beta disqualified) and
    # the report stored "<object object at 0x...>"; the hook was not named.
    pytester.makeconftest("""
        from pytest_callqa import ModelOutput

        def pytest_callqa_generate(model, case, config):
            if model == "beta" and case.task == "qa":
                return object()
            if model == "beta" and case.task == "entity":
                return ModelOutput({"detected_keywords": {"balance"}})
            return None
    """)
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.case_id\n")
    result = pytester.runpytest("--callqa-report=report.json")
    result.assert_outcomes(passed=6, errors=2)
    out = result.stdout.str()
    assert ("the output of model 'beta' for case 'qa-refund' from pytest_callqa_generate: the "
            "value is of type object, not text, bytes or a JSON value (dict, list, str, int, "
            "float, bool or None)") in out
    assert ("the output of model 'beta' for case 'entity-transfer' from pytest_callqa_generate: "
            "the value['detected_keywords'] is of type set, not a JSON value (dict, list, str, "
            "int, float, bool or None)") in out
    assert len(project.report()["cases"]) == 6


@pytest.mark.parametrize(("value", "problem"), [
    ("not JSON", None), (b"\xff raw", None), (None, None), (3.5, None), (True, None),
    ({"a": [1, {"b": None, "c": float("nan")}]}, None),
    (object(), "the value is of type object, not text, bytes or a JSON value (dict, list, "
               "str, int, float, bool or None)"),
    ({"a": [1, {"b": (2,)}]}, "the value['a'][1]['b'] is of type tuple, not a JSON value "
                             "(dict, list, str, int, float, bool or None)"),
    ({"a": 1, 2: "b"}, "the value has the key 2, of type int: the keys of a JSON object "
                       "are str"),
    ([b"raw"], "the value[0] is of type bytes, not a JSON value (dict, list, str, int, "
               "float, bool or None)"),
    # No JSON text can be written for it: the report's writing ended the run in an
    # INTERNALERROR, no scorecard printed.
    ({"trace": [10 ** 4400]}, "the value['trace'][0] is an integer of more than 4,300 digits, "
                              "which no JSON text can be written for"),
    (10 ** 4299, None),  # 4,300 digits: as many as Python writes
], ids=["text", "bytes", "null", "number", "bool", "nested", "object", "tuple", "int-key",
        "inner-bytes", "huge-int", "longest-int"])
def test_what_an_output_can_be(value: Any, problem: str | None) -> None:
    assert output_problem(value) == problem


def test_model_output_defaults() -> None:
    output = ModelOutput({"a": 1})
    assert output.usage == {} and output.source == "pytest_callqa_generate"


def test_an_engine_error_on_one_output_errors_only_that_pair(
    project: MiniProject, pytester: pytest.Pytester, monkeypatch: pytest.MonkeyPatch
) -> None:
    import pytest_callqa.engine.evaluate as evaluate_module

    prepare = evaluate_module.prepare

    def failing_prepare(case: Any, output: Any, **kwargs: Any) -> Any:
        if kwargs.get("model") == "beta" and case.id == "qa-refund":
            raise RuntimeError("engine bug on this output")
        return prepare(case, output, **kwargs)

    monkeypatch.setattr(evaluate_module, "prepare", failing_prepare)
    project.write_tests("def test_r(callqa_result):\n    assert callqa_result.valid\n")
    result = pytester.runpytest("--callqa-report=report.json", "--callqa-html=report.html",
                                "--callqa-markdown=summary.md")
    result.assert_outcomes(passed=7, errors=1)
    result.stdout.fnmatch_lines(["*ERROR at setup of test_r[[]beta-qa-refund[]]*",
                                 "E * RuntimeError: engine bug on this output"])
    report = project.report()
    assert len(report["cases"]) == 7
    # The pair is not silently dropped: the header, the notes and the report name it (it
    # was absent everywhere but pytest's own error, its task score read as complete).
    result.stdout.fnmatch_lines(["*test errors, not evaluated: beta: qa-refund*",
                                 "*E beta: qa: 1 case not evaluated, its test errored "
                                 "(qa-refund): left out of the task score*"])
    assert report["not_evaluated"] == [{
        "kind": "test_error", "model": "beta", "case_id": "qa-refund", "task": "qa",
        "reason": "RuntimeError raised (its message is in the test's error)"}]
    assert any("qa-refund" in note for note in report["notes"])
    html = (project.root / "report.html").read_text(encoding="utf-8")
    assert "not evaluated: beta, qa-refund: the test errored: RuntimeError raised" in html
    markdown = (project.root / "summary.md").read_text(encoding="utf-8")
    assert ("1 not evaluated (missing outputs, test errors, runs not produced or invalid case "
            "files).") in markdown


def test_an_output_nested_too_deep_to_write_keeps_its_result(
        project: MiniProject, pytester: pytest.Pytester) -> None:
    # Before: the pair was scored, then writing its output into the payload raised
    # RecursionError: the test errored and the model vanished from the scorecard, listed
    # nowhere (a model that did this on every case would be renormalised without the task).
    output = json.loads(json.dumps(project.cases["text-appointment"]["expected_outcome"]))
    output["summary"]["call_extracted_info"]["notes"] = "DEEP"
    project.write_output("beta", "text-appointment", json.dumps(output).replace(
        '"DEEP"', "[" * 600 + "]" * 600))
    project.write_tests("def test_scored(callqa_result):\n    assert callqa_result\n")
    result = pytester.runpytest("-k", "text-appointment", "--callqa-report=report.json")
    result.assert_outcomes(passed=2)
    [beta] = [c for c in project.report()["cases"] if c["model"] == "beta"]
    assert beta["output"].startswith("(not kept: the output is nested deeper than")


def test_a_tests_own_copy_of_an_output() -> None:
    value = {"questions": [{"id": "Q1", "tags": ["a"]}, None, 1.5], "text": "x"}
    copied = own_copy(value)
    assert copied == value
    copied["questions"][0]["tags"].append("b")
    copied["questions"].pop()
    assert value == {"questions": [{"id": "Q1", "tags": ["a"]}, None, 1.5], "text": "x"}
    text = "not JSON"
    assert own_copy(text) is text
    # Deeper than Python's recursion limit, as an output may be.
    deep: list[Any] = []
    inner = deep
    for _ in range(5 * sys.getrecursionlimit()):
        inner.append([])
        inner = inner[0]
    copied_deep = own_copy(deep)
    assert copied_deep is not deep and isinstance(copied_deep[0][0], list)
