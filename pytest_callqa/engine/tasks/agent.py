"""Agent judge: tool-using conversational agents scored on nine rubric metrics (seed 001).

**Golden case.** ``transcript`` is a scripted scenario in order: ``customer`` turns (the
user's script), ``agent`` turns (the reference agent, shown to the judge as a reference),
and ``tool_call`` turns — JSON ``{"name", "arguments"}`` — each immediately followed by a
``tool_result`` turn holding what the tool returned. ``config`` carries ``system_prompt``,
``business_rules``, ``tools`` (name, description, parameters with ``required`` and
``enum``), the metric selection ``metrics`` (``[{metric, weight?}]``), ``pass_threshold``
(0–100, default 75) and ``evaluation_criteria_override`` (free text added to every judge
prompt). ``expected_outcome`` is ``{"tool_calls": [{"name", "arguments", "turn"?}] | null,
"task_outcome": "..."}``.

**Model output** — what the agent under test did when replayed through the scenario:
``{"tool_calls": [{"turn", "name", "arguments"}], "responses": [{"turn", "text"}]}``. A
response's ``turn`` is the index of the agent turn of the transcript it stands for; a call's
``turn`` is the transcript position it was made before. The customer turns are scripted and
each call receives the recorded result of the same tool (the closest match on arguments),
so the conversation the agent lived can be rebuilt (:func:`replay`) and judged.

**Scores.** Each metric is 0–5 (``task_completion`` 0/1), normalised to 0–1, weighted by
the selection's weights renormalised to 1 (and again over the metrics actually scored);
``overall_score`` is that weighted sum × 100 and ``passed`` compares it with
``pass_threshold``. The task score is ``overall_score / 100``. With ``expected_outcome.
tool_calls`` given, ``tool_routing`` and ``parameter_extraction`` are computed here, from an
order-aware alignment of the calls and normalised argument comparison, instead of asking the
judge; without them the judge scores those two as well.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, NamedTuple

from pydantic import TypeAdapter

from ..core.cases import GoldenCase
from ..core.judging import FOCUS_VIEW, JudgeRequest, JudgeVerdict, Scale, valid_score
from ..core.memo import ByIdentity, batch_memoised
from ..core.metrics import BAND_EDGES, CASE_BAR
from ..core.results import MetricResult
from ..text import normalize
from .agent_calls import (
    align_calls,
    call_order,
    mock_results,
    replay_calls,
    scenario_problems,
    score_parameters,
    score_tool_routing,
    speaker_kind,
)
from .agent_metrics import (
    COMPLETION_DIAGNOSTIC_FIELDS,
    DIAGNOSTIC_FIELDS,
    METRICS,
    PROGRAMMATIC,
    TASK,
    TASK_COMPLETION,
    resolve_weights,
)
from .agent_schemas import (
    DEFAULT_PASS_THRESHOLD,
    TOOL_CALL,
    AgentConfig,
    AgentExpected,
    AgentOutput,
    AgentToolCall,
    ToolCall,
    ToolSpec,
    parse_tool_call_text,
)
from .family_base import RUBRIC_GOOD, FamilyTask

if TYPE_CHECKING:
    from ..core.context import EvalContext


_TOOLS_JSON = TypeAdapter(list[ToolSpec])
_EXPECTED_JSON = TypeAdapter(list[ToolCall])
_CALLS_JSON = TypeAdapter(list[AgentToolCall])


class Replay(NamedTuple):
    """An output replayed against its scenario: its calls in the order they happened (by
    turn, then as listed: ``order`` holds their places in the output), the recorded result
    each receives, and the conversation the agent under test lived (:func:`replay_calls`)."""

    order: tuple[int, ...]
    calls: list[AgentToolCall]
    results: tuple[str | None, ...]
    view: Sequence[Mapping[str, Any]]


def replay(case: GoldenCase, output: AgentOutput, *, fresh: bool = True) -> Replay:
    """``output`` replayed against ``case``'s scenario, worked out once per batch: with
    ``fresh``, a view of new dicts (callers may change it, as a judge may its focus); without,
    the batch's own read-only entries (for a caller that only reads them)."""
    order, results, entries = _replayed(ByIdentity(case), ByIdentity(output))
    calls = [output.tool_calls[i] for i in order]
    if not fresh:
        return Replay(order, calls, results, entries)
    # A copy of the entries is cheaper than replaying again (speaker kinds, has_words of
    # every reply, rendered calls): the proxies' copy() copies the dicts behind them (dict()
    # of a proxy reads it key by key, several times slower). A call's arguments are copied
    # too, as replay_calls gives each view its own.
    view = [e.copy() for e in entries]
    for entry in view:
        if "arguments" in entry:
            entry["arguments"] = dict(entry["arguments"])
    return Replay(order, calls, results, view)


