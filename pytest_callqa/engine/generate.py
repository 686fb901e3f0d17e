"""Live model outputs: ask an OpenAI-compatible model to perform a golden case's task.

The built-in generator has one default prompt per call-intelligence task (qa, entity, text,
translation), each asking for exactly the task's JSON structure — described from the task's
output model, so prompt and scoring cannot drift apart. The prompt never contains the
expected outcome, but for the scale a task's ``prompt_config`` fills in (a QA question's
omitted type and max_score). Teams with their own production prompt replace it
(``prompts=`` here, or the plugin's ``pytest_callqa_generate`` hook).

Generation shares :class:`~.judges.transport.ChatRunner` with the judge: same concurrency,
rate limit, cache, budget and cost accounting. A generated reply is never re-asked or
repaired: the raw text is what gets scored, including its structure.
"""

from __future__ import annotations

import asyncio
import functools
import json
import types
import typing
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union, get_args, get_origin

from pydantic import BaseModel

from .core.cases import GoldenCase
from .core.defaults import (
    DEFAULT_CONCURRENCY,
    DEFAULT_GENERATION_TIMEOUT_S,
    DEFAULT_RESPONSE_FORMAT,
)
from .llm.budget import bound_param
from .llm.cache import JudgeCache
from .llm.endpoint import Endpoint, ModelSpec, first_error
from .llm.formats import FormatLadder, call_structured, reply_max_tokens, response_format_param
from .llm.transport import ChatOutcome, ChatRequest, ChatRunner
from .llm.windows import count_tokens, input_limit, too_large
from .pricing import PriceTable
from .registry import default_registry
from .tasks.base import BaseTask
from .tasks.instructions import COMMON_RULES, TASK_INSTRUCTIONS

GENERATION_PROMPT_VERSION = "callqa-generate-2025.1"
PromptBuilder = Callable[[GoldenCase], list[dict[str, str]]]


# --- output structure descriptions ---------------------------------------------------------


def describe_type(annotation: Any, indent: int = 0) -> str:
    """A compact JSON-like picture of a pydantic field type, for a prompt."""
    origin = get_origin(annotation)
    pad = "  " * indent
    if isinstance(annotation, type) and issubclass(annotation, BaseModel):
        fields = [
            f'{pad}  "{name}": {describe_type(info.annotation, indent + 1)}'
            for name, info in annotation.model_fields.items()
        ]
        return "{\n" + ",\n".join(fields) + f"\n{pad}}}"
    if origin is Literal:
        return " | ".join(json.dumps(v) for v in get_args(annotation))
    if origin in (Union, types.UnionType):
        options = [a for a in get_args(annotation) if a is not type(None)]
        text = " or ".join(describe_type(a, indent) for a in options)
        return f"{text} or null" if len(options) < len(get_args(annotation)) else text
    if origin is list:
        (item,) = get_args(annotation) or (Any,)
        return f"[{describe_type(item, indent)}, ...]"
    if origin is dict:
        _key, value = get_args(annotation) or (str, Any)
        if value is Any:
            return "{<key>: <value>, ...} (an object; keys of your choosing)"
        return f"{{<key>: {describe_type(value, indent)}, ...}}"
    if origin is typing.Annotated:
        return describe_type(get_args(annotation)[0], indent)
    names = {str: "string", int: "integer", float: "number", bool: "true or false"}
    if annotation in names:
        return names[annotation]
    return "any JSON value"


def output_structure(task: str) -> str:
    return describe_type(default_registry().task(task).output_model)


def generation_max_tokens(task: str, messages: Sequence[Mapping[str, str]]) -> int:
    """``max_tokens`` of a generation call: the output schema's skeleton (each list one item
    long) plus twice the tokens of the inputs, since an output can restate the call (a
    translation does, turn by turn); at most :data:`~.llm.formats.MAX_REPLY_TOKENS`."""
    inputs, _method = count_tokens([m for m in messages if m.get("role") != "system"],
                                   estimate=True)
    return reply_max_tokens(output_schema(task), array_items=1, extra=2 * inputs)


