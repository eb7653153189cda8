"""Work shared with a fork of the process (``workers.halves``), and the project read in two processes with it.

Each case runs in an interpreter of its own: the test runner's process runs threads, where a fork is
not safe, so there ``halves`` does all the work itself (which one case here checks as well).
"""
from __future__ import annotations

import json
import subprocess
import sys
import textwrap
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def run(code: str, *args: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run([sys.executable, "-c", textwrap.dedent(code), *args], capture_output=True, text=True,
                          cwd=ROOT, timeout=120)


def halves_of(work: str, items: int, at_least: int, before: str = "") -> list[list[object]]:
    """What ``halves`` gives for ``work`` (a function of ``part`` and ``parent``, this process's id) of range(items)."""
    ran = run(f"""
        import json, os, threading
        from schemaflow.workers import halves
        parent = os.getpid()
        {before}
        print(json.dumps(halves(lambda part: {work}, list(range({items})), {at_least})))
        """)
    assert ran.returncode == 0, ran.stderr
    return json.loads(ran.stdout)


def test_the_second_half_is_worked_in_a_fork_and_the_halves_come_back_in_order():
    assert halves_of("[os.getpid() == parent, list(part)]", 10, 4) == [[True, [0, 1, 2, 3, 4]],
                                                                      [False, [5, 6, 7, 8, 9]]]
    assert halves_of("[os.getpid() == parent, list(part)]", 3, 4) == [[True, [0, 1, 2]]]  # too few to share


def test_a_fork_that_fails_leaves_its_half_to_this_process():
    work = "[os.getpid() == parent or os._exit(3), list(part)]"
    assert halves_of(work, 6, 2) == [[True, [0, 1, 2]], [True, [3, 4, 5]]]
    work = "[os.getpid() == parent or 1 / 0, list(part)]"
    assert halves_of(work, 6, 2) == [[True, [0, 1, 2]], [True, [3, 4, 5]]]


def test_a_process_that_runs_other_threads_works_alone():
    waiting = "stop = threading.Event(); threading.Thread(target=stop.wait, daemon=True).start()"
    assert halves_of("[os.getpid() == parent, list(part)]", 10, 4, waiting) == [[True, list(range(10))]]


def test_work_that_fails_here_leaves_no_fork_behind():
    ran = run("""
        import os, time
        from schemaflow.workers import halves
        parent = os.getpid()
        def work(part):
            if os.getpid() == parent:
                raise KeyboardInterrupt
            time.sleep(60)  # the fork would still be working
        try:
            halves(work, [1, 2], 2)
        except KeyboardInterrupt:
            try:
                os.waitpid(-1, os.WNOHANG)
            except ChildProcessError:
                print("no child left")
        """)
    assert (ran.returncode, ran.stdout) == (0, "no child left\n"), ran.stderr


# The command line with the thresholds at which a project is read and its views checked in halves set to the first
# argument; the forks it made are counted on standard error, after what it said.
SHARED = """
    import os, sys
    from schemaflow import cli
    from schemaflow.spec import analysis, loader
    forks, fork = [], os.fork
    def counted():
        child = fork()
        forks.extend([child] if child else [])
        return child
    os.fork = counted
    loader.SHARED_FROM = analysis.VIEWS_SHARED_FROM = int(sys.argv[1])
    code = cli.main(sys.argv[2:])
    print(f"{len(forks)} forks, exit {code}", file=sys.stderr)
    """


def validate(project: Path, shared_from: int) -> tuple[str, list[str], str]:
    ran = run(SHARED, str(shared_from), "--project", str(project), "validate")
    said = ran.stderr.splitlines()
    return ran.stdout, said[:-1], said[-1]


def test_a_project_read_in_two_processes_is_read_as_in_one(example):
    """The example's files and views read in halves (the thresholds lowered to reach it): the same outcome, and the
    same problems, in both halves, as one process finds them; then one bad file of each kind in each half."""
    alone, shared = validate(example, 1_000_000), validate(example, 2)
    assert alone[2] == "0 forks, exit 0" and shared[2] == "2 forks, exit 0"  # the files, then the views over tables
    assert shared[:2] == alone[:2] and alone[0].startswith("valid: 6 tables and 4 views")
    bad = {  # sorted: analytics/ and retail/a* in the first half, the rest in the second
        "analytics/aa_bad.yaml": "table: analytics.aa_bad\ncolumns: [{name: id, type: bigitn}]\n",
        "analytics/ab_view.yaml": "view: analytics.ab_view\nsql: SELECT nope FROM analytics.sessions\n",
        "retail/zz_bad.yaml": "table: retail.zz_bad\ncolumns: [{name: id, type: intt}]\n",
        "analytics/ac_twice.yaml": "view: retail.zz_view\nsql: SELECT order_id FROM retail.orders\n",
        "retail/zz_moved.yaml": "table: retail.moved\ncolumns: [{name: id, type: int}]\n",
        "retail/zz_view.yaml": "view: retail.zz_view\nsql: |\n  SELECT order_id,\n         nope\n  FROM retail.orders\n",
        "retail/zz_broken.yaml": "table: [\n",
    }
    for path, text in bad.items():
        (example / "schemas" / path).write_text(text)
    alone, shared = validate(example, 1_000_000), validate(example, 2)
    assert alone[2] == "0 forks, exit 1" and shared[2] == "2 forks, exit 1"
    assert shared[1] == alone[1]
    # Positions the fork found, and positions found here in documents the fork sent back (re-read when asked).
    assert [line.split(": ")[0] for line in alone[1][:-1]] == [
        "schemas/analytics/aa_bad.yaml:2:28", "schemas/analytics/ab_view.yaml:2:13",
        "schemas/analytics/ac_twice.yaml:1:7", "schemas/analytics/ac_twice.yaml:1:7", "schemas/retail/zz_bad.yaml:2:28",
        "schemas/retail/zz_broken.yaml:2:1", "schemas/retail/zz_moved.yaml:1:8", "schemas/retail/zz_view.yaml:1:7",
        "schemas/retail/zz_view.yaml:4:10"]


def test_halves_each_within_the_projects_bounds_but_over_them_together_are_read_again_in_one_process(tmp_path):
    """Each half of the files spends the project's whole budget of aliases in its own process: together they spend
    more, so the files are read again one after the other, for the message one process gives, at its place."""
    from tests.projects import aliased_table

    (tmp_path / "schemas/bad").mkdir(parents=True)
    for name in ("t1", "t2"):
        (tmp_path / f"schemas/bad/{name}.yaml").write_text(aliased_table(name))
    alone, shared = validate(tmp_path, 1_000_000), validate(tmp_path, 2)
    assert shared[2] == "1 forks, exit 1"
    assert shared[1] == alone[1]
    assert [line for line in alone[1] if "takes the project past" in line] == [
        "schemas/bad/t2.yaml:6:9: this alias takes the project past 100,000 values added by aliases (its files together, "
        "each alias counted as a full copy of what it names): schemaflow reads at most 100,000; use fewer aliases"]
