"""``plan --base`` reads a large project's first git tree in two processes, as validate reads the work tree: git's
reader has ended before the fork (``gitsource``), and what the fork read and analysed is known afterwards in this
process, so the second tree reads again only the files that differ, here without a fork (``spec.loader``), and
neither it nor the plan analyses a view again (``spec.analysis``, ``sql.views``).

It runs in an interpreter of its own: the test runner's process runs threads, where ``workers.halves`` forks not.
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

from schemaflow.spec.analysis import VIEWS_SHARED_FROM
from schemaflow.spec.loader import SHARED_FROM

ROOT = Path(__file__).resolve().parent.parent
CHANGED = 3

READ_TWICE = """
    import json, sys
    from schemaflow import gitsource
    from schemaflow.plan.deps import with_live_reads
    from schemaflow.spec import loader
    from schemaflow.sql import views

    from schemaflow.spec import analysis
    shared = []  # per work offered to be shared: what it was (files, views), and whether it was shared with a fork
    halves = loader.halves
    def recorded(what):
        def offered(work, items, at_least):
            worked = halves(work, items, at_least)
            shared.append([what, len(worked) == 2])
            return worked
        return offered
    loader.halves, analysis.halves = recorded("files"), recorded("views")
    read_here = []
    read = loader._declared.read
    loader._declared.read = lambda path, content: read_here.append(path) or read(path, content)

    base = gitsource.desired_at(sys.argv[1], "HEAD~1")
    first, analysed = len(read_here), views._analyzed.misses
    known, views_known = len(loader._declared.known), len(views._analyzed.known)
    head = gitsource.desired_at(sys.argv[1], "HEAD")
    again = views._analyzed.misses - analysed
    with_live_reads(base)  # the plan's reading of the base as the live side
    print(json.dumps({"shared": shared, "first": first, "known": known, "second": read_here[first:],
                      "analysed": analysed, "views_known": views_known, "again": again,
                      "by_plan": views._analyzed.misses - analysed - again,
                      "same": sum(head.objects[key] is obj for key, obj in base.objects.items())}))
"""


def _git(project: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(project), "-c", "user.name=t", "-c", "user.email=t@example.com", *args],
                   check=True, capture_output=True)


def test_the_first_tree_is_read_in_two_processes_and_the_second_reads_only_what_changed(tmp_path):
    tables, views = SHARED_FROM + 10, VIEWS_SHARED_FROM + 10
    (tmp_path / "schemaflow.yaml").write_text("databases: [db]\n")
    (tmp_path / "schemas" / "db").mkdir(parents=True)
    paths = [tmp_path / "schemas" / "db" / f"t{index:05d}.yaml" for index in range(tables)]
    for path in paths:
        path.write_text(f"table: db.{path.stem}\ncolumns:\n  - {{name: id, type: bigint}}\n")
    for index in range(views):  # each over one table: all of them checked in two processes
        (tmp_path / "schemas" / "db" / f"v{index:05d}.yaml").write_text(
            f"view: db.v{index:05d}\nsql: SELECT id FROM db.t{index:05d}\n")
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
    files = tables + views
    # The first tree's files, then its views, each in two processes; the second tree's offered no fork.
    assert found["shared"] == [["files", True], ["views", True]]
    assert found["first"] == files - files // 2  # this process's half; the fork read the rest
    assert found["known"] == files  # the fork's half known here too
    assert sorted(found["second"]) == sorted(f"schemas/db/{path.name}" for path in paths[:CHANGED])
    assert found["analysed"] == views - views // 2  # this process's half; the fork analysed the rest
    assert found["views_known"] == views  # the fork's half known here too
    assert found["again"] == 0 and found["by_plan"] == 0  # neither the second tree nor the plan analyses a view again
    assert found["same"] == tables - CHANGED  # an unchanged table is one object for both trees (fingerprinted once)
