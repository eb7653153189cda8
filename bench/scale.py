"""Warehouse scale: a generated project of thousands of tables and views, validated and planned.

Generates, deterministically, a project of N tables (5-30 columns, half partitioned, parquet and
orc, comments and properties) and N/10 views (joins, views over views) across 10 databases, then
reports, at each size asked for, side by side in one run:

- ``schemaflow validate`` as a user runs it (a new process, Python's start included), and the
  same validation in-process with libyaml composing, side by side with PyYAML's pure-Python
  composer (the path schemaflow took before), and with libyaml's compose alone of the same files
  (each read and composed into a node tree, nothing checked: the floor any validation stands on);
- ``schemaflow plan --base`` between two commits that differ in a few files, in the repository
  they were made in (their objects loose, as git leaves new commits) and in a clone of it (packed,
  as a pull request's CI has them); validate and the two take turns for a few rounds (``--rounds``),
  and each shows its median;
- with ``--against REV``, ``schemaflow validate`` of this checkout and of the git revision ``REV`` (its package
  as it was there, with this environment's libraries), taking turns;
- ``schemaflow fmt --check`` as a user runs it (a process per core), and the same in one process
  with the values built from libyaml's events, side by side with ruamel.yaml's own load (the path
  schemaflow took before);
- with ``--apply-sizes``, against a standalone Thrift metastore server (its metastore in PostgreSQL,
  as production metastores keep it, or with ``--backend derby`` in Derby): a cold ``plan`` of the
  whole project (JVM start included), ``apply`` of that plan as a user runs it, side by side with a
  bare loop of the same statements through ``spark.sql`` (no guards, no stamps), a cold ``plan``
  again, which must find nothing to do (without a JVM, and through Spark's client as before), then
  a column appended to 1,000 tables by ``apply``, side by side with a bare loop of
  ``ALTER TABLE ... ADD COLUMNS`` on the same tables. Each bare loop runs as apply does: in a new
  process with a Spark session of its own, timed from its first statement to its last, so both
  pay for a JVM that has not run the statements before.

Progress goes to stderr, results to stdout::

    .venv/bin/python bench/scale.py [--sizes 500,1000,5000] [--large] [--rounds 3] [--apply-sizes 500,1000]
        [--backend derby] [--against c862c97]
"""
from __future__ import annotations

import argparse
import json
import os
import random
import re
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from functools import partial
from collections.abc import Callable

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schemaflow.spec import load_catalog, yamlpos  # noqa: E402  (after the path is set)
from schemaflow.spec.loader import _declared  # noqa: E402
from schemaflow.sql import views  # noqa: E402
from schemaflow.sql.types import canonical_type  # noqa: E402

DATABASES = 10
TYPES = ("bigint", "string", "decimal(12,2)", "timestamp", "int", "double", "date", "boolean", "array<string>",
         "map<string,int>", "struct<kind:string,os:string>", "varchar(32)")
