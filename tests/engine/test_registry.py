"""The registry read directly: the built-in tasks in the scorecard's order, custom metrics and
overrides, and the errors that name what was wrong."""

from __future__ import annotations

import dataclasses
import subprocess
import sys

import pytest

from pytest_callqa.engine.core.metrics import Bands, MetricSpec
from pytest_callqa.engine.registry import Registry, builtin_tasks, default_registry
from pytest_callqa.engine.tasks.benchmark_specs import BENCHMARK_IDS

ORDER = ["qa", "entity", "text", "translation", "agent", "conversation", "extraction",
         "grounding"]


def _custom(task: str = "qa", metric_id: str = "politeness") -> MetricSpec:
    return MetricSpec(id=metric_id, task=task, name="Politeness", description="d",
                      scale="0-1", threshold=">= 0.5", bands=Bands(good=0.5))


def _compute(ctx, result):
    return 1.0


def test_builtin_tasks_come_in_the_scorecards_order() -> None:
    assert [t.name for t in builtin_tasks()] == ORDER
    assert list(default_registry().tasks) == ORDER
    assert default_registry() is default_registry()


def test_registering_a_task_twice_is_refused() -> None:
    registry = default_registry().copy()
    with pytest.raises(ValueError, match=r"^task 'qa' is already registered$"):
        registry.register_task(builtin_tasks()[0])


def test_an_unknown_task_names_the_known_ones() -> None:
    registry = default_registry().copy()
    known = ", ".join(sorted(ORDER))
    with pytest.raises(KeyError, match=f"unknown task 'sales' \\(known: {known}\\)"):
        registry.task("sales")
    with pytest.raises(ValueError, match=f"^metric 'politeness': unknown task 'sales' "
                                         f"\\(known: {known}\\)$"):
        registry.register_metric(_custom(task="sales"), _compute)


def test_a_custom_metric_is_listed_after_the_tasks_own() -> None:
    registry = default_registry().copy()
    registry.register_metric(_custom(), _compute)
    ids = [m.id for m in registry.metrics_for("qa")]
    assert ids[-1] == "politeness"
    assert ids[:-1] == [m.id for m in builtin_tasks()[0].metrics]
    assert [c.spec.id for c in registry.custom["qa"]] == ["politeness"]
    assert registry.custom["qa"][0].compute is _compute
    assert registry.metric("qa", "politeness").name == "Politeness"
    assert "politeness" in {m.id for m in registry.all_metrics()}


@pytest.mark.parametrize("metric_id", ["politeness", "question_score_accuracy"])
def test_a_metric_id_already_in_the_task_is_refused(metric_id: str) -> None:
    registry = default_registry().copy()
    registry.register_metric(_custom(), _compute)
    with pytest.raises(ValueError, match=f"^metric '{metric_id}' is already registered for "
                                         "task 'qa'$"):
        registry.register_metric(_custom(metric_id=metric_id), _compute)


@pytest.mark.parametrize("task", ["qa", "sales"])
@pytest.mark.parametrize("metric_id", BENCHMARK_IDS)
def test_a_custom_metric_may_not_take_a_benchmarks_id(task: str, metric_id: str) -> None:
    # exact_match registered for qa was accepted, and its values replaced the benchmark's in
    # every result: the Benchmark Score and Final Score A were the custom metric's.
    registry = default_registry().copy()
    registry.register_task(_FakeTask(name="sales"))
    with pytest.raises(ValueError) as info:
        registry.register_metric(_custom(task=task, metric_id=metric_id), _compute)
    assert str(info.value) == (f"metric {metric_id!r} is already registered as a built-in "
                               "benchmark (Layer 2)")
    assert registry.custom == {}


def test_a_task_may_not_define_a_benchmarks_metric() -> None:
    registry = Registry()
    own = _FakeTask(name="sales", metrics=(_custom(task="sales", metric_id="politeness"),
                                           _custom(task="sales", metric_id="faithfulness")))
    with pytest.raises(ValueError) as info:
        registry.register_task(own)
    assert str(info.value) == ("task 'sales': metric 'faithfulness' is already registered as a "
                               "built-in benchmark (Layer 2)")
    assert list(registry.tasks) == []


