"""Plans between git refs: desired state read from commits, never checked out, and no JVM.

Each test builds a temporary repository whose first commit (branch ``main``) is the example
project; the change under review is a second commit, or uncommitted edits in the work tree.
"""
from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import threading
from pathlib import Path

import git
import pytest

from schemaflow.cli import main
from schemaflow.model import APPLIED_COMMIT_KEY, MANAGED_KEYS_KEY, catalog_digest
from schemaflow.plan.plan import Plan
from schemaflow.plan.settings_changes import settings_digest
from schemaflow.plan.steps import SetParameters
from schemaflow.project import load_project
from schemaflow.workflow import desired_state, hash_migrations, review_refs
from tests.gitrepos import commit, edit, example_repo, init_repo, put_project

ROOT = Path(__file__).resolve().parent.parent
ORDERS_AMOUNT = '  - {name: amount, type: "decimal(12,2)"}\n'
COUPON = '  - {name: coupon, type: string, comment: Promotion code}\n'


@pytest.fixture
def repo(tmp_path: Path) -> git.Repo:
    """A repository whose one commit, on main, is the example project."""
    return example_repo(tmp_path / "repo")


def project_dir(repo: git.Repo) -> Path:
    return Path(repo.working_tree_dir)


def plan_refs(repo: git.Repo, base: str, head: str | None = None, **kw):
    return review_refs(load_project(project_dir(repo), env={}), base, head, **kw).plan


def steps(plan) -> list[tuple[str, str, bool]]:
    return [(s.kind, s.object, bool(s.blocked)) for s in plan.steps]


def test_each_change_kind_between_two_commits(repo):
    schemas = project_dir(repo) / "schemas"
    edit(schemas / "retail/orders.yaml", ORDERS_AMOUNT, ORDERS_AMOUNT + COUPON)
    edit(schemas / "retail/customers.yaml", "rewritten nightly", "rewritten hourly")
    edit(schemas / "retail/customers.yaml", "{name: name, type: string}",
         "{name: name, type: string, comment: Full name}")
    edit(schemas / "retail/customers.yaml", "{orc.compress: ZSTD, owner: sales-eng}", "{owner: crm-team}")
    edit(schemas / "analytics/daily_sessions.yaml", "  GROUP BY", "  WHERE pages > 0\n  GROUP BY")
    (schemas / "analytics/marketing_spend.yaml").unlink()
    (schemas / "retail/returns.yaml").write_text(
        "table: retail.returns\ncolumns:\n  - {name: order_id, type: bigint}\n  - {name: reason, type: string}\n")
    (schemas / "retail/returned_orders.yaml").write_text(
        "view: retail.returned_orders\n"
        "sql: SELECT o.order_id, r.reason FROM orders o JOIN returns r USING (order_id)\n")
    repo.git.checkout("--quiet", "-b", "feature")
    commit(repo, "the change under review")

    plan = plan_refs(repo, "main", "feature")

    assert steps(plan) == [
        ("drop_table", "analytics.marketing_spend", True),
        ("alter_columns", "retail.customers", False),
        ("set_table_comment", "retail.customers", False),
        ("add_columns", "retail.orders", False),
        ("create_table", "retail.returns", False),
        ("replace_view", "analytics.daily_sessions", False),
        ("create_view", "retail.returned_orders", False),
    ]
    summaries = [s.summary for s in plan.steps]
    assert summaries[1] == "alter columns of retail.customers: change comment of name"
    assert summaries[2] == ("comment on table retail.customers: 'Customers, one row each, rewritten nightly' "
                            "-> 'Customers, one row each, rewritten hourly'")
    assert summaries[5] == "re-create view analytics.daily_sessions: SQL changed"
    # The views over retail.orders name their columns: the appended one breaks none of them.
    # The base plays the live side as an apply of it left it: a property it declared and head does not is unset.
    customers = plan.steps[2]
    assert customers.notes == ("properties: set owner; unset orc.compress",)
    stamp = customers.actions[-1]
    assert isinstance(stamp, SetParameters)
    assert (stamp.set["owner"], stamp.set[MANAGED_KEYS_KEY], stamp.unset) == ("crm-team", "owner", ("orc.compress",))
    # No metastore, so no partition count.
    assert plan.steps[3].notes == ("table only: an unknown number of existing partitions keep their old column list "
                                   "(safe: appended columns read as NULL there)",)


