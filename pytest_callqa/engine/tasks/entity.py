"""Task 2 — Entity analysis: configured keyword and topic detection (seed 000)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import TYPE_CHECKING, Any, NamedTuple

from ..core.context import STRUCTURE
from ..core.judging import JudgeVerdict
from ..core.memo import ByIdentity, batch_memoised
from ..core.metrics import Bands, MetricSpec
from ..core.results import MetricResult
from ..matching import prf
from ..text import contains_phrase, dominant_script, normalize
from .base import BaseTask, structure_spec, weighted_score
from .call_schemas import EntityConfig, EntityMention, EntityOutput

if TYPE_CHECKING:
    from ..core.context import EvalContext

TASK = "entity"


# Runs once at import, before mutmut can switch a mutant on; tests/engine/test_spec_tables.py
# checks what it builds instead.
def _prf_specs(
    kind: str, good: float, acceptable: float, f1_weight: float,
) -> list[MetricSpec]:  # pragma: no mutate block
    bands = Bands(good=good, acceptable=acceptable)
    title = kind.capitalize()
    return [
        MetricSpec(
            id=f"{kind}_precision", task=TASK, name=f"{title} Precision",
            description=f"Detected {kind}s that are in expected_outcome / all detected {kind}s.",
            scale="0-1", threshold=f">= {good:.2f}", bands=bands, shown=False,
        ),
        MetricSpec(
            id=f"{kind}_recall", task=TASK, name=f"{title} Recall",
            description=f"Expected {kind}s the model detected / all expected {kind}s.",
            scale="0-1", threshold=f">= {good:.2f}", bands=bands, shown=False,
        ),
        MetricSpec(
            id=f"{kind}_f1", task=TASK, name=f"{title} F1",
            description=f"Harmonic mean of {kind} precision and recall.",
            scale="0-1", threshold=f">= {good:.2f}", bands=bands, weight=f1_weight,
        ),
    ]


METRICS: tuple[MetricSpec, ...] = (
    *_prf_specs("keyword", 0.90, 0.85, 0.47),
    *_prf_specs("topic", 0.88, 0.80, 0.29),
    MetricSpec(
        id="config_adherence", task=TASK, name="Configured Entity Compliance",
        description="Detected entities that are in the configured list / all detected.",
        scale="0-1", threshold=">= 0.95 | < 0.95 blocker",
        bands=Bands(good=1.0, acceptable=0.95, blocker=0.95), weight=0.24, blocker=True,
    ),
    MetricSpec(
        id="cross_language_match_rate", task=TASK, name="Cross-Language Match Rate",
        description="Among expected entities mentioned in the call in another script or "
                    "language than configured, the share the model detected (unweighted).",
        scale="0-1", threshold=">= 0.90", bands=Bands(good=0.90),
    ),
    MetricSpec(
        id="fabricated_entity_count", task=TASK, name="Fabricated Entity Count",
        description="Detected entities absent from every expected list and from the "
                    "transcript.",
        scale="count", threshold="0 | > 2 blocker",
        bands=Bands(good=0, acceptable=2, blocker=2, higher_is_better=False), blocker=True,
    ),
    structure_spec(TASK),
)


def _unique(names: list[str]) -> list[str]:
    """Normalised names, first occurrence kept: reporting one entity twice is one detection.
    (A blank name is a structure failure, so every name here names something.)"""
    return list(dict.fromkeys(normalize(name) for name in names))


class _Truth(NamedTuple):
    """A case's truth and configuration normalised once per batch: every output of the case
    is scored against the same lists."""

    keywords: tuple[str, ...]
    topics: tuple[str, ...]
    # Any name the truth accepts (a detection among them is not fabricated).
    accepted: frozenset[str]
    configured: frozenset[str]
    cross_language: tuple[str, ...]


@batch_memoised
def _truth(expected: ByIdentity[EntityOutput], config: ByIdentity[EntityConfig]) -> _Truth:
    exp, cfg = expected.value, config.value
    keywords = _unique(exp.detected_keywords)
    topics = _unique(exp.detected_topics)
    # _unique of the two lists joined, without normalising their names again.
    entities = tuple(dict.fromkeys([*keywords, *topics]))
    return _Truth(
        tuple(keywords), tuple(topics),
        frozenset([*entities, *_unique(exp.valid_entity_set)]),
        frozenset(normalize(e) for e in [*cfg.keywords, *cfg.topics]),
        tuple(e for e in entities if _cross_language(cfg, e)))


def _mention(config: EntityConfig, entity: str) -> EntityMention | None:
    for name, mention in config.entity_mentions.items():
        if normalize(name) == entity:
            return mention if isinstance(mention, EntityMention) else EntityMention(text=mention)
    return None


def _cross_language(config: EntityConfig, entity: str) -> bool:
    mention = _mention(config, entity)
    if mention is None:
        return False
    if mention.lang and normalize(mention.lang) != normalize(config.entity_language):
        return True
    return dominant_script(mention.text) != dominant_script(entity)


class EntityTask(BaseTask):
    name = TASK
    title = "Entity"
    metrics = METRICS
    output_model = EntityOutput
    config_model = EntityConfig
    voiding = frozenset({STRUCTURE, "fabricated_entity_count"})

    def check_consistency(self, case: Any, expected: Any, config: Any) -> list[str]:
        # The seed asks for the configured entities and nothing else; a truth naming one
        # outside the list would fail config adherence for a model that copied it.
        configured = {normalize(e) for e in [*config.keywords, *config.topics]}
        return [
            f"expected_outcome.{field}[{i}]: {name!r} is not in config.keywords or "
            "config.topics, and a model may report only configured entities"
            for field in ("detected_keywords", "detected_topics")
            for i, name in enumerate(getattr(expected, field))
            if normalize(name) not in configured
        ]

    def _score(
        self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
    ) -> tuple[dict[str, MetricResult], float | None, list[str]]:
        out: EntityOutput = ctx.parsed  # type: ignore[assignment]
        exp: EntityOutput = ctx.expected  # type: ignore[assignment]
        config: EntityConfig = ctx.config  # type: ignore[assignment]
        metrics: dict[str, MetricResult] = {}
        truth = _truth(ByIdentity(exp), ByIdentity(config))
        keywords, topics = _unique(out.detected_keywords), _unique(out.detected_topics)
        for kind, detected, expected in (
            ("keyword", keywords, truth.keywords),
            ("topic", topics, truth.topics),
        ):
            # Looked up in sets built once, not once per name.
            expected_set, detected_set = set(expected), set(detected)
            hits = [d for d in detected if d in expected_set]
            precision, recall, f1 = prf(len(hits), len(detected), len(expected))
            extra = [d for d in detected if d not in expected_set]
            missed = [e for e in expected if e not in detected_set]
            detail: dict[str, Any] = {"matched": hits, "extra": extra, "missed": missed}
            metrics[f"{kind}_precision"] = self.spec(f"{kind}_precision").result(
                precision, f"{len(hits)} of {len(detected)} detected {kind}s expected"
                + (f"; extra: {', '.join(extra)}" if extra else ""), **detail)
            metrics[f"{kind}_recall"] = self.spec(f"{kind}_recall").result(
                recall, f"{len(hits)} of {len(expected)} expected {kind}s detected"
                + (f"; missed: {', '.join(missed)}" if missed else ""), **detail)
            metrics[f"{kind}_f1"] = self.spec(f"{kind}_f1").result(
                f1, f"P={precision:.2f} R={recall:.2f}", **detail)

        # One entity listed as a keyword and as a topic is one detection: counted twice, two
        # invented entities made the voiding blocker of more than two. (The _unique of both
        # lists joined, from the names normalised above.)
        detected_all = list(dict.fromkeys([*keywords, *topics]))
        outside = [d for d in detected_all if d not in truth.configured]
        adherence = 1.0 if not detected_all else 1 - len(outside) / len(detected_all)
        metrics["config_adherence"] = self.spec("config_adherence").result(
            adherence,
            "nothing detected" if not detected_all else
            f"{len(detected_all) - len(outside)} of {len(detected_all)} detected entities are "
            "configured" + (f"; not configured: {', '.join(outside)}" if outside else ""),
            not_configured=outside,
        )

        transcript = ctx.case.transcript_plain
        fabricated = []
        for entity in detected_all:
            if entity in truth.accepted or contains_phrase(transcript, entity):
                continue
            mention = _mention(config, entity)
            if mention is not None and contains_phrase(transcript, mention.text):
                continue
            fabricated.append(entity)
        metrics["fabricated_entity_count"] = self.spec("fabricated_entity_count").result(
            float(len(fabricated)),
            f"fabricated: {', '.join(fabricated)}" if fabricated else "no fabricated entity",
            fabricated=fabricated,
        )

        cross = list(truth.cross_language)
        if cross:
            detected_set = set(detected_all)
            found = [e for e in cross if e in detected_set]
            metrics["cross_language_match_rate"] = self.spec("cross_language_match_rate").result(
                len(found) / len(cross),
                f"{len(found)} of {len(cross)} cross-language entities detected",
                cross_language=cross, detected=found,
            )
        else:
            metrics["cross_language_match_rate"] = MetricResult.not_scored(
                "n/a: no expected entity is mentioned in another script or language"
            )
        score, dropped = weighted_score([
            ("keyword_f1", metrics["keyword_f1"], 0.47),
            ("topic_f1", metrics["topic_f1"], 0.29),
            ("config_adherence", metrics["config_adherence"], 0.24),
        ])
        return metrics, score, dropped
