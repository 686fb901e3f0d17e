"""The generator of benchmarks/scale_bench.py: a project with exactly the asked number of
(model, case) outputs, each output beside a case file of its own id."""

from __future__ import annotations

import importlib.util
import json
from pathlib import Path
from types import ModuleType

BENCH = Path(__file__).resolve().parents[2] / "benchmarks" / "scale_bench.py"


def scale_bench() -> ModuleType:
    spec = importlib.util.spec_from_file_location("scale_bench", BENCH)
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def outputs_of(root: Path) -> list[Path]:
    return sorted(p for p in (root / "outputs").rglob("*.json"))


def test_the_generated_project_has_exactly_the_asked_outputs(tmp_path: Path) -> None:
    bench = scale_bench()
    templates = bench.templates()
    per_copy = sum(len(outputs) for _, outputs in templates)
    assert per_copy == 95  # the example project: 32 cases, one output missing
    for size in (7, 95, 96, 250):
        root = tmp_path / str(size)
        cases = bench.generate(root, size)
        outputs = outputs_of(root)
        assert len(outputs) == size
        case_files = sorted((root / "cases").glob("*.json"))
        assert len(case_files) == cases
        ids = [json.loads(p.read_text(encoding="utf-8"))["id"] for p in case_files]
        assert len(set(ids)) == len(ids)
        # Every output belongs to a generated case, and every case has an output.
        assert {p.stem for p in outputs} == set(ids)
    # 96 = one whole copy of the example (95) and the first output of the second copy.
    assert len(list((tmp_path / "96" / "cases").glob("*-s1.json"))) == 1
    assert "callqa_judge = heuristic" in (tmp_path / "7" / "pytest.ini").read_text()


def test_the_bare_reference_has_as_many_trivial_tests(tmp_path: Path) -> None:
    bench = scale_bench()
    bench.generate_bare(tmp_path, 1234)
    source = (tmp_path / "tests" / "test_bare.py").read_text(encoding="utf-8")
    assert "range(1234)" in source