@functools.cache
def output_schema(task: str) -> dict[str, Any]:
    """The JSON Schema of the task's output, sent as the response format."""
    schema: dict[str, Any] = default_registry().task(task).output_model.model_json_schema()
    return schema


# --- default prompts -----------------------------------------------------------------------

class NoPrompt(ValueError):
    """A case whose task has no built-in generation prompt: its pair cannot be generated."""


def default_messages(case: GoldenCase) -> list[dict[str, str]]:
    """The built-in prompt for ``case``'s task; the expected outcome is never included."""
    instructions = TASK_INSTRUCTIONS.get(case.task)
    if instructions is None:
        known = ", ".join(sorted(TASK_INSTRUCTIONS))
        raise NoPrompt(
            f"no default generation prompt for task {case.task!r} (built in: {known}); "
            "generate its outputs with a pytest_callqa_generate hook or pass prompts="
        )
    system = instructions + "\n\n" + COMMON_RULES.format(structure=output_structure(case.task))
    turns = []
    for n, turn in enumerate(case.transcript, start=1):
        entry: dict[str, Any] = {"n": n, "speaker": turn.speaker, "text": turn.text}
        if turn.start is not None:
            entry["start_s"] = turn.start
        turns.append(entry)
    task = default_registry().task(case.task)
    # A project's own task spec has no prompt_config: its config is shown as written.
    config = task.prompt_config(case) if isinstance(task, BaseTask) else case.config
    inputs = {"task": case.task, "config": config, "transcript": turns}
    return [
        {"role": "system", "content": system},
        {"role": "user", "content": json.dumps(inputs, ensure_ascii=False)},
    ]


# --- the generator -------------------------------------------------------------------------


@dataclass
class Generation:
    """A model's reply for one case: the raw ``text`` (None when the call failed, with
    ``error`` saying why) and its ``usage`` (tokens, ``cost_usd`` when the price is known)."""

    case_id: str
    model: str
    text: str | None
    error: str | None = None
    usage: dict[str, float] = field(default_factory=dict)
    cached: bool = False
    budget_stopped: bool = False


