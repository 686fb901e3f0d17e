"""Conversational quality: intelligibility, segmentation and context of bot turns (seed 004).

**Golden case.** ``transcript`` is the whole conversation in order (both parties).
``expected_outcome`` is ``{"turns": [{"turn", "text"}]}``: which turns the bot produced —
``turn`` indexes the transcript — and a reference wording for each (the transcript's own
text, or e.g. a reference translation when the transcript holds the source language).
``config``: ``threshold`` (default 0.80, i.e. an average of 4.2 / 5) or per-metric
``thresholds``, ``max_history_turns`` (default 5), ``combined`` (one judge call per turn
for all three metrics), ``garbled_max_score`` (default 2) and ``garbled_rate_threshold``
(default 0.10).

**Model output** — what the bot said at those turns: ``{"turns": [{"turn", "text"}]}``. A
turn the model left out, left empty or filled with no letter or digit ("...", an emoji) is
a failed turn scored 1 on every metric (the seed's "missing text" rule). The history a
context judgement sees is the last ``max_history_turns`` turns before the evaluated one,
the bot's turns in its own words; the first turn of a conversation has none.

**Scores.** Each turn gets 1–5 per metric, normalised ``(s − 1) / 4``; a metric's value is
the mean over the turns, and it passes at ``threshold``. A turn is garbled when any of its
scores is ≤ 2; ``garbled_turn_rate`` passes below 10 %. The task score is the mean of the
three metric values (those scored). A turn the judge gave no usable verdict on (its call
failed, its reply stayed unusable or lacked a metric's score) leaves that metric unknown — a
judge error, never a mean over the other turns — and the garbled turn rate too, unless the
turns known garbled already fail it whatever the judge would have said: it is then reported
failed, at its lowest possible value (:func:`_garbled_at_least`).
"""

from __future__ import annotations

from collections import defaultdict
from collections.abc import Collection, Mapping
from dataclasses import dataclass, replace
from typing import TYPE_CHECKING, Any

from pydantic import Field, model_validator

from ..core.judging import FOCUS_VIEW, JudgeRequest, JudgeVerdict, ReplyField
from ..core.metrics import CASE_BAR, Bands, MetricSpec
from ..core.results import MetricResult
from ..core.unicode_text import has_words
from .base import structure_spec, weighted_score
from .call_schemas import LooseConfig, StrictModel, _duplicates
from .family_base import FamilyTask, checked_score

if TYPE_CHECKING:
    from ..core.cases import GoldenCase
    from ..core.context import EvalContext

TASK = "conversation"
QUALITY_METRICS = ("intelligibility", "segmentation", "context")
COMBINED = "turn_quality"
DEFAULT_THRESHOLD = 0.80
DEFAULT_HISTORY = 5
GARBLED_MAX_SCORE = 2
GARBLED_RATE_THRESHOLD = 0.10

INTELLIGIBILITY_RUBRIC = (
    "How clear, readable and understandable is the text, taken on its own?\n"
    "5 = perfectly clear, flows naturally. 4 = clear; minor awkwardness or a small "
    "grammatical slip. 3 = understandable, but awkward phrasing or unnatural word order. "
    "2 = hard to understand; serious clarity or grammar problems. 1 = unintelligible, "
    "garbled or incomprehensible."
)
SEGMENTATION_RUBRIC = (
    "Are the sentence boundaries and the turn's segmentation right: punctuation, natural "
    "breaks, neither chopped into fragments nor run together?\n"
    "5 = perfect segmentation, natural breaks. 4 = good; one minor issue. 3 = acceptable; "
    "several minor issues. 2 = poor; sentences split in the wrong places. 1 = severely "
    "fragmented or one long run-on."
)
CONTEXT_RUBRIC = (
    "Does the turn fit the conversation so far — relevant to the history, no lost thread, no "
    "drift to another topic? (For the first turn there is no history: judge whether it is a "
    "sensible opening.)\n"
    "5 = perfect context awareness. 4 = good; a minor deviation. 3 = acceptable; some drift. "
    "2 = poor; significant drift or a lost thread. 1 = context completely lost."
)
RUBRICS = {"intelligibility": INTELLIGIBILITY_RUBRIC, "segmentation": SEGMENTATION_RUBRIC,
           "context": CONTEXT_RUBRIC}