SCHEMAFLOW = str(Path(sys.executable).with_name("schemaflow"))
APPENDED = 1_000  # tables a column is appended to, in projects of at least as many objects
# A bare loop of statements through spark.sql in a process of its own: prints the loop's seconds.
BARE_LOOP = """
import json, sys, time
from schemaflow.catalog.hive.session import spark_session
from schemaflow.project import Settings
uri, warehouse, state, statements = sys.argv[1], sys.argv[2], sys.argv[3], json.load(open(sys.argv[4]))
spark = spark_session(Settings(metastore_uri=uri, warehouse_dir=warehouse, derby_dir=state))
started = time.perf_counter()
for sql in statements:
    spark.sql(sql)
print(time.perf_counter() - started)
"""
# fmt --check in one process, its values built from libyaml's events ("events") or loaded by ruamel.yaml
# ("ruamel", the path schemaflow took before).
FORMAT_IN_ONE_PROCESS = """
import sys
from schemaflow import cli
from schemaflow.spec import fmt
fmt.FILES_PER_PROCESS = sys.maxsize
if sys.argv[2] == "ruamel":
    fmt._values = lambda text, root: fmt._load_ruamel(text)
sys.argv = ["schemaflow", "--project", sys.argv[1], "fmt", "--check"]
cli.run()
"""


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def generate(root: Path, objects: int, seed: int = 7) -> tuple[int, int]:
    """Write a project of ``objects`` objects under ``root``: 10 tables to each view. Returns (tables, views)."""
    rng = random.Random(seed)
    views = objects // 11
    tables = objects - views
    shutil.rmtree(root, ignore_errors=True)
    names = [f"db{d:02d}" for d in range(DATABASES)]
    (root / "schemas").mkdir(parents=True)
    (root / "schemaflow.yaml").write_text(f"databases: [{', '.join(names)}]\n")
    columns_of: dict[str, list[str]] = {}
    for i in range(tables):
        database = names[i % DATABASES]
        name = f"t{i:05d}"
        count = rng.randint(5, 30)
        columns = [f"c{j:02d}" for j in range(count)]
        columns_of[f"{database}.{name}"] = columns
        lines = [f"table: {database}.{name}", f"comment: Table {i} of the generated warehouse",
                 f"format: {'parquet' if i % 2 else 'orc'}", "columns:"]
        # c00 is every table's key, bigint, as the views join on it: Spark refuses a join of other types.
        lines += [f"  - {{name: {c}, type: '{TYPES[(i + j) % len(TYPES)] if j else 'bigint'}', "
                  f"comment: Column {j} of {name}}}" for j, c in enumerate(columns)]
        if i % 2 == 0:
            lines += ["partitioned_by:", "  - {name: ds, type: string, comment: Load date}"]
        lines.append(f"properties: {{owner: team{i % 7}, retention: '{30 + i % 5}'}}")
        write(root / "schemas" / database / f"{name}.yaml", "\n".join(lines) + "\n")
    keys = sorted(columns_of)
    view_keys: list[str] = []
    for i in range(views):
        database = names[i % DATABASES]
        name = f"v{i:04d}"
        if view_keys and i % 4 == 3:  # a view over a view
            base = view_keys[rng.randrange(len(view_keys))]
            sql = f"SELECT c00, c01 FROM {base} WHERE c00 IS NOT NULL"
        else:
            left, right = rng.sample(keys, 2)
            sql = (f"SELECT l.c00, l.c01, r.c02 AS r_c02, r.c03 AS r_c03\n  FROM {left} l\n"
                   f"  JOIN {right} r ON l.c00 = r.c00\n  WHERE l.c04 IS NOT NULL")
        write(root / "schemas" / database / f"{name}.yaml",
              f"view: {database}.{name}\ncomment: View {i}\nsql: |\n  " + sql.replace("\n", "\n  ") + "\n")
        view_keys.append(f"{database}.{name}")
    return tables, views


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def timed(run: Callable[[], object]) -> float:
    started = time.perf_counter()
    run()
    return time.perf_counter() - started


def validate_command(project: Path) -> None:
    done = subprocess.run([SCHEMAFLOW, "--project", str(project), "validate"], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"validate failed:\n{done.stdout}{done.stderr}")


def load_with(project: Path, pure: bool) -> float:
    """In-process validation of the files (nothing cached from an earlier run), composed by libyaml or
    by PyYAML's pure-Python composer."""
    for cached in (_declared, canonical_type, views._parsed, views._analyzed, views.tables_read, views.normalize_sql):
        cached.cache_clear()
    saved = yamlpos.compose
    if pure:
        yamlpos.compose = yamlpos.compose_pure
    try:
        return timed(lambda: load_catalog(project))
    finally:
        yamlpos.compose = saved


def compose_only(project: Path) -> float:
    """libyaml composing every YAML file of ``project`` (read included) into node trees, nothing checked."""
    import yaml

    paths = sorted(project.rglob("*.yaml"))
    def compose() -> None:
        for path in paths:  # each tree dropped, as a reader that checks it and moves on drops it
            yaml.compose(path.read_bytes(), Loader=yaml.CSafeLoader)
    return timed(compose)


def fmt_check(project: Path, *how: str) -> None:
    """``fmt --check`` of ``project`` as a user runs it; with ``how``, as ``FORMAT_IN_ONE_PROCESS`` runs it."""
    command = [sys.executable, "-c", FORMAT_IN_ONE_PROCESS, str(project), *how] if how else [
        SCHEMAFLOW, "--project", str(project), "fmt", "--check"]
    done = subprocess.run(command, capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"fmt --check failed:\n{done.stdout[-2000:]}{done.stderr[-2000:]}")


