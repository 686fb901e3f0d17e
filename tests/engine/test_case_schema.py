"""The JSON Schema of case files: valid, accepts every case the loader accepts (the example
project's and the documented ones), rejects the cases that cannot pass empty, and the example
project's committed copy is what an export writes today."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import jsonschema
import pytest
import yaml

from pytest_callqa.engine.case_schema import STRING_OR_LIST, case_file_schema, case_file_schema_text
from pytest_callqa.engine.loading import iter_case_files, load_case_file
from pytest_callqa.engine.registry import default_registry

from .doc_cases import doc_cases

EXAMPLE_CASES = Path(__file__).parents[2] / "example_project" / "cases"
COMMITTED = EXAMPLE_CASES / "callqa-case.schema.json"
MODELINE = "# yaml-language-server: $schema=../callqa-case.schema.json"


@pytest.fixture(scope="module")
def validator() -> jsonschema.Draft202012Validator:
    schema = case_file_schema()
    jsonschema.Draft202012Validator.check_schema(schema)
    return jsonschema.Draft202012Validator(schema)


def errors(validator: jsonschema.Draft202012Validator, document: Any) -> list[str]:
    return [f"{e.json_path}: {e.message}" for e in validator.iter_errors(document)]


def test_the_committed_schema_is_a_fresh_export() -> None:
    assert COMMITTED.read_text(encoding="utf-8") == case_file_schema_text(), (
        "example_project/cases/callqa-case.schema.json is stale: run "
        "`pytest --callqa-case-schema cases/callqa-case.schema.json` in example_project")


def test_every_example_case_validates_against_the_committed_schema() -> None:
    committed = jsonschema.Draft202012Validator(json.loads(COMMITTED.read_text("utf-8")))
    files = list(iter_case_files(EXAMPLE_CASES))
    assert len(files) >= 30
    for path in files:
        text = path.read_text(encoding="utf-8")
        assert text.splitlines()[0] == MODELINE, f"{path} does not point to the schema"
        load_case_file(path)
        for document in yaml.safe_load_all(text):
            assert errors(committed, document) == [], path


def test_documented_cases_validate_one_by_one_and_as_a_list(
    validator: jsonschema.Draft202012Validator,
) -> None:
    cases = list(doc_cases().values())
    for case in cases:
        assert errors(validator, case) == [], case["id"]
    assert errors(validator, cases) == []
    assert errors(validator, {"$schema": "callqa-case.schema.json", **cases[0]}) == []


def test_what_the_loader_reads_leniently_validates(
    validator: jsonschema.Draft202012Validator, tmp_path: Path,
) -> None:
    agent, grounding = doc_cases()["agent"], doc_cases()["grounding"]
    agent["config"] = {"business_rules": "Never read out a full card number."}
    grounding["config"]["context"] = "Overnight shipping costs 69.99."
    as_text, timed = doc_cases()["qa"], doc_cases()["qa"]
    as_text["transcript"] = "[00:01] agent: Hello\n\ncustomer: Hi"
    timed["transcript"][0]["start"] = "1:02:03.5"
    for case in (agent, grounding, as_text, timed):
        assert errors(validator, case) == []
        path = tmp_path / "case.json"
        path.write_text(json.dumps(case), encoding="utf-8")
        assert [c.id for c in load_case_file(path)] == [case["id"]]


def _without(task: str, *keys: str) -> dict[str, Any]:
    case = doc_cases()[task]
    for key in keys:
        case.pop(key)
    return case


def _with(task: str, path: tuple[str | int, ...], value: Any) -> dict[str, Any]:
    case = doc_cases()[task]
    target: Any = case
    for key in path[:-1]:
        target = target[key]
    target[path[-1]] = value
    return case


REJECTED = [
    ("qa without a transcript", _without("qa", "transcript")),
    ("qa with an empty transcript", _with("qa", ("transcript",), [])),
    ("qa with a blank transcript", _with("qa", ("transcript",), "  ")),
    ("a blank turn", _with("text", ("transcript",), [{"text": " "}])),
    ("qa without a config", _without("qa", "config")),
    ("qa without a question", _with("qa", ("config", "questions"), [])),
    ("qa without an expected question", _with("qa", ("expected_outcome", "questions"), [])),
    ("a negative expected score",
     _with("qa", ("expected_outcome", "questions", 0, "score"), -1)),
    ("a case without expected_outcome", _without("text", "expected_outcome")),
    ("translation without target_language", _with("translation", ("config",), {})),
    ("a blank call purpose in the truth",
     _with("text", ("expected_outcome", "summary", "call_purpose"), "   ")),
    ("a blank target language", _with("translation", ("config", "target_language"), " ")),
    ("a blank sentence in the truth",
     _with("text", ("expected_outcome", "sentiment", 0, "text"), "  ")),
    ("a blank configured keyword", _with("entity", ("config", "keywords", 1), " ")),
    ("a blank question id", _with("qa", ("config", "questions", 0, "question_id"), "  ")),
    ("entity with nothing configured",
     _with("entity", ("config",), {"keywords": [], "topics": []})),
    ("grounding without a query", _with("grounding", ("config",), {"context": ["x"]})),
    ("an unknown task", _with("qa", ("task",), "sentiment")),
    ("an unknown key", _with("qa", ("colour",), "blue")),
    ("an id with a space", _with("qa", ("id",), "has space")),
    ("a bad timestamp", _with("qa", ("transcript", 0, "start"), "00:75")),
    ("a string score in the truth",
     _with("qa", ("expected_outcome", "questions", 0, "score"), "5")),
    ("an empty list of cases", []),
]


@pytest.mark.parametrize(("what", "document"), REJECTED, ids=[r[0] for r in REJECTED])
def test_the_schema_rejects_what_cannot_pass(
    validator: jsonschema.Draft202012Validator, what: str, document: Any
) -> None:
    assert errors(validator, document), what


@pytest.mark.parametrize(("what", "document"), REJECTED[:-1], ids=[r[0] for r in REJECTED[:-1]])
def test_the_loader_rejects_them_too(tmp_path: Path, what: str, document: Any) -> None:
    path = tmp_path / "case.json"
    path.write_text(json.dumps(document), encoding="utf-8")
    with pytest.raises(ValueError, match="invalid golden case file"):
        load_case_file(path)


def test_every_task_has_its_config_and_truth_in_the_schema() -> None:
    schema = case_file_schema()
    rules = schema["$defs"]["GoldenCase"]["allOf"]
    by_task = {r["if"]["properties"]["task"]["const"]: r["then"] for r in rules}
    registry = default_registry()
    assert sorted(by_task) == sorted(registry.tasks)
    assert "config" in by_task["qa"]["required"] and "config" not in by_task["text"]["required"]
    assert "transcript" not in by_task["grounding"]["required"]
    for name, then in by_task.items():
        config_ref = then["properties"]["config"]["$ref"].rsplit("/", 1)[1]
        assert config_ref == registry.tasks[name].config_model.__name__


def test_every_lenient_config_field_is_declared_to_the_schema() -> None:
    """A config field with a before-validator accepts more than its type says; the schema
    must be told (STRING_OR_LIST), or it would reject cases the loader accepts."""
    lenient = set()
    for spec in default_registry().tasks.values():
        model = spec.config_model
        for name, decorator in model.__pydantic_decorators__.field_validators.items():
            # Every config's refusal of a boolean for a number accepts less, not more: JSON
            # Schema's "number" refuses a boolean too.
            if decorator.info.mode == "before" and name != "_no_boolean_for_a_number":
                lenient.update((model.__name__, field) for field in decorator.info.fields)
    assert lenient == set(STRING_OR_LIST)


def test_the_export_is_stable_text() -> None:
    text = case_file_schema_text()
    assert text == case_file_schema_text() and text.endswith("}\n")
    assert json.loads(text) == case_file_schema()
