"""Loading golden cases: formats, transcripts, and errors that name the file and field."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.loading import CaseFileError, load_case_file, load_cases
from pytest_callqa.engine.registry import default_registry

from .doc_cases import doc_cases

EXAMPLE_CASES = Path(__file__).parents[2] / "example_project" / "cases"

GOOD = """\
id: qa-1
task: qa
transcript:
  - {speaker: agent, text: "Good morning, how can I help?", start: "00:12"}
  - {speaker: customer, text: "I was charged twice.", start: 15}
config:
  questions:
    - {question_id: Q1, text: "Did the agent greet the customer?", type: PASS_FAIL}
expected_outcome:
  questions:
    - {question_id: Q1, score: 5, max_score: 5, type: PASS_FAIL, reason: "greeted"}
"""


def write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text, encoding="utf-8")
    return path


def test_yaml_case_with_turns_and_timestamps(tmp_path: Path) -> None:
    [case] = load_case_file(write(tmp_path, "a.yaml", GOOD))
    assert case.id == "qa-1"
    assert [t.start for t in case.transcript] == [12.0, 15.0]
    assert case.transcript_text.splitlines()[0] == "[00:12] agent: Good morning, how can I help?"


def test_string_transcript_is_split_into_turns(tmp_path: Path) -> None:
    text = GOOD.split("transcript:")[0] + (
        'transcript: "[01:02] agent: Hello there\\ncustomer: Hi"\n'
        + "config:" + GOOD.split("config:")[1])
    [case] = load_case_file(write(tmp_path, "a.yaml", text))
    assert [(t.speaker, t.text, t.start) for t in case.transcript] == [
        ("agent", "Hello there", 62.0), ("customer", "Hi", None)]


def test_json_file_with_a_list_of_cases(tmp_path: Path) -> None:
    import yaml

    one = yaml.safe_load(GOOD)
    two = {**one, "id": "qa-2"}
    cases = load_case_file(write(tmp_path, "a.json", json.dumps([one, two])))
    assert [c.id for c in cases] == ["qa-1", "qa-2"]


@pytest.mark.parametrize(("text", "needle"), [
    ("id: [unclosed\n", "cannot be parsed"),
    ("", "contains no case"),
    ("- just a string\n", "a case must be a mapping"),
    (GOOD.replace("id: qa-1\n", ""), "id: Field required"),
    (GOOD.replace("id: qa-1", "id: 'has space'"), "id: Value error"),
    # A final newline: "$" matched before it, so the id passed its pattern.
    (GOOD.replace("id: qa-1", 'id: "qa-1\\n"'), "id: Value error"),
    (GOOD.replace("task: qa", "task: sentiment"), "unknown task 'sentiment'"),
    (GOOD.replace("score: 5,", "score: '5',"), "expected_outcome.questions[0].score"),
    (GOOD.replace("score: 5,", "score: -1,"), "expected_outcome.questions[0].score"),
    (GOOD.replace("score: 5,", "score: .nan,"), "expected_outcome.questions[0].score"),
    (GOOD.replace("Q1, score: 5,", "Q1, score: 2,"), "a PASS_FAIL question scores 0 or max_score"),
    (GOOD.replace('reason: "greeted"', 'reasoning: "greeted"'),
     "expected_outcome.questions[0].reason"),
    (GOOD.replace('start: "00:12"', 'start: "12 seconds"'), "transcript[0].start"),
    # Before: accepted, then every judge prompt of the case raised OverflowError.
    (GOOD.replace('start: "00:12"', "start: .inf"), "transcript[0].start"),
    # An integer past the largest float: math.isfinite raised OverflowError, a crash.
    (GOOD.replace('start: "00:12"', "start: 1" + "0" * 400), "transcript[0].start"),
    (GOOD.replace("score: 5,", "score: 1" + "0" * 400 + ","),
     "expected_outcome.questions[0].score"),
    (GOOD.replace("expected_outcome:\n  questions:\n    - {question_id: Q1, score: 5, "
                  "max_score: 5, type: PASS_FAIL, reason: \"greeted\"}\n", ""),
     "expected_outcome: missing"),
    (GOOD + "colour: blue\n", "colour: Extra inputs are not permitted"),
    # YAML that Python will not read: a number of over 4,300 digits, nesting past the
    # recursion limit. Before, either ended the whole collection with a traceback.
    (GOOD + "tags: [" + "9" * 5000 + "]\n", "cannot be parsed: Exceeds the limit (4300"),
    # libyaml stops at its own depth limit, PyYAML's Python parser at the recursion limit.
    ("[" * 20_000 + "]" * 20_000 + "\n", "(file) cannot be parsed: "),
    # A key given twice: the parser kept the last value without a word.
    (GOOD.replace("score: 5, max_score: 5,", "score: 5, max_score: 5, score: 0,"),
     "found the key 'score' twice"),
    (GOOD + "task: entity\n", "found the key 'task' twice"),
    # Anchors referring to anchors: 4.5 KB that expanded to billions of values once the
    # case was scored or written out (before: accepted, then ~5.6 GB of memory).
    (GOOD + "notes:\n  b0: &a0 [lol, lol, lol, lol, lol, lol, lol, lol, lol]\n"
     + "".join(f"  b{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 9)}]\n" for i in range(1, 8)),
     "(file) its aliases expand to more than 1,000,000 values"),
    ("&loop [*loop]\n", "(file) its aliases expand to more than 1,000,000 values"),
])
def test_malformed_case_names_file_and_field(tmp_path: Path, text: str, needle: str) -> None:
    path = write(tmp_path, "bad.yaml", text)
    with pytest.raises(CaseFileError) as info:
        load_case_file(path)
    assert str(path) in str(info.value)
    assert needle in str(info.value)


def test_json_past_pythons_limits_names_the_file(tmp_path: Path) -> None:
    for name, text in (("deep.json", "[" * 100_000 + "]" * 100_000),
                       ("long.json", '{"id": ' + "1" * 5000 + "}")):
        path = write(tmp_path, name, text)
        with pytest.raises(CaseFileError, match="cannot be parsed") as info:
            load_case_file(path)
        assert info.value.path == path


def test_a_json_case_with_a_key_twice_names_the_file_and_the_key(tmp_path: Path) -> None:
    path = write(tmp_path, "twice.json", '{"id": "qa-1", "id": "qa-2"}')
    with pytest.raises(CaseFileError, match="key 'id' appears twice in one object"):
        load_case_file(path)


def test_a_json_case_with_a_lone_surrogate_names_the_file_and_the_field(
        tmp_path: Path) -> None:
    # JSON reads "\\ud800" alone into a string no report can write: the run ended in an
    # error deep in the TF-IDF vectoriser, or in an INTERNALERROR writing the results.
    import yaml

    case = yaml.safe_load(GOOD)
    case["transcript"][1]["text"] = "greeted PLACEHOLDER"
    text = json.dumps(case).replace("PLACEHOLDER", "\\ud800")
    path = write(tmp_path, "lone.json", text)
    with pytest.raises(CaseFileError) as info:
        load_case_file(path)
    assert info.value.problems == ["transcript[1].text: holds an unpaired UTF-16 surrogate (a "
                                   "lone \\ud800-\\udfff escape), which is not Unicode text"]




@pytest.mark.parametrize(("value", "problem"), [
    (".nan", "config.extra: nan is not a number JSON can hold"),
    ("-.inf", "config.extra: -inf is not a number JSON can hold"),
    ("!!binary aGVsbG8=", "config.extra: a bytes (b'hello') is not JSON data; write it as text"),
    ("!!set {a}", "config.extra: a set ({'a'}) is not JSON data; write it as text"),
    ("!!timestamp 2024-05-01",
     "config.extra: a date (datetime.date(2024, 5, 1)) is not JSON data; write it as text"),
    # Finite as written, infinite as read: past the largest float.
    ("1.0e+400", "config.extra: inf is not a number JSON can hold"),
    ("{.inf: a}", "config.extra: the key inf is not text; quote it"),
    ("{!!binary aGk=: a}", "config.extra: the key b'hi' is not text; quote it"),
])
def test_a_yaml_value_json_cannot_hold_names_the_file_and_the_field(
        tmp_path: Path, value: str, problem: str) -> None:
    # Golden values are written into the spool, the report and cache keys as JSON: such a
    # value ended the run in an INTERNALERROR at its first test's report (a date, bytes, a
    # set) or lost the report and pytest's summary at the end (NaN, an infinity).
    text = GOOD.replace("config:\n", f"config:\n  extra: {value}\n", 1)
    with pytest.raises(CaseFileError) as info:
        load_case_file(write(tmp_path, "odd.yaml", text))
    assert info.value.problems == [problem]


def test_a_yaml_tag_shorthand_is_found_too(tmp_path: Path) -> None:
    # "%TAG !y! tag:yaml.org,2002:" makes !y!timestamp a date without a "!!" in the file.
    text = "%TAG !y! tag:yaml.org,2002:\n---\n" + GOOD.replace(
        "config:\n", "config:\n  extra: !y!timestamp 2024-05-01\n", 1)
    with pytest.raises(CaseFileError) as info:
        load_case_file(write(tmp_path, "tagged.yaml", text))
    assert info.value.problems == [
        "config.extra: a date (datetime.date(2024, 5, 1)) is not JSON data; write it as text"]


@pytest.mark.parametrize("value", ["NaN", "Infinity", "-Infinity", "1e400"])
def test_a_json_number_json_cannot_hold_names_the_file_and_the_field(
        tmp_path: Path, value: str) -> None:
    import yaml

    case = yaml.safe_load(GOOD)
    case["config"]["extra"] = {"list": [1, "PLACEHOLDER"]}
    text = json.dumps(case).replace('"PLACEHOLDER"', value)
    with pytest.raises(CaseFileError) as info:
        load_case_file(write(tmp_path, "odd.json", text))
    assert info.value.problems == [
        f"config.extra.list[1]: {float(value)!r} is not a number JSON can hold"]


def test_a_bare_yaml_date_is_read_as_the_text_it_is(tmp_path: Path) -> None:
    # A tool call's "date: 2024-05-01" is compared with a model's JSON, which has no date.
    text = GOOD.replace("config:\n", "config:\n  extra: {when: 2024-05-01, n: 1_000}\n", 1)
    [case] = load_case_file(write(tmp_path, "dated.yaml", text))
    assert case.config["extra"] == {"when": "2024-05-01", "n": "1_000"}


@pytest.mark.parametrize(("written", "read"), [
    # YAML 1.1 (PyYAML's) read each of these as another value than the text written: a
    # time as base 60, a zip code as octal, an answer as a boolean, an id as hexadecimal.
    ("10:30", "10:30"), ("01234", "01234"), ("0123", "0123"), ("yes", "yes"), ("no", "no"),
    ("On", "On"), ("off", "off"), ("0x1F", "0x1F"), ("0o17", "0o17"), ("1_000", "1_000"),
    ("190:20:30", "190:20:30"), ("=", "="),
    # What JSON (and YAML 1.2) read as numbers, booleans and null stays so.
    ("12", 12), ("-12", -12), ("+12", 12), ("0", 0), ("3.5", 3.5), ("-0.5", -0.5),
    (".5", 0.5), ("12.", 12.0), ("1e3", 1000.0), ("2.5E-3", 0.0025), ("true", True),
    ("False", False), ("null", None), ("~", None), ('"yes"', "yes"), ("'10:30'", "10:30"),
])
def test_a_plain_yaml_scalar_is_read_as_json_would_read_it_or_as_text(
        tmp_path: Path, written: str, read: object) -> None:
    text = GOOD.replace("config:\n", f"config:\n  extra: {{value: {written}}}\n", 1)
    [case] = load_case_file(write(tmp_path, "scalar.yaml", text))
    found = case.config["extra"]["value"]
    assert found == read and type(found) is type(read)


@pytest.mark.parametrize(("name", "text"), [
    ("case.yaml", "config:\n  extra: {big: 1" + "0" * 400 + ".0}\n"),
    ("case.yaml", "config:\n  extra: {big: -2" + "0" * 308 + ".5}\n"),
    # A mantissa of 210 digits or more with a two-digit exponent: 1e310.
    ("case.yaml", "config:\n  extra: {big: 1" + "0" * 300 + "e10}\n"),
    ("case.json", None),
])
def test_a_number_too_large_for_a_float_is_named_not_read_as_infinity(
        tmp_path: Path, name: str, text: str | None) -> None:
    # It loaded as inf: the tests passed, then writing the report raised "Out of range float
    # values are not JSON compliant" (no scorecard, exit 1, the last run's report left).
    if text is None:
        import yaml

        case = yaml.safe_load(GOOD)
        case["config"]["extra"] = {"big": 0.0}
        body = json.dumps(case).replace('"big": 0.0', '"big": 1' + "0" * 400 + ".0")
    else:
        body = GOOD.replace("config:\n", text, 1)
    with pytest.raises(CaseFileError, match=r"config\.extra\.big: (-)?inf is not a number JSON "
                                            r"can hold"):
        load_case_file(write(tmp_path, name, body))


def test_case_files_are_found_whatever_the_case_of_their_suffix(tmp_path: Path) -> None:
    # Cases in "A.YAML" were left out without a word: a suite could pass with none evaluated.
    write(tmp_path, "A.YAML", GOOD)
    write(tmp_path, "B.Json", json.dumps({**__import__("yaml").safe_load(GOOD), "id": "qa-2"}))
    write(tmp_path, "notes.TXT", "not a case")
    write(tmp_path, "cases.SCHEMA.JSON", "{}")  # the case schema, whatever its case
    assert sorted(case.id for case in load_cases(tmp_path)) == ["qa-1", "qa-2"]


def _json_case(text: str) -> str:
    import yaml

    case = yaml.safe_load(GOOD)
    case["transcript"][1]["text"] = "PLACEHOLDER"
    return json.dumps(case).replace("PLACEHOLDER", text)


@pytest.mark.parametrize("escape", ["\\uDC00", "\\udbff", "\\u00e9 \\uDfFf"])
def test_every_spelling_of_a_lone_surrogate_escape_is_found(tmp_path: Path,
                                                             escape: str) -> None:
    with pytest.raises(CaseFileError) as info:
        load_case_file(write(tmp_path, "lone.json", _json_case(escape)))
    assert info.value.problems[0].startswith("transcript[1].text: holds an unpaired UTF-16")


@pytest.mark.parametrize(("escape", "text"), [("\\ud83d\\ude00", "\U0001f600"),
                                              ("\\\\ud800", "\\ud800")])
def test_a_surrogate_pair_or_an_escaped_backslash_loads(tmp_path: Path, escape: str,
                                                        text: str) -> None:
    [case] = load_case_file(write(tmp_path, "fine.json", _json_case(escape)))
    assert case.transcript[1].text == text


def test_a_yaml_merge_key_may_still_be_overridden(tmp_path: Path) -> None:
    # YAML's merge: the keys given beside '<<' override the merged ones, twice by design.
    merged = GOOD.replace(
        '  - {speaker: agent, text: "Good morning, how can I help?", start: "00:12"}\n'
        '  - {speaker: customer, text: "I was charged twice.", start: 15}\n',
        '  - &turn {speaker: agent, text: "Good morning, how can I help?", start: "00:12"}\n'
        '  - {<<: *turn, speaker: customer, text: "I was charged twice.", start: 15}\n')
    assert merged != GOOD
    [case] = load_case_file(write(tmp_path, "merged.yaml", merged))
    assert [(t.speaker, t.text) for t in case.transcript] == [
        ("agent", "Good morning, how can I help?"), ("customer", "I was charged twice.")]


def problems_of(tmp_path: Path, case: Any) -> list[str]:
    """The problems the loader reports for one case written as JSON (none when it loads)."""
    path = write(tmp_path, "case.json", json.dumps(case))
    try:
        load_case_file(path)
    except CaseFileError as exc:
        assert exc.path == path
        return exc.problems
    return []


def test_the_documented_minimal_case_of_every_task_loads(tmp_path: Path) -> None:
    cases = doc_cases()
    assert sorted(cases) == sorted(default_registry().tasks)
    for case in cases.values():
        assert problems_of(tmp_path, case) == []


NEED_TRANSCRIPT = sorted(set(default_registry().tasks) - {"grounding"})


@pytest.mark.parametrize("task", NEED_TRANSCRIPT)
@pytest.mark.parametrize("transcript", [None, [], "", "  \n\n  "])
def test_a_case_without_a_turn_is_a_case_error(tmp_path: Path, task: str,
                                               transcript: Any) -> None:
    case = doc_cases()[task]
    if transcript is None:
        del case["transcript"]
    else:
        case["transcript"] = transcript
    assert f"transcript: no turn (every {task} case needs one)" in problems_of(tmp_path, case)


@pytest.mark.parametrize("task", sorted(default_registry().tasks))
def test_a_blank_turn_is_a_case_error_in_every_task(tmp_path: Path, task: str) -> None:
    case = doc_cases()[task]
    case["transcript"] = [{"speaker": "agent", "text": "Hello, how can I help?"},
                          {"speaker": "customer", "text": "   "}]
    problems = problems_of(tmp_path, case)
    assert "transcript[1].text: empty turn (every turn must say something)" in problems


@pytest.mark.parametrize("task", sorted(default_registry().tasks))
def test_a_transcript_with_no_letter_or_digit_is_a_case_error(tmp_path: Path,
                                                              task: str) -> None:
    # A transcript of "..." turns loaded, and every output was judged against nothing.
    case = doc_cases()[task]
    needs = default_registry().tasks[task].needs_transcript
    message = f"transcript: no turn has a letter or a digit (every {task} case needs words " \
              "to judge against)"
    case["transcript"] = [{"speaker": "agent", "text": "..."},
                          {"speaker": "customer", "text": "\U0001f642 ?!"}]
    assert (message in problems_of(tmp_path, case)) is needs
    # A pause or a noise among turns that say something is a real call's.
    case["transcript"] = [{"speaker": "agent", "text": "Hello, how can I help?"},
                          {"speaker": "customer", "text": "..."}]
    assert message not in problems_of(tmp_path, case)


@pytest.mark.parametrize(("task", "where", "blank", "problems"), [
    ("text", ("expected_outcome", "sentiment", 0, "text"), "",
     ["expected_outcome.sentiment[0].text: String should have at least 1 character"]),
    ("text", ("expected_outcome", "sentiment", 0, "text"), " \t",
     ["expected_outcome.sentiment[0].text: Value error, is only whitespace: write the text"]),
    # A blank keyword counted as configured: a free Layer 2 exact match for a model that
    # detected nothing, and [" "] alone passed for a configured list.
    ("entity", ("config", "keywords", 1), "  ",
     ["config.keywords[1]: Value error, is only whitespace: write the text"]),
    ("entity", ("config", "topics"), [""],
     ["config.topics[0]: String should have at least 1 character"]),
    ("qa", ("config", "questions", 0, "question_id"), "   ",
     ["config.questions[0].question_id: Value error, is only whitespace: write the text"]),
])
def test_a_blank_text_a_case_states_is_a_case_error_naming_the_field(
        tmp_path: Path, task: str, where: tuple[Any, ...], blank: Any,
        problems: list[str]) -> None:
    case = doc_cases()[task]
    parent = case
    for key in where[:-1]:
        parent = parent[key]
    parent[where[-1]] = blank
    assert problems_of(tmp_path, case) == problems


def test_a_blank_expected_question_id_is_a_case_error_naming_both_places(
        tmp_path: Path) -> None:
    case = doc_cases()["qa"]
    case["config"]["questions"][0]["question_id"] = " "
    case["expected_outcome"]["questions"][0]["question_id"] = " "
    assert problems_of(tmp_path, case) == [
        "config.questions[0].question_id: Value error, is only whitespace: write the text",
        "expected_outcome.questions[0].question_id: Value error, is only whitespace: write "
        "the text"]


def test_grounding_takes_its_context_from_the_config_or_the_transcript(tmp_path: Path) -> None:
    case = doc_cases()["grounding"]
    assert "transcript" not in case and problems_of(tmp_path, case) == []
    del case["config"]["context"]
    assert problems_of(tmp_path, case) == [
        "config.context: no context — give passages in config.context or a transcript; an "
        "answer cannot be grounded in nothing"]


@pytest.mark.parametrize(("config", "problem"), [
    (None, "config.questions: Field required"),
    ({"questions": []}, "config.questions: List should have at least 1 item after "
                        "validation, not 0"),
    ({"questions": [{"question_id": ""}]}, "config.questions[0].question_id: String should "
                                           "have at least 1 character"),
])
def test_a_qa_case_needs_a_question(tmp_path: Path, config: Any, problem: str) -> None:
    case = doc_cases()["qa"]
    if config is None:
        del case["config"]
    else:
        case["config"] = config
    assert problem in problems_of(tmp_path, case)


def test_a_qa_case_needs_an_expected_question(tmp_path: Path) -> None:
    case = doc_cases()["qa"]
    case["expected_outcome"]["questions"] = []
    assert problems_of(tmp_path, case) == [
        "expected_outcome.questions: List should have at least 1 item after validation, not 0"]


@pytest.mark.parametrize(("change", "problem"), [
    ({"question_id": "Q2"}, "expected_outcome.questions[0].question_id: 'Q1' is not asked in "
                            "config.questions (a live model would never answer it)"),
    ({"type": "SCORE"}, "expected_outcome.questions[0].type: PASS_FAIL but config.questions "
                        "asks 'Q1' as SCORE"),
    ({"max_score": 10}, "expected_outcome.questions[0].max_score: 5 but config.questions gives "
                        "'Q1' max_score 10"),
])
def test_the_expected_scorecard_matches_the_questions_asked(
    tmp_path: Path, change: dict[str, Any], problem: str
) -> None:
    case = doc_cases()["qa"]
    case["config"]["questions"][0].update(change)
    assert problem in problems_of(tmp_path, case)


def test_an_expected_score_above_max_score_is_a_case_error(tmp_path: Path) -> None:
    case = doc_cases()["qa"]
    case["expected_outcome"]["questions"][0].update(score=7, type="SCORE")
    case["config"]["questions"][0]["type"] = "SCORE"
    assert problems_of(tmp_path, case) == [
        "expected_outcome.questions[0]: Value error, score 7 exceeds max_score 5"]


@pytest.mark.parametrize(("config", "problem"), [
    ({}, "config.target_language: Field required"),
    ({"target_language": ""}, "config.target_language: String should have at least 1 "
                              "character"),
])
def test_a_translation_case_names_its_target_language(
    tmp_path: Path, config: dict[str, Any], problem: str
) -> None:
    case = doc_cases()["translation"]
    case["config"] = config
    assert problems_of(tmp_path, case) == [problem]


def test_problems_of_each_case_of_a_file_are_prefixed_with_its_position(
    tmp_path: Path
) -> None:
    good, bad = doc_cases()["qa"], doc_cases()["qa"]
    bad["id"] = "qa-greeting-002"
    del bad["config"], bad["transcript"]
    assert problems_of(tmp_path, [good, bad]) == [
        "case[1].transcript: no turn (every qa case needs one)",
        "case[1].config.questions: Field required",
    ]


def test_a_schema_reference_is_set_aside(tmp_path: Path) -> None:
    case = {"$schema": "../callqa-case.schema.json", **doc_cases()["text"]}
    assert problems_of(tmp_path, case) == []
    case["$schema"] = {"url": "x"}
    assert problems_of(tmp_path, case) == [
        "$schema: must be the schema's URL or path (a string), got dict"]


def test_a_schema_file_beside_the_cases_is_not_a_case(tmp_path: Path) -> None:
    write(tmp_path, "qa.yaml", GOOD)
    write(tmp_path, "callqa-case.schema.json", '{"$schema": "x", "anyOf": []}')
    assert [c.id for c in load_cases(tmp_path)] == ["qa-1"]


def test_entity_case_needs_a_configured_list(tmp_path: Path) -> None:
    text = """\