class OpenAIGenerator:
    """Produces live outputs of one model for golden cases.

    ``model`` is a served model id or a :class:`ModelSpec` (``parse`` one from
    ``name=model@base_url``). ``response_format`` is ``auto`` (the task's output schema as
    ``json_schema``, stepping down to ``json_object`` with the schema, to ``json_object``, then
    to the prompt alone when the endpoint refuses it) or one of those fixed. Every call
    carries ``max_tokens`` (:func:`generation_max_tokens`). ``prompts`` maps a
    task to a function building its messages, replacing the default. The remaining arguments
    build a :class:`ChatRunner` when ``runner`` is not given; ``on_progress(done, total)``
    is called as calls finish.
    """

    def __init__(
        self,
        model: str | ModelSpec,
        base_url: str | None = None,
        api_key: str | None = None,
        *,
        temperature: float = 0.0,
        response_format: str = DEFAULT_RESPONSE_FORMAT,
        prompts: Mapping[str, PromptBuilder] | None = None,
        runner: ChatRunner | None = None,
        concurrency: int = DEFAULT_CONCURRENCY,
        rpm: int | None = None,
        cache: JudgeCache | None = None,
        budget_usd: float | None = None,
        prices: PriceTable | None = None,
        timeout: float = DEFAULT_GENERATION_TIMEOUT_S,
        max_retries: int = 4,
        run_id: str | None = None,
        on_progress: Callable[[int, int], None] | None = None,
    ) -> None:
        spec = model if isinstance(model, ModelSpec) else ModelSpec(model, model, base_url)
        self.spec = spec
        self.name = spec.name
        self.model = spec.model
        self.endpoint = Endpoint(spec.model, base_url or spec.base_url, api_key)
        self.temperature = temperature
        self.formats = FormatLadder(response_format)
        self.prompts: dict[str, PromptBuilder] = dict(prompts or {})
        self.runner = runner or ChatRunner(
            concurrency=concurrency, rpm=rpm, cache=cache, budget_usd=budget_usd,
            prices=prices, timeout=timeout, max_retries=max_retries, reasks=0, run_id=run_id,
        )
        self.runner.require_price(spec.model)
        self.on_progress = on_progress

    def __repr__(self) -> str:
        return (f"OpenAIGenerator(name={self.name!r}, model={self.model!r}, "
                f"base_url={self.endpoint.display_url!r})")

    def messages(self, case: GoldenCase) -> list[dict[str, str]]:
        builder = self.prompts.get(case.task, default_messages)
        return builder(case)

    def request(self, case: GoldenCase, run: int = 0, fmt: str | None = None) -> ChatRequest:
        """The chat request for ``case`` in response format ``fmt`` (the endpoint's current
        one by default)."""
        messages = self.messages(case)
        params: dict[str, Any] = {"temperature": self.temperature,
                                  **bound_param(self.model,
                                                generation_max_tokens(case.task, messages))}
        chosen = response_format_param(
            fmt or self.formats.current(self.endpoint), f"callqa_{case.task}_output",
            output_schema(case.task), strict=False)
        if chosen is not None:
            params["response_format"] = chosen
        if run:
            # A later run is a sample of its own where the server takes a seed (one that
            # refuses it is asked again without).
            params["seed"] = run
        # Repeated runs (the consistency benchmark) must be separate calls, not one reply
        # read back from the cache N times.
        return ChatRequest(messages=messages, params=params, kind="generate",
                           version=GENERATION_PROMPT_VERSION, variant={"run": run})

    def generate(self, cases: Sequence[GoldenCase], *, run: int = 0) -> list[Generation]:
        """Outputs for ``cases`` (in order), all calls concurrent under the runner's limits."""
        if not cases:
            return []
        return self.runner.run_sync(lambda: self.agenerate(cases, run=run))

    async def agenerate(self, cases: Sequence[GoldenCase], *, run: int = 0) -> list[Generation]:
        done = 0

        async def one(case: GoldenCase) -> ChatOutcome:
            nonlocal done
            try:
                refusal = too_large(self.messages(case), self.model, input_limit(self.model),
                                    f"the generation call for case {case.id!r}")
            except NoPrompt as exc:
                # That case's pair alone: raised, it cancelled the model's whole batch, and
                # every pair of the model errored (under xdist, those of one worker's share).
                refusal = str(exc)
            if refusal is not None:
                outcome = ChatOutcome(content=None, error=refusal)
            else:
                outcome = await call_structured(
                    self.runner, self.endpoint, self.formats,
                    lambda fmt: self.request(case, run, fmt))
            done += 1
            if self.on_progress is not None:
                self.on_progress(done, len(cases))
            return outcome

        try:
            async with self.runner.session(), asyncio.TaskGroup() as group:
                tasks = [group.create_task(one(case)) for case in cases]
        except BaseExceptionGroup as failed:
            # A configuration error (bad key, unknown model) stops the batch; report it as
            # itself, not wrapped in the task group's exception group.
            raise first_error(failed) from None
        return [self._generation(case, task.result())
                for case, task in zip(cases, tasks, strict=True)]

    def _generation(self, case: GoldenCase, outcome: ChatOutcome) -> Generation:
        usage = {k: v for k, v in outcome.usage.items() if k != "cached"}
        error = outcome.error
        if error is None and outcome.truncated:
            # The bound is this tool's estimate (twice the input, at most MAX_REPLY_TOKENS):
            # a long call's translation can need more, and an output cut there is the
            # tool's limit, not the model's answer.
            error = ("the output stopped at the completion bound this tool set for the call "
                     "(finish_reason: length) before it ended, so it is not scored")
        return Generation(
            case_id=case.id, model=self.name,
            text=outcome.content if error is None else None,
            error=None if error is None else f"{self.name}: {error}",
            usage=usage, cached=outcome.cached, budget_stopped=outcome.budget_stopped,
        )

    def usage_summary(self) -> dict[str, Any]:
        return {"name": self.name, "model": self.model,
                **self.runner.usage(self.model, "generate").to_dict()}
