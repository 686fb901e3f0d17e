"""The cross-model rank: the basis (final score A or B), cost efficiency, the models left
unranked and why, and the ties the cases cannot break."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING

from .stats import overlaps

if TYPE_CHECKING:
    from .scorecard import ModelCard, Scorecard

# Keeps a free model's normalised cost finite; a zero-cost model then ranks as the most
# cost-efficient, which is what it is.
_COST_FLOOR = 1e-9


def rank(card: Scorecard) -> None:
    """Rank ``card``'s models, and say in its notes which are not ranked and why."""
    cards = list(card.models.values())
    # A final score A the judge left unknown still counts as one: a failure of the judge must
    # not switch the basis every other model is ranked on.
    use_a = bool(cards) and all(c.benchmark_score is not None
                                or "benchmarks" in c.incomplete_tasks for c in cards)
    card.rank_basis = "final_score_a" if use_a else "final_score_b"

    def basis(c: ModelCard) -> float | None:
        return c.final_score_a if use_a else c.final_score_b

    def final(c: ModelCard) -> float:
        value = basis(c)
        return value if value is not None else 0.0

    # A model whose final score the judge left unknown, or whose disqualification is unknown,
    # has no place in the order: the others are ranked among themselves. Nor has a model
    # none of whose tasks weighs in a final score (agent, conversation): an agent-only suite
    # was ranked by model name, every final score counted 0.
    unranked = [c for c in cards
                if c.disqualified is None or (basis(c) is None and c.incomplete_tasks)]
    scoreless = [c for c in cards if c not in unranked and basis(c) is None]
    ranked = [c for c in cards if c not in unranked and c not in scoreless]
    costs = [c.cost_per_1000_calls for c in ranked if c.cost_per_1000_calls is not None]
    all_costed = bool(ranked) and len(costs) == len(ranked)
    if all_costed:
        cheapest = max(min(costs), _COST_FLOOR)
        for c in ranked:
            normalised = max(c.cost_per_1000_calls or 0.0, _COST_FLOOR) / cheapest
            c.cost_efficiency = final(c) / normalised
    elif ranked:
        card.notes.append("cost unknown for some model: ranked by final score alone")
    # "Models with a blocker rank after models without": a blocker that disqualifies the
    # model for a task. Blocked cases within the tolerance (--callqa-disqualify-tolerance)
    # are the ones it may have before it is disqualified, and do not move it down.
    ordered = sorted(ranked, key=lambda c: (
        bool(c.disqualified),
        -(c.cost_efficiency if c.cost_efficiency is not None else final(c)),
        -final(c),
        c.model,
    ))
    for place, c in enumerate(ordered, start=1):
        c.cost_adjusted_rank = place
    _ties(ranked, use_a, all_costed, basis)
    if scoreless:
        card.notes.append("not ranked, no task of theirs weighing in a final score — "
                          + ", ".join(c.model for c in scoreless))
    if unranked:
        card.notes.append("not ranked, what it would be ranked on being unknown — "
                          + "; ".join(_unranked_reason(c, basis(c), use_a) for c in unranked))


def _unranked_reason(c: ModelCard, final: float | None, use_a: bool) -> str:
    reasons = []
    if final is None:
        gaps = [t for t in c.incomplete_tasks if use_a or t != "benchmarks"]
        causes = zip(("the judge could not score all of", "a test errored in",
                      "an output is missing in"), c.gap_causes(gaps), strict=True)
        reasons.append(f"final score {'A' if use_a else 'B'} unknown ("
                       + "; ".join(f"{what} {', '.join(ts)}" for what, ts in causes if ts) + ")")
    if c.disqualified is None:
        undecided = [t for t, a in c.tasks.items() if a.disqualification_unknown]
        reasons.append(f"disqualification unknown (a blocker could not be decided in "
                       f"{', '.join(undecided)})")
    return f"{c.model}: {', '.join(reasons)}"


def _ties(cards: list[ModelCard], use_a: bool, all_costed: bool,
          basis: Callable[[ModelCard], float | None]) -> None:
    """The interval of what each model is ranked by, and the models it cannot be told apart
    from: their intervals overlap, or one has none (too few cases to draw one: told apart
    by nothing), among models alike in being disqualified by a blocker or not. A model
    without the final score it is ranked by ties with none."""
    if all_costed:
        cheapest = max(min(c.cost_per_1000_calls or 0.0 for c in cards), _COST_FLOOR)
    for c in cards:
        interval = c.final_interval_a if use_a else c.final_interval_b
        if interval is not None and all_costed:
            normalised = max(c.cost_per_1000_calls or 0.0, _COST_FLOOR) / cheapest
            interval = (interval[0] / normalised, interval[1] / normalised)
        c.rank_interval = interval
    figured = [c for c in cards if basis(c) is not None]
    for c in cards:
        c.rank_ties = [o.model for o in sorted(figured, key=lambda o: o.cost_adjusted_rank or 0)
                       if c in figured and o is not c and o.disqualified == c.disqualified
                       and (c.rank_interval is None or o.rank_interval is None
                            or overlaps(c.rank_interval, o.rank_interval))]