COMBINED_INSTRUCTIONS = (
    "Score this bot turn on three 1–5 scales in one answer.\n\nINTELLIGIBILITY: "
    + INTELLIGIBILITY_RUBRIC + "\n\nSEGMENTATION: " + SEGMENTATION_RUBRIC + "\n\nCONTEXT: "
    + CONTEXT_RUBRIC + "\n\nGive the three integer scores as the verdict's fields "
    "intelligibility, segmentation and context, and as score the lowest of the three."
)
COMBINED_FIELDS: tuple[ReplyField, ...] = tuple(
    (metric_id, "likert5", f"the turn's {metric_id} score, 1–5")
    for metric_id in QUALITY_METRICS)


def _quality_spec(metric_id: str, name: str, description: str) -> MetricSpec:
    return MetricSpec(
        id=metric_id, task=TASK, name=name, description=description,
        scale="1-5 → 0-1", threshold=">= 0.80 (avg 4.2 / 5)",
        bands=Bands(good=DEFAULT_THRESHOLD), weight=1 / 3, source="judge",
        rubric=RUBRICS[metric_id],
    )


METRICS: tuple[MetricSpec, ...] = (
    _quality_spec("intelligibility", "Intelligibility",
                  "Clarity and readability of each bot turn, mean of (s − 1) / 4."),
    _quality_spec("segmentation", "Segmentation",
                  "Sentence boundaries and turn segmentation, mean of (s − 1) / 4."),
    _quality_spec("context", "Context",
                  "Relevance to the last turns of the conversation, mean of (s − 1) / 4."),
    MetricSpec(
        id="garbled_turn_rate", task=TASK, name="Garbled Turn Rate",
        description="Turns with any score <= 2 / turns scored.", scale="rate",
        threshold="< 10%",
        # Passing is strictly below 10 %; the band's edge sits just under it.
        bands=Bands(good=GARBLED_RATE_THRESHOLD - 1e-6, higher_is_better=False),
        percent=True,
    ),
    structure_spec(TASK),
)


# --- schemas ----------------------------------------------------------------------------------


class BotTurn(StrictModel):
    turn: int = Field(ge=0)
    text: str


class ConversationOutput(StrictModel):
    turns: list[BotTurn]

    @model_validator(mode="after")
    def _unique(self) -> ConversationOutput:
        dups = _duplicates([t.turn for t in self.turns])
        if dups:
            raise ValueError(f"turn {', '.join(dups)} given twice")
        return self


class ConversationConfig(LooseConfig):
    threshold: float = Field(default=DEFAULT_THRESHOLD, ge=0, le=1)
    thresholds: dict[str, float] = Field(default_factory=dict)
    # At least one turn: the seed judges context against the turns before it, and with none
    # every turn's context score was made up (a later turn judged as if it had no past).
    max_history_turns: int = Field(default=DEFAULT_HISTORY, ge=1)
    combined: bool = False
    garbled_max_score: int = Field(default=GARBLED_MAX_SCORE, ge=1, le=5)
    garbled_rate_threshold: float = Field(default=GARBLED_RATE_THRESHOLD, gt=0, le=1)

    @model_validator(mode="after")
    def _known(self) -> ConversationConfig:
        unknown = sorted(set(self.thresholds) - set(QUALITY_METRICS))
        if unknown:
            raise ValueError(f"thresholds: unknown metric {', '.join(unknown)} (known: "
                             f"{', '.join(QUALITY_METRICS)})")
        bad = sorted(k for k, v in self.thresholds.items() if not 0 <= v <= 1)
        if bad:
            raise ValueError(f"thresholds: {', '.join(bad)} must be between 0 and 1")
        return self

    def threshold_for(self, metric_id: str) -> float:
        return self.thresholds.get(metric_id, self.threshold)

    def own_bar(self, metric_id: str) -> dict[str, bool]:
        """The CASE_BAR detail of a metric whose bar this case set itself, to another value
        than the default (a case restating the default leaves the team's policy to rate it)."""
        own = (self.garbled_rate_threshold != GARBLED_RATE_THRESHOLD
               if metric_id == "garbled_turn_rate"
               else self.threshold_for(metric_id) != DEFAULT_THRESHOLD)
        return {CASE_BAR: True} if own else {}


