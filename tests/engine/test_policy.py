"""The policy at the engine level: each rule's exact effect on a metric's bands, blocker and
threshold text, and the exact error for each kind of bad entry. The plugin tests
(tests/plugin/test_policy.py) show the same policy reaching ratings, helpers and the gate."""

from __future__ import annotations

import math

import pytest

from pytest_callqa.engine.core.metrics import Bands, MetricSpec
from pytest_callqa.engine.policy import PolicyError, apply_policy, scale_range
from pytest_callqa.engine.registry import Registry, builtin_tasks, default_registry

ORIGIN = "team.toml"


def applied(metrics: dict | None = None, tasks: dict | None = None) -> Registry:
    registry = default_registry().copy()
    policy: dict = {}
    if metrics is not None:
        policy["metrics"] = metrics
    if tasks is not None:
        policy["tasks"] = tasks
    apply_policy(registry, policy, ORIGIN)
    return registry


def refused(metrics: dict | None = None, tasks: dict | None = None, **other: object) -> str:
    policy: dict = dict(other)
    if metrics is not None:
        policy["metrics"] = metrics
    if tasks is not None:
        policy["tasks"] = tasks
    with pytest.raises(PolicyError) as raised:
        apply_policy(default_registry().copy(), policy, ORIGIN)
    return str(raised.value)


@pytest.mark.parametrize(("task", "metric", "expected"), [
    ("qa", "question_score_accuracy", (0.0, 1.0)),             # "0-1"
    ("agent", "tool_routing", (0.0, 5.0)),                     # "0-5"
    ("agent", "overall_score", (0.0, 100.0)),                  # "0-100"
    ("conversation", "intelligibility", (0.0, 1.0)),           # "1-5 → 0-1": the last range
    ("extraction", "aspect_granularity", (1.0, 5.0)),          # "1-5"
    ("entity", "fabricated_entity_count", (0.0, math.inf)),    # "count"
    ("qa", "compliance_false_pass_rate", (0.0, 1.0)),          # "rate"
])
def test_scale_range(task: str, metric: str, expected: tuple[float, float]) -> None:
    assert scale_range(default_registry().metric(task, metric)) == expected


def test_a_threshold_moves_the_good_edge_and_keeps_the_acceptable_band() -> None:
    spec = applied({"question_score_accuracy": {"threshold": 0.97}}).metric(
        "qa", "question_score_accuracy")
    assert spec.bands == Bands(good=0.97, acceptable=0.9, blocker=None, higher_is_better=True)
    assert spec.blocker is False
    assert spec.threshold == ">= 0.97"
    assert [spec.rate(v) for v in (0.97, 0.96, 0.9, 0.89)] == [
        "good", "acceptable", "acceptable", "fail"]


def test_a_threshold_under_the_built_in_acceptable_edge_drops_that_band() -> None:
    spec = applied({"qa.question_score_accuracy": {"threshold": 0.85}}).metric(
        "qa", "question_score_accuracy")
    assert spec.bands == Bands(good=0.85, acceptable=None, blocker=None)
    assert spec.rate(0.84) == "fail"


def test_threshold_and_acceptable_and_blocker_together() -> None:
    spec = applied({"keyword_f1": {"threshold": 0.95, "acceptable": 0.9, "blocker": True}}).metric(
        "entity", "keyword_f1")
    assert spec.bands == Bands(good=0.95, acceptable=0.9, blocker=0.9, higher_is_better=True)
    assert spec.blocker is True
    assert spec.threshold == ">= 0.95 | < 0.9 blocker"
    assert [spec.rate(v) for v in (0.95, 0.9, 0.899)] == ["good", "acceptable", "blocker"]


def test_a_blocker_without_an_acceptable_band_sits_at_the_threshold() -> None:
    spec = applied({"cross_language_match_rate": {"blocker": True}}).metric(
        "entity", "cross_language_match_rate")
    assert spec.bands == Bands(good=0.9, acceptable=None, blocker=0.9)
    assert spec.threshold == ">= 0.9 | < 0.9 blocker"


