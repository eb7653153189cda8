"""Plans of random evolutions between two commits, as a pull request's job makes them: never a traceback, and the
same steps as a plan against the live state the base leaves.

``tests/evolutions.py`` draws histories of projects as teams change them (several tables of mixed kinds, views over
them, commits that rename, drop, reorder and retype across tables in one migration, changes that need a rewrite).
Each commit of each history is planned against the one before it as ``plan --base`` plans it (``review_refs``: no
JVM, the base's declared state read from git plays the live state), and must not raise. Without a metastore, the
live state the base leaves is modelled as what a complete apply of the base leaves (``applied_state``), saved as a
snapshot: the plan of the head against that snapshot (``plan --against``, read back from its JSON) must have the
same steps, in the same order, blocked alike. The apply half, against a real metastore, is
tests/test_evolutions_spark.py. ``SCHEMAFLOW_EVOLUTIONS_PLANNED`` sets how many histories (each of ``LENGTH``
commits) and ``SCHEMAFLOW_EVOLUTIONS_SEED`` the first seed; a failure names its seed and commit.
"""
from __future__ import annotations

import os
from pathlib import Path

import git

from schemaflow.catalog.snapshot import write_snapshot
from schemaflow.gitsource import desired_at
from schemaflow.plan.plan import Plan
from schemaflow.project import load_project
from schemaflow.workflow import applied_state, review_refs, review_snapshot
from tests.evolutions import Evolution, State, history
from tests.gitrepos import commit, init_repo, put_files

HISTORIES = int(os.environ.get("SCHEMAFLOW_EVOLUTIONS_PLANNED", "25"))
SEED = int(os.environ.get("SCHEMAFLOW_EVOLUTIONS_SEED", "20261202"))
LENGTH = 6


def steps(plan: Plan) -> list[tuple[str, str, str, str | None]]:
    return [(s.kind, s.object, s.summary, s.blocked) for s in plan.steps]


def reviewed(root: Path, number: int) -> tuple[Plan, Plan]:
    """The plan of HEAD against HEAD~1 as ``plan --base`` makes it, and the plan of HEAD against a snapshot of
    what applying HEAD~1 leaves, rewrites and drops allowed in both."""
    project = load_project(root, env={})
    by_refs = review_refs(project, "HEAD~1", "HEAD", allow_destructive=True).plan
    snapshot = root.parent / f"{root.name}-base-{number}.json"
    write_snapshot(applied_state(desired_at(root, "HEAD~1"), project.settings.release), snapshot)
    return by_refs, review_snapshot(project, snapshot, allow_destructive=True).plan


def check(repo: git.Repo, seed: int, number: int, before: State, evolution: Evolution) -> int:
    """Commit ``evolution`` and compare its two plans; the number of steps planned."""
    root = Path(repo.working_tree_dir or "")
    put_files(root, evolution.edited(before))
    commit(repo, f"evolution {number}")
    where = f"seed {seed}, commit {number} ({evolution.describe()}): SCHEMAFLOW_EVOLUTIONS_SEED={seed}"
    try:
        by_refs, against_live = reviewed(root, number)
    except Exception as error:
        raise AssertionError(f"{where}: the plan raised {type(error).__name__}: {error}") from error
    assert steps(by_refs) == steps(against_live), f"{where}: plan --base and the plan against its state differ"
    assert by_refs.steps, f"{where}: a change plans nothing"
    return len(by_refs.steps)


def test_random_evolutions_plan_between_commits_as_against_the_state_the_base_leaves(tmp_path):
    planned = 0
    for seed in range(SEED, SEED + HISTORIES):
        root = tmp_path / f"h{seed}"
        repo = init_repo(root)
        state, _, evolutions = history(seed, "evo", LENGTH)
        put_files(root, dict(state.files()))
        commit(repo, "first")
        for number, evolution in enumerate(evolutions, start=1):
            planned += check(repo, seed, number, state, evolution)
            state = evolution.after
    assert planned >= HISTORIES * LENGTH  # every commit planned a step at least