# --- conversions -------------------------------------------------------------------------------


def normalize_score(score: float) -> float:
    """The seed's 1–5 → 0–1 conversion: ``(score − 1) / 4``."""
    return (score - 1) / 4


def is_garbled(scores: Mapping[str, float | None], max_score: int = GARBLED_MAX_SCORE) -> bool:
    """A turn is garbled when any of its (scored) metrics is at or below ``max_score``."""
    return any(s is not None and s <= max_score for s in scores.values())


def history(case: GoldenCase, bot: Mapping[int, str], turn: int, max_turns: int,
            bot_turns: Collection[int]) -> list[dict[str, Any]]:
    """The last ``max_turns`` turns before ``turn``, ``bot_turns`` in the model's words: a
    bot turn it left without a reply is empty there, not the reference's words, which the
    judge would have read as the bot's."""
    start = max(0, turn - max_turns)
    return [
        {"turn": j, "speaker": case.transcript[j].speaker,
         "text": bot.get(j, "") if j in bot_turns else case.transcript[j].text}
        for j in range(start, turn)
    ]


# --- the task ----------------------------------------------------------------------------------


def _item(turn: int) -> str:
    return f"turn {turn}"


@dataclass
class _TurnScore:
    # status: "evaluated" (the judge's score), "failed" (no text: scored 1), "not_scored"
    # (the judge could not estimate it) or "error" (the judge gave no usable verdict, the
    # seed's status for a failed LLM call).
    score: float | None
    reason: str
    warning: str | None = None
    flagged: bool = False
    status: str = "evaluated"