def test_a_lower_is_better_metric_keeps_its_direction() -> None:
    spec = applied({"compliance_false_pass_rate": {"threshold": 0.02, "acceptable": 0.05}}).metric(
        "qa", "compliance_false_pass_rate")
    assert spec.bands == Bands(good=0.02, acceptable=0.05, blocker=0.05, higher_is_better=False)
    # A rate's bars in percent, as its value is shown ("20.0% … > 0.05 blocker" read as a
    # bar of 0.05 %).
    assert spec.threshold == "<= 2% | > 5% blocker"
    assert [spec.rate(v) for v in (0.02, 0.05, 0.051)] == ["good", "acceptable", "blocker"]


def test_an_unedited_blocker_keeps_its_built_in_edge() -> None:
    # fabrication_free_rate blocks below 0.97 while acceptable is 0.98: naming only
    # ``blocker = true`` must not move that edge to 0.98.
    spec = applied({"fabrication_free_rate": {"blocker": True}}).metric(
        "text", "fabrication_free_rate")
    assert spec.bands == Bands(good=1.0, acceptable=0.98, blocker=0.97)
    assert spec.threshold == ">= 1 | < 0.97 blocker"


def test_blocker_false_takes_the_blocker_away() -> None:
    spec = applied({"config_adherence": {"blocker": False}}).metric("entity", "config_adherence")
    assert spec.bands == Bands(good=1.0, acceptable=0.95, blocker=None)
    assert spec.blocker is False
    assert spec.threshold == ">= 1"
    assert spec.rate(0.5) == "fail"


def test_a_metric_without_bands_gets_the_top_of_its_scale_as_its_bar() -> None:
    spec = applied({"summary_score": {"acceptable": 0.6}}).metric("text", "summary_score")
    assert spec.bands == Bands(good=1.0, acceptable=0.6, blocker=None)


def test_disabled_removes_the_rating_the_blocker_and_the_row() -> None:
    spec = applied({"highlight_recall": {"disabled": True}}).metric("text", "highlight_recall")
    assert spec.bands is None
    assert spec.blocker is False
    assert spec.shown is False
    assert spec.threshold == "disabled by policy"


def test_disabled_false_changes_nothing_else() -> None:
    before = default_registry().metric("text", "highlight_recall")
    spec = applied({"highlight_recall": {"disabled": False}}).metric("text", "highlight_recall")
    assert spec.bands == before.bands
    assert spec.shown is True


def test_the_origin_is_recorded_and_the_tolerance_kept() -> None:
    registry = applied({"keyword_f1": {"tolerance": 0.05}})
    assert registry.tolerances == {"entity.keyword_f1": 0.05}
    # The largest a report's baseline check reads back is allowed, on a scale without end.
    assert applied({"fabricated_entity_count": {"tolerance": 1e15}}).tolerances == {
        "entity.fabricated_entity_count": 1e15}
    assert registry.origin("entity", "keyword_f1") == ORIGIN
    assert registry.metric("entity", "keyword_f1").bands == \
        default_registry().metric("entity", "keyword_f1").bands


@pytest.mark.parametrize("entry", [{"tolerance": 0.05}, {"blocker": False},
                                   {"blocker": False, "tolerance": 0.05}])
def test_a_rule_that_asks_for_no_bar_leaves_a_metric_without_one_unrated(entry: dict) -> None:
    # A tolerance meant for the gate (or blocker = false) gave summary_score a bar at the top
    # of its scale, ">= 1": budget-7b's 0.697 was rated a failure, and assert_metric failed.
    before = default_registry().metric("text", "summary_score")
    spec = applied({"summary_score": entry}).metric("text", "summary_score")
    assert (spec.bands, spec.threshold, spec.blocker) == (None, before.threshold, False)
    assert spec.rate(0.697) is None


def test_blocker_false_takes_the_blocker_from_a_metric_without_a_bar() -> None:
    registry = default_registry().copy()
    spec = MetricSpec(id="team_check", task="qa", name="Team Check", description="d",
                      scale="0-1", threshold="code decides", blocker=True)
    registry.register_metric(spec, lambda case, output, result: 1.0)
    apply_policy(registry, {"metrics": {"team_check": {"blocker": False}}}, ORIGIN)
    found = registry.metric("qa", "team_check")
    assert (found.blocker, found.bands, found.threshold) == (False, None, "code decides")


