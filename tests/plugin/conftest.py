"""A small application project, written into a pytester directory, for plugin tests.

Four golden cases (one per call-intelligence task) and recorded outputs of two models:
``alpha`` answers exactly the golden truth, ``beta`` falsely passes a compliance question
(a blocker) and misses an entity. Tests add or break files to set up what they check.

For the LLM judge and live models: ``fake`` starts fake OpenAI-compatible servers (real HTTP
on 127.0.0.1, bounded lifetime), and ``llm`` points the project at one with a distinctive
API key in the environment.
"""

from __future__ import annotations

import copy
import importlib
import json
import re
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest

# pytester's in-process runs restore sys.modules afterwards, and numpy (like other C
# extensions) cannot be imported twice in one process: the engine and what it loads lazily
# are imported once here, so every inner run finds them already loaded.
from pytest_callqa.engine.embeddings import TfidfEmbedder, get_embedder
from pytest_callqa.engine.registry import default_registry

for _module in ("pytest_callqa.assertions", "pytest_callqa.engine.evaluate",
                "pytest_callqa.engine.judges.heuristic", "pytest_callqa.engine.report",
                "pytest_callqa.engine.scorecard",
                # The case loader keeps the YAML loader class it built: a yaml module dropped
                # and imported again would raise errors of classes it no longer catches.
                "yaml"):
    importlib.import_module(_module)
default_registry()
TfidfEmbedder().embed(["warm up the vectoriser import"])
get_embedder("auto").embed(["warm up the auto provider"])

QA_CASE: dict[str, Any] = {
    "id": "qa-refund",
    "task": "qa",
    "tags": ["billing", "refund"],
    "transcript": [
        {"speaker": "agent", "text": "Hello, thanks for calling Northwind, how can I help?"},
        {"speaker": "customer", "text": "I was charged twice for my order."},
        {"speaker": "agent", "text": "I can see the duplicate charge of $40 and I will refund it."},
        {"speaker": "customer", "text": "Thanks, goodbye."},
    ],
    "config": {"questions": [
        {"question_id": "Q1", "text": "Did the agent greet the customer?", "type": "PASS_FAIL",
         "max_score": 5},
        {"question_id": "Q2", "text": "Did the agent verify the customer's identity?",
         "type": "PASS_FAIL", "max_score": 5},
        {"question_id": "Q3", "text": "How well was the refund explained?", "type": "SCORE",
         "max_score": 10},
    ]},
    "expected_outcome": {"questions": [
        {"question_id": "Q1", "score": 5, "max_score": 5, "type": "PASS_FAIL",
         "reason": "Agent opened with \"Hello, thanks for calling Northwind\"."},
        {"question_id": "Q2", "score": 0, "max_score": 5, "type": "PASS_FAIL",
         "reason": "No identity check before \"I will refund it\"."},
        {"question_id": "Q3", "score": 8, "max_score": 10, "type": "SCORE",
         "reason": "Agent said \"I can see the duplicate charge of $40 and I will refund it\"."},
    ]},
}

ENTITY_CASE: dict[str, Any] = {
    "id": "entity-transfer",
    "task": "entity",
    "tags": ["banking"],
    "transcript": [
        {"speaker": "customer", "text": "Please check the balance on my savings account."},
        {"speaker": "agent",
         "text": "The savings balance is $7,686.21. Would you like a transfer?"},
        {"speaker": "customer", "text": "Yes, transfer 720 dollars to checking."},
    ],
    "config": {"keywords": ["balance", "savings", "transfer", "loan"],
               "topics": ["balance_inquiry", "money_transfer", "loan_application"]},
    "expected_outcome": {
        "detected_keywords": ["balance", "savings", "transfer"],
        "detected_topics": ["balance_inquiry", "money_transfer"],
        "valid_entity_set": ["balance", "savings", "transfer", "balance_inquiry",
                             "money_transfer"],
    },
}

TEXT_CASE: dict[str, Any] = {
    "id": "text-appointment",
    "task": "text",
    "tags": ["banking"],
    "transcript": [
        {"speaker": "customer", "text": "hi i would like to schedule an appointment for monday"},
        {"speaker": "agent", "text": "i have scheduled your appointment for monday at eleven"},
        {"speaker": "customer", "text": "thank you so much"},
    ],
    "config": {"sentiment_labels": ["positive", "neutral", "negative"]},
    "expected_outcome": {
        "sentiment": [
            {"sentence_id": 1, "text": "hi i would like to schedule an appointment for monday",
             "label": "neutral"},
            {"sentence_id": 2, "text": "i have scheduled your appointment for monday at eleven",
             "label": "neutral"},
            {"sentence_id": 3, "text": "thank you so much", "label": "positive"},
        ],
        "summary": {
            "call_purpose": "Customer called to schedule an appointment.",
            "highlights": ["Appointment scheduled for monday at eleven"],
            "call_extracted_info": {"appointment_day": "monday", "appointment_time": "eleven"},
        },
        "emotion": {"neutral": 70, "joy": 30, "anger": 0},
    },
}

