"""A JSON Schema of golden-case files, built from the pydantic models of a registry's tasks.

Editors use it to complete and check case files as they are written (the YAML language
server reads a ``# yaml-language-server: $schema=...`` comment, JSON files a ``$schema``
key). It says what one case looks like per ``task`` (its ``config`` and ``expected_outcome``
models, whether it needs a transcript and a config) and accepts everything the loader
accepts; the loader checks more, the rules between fields (a PASS_FAIL score of 0 or
max_score, expected question ids asked in the config, ids unique in a suite...).
"""

from __future__ import annotations

import json
from typing import Any

from pydantic import BaseModel, ValidationError
from pydantic.json_schema import models_json_schema

from .core.cases import _ID_PATTERN, GoldenCase
from .core.metrics import TaskSpec
from .loading import SCHEMA_KEY
from .registry import Registry, default_registry
from .tasks.base import BaseTask

SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"
# Config fields whose model also accepts a single string for a list (a before-validator the
# generated schema cannot see): (model name, field).
STRING_OR_LIST = frozenset({("AgentConfig", "business_rules"), ("GroundingConfig", "context")})
# A timestamp as the loader reads it: "mm:ss" or "hh:mm:ss", optional fraction of a second.
_TIMESTAMP = r"^\s*(?:\d+:)?\d{1,2}:[0-5]\d(?:\.\d+)?\s*$"
_NOT_BLANK = r"\S"
_REF = "#/$defs/"


def _turn_schema() -> dict[str, Any]:
    return {
        "type": "object",
        "description": "One turn of the call.",
        "additionalProperties": False,
        "properties": {
            "speaker": {"type": "string", "default": "",
                        "description": "Who speaks (agent, customer, tool_call...)."},
            "text": {"type": "string", "pattern": _NOT_BLANK,
                     "description": "What was said; a turn must say something."},
            "start": {"anyOf": [{"type": "number", "minimum": 0},
                                {"type": "string", "pattern": _TIMESTAMP},
                                {"type": "null"}],
                      "default": None,
                      "description": "When the turn starts: seconds, 'mm:ss' or 'hh:mm:ss'."},
        },
        "required": ["text"],
    }


def _transcript_schema(non_empty: bool) -> dict[str, Any]:
    text: dict[str, Any] = {"type": "string",
                            "description": "Lines of '[mm:ss] speaker: text' (parts optional)."}
    turns: dict[str, Any] = {"type": "array", "items": {"$ref": _REF + "Turn"}}
    if non_empty:
        text["pattern"] = _NOT_BLANK
        turns["minItems"] = 1
    return {"anyOf": [turns, text]}


def _expected_model(spec: TaskSpec) -> type[BaseModel]:
    """The model of the golden truth; a task not built on BaseTask keeps it in its output's."""
    return spec.expected_cls() if isinstance(spec, BaseTask) else spec.output_model


def _needs_transcript(spec: TaskSpec) -> bool:
    return spec.needs_transcript if isinstance(spec, BaseTask) else True


def _config_required(model: type[BaseModel]) -> bool:
    """Whether a case of this task must write a config (an empty one does not validate)."""
    try:
        model.model_validate({})
    except ValidationError:
        return True
    return False


def _accept_single_strings(defs: dict[str, Any]) -> None:
    for model_name, field in sorted(STRING_OR_LIST):
        prop = defs.get(model_name, {}).get("properties", {}).get(field)
        if prop is None:
            continue
        listed = {k: prop.pop(k) for k in ("type", "items", "anyOf") if k in prop}
        prop["anyOf"] = [*listed.get("anyOf", [listed]), {"type": "string"}]


def _case_schema(registry: Registry, task_names: list[str]) -> dict[str, Any]:
    envelope = GoldenCase.model_json_schema()
    props: dict[str, Any] = envelope["properties"]
    props.pop("path", None)
    props["id"] = {"type": "string", "pattern": _ID_PATTERN.pattern,
                   "description": "Unique across the suite; part of test ids and file names."}
    props["task"] = {"enum": task_names, "description": "The task this case evaluates."}
    props["transcript"] = {**_transcript_schema(non_empty=False),
                           "description": "The call: a list of turns or one string."}
    props["config"] = {"type": "object", "description": "The task's configuration."}
    props["expected_outcome"] = {"description": "The golden truth, in the task's structure."}
    props["human_labels"] = {
        "type": "object",
        "description": "Metric id -> the value people gave the labelled output, on the "
                       "metric's scale (docs/calibration.md); the loader checks the metric "
                       "and the scale.",
        "additionalProperties": {"anyOf": [
            {"type": "number"},
            {"type": "object", "additionalProperties": False, "required": ["value"],
             "properties": {
                 "value": {"type": "number", "description": "On the metric's scale."},
                 "labeler": {"type": ["string", "null"],
                             "description": "Who gave the label."},
                 "note": {"type": ["string", "null"],
                          "description": "How the label was reached."}}},
        ]},
    }
    props[SCHEMA_KEY] = {"type": "string",
                         "description": "Where this schema is (ignored by the loader)."}
    rules = []
    for name in task_names:
        spec = registry.tasks[name]
        then: dict[str, Any] = {
            "properties": {
                "config": {"$ref": _REF + spec.config_model.__name__},
                "expected_outcome": {"$ref": _REF + _expected_model(spec).__name__},
            },
            "required": ["expected_outcome"],
        }
        if _needs_transcript(spec):
            then["properties"]["transcript"] = _transcript_schema(non_empty=True)
            then["required"].append("transcript")
        if _config_required(spec.config_model):
            then["required"].append("config")
        rules.append({"if": {"properties": {"task": {"const": name}}, "required": ["task"]},
                      "then": then})
    return {
        "type": "object",
        "description": "One golden case: a transcript, the task's config and the truth.",
        "additionalProperties": False,
        "properties": props,
        "required": ["id", "task", "expected_outcome"],
        "allOf": rules,
    }


def case_file_schema(registry: Registry | None = None) -> dict[str, Any]:
    """The JSON Schema of a golden-case file: one case, or a list of cases."""
    registry = registry or default_registry()
    names = sorted(registry.tasks)
    models: list[tuple[type[BaseModel], Any]] = []
    for name in names:
        spec = registry.tasks[name]
        models += [(spec.config_model, "validation"), (_expected_model(spec), "validation")]
    _, generated = models_json_schema(models, ref_template=_REF + "{model}")
    defs: dict[str, Any] = dict(generated.get("$defs", {}))
    _accept_single_strings(defs)
    defs["Turn"] = _turn_schema()
    defs["GoldenCase"] = _case_schema(registry, names)
    return {
        "$schema": SCHEMA_DIALECT,
        "title": "pytest-callqa golden case file",
        "description": "One golden case, or a list of golden cases (see docs/cases.md).",
        "anyOf": [
            {"$ref": _REF + "GoldenCase"},
            {"type": "array", "items": {"$ref": _REF + "GoldenCase"}, "minItems": 1},
        ],
        "$defs": dict(sorted(defs.items())),
    }


def case_file_schema_text(registry: Registry | None = None) -> str:
    """The schema as the text of a file: stable key order, two-space indent, final newline."""
    return json.dumps(case_file_schema(registry), indent=2, ensure_ascii=False) + "\n"