@pytest.mark.parametrize(("task", "metric"), [("text", "call_intent_match"),
                                              ("grounding", "grounding_verdict")])
def test_a_scale_that_lists_its_values_runs_from_the_lowest_to_the_highest(
        task: str, metric: str) -> None:
    # "0/0.5/1" was read as 0 to 0.5 and "1/0.5/0" as 1 to 0.5: call intent's own threshold
    # of 1.0 was refused as off its scale, and grounding's verdict could take no edge.
    spec = default_registry().metric(task, metric)
    assert scale_range(spec) == (0.0, 1.0)
    assert applied({metric: {"threshold": 1.0}}).metric(task, metric).bands.good == 1.0


def test_a_task_pass_bar() -> None:
    assert applied(tasks={"qa": {"pass_bar": 0.9}}).pass_bars == {"qa": 0.9}
    assert applied(tasks={"qa": {"pass_bar": 0}}).pass_bars == {"qa": 0.0}
    assert applied(tasks={"qa": {"pass_bar": 1}}).pass_bars == {"qa": 1.0}


def test_applying_a_policy_leaves_the_shared_built_in_registry_alone() -> None:
    applied({"keyword_f1": {"threshold": 0.99}}, {"qa": {"pass_bar": 0.5}})
    assert default_registry().metric("entity", "keyword_f1").bands == Bands(
        good=0.9, acceptable=0.85)
    assert default_registry().pass_bars == {}


def test_an_empty_policy_changes_nothing() -> None:
    registry = applied()
    assert registry.pass_bars == {} and registry.tolerances == {}
    assert [s.bands for s in registry.all_metrics()] == \
        [s.bands for s in default_registry().all_metrics()]


PREFIX = f"{ORIGIN}: tool.callqa.metrics"