def plan_base_commits(project: Path) -> Path:
    """Make ``project`` a git repository whose last commit changes 5 files; a clone of it, whose objects
    are packed as those of any clone are (a pull request's CI plans in one), next to it."""
    def git(*args: str) -> None:
        subprocess.run(["git", *args], check=True, capture_output=True)
    author = ("-c", "user.name=bench", "-c", "user.email=bench@example.com")
    git("-C", str(project), "init", "-q")
    git("-C", str(project), "add", "-A")
    git("-C", str(project), *author, "commit", "-qm", "base")
    changed = sorted((project / "schemas").glob("*/t*.yaml"))[:5]
    for path in changed:
        path.write_text(path.read_text().replace("properties: {", "properties: {changed: 'yes', "))
    git("-C", str(project), "add", "-A")
    git("-C", str(project), *author, "commit", "-qm", "head")
    clone = project.with_name("clone")
    git("clone", "-q", "--no-local", str(project), str(clone))
    return clone


def revision_at(revision: str, scratch: Path) -> Path:
    """The package ``schemaflow/`` as it was at the git ``revision`` of this repository, extracted under
    ``scratch`` (run with this environment's libraries)."""
    folder = scratch / f"schemaflow-{revision}"
    folder.mkdir()
    archive = subprocess.run(["git", "-C", str(ROOT), "archive", revision, "schemaflow"], capture_output=True,
                             check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(folder)], input=archive, check=True)
    return folder


def validate_revision(folder: Path, project: Path) -> None:
    """``schemaflow validate`` of the revision extracted at ``folder`` (``revision_at``), as a new process."""
    code = (f"import sys; sys.path.insert(0, {str(folder)!r}); from schemaflow.cli import main; "
            f"sys.exit(main(['--project', {str(project)!r}, 'validate']))")
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True)
    if done.returncode != 0:
        raise SystemExit(f"validate of {folder.name} failed:\n{done.stdout}{done.stderr}")


def plan_base(project: Path) -> None:
    """``plan --base HEAD~1`` in ``project``, which must find the change."""
    done = subprocess.run([SCHEMAFLOW, "--project", str(project), "plan", "--base", "HEAD~1", "--head", "HEAD"],
                          capture_output=True, text=True)
    if done.returncode != 2:
        raise SystemExit(f"plan --base did not find the change:\n{done.stdout}{done.stderr}")