TRANSLATION_CASE: dict[str, Any] = {
    "id": "translation-fever",
    "task": "translation",
    "tags": ["medical"],
    "transcript": [
        {"speaker": "doctor", "text": "how high is your fever?"},
        {"speaker": "patient", "text": "i had a fever of 102 yesterday"},
    ],
    "config": {"source_language": "en", "target_language": "es"},
    "expected_outcome": {
        "full_translation": "¿cuánto tiene de fiebre? tuve fiebre de 102 ayer",
        "sentence_translations": [
            {"source_id": 1, "source_text": "how high is your fever?",
             "translated_text": "¿cuánto tiene de fiebre?"},
            {"source_id": 2, "source_text": "i had a fever of 102 yesterday",
             "translated_text": "tuve fiebre de 102 ayer"},
        ],
        "domain_terms_handled": [{"term": "fever", "handled_as": "fiebre"}],
        "named_entities_handled": [],
    },
}

CASES = {c["id"]: c for c in (QA_CASE, ENTITY_CASE, TEXT_CASE, TRANSLATION_CASE)}
CASE_DIRS = {"qa": "qa", "entity": "entity", "text": "text", "translation": "translation"}

PYPROJECT = """\
[tool.pytest.ini_options]
addopts = "-p no:cacheprovider"
filterwarnings = ["error"]
callqa_cases = "cases"
callqa_outputs = "outputs"
callqa_embeddings = "tfidf"
"""

# Distinctive, so a search of every file written and of the terminal output proves it never
# leaked.
SECRET = "sk-callqa-plugin-SECRET-4242"

# The scorecard block of the terminal output, from its separator to the next one.
SCORECARD_BLOCK = re.compile(
    r"=+ callqa scorecard =+\n(?P<body>.*?)(?=\n=+ |\ncallqa (?:report|HTML report|markdown "
    r"summary):|\ncallqa gate|\Z)", re.DOTALL)


def beta_outputs() -> dict[str, Any]:
    """``beta``: falsely passes Q2 (a compliance blocker) and misses the 'transfer' keyword."""
    outputs = {cid: copy.deepcopy(case["expected_outcome"]) for cid, case in CASES.items()}
    outputs["qa-refund"]["questions"][1]["score"] = 5
    entity = outputs["entity-transfer"]
    entity["detected_keywords"] = ["balance", "savings"]
    entity["valid_entity_set"] = ["balance", "savings", "balance_inquiry", "money_transfer"]
    return outputs


@dataclass
class MiniProject:
    """The pytester directory as an application repository."""

    pytester: pytest.Pytester
    root: Path
    cases: dict[str, dict[str, Any]] = field(default_factory=lambda: copy.deepcopy(CASES))

    def write_case(self, case: dict[str, Any], name: str | None = None) -> Path:
        path = self.root / "cases" / CASE_DIRS.get(case["task"], "other") / (
            name or f"{case['id']}.json")
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(case, indent=1, ensure_ascii=False), encoding="utf-8")
        return path

    def write_output(self, model: str, case_id: str, output: Any) -> Path:
        path = self.root / "outputs" / model / f"{case_id}.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        text = output if isinstance(output, str) else json.dumps(output, ensure_ascii=False)
        path.write_text(text, encoding="utf-8")
        return path

    def write_usage(self, model: str, usage: dict[str, dict[str, int]]) -> None:
        path = self.root / "outputs" / model / "_usage.json"
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_text(json.dumps(usage), encoding="utf-8")

    def remove_output(self, model: str, case_id: str) -> None:
        (self.root / "outputs" / model / f"{case_id}.json").unlink()

    def write_tests(self, source: str, name: str = "test_eval") -> None:
        self.pytester.makepyfile(**{name: source})

    def with_pytest_cache(self) -> None:
        """Switch pytest's cache back on (the mini project turns it off): --lf and --sw need
        it."""
        (self.root / "pyproject.toml").write_text(
            PYPROJECT.replace('addopts = "-p no:cacheprovider"\n', ""), encoding="utf-8")

    def report(self, path: str = "report.json") -> dict[str, Any]:
        data: dict[str, Any] = json.loads((self.root / path).read_text(encoding="utf-8"))
        return data


