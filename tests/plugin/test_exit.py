"""The garbage collector of a run with evaluations: what collection built is frozen for the
tests and pytest's last collections, thawed for a host that goes on, and Python's shutdown
does not walk every object once more."""

from __future__ import annotations

import gc
import subprocess
import sys
import textwrap

import pytest

from .conftest import MiniProject

# Exit handlers run last-registered first: this one, registered before pytest.main, sees
# the collector as the plugin's handler left it.
HOST = textwrap.dedent("""
    import atexit, gc, pytest
    atexit.register(lambda: print("at exit:", gc.get_freeze_count() > 0))
    for run in (1, 2):
        assert pytest.main(["-q", "-p", "no:cacheprovider", "test_eval.py"]) == 0
        print(f"after run {run}:", gc.get_freeze_count() > 0, gc.isenabled())
""")


def _host(root: object) -> list[str]:
    done = subprocess.run([sys.executable, "-c", HOST], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line for line in done.stdout.splitlines() if line.startswith(("after", "at"))]


def test_a_run_with_evaluations_freezes_the_collector_at_exit_only(
        project: MiniProject) -> None:
    # A host that goes on after pytest.main (an IDE, several runs in one process) keeps its
    # collector as it was; only the interpreter's exit skips the last walk.
    project.write_tests("def test_output(callqa_output):\n    assert callqa_output\n")
    assert _host(project.root) == ["after run 1: False True", "after run 2: False True",
                                   "at exit: True"]


def test_a_run_without_evaluations_leaves_the_exit_alone(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_eval="def test_plain():\n    assert True\n")
    assert _host(pytester.path) == ["after run 1: False True", "after run 2: False True",
                                    "at exit: False"]


# pytest collects twice as it ends (its check for exceptions raised in finalisers): each
# collection records whether what collection built was out of its reach.
SPY = textwrap.dedent("""
    import gc, pytest
    seen = []
    collect = gc.collect
    def spy(*args):
        seen.append(gc.get_freeze_count() > 0)
        return collect(*args)
    gc.collect = spy
    assert pytest.main(["-q", "-s", "-p", "no:cacheprovider", "test_eval.py"]) == 0
    print("pytest's collections frozen:", seen)
    print("after the run:", gc.get_freeze_count() > 0, gc.isenabled())
""")

DURING = ("\n\ndef test_during():\n    import gc\n"
          "    print('during the tests:', gc.get_freeze_count() > 0, gc.isenabled())\n")


def _spied(root: object) -> list[str]:
    done = subprocess.run([sys.executable, "-c", SPY], cwd=root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    return [line.strip(" .") for line in done.stdout.splitlines()
            if line.strip(" .").startswith(("during", "pytest's", "after"))]


def test_what_collection_built_is_frozen_through_pytests_last_collections(
        project: MiniProject) -> None:
    project.write_tests("def test_output(callqa_output):\n    assert callqa_output\n" + DURING)
    assert _spied(project.root) == ["during the tests: True True",
                                    "pytest's collections frozen: [True, True]",
                                    "after the run: False True"]


def test_the_xdist_controller_freezes_what_it_built_for_pytests_last_collections(
        project: MiniProject) -> None:
    # The controller collects nothing, so nothing was frozen at collection: before, both of
    # its closing collections walked its workers' reports and the scorecard ([False, False]).
    project.write_tests("def test_result(callqa_result):\n    assert callqa_result\n")
    done = subprocess.run([sys.executable, "-c", SPY.replace('"-s", ', '"-n", "2", ')],
                          cwd=project.root, capture_output=True, text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    lines = [line.strip(" .") for line in done.stdout.splitlines()]
    assert "pytest's collections frozen: [True, True]" in lines
    assert "after the run: False True" in lines


def test_a_run_without_evaluations_freezes_nothing(pytester: pytest.Pytester) -> None:
    pytester.makepyfile(test_eval="def test_plain():\n    assert True\n" + DURING)
    assert _spied(pytester.path) == ["during the tests: False True",
                                     "pytest's collections frozen: [False, False]",
                                     "after the run: False True"]


def test_a_host_that_froze_its_own_objects_keeps_them_frozen(project: MiniProject) -> None:
    # Unfreezing after the run would unfreeze the host's objects too: nothing is frozen.
    project.write_tests("def test_output(callqa_output):\n    assert callqa_output\n")
    host = "import gc\ngc.freeze()\n" + SPY
    done = subprocess.run([sys.executable, "-c", host], cwd=project.root, capture_output=True,
                          text=True, timeout=120)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "after the run: True True" in done.stdout



def test_the_pause_restores_the_collector_as_it_found_it() -> None:
    from pytest_callqa.garbage import paused

    assert gc.isenabled()
    with pytest.raises(ValueError), paused():
        assert not gc.isenabled()
        raise ValueError("the catalogue could not be read")
    assert gc.isenabled()
    gc.disable()
    try:
        with paused():
            pass
        assert not gc.isenabled()  # the host's choice stays
    finally:
        gc.enable()