@pytest.mark.parametrize(("metrics", "message"), [
    ({"keyword_f1": {"weight": 2}},
     f"{PREFIX}.keyword_f1.weight: weights cannot be changed by a policy (each task's formula "
     "fixes them); thresholds, blockers and disabled can"),
    ({"keyword_f1": {"treshold": 0.9, "colour": 1}},
     f"{PREFIX}.keyword_f1: unknown key(s) colour, treshold; known: acceptable, blocker, "
     "disabled, threshold, tolerance"),
    ({"keyword_f1": {"threshold": "high"}},
     f"{PREFIX}.keyword_f1.threshold: expected a number, got 'high'"),
    ({"keyword_f1": {"threshold": True}},
     f"{PREFIX}.keyword_f1.threshold: expected a number, got True"),
    ({"keyword_f1": {"threshold": math.nan}},
     f"{PREFIX}.keyword_f1.threshold: expected a number, got nan"),
    # TOML integers have no size limit in Python: math.isfinite raised OverflowError.
    ({"keyword_f1": {"threshold": 10 ** 400}},
     f"{PREFIX}.keyword_f1.threshold: expected a number, got {10 ** 400}"),
    ({"keyword_f1": {"threshold": 1.5}},
     f"{PREFIX}.keyword_f1.threshold: 1.5 is off the metric's scale (0-1: 0 to 1)"),
    ({"keyword_f1": {"threshold": -0.1}},
     f"{PREFIX}.keyword_f1.threshold: -0.1 is off the metric's scale (0-1: 0 to 1)"),
    ({"tool_routing": {"threshold": 6}},
     f"{PREFIX}.tool_routing.threshold: 6 is off the metric's scale (0-5: 0 to 5)"),
    ({"keyword_f1": {"acceptable": 0.95}},
     f"{PREFIX}.keyword_f1.acceptable: 0.95 is past the threshold 0.9"),
    ({"compliance_false_pass_rate": {"acceptable": 0.005}},
     f"{PREFIX}.compliance_false_pass_rate.acceptable: 0.005 is past the threshold 0.01"),
    ({"keyword_f1": {"blocker": "yes"}},
     f"{PREFIX}.keyword_f1.blocker: expected true or false, got 'yes'"),
    ({"keyword_f1": {"disabled": 1}},
     f"{PREFIX}.keyword_f1.disabled: expected true or false, got 1"),
    ({"keyword_f1": {"tolerance": -0.01}},
     f"{PREFIX}.keyword_f1.tolerance: expected a number from 0 to 1e+15, got -0.01"),
    ({"keyword_f1": {"tolerance": math.inf}},
     f"{PREFIX}.keyword_f1.tolerance: expected a number from 0 to 1e+15, got inf"),
    # A later run refused the report as its baseline; an int past a float's range raised
    # OverflowError.
    ({"keyword_f1": {"tolerance": 1e16}},
     f"{PREFIX}.keyword_f1.tolerance: expected a number from 0 to 1e+15, got 1e+16"),
    ({"keyword_f1": {"tolerance": 10 ** 400}},
     f"{PREFIX}.keyword_f1.tolerance: expected a number from 0 to 1e+15, got {10 ** 400!r}"),
    ({"keyword_f1": {"tolerance": False}},
     f"{PREFIX}.keyword_f1.tolerance: expected a number from 0 to 1e+15, got False"),
    ({"keyword_f1": {"tolerance": "0.1"}},
     f"{PREFIX}.keyword_f1.tolerance: expected a number from 0 to 1e+15, got '0.1'"),
    # 2 meant as 2 %: on a 0-1 metric no drop could regress (the command line's twin was
    # refused already).
    ({"keyword_f1": {"tolerance": 2}},
     f"{PREFIX}.keyword_f1.tolerance: 2 is the metric's whole scale (0-1: 0 to 1) or more, "
     "so no drop could regress; a tolerance is in the metric's own units (0.02 for 2 points "
     "of a 0-1 score)"),
    # A scale from 1: its width is 4.
    ({"aspect_granularity": {"tolerance": 4}},
     f"{PREFIX}.aspect_granularity.tolerance: 4 is the metric's whole scale (1-5: 1 to 5) or "
     "more, so no drop could regress; a tolerance is in the metric's own units (0.02 for 2 "
     "points of a 0-1 score)"),
    ({"tool_routing": {"tolerance": 5}},
     f"{PREFIX}.tool_routing.tolerance: 5 is the metric's whole scale (0-5: 0 to 5) or more, "
     "so no drop could regress; a tolerance is in the metric's own units (0.02 for 2 points "
     "of a 0-1 score)"),
    ({"keyword_f1": 0.9},
     f"{PREFIX}.keyword_f1: must be a table of threshold, acceptable, blocker, disabled"),
    ({"no_such_metric": {"threshold": 0.5}},
     f"{PREFIX}.no_such_metric: unknown metric 'no_such_metric' (see pytest --callqa-metrics)"),
    ({"qa.keyword_f1": {"threshold": 0.5}},
     f"{PREFIX}.qa.keyword_f1: unknown metric 'qa.keyword_f1' (see pytest --callqa-metrics)"),
    ({"response_structure_compliance": {"blocker": False}},
     f"{PREFIX}.response_structure_compliance: metric 'response_structure_compliance' exists "
     "in several tasks (agent, conversation, entity, extraction, grounding, qa, text, "
     "translation): name it as '<task>.response_structure_compliance'"),
])
def test_a_bad_metric_rule_is_refused_naming_the_key(metrics: dict, message: str) -> None:
    assert refused(metrics) == message


@pytest.mark.parametrize(("tasks", "message"), [
    ({"qa": {"pass_bar": 1.1}},
     f"{ORIGIN}: tool.callqa.tasks.qa.pass_bar: expected a task score from 0 to 1, got 1.1"),
    ({"qa": {"pass_bar": -0.1}},
     f"{ORIGIN}: tool.callqa.tasks.qa.pass_bar: expected a task score from 0 to 1, got -0.1"),
    ({"qa": {"pass_bar": True}},
     f"{ORIGIN}: tool.callqa.tasks.qa.pass_bar: expected a task score from 0 to 1, got True"),
    ({"qa": {}},
     f"{ORIGIN}: tool.callqa.tasks.qa.pass_bar: expected a task score from 0 to 1, got None"),
    ({"qa": {"pass_bar": 0.5, "weight": 1}},
     f"{ORIGIN}: tool.callqa.tasks.qa: must be a table with pass_bar only"),
    ({"qa": 0.5}, f"{ORIGIN}: tool.callqa.tasks.qa: must be a table with pass_bar only"),
    ({"poetry": {"pass_bar": 0.5}},
     f"{ORIGIN}: tool.callqa.tasks.poetry: unknown task 'poetry' (known: qa, entity, text, "
     "translation, agent, conversation, extraction, grounding)"),
])
def test_a_bad_task_rule_is_refused_naming_the_key(tasks: dict, message: str) -> None:
    assert refused(tasks=tasks) == message