def test_no_metric_may_take_the_task_scores_name() -> None:
    # A custom metric "score" was gated as the task score (its direction and tolerance on the
    # task's score, the task's score compared as its values): an improvement failed the gate.
    message = ("metric id 'score' is the task score's name in the gate and the reports; give "
               "the metric another id")
    registry = default_registry().copy()
    with pytest.raises(ValueError) as info:
        registry.register_metric(_custom(task="text", metric_id="score"), _compute)
    assert str(info.value) == message
    assert registry.custom == {}
    own = _FakeTask(name="sales", metrics=(_custom(task="sales", metric_id="score"),))
    with pytest.raises(ValueError) as info:
        Registry().register_task(own)
    assert str(info.value) == f"task 'sales': {message}"


def test_an_unknown_metric_is_a_key_error_naming_task_and_metric() -> None:
    with pytest.raises(KeyError, match="task 'qa' has no metric 'tone'"):
        default_registry().metric("qa", "tone")


def test_an_override_replaces_the_definition_everywhere_and_records_its_origin() -> None:
    registry = default_registry().copy()
    spec = registry.metric("qa", "question_score_accuracy")
    stricter = dataclasses.replace(spec, bands=Bands(good=0.95))
    registry.override(stricter, "pyproject.toml")
    assert registry.metric("qa", "question_score_accuracy") is stricter
    assert stricter in list(registry.metrics_for("qa"))
    assert stricter in list(registry.all_metrics())
    assert registry.origin("qa", "question_score_accuracy") == "pyproject.toml"
    assert registry.origin("qa", "score_gap_accuracy") == "built-in"
    assert registry.overrides == {("qa", "question_score_accuracy"): stricter}


def test_overriding_an_unknown_metric_is_refused_and_changes_nothing() -> None:
    registry = default_registry().copy()
    with pytest.raises(KeyError, match="task 'qa' has no metric 'tone'"):
        registry.override(_custom(metric_id="tone"), "policy.toml")
    assert (registry.overrides, registry.origins) == ({}, {})


def test_a_copy_is_independent_of_its_original() -> None:
    original = default_registry().copy()
    original.register_metric(_custom(), _compute)
    original.pass_bars["qa"] = 0.8
    original.tolerances["qa.question_score_accuracy"] = 0.02
    spec = original.metric("qa", "score_gap_accuracy")
    original.override(dataclasses.replace(spec, threshold=">= 0.9"), "policy.toml")

    twin = original.copy()
    assert twin.tasks == original.tasks and twin.tasks is not original.tasks
    assert [c.spec.id for c in twin.custom["qa"]] == ["politeness"]
    assert twin.pass_bars == {"qa": 0.8}
    assert twin.tolerances == {"qa.question_score_accuracy": 0.02}
    assert twin.origin("qa", "score_gap_accuracy") == "policy.toml"
    assert twin.metric("qa", "score_gap_accuracy").threshold == ">= 0.9"

    twin.register_metric(_custom(metric_id="empathy"), _compute)
    twin.pass_bars["entity"] = 0.5
    twin.tolerances["x"] = 0.1
    twin.override(dataclasses.replace(spec, threshold=">= 0.7"), "other.toml")
    twin.register_task(_FakeTask(name="sales"))
    assert [c.spec.id for c in original.custom["qa"]] == ["politeness"]
    assert original.pass_bars == {"qa": 0.8}
    assert original.tolerances == {"qa.question_score_accuracy": 0.02}
    assert original.origin("qa", "score_gap_accuracy") == "policy.toml"
    assert original.metric("qa", "score_gap_accuracy").threshold == ">= 0.9"
    assert "sales" not in original.tasks
    # The shared built-in registry is never touched by a copy.
    assert default_registry().custom == {} and default_registry().overrides == {}


@dataclasses.dataclass
class _FakeTask:
    name: str = "fake"
    metrics: tuple = ()


def test_a_family_is_imported_when_first_looked_up() -> None:
    # A fresh interpreter: what a QA-only run loads, and that a lookup loads the family.
    script = (
        "import sys\n"
        "from pytest_callqa.engine.registry import default_registry\n"
        "registry = default_registry()\n"
        f"assert list(registry.tasks) == {ORDER!r}\n"
        "assert 'pytest_callqa.engine.tasks.agent' not in sys.modules\n"
        "assert registry.task('qa').name == 'qa'\n"
        "assert 'pytest_callqa.engine.tasks.agent' not in sys.modules\n"
        "copy = registry.copy()\n"
        "assert copy.task('agent') is registry.task('agent')\n"
        "assert 'pytest_callqa.engine.tasks.agent' in sys.modules\n"
        "print('checked')\n"
    )
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True,
                          timeout=60, check=False)
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "checked"
