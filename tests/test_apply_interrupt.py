"""An apply stopped by a signal (Ctrl-C's SIGINT, a CI cancel's SIGTERM) as a user's ``schemaflow apply`` runs: a
process and a JVM of its own, paused at a step (``tests/paused_apply.py``) and signalled there.

The first signal lets the step that runs land and stops before the next, handing back the claims: it ends in one
report of what was applied, what was not and the command to finish, with no py4j traceback. A second signal stops at
once, leaving that step begun under the run's claim, which the next apply takes over: the apply the report names
finishes the plan.
"""
from __future__ import annotations

import signal
from pathlib import Path

import pytest

from tests.projects import done_steps, paused, resume, schemaflow

pytestmark = pytest.mark.spark

TABLES = ("alpha", "beta", "gamma", "delta")
FINISH = ("To finish: schemaflow apply, as you ran it but with no saved PLAN: a new plan starts from the live state, "
          "so it holds exactly what was not applied.")


def test_an_apply_signalled_at_a_step_stops_between_steps_says_what_is_applied_and_the_next_apply_finishes(
        tmp_path: Path):
    project = tmp_path / "project"
    (project / "schemas/halt").mkdir(parents=True)
    (project / "schemaflow.yaml").write_text(f'warehouse_dir: {tmp_path / "wh"}\nspark: {{master: "local[1]"}}\n')
    for name in TABLES:
        (project / f"schemas/halt/{name}.yaml").write_text(
            f"table: halt.{name}\nformat: parquet\ncolumns: [{{name: id, type: bigint}}]\n")

    # SIGINT at step 2: step 2 lands, step 3 does not begin.
    running, marker = paused(project, "2.1")
    running.send_signal(signal.SIGINT)
    code, out, err = resume(running, marker)
    assert code == 1, out + err
    steps = [line.split("] ", 1)[1].rsplit(" ... ", 1)[0] for line in out.splitlines() if line.startswith("[")]
    assert len(steps) == 2 and done_steps(out) == steps, out
    assert "Traceback" not in err and "py4j" not in err.lower(), err
    report = err[err.index("error: apply stopped"):].splitlines()
    assert report[0] == "error: apply stopped by SIGINT before step 3 of 5, between two steps"
    assert report[1:4] == ["applied (2):", f"  1. {steps[0]}", f"  2. {steps[1]}"]
    assert report[4] == "not applied (3):" and len(report) == 9 and report[-1] == FINISH
    not_applied = [line.split(". ", 1)[1] for line in report[5:8]]
    assert "SIGINT: stopping once the step that runs has landed" in err

    # The apply it names plans what was not applied; SIGTERM twice at its first step stops in the step.
    running, marker = paused(project, "1.1")
    assert running.stderr is not None
    running.send_signal(signal.SIGTERM)
    while "SIGTERM: stopping once" not in (line := running.stderr.readline()):  # the first is noted, then the second
        assert line, "the apply ended before it noted the signal"
    running.send_signal(signal.SIGTERM)
    code, out, err = resume(running, marker)
    assert code == 1, out + err
    assert "Traceback" not in err and "py4j" not in err.lower(), err
    report = err[err.index("error: apply stopped"):].splitlines()
    assert report == ["error: apply stopped by SIGTERM during step 1 of 3, which is begun", "applied (0):", "  none",
                      "begun, not finished (1):", f"  1. {not_applied[0]}", "not applied (2):",
                      *[f"  {i}. {summary}" for i, summary in enumerate(not_applied[1:], 2)], FINISH]

    # The next apply takes over the begun step's claim: it records the version of the table the step created, and
    # runs the steps not applied.
    finished = schemaflow(project, "apply", "--auto-approve")
    assert finished.returncode == 0, finished.stdout + finished.stderr
    begun = not_applied[0].split()[2]
    assert sorted(done_steps(finished.stdout)) == sorted([f"record schemaflow.version on {begun}", *not_applied[1:]])
