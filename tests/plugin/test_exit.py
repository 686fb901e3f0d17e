"""The end of the process: Python's shutdown does not walk every object once more."""

from __future__ import annotations

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
