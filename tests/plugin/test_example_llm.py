"""The example project judged by the LLM judge against a fake server that answers the
request's JSON schema: the conversation family scores every turn from the reply (the combined
case included), never with the fallback for a reply without its scores."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

from pytest_callqa.engine.loading import load_case_file

EXAMPLE = Path(__file__).resolve().parents[2] / "example_project"


def test_the_example_conversations_need_no_fallback(fake: Callable[..., Any],
                                                     tmp_path: Path) -> None:
    server = fake()
    report = tmp_path / "report.json"
    env = {**os.environ, "OPENAI_API_KEY": "sk-example-test"}
    env.pop("OPENAI_BASE_URL", None)
    run = subprocess.run(
        [sys.executable, "-m", "pytest", "-m", "eval", "-k", "conversation", "-q",
         "-p", "no:cacheprovider", "--callqa-judge", "openai",
         f"--callqa-judge-base-url={server.base_url}", "--callqa-cache", "off",
         f"--callqa-report={report}"],
        cwd=EXAMPLE, env=env, capture_output=True, text=True, timeout=300)
    assert report.exists(), run.stdout[-2000:] + run.stderr[-2000:]
    data = json.loads(report.read_text(encoding="utf-8"))
    cases = [c for c in data["cases"] if c["task"] == "conversation"]
    assert len(cases) == 9 and server.requests > 0
    [combined] = load_case_file(
        EXAMPLE / "cases" / "conversation" / "conversation-abcd-9489-refund-status.yaml")
    assert combined.config["combined"] is True
    for case in cases:
        assert case["judge_errors"] == []
        for metric_id in ("intelligibility", "segmentation", "context"):
            metric = case["metrics"][metric_id]
            assert metric["scored"] and not metric["flagged"], (case["case_id"], metric)
    assert "conservative" not in run.stdout