def medians(rounds: int, *runs: Callable[[], object]) -> list[float]:
    """The median seconds of each of ``runs`` over ``rounds`` rounds in which they take turns, so that
    the machine's slower moments fall on each of them alike."""
    seconds: list[list[float]] = [[] for _ in runs]
    for _ in range(rounds):
        for times, run in zip(seconds, runs, strict=True):
            times.append(timed(run))
    return [sorted(times)[len(times) // 2] for times in seconds]


def run_command(project: Path, env: dict[str, str], *args: str, expect: int) -> tuple[float, str, float]:
    """Run ``schemaflow --project project *args`` as a user would: its wall time, its output, and, for
    an apply, the wall time of its steps, claims included, from the moment its first progress line
    appears (the claims' or the first step's) to the moment it says it applied them (its progress
    shows each step's time to a tenth of a second only, too coarse to add up steps of a few hundredths)."""
    started = time.perf_counter()
    with tempfile.TemporaryFile() as errors:
        ran = subprocess.Popen([SCHEMAFLOW, "--project", str(project), *args], stdout=subprocess.PIPE, stderr=errors,
                               env=env)
        assert ran.stdout is not None
        chunks: list[bytes] = []
        first = last = None
        while chunk := os.read(ran.stdout.fileno(), 1 << 16):
            now = time.perf_counter()
            seen = (chunks[-1][-32:] if chunks else b"") + chunk  # a marker may straddle two chunks
            chunks.append(chunk)
            if first is None and re.search(rb"(^|\n)(Claiming the |\[ *1/\d+\] )", seen):
                first = now
            if b"\nApplied " in seen:
                last = now
        code = ran.wait()
        seconds = time.perf_counter() - started
        errors.seek(0)
        out = b"".join(chunks).decode()
        if code != expect:
            raise SystemExit(f"schemaflow {' '.join(args)} exited {code}:\n{out}{errors.read().decode()}")
    return seconds, out, (last - first if first is not None and last is not None else 0.0)


def bare_loop(statements: list[str], env: dict[str, str], scratch: Path) -> float:
    """The seconds a bare loop of ``statements`` through ``spark.sql`` takes in a new process (see ``BARE_LOOP``)."""
    listed = scratch / "statements.json"
    listed.write_text(json.dumps(statements))
    done = subprocess.run([sys.executable, "-c", BARE_LOOP, env["SCHEMAFLOW_METASTORE_URI"],
                           env["SCHEMAFLOW_WAREHOUSE_DIR"], str(scratch / "bare-state"), str(listed)],
                          capture_output=True, text=True, cwd=ROOT)
    if done.returncode != 0:
        raise SystemExit(f"the bare loop failed:\n{done.stdout}{done.stderr}")
    return float(done.stdout.split()[-1])


def apply_figures(project: Path, size: int, backend: str) -> str:
    """One row of the apply table for the project at ``project`` (see the module docstring)."""
    from bench.common import private_session
    from schemaflow.plan.steps import AddDatabase
    from schemaflow.sql import ddl
    from schemaflow.workflow import load_plan

    with private_session("apply", remote=True, backend=backend) as session:
        server = session.spark.conf.get("spark.hadoop.hive.metastore.uris")
        env = {**os.environ, "SCHEMAFLOW_METASTORE_URI": server,
               "SCHEMAFLOW_WAREHOUSE_DIR": session.spark.conf.get("spark.sql.warehouse.dir")}

        progress(f"{size} objects: cold plan of everything against {server}")
        planned, _, _ = run_command(project, env, "plan", "--out", str(project / "plan.json"), expect=2)
        plan = load_plan(project / "plan.json")
        # Each action's Spark SQL on the Hive metastore, as its writer runs it (a created object claimed).
        statements: list[str] = []
        for action in (a for step in plan.steps for a in step.actions):
            if isinstance(action, AddDatabase):
                statements.append(f"CREATE DATABASE {ddl.ident(action.database.name)}")
            statements += [ddl.fill_claim(sql, "bare") if ddl.CLAIM in sql else sql
                           for sql in getattr(action, "statements", ())]
        progress(f"{size} objects: the bare loop of {len(statements)} statements")
        bare = bare_loop(statements, env, project.parent)
        for database in plan.databases:
            session.spark.sql(f"DROP DATABASE {ddl.ident(database)} CASCADE")
        session.spark.sql("USE default")
        progress(f"{size} objects: schemaflow apply of {len(plan.steps)} steps")
        applied, out, steps = run_command(project, env, "apply", str(project / "plan.json"), "--auto-approve",
                                          expect=0)
        progress(f"{size} objects: cold plan again, without a JVM")
        replanned, out, _ = run_command(project, env, "plan", expect=0)
        if not out.startswith("No changes"):
            raise SystemExit(f"the plan after apply found changes:\n{out}")
        # A setting of Hive's metastore client makes schemaflow read through Spark's client, as before.
        settings = project / "schemaflow.yaml"
        plain = settings.read_text()
        settings.write_text(plain + "spark: {conf: {spark.hadoop.hive.metastore.client.socket.timeout: '600'}}\n")
        progress(f"{size} objects: cold plan again, through Spark's client")
        through_spark, out, _ = run_command(project, env, "plan", expect=0)
        settings.write_text(plain)
        appended = append_figures(project, env) if size >= APPENDED else ""
    return (f"| {size:,} | {planned:.1f} s | {bare:.1f} s | {steps:.1f} s | {steps / bare:.2f}x | {applied:.1f} s "
            f"| {replanned:.1f} s | {through_spark:.1f} s |{appended}")


def append_figures(project: Path, env: dict[str, str]) -> str:
    """A column appended to ``APPENDED`` tables: apply's steps, side by side with a bare loop of
    ``ALTER TABLE ... ADD COLUMNS`` on the same tables (run after, adding another column)."""
    files = sorted((project / "schemas").glob("db*/t*.yaml"))[:APPENDED]
    for path in files:
        text = path.read_text()
        path.write_text(text.replace("\npartitioned_by:", "\n  - {name: appended, type: string}\npartitioned_by:", 1)
                        if "\npartitioned_by:" in text else
                        text.replace("\nproperties:", "\n  - {name: appended, type: string}\nproperties:", 1))
    progress(f"{APPENDED} tables: schemaflow apply of a column appended to each")
    applied, out, steps = run_command(project, env, "apply", "--auto-approve", expect=0)
    if f"Applied {APPENDED:,} steps." not in out and f"Applied {APPENDED} steps." not in out:
        raise SystemExit(f"apply did not append the column to {APPENDED} tables:\n{out[-2000:]}")
    keys = [f"{path.parent.name}.{path.stem}" for path in files]
    progress(f"{APPENDED} tables: the bare loop of ALTER TABLE ... ADD COLUMNS")
    bare = bare_loop([f"ALTER TABLE {key} ADD COLUMNS (bare string)" for key in keys], env, project.parent)
    return f" {bare:.1f} s | {steps:.1f} s | {steps / bare:.2f}x | {applied:.1f} s |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="500,1000,5500", help="objects per project, comma-separated")
    parser.add_argument("--large", action="store_true", help="add a project of 11,000 objects")
    parser.add_argument("--rounds", type=int, default=3,
                        help="rounds of validate and plan --base, taking turns; the median of each is shown")
    parser.add_argument("--apply-sizes", default="", help="objects per project to plan and apply against a "
                                                          "metastore server, comma-separated (default: none)")
    parser.add_argument("--backend", choices=("postgresql", "derby"), default="postgresql",
                        help="where the metastore server keeps its metastore (default: postgresql)")
    parser.add_argument("--against", default="", help="a git revision whose validate takes turns with this "
                                                      "checkout's, on the same projects (as a user runs it)")
    args = parser.parse_args()
    sizes = [int(s) for s in args.sizes.split(",") if s] + ([11_000] if args.large else [])
    if sizes:
        print("| objects (tables + views) | validate (command) | per object | in-process: libyaml | pure-Python "
              "composer | ratio | libyaml's compose alone | validate / compose | plan --base (command), where "
              "committed | / validate | plan --base in a clone | / validate |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    formatted: dict[int, tuple[float, float, float, float]] = {}
    against: dict[int, tuple[float, float]] = {}
    for size in sizes:
        with tempfile.TemporaryDirectory(prefix="schemaflow-scale-") as scratch:
            project = Path(scratch) / "project"
            tables, views = generate(project, size)
            progress(f"{size} objects: {tables} tables, {views} views generated; in-process validation")
            fast = load_with(project, pure=False)
            pure = load_with(project, pure=True)
            composed = compose_only(project)
            clone = plan_base_commits(project)
            progress(f"{size} objects: validate, plan --base where committed and in a clone, "
                     f"{args.rounds} rounds of each in turn")
            command, base, cloned = medians(args.rounds, partial(validate_command, project),
                                            partial(plan_base, project), partial(plan_base, clone))
            print(f"| {size:,} ({tables:,} + {views:,}) | {command:.2f} s | {command / size * 1000:.2f} ms "
                  f"| {fast:.2f} s | {pure:.2f} s | {pure / fast:.1f}x | {composed:.2f} s | {command / composed:.1f}x "
                  f"| {base:.2f} s | {base / command:.2f}x "
                  f"| {cloned:.2f} s | {cloned / command:.2f}x |", flush=True)
            if args.against:
                progress(f"{size} objects: validate here and at {args.against}, {args.rounds} rounds in turn")
                against[size] = tuple(medians(args.rounds, partial(validate_command, project), partial(
                    validate_revision, revision_at(args.against, Path(scratch)), project)))  # type: ignore[assignment]
            progress(f"{size} objects: fmt --check, then formatting in one process both ways")
            formatted[size] = (timed(partial(fmt_check, project)), timed(partial(fmt_check, project, "events")),
                               timed(partial(fmt_check, project, "ruamel")), command)
    if against:
        print(f"\n| objects | validate (command) | validate at {args.against} | ratio |\n|---|---|---|---|")
    for size, (here, there) in against.items():
        print(f"| {size:,} | {here:.2f} s | {there:.2f} s | {here / there:.2f}x |", flush=True)
    if formatted:
        print(f"\n| objects | fmt --check (command, {os.cpu_count()} processes) | per object | / validate "
              "| in one process: values from libyaml's events | ruamel.yaml's load | ratio |")
        print("|---|---|---|---|---|---|---|")
    for size, (check, events, ruamel, command) in formatted.items():
        print(f"| {size:,} | {check:.2f} s | {check / size * 1000:.2f} ms | {check / command:.1f}x | {events:.2f} s "
              f"| {ruamel:.2f} s | {ruamel / events:.1f}x |", flush=True)
    if args.apply_sizes:
        print("| objects | cold plan, all to create | bare loop of the statements | apply's steps | ratio "
              "| apply (command) | cold plan, nothing to do | the same through Spark's client "
              f"| {APPENDED:,} ADD COLUMNS, bare | apply's steps | ratio | apply (command) |")
        print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for size in [int(s) for s in args.apply_sizes.split(",") if s]:
        with tempfile.TemporaryDirectory(prefix="schemaflow-apply-") as scratch:
            project = Path(scratch) / "project"
            generate(project, size)
            print(apply_figures(project, size, args.backend), flush=True)


if __name__ == "__main__":
    main()
