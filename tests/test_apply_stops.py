"""SIGINT and SIGTERM during an apply's steps (``apply.stops``), on a recording target in this process: the first
stops the run before the next step, a second in the step that runs; the handlers before are put back after."""
from __future__ import annotations

import io
import signal

import pytest

from schemaflow import applying
from schemaflow.apply.executor import ApplyInterrupted, ApplyNotStarted, RecordingTarget, apply_plan
from schemaflow.plan.plan import PlanBuilder
from schemaflow.model import Catalog
from tests.catalogs import DESIRED


@pytest.fixture(autouse=True)
def python_handles_sigint():
    """SIGINT as Python handles it in a terminal (``KeyboardInterrupt``): a shell that starts a command in the
    background without job control starts it with SIGINT ignored, and Python then keeps it ignored."""
    before = signal.signal(signal.SIGINT, signal.default_int_handler)
    yield
    signal.signal(signal.SIGINT, before)


def signalled(at: str, *signums: int):
    """A pause that sends this process ``signums`` at the point ``at``."""
    def pause(point: str) -> None:
        if point == at:
            for signum in signums:
                signal.raise_signal(signum)  # to this thread: its handler runs before the next line
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


class _SignalledBeside(RecordingTarget):
    """A target whose second connection, opened before the claims, is where this process gets ``signums``."""

    def __init__(self, *signums: int) -> None:
        super().__init__()
        self.signums = signums

    def beside(self):
        for signum in self.signums:
            signal.raise_signal(signum)  # to this thread: its handler runs before the next line
        return super().beside()


def _not_started(name: str, summaries: list[str], when: str = "before its first step") -> list[str]:
    return [f"apply stopped by {name} {when}: nothing was applied", "applied (0):", "  none",
            f"not applied ({len(summaries)}):", *[f"  {i}. {s}" for i, s in enumerate(summaries, 1)],
            "To apply: schemaflow apply, as you ran it (a new plan starts from the live state; an object this run had "
            "claimed is taken over)."]


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_before_the_first_step_says_nothing_was_applied_and_what_to_run(signum: int):
    plan = PlanBuilder(DESIRED, Catalog()).build()
    summaries = [step.summary for step in plan.steps]
    name = signal.Signals(signum).name
    target = _SignalledBeside(signum)  # one signal: noted, the run stops before step 1
    with pytest.raises(ApplyInterrupted) as stopped:
        apply_plan(plan, target)
    assert str(stopped.value).splitlines()[:3] == [
        f"apply stopped by {name} before step 1 of {len(summaries)}, between two steps", "applied (0):", "  none"]
    assert target.actions == []

    target = _SignalledBeside(signum, signum)  # a second one stops at once, before any step
    with pytest.raises(ApplyNotStarted) as at_once:
        apply_plan(plan, target)
    assert str(at_once.value).splitlines() == _not_started(name, summaries)
    assert target.actions == []


@pytest.mark.parametrize("signum", [signal.SIGINT, signal.SIGTERM])
def test_a_signal_while_apply_plans_or_asks_says_nothing_was_applied(monkeypatch: pytest.MonkeyPatch, signum: int):
    plan = PlanBuilder(DESIRED, Catalog()).build()
    name = signal.Signals(signum).name
    before = signal.getsignal(signal.SIGTERM)

    def signalled(*_: object) -> bool:  # at the prompt (Ctrl-C), or a CI cancel then
        signal.raise_signal(signum)  # to this thread: its handler runs before the next line
        raise AssertionError("the signal did not stop the apply")

    monkeypatch.setattr(applying, "chosen_plan", lambda *_: plan)
    with pytest.raises(ApplyNotStarted) as stopped:
        applying.apply_project(None, None, applying.ApplyOptions(), show=lambda _: None,  # type: ignore[arg-type]
                               confirm=signalled, progress=io.StringIO(), report=lambda _: None)
    assert str(stopped.value).splitlines() == _not_started(name, [step.summary for step in plan.steps])

    monkeypatch.setattr(applying, "chosen_plan", signalled)  # while the plan is made: there is none to list
    with pytest.raises(ApplyNotStarted) as stopped:
        applying.apply_project(None, None, applying.ApplyOptions(), show=lambda _: None,  # type: ignore[arg-type]
                               confirm=lambda _: True, progress=io.StringIO(), report=lambda _: None)
    assert str(stopped.value).splitlines()[:2] == [f"apply stopped by {name} while it made the plan: nothing was "
                                                   "applied", "applied: none (no plan was made yet)"]
    assert signal.getsignal(signal.SIGTERM) is before