class ConversationTask(FamilyTask):
    name = TASK
    title = "Conversation"
    metrics = METRICS
    # garbled_turn_rate is counted over every turn's three scores, but is no aggregate the
    # evaluation makes unknown with the task score: _garbled_at_least decides whether an
    # unknown verdict leaves it unknown.
    # Seed 004 judges a turn's text on its own and its context against the turns before it:
    # the focus carries exactly that, and the judge sees nothing else (no reference wording,
    # no later turns).
    # Seed 004 judges each turn blind to the turns after it: one call per turn.
    judge_view = replace(FOCUS_VIEW, units_apart=True)
    output_model = ConversationOutput
    config_model = ConversationConfig

    def check_consistency(self, case: Any, expected: Any, config: Any) -> list[str]:
        problems = []
        if not expected.turns:
            problems.append("expected_outcome.turns: no bot turn to evaluate")
        for i, turn in enumerate(expected.turns):
            if turn.turn >= len(case.transcript):
                problems.append(f"expected_outcome.turns[{i}].turn: {turn.turn} is past the "
                                f"end of the transcript ({len(case.transcript)} turns)")
            # As an output's text is read: a reference of "..." or a zero-width space passed
            # str.strip, and an output giving it back was a failed turn, scored 1.
            if not has_words(turn.text):
                problems.append(f"expected_outcome.turns[{i}].text: empty turn (transcript "
                                f"turn {turn.turn}): a reference wording needs a letter or "
                                "a digit, as the bot's reply does")
        return problems

    def output_problems(self, ctx: EvalContext) -> list[str]:
        evaluated = {t.turn for t in ctx.expected.turns}  # type: ignore[attr-defined]
        unknown = [t.turn for t in ctx.parsed.turns  # type: ignore[union-attr]
                   if t.turn not in evaluated]
        if unknown:
            return [f"turns: turn {', '.join(map(str, unknown))} is not a bot turn of this "
                    f"case (bot turns: {', '.join(map(str, sorted(evaluated)))})"]
        return []

    def _bot(self, ctx: EvalContext) -> dict[int, str]:
        return {t.turn: t.text for t in ctx.parsed.turns}  # type: ignore[union-attr]

    def _plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        config: ConversationConfig = ctx.config  # type: ignore[assignment]
        bot = self._bot(ctx)
        bot_turns = {e.turn for e in ctx.expected.turns}  # type: ignore[attr-defined]
        requests = []
        for expected in ctx.expected.turns:  # type: ignore[attr-defined]
            text = bot.get(expected.turn, "")
            if not has_words(text):
                continue
            turn = expected.turn
            base = {"turn": turn, "speaker": ctx.case.transcript[turn].speaker, "text": text}
            past = history(ctx.case, bot, turn, config.max_history_turns, bot_turns)
            # Seed 004 scores an out-of-range reply 1 with a warning: the judge passes it on.
            if config.combined:
                requests.append(self.item_request(
                    ctx, COMBINED, "likert5", {**base, "history": past, "first_turn": turn == 0},
                    _item(turn), COMBINED_INSTRUCTIONS, reply_fields=COMBINED_FIELDS,
                    keeps_out_of_range=True))
                continue
            for metric_id in QUALITY_METRICS:
                focus = dict(base)
                if metric_id == "context":
                    focus.update(history=past, first_turn=turn == 0)
                requests.append(self.item_request(ctx, metric_id, "likert5", focus,
                                                  _item(turn), keeps_out_of_range=True))
        return requests

    def _turn_scores(self, config: ConversationConfig, turn: int,
                     verdicts: Mapping[str, JudgeVerdict]) -> dict[str, _TurnScore]:
        out: dict[str, _TurnScore] = {}
        if config.combined:
            verdict = verdicts.get(f"{COMBINED}[{_item(turn)}]")
            for metric_id in QUALITY_METRICS:
                out[metric_id] = self._from_combined(verdict, metric_id)
            return out
        for metric_id in QUALITY_METRICS:
            verdict = verdicts.get(f"{metric_id}[{_item(turn)}]")
            if verdict is None:
                out[metric_id] = _TurnScore(None, "no judge verdict", status="not_scored")
                continue
            if verdict.judge_error:
                out[metric_id] = _TurnScore(None, verdict.reason, status="error")
                continue
            score, warning = checked_score("likert5", verdict.score)
            out[metric_id] = _TurnScore(
                score, verdict.reason, warning, verdict.flagged or warning is not None,
                "evaluated" if score is not None else "not_scored")
        return out

    @staticmethod
    def _from_combined(verdict: JudgeVerdict | None, metric_id: str) -> _TurnScore:
        if verdict is None:
            return _TurnScore(None, "no judge verdict", status="not_scored")
        if verdict.judge_error:
            return _TurnScore(None, verdict.reason, status="error")
        if metric_id in verdict.details.get("not_scored", ()):
            return _TurnScore(None, str(verdict.details.get(f"{metric_id}_reason",
                                                            verdict.reason)),
                              status="not_scored")
        raw = verdict.details.get(metric_id, verdict.details.get(f"{metric_id}_score"))
        if raw is None and verdict.score is None:
            return _TurnScore(None, verdict.reason, status="not_scored")
        if raw is None:
            # A verdict without this metric's score is no verdict on it: a failure of the
            # judge, never a score the model earned.
            return _TurnScore(None, f"the judge's verdict has no {metric_id} score",
                              status="error")
        score, warning = checked_score("likert5", raw)
        return _TurnScore(score, str(verdict.details.get(f"{metric_id}_reason",
                                                         verdict.reason)),
                          warning, verdict.flagged or warning is not None)

    def _score(
        self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
    ) -> tuple[dict[str, MetricResult], float | None, list[str]]:
        config: ConversationConfig = ctx.config  # type: ignore[assignment]
        bot = self._bot(ctx)
        records: dict[str, list[dict[str, Any]]] = {m: [] for m in QUALITY_METRICS}
        per_turn: list[dict[str, Any]] = []
        # Turns with the metrics the judge gave no usable verdict on, or no score (offline).
        unknown: list[tuple[int, list[str]]] = []
        unscored: list[tuple[int, list[str]]] = []
        for expected in ctx.expected.turns:  # type: ignore[attr-defined]
            turn = expected.turn
            text = bot.get(turn, "")
            if not has_words(text):
                # A turn of "..." or a zero-width space says no more than an empty one.
                why = ("the model gave no text for this turn" if turn not in bot
                       else "the model's text for this turn is empty" if not text.strip()
                       else "the model's text for this turn has no letter or digit")
                scores = {m: _TurnScore(1.0, why, status="failed") for m in QUALITY_METRICS}
            else:
                scores = self._turn_scores(config, turn, verdicts)
            for metric_id, ts in scores.items():
                records[metric_id].append(self._record(metric_id, turn, text, ts, config))
            values = {m: ts.score for m, ts in scores.items()}
            errors = sorted(m for m, ts in scores.items() if ts.status == "error")
            if errors:
                unknown.append((turn, errors))
            blanks = sorted(m for m, ts in scores.items()
                            if ts.score is None and ts.status != "error")
            if blanks:
                unscored.append((turn, blanks))
            if any(v is not None for v in values.values()):
                garbled = is_garbled(values, config.garbled_max_score)
                # A turn a score is missing from may yet be garbled: unknown, unless its
                # known scores already make it so.
                per_turn.append({"turn": turn, "scores": values, "garbled":
                                 True if garbled else None if errors or blanks else False})
        metrics: dict[str, MetricResult] = {
            m: self._aggregate(m, records[m], config) for m in QUALITY_METRICS
        }
        metrics["garbled_turn_rate"] = self._garbled(per_turn, unknown, unscored, config)
        score, dropped = weighted_score([(m, metrics[m], 1.0) for m in QUALITY_METRICS])
        return metrics, score, dropped

    @staticmethod
    def _record(metric_id: str, turn: int, text: str, ts: _TurnScore,
                config: ConversationConfig) -> dict[str, Any]:
        record: dict[str, Any] = {"id": f"turn_{turn}", "turn": turn, "status": ts.status,
                                  "reasoning": ts.reason, "text": text}
        if ts.score is not None:
            normalized = normalize_score(ts.score)
            record.update(score_1_5=ts.score, score_normalized=normalized,
                          score_percentage=f"{normalized * 100:.2f}%",
                          passed=normalized >= config.threshold_for(metric_id) - 1e-9)
        if ts.warning:
            record["warning"] = ts.warning
        if ts.flagged:
            record["flagged"] = True
        return record

    def _aggregate(self, metric_id: str, records: list[dict[str, Any]],
                   config: ConversationConfig) -> MetricResult:
        threshold = config.threshold_for(metric_id)
        errors = [r for r in records if r["status"] == "error"]
        if errors:
            # Unknown, not renormalised over the other turns: the mean would be a number the
            # judge never gave (evaluate.py marks it, and what is computed from it, a judge
            # error).
            return MetricResult.judge_failed(
                "; ".join(f"turn {r['turn']}: {r['reasoning']}" for r in errors),
                results=records, threshold=threshold, **config.own_bar(metric_id))
        scored = [r for r in records if "score_1_5" in r]
        judged = [r for r in scored if r["status"] == "evaluated"]
        warnings = [f"turn {r['turn']}: {r['warning']}" for r in records if "warning" in r]
        if not scored or (not judged and len(scored) < len(records)):
            reasons = sorted({r["reasoning"].removeprefix("not scored: ")
                              for r in records if r["status"] == "not_scored"})
            return MetricResult.not_scored(
                "not scored: " + ("; ".join(reasons) or "no turn to evaluate"),
                results=records, threshold=threshold, **config.own_bar(metric_id))
        avg_1_5 = sum(r["score_1_5"] for r in scored) / len(scored)
        value = sum(r["score_normalized"] for r in scored) / len(scored)
        passed = value >= threshold - 1e-9
        # The seed derives the percentage from the two-decimal 1–5 average (4.67 → 91.75).
        avg_rounded = round(avg_1_5, 2)
        failed = [r["turn"] for r in records if r["status"] == "failed"]
        skipped = [r["turn"] for r in records if r["status"] == "not_scored"]
        reason = (f"{value * 100:.2f}% over {len(scored)} turn(s) (avg {avg_rounded:.2f} / 5); "
                  f"threshold {threshold * 100:.0f}%"
                  + (f"; turns without text scored 1: {', '.join(map(str, failed))}"
                     if failed else "")
                  + (f"; not scored: turn {', '.join(map(str, skipped))}" if skipped else ""))
        result = MetricResult(
            value=value, rating="good" if passed else "fail", reason=reason,
            details={
                "overall_score": f"{value * 100:.2f}%", "threshold": threshold,
                "passed": passed, "evaluations": len(scored), "results": records,
                f"avg_{metric_id}_1_5": avg_rounded,
                f"avg_{metric_id}_0_100": round(normalize_score(avg_rounded) * 100, 2),
                "warnings": warnings, **config.own_bar(metric_id),
            },
        )
        result.flagged = any(r.get("flagged") for r in records)
        return result

    @staticmethod
    def _garbled(per_turn: list[dict[str, Any]], unknown: list[tuple[int, list[str]]],
                 unscored: list[tuple[int, list[str]]],
                 config: ConversationConfig) -> MetricResult:
        if not per_turn and not unknown:
            return MetricResult.not_scored("not scored: no turn has any score")
        if unknown or unscored:
            return _garbled_at_least(per_turn, unknown, unscored, config)
        garbled = [t["turn"] for t in per_turn if t["garbled"]]
        rate = len(garbled) / len(per_turn)
        passed = rate < config.garbled_rate_threshold
        return MetricResult(
            value=rate, rating="good" if passed else "fail",
            reason=f"{len(garbled)} of {len(per_turn)} turns garbled (a score <= "
                   f"{config.garbled_max_score})"
                   + (f": turn {', '.join(map(str, garbled))}" if garbled else ""),
            details={"garbled_turns": garbled, "turns": per_turn,
                     "threshold": config.garbled_rate_threshold, "passed": passed,
                     "numerator": len(garbled), "denominator": len(per_turn),
                     **config.own_bar("garbled_turn_rate")},
        )