def test_head_defaults_to_the_work_tree_with_its_uncommitted_edits(repo):
    orders = project_dir(repo) / "schemas/retail/orders.yaml"
    edit(orders, ORDERS_AMOUNT, ORDERS_AMOUNT + COUPON)  # not committed: the base must not see it
    (project_dir(repo) / "schemas/retail/untracked.yaml").write_text(
        "table: retail.untracked\ncolumns: [{name: id, type: int}]\n")

    plan = plan_refs(repo, "main")

    assert steps(plan)[:2] == [("add_columns", "retail.orders", False), ("create_table", "retail.untracked", False)]
    assert plan.steps[0].summary == "add 1 column to retail.orders: coupon string"
    assert plan_refs(repo, "main", "main").is_empty  # the commit itself is untouched by the edits


def test_an_unchanged_work_tree_plans_nothing(repo, capsys):
    assert main(["--project", str(project_dir(repo)), "plan", "--base", "main", "--format", "json"]) == 0
    captured = capsys.readouterr()
    document = json.loads(captured.out)
    assert Plan.from_data(document).is_empty  # its checksum holds
    del document["checksum"]
    assert document == {"allow_destructive": False, "databases": ["analytics", "retail"], "format_version": 4,
                        "steps": [], "warnings": [], "basis": "git", "fingerprints": {}, "guards": {}, "partition_counts": {},
                        "commit": repo.head.commit.hexsha, "project": catalog_digest(desired_state(load_project(project_dir(repo)))),
                        "metastore": None, "target": None, "against": "main",
                        "settings": settings_digest(load_project(project_dir(repo)).settings.declared)}
    assert captured.err == ("Planning the working tree against main from git, without a metastore: "
                            "partition counts are unknown.\n")


def test_settings_are_read_at_each_ref(repo):
    settings = project_dir(repo) / "schemaflow.yaml"
    edit(settings, "databases: [analytics, retail]", "databases: [analytics, retail, finance]")
    finance = project_dir(repo) / "schemas/finance"
    finance.mkdir()
    (finance / "ledger.yaml").write_text("table: finance.ledger\ncolumns: [{name: entry, type: bigint}]\n")
    commit(repo, "manage finance too")

    plan = plan_refs(repo, "HEAD~1", "HEAD")

    assert plan.databases == ("analytics", "retail", "finance")
    assert steps(plan) == [("create_database", "finance", False), ("create_table", "finance.ledger", False),
                           ("change_settings", "schemaflow.yaml", False)]
    assert plan.steps[-1].values == ('databases: ["analytics", "retail"] -> ["analytics", "retail", "finance"]',)


def test_a_base_without_schemas_creates_everything(tmp_path):
    repo = init_repo(tmp_path / "repo")
    commit(repo, "before schemaflow")
    put_project(ROOT / "schemas", tmp_path / "repo" / "schemas")

    plan = plan_refs(repo, "main")

    assert [s.kind for s in plan.steps] == ["create_database"] * 2 + ["create_table"] * 6 + ["create_view"] * 4


def test_a_project_in_a_folder_of_the_repository(tmp_path):
    repo = init_repo(tmp_path / "repo")
    project = tmp_path / "repo" / "warehouse"
    shutil.copytree(ROOT / "schemas", project / "schemas")
    (tmp_path / "repo" / "schemas").mkdir()  # a folder of the same name elsewhere in the repository is not read
    (tmp_path / "repo" / "schemas" / "decoy.yaml").write_text("not: a schema\n")
    commit(repo, "base")
    edit(project / "schemas/retail/orders.yaml", ORDERS_AMOUNT, ORDERS_AMOUNT + COUPON)

    plan = review_refs(load_project(project, env={}), "main").plan

    assert steps(plan)[0] == ("add_columns", "retail.orders", False)


def test_a_problem_at_a_ref_is_placed_at_that_ref(repo, capsys):
    edit(project_dir(repo) / "schemas/retail/orders.yaml", "customer_id, type: bigint}", "customer_id, type: bigitn}")
    commit(repo, "a typo")
    (project_dir(repo) / "schemas/retail/orders.yaml").write_text((ROOT / "schemas/retail/orders.yaml").read_text())

    assert main(["--project", str(project_dir(repo)), "plan", "--base", "main"]) == 1

    err = capsys.readouterr().err.splitlines()
    assert err[1].startswith("main:schemas/retail/orders.yaml:6:31: unknown type 'bigitn'")
    assert err[-1] == "1 problem found; nothing was planned or applied."


