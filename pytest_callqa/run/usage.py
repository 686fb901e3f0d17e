"""Call counters of the run across processes (this one's and, on an xdist controller, every
worker's), what the judge and live models cost, and the budget's spend ledgers."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import TYPE_CHECKING, Any

from .settings import Settings, count

if TYPE_CHECKING:
    from ..engine.llm.transport import ChatRunner
    from ..engine.scorecard import Scorecard
    from .catalog import Catalog
    from .services import Services

# How a verdict the budget stopped begins its reason (engine.judges.llm).
BUDGET_REASON = "not scored: judge budget"
COUNTERS = ("calls", "cache_hits", "damaged", "requests", "retries", "reasks", "failures",
            "unusable", "budget_stopped", "requests_without_usage", "prompt_tokens",
            "completion_tokens")


class Usage:
    """What the run's calls did and cost, for the header and the JSON report."""

    def __init__(self, settings: Settings, catalog: Catalog, services: Services,
                 timings: Mapping[str, float]) -> None:
        self.settings = settings
        self.catalog = catalog
        self.services = services
        self.timings = timings
        # On an xdist controller: each worker's counters, as it shipped them.
        self.worker_usage: list[dict[str, Any]] = []

    def own(self) -> dict[str, Any] | None:
        """This process's call counters, as builtins (what a worker ships to the
        controller); None when it made no call."""
        runner = self.services.built_runner
        if runner is None:
            return None
        stats = runner.cache.stats
        return {"runner": runner.usage_summary(),
                "cache": {"failed_reads": stats.unreadable, "failed_writes": stats.write_errors,
                          "error": stats.error, "lock_error": stats.lock_error},
                "timings": dict(self.timings)}

    def processes(self) -> list[dict[str, Any]]:
        own = self.own()
        return [*self.worker_usage, *([own] if own is not None else [])]

    def cache_problems(self) -> dict[str, Any] | None:
        """Reads and writes of the cache that failed over the run's processes, and why
        processes could not coordinate through it, each with the first reason given; None
        when all worked. The judge and live models share the one cache."""
        return combined_cache_problems([p["cache"] for p in self.processes()])

    def end_run(self, run_ids: Sequence[str]) -> None:
        """Remove what this run's processes (itself and its workers) shared only while it
        lasted: the spend ledgers of a budget, the exchange of the replies no cache keeps."""
        if self.settings.cache_dir is None:
            return
        if run_ids:
            # Standard library only, but kept out of start-up: a run with workers ends here.
            from ..engine.llm.cache import JudgeCache

            cache = JudgeCache(self.settings.cache_dir, "off")
            for run_id in run_ids:
                cache.end_exchange(run_id)
        if self.settings.budget is None:
            return
        # Only a budgeted run, which has called out already, reaches the cache module.
        from ..engine.llm.budget import SpendLedger
        from ..engine.llm.cache import JudgeCache

        runner = self.services.built_runner
        own = runner.run_id if runner is not None else None
        cache = JudgeCache(self.settings.cache_dir, "off")
        for run_id in {*run_ids, *([own] if own else [])}:
            path = cache.ledger_path(run_id)
            if path is not None:
                SpendLedger(path).remove()

    def judge(self, card: Scorecard) -> dict[str, Any] | None:
        """The LLM judge's configuration, spend and what it did (None for the heuristic).

        Top-level figures are the same with and without xdist (requests are sent once;
        verdict counts come from the scored results); ``per_process`` holds the counts that
        legitimately differ, since which replies an xdist worker reads from another's share
        of the cases depends on which tests xdist gives it.
        """
        settings = self.settings
        if not settings.llm_judge:
            return None
        processes = self.processes()
        totals = sum_kind(processes, "judge")
        records = [rec for r in card.results for rec in r.judge_records]
        used = [r for r in card.results if r.usage.get("judge_calls")]
        calls = sum(r.usage["judge_calls"] for r in used)
        costed = [r.usage["judge_cost_usd"] for r in used if "judge_cost_usd" in r.usage]
        per_1000 = (money(sum(costed) / calls * 1000)
                    if calls and len(costed) == len(used) else None)
        not_scored_budget = sum(1 for rec in records if rec.get("score") is None
                                and str(rec.get("reason", "")).startswith(BUDGET_REASON))
        return {
            "backend": settings.judge,
            "model": settings.judge_model_name,
            "base_url": self.services.judge_url_shown(),
            "mode": settings.judge_mode,
            # Whether the price table has the judge's model: a report read back (a merge of
            # shards) names why its spend is unknown from it.
            "priced": settings.judge_model_name in settings.prices,
            **self.services.limits(),
            **self._cache_problems_entry(),
            "budget_exhausted": bool(not_scored_budget or totals["budget_stopped"]
                                     or self.budget_passed()),
            "calls": round(calls, 6),
            "requests": totals["requests"],
            "retries": totals["retries"],
            "reasks": totals["reasks"],
            "unusable": totals["unusable"],
            "requests_without_usage": totals["requests_without_usage"],
            "prompt_tokens": totals["prompt_tokens"],
            "completion_tokens": totals["completion_tokens"],
            "spent_usd": totals["spent_usd"],
            "cost_per_1000_calls": per_1000,
            "flagged_verdicts": sum(1 for rec in records if rec.get("flagged")),
            "not_scored_budget": not_scored_budget,
            "per_process": per_process(processes, totals, "judge_s"),
        }

    def generation(self) -> dict[str, Any] | None:
        """Live models: where each is served, and what generating their outputs cost."""
        live = self.catalog.live_models()
        if not live:
            return None
        processes = self.processes()
        models = {}
        for name, spec in live.items():
            totals = sum_kind(processes, "generate", spec.model)
            # Calls are counted by the served model id: live models sharing one (a model on
            # two servers) each show the id's traffic, and say which others it includes.
            shared = sorted(other for other, o in live.items()
                            if other != name and o.model == spec.model)
            models[name] = {
                "model": spec.model, "base_url": self.services.base_url(spec.base_url),
                "price": self.services.price_text(spec.model),
                **{k: totals[k] for k in ("requests", "retries", "requests_without_usage",
                                          "prompt_tokens", "completion_tokens",
                                          "spent_usd")},
                **({"counted_with": shared} if shared else {}),
            }
        totals = sum_kind(processes, "generate")
        return {
            "models": models,
            **self.services.limits(),
            **self._cache_problems_entry(),
            "budget_exhausted": bool(totals["budget_stopped"] or self.budget_passed()),
            "requests": totals["requests"],
            "requests_without_usage": totals["requests_without_usage"],
            "prompt_tokens": totals["prompt_tokens"],
            "completion_tokens": totals["completion_tokens"],
            "spent_usd": totals["spent_usd"],
            "per_process": per_process(processes, totals, "generate_s"),
        }

    def budget_spent(self) -> float:
        """What the budget counted spent over the run's processes: its ledger's figure, which
        settles a call whose cost is unknown (a reply without usage, a timeout) at its worst
        case, where the spend the replies reported has no figure for it."""
        figures = [p["runner"] for p in self.processes()]
        # Every process sharing the ledger reads the run's total from it; one without a ledger
        # (its cache directory unusable) counted only its own calls.
        shared = [f["budget_spent_usd"] for f in figures if f.get("budget_shared")]
        own = [f["budget_spent_usd"] for f in figures if not f.get("budget_shared")]
        return money(max(shared, default=0.0) + sum(own))

    def budget_passed(self) -> bool:
        """Whether the budget's settled spend is above it: a server billed more completion
        tokens than the bound a request carried. The budget then sends nothing more, yet when
        every request had gone out before the first was settled none was stopped."""
        budget = self.settings.budget
        return budget is not None and self.budget_spent() > budget

    def _cache_problems_entry(self) -> dict[str, Any]:
        # Beside the cache's settings, and like damaged entries only when there are some.
        problems = self.cache_problems()
        return {"cache_problems": problems} if problems is not None else {}

    def lines(self, card: Scorecard) -> list[str]:
        """Header lines on the calls the run made: spend, cache, budget, flagged replies."""
        lines = []
        judge = self.judge(card)
        if judge is not None:
            lines += judge_lines(judge, priced=judge["priced"])
        generation = self.generation()
        if generation is not None:
            lines.append("live models: " + ", ".join(
                f"{name} = {m['model']} at {m['base_url']} ({m['price']})"
                for name, m in generation["models"].items()))
            unpriced = sorted({m["model"] for m in generation["models"].values()
                               if m["model"] not in self.settings.prices})
            lines.append(f"generation spend: {_spend(generation, unpriced)}")
            lines.append(_calls_line("generation", generation["per_process"]))
        exhausted = [u for u in (judge, generation) if u is not None and u["budget_exhausted"]]
        if exhausted:
            passed = self.budget_passed()
            line = (f"budget: ${self.settings.budget:g} {'passed' if passed else 'reached'} "
                    f"(${self.budget_spent():.4f} spent"
                    + ("; the server billed completion tokens beyond the bound this tool sent "
                       "with each request" if passed else "")
                    + "); no further requests were sent")
            if judge is not None and judge["not_scored_budget"]:
                line += (f", {count(judge['not_scored_budget'], 'judgement')} not scored "
                         "(shown as E)")
            lines.append(line)
        problems = self.cache_problems()
        if problems is not None:
            lines += _cache_lines(problems)
        return lines