def test_one_metric_named_twice_in_a_table_is_refused_naming_both_keys() -> None:
    # Before, both rules were applied in file order: the last threshold won, and one's
    # blocker was combined with the other's threshold without a word.
    assert refused({"keyword_f1": {"threshold": 0.9},
                    "entity.keyword_f1": {"threshold": 0.5, "blocker": True}}) == (
        f"{PREFIX}.entity.keyword_f1: metric 'entity.keyword_f1' is already set by "
        "tool.callqa.metrics.keyword_f1; give its rule once")
    # Two policies (pyproject.toml, then the policy file) may still set one metric each.
    registry = applied({"keyword_f1": {"threshold": 0.9}})
    apply_policy(registry, {"metrics": {"entity.keyword_f1": {"threshold": 0.5}}}, "bars.toml")
    assert registry.metric("entity", "keyword_f1").bands.good == 0.5


def test_the_tables_themselves_are_checked() -> None:
    assert refused(metrics=[1]) == f"{ORIGIN}: tool.callqa.metrics must be a table"
    assert refused(tasks="qa") == f"{ORIGIN}: tool.callqa.tasks must be a table"
    assert refused(metric={}, weights={}) == (
        f"{ORIGIN}: [tool.callqa] has unknown table(s) metric, weights; known: metrics, tasks")


def test_a_refused_policy_error_is_a_value_error() -> None:
    assert issubclass(PolicyError, ValueError)


def test_the_edges_of_a_scale_are_on_it() -> None:
    low = applied({"keyword_f1": {"threshold": 0.0, "tolerance": 0}}).metric("entity", "keyword_f1")
    assert low.bands == Bands(good=0.0, acceptable=None)
    high = applied({"keyword_f1": {"threshold": 1}}).metric("entity", "keyword_f1")
    assert high.bands == Bands(good=1.0, acceptable=0.85)


def test_an_acceptable_edge_may_equal_the_threshold() -> None:
    up = applied({"keyword_f1": {"threshold": 0.9, "acceptable": 0.9}}).metric(
        "entity", "keyword_f1")
    assert up.bands == Bands(good=0.9, acceptable=0.9)
    down = applied({"compliance_false_pass_rate": {"acceptable": 0.01}}).metric(
        "qa", "compliance_false_pass_rate")
    assert down.bands == Bands(good=0.01, acceptable=0.01, blocker=0.01, higher_is_better=False)


@pytest.mark.parametrize(("rule", "edge"), [
    ({"blocker": True, "threshold": 0.99}, 0.98),    # the acceptable band still bounds it
    ({"blocker": True, "acceptable": 0.99}, 0.99),   # the new acceptable edge is the blocker
])
def test_an_edited_bar_moves_a_built_in_blocker_edge(rule: dict, edge: float) -> None:
    spec = applied({"fabrication_free_rate": rule}).metric("text", "fabrication_free_rate")
    assert spec.bands is not None and spec.bands.blocker == edge


def test_disabling_a_blocker_metric_makes_it_no_blocker() -> None:
    spec = applied({"config_adherence": {"disabled": True}}).metric("entity", "config_adherence")
    assert spec.blocker is False


def test_a_bad_acceptable_edge_is_named() -> None:
    assert refused({"keyword_f1": {"acceptable": 2}}) == (
        f"{PREFIX}.keyword_f1.acceptable: 2 is off the metric's scale (0-1: 0 to 1)")


def test_a_metric_in_two_tasks_is_ambiguous() -> None:
    registry = Registry()
    for spec in builtin_tasks()[:2]:
        registry.register_task(spec)
    with pytest.raises(PolicyError, match=r"several tasks \(entity, qa\)"):
        apply_policy(registry, {"metrics": {"response_structure_compliance": {}}}, ORIGIN)
