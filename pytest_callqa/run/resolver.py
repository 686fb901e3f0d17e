"""Outputs and scored results of (model, case) pairs, each produced once per process.

Network calls (the LLM judge, live models) are resolved up front: before its first test, a
process produces the outputs and sends the judge calls of its share of the pairs, all
concurrently under one chat runner (one concurrency limit, rate, cache and budget). What the
cache already holds is answered first without an event loop, so a warm re-run starts none,
and the endpoints are checked (the preflight) only before a first request goes out.

In a single process the LLM judge's batch then goes on beside the tests (verdicts.py): the
first test runs once its own pair's verdicts are in, not once the last pair's are, so the
tests' own work fits in the wait on the server. Not in an xdist worker: about half of the
tests it is handed belong to the other worker's share (below), and the first of them would
have to wait for its own batch to end anyway (one chat runner serves one event loop at a
time), so it judges up front as before.

A single process's share is every pair. Under xdist each worker collects the whole suite but
xdist hands it tests a few at a time, in an order decided as the run goes, so no worker
knows up front which tests it will run. The pairs are therefore split by a stable digest of
the case id (:func:`~.shard.shard_of` over the number of workers): worker *i* resolves the
cases of share *i* up front, so the workers' batches together cover every pair once and none
waits for calls that only another needs. A test of another share's pair is given all pending
pairs of its case at once: by then the other worker has put their replies in the shared
cache (they are read without an event loop) or, for a call that failed, in the run's
exchange (transport.py), or is sending them (the cache's key locks make this worker wait for
the outcome rather than send it again), or has died (this worker sends them). Grouping by
case keeps every model's and run's pair of a case in one batch, as in a single process, so
identical judgements of one case are charged to the same pair either way. The cache's slot
files keep all workers together within the concurrency limit. The offline heuristic judge is
CPU-bound instead: a worker scores only the pairs of the tests it is given, one by one,
while a single process scores all of them in one batch.

Repeated runs (``--callqa-runs N``) key everything by (model, case, run), run 0 being the run
of a single-run session: a live model is generated again for each run and every run is
judged on its own (engine/runs.py). A recorded output is the same in every run, so it is
produced once; with the deterministic heuristic judge its runs would be scored identically,
so runs after the first are copies of the first, scored once.

A test's work on its pair may be stopped where it stands by an exception that is no error: a
per-test time limit (pytest-timeout raises pytest's ``Failed`` wherever the test is, in the
middle of a batch), a project's hook that calls ``pytest.fail``. The pair the test asked for
keeps the interruption as its error (:class:`Interrupted`), so its other tests report it
rather than start the work again, and from then on pairs are produced and scored one by one,
each in its own test's time: otherwise the batch the stopped test had started, left half
done, would be started again by every later test, and stopped again. Before the first test
(the up-front batch) no test's work can be stopped: what a project's hook raises for a pair
there is that pair's error alone, and the batch goes on. A hook's ``pytest.skip`` or
``pytest.xfail`` is no interruption at all: the host hands it over as that pair's
:class:`Interrupted`, an error the pair keeps like any other (pytest_host.py).
"""

from __future__ import annotations

import time
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any

from ..outputs import (
    ModelOutput,
    OutputsError,
    output_path,
    output_problem,
    parse_output_text,
    read_output,
    read_usage,
    usage_problem,
    with_cost,
)
from .settings import (
    LIVE,
    CallqaCallError,
    Missing,
    Settings,
    count,
    display_path,
)
from .shard import shard_of, worker_share
from .usage import call_delta, kind_totals
from .verdicts import PreflightFailed, RunKey, Verdicts

if TYPE_CHECKING:
    from ..engine.core.cases import GoldenCase
    from ..engine.core.memo import Memo
    from ..engine.core.results import TaskResult
    from ..engine.evaluate import Prepared
    from ..engine.generate import Generation
    from .catalog import CaseRef, Catalog
    from .host import Host
    from .services import Services