def judge_lines(judge: Mapping[str, Any], *, priced: bool) -> list[str]:
    """The header's lines on the judge's calls — spend, calls, flagged replies — from its
    usage section (``run.judge_usage``, as a run or a merge of shards writes it)."""
    per_1000 = judge["cost_per_1000_calls"]
    line = f"judge spend: {_spend(judge, [] if priced else [judge['model']])}"
    if per_1000 is not None:
        line += f"; ${per_1000:.4f} per 1000 judge calls"
    lines = [line, _calls_line("judge", judge["per_process"])]
    if judge["flagged_verdicts"]:
        lines.append(f"judge replies flagged: {judge['flagged_verdicts']} unusable, "
                     "scored conservatively (lowest score) and marked ?")
    return lines


def money(value: float) -> float:
    # Sums of per-process floats differ in their last bits with the order of addition.
    return round(value, 10)


def kind_totals(runner: ChatRunner | None, kind: str) -> dict[str, Any]:
    """Counters of ``runner``'s calls of ``kind`` so far (all zero without a runner)."""
    usage = {"runner": runner.usage_summary()} if runner is not None else None
    return sum_kind([usage] if usage is not None else [], kind)


def sum_kind(processes: Sequence[Mapping[str, Any]], kind: str,
             model: str | None = None) -> dict[str, Any]:
    """Counters of calls of ``kind`` (``judge``, ``generate``), summed over processes (and
    over models, unless ``model`` is given)."""
    totals: dict[str, Any] = dict.fromkeys(COUNTERS, 0)
    spent, known = 0.0, True
    for process in processes:
        by_model = process.get("runner", {}).get("by_kind", {}).get(kind, {})
        for name, counters in by_model.items():
            if model is not None and name != model:
                continue
            for counter in COUNTERS:
                totals[counter] += counters.get(counter) or 0
            if counters.get("spent_usd") is None:
                known = False
            else:
                spent += counters["spent_usd"]
    totals["spent_usd"] = money(spent) if known else None
    # The engine's call counters load at the run's end, not with the plugin.
    from ..engine.llm.counters import tokens_unknown

    if tokens_unknown(totals["requests"], totals["requests_without_usage"]):
        # No reply reported its tokens: their count is unknown, not 0.
        totals["prompt_tokens"] = totals["completion_tokens"] = None
    return totals