id: e-1
task: entity
transcript: "customer: refund"
config: {}
expected_outcome: {detected_keywords: [], detected_topics: [], valid_entity_set: []}
"""
    with pytest.raises(CaseFileError, match="config: Value error, an entity case needs"):
        load_case_file(write(tmp_path, "e.yaml", text))


def test_duplicate_ids_across_files_name_both(tmp_path: Path) -> None:
    first = write(tmp_path, "a.yaml", GOOD)
    second = write(tmp_path, "b.yaml", GOOD)
    with pytest.raises(CaseFileError) as info:
        load_cases(tmp_path)
    assert str(second) in str(info.value) and str(first) in str(info.value)


def test_every_bad_file_is_reported(tmp_path: Path) -> None:
    write(tmp_path, "good.yaml", GOOD)
    write(tmp_path, "bad1.yaml", "id: [\n")
    write(tmp_path, "bad2.yaml", GOOD.replace("task: qa", "task: nope"))
    with pytest.raises(CaseFileError) as info:
        load_cases(tmp_path)
    assert "bad1.yaml" in str(info.value) and "bad2.yaml" in str(info.value)


def test_missing_directory_is_a_clear_error(tmp_path: Path) -> None:
    with pytest.raises(FileNotFoundError, match="does not exist"):
        load_cases(tmp_path / "nope")


def test_example_project_cases_load() -> None:
    cases = load_cases(EXAMPLE_CASES)
    tasks = {c.task for c in cases}
    assert {"qa", "entity", "text", "translation"} <= tasks
    for task in ("qa", "entity", "text", "translation"):
        assert sum(c.task == task for c in cases) >= 4
    assert all(c.source for c in cases)


def test_engine_imports_no_pytest() -> None:
    code = (
        "import sys, pytest_callqa.engine.evaluate, pytest_callqa.engine.scorecard, "
        "pytest_callqa.engine.report, pytest_callqa.engine.judges.heuristic;"
        "print(sorted(m for m in sys.modules if m == 'pytest' or m.startswith('_pytest')))"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "[]"


def test_loading_the_tasks_does_not_import_scikit_learn() -> None:
    # scikit-learn costs ~1.7 s at import; a run that never compares token sets or uses
    # TF-IDF (an LLM-judged QA suite) must not pay it at start-up.
    code = (
        "import sys; from pytest_callqa.engine.registry import default_registry;"
        "default_registry(); import pytest_callqa.engine.evaluate;"
        "print('sklearn' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True)
    assert out.stdout.strip() == "False"


def test_a_text_case_must_allow_some_sentiment_label(tmp_path: Path) -> None:
    # An empty list used to pass the config check and fail each label with "is not one of ".
    case = doc_cases()["text"]
    case["config"] = {**case.get("config", {}), "sentiment_labels": []}
    problems = problems_of(tmp_path, case)
    assert any(p.startswith("config.sentiment_labels: List should have at least 1 item")
               for p in problems), problems


def test_cases_behind_symlinks_are_read_and_a_dangling_one_is_named(tmp_path: Path) -> None:
    # Before: a symlinked folder of cases was skipped without a word (rglob does not follow
    # links), and so was a dangling link, though every case file is to be read.
    from pytest_callqa.engine.loading import scan_case_files

    shared = tmp_path / "shared"
    shared.mkdir()
    write(shared, "linked.yaml", GOOD.replace("id: qa-1", "id: qa-linked"))
    cases = tmp_path / "cases"
    cases.mkdir()
    write(cases, "own.yaml", GOOD)
    (cases / "team").symlink_to(shared, target_is_directory=True)
    (cases / "loop").symlink_to(cases, target_is_directory=True)
    (cases / "gone.yaml").symlink_to(tmp_path / "nowhere.yaml")
    found = list(scan_case_files(cases))
    ids = sorted(c.id for batch in found if isinstance(batch, list) for c in batch)
    assert ids == ["qa-1", "qa-linked"]
    [error] = [e for e in found if isinstance(e, CaseFileError)]
    assert "gone.yaml" in str(error) and "cannot be read" in str(error)



@pytest.mark.parametrize(("key", "known"), [("question", "questions"),
                                            ("Questions", "questions")])
def test_a_config_key_that_is_a_near_miss_of_a_known_one_is_refused(
        tmp_path: Path, key: str, known: str) -> None:
    # Unknown config keys are kept for judges and hooks: "threshold" for an extraction
    # case's "thresholds" was kept too, and the default bar applied (a case scored 0.0 with
    # the key spelled right passed with it misspelled).
    text = GOOD.replace("config:\n", f"config:\n  {key}: []\n", 1)
    with pytest.raises(CaseFileError) as info:
        load_case_file(write(tmp_path, "near.yaml", text))
    assert f"unknown key {key!r} is a near miss of the known key {known!r}: spell it " \
           f"{known!r}" in str(info.value)
    assert "config" in str(info.value)
    # A key of the project's own, like no known one, is kept.
    [case] = load_case_file(write(tmp_path, "own.yaml",
                                  GOOD.replace("config:\n", "config:\n  team_notes: x\n", 1)))
    assert case.config["team_notes"] == "x"


@pytest.mark.parametrize(("task", "config", "problem"), [
    ("grounding", {"hallucination_fail_above": True}, "config.hallucination_fail_above"),
    ("grounding", {"completeness_warn_below": False}, "config.completeness_warn_below"),
    ("conversation", {"max_history_turns": True}, "config.max_history_turns"),
    ("conversation", {"thresholds": {"context": True}}, "config.thresholds"),
    ("extraction", {"thresholds": {"topics": False}}, "config.thresholds"),
    ("agent", {"pass_threshold": True}, "config.pass_threshold"),
    ("qa", {"questions": [{"question_id": "Q1", "max_score": True}]},
     "config.questions[0].max_score"),
    # A selection inside the agent's config (no task config itself): weight 1 and weight 0.
    ("agent", {"metrics": [{"metric": "task_completion", "weight": True}]},
     "config.metrics[0].weight"),
    ("agent", {"metrics": [{"metric": "tool_routing", "weight": False}]},
     "config.metrics[0].weight"),
])
def test_a_boolean_for_a_config_number_is_refused(
        tmp_path: Path, task: str, config: dict[str, Any], problem: str) -> None:
    # Lax, the config read true as 1 and false as 0: a grounding case's
    # "hallucination_fail_above: true" passed every hallucinating answer, without a blocker.
    case = doc_cases()[task]
    case["config"] = {**case.get("config", {}), **config}
    problems = problems_of(tmp_path, case)
    assert any(p.startswith(problem) and "is a boolean, not a number: write the number" in p
               for p in problems), problems


@pytest.mark.parametrize(("task", "config", "problem"), [
    ("conversation", {"combined": 1}, "config.combined: Value error, 1 is a number"),
    ("conversation", {"combined": 0.0}, "config.combined: Value error, 0.0 is a number"),
    ("extraction", {"skip_llm_judge": 1}, "config.skip_llm_judge: Value error, 1 is a number"),
    ("extraction", {"baselines": 0}, "config.baselines: Value error, 0 is a number"),
    # A tool's parameter inside the agent's config (no task config itself).
    ("agent", {"tools": [{"name": "lookup", "parameters": {"order_id": {"required": 1}}}]},
     "config.tools[0].parameters.order_id.required: Value error, 1 is a number"),
])
def test_a_number_for_a_config_boolean_is_refused(
        tmp_path: Path, task: str, config: dict[str, Any], problem: str) -> None:
    # Lax, the config read 1 as true and 0 as false: "combined: 1" was taken for a yes.
    case = doc_cases()[task]
    case["config"] = {**case.get("config", {}), **config}
    problems = problems_of(tmp_path, case)
    assert any(p.startswith(problem) and p.endswith("not a boolean: write true or false")
               for p in problems), problems


@pytest.mark.parametrize(("task", "config"), [
    ("grounding", {"hallucination_fail_above": "0.3", "relevance_fail_below": 0}),
    ("conversation", {"max_history_turns": "3", "combined": True, "thresholds": {"context": 1}}),
    ("extraction", {"thresholds": {"topics": "0.3"}, "skip_llm_judge": "yes"}),
    ("extraction", {"baselines": ["entity_recall"]}),
    ("agent", {"tools": [{"name": "lookup", "parameters": {"order_id": {"required": False}}}],
               "metrics": [{"metric": "tool_routing", "weight": 1}]}),
])
def test_numbers_and_booleans_written_as_strings_still_load(
        tmp_path: Path, task: str, config: dict[str, Any]) -> None:
    case = doc_cases()[task]
    case["config"] = {**case.get("config", {}), **config}
    assert problems_of(tmp_path, case) == []


def test_a_yaml_parse_error_is_said_once(tmp_path: Path) -> None:
    # "(file) cannot be parsed: invalid golden case file X:\n  - (file) cannot be parsed: ..."
    with pytest.raises(CaseFileError) as info:
        load_case_file(write(tmp_path, "bad.yaml", "id: [unclosed\n"))
    assert info.value.problems[0].startswith("(file) cannot be parsed: while parsing")
    assert str(info.value).count("cannot be parsed") == 1


def test_a_json_case_file_saved_with_a_byte_order_mark_loads(tmp_path: Path) -> None:
    # It was invalid ("Unexpected UTF-8 BOM"), where a YAML case and a recorded output with
    # one were read.
    import yaml

    path = tmp_path / "bom.json"
    path.write_bytes(b"\xef\xbb\xbf" + json.dumps(yaml.safe_load(GOOD)).encode("utf-8"))
    [case] = load_case_file(path)
    assert case.id == "qa-1"


def test_a_path_key_in_a_case_is_refused_not_replaced(tmp_path: Path) -> None:
    with pytest.raises(CaseFileError) as info:
        load_case_file(write(tmp_path, "p.yaml", GOOD + "path: elsewhere.yaml\n"))
    assert info.value.problems == [
        "path: is the case file's own location, set when it is read; remove the key"]


@pytest.mark.parametrize(("mapping", "said"), [
    ("{1: one, '1': uno}", "found the key '1' twice (as 1 and '1', which are one key)"),
    ("{null: x, 'null': y}", "found the key 'null' twice (as None and 'null', which are one "
                             "key)"),
    ("{a: 1, a: 2}", "found the key 'a' twice"),
])
def test_keys_a_report_writes_alike_are_refused(tmp_path: Path, mapping: str,
                                                said: str) -> None:
    # The report showed {"1": "uno"}: the first value was lost without a word.
    text = GOOD.replace("config:\n", f"config:\n  extra: {mapping}\n", 1)
    with pytest.raises(CaseFileError, match=re.escape(said)):
        load_case_file(write(tmp_path, "keys.yaml", text))


@pytest.mark.parametrize(("line", "speaker", "text"), [
    # A speaker whose name began with a letter outside ASCII was folded into the previous
    # turn's text.
    ("Émile: bonjour", "Émile", "bonjour"),
    ("客户: 我要退款", "客户", "我要退款"),
    ("客服：您好", "客服", "您好"),  # a full-width colon takes no space
    ("रोगी: नमस्ते", "रोगी", "नमस्ते"),
    ("Jose\u0301: hola", "Jose\u0301", "hola"),
    ("Agent (Ravi): hi", "Agent (Ravi)", "hi"),
    # Not speakers: an offset, a URL, a colon without a space.
    ("10:30 meeting moved", "", "10:30 meeting moved"),
    ("https://example.com is down", "", "https://example.com is down"),
    ("agent:x", "", "agent:x"),
])
def test_a_string_transcripts_speaker_may_be_written_in_any_script(
        line: str, speaker: str, text: str) -> None:
    case = GoldenCase.model_validate({"id": "c", "task": "qa",
                                      "transcript": f"agent: Hello.\n{line}"})
    assert (case.transcript[1].speaker, case.transcript[1].text) == (speaker, text)
