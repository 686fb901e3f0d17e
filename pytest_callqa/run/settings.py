"""What a run is configured with, and the plain values its rooms pass around.

Standard library only: the plugin builds :class:`Settings` while it reads its options, at
start-up, before anything heavy is imported.
"""

from __future__ import annotations

import os
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..engine.core.defaults import (
    DEFAULT_CALIBRATION_MODEL,
    DEFAULT_CONCURRENCY,
    DEFAULT_JUDGE_MODEL,
    DEFAULT_LOCAL_CTX,
    DEFAULT_LOCAL_PARALLEL,
    DEFAULT_MIN_KAPPA,
    DEFAULT_RESPONSE_FORMAT,
    DEFAULT_TIMEOUT_S,
)
from ..engine.core.urls import base_url_start
from ..engine.pricing import PriceTable

if TYPE_CHECKING:
    from ..engine.llm.endpoint import ModelSpec

# The drop a metric on a 0–1 scale may take against a baseline before it can regress.
DEFAULT_REGRESSION_TOLERANCE = 0.02
# How far (a share of the metric's scale) a verdict's judge repeats may spread unflagged.
DEFAULT_REPEAT_TOLERANCE = 0.25

Pair = tuple[str, str]


class CallqaUsageError(Exception):
    """A configuration problem found while collecting evaluation tests."""


class CallqaCallError(Exception):
    """A judge or generation call failed for good (a rejected key, an unknown model, retries
    exhausted). The message comes from the engine, which redacts the API key."""


def judge_unusable(why: object) -> CallqaCallError:
    """The error of every test that needs a judge that cannot be used, and why (redacted)."""
    return CallqaCallError(f"callqa: the judge cannot be used: {why}")


@dataclass(frozen=True)
class Settings:
    """The resolved ``--callqa-*`` options (command line over ini file over default)."""

    cases: Path | None = None
    outputs: Path | None = None
    models: tuple[str, ...] = ()
    judge: str = "heuristic"
    judge_model: str | None = None
    judge_base_url: str | None = None
    judge_mode: str = "combined"
    judge_response_format: str = DEFAULT_RESPONSE_FORMAT
    judge_max_input_tokens: int | None = None
    concurrency: int = DEFAULT_CONCURRENCY
    rpm: int | None = None
    timeout: float = DEFAULT_TIMEOUT_S
    cache: str = "rw"
    cache_dir: Path | None = None
    budget: float | None = None
    embeddings: str = "auto"
    report: Path | None = None
    missing: str = "skip"
    prices: PriceTable = field(default_factory=PriceTable)
    benchmarks: bool = True
    disqualify_tolerance: int = 0
    preflight: bool = True
    baseline: Path | None = None
    baseline_mode: str = "fail"
    regression_tolerance: float = DEFAULT_REGRESSION_TOLERANCE
    html: Path | None = None
    markdown: Path | None = None
    # (index, count), 1-based: this run evaluates only the pairs of that shard.
    shard: tuple[int, int] | None = None
    # (where it was read, its [tool.callqa] table), applied in order to the registry.
    policies: tuple[tuple[str, dict[str, Any]], ...] = ()
    # Judge calibration against the cases' human_labels (docs/calibration.md).
    calibrate: bool = False
    min_kappa: float = DEFAULT_MIN_KAPPA
    calibration_model: str = DEFAULT_CALIBRATION_MODEL
    # Repeated runs: each (model, case) N times, a test's runs decided by the pass rule.
    runs: int = 1
    pass_rule: str = "all"
    # Judge asks per verdict, and how far they may spread before the verdict is flagged.
    judge_repeats: int = 1
    judge_repeat_tolerance: float = DEFAULT_REPEAT_TOLERANCE
    # The local judge (``judge="local"``): the .gguf file its server loads (``judge_model``
    # is then the name it is served under), the server's context window, threads (None:
    # every core) and the requests sent to it at once.
    local_model: Path | None = None
    local_ctx: int = DEFAULT_LOCAL_CTX
    local_threads: int | None = None
    local_parallel: int = DEFAULT_LOCAL_PARALLEL

    @property
    def llm_judge(self) -> bool:
        """Whether a language model judges (a hosted endpoint or the local server)."""
        return self.judge in ("openai", "local")

    @property
    def local_judge(self) -> bool:
        return self.judge == "local"

    @property
    def judge_model_name(self) -> str:
        """The LLM judge's model: the configured one, else the default."""
        return self.judge_model or DEFAULT_JUDGE_MODEL


# The key of a test's payload naming the pair an error left without a result.
ERROR_PAYLOAD = "error"
# The most runs of a (model, case) pair: every run's result is held until the test ends, so
# a mistyped count (a billion) would hang the run instead of measuring anything.
MAX_RUNS = 1000
# The key of a test's payload naming the runs of its pair that could not be produced.
UNPRODUCED_PAYLOAD = "unproduced_runs"
# ... and the runs the test skipped (numbered from 0): they have no outcome of its own.
SKIPPED_RUNS = "skipped_runs"


@dataclass(frozen=True)
class Missing:
    """No output exists for a (model, case) pair; ``reason`` says where it was looked for.
    ``budget_stopped``: a live model's generation the spent budget stopped. The task is the
    case's: the scorecard counts the pair among its task's cases whose result is unknown."""

    model: str
    case_id: str
    task: str
    reason: str
    budget_stopped: bool = False

    def to_dict(self) -> dict[str, Any]:
        return {"model": self.model, "case_id": self.case_id, "task": self.task,
                "reason": self.reason, "budget_stopped": self.budget_stopped}


class _Live:
    """What the plugin's own ``pytest_callqa_generate`` answers for a live model: the output
    is generated with every other pending pair's, in one concurrent batch."""

    def __repr__(self) -> str:
        return "LIVE"


LIVE = _Live()


def display_path(path: Path, root: Path) -> str:
    """``path`` relative to ``root`` when it lies below it (stable across machines)."""
    try:
        return path.resolve().relative_to(root.resolve()).as_posix()
    except ValueError:
        return path.as_posix()


def from_root(path: Path, root: Path) -> str:
    """``path`` relative to ``root``, even outside it (``../shared/cases``): the same in
    every checkout of the project, where the absolute path is not."""
    return os.path.relpath(path.resolve(), root.resolve()).replace(os.sep, "/")


def live_entry(entry: str) -> ModelSpec | None:
    """The live model an entry of ``callqa_models`` names, or None for a recorded model.

    Raises ``ValueError`` for an entry that names no model.
    """
    # ``name=model@base_url`` or ``model@base_url``. A URL, even a mistyped one, is never
    # a directory of recorded outputs: read as live, it is refused without being repeated.
    if "=" not in entry and "://" not in entry and base_url_start(entry) is None:
        return None
    # Only a live model entry pays for the endpoint module, even a light one.
    from ..engine.llm.endpoint import ModelSpec

    return ModelSpec.parse(entry)


def model_name(entry: str) -> str:
    """The name a ``callqa_models`` entry gives its model: a live model's ``name=``, a
    recorded model's directory; an unusable entry is its own name, matching no other."""
    try:
        spec = live_entry(entry)
    except ValueError:
        return entry
    return entry if spec is None else spec.name


def count(n: float, noun: str) -> str:
    """``n noun`` with the noun in the plural unless ``n`` is 1."""
    return f"{n:g} {noun}{'' if n == 1 else 's'}"