def call_delta(before: Mapping[str, Any], after: Mapping[str, Any]) -> str:
    """What a batch of calls did, for the progress line."""
    sent = after["requests"] - before["requests"]
    hits = after["cache_hits"] - before["cache_hits"]
    text = f"{count(sent, 'request')} sent, {hits} answered from the cache"
    retries = after["retries"] - before["retries"]
    if retries:
        text += f", {retries} {'retry' if retries == 1 else 'retries'}"
    if after["budget_stopped"] > before["budget_stopped"]:
        text += "; the budget is spent, no further requests were sent"
    return text


def per_process(processes: Sequence[Mapping[str, Any]], totals: Mapping[str, Any],
                timing: str) -> dict[str, Any]:
    times = [p.get("timings", {}).get(timing, 0.0) for p in processes]
    return {
        "processes": len(processes),
        "calls": totals["calls"],
        "cache_hits": totals["cache_hits"],
        # Cache entries found damaged and asked again: a rare event, shown only when it
        # happened.
        **({"damaged_cache_entries": totals["damaged"]} if totals["damaged"] else {}),
        "failures": totals["failures"],
        "unusable": totals["unusable"],
        "budget_stopped": totals["budget_stopped"],
        # The longest wait for the up-front calls of any process, in seconds.
        "resolve_s": round(max(times), 3) if times else 0.0,
    }