# Entries per memoised function the resolver keeps across its evaluations: a pair's own
# texts and its neighbours'. Full tables of the engine's default 4,096 kept cases and their
# transcripts alive and cost an xdist worker ~550 MiB at 100,000 outputs.
KEPT_MEMO_LIMIT = 1024


class Interrupted(CallqaCallError):
    """What a pair keeps when the work on it was interrupted (see the module docstring):
    its other tests raise this rather than start the work again. ``original`` is what
    interrupted it (a project's ``pytest.skip`` or ``pytest.xfail``, for this pair alone,
    skips, or xfails, them too)."""

    def __init__(self, model: str, case_id: str, original: BaseException) -> None:
        super().__init__(interruption(model, case_id, original))
        self.original = original


def interruption(model: str, case_id: str, exc: BaseException) -> str:
    """The reason a pair was not evaluated when ``exc`` interrupted the work on it."""
    return (f"callqa: the evaluation of model {model!r} on case {case_id!r} was interrupted "
            f"({type(exc).__name__}: {exc})")


class Resolver:
    """The output/judge pipeline of this process; see the module docstring."""

    def __init__(self, settings: Settings, host: Host, catalog: Catalog,
                 services: Services) -> None:
        self.settings = settings
        self.host = host
        self.catalog = catalog
        self.services = services
        self.share = worker_share(host.worker_value("workerid"), host.worker_value("workercount"))
        # Pairs the collected tests need: outputs (callqa_output, callqa_result) and scored
        # results (callqa_result), in run order.
        self.pending_outputs: dict[RunKey, CaseRef] = {}
        self.pending: dict[RunKey, CaseRef] = {}
        self.timings: dict[str, float] = {"generate_s": 0.0, "judge_s": 0.0}
        self._usage: dict[str, dict[str, dict[str, float]]] = {}
        self._outputs: dict[RunKey, ModelOutput | Missing | BaseException] = {}
        self._results: dict[RunKey, TaskResult | BaseException] = {}
        self.verdicts = Verdicts(settings, services, self.timings, self._results)
        self._problems: list[str] | None = None  # what the preflight found, once checked
        # Every key of a case (outputs', results'), in collection order: a case's batch and
        # forgetting a pair look there rather than through every pair.
        self._case_keys: dict[str, dict[RunKey, None]] = {}
        # What the engine worked out about the run's texts, kept from one evaluation to the
        # next (KEPT_MEMO_LIMIT entries per function): a pair's scoring reads the texts its
        # judging read, and a case's pairs share its transcript and truth.
        self._memo: Memo | None = None
        # Set once a test's work was interrupted: pairs are produced and scored one by one.
        self._one_by_one = False

    def need(self, model: str, case: CaseRef, *, scored: bool, runs: int = 1) -> None:
        """Remember that a collected test needs the pair's output (and its result) in each
        of ``runs`` runs."""
        keys = self._case_keys.setdefault(case.id, {})
        for run in range(runs):
            output_key = self._output_key(model, case.id, run)
            self.pending_outputs.setdefault(output_key, case)
            keys[output_key] = None
            if scored:
                result_key = self._result_key(model, case.id, run)
                self.pending.setdefault(result_key, case)
                keys[result_key] = None

    def _output_key(self, model: str, case_id: str, run: int) -> RunKey:
        """Where a run's output is kept: per run where it may differ between runs — a live
        model's, or any a project's ``pytest_callqa_generate`` may produce — else once."""
        return (model, case_id, run if self._outputs_vary(model) else 0)

    def _outputs_vary(self, model: str) -> bool:
        return self.catalog.live_spec(model) is not None or self.host.generates_outputs

    def _result_key(self, model: str, case_id: str, run: int) -> RunKey:
        """Where a run's result is scored: per run, unless neither the output nor the judge
        can vary (then run 0's result stands for every run)."""
        varies = self.settings.llm_judge or self._outputs_vary(model)
        return (model, case_id, run if varies else 0)

    def _ours(self, case_id: str) -> bool:
        """Whether the case is in this process's share (see the module docstring)."""
        return self.share is None or shard_of(case_id, self.share[1]) == self.share[0]

    def _with(self, key: RunKey, pairs: Mapping[RunKey, CaseRef]) -> dict[RunKey, CaseRef]:
        """Of ``pairs``, those batched with ``key``: this process's share, or key's case."""
        if self._ours(key[1]):
            return {k: c for k, c in pairs.items() if self._ours(k[1])}
        return {k: pairs[k] for k in self._case_keys.get(key[1], ()) if k in pairs}

    def check_endpoints(self) -> None:
        """The preflight, once, right before this process's first request (never, when the
        cache answers everything); raises :class:`PreflightFailed` naming what to set."""
        if self._problems is None:
            live = self.catalog.live_models()
            self._problems = self.services.preflight(live) if self.settings.preflight else []
        if self._problems:
            raise PreflightFailed(self._problems)
        self.verdicts.sending()

    @property
    def makes_calls(self) -> bool:
        """Whether this run sends requests to a model server (LLM judge or live models)."""
        return (self.settings.llm_judge and bool(self.pending)) or any(
            self.catalog.live_spec(model) is not None for model, _, _ in self.pending_outputs)

    def on_progress(self, done: int, total: int) -> None:
        self.verdicts.update(done, total)

    # --- outputs ------------------------------------------------------------------------

    def recorded_output(self, model: str, case: GoldenCase) -> ModelOutput | None:
        """The recorded output file of ``model`` for ``case`` with its usage, if any."""
        if self.settings.outputs is None:
            return None
        recorded = read_output(output_path(self.settings.outputs, model, case.id))
        if recorded is None:
            return None
        if model not in self._usage:
            self._usage[model] = read_usage(self.settings.outputs / model,
                                            {ref.id for ref in self.catalog.files().cases})
        recorded.usage = dict(self._usage[model].get(case.id, {}))
        return recorded

    def _missing(self, model: str, case: CaseRef) -> Missing:
        if self.settings.outputs is None:
            where = "no --callqa-outputs directory is configured"
        else:
            path = output_path(self.settings.outputs, model, case.id)
            where = f"expected {display_path(path, self.host.rootpath)}"
        return Missing(model, case.id, case.task,
                       f"no output of model {model!r} for case {case.id!r} ({where}, and no "
                       "pytest_callqa_generate implementation returned one)")

    def output(self, model: str, case: CaseRef, run: int = 0) -> ModelOutput | Missing:
        """``model``'s output for ``case`` in ``run`` (generated or recorded), produced once
        per pair and run."""
        key = self._output_key(model, case.id, run)
        with _asked(self, key, self._outputs):
            return self._output(key, case)

    def _output(self, key: RunKey, case: CaseRef) -> ModelOutput | Missing:
        if key not in self._outputs:
            batch = {key: case}
            live = self.catalog.live_spec(key[0]) is not None
            if not self._one_by_one and (self.scores_up_front or live):
                # Live models are generated together; outputs that feed one judge batch
                # are produced together, in collection order (see _todo).
                batch = {k: c for k, c in self._with(key, self.pending_outputs).items()
                         if k == key or (k not in self._outputs
                                         and (self.scores_up_front
                                              or self.catalog.live_spec(k[0]) is not None))}
                batch.setdefault(key, case)
            self._produce(batch)
        found = self._outputs[key]
        if isinstance(found, BaseException):
            raise found
        return found

    def _produce(self, batch: Mapping[RunKey, CaseRef], *, up_front: bool = False) -> None:
        """Outputs of ``batch``: each pair through ``pytest_callqa_generate``; pairs the
        plugin's own implementation answers for a live model are generated in one batch.
        ``up_front``: before the first test, where an interruption is the pair's own error
        (see the module docstring)."""
        live: dict[RunKey, GoldenCase] = {}
        for key, case in batch.items():
            model = key[0]
            if key in self._outputs:
                continue
            try:
                body = self.catalog.case(case)
                answer = self.host.generate(model, body, key[2])
                if answer is LIVE:
                    live[key] = body
                    continue
                self._outputs[key] = self._wrap(model, case, answer)
            except Exception as exc:
                # Kept so every test of the pair reports the same error, produced once.
                self._outputs[key] = exc
            except (KeyboardInterrupt, SystemExit):
                raise
            except BaseException as exc:
                if not up_front:
                    raise  # the interruption of the test that asked (_asked)
                self._outputs[key] = Interrupted(model, case.id, exc)
        if live:
            self._generate(live)

    def _wrap(self, model: str, case: CaseRef, answer: Any) -> ModelOutput | Missing:
        if answer is None:
            return self._missing(model, case)
        produced = answer if isinstance(answer, ModelOutput) else ModelOutput(value=answer)
        problem = output_problem(produced.value) or usage_problem(produced.usage)
        if problem is not None:
            raise OutputsError(f"the output of model {model!r} for case {case.id!r} from "
                               f"{produced.source}: {problem}")
        spec = self.catalog.live_spec(model)
        priced_as = spec.model if spec is not None else model
        produced.usage = with_cost(produced.usage, self.settings.prices, priced_as)
        return produced

    def _generate(self, live: Mapping[RunKey, GoldenCase]) -> None:
        """Generate the outputs of live-model pairs, every call of every model and run
        concurrently under the shared runner."""
        # Only a run with live models needs asyncio here,
        import asyncio

        # and the generator.
        from ..engine.generate import OpenAIGenerator

        self.verdicts.end_stream()  # one chat runner serves one event loop at a time
        self.check_endpoints()
        runner = self.services.runner()
        by_model: dict[tuple[str, int], list[tuple[RunKey, GoldenCase]]] = {}
        for key, case in live.items():
            by_model.setdefault((key[0], key[2]), []).append((key, case))
        done = 0

        def advance(_done: int, _total: int) -> None:
            nonlocal done
            done += 1
            self.on_progress(done, len(live))

        generators = {}
        for name in {name for name, _run in by_model}:
            spec = self.catalog.live_spec(name)
            assert spec is not None
            generators[name] = OpenAIGenerator(spec, runner=runner, on_progress=advance)

        async def every_model() -> list[list[Generation] | BaseException]:
            return await asyncio.gather(*(
                generators[name].agenerate([case for _key, case in pairs], run=run)
                for (name, run), pairs in by_model.items()
            ), return_exceptions=True)

        models = {name for name, _run in by_model}
        self.verdicts.start(f"generating {count(len(live), 'output')} of "
                            f"{count(len(models), 'live model')} "
                            f"({self.services.limits_text()})")
        before = kind_totals(runner, "generate")
        started = time.monotonic()
        try:
            answers = runner.run_sync(every_model)
        except Exception as exc:
            answers = [exc] * len(by_model)
        elapsed = time.monotonic() - started
        self.timings["generate_s"] += elapsed
        after = kind_totals(runner, "generate")
        for ((name, _run), pairs), answer in zip(by_model.items(), answers, strict=True):
            if isinstance(answer, BaseException):
                if not isinstance(answer, Exception):
                    raise answer
                # The call errors are redacted already; an unexpected exception's text is
                # redacted here, since it becomes every pair's message and report reason.
                error = CallqaCallError(generators[name].endpoint.redact(
                    f"callqa: generating outputs of model {name!r} failed: {answer}"))
                self._outputs.update((key, error) for key, _case in pairs)
                continue
            for (key, case), generation in zip(pairs, answer, strict=True):
                self._outputs[key] = self._generated(name, case, generation)
        self.verdicts.finish(f"generated {count(len(live), 'output')} in {elapsed:.2f} s: "
                             f"{call_delta(before, after)}")

    def _generated(self, name: str, case: GoldenCase,
                   generation: Generation) -> ModelOutput | Missing | BaseException:
        if generation.text is not None:
            return ModelOutput(value=parse_output_text(generation.text),
                               usage=dict(generation.usage),
                               source=f"openai:{generation.model}")
        if generation.budget_stopped:
            return Missing(name, case.id, case.task,
                           f"no output of model {name!r} for case {case.id!r}: the budget of "
                           f"${self.settings.budget:g} was spent before it was generated",
                           budget_stopped=True)
        return CallqaCallError(f"callqa: generating the output of model {name!r} for case "
                               f"{case.id!r} failed: {generation.error}")

    # --- results ------------------------------------------------------------------------

    @property
    def scores_up_front(self) -> bool:
        """Whether a request for one result scores every pending pair in one batch: always
        in a single process; in an xdist worker only for the LLM judge (network-bound, and
        the shared cache sends each request once), not for the CPU-bound heuristic judge,
        whose work would be repeated by every worker; never once a test's work was
        interrupted (see the module docstring)."""
        return (not self.host.is_worker or self.settings.llm_judge) and not self._one_by_one

    def resolve_up_front(self) -> None:
        """Before the first test: this process's share of the outputs and judge calls, at
        once (nothing without calls). Raises :class:`PreflightFailed` (see check_endpoints)."""
        if not self.makes_calls:
            return
        outputs = {k: c for k, c in self.pending_outputs.items() if self._ours(k[1])}
        if self.settings.llm_judge:
            self._produce(self._todo(outputs, self._outputs), up_front=True)
            with self._kept_memo():
                self._score(self._todo({k: c for k, c in self.pending.items()
                                        if self._ours(k[1])}, self._results),
                            beside_tests=True)
        else:
            self._produce(self._todo(
                {k: c for k, c in outputs.items()
                 if self.catalog.live_spec(k[0]) is not None}, self._outputs), up_front=True)

    def _todo(self, pairs: Mapping[RunKey, CaseRef],
              done: Mapping[RunKey, Any]) -> dict[RunKey, CaseRef]:
        """The pairs not resolved yet, in collection order: every process batches a case's
        pairs in the same order, so of two identical judgements the same one is charged the
        call with and without xdist."""
        return {k: c for k, c in pairs.items() if k not in done and k not in self.verdicts.judged}

    @contextmanager
    def _kept_memo(self) -> Iterator[None]:
        """The engine's batch memo, kept across this process's evaluations (the tests' own
        thread only: the judge's thread opens scopes of its own)."""
        # Loaded with the engine, which an evaluation loads anyway.
        from ..engine.core.memo import Memo, batch_memo

        if self._memo is None:
            self._memo = Memo(KEPT_MEMO_LIMIT)
        with batch_memo(keep=self._memo):
            yield

    def result(self, model: str, case: CaseRef, run: int = 0) -> TaskResult:
        """The scored result of the pair in ``run``; the first request scores every pending
        pair."""
        with self._kept_memo():
            return self._result(model, case, run)

    def _result(self, model: str, case: CaseRef, run: int) -> TaskResult:
        key = self._result_key(model, case.id, run)
        if key[2] != run:
            return _copied(self._result(model, case, key[2]), run)
        judged = self.verdicts.judged
        if self.verdicts.streaming and key not in self._results:
            # (A pair whose output or preparation failed has its error already.) Only a
            # wait: interrupted, it loses nothing, and the batch goes on for the pair's
            # other tests.
            self.verdicts.wait_for(key)
        with _asked(self, key, self._results):
            if key not in self._results and key not in judged:
                batch = {key: case}
                if self.scores_up_front:
                    # In collection order, whichever pair a test asked for first (see _todo).
                    batch = self._todo(self._with(key, self.pending), self._results)
                    batch.setdefault(key, case)
                self._score(batch)
            if key in judged:
                self._finish_pair(key)
        found = self._results[key]
        if isinstance(found, BaseException):
            raise found
        return found

    def _prepare(self, batch: Mapping[RunKey, CaseRef]) -> dict[RunKey, Prepared]:
        """The first evaluation phase of every pair of ``batch`` that has an output; a pair
        whose output or preparation fails keeps its error as its result."""
        # The engine's evaluation loads with the first result a test asks for.
        from ..engine.evaluate import prepare

        prepared: dict[RunKey, Prepared] = {}
        for key, case in batch.items():
            if key in self._results or key in self.verdicts.judged:
                continue
            try:
                produced = self._output(self._output_key(*key), case)
            except Exception as exc:
                self._results[key] = exc
                continue
            if isinstance(produced, Missing):
                continue
            try:
                prepared[key] = prepare(
                    self.catalog.case(case), produced.value, model=key[0], run=key[2],
                    embedder=self.services.deferred_embedder(), registry=self.services.registry(),
                    benchmarks=self.settings.benchmarks)
            except Exception as exc:
                self._results[key] = exc
        return prepared

    def _score(self, batch: Mapping[RunKey, CaseRef], *, beside_tests: bool = False) -> None:
        """Judge every pair of ``batch`` in one judge batch; each result is finished when a
        test asks for it (an xdist worker needs only some of them). ``beside_tests``: the
        up-front batch, which a single process runs on beside its tests (verdicts.py)."""
        self.verdicts.end_stream()  # one chat runner serves one event loop at a time
        prepared = self._prepare(batch)
        if prepared:
            self.verdicts.judge(prepared, beside_tests=beside_tests and not self.host.is_worker)

    def close(self, *, interrupted: bool = False) -> None:
        """After the last test (see :meth:`Verdicts.close`)."""
        self.verdicts.close(interrupted=interrupted)
        self._memo = None

    def forget(self, model: str, case_id: str) -> None:
        """Drop the pair's outputs and results, every run of them, once no test of this
        process needs them: a process that runs 50,000 tests must not keep 50,000 results.
        Asked again, the pair is produced and scored again."""
        keys = self._case_keys.get(case_id, {})
        for key in [k for k in keys if k[0] == model]:
            del keys[key]
            for store in (self._outputs, self._results, self.verdicts.judged, self.pending,
                          self.pending_outputs):
                store.pop(key, None)
        if not keys:
            self._case_keys.pop(case_id, None)

    def _finish_pair(self, key: RunKey) -> None:
        # Loaded by _prepare already; named here for the last phase.
        from ..engine.evaluate import finish

        prepared, verdicts = self.verdicts.judged.pop(key)
        try:
            result = finish(prepared, verdicts, self.services.judge().name)
        except Exception as exc:
            self._results[key] = exc
            return
        produced = self._outputs[self._output_key(*key)]
        if isinstance(produced, ModelOutput):
            result.usage.update(produced.usage)
        self._results[key] = result


@contextmanager
def _asked(resolver: Resolver, key: RunKey, store: dict[RunKey, Any]) -> Iterator[None]:
    """The work a test asked of ``resolver`` on ``key`` (an output in ``store``, or a
    result), which may be interrupted wherever it stands (see the module docstring)."""
    try:
        yield
    except (Exception, KeyboardInterrupt, SystemExit):
        raise  # an error is kept where it arose; Ctrl-C or an exit stops the run
    except BaseException as exc:
        resolver._one_by_one = True
        if key not in store and key not in resolver.verdicts.judged:
            store[key] = Interrupted(key[0], key[1], exc)
        raise


def _copied(result: TaskResult, run: int) -> TaskResult:
    """Run ``run`` of a pair whose runs cannot differ: the first run's result again."""
    copied = type(result).from_dict(result.to_dict())
    copied.run = run
    copied.copied_run = True
    return copied