# The judge's view of an output and its scoring both replay it: the calls' results, matched
# argument by argument against the scenario's, and the conversation are worked out once.
@batch_memoised
def _replayed(case: ByIdentity[GoldenCase], output: ByIdentity[AgentOutput],
              ) -> tuple[tuple[int, ...], tuple[str | None, ...],
                         tuple[MappingProxyType[str, Any], ...]]:
    order = call_order(output.value)
    calls = [output.value.tool_calls[i] for i in order]
    results = mock_results(case.value, calls)
    view = replay_calls(case.value, output.value, calls, results)
    return tuple(order), tuple(results), tuple(MappingProxyType(e) for e in view)


def _diagnostics(verdict: JudgeVerdict, score: float) -> tuple[str | None, list[int]]:
    code = verdict.details.get("failure_code")
    turns_raw = verdict.details.get("turns")
    turns = [t for t in turns_raw if isinstance(t, int) and not isinstance(t, bool)] \
        if isinstance(turns_raw, list) else []
    if score >= RUBRIC_GOOD:
        return None, turns
    if isinstance(code, str) and code.strip():
        return normalize(code).replace(" ", "_"), turns
    # The judge gave no label: a generic one still tells a reader which metric failed.
    return f"low_{verdict.metric}", turns


class AgentTask(FamilyTask):
    name = TASK
    title = "Agent"
    metrics = METRICS
    # Computed from every selected metric's weight: unknown when one of them is.
    aggregate_metrics = frozenset({"overall_score", "passed"})
    # The judge sees the focus alone: system prompt, rules, tools, the replay and the
    # reference calls and outcome (seed 001's inputs), not the raw transcript.
    judge_view = FOCUS_VIEW
    output_model = AgentOutput
    expected_model = AgentExpected
    config_model = AgentConfig

    def check_transcript(self, case: GoldenCase) -> list[str]:
        return super().check_transcript(case) + scenario_problems(case)

    def check_consistency(self, case: Any, expected: Any, config: Any) -> list[str]:
        problems = []
        declared = {t.name for t in config.tools}
        if declared and expected.tool_calls:
            for i, call in enumerate(expected.tool_calls):
                if call.name not in declared:
                    problems.append(f"expected_outcome.tool_calls[{i}].name: {call.name!r} is "
                                    "not one of config.tools")
        # A recorded call of an undeclared tool is a scenario the agent could not follow.
        for i, turn in enumerate(case.transcript if declared else ()):
            if speaker_kind(turn.speaker) == TOOL_CALL:
                call, _ = parse_tool_call_text(turn.text)
                if call is not None and call.name not in declared:
                    problems.append(f"transcript[{i}].text: tool {call.name!r} is not one of "
                                    "config.tools")
        for i, call in enumerate(expected.tool_calls or []):
            if call.turn is not None and call.turn > len(case.transcript):
                problems.append(f"expected_outcome.tool_calls[{i}].turn: {call.turn} is past "
                                f"the end of the transcript ({len(case.transcript)} turns)")
        return problems

    def output_problems(self, ctx: EvalContext) -> list[str]:
        out: AgentOutput = ctx.parsed  # type: ignore[assignment]
        turns = ctx.case.transcript
        problems = []
        for i, response in enumerate(out.responses):
            if response.turn >= len(turns):
                problems.append(f"responses[{i}].turn: {response.turn} is past the end of the "
                                f"transcript ({len(turns)} turns)")
            elif speaker_kind(turns[response.turn].speaker) != "agent":
                problems.append(f"responses[{i}].turn: turn {response.turn} is a "
                                f"{turns[response.turn].speaker or 'unlabelled'} turn, not an "
                                "agent turn")
        for i, call in enumerate(out.tool_calls):
            if call.turn > len(turns):
                problems.append(f"tool_calls[{i}].turn: {call.turn} is past the end of the "
                                f"transcript ({len(turns)} turns)")
        return problems

    # --- judging ------------------------------------------------------------------------

    def focus(self, ctx: EvalContext) -> dict[str, Any]:
        """What every agent judgement looks at; judges need no task knowledge beyond it."""
        out: AgentOutput = ctx.parsed  # type: ignore[assignment]
        exp: AgentExpected = ctx.expected  # type: ignore[assignment]
        config: AgentConfig = ctx.config  # type: ignore[assignment]
        _, calls, results, view = replay(ctx.case, out)
        return {
            "conversation": view,
            "system_prompt": config.system_prompt,
            "business_rules": list(config.business_rules),
            # Each list dumped in one call of its adapter: the same JSON dump as model_dump
            # per item, without pydantic's Python wrapper around every item.
            "tools": _TOOLS_JSON.dump_python(config.tools, mode="json"),
            "expected_tool_calls": None if exp.tool_calls is None
            else _EXPECTED_JSON.dump_python(exp.tool_calls, mode="json"),
            "task_outcome": exp.task_outcome,
            "tool_calls": [{**c, "result": r} for c, r in zip(
                _CALLS_JSON.dump_python(calls, mode="json"), results, strict=True)],
            # A response is a turn and a text, which a JSON dump would give as they are:
            # built directly, several times faster than model_dump for a dozen replies.
            "responses": [{"turn": r.turn, "text": r.text} for r in out.responses],
        }


    def _programmatic(self, ctx: EvalContext) -> bool:
        return ctx.expected.tool_calls is not None  # type: ignore[attr-defined]

    def _plan(self, ctx: EvalContext) -> list[JudgeRequest]:
        config: AgentConfig = ctx.config  # type: ignore[assignment]
        weights = resolve_weights(config.metrics)
        focus = self.focus(ctx)
        requests = []
        for metric_id in weights:
            if metric_id in PROGRAMMATIC and self._programmatic(ctx):
                continue
            completion = metric_id == TASK_COMPLETION
            scale: Scale = "binary" if completion else "rubric0_5"
            # The case's evaluation_criteria_override reaches each call once, as its
            # case-specific emphasis.
            fields = COMPLETION_DIAGNOSTIC_FIELDS if completion else DIAGNOSTIC_FIELDS
            requests.append(self.request(ctx, metric_id, scale, focus, reply_fields=fields))
        return requests

    def _score(
        self, ctx: EvalContext, verdicts: Mapping[str, JudgeVerdict]
    ) -> tuple[dict[str, MetricResult], float | None, list[str]]:
        config: AgentConfig = ctx.config  # type: ignore[assignment]
        exp: AgentExpected = ctx.expected  # type: ignore[assignment]
        out: AgentOutput = ctx.parsed  # type: ignore[assignment]
        weights = resolve_weights(config.metrics)
        metrics: dict[str, MetricResult] = {}
        order, calls, _, view = replay(ctx.case, out, fresh=False)
        declared = {t.name for t in config.tools}
        # Both programmatic rubrics read the same pairing of the calls.
        aligned = (align_calls(exp.tool_calls, calls)
                   if exp.tool_calls is not None and any(m in weights for m in PROGRAMMATIC)
                   else None)
        for metric_id, weight in weights.items():
            spec = self.spec(metric_id)
            meta = {"tier": spec.tier, "weight": weight}
            if metric_id in PROGRAMMATIC and exp.tool_calls is not None:
                scored = (score_tool_routing(exp.tool_calls, calls, declared, order,
                                             alignment=aligned)
                          if metric_id == "tool_routing"
                          else score_parameters(exp.tool_calls, calls, config, view,
                                                alignment=aligned))
                if scored is None:
                    metrics[metric_id] = MetricResult.not_scored(
                        "n/a: no tool call expected and none made", **meta)
                    continue
                metrics[metric_id] = spec.result(
                    scored.score, scored.reason, score_0_5=scored.score,
                    normalized=scored.score / 5, failure_code=scored.failure_code,
                    turns=scored.turns, computed="programmatic", **meta, **scored.details)
                continue
            metrics[metric_id] = self._judged(metric_id, verdicts.get(metric_id), meta)

        parts = [(mid, metrics[mid], w) for mid, w in weights.items()]
        total = weight_sum = 0.0
        dropped = []
        for mid, result, w in parts:
            if not result.scored or result.value is None:
                dropped.append(mid)
                continue
            total += w * float(result.details.get("normalized", result.value))
            weight_sum += w
        if weight_sum == 0:
            # Not scored rather than absent: a check of the overall score then says what the
            # judge could not estimate or give, where a missing metric was a KeyError.
            reason = "no weighted metric was scored: " + ", ".join(dropped)
            for mid in ("overall_score", "passed"):
                metrics[mid] = MetricResult.not_scored(
                    reason, pass_threshold=config.pass_threshold, renormalised_without=dropped)
            return metrics, None, dropped
        overall = 100 * total / weight_sum
        # At the threshold passes: the weighted sum of exact scores may land a rounding error
        # below it (89.99999999999999 for 90), as the bands' rating allows for.
        passed = round(overall - config.pass_threshold, 9) >= 0
        effective = {mid: w / weight_sum for mid, r, w in parts if mid not in dropped}
        own = ({CASE_BAR: True, BAND_EDGES: [config.pass_threshold]}
               if config.pass_threshold != DEFAULT_PASS_THRESHOLD else {})
        metrics["overall_score"] = MetricResult(
            value=overall, rating="good" if passed else "fail",
            reason=f"{overall:.1f} / 100 against a pass threshold of "
                   f"{config.pass_threshold:g}",
            details={"pass_threshold": config.pass_threshold, "passed": passed,
                     "weights": weights, "effective_weights": effective,
                     "renormalised_without": dropped, **own},
        )
        metrics["passed"] = MetricResult(
            value=1.0 if passed else 0.0, rating="good" if passed else "fail",
            reason=f"overall {overall:.1f} {'>=' if passed else '<'} "
                   f"{config.pass_threshold:g}",
            details={"pass_threshold": config.pass_threshold, **own},
        )
        return metrics, overall / 100, dropped

    def _judged(self, metric_id: str, verdict: JudgeVerdict | None,
                meta: dict[str, Any]) -> MetricResult:
        spec = self.spec(metric_id)
        if verdict is None:
            return MetricResult.not_scored("no judge verdict", **meta)
        if verdict.score is None:
            return MetricResult.not_scored(verdict.reason, **meta, **verdict.details)
        scale: Scale = "binary" if metric_id == TASK_COMPLETION else "rubric0_5"
        if not valid_score(scale, verdict.score):
            # An unusable reply is a judge error, never a number (the LLM judge already
            # errors on it): scored 0, a custom judge's 7 or nan failed the metric quietly
            # while the other metrics passed the case.
            return MetricResult.judge_failed(
                f"the judge's score {verdict.score!r} is off the {scale} scale", **meta)
        score = float(verdict.score)
        code, turns = _diagnostics(verdict, score * (5 if scale == "binary" else 1))
        details = {**verdict.details, **meta, "failure_code": code, "turns": turns,
                   "normalized": score if scale == "binary" else score / 5,
                   "computed": "judge"}
        if scale != "binary":
            details["score_0_5"] = score
        result = spec.result(score, verdict.reason, **details)
        result.flagged = verdict.flagged
        return result