def _garbled_at_least(per_turn: list[dict[str, Any]], unknown: list[tuple[int, list[str]]],
                      unscored: list[tuple[int, list[str]]],
                      config: ConversationConfig) -> MetricResult:
    """The garbled turn rate when the judge gave no verdict on some turns' metrics
    (``unknown``) or no score it can estimate (``unscored``): failed at its lowest value —
    the known garbled turns over every turn that has or may have a score — when that fails
    it, else a judge error (any ``unknown``) or not scored, keeping its counts and bar for
    the scorecard. Never a pass: a turn is garbled when ANY of its scores is low, and one left
    out may be the one."""
    garbled = [t["turn"] for t in per_turn if t["garbled"]]
    scored = {t["turn"] for t in per_turn}
    most = len(scored) + len({turn for turn, _ in (*unknown, *unscored)} - scored)
    lowest = len(garbled) / most
    said = ["the judge could not score " + "; ".join(
        f"turn {turn} ({', '.join(metrics)})" for turn, metrics in unknown)] if unknown else []
    turns_of: defaultdict[tuple[str, ...], list[int]] = defaultdict(list)
    for turn, metrics in unscored:  # the heuristic's: the same metrics on every turn
        turns_of[tuple(metrics)].append(turn)
    said += ["the judge gave no score for " + "; ".join(
        f"{', '.join(metrics)} on turn{'s' if len(turns) > 1 else ''} "
        f"{', '.join(map(str, turns))}" for metrics, turns in turns_of.items())] if unscored else []
    missed = " and ".join(said)
    counts = {"numerator": len(garbled), "denominator": most, "lower_bound": True,
              "bound_limit": config.garbled_rate_threshold,
              **config.own_bar("garbled_turn_rate")}
    if lowest < config.garbled_rate_threshold:
        why = f"{missed}, so whether those turns are garbled is unknown"
        return (MetricResult.judge_failed(why, **counts) if unknown
                else MetricResult.not_scored(f"not scored: {why}", **counts))
    return MetricResult(
        value=lowest, rating="fail",
        reason=f"at least {len(garbled)} of {most} turns garbled (a score <= "
               f"{config.garbled_max_score}): turn {', '.join(map(str, garbled))}; {missed}, "
               f"so the rate is at least {lowest:.1%}, not below "
               f"{config.garbled_rate_threshold:.0%} whatever those turns are",
        details={"garbled_turns": garbled, "turns": per_turn, **counts,
                 "threshold": config.garbled_rate_threshold, "passed": False,
                 "unknown_turns": sorted({turn for turn, _ in (*unknown, *unscored)}
                                         - set(garbled))})
