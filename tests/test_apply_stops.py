"""SIGINT and SIGTERM during an apply's steps (``apply.stops``), on a recording target in this process: the first
stops the run before the next step, a second in the step that runs; the handlers before are put back after."""
from __future__ import annotations

import os
import signal

import pytest

from schemaflow.apply.executor import ApplyInterrupted, RecordingTarget, apply_plan
from schemaflow.plan.plan import PlanBuilder
from schemaflow.model import Catalog
from tests.catalogs import DESIRED


def signalled(at: str, *signums: int):
    """A pause that sends this process ``signums`` at the point ``at``."""
    def pause(point: str) -> None:
        if point == at:
            for signum in signums:
                os.kill(os.getpid(), signum)
    return pause


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_at_a_step_stops_before_the_next_and_a_second_in_the_step(signum: int):
    plan = PlanBuilder(DESIRED, Catalog()).build()
    before = signal.getsignal(signum)
    target = RecordingTarget()
    with pytest.raises(ApplyInterrupted) as stopped:
        apply_plan(plan, target, pause=signalled("2.1", signum))
    name = signal.Signals(signum).name
    summaries = [step.summary for step in plan.steps]
    assert str(stopped.value).splitlines() == [
        f"apply stopped by {name} before step 3 of {len(summaries)}, between two steps",
        "applied (2):", f"  1. {summaries[0]}", f"  2. {summaries[1]}",
        f"not applied ({len(summaries) - 2}):", *[f"  {i}. {s}" for i, s in enumerate(summaries[2:], 3)],
        "To finish: schemaflow apply, as you ran it but with no saved PLAN: a new plan starts from the live state, so "
        "it holds exactly what was not applied."]
    assert len(target.actions) == len(plan.steps[0].actions) + len(plan.steps[1].actions)  # steps 1 and 2, no more
    assert signal.getsignal(signum) is before

    target = RecordingTarget()
    with pytest.raises(ApplyInterrupted) as stopped:
        apply_plan(plan, target, pause=signalled("2.1", signum, signum))
    assert str(stopped.value).splitlines()[:5] == [
        f"apply stopped by {name} during step 2 of {len(summaries)}, which is begun", "applied (1):",
        f"  1. {summaries[0]}", "begun, not finished (1):", f"  2. {summaries[1]}"]
    assert len(target.actions) == len(plan.steps[0].actions) + 1  # stopped in step 2, after its first write
    assert signal.getsignal(signum) is before
