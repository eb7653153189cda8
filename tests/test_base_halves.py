"""``plan --base`` reads a large project's two git trees in two processes, as validate reads the work tree: git's
reader has ended before the fork (``gitsource``), and what the fork read is known afterwards in this process, so
the second tree reads again only the files that differ (``spec.loader``).

It runs in an interpreter of its own: the test runner's process runs threads, where ``workers.halves`` forks not.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from schemaflow.spec.loader import SHARED_FROM

ROOT = Path(__file__).resolve().parent.parent
CHANGED = 3

READ_TWICE = """
    import json, sys
    from schemaflow import gitsource
    from schemaflow.spec import loader

    shared = []  # per read: whether it was shared with a fork
    halves = loader.halves
    def recorded(work, items, at_least):
        worked = halves(work, items, at_least)
        shared.append(len(worked) == 2)
        return worked
    loader.halves = recorded
    read_here = []
    read = loader._declared.read
    loader._declared.read = lambda path, content: read_here.append(path) or read(path, content)

    gitsource.desired_at(sys.argv[1], "HEAD~1")
    first = len(read_here)
    known = len(loader._declared.known)
    gitsource.desired_at(sys.argv[1], "HEAD")
    print(json.dumps({"shared": shared, "first": first, "known": known, "second": read_here[first:]}))
"""


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True)


def test_both_trees_are_read_in_two_processes_and_the_second_reads_only_what_changed(tmp_path):
    tables = SHARED_FROM + 10
    (tmp_path / "schemaflow.yaml").write_text("databases: [db]\n")
    (tmp_path / "schemas" / "db").mkdir(parents=True)
    paths = [tmp_path / "schemas" / "db" / f"t{index:05d}.yaml" for index in range(tables)]
    for path in paths:
        path.write_text(f"table: db.{path.stem}\ncolumns:\n  - {{name: id, type: bigint}}\n")
    _git(tmp_path, "init", "-q")
    _git(tmp_path, "add", "-A")
    _git(tmp_path, "commit", "-qm", "base")
    for path in paths[:CHANGED]:  # in the half this process reads
        path.write_text(path.read_text() + "comment: changed\n")
    _git(tmp_path, "commit", "-qam", "head")

    ran = subprocess.run([sys.executable, "-c", textwrap.dedent(READ_TWICE), str(tmp_path)], capture_output=True,
                         text=True, cwd=ROOT, timeout=300)
    assert ran.returncode == 0, ran.stderr
    found = json.loads(ran.stdout)
    assert found["shared"] == [True, True]
    assert found["first"] == tables - tables // 2  # this process's half; the fork read the rest
    assert found["known"] == tables  # the fork's half known here too
    assert sorted(found["second"]) == sorted(f"schemas/db/{path.name}" for path in paths[:CHANGED])
