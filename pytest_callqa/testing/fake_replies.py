"""The replies the fake OpenAI-compatible server makes up: a judge's verdicts in the middle of
each metric's scale, a structurally valid output for a generation request, and a value of a
JSON schema for a request that asks for one — all derived from the request, deterministically.
"""

from __future__ import annotations

import json
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from ..engine.judges.replies import PARTITIONS, SHARE_TOLERANCE, SHARES

_SCALES: dict[str, tuple[float, ...] | tuple[float, float]] = {
    "unit": (0.0, 1.0),
    "binary": (0.0, 1.0),
    "ternary": (0.0, 0.5, 1.0),
    "likert5": (1.0, 2.0, 3.0, 4.0, 5.0),
    "rubric0_5": (0.0, 1.0, 2.0, 3.0, 4.0, 5.0),
}


def mid_score(scale: str) -> float:
    """The middle of a scale; on a grid, the grid value nearest to it (ties go up)."""
    values = _SCALES.get(scale, (0.0, 1.0))
    middle = (min(values) + max(values)) / 2
    if scale in ("unit",):
        return middle
    return min(values, key=lambda v: (abs(v - middle), -v))


def first_user_json(body: Mapping[str, Any]) -> Any:
    """The JSON value of the first user message of a chat request, if it is JSON."""
    for message in body.get("messages") or []:
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, str):
                try:
                    return json.loads(content)
                except json.JSONDecodeError:
                    return None
            return None
    return None


def judge_items(inputs: Any) -> list[dict[str, Any]] | None:
    """The metric blocks of a judge request, or None when it is not one; a block without a
    focus of its own carries the one the call's metrics share."""
    if not isinstance(inputs, dict):
        return None
    if isinstance(inputs.get("metric"), dict):
        blocks = [inputs["metric"]]
    elif isinstance(inputs.get("metrics"), list):
        blocks = [m for m in inputs["metrics"] if isinstance(m, dict)]
    else:
        return None
    shared = inputs.get("focus")
    if not isinstance(shared, dict):
        return blocks
    return [block if "focus" in block else {**block, "focus": shared} for block in blocks]


def default_judge_reply(items: Sequence[Mapping[str, Any]],
                        score: Callable[[Mapping[str, Any]], Any] | None = None) -> str:
    """Verdicts keyed by metric id, the shape the judge asks for. The fields a 0-1 metric
    lists besides its score are counts (facts supported and unsupported, a criterion's
    pieces): given as the fewest pieces whose share is the score, as the judge checks a
    score against them, others as 0; the fields other scales list (a combined turn's
    scores, an agent's failure code) are left out."""
    verdicts = {}
    for item in items:
        value, counts = counted_score(
            item, score(item) if score else mid_score(str(item.get("scale"))))
        verdicts[str(item.get("metric"))] = {
            "score": value,
            "expected_outcome_reference": "expected_outcome (fake server)",
            "model_output_observed": "model_output (fake server)",
            "reason": f"fake verdict for {item.get('metric')}",
            **counts,
        }
    return json.dumps(verdicts)


def counted_score(item: Mapping[str, Any], score: Any) -> tuple[Any, dict[str, int]]:
    """``score`` and the counts a verdict on ``item`` gives beside it. Counts that sort the
    items its focus lists (facts supported and unsupported) add up to them, and the score
    becomes their share when it is further from it than the judge allows (0.5 of 5 facts
    is 2 of 5, 0.4; of none, 1.0); other counts are the fewest pieces whose share is the
    score, and a count with no part of it (the steps judged) is that many pieces."""
    fields = item.get("reply_fields")
    if item.get("scale") != "unit" or not isinstance(fields, Mapping):
        return score, {}
    counts = dict.fromkeys(map(str, fields), 0)
    if not isinstance(score, (int, float)) or not 0 <= score <= 1:
        return score, counts
    whole = next((n for n in range(1, 21)
                  if abs(round(score * n) / n - score) <= SHARE_TOLERANCE), 20)
    focus = item.get("focus")
    for sorted_into, key in PARTITIONS:
        listed = focus.get(key) if isinstance(focus, Mapping) else None
        if isinstance(listed, list) and set(sorted_into) <= counts.keys():
            whole = len(listed)
            share = round(score * whole) / whole if whole else 1.0
            if abs(share - score) > SHARE_TOLERANCE:
                score = share
    part = round(score * whole)
    for name, wholes in SHARES:
        if name in counts and set(wholes) <= counts.keys():
            counts[name] = part
            rest = [other for other in wholes if other != name]
            # The whole is one count, or the part and the rest of it (supported and
            # unsupported).
            counts[rest[0]] = whole - part if name in wholes else whole
    shared = {field for part_name, wholes in SHARES for field in (part_name, *wholes)}
    for name in counts.keys() - shared:
        # A count that is a whole of its own (the reasoning steps judged): none would say
        # there was nothing to judge, and leave the criterion not scored.
        counts[name] = whole
    return score, counts