def _calls_line(what: str, per_process: Mapping[str, Any]) -> str:
    processes = per_process["processes"]
    where = f" over {processes} processes" if processes > 1 else ""
    # Under xdist a worker also reads the replies another sent for the run (through the run's
    # exchange when the cache keeps none): "from the cache" alone read wrong beside "cache
    # off", and on a cold run whose every reply was bought in it.
    source = ("the cache or another worker's reply" if processes > 1 else "the cache")
    line = (f"{what} calls: {per_process['calls']}{where}, "
            f"{per_process['cache_hits']} answered from {source}")
    damaged = per_process.get("damaged_cache_entries", 0)
    if damaged:
        entries = "entry" if damaged == 1 else "entries"
        line += f", {damaged} damaged cache {entries} asked again"
    return line


def _cache_lines(problems: Mapping[str, Any]) -> list[str]:
    """What did not work in the cache, so a run that asks for everything again says why."""
    lines = []
    failed = [count(problems[key], noun) for key, noun in
              (("failed_reads", "read"), ("failed_writes", "write")) if problems[key]]
    if failed:
        lines.append(f"cache: {' and '.join(failed)} failed (first: {problems['error']})")
    if problems["lock_error"]:
        lines.append(f"cache locks not usable ({problems['lock_error']}): processes sharing "
                     "the cache do not coordinate their requests")
    return lines


def _spend(usage: Mapping[str, Any], unpriced: Sequence[str]) -> str:
    """The spend of a usage section, its requests and their tokens, for the header; why the
    spend is unknown when it is."""
    spent, requests = usage["spent_usd"], usage["requests"]
    unreported = usage["requests_without_usage"]
    reasons = [f"no price for {', '.join(unpriced)}"] if unpriced else []
    if unreported:
        reasons.append(f"no token usage came back for {count(unreported, 'request')}: a "
                       "reply without it, a timeout or a lost connection")
    money_text = (f"${spent:.4f}" if spent is not None else
                  f"unknown ({'; '.join(reasons)})" if reasons else "unknown")
    tokens = ([] if usage["prompt_tokens"] is None else
              [f"{usage['prompt_tokens']:.0f}+{usage['completion_tokens']:.0f} tokens"])
    if unreported:
        tokens.append(f"tokens unknown for {unreported} of {count(requests, 'request')}")
    return f"{money_text} for {count(requests, 'request')} ({'; '.join(tokens)})"


def combined_cache_problems(parts: Sequence[Mapping[str, Any]]) -> dict[str, Any] | None:
    """Cache problems of several processes (or shards) as one run's: failed reads and writes
    added up, the first reason of each kind; None when every part's cache worked."""
    problems = {
        "failed_reads": sum(int(p.get("failed_reads") or 0) for p in parts),
        "failed_writes": sum(int(p.get("failed_writes") or 0) for p in parts),
        "error": next((p["error"] for p in parts if p.get("error")), None),
        "lock_error": next((p["lock_error"] for p in parts if p.get("lock_error")), None),
    }
    return problems if any(problems.values()) else None