@pytest.fixture
def project(pytester: pytest.Pytester) -> MiniProject:
    """Cases for all four tasks; recorded outputs of ``alpha`` (perfect) and ``beta``."""
    pytester.makefile(".toml", pyproject=PYPROJECT)
    mini = MiniProject(pytester=pytester, root=pytester.path)
    for case in CASES.values():
        mini.write_case(case)
        mini.write_output("alpha", case["id"], case["expected_outcome"])
    for case_id, output in beta_outputs().items():
        mini.write_output("beta", case_id, output)
    return mini


def assert_usage_error(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    """The run stops before any test as a usage error, saying ``message`` (a glob)."""
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def scorecard_block(stdout: str) -> str:
    """The scorecard as printed, with the (timing-free) header and footnotes."""
    match = SCORECARD_BLOCK.search(stdout)
    assert match, f"no callqa scorecard in the output:\n{stdout}"
    return match.group("body").rstrip()


@pytest.fixture
def scorecard_of() -> Any:
    """``scorecard_of(stdout)``: the printed scorecard block, header and footnotes included."""
    return scorecard_block


@pytest.fixture
def golden() -> dict[str, Any]:
    """The mini project's cases as engine ``GoldenCase`` objects, by id."""
    from pytest_callqa.engine.core.cases import GoldenCase

    return {cid: GoldenCase.model_validate(case) for cid, case in CASES.items()}


@pytest.fixture
def beta() -> dict[str, Any]:
    """``beta``'s outputs, by case id."""
    return beta_outputs()


@pytest.fixture
def fake(fake: Callable[..., Any]) -> Callable[..., Any]:
    """The shared fake-server factory with a 10 ms latency, so plugin runs see real waits."""

    def start(**options: Any) -> Any:
        options.setdefault("latency", 0.01)
        return fake(**options)

    return start


@pytest.fixture(scope="session")
def _openai_imported() -> None:
    """One real call through the judge before any inner run: the HTTP client imports parts
    of itself lazily, and pytester drops what an inner run imported (numpy-style C
    extensions cannot be imported twice)."""
    from pytest_callqa.engine.core.cases import GoldenCase
    from pytest_callqa.engine.evaluate import evaluate
    from pytest_callqa.engine.generate import OpenAIGenerator
    from pytest_callqa.engine.judges.llm import OpenAIJudge
    from pytest_callqa.snapshot import JudgeRecordExtension  # noqa: F401
    from pytest_callqa.testing import FakeOpenAIServer

    golden = GoldenCase.model_validate(QA_CASE)
    with FakeOpenAIServer(max_lifetime_s=30) as server:
        judge = OpenAIJudge(base_url=server.base_url, api_key="sk-warm-up", timeout=5.0)
        evaluate(golden, golden.expected_outcome, judge=judge, benchmarks=False)
        OpenAIGenerator("m", base_url=server.base_url, api_key="sk-warm-up").generate([golden])


@dataclass
class LLMProject:
    """The mini project judged by the LLM judge behind a fake server."""

    project: MiniProject
    server: Any
    start: Callable[..., Any]
    extra: str = ""

    def serve(self, **options: Any) -> Any:
        """Judge with a new fake server started with ``options`` (faults, replies...)."""
        self.server = self.start(**options)
        self.ini(self.extra)
        return self.server

    @property
    def root(self) -> Path:
        return self.project.root

    def ini(self, extra: str = "") -> None:
        """Point the project's ini file at the fake server (plus ``extra`` lines)."""
        self.extra = extra
        (self.root / "pyproject.toml").write_text(
            PYPROJECT + 'callqa_judge = "openai"\n'
            f'callqa_judge_base_url = "{self.server.base_url}"\n' + extra, encoding="utf-8")

    def cache_entries(self) -> list[Path]:
        return sorted((self.root / ".callqa_cache").glob("??/*.json"))


@pytest.fixture
def llm(project: MiniProject, fake: Callable[..., Any], monkeypatch: pytest.MonkeyPatch,
        _openai_imported: None) -> LLMProject:
    """The mini project with ``callqa_judge = "openai"`` against a fresh fake server, and
    ``OPENAI_API_KEY`` set to :data:`SECRET` (inherited by subprocess runs)."""
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    setup = LLMProject(project, fake(), fake)
    setup.ini()
    return setup
