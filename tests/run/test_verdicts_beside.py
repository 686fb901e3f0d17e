"""The main thread's side of the judge batch that runs beside the tests (``Verdicts``): what
the batch hands on is taken in exactly once, whenever the batch's thread ends."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any

from pytest_callqa.run.usage import kind_totals
from pytest_callqa.run.verdicts import RunKey, Verdicts

FIRST: RunKey = ("alpha", "qa-refund", 0)
LAST: RunKey = ("alpha", "entity-transfer", 0)


class EndsDuringTake:
    """A ``VerdictStream`` double whose batch hands on its last pair's verdicts and ends
    while the main thread takes the first's: the window between ``take()`` and the read
    of ``ended`` that the batch's thread can fall into (about one run in six, in practice)."""

    def __init__(self) -> None:
        self.keys = [FIRST, LAST]
        self.failure: BaseException | None = None
        self.ended = False
        self._handed = {FIRST}
        self._ready: dict[RunKey, list[Any]] = {FIRST: ["first's verdicts"]}

    def take(self) -> dict[RunKey, list[Any]]:
        ready, self._ready = self._ready, {}
        if not self.ended:
            # The batch's thread, just after the lock is released.
            self._handed.add(LAST)
            self._ready[LAST] = ["last's verdicts"]
            self.ended = True
        return ready

    def unhanded(self) -> list[RunKey]:
        return [key for key in self.keys if key not in self._handed]

    def wait_for(self, key: RunKey) -> None:
        """Both pairs are handed on by the time a test waits for them."""

    def join(self, timeout: float | None = None) -> None:
        """The batch's thread has ended."""


class NoCalls:
    """A chat runner that sent nothing (the progress line's counters)."""

    def usage_summary(self) -> dict[str, Any]:
        return {}


def test_verdicts_handed_on_as_the_batch_ends_are_taken_in_not_dropped() -> None:
    # Before, ``ended`` was read after take(): LAST's verdicts, handed on in between, were
    # neither taken nor left unhanded, the batch was closed without them, and LAST's pair
    # was prepared and judged a second time in the middle of the tests.
    verdicts = Verdicts(settings=None, services=None,  # type: ignore[arg-type]
                        timings={"judge_s": 0.0}, results={})
    stream, runner = EndsDuringTake(), NoCalls()
    verdicts._beside = SimpleNamespace(  # type: ignore[assignment]
        stream=stream, prepared={FIRST: "first prepared", LAST: "last prepared"},
        judge=None, runner=runner, elapsed=0.0,
        before=kind_totals(runner, "judge"))  # type: ignore[arg-type]
    verdicts.wait_for(FIRST)
    assert verdicts.judged == {FIRST: ("first prepared", ["first's verdicts"])}
    assert verdicts.streaming  # LAST's verdicts are still to be taken in
    verdicts.wait_for(LAST)
    assert verdicts.judged[LAST] == ("last prepared", ["last's verdicts"])
    assert not verdicts.streaming
    assert verdicts.results == {}
