"""The Layer 2 benchmarks' metric specs (seed 000), apart from how they are computed: the
scorecard, the report and the listings read them without loading text matching and
similarity (:mod:`.benchmarks`)."""

from __future__ import annotations

from ..core.metrics import Bands, MetricSpec

TASK = "benchmarks"


def _criterion(
    metric_id: str, name: str, description: str, good: float, *, lower: bool = False,
    source: str = "programmatic", pooled: bool = False,
) -> MetricSpec:
    sign = "<=" if lower else ">="
    shown = f"{good:.0%}" if lower else f"{good:.2f}"
    return MetricSpec(
        id=metric_id, task=TASK, name=name, description=description, scale="0-1",
        threshold=f"1 if {sign} {shown}", layer=2, source=source,  # type: ignore[arg-type]
        bands=Bands(good=good, higher_is_better=not lower),
        aggregate="pooled" if pooled else "mean", percent=lower,
    )


BENCHMARK_METRICS = (
    _criterion("faithfulness", "Faithfulness",
               "Claims of the output supported by the transcript or expected_outcome / claims.",
               0.90, source="judge"),
    _criterion("hallucination_rate", "Hallucination Rate",
               "Output facts found in neither the transcript nor expected_outcome / facts "
               "(pooled).", 0.02, lower=True, source="judge", pooled=True),
    _criterion("answer_relevancy", "Answer Relevancy",
               "Cosine similarity of the output and expected_outcome embeddings.", 0.85,
               source="embedding"),
    _criterion("answer_correctness", "Answer Correctness",
               "0.5 × F1 of the output's facts against expected_outcome + 0.5 × semantic "
               "similarity.", 0.85, source="embedding"),
    _criterion("contextual_precision", "Contextual Precision",
               "Transcript turns the output cites that expected_outcome needs / turns cited.",
               0.85, source="judge"),
    _criterion("contextual_recall", "Contextual Recall",
               "Turns expected_outcome needs that the output cites / turns needed.", 0.85,
               source="judge"),
    _criterion("contextual_relevancy", "Contextual Relevancy",
               "Mean of contextual precision and recall.", 0.85, source="judge"),
    _criterion("argument_correctness", "Argument Correctness",
               "Soundness of each reasoning step against expected_outcome (1 / 0.5 / 0).", 0.85,
               source="judge"),
    _criterion("instruction_following", "Instruction Following",
               "Prompt and config instructions followed / instructions.", 0.95,
               source="judge"),
    _criterion("exact_match", "Exact Match",
               "Closed-form fields (labels, scores, ids) equal to expected_outcome / fields.",
               0.90),
    _criterion("consistency", "Consistency Score",
               "1 − std/mean of a case's task scores over N ≥ 2 runs.", 0.90),
)
BENCHMARK_IDS = tuple(spec.id for spec in BENCHMARK_METRICS)
BENCHMARK_SPECS = {spec.id: spec for spec in BENCHMARK_METRICS}