def test_a_problem_in_the_settings_at_a_ref_is_placed_at_that_ref(repo, capsys):
    settings = project_dir(repo) / "schemaflow.yaml"
    edit(settings, "databases: [analytics, retail]", "databses: [analytics, retail]")
    commit(repo, "a typo in the settings")
    edit(settings, "databses:", "databases:")

    assert main(["--project", str(project_dir(repo)), "plan", "--base", "main"]) == 1

    assert capsys.readouterr().err.splitlines()[1] == (
        "main:schemaflow.yaml:6:1: unknown key 'databses' (expected one of: after_apply, databases, exclude, functions, invalidation, manage_undeclared, metastore, readers, spark, target, targets, warehouse_dir)")


def test_a_ref_that_names_no_commit(repo, capsys):
    assert main(["--project", str(project_dir(repo)), "plan", "--base", "origin/main"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: 'origin/main' is not a commit in the git repository at {project_dir(repo)}: "
        "check the name, or fetch it first (git fetch origin)")


def test_not_a_git_repository(tmp_path, capsys):
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    assert main(["--project", str(tmp_path), "plan", "--base", "main"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: {tmp_path} is not in a git repository, so there is no 'main' to plan from")


def test_a_shallow_clone_plans_once_the_base_is_fetched(repo, tmp_path, capsys):
    repo.git.checkout("--quiet", "-b", "feature")
    edit(project_dir(repo) / "schemas/retail/orders.yaml", ORDERS_AMOUNT, ORDERS_AMOUNT + COUPON)
    commit(repo, "the change under review")
    # As CI checks out a pull request: one commit of one branch.
    clone = git.Repo.clone_from(f"file://{project_dir(repo)}", tmp_path / "clone", depth=1, branch="feature")
    args = ["--project", str(tmp_path / "clone"), "plan", "--base", "origin/main"]

    assert main(args) == 1
    fetch = "git fetch --depth=1 origin +refs/heads/main:refs/remotes/origin/main"
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: 'origin/main' is not a commit in the git repository at {tmp_path / 'clone'}, a shallow clone: "
        f"fetch it first, e.g. {fetch}")

    clone.git.execute(fetch.split())
    assert main(args + ["--format", "json"]) == 2
    shallow = json.loads(capsys.readouterr().out)
    full = json.loads(plan_refs(repo, "main", "feature").to_json())
    # The same plan; only the words for its base (and so the checksum) differ.
    assert (shallow.pop("against"), full.pop("against")) == ("origin/main", "main")
    assert {k: v for k, v in shallow.items() if k != "checksum"} == {k: v for k, v in full.items() if k != "checksum"}
    assert [s["kind"] for s in shallow["steps"]][0] == "add_columns"


def test_a_shallow_clone_knows_the_name_of_a_parent_it_does_not_have(repo, tmp_path, capsys):
    commit(repo, "second")
    git.Repo.clone_from(f"file://{project_dir(repo)}", tmp_path / "clone", depth=1)
    assert main(["--project", str(tmp_path / "clone"), "plan", "--base", "HEAD~1"]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == (
        f"error: 'HEAD~1' is not a commit in the git repository at {tmp_path / 'clone'}, a shallow clone: "
        "fetch its history first, e.g. git fetch --unshallow")


@pytest.mark.parametrize("args, message", [
    (["--head", "main"], "error: --head needs --base: the git ref to plan against"),
    (["--base", "main", "--against", "live.json"],
     "error: --base and --against both say what to plan against: give one"),
])
def test_refs_options_that_do_not_go_together(repo, capsys, args, message):
    assert main(["--project", str(project_dir(repo)), "plan", *args]) == 1
    assert capsys.readouterr().err.splitlines()[-1] == message


def test_planning_between_refs_loads_no_jvm(repo):
    """Run in a fresh interpreter: this process may have imported pyspark for other tests."""
    edit(project_dir(repo) / "schemas/retail/orders.yaml", ORDERS_AMOUNT, ORDERS_AMOUNT + COUPON)
    args = ["--project", str(project_dir(repo)), "plan", "--base", "main", "--format", "markdown"]
    script = ("import sys; from schemaflow.cli import main; "
              f"code = main({args!r}); "
              "print(code, sorted(m for m in sys.modules if m.split('.')[0] in ('pyspark', 'py4j')), file=sys.stderr)")
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert result.stderr.splitlines()[-1] == "2 []"
    assert result.stdout.startswith("<!-- schemaflow-plan -->\n")


def test_a_migration_already_on_the_base_is_not_planned_again(tmp_path):
    project = tmp_path / "project"
    repo = init_repo(project)
    (project / "schemas/retail").mkdir(parents=True)
    orders = project / "schemas/retail/orders.yaml"
    orders.write_text("table: retail.orders\ncolumns:\n  - {name: order_id, type: bigint}\n"
                      "  - {name: customer_id, type: bigint}\n")
    (project / "migrations").mkdir()
    (project / "migrations/0001_rename.yaml").write_text(
        "description: Rename cust_id\nchanges:\n  - rename_column: {table: retail.orders, from: cust_id, to: customer_id}\n")
    hash_migrations(load_project(project, env={}))
    commit(repo, "base: the rename is merged (and applied)")
    orders.write_text(orders.read_text() + "  - {name: coupon, type: string}\n")
    head = commit(repo, "head: a new column")

    review = review_refs(load_project(project, env={}), "HEAD~1", "HEAD")
    assert [(s.kind, s.summary) for s in review.plan.steps] == [
        ("add_columns", "add 1 column to retail.orders: coupon string")]
    assert review.plan.steps[0].actions[-1].set[APPLIED_COMMIT_KEY] == head


def test_a_branch_that_edits_an_applied_migration_is_reported(tmp_path):
    project = tmp_path / "project"
    repo = init_repo(project)
    (project / "schemas/retail").mkdir(parents=True)
    (project / "schemas/retail/orders.yaml").write_text(
        "table: retail.orders\ncolumns:\n  - {name: order_id, type: bigint}\n  - {name: customer_id, type: bigint}\n")
    migration = project / "migrations/0001_rename.yaml"
    migration.parent.mkdir()
    migration.write_text("description: Rename cust_id\n"
                         "changes:\n  - rename_column: {table: retail.orders, from: cust_id, to: customer_id}\n")
    hash_migrations(load_project(project, env={}))
    commit(repo, "base")
    edit(migration, "description: Rename cust_id", "description: Rename cust_id, reworded")
    hash_migrations(load_project(project, env={}))

    [step] = review_refs(load_project(project, env={}), "main").plan.steps
    assert step.summary.startswith("migration 0001_rename was edited after it was applied to retail.orders")
    assert step.blocked


def test_a_blob_both_refs_share_is_read_from_git_once(tmp_path):
    from schemaflow.gitsource import _blob_bytes, desired_at

    repo = init_repo(tmp_path)
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    commit(repo, "base")
    edit(tmp_path / "schemas" / "retail" / "orders.yaml", "comment: One row per order line", "comment: Changed")
    commit(repo, "head")
    files = len(list((ROOT / "schemas").rglob("*.yaml")))
    before = _blob_bytes.cache_info()
    base, head = desired_at(tmp_path, "HEAD~1"), desired_at(tmp_path, "HEAD")
    after = _blob_bytes.cache_info()
    assert base.objects["retail.orders"].comment != head.objects["retail.orders"].comment == "Changed"
    # Each distinct blob read once (or not at all, when an earlier test read it): never twice.
    assert after.misses - before.misses <= files + 1
    assert after.hits - before.hits >= files - 1


def _blobs_of(tmp_path: Path) -> tuple[git.Repo, list[git.Blob]]:
    """A repository of enough files to be read ahead, each its own content; their blobs in name order."""
    from schemaflow.gitsource import _FEWEST_AHEAD

    repo = init_repo(tmp_path)
    for i in range(_FEWEST_AHEAD):
        (tmp_path / f"file{i:03d}.txt").write_text(_content(i))
    commit(repo, "files")
    return repo, sorted((b for b in repo.head.commit.tree.blobs), key=lambda b: b.name)


def _content(i: int) -> str:
    return f"content {i}\n" * (i + 1)


def _held_after_first(monkeypatch: pytest.MonkeyPatch, then: str) -> threading.Event:
    """Make each git pass hand over its first blob, then wait for the event returned, then go on
    (``then="continue"``) or fail (``then="fail"``)."""
    from schemaflow import gitsource

    release = threading.Event()
    answers_of = gitsource._batch_answers

    def held(pipe: int, wanted: list[bytes]):
        answers = answers_of(pipe, wanted)
        yield next(answers)
        assert release.wait(10)
        if then == "fail":
            raise OSError("git went away")
        yield from answers
    monkeypatch.setattr(gitsource, "_batch_answers", held)
    return release


def test_a_read_ahead_hands_over_each_blob_as_git_sends_it(tmp_path, monkeypatch):
    from schemaflow.gitsource import _Blobs

    repo, blobs = _blobs_of(tmp_path)
    release = _held_after_first(monkeypatch, "continue")
    read = _Blobs(100)
    read.read_ahead(repo, blobs)
    # The first file is there to parse while git has yet to send the others.
    assert read(blobs[0]) == b"content 0\n"
    assert read.coming == {b.binsha for b in blobs[1:]}
    release.set()
    assert [read(b).decode() for b in blobs[1:]] == [_content(i) for i in range(1, len(blobs))]
    # Each read from git once, by the pass, then taken from it.
    assert read.cache_info()[:2] == (len(blobs), len(blobs))


def test_a_few_blobs_are_not_read_ahead(tmp_path):
    from schemaflow.gitsource import _Blobs

    repo, blobs = _blobs_of(tmp_path)
    read = _Blobs(100)
    read.read_ahead(repo, blobs[1:])  # one too few: gitpython's git, already running, reads each
    assert not read.coming and not read.contents
    read.read_ahead(repo, blobs)
    assert [read(b).decode() for b in blobs] == [_content(i) for i in range(len(blobs))]
    assert read.cache_info()[:2] == (len(blobs), len(blobs))


def test_a_read_ahead_that_fails_part_way_leaves_every_blob_readable(tmp_path, monkeypatch):
    from schemaflow.gitsource import _Blobs

    repo, blobs = _blobs_of(tmp_path)
    release = _held_after_first(monkeypatch, "fail")
    read = _Blobs(100)
    read.read_ahead(repo, blobs)
    release.set()
    # Those the pass did not send are read one at a time, as without it.
    assert [read(b).decode() for b in reversed(blobs)] == [_content(i) for i in reversed(range(len(blobs)))]
    assert not read.coming
    assert read.cache_info()[:2] == (1, len(blobs))


def test_the_answers_of_git_cat_file_are_read_however_the_pipe_splits_them():
    from schemaflow.gitsource import _batch_answers

    ids = [bytes([i]) * 20 for i in range(1, 5)]
    answers = (f"{ids[0].hex()} blob 5\nfirst\n{ids[1].hex()} missing\n{ids[2].hex()} blob 0\n\n"
               f"{ids[3].hex()} blob 12\nline\nline\nx\n\n").encode()
    for piece in (1, 3, 7, len(answers)):
        reading, writing = os.pipe()

        def write(size: int = piece, writing: int = writing) -> None:
            for start in range(0, len(answers), size):
                os.write(writing, answers[start:start + size])
            os.close(writing)
        writer = threading.Thread(target=write)
        writer.start()
        assert list(_batch_answers(reading, ids)) == [
            (ids[0], b"first"), (ids[1], None), (ids[2], b""), (ids[3], b"line\nline\nx\n")]
        writer.join()
        os.close(reading)
    # An answer cut short ends the answers: what is missing is read on its own.
    reading, writing = os.pipe()
    os.write(writing, answers[:60])  # the first answer and part of the second
    os.close(writing)
    assert list(_batch_answers(reading, ids)) == [(ids[0], b"first")]
    os.close(reading)


def test_a_view_diff_between_refs_shows_only_what_changed_under_the_base_s_name(repo):
    view = project_dir(repo) / "schemas/retail/open_orders.yaml"
    view.write_text("view: retail.open_orders\nsql: |\n  SELECT order_id\n  FROM orders\n  WHERE amount > 0\n")
    commit(repo, "a view that names its table unqualified")
    edit(view, "amount > 0", "amount > 10")
    [step] = [s for s in plan_refs(repo, "main").steps if s.object == "retail.open_orders"]
    # Both sides as apply stores them (tables qualified): no false line, and the old side is the base's.
    assert step.sql_diff == ("--- base", "+++ schemas", "@@ -1,3 +1,3 @@", " SELECT order_id", " FROM `retail`.orders",
                             "-WHERE amount > 0", "+WHERE amount > 10")


def test_a_gitlink_under_schemas_at_a_ref_is_refused_at_its_path(tmp_path, monkeypatch, capsys):
    repo = example_repo(tmp_path / "repo")
    # A submodule's entry with no .gitmodules: a gitlink, as a careless `git add` of a nested clone makes.
    repo.git.update_index("--add", "--cacheinfo", f"160000,{'1' * 40},schemas/retail/vendored")
    repo.git.commit("--quiet", "-m", "a nested clone")
    monkeypatch.chdir(tmp_path / "repo")
    assert main(["plan", "--base", "HEAD~1", "--head", "HEAD"]) == 1
    err = capsys.readouterr().err
    assert "HEAD:schemas/retail/vendored:1:1: a git submodule: the commit holds another repository's commit id" in err
    assert "Traceback" not in err
