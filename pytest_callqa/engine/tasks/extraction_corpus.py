"""Extraction quality over a corpus: per-type counts, numeric error and score distributions
pooled over many cases' results, beside the per-case means."""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass

from ..core.results import TaskResult
from ..matching import prf
from .extraction import TASK, DistributionStats, distribution_stats


@dataclass
class CorpusReport:
    """Extraction quality over many cases: pooled (micro) and mean-of-cases (macro) figures."""

    cases: int
    invalid_cases: int
    per_type: dict[str, dict[str, float | int]]
    macro_f1: float | None
    micro_f1: float | None
    numeric_mae: float | None
    distribution: DistributionStats
    degenerate_cases: list[str]
    # Outputs whose score is unknown (TaskResult.score_unknown): left out, as the scorecard
    # leaves them out of the task score, not counted 0 as an invalid one is.
    unscored_cases: int = 0

    def summary(self) -> str:
        lines = [f"extraction corpus: {self.cases} case(s), {self.invalid_cases} invalid"
                 + (f", {self.unscored_cases} not scored" if self.unscored_cases else "")]
        for name, row in self.per_type.items():
            lines.append(f"  {name:<12} P {row['precision']:.2f}  R {row['recall']:.2f}  "
                         f"F1 {row['f1']:.2f}  ({row['matched']}/{row['extracted']} extracted, "
                         f"{row['expected']} expected)")
        fmt = "—" if self.macro_f1 is None else f"{self.macro_f1:.3f}"
        lines.append(f"  mean F1 over cases {fmt}; pooled F1 "
                     + ("—" if self.micro_f1 is None else f"{self.micro_f1:.3f}"))
        if self.numeric_mae is not None:
            lines.append(f"  numeric MAE {self.numeric_mae:.3f}")
        lines.append(f"  score distribution: {self.distribution.explanation}")
        if self.degenerate_cases:
            lines.append(f"  degenerate outputs: {', '.join(self.degenerate_cases)}")
        return "\n".join(lines)


def aggregate_corpus(results: Iterable[TaskResult]) -> CorpusReport:
    """Pool per-type counts, MAE and score distributions over extraction results."""
    rows: dict[str, dict[str, int]] = {}
    case_f1: list[float] = []
    invalid = unscored = 0
    total = 0
    err_sum, err_n = 0.0, 0
    scores: list[float] = []
    degenerate = []
    for r in results:
        if r.task != TASK:
            continue
        total += 1
        if r.score_unknown:
            unscored += 1
            continue
        score = r.score if r.valid else None
        # An invalid case's row is its truth, nothing matched (ExtractionTask.invalid): it
        # counts in the pooled recall as in the mean over cases. A type it has no truth of
        # gets no row from it: 0 of 0 reads as perfect, for an output nobody could read.
        f1 = r.metrics.get("signal_f1")
        for name, row in ((f1.details.get("per_type") or {}) if f1 else {}).items():
            if score is None and not row["expected"]:
                continue
            acc = rows.setdefault(name, {"matched": 0, "extracted": 0, "expected": 0})
            for k in acc:
                acc[k] += int(row[k])
        if score is None:
            invalid += 1
            case_f1.append(0.0)
            continue
        case_f1.append(score)
        mae = r.metrics.get("numeric_mae")
        if mae is not None and mae.scored:
            err_sum += float(mae.details.get("abs_error_sum", 0.0))
            err_n += int(mae.details.get("pairs", 0))
        dist = r.metrics.get("degenerate_scores")
        if dist is not None:
            scores.extend(float(s) for s in dist.details.get("scores", []))
            if dist.value == 1.0:
                degenerate.append(f"{r.model or '(model)'}/{r.case_id}")
    per_type: dict[str, dict[str, float | int]] = {}
    for name, acc in rows.items():
        p, rec, f = prf(acc["matched"], acc["extracted"], acc["expected"])
        per_type[name] = {**acc, "precision": p, "recall": rec, "f1": f}
    micro = None
    if rows:
        matched = sum(a["matched"] for a in rows.values())
        micro = prf(matched, sum(a["extracted"] for a in rows.values()),
                    sum(a["expected"] for a in rows.values()))[2]
    return CorpusReport(
        cases=total, invalid_cases=invalid, per_type=per_type,
        macro_f1=sum(case_f1) / len(case_f1) if case_f1 else None, micro_f1=micro,
        numeric_mae=err_sum / err_n if err_n else None,
        distribution=distribution_stats(scores), degenerate_cases=degenerate,
        unscored_cases=unscored,
    )