def noisy_judge_reply(content: str, items: Sequence[Mapping[str, Any]],
                      rng_for: Callable[[str], Any], rate: float) -> str:
    """``content`` (a judge reply) with each verdict's score replaced, with probability
    ``rate``, by a value drawn from its scale; ``rng_for(ident)`` gives the draw's
    ``random.Random``. A reply that is not verdicts comes back unchanged."""
    try:
        verdicts = json.loads(content)
    except json.JSONDecodeError:
        return content
    if not isinstance(verdicts, dict):
        return content
    by_ident = {str(item.get("metric")): item for item in items}
    for ident, verdict in verdicts.items():
        if not isinstance(verdict, dict) or ident not in by_ident:
            continue
        rng = rng_for(ident)
        if rng.random() >= rate:
            continue
        scale = str(by_ident[ident].get("scale"))
        values = _SCALES.get(scale, (0.0, 1.0))
        drawn = round(rng.random(), 2) if scale == "unit" else rng.choice(values)
        # Its counts follow, as a judge's own would.
        verdict["score"], counts = counted_score(by_ident[ident], drawn)
        verdict.update((key, count) for key, count in counts.items() if key in verdict)
    return json.dumps(verdicts)


def schema_instance(schema: Mapping[str, Any], name: str = "") -> Any:
    """A value valid against ``schema`` (the subset structured outputs use), picked in the
    middle of what it allows — as a server that honours ``json_schema`` answers. A nullable
    field gets a value, and an array one item, so every field a caller asks for is filled."""
    if "enum" in schema:
        values = list(schema["enum"])
        return values[(len(values) - 1) // 2 + (1 if len(values) % 2 == 0 else 0)]
    kind = schema.get("type")
    kinds = [k for k in (kind if isinstance(kind, list) else [kind]) if k != "null"]
    first = kinds[0] if kinds else "null"
    if first == "object":
        props = schema.get("properties") or {}
        return {key: schema_instance(sub, key) for key, sub in props.items()}
    if first == "array":
        items = schema.get("items")
        return [schema_instance(items, name)] if isinstance(items, dict) else []
    if first in ("number", "integer"):
        low = schema.get("minimum", 0)
        high = schema.get("maximum", low + 1)
        middle = (low + high) / 2
        return int(middle) if first == "integer" else middle
    if first == "boolean":
        return True
    if first == "string":
        return f"fake {name}" if name else "fake"
    return None


def _turns(inputs: Mapping[str, Any]) -> list[dict[str, Any]]:
    turns = inputs.get("transcript")
    return [t for t in turns if isinstance(t, dict)] if isinstance(turns, list) else []


def default_generation_reply(inputs: Mapping[str, Any]) -> str | None:
    """A structurally valid output for the generation request's task, or None."""
    task = inputs.get("task")
    config = inputs.get("config") if isinstance(inputs.get("config"), dict) else {}
    assert isinstance(config, dict)
    turns = _turns(inputs)
    texts = [str(t.get("text", "")) for t in turns]
    if task == "qa":
        questions = []
        for q in config.get("questions") or []:
            if not isinstance(q, dict):
                continue
            max_score = q.get("max_score") or 1
            questions.append({
                "question_id": str(q.get("question_id")), "score": max_score,
                "max_score": max_score, "type": q.get("type") or "SCORE",
                "reason": f'The agent said "{texts[0] if texts else ""}".',
            })
        return json.dumps({"questions": questions})
    if task == "entity":
        spoken = " ".join(texts).casefold()
        found = [k for k in config.get("keywords") or [] if str(k).casefold() in spoken]
        return json.dumps({"detected_keywords": found, "detected_topics": [],
                           "valid_entity_set": found})
    if task == "text":
        labels = config.get("sentiment_labels") or ["positive", "neutral", "negative"]
        label = labels[len(labels) // 2]
        return json.dumps({
            "sentiment": [{"sentence_id": t.get("n"), "text": t.get("text"), "label": label}
                          for t in turns],
            "summary": {"call_purpose": texts[0] if texts else "", "highlights": [],
                        "call_extracted_info": {}},
            "emotion": {"neutral": 1.0},
        })
    if task == "translation":
        return json.dumps({
            "full_translation": " ".join(texts),
            "sentence_translations": [
                {"source_id": t.get("n"), "source_text": t.get("text"),
                 "translated_text": t.get("text")} for t in turns],
            "domain_terms_handled": [], "named_entities_handled": [],
        })
    return None
