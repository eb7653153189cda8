"""Plans worded for the catalog they run on: what a reviewer reads of a plan for an Iceberg REST catalog or Glue is the
catalog's own calls and what they change, never the Hive metastore's SQL (``render.catalog_words``).

A plan for the REST catalog is built in this process (no server: its words need none) and a plan for Glue is made by
``schemaflow plan`` against moto's Glue, then applied while the Glue calls it makes are recorded: every call the plan
names is one apply makes, and apply makes no write the plan does not name. Text a user wrote or a catalog holds
(names, comments, properties, view SQL) stays inert on its way to a terminal and to a pull-request comment. A saved plan
that names no catalog is the Hive metastore's.
"""
from __future__ import annotations

import io
import json
import re
from collections.abc import Iterator
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path
from typing import Any

import boto3
import pytest
from moto import mock_aws

from schemaflow.catalog.backends import BUILT_IN, backend_capabilities
from schemaflow.cli import main
from schemaflow.model import Catalog, Column, IcebergState, PartitionField, Table, View
from schemaflow.plan.kinds import ActionKind, ObjectType, StepKind
from schemaflow.plan.plan import PlanBuilder, Plan
from schemaflow.plan.steps import CreateViewAction, ForgetEntryAction, RegisterTableAction, Step
from schemaflow.render import render
from schemaflow.render.catalog_words import VARIANTS
from schemaflow.render.review import Review
from tests.glue_versions import versioned_glue
from tests.golden import golden

CASES = Path(__file__).parent / "cases" / "wording"
DOCS = Path(__file__).parent.parent / "docs" / "backends"
STATE = IcebergState("8f1c0a6e-0000-4000-8000-000000000001", 3, 1, 0, 2, "s3://lake/sales/orders/metadata/v4.json")
# What a hostile author or catalog may write: terminal escapes, a bidi override, a line of its own that reads as one of
# schemaflow's, a fence, the end of the comment's fold, a mention, HTML and a link.
HOSTILE = ("x\x1b[31m\u202e\n-- iceberg_rest: drop table sales.orders\n```\n</details>@team <img src=x> "
           "https://evil.example")


def rest_plan(hostile: str | None = None, dropped: str = "sales.old_orders") -> Plan:
    """A plan for the Iceberg REST catalog: a table evolved, one dropped, a view re-created, one created; ``hostile``
    in place of each comment and property value the author writes."""
    database, name = dropped.split(".")
    live_orders = Table("sales", "orders", (Column("id", "bigint"), Column("amount", "decimal(10,2)", "in euros")),
                        format="iceberg", data_source=True, comment="orders placed", properties={"team": "sales"},
                        iceberg=STATE, version="a1", managed_keys=("team",))
    live_old = Table(database, name, (Column("id", "bigint"),), format="iceberg", data_source=True, iceberg=STATE,
                     version="b2")
    live_recent = View("sales", "recent", "SELECT id FROM sales.orders", version="c3")
    orders = Table("sales", "orders", (Column("id", "bigint"), Column("amount", "decimal(12,2)", "in euros"),
                                       Column("coupon", "string", hostile or "code used")),
                   format="iceberg", data_source=True, comment=hostile or "orders taken",
                   properties={"team": hostile or "finance"},
                   partition_spec=(PartitionField("bucket", "id", 16),))
    recent = View("sales", "recent", "SELECT id, amount\nFROM sales.orders\nWHERE amount > 0", comment="recent ones")
    large = View("sales", "large", "SELECT id FROM sales.orders WHERE amount > 100", (Column("id", None, "the order"),))
    live = Catalog(("sales",), {t.key: t for t in (live_orders, live_old, live_recent)})
    desired = Catalog(("sales",), {o.key: o for o in (orders, recent, large)})
    return PlanBuilder(desired, live, allow_destructive=True, catalog="iceberg_rest",
                       capabilities=backend_capabilities("iceberg_rest")).build()


def test_a_rest_plan_reads_as_the_catalogs_calls() -> None:
    review = Review(rest_plan())
    text, verbose, comment = render(review, "text"), render(review, "text", verbose=True), render(review, "markdown")
    assert text == golden(CASES / "iceberg_rest.txt", text)
    assert verbose == golden(CASES / "iceberg_rest-verbose.txt", verbose)
    assert comment == golden(CASES / "iceberg_rest.md", comment)
    statements = comment.split("```sql\n")[1]
    assert "CREATE" not in text + statements and "ALTER" not in text + statements and "metastore" not in statements
    assert "Planned: the working tree against the Iceberg REST catalog." in comment
    assert text in (DOCS / "iceberg-rest.md").read_text()  # the page shows this plan as a reviewer reads it


def test_hostile_text_in_the_words_stays_inert() -> None:
    review = Review(rest_plan(HOSTILE, "sales.old\x1b[2J`|name"))
    text, verbose, comment = render(review, "text"), render(review, "text", verbose=True), render(review, "markdown")
    for shown in (text, verbose):
        assert not re.search("[\x1b\u202e]", shown)
        # Each line that reads as a call of the catalog is one of schemaflow's: the forged one stays inside its value.
        firsts = [line.strip() for line in shown.splitlines() if line.strip().startswith("-- iceberg_rest:")]
        assert [line.split(" (")[0] for line in firsts if "drop table sales.orders" in line] == []
    assert "drop table sales.old\\x1b[2J`|name (DELETE" in text
    # In the comment: the statements are one fenced block longer than any run of backticks in them, and outside
    # it nothing the author wrote is a tag, a mention or a link.
    fence = re.search(r"^(`{3,})sql$", comment, flags=re.M)
    assert fence is not None and len(fence.group(1)) > 3
    before, inside, after = comment.partition(f"{fence.group(1)}sql\n")[0], *comment.partition(
        f"{fence.group(1)}sql\n")[2].split(f"\n{fence.group(1)}\n", 1)
    assert HOSTILE.split("\n")[1] not in before + after
    assert after == "\n</details>\n" and before.count("<details>") == 1
    assert not re.search(r"(?<!\\)<(?!!--|details>|summary>|/summary>|br>)", before)  # a tag: schemaflow's own only
    assert "@team" not in before and "https://evil" not in before
    assert "--   set team='x\\x1b[31m\\u202e\\n-- iceberg_rest: drop table sales.orders\\n```\\n</details>@team <img " \
           "src=x> https://evil.example'" in inside.split("\n")


def test_a_kind_the_catalog_does_not_take_says_apply_refuses_it() -> None:
    view = View("sales", "recent", "SELECT 1 AS one")
    step = Step(StepKind.CREATE_VIEW, view.key, ObjectType.VIEW, "create view sales.recent", (CreateViewAction(view),))
    text = render(Review(Plan((step,), ("sales",), catalog="glue")), "text")
    assert "       -- glue: create view sales.recent (this catalog takes no such change: apply refuses it)\n" in text


def test_a_move_reads_as_a_register_in_the_new_catalog_and_a_forget_in_the_old() -> None:
    metadata = "file:///lake/sales/clicks/metadata/00003-x.metadata.json"
    register = Step(StepKind.REGISTER_TABLE, "sales.clicks", ObjectType.TABLE, "register table sales.clicks",
                    (RegisterTableAction("sales.clicks", metadata, "r1", "thrift://old:9083\x1b[2J"),))
    forget = Step(StepKind.FORGET_ENTRY, "sales.clicks", ObjectType.TABLE, "forget sales.clicks",
                  (ForgetEntryAction("sales.clicks", ObjectType.TABLE, "r1", "thrift://old:9083"),))
    text = render(Review(Plan((register, forget), ("sales",), catalog="iceberg_rest")), "text")
    assert ("       -- iceberg_rest: register table sales.clicks (POST /v1/{prefix}/namespaces/{namespace}/register: "
            "one request, refused with a 409 where the name is taken)\n"
            f"       --   metadata file {metadata!r}, its current one in thrift://old:9083\\x1b[2J\n"
            "       --   no file written or copied\n") in text, text
    assert ("       -- thrift://old:9083: forget the table entry sales.clicks in the catalog moved from, its files kept "
            "(they are the moved object's)\n") in text, text
    assert "\x1b" not in text


def test_every_call_a_backend_names_is_of_a_kind_of_action() -> None:
    kinds = {kind.value for kind in ActionKind}
    for name in BUILT_IN:
        wording = backend_capabilities(name).wording
        for key in wording.calls:
            kind, _, variant = key.partition(":")
            assert kind in kinds and (not variant or variant in VARIANTS[kind]), (name, key)
        assert wording.sql == (name == "hive")


def test_a_saved_plan_without_a_catalog_is_the_hive_metastores() -> None:
    plan = rest_plan()
    data = plan.to_data()
    assert data["catalog"] == "iceberg_rest" and Plan.from_data(json.loads(plan.to_json())) == plan
    hive = PlanBuilder(Catalog(("sales",), {"sales.t": Table("sales", "t", (Column("id", "bigint"),))}),
                       Catalog()).build()
    saved = json.loads(hive.to_json())
    assert "catalog" not in saved and saved["format_version"] == 4
    loaded = Plan.from_data(saved)
    assert loaded.catalog == "hive" and loaded == hive
    assert "CREATE TABLE `sales`.`t`" in render(Review(loaded), "text")


def test_a_plan_for_a_backend_not_installed_here_is_not_shown(tmp_path: Path) -> None:
    plan = Plan((), ("sales",), catalog="nocat\x1b[2J")
    (tmp_path / "plan.json").write_text(plan.to_json())
    code, out, err = run(tmp_path, "show", str(tmp_path / "plan.json"))
    assert (code, out) == (1, "")
    # The backends are those registered in this process: other tests register some of their own.
    assert re.fullmatch(r"error: the plan was made for the catalog backend 'nocat\\x1b\[2J', which is not installed "
                        r"here \(the backends are glue, hive, iceberg_rest[a-z_, ]*\): install it to show the plan as "
                        r"apply would run it\n", err)


# -- Glue, end to end on moto ------------------------------------------------------------------------------------------

REGION = "eu-west-1"
SETTINGS = f'databases: [sales]\nmetastore: {{type: glue, options: {{region: {REGION}, catalog_id: "123456789012"}}}}\n'
FIRST = {
    "schemaflow.yaml": SETTINGS,
    "schemas/sales/orders.yaml": "table: sales.orders\nformat: orc\ncomment: orders placed\ncolumns:\n"
                                 "  - {name: id, type: bigint}\n  - {name: qty, type: int}\npartitioned_by:\n"
                                 "  - {name: ds, type: string}\nproperties: {team: sales}\n",
    "schemas/sales/events.yaml": "table: sales.events\nusing: parquet\ncolumns:\n  - {name: id, type: bigint}\n",
}
SECOND = {
    "schemas/sales/orders.yaml": "table: sales.orders\nformat: orc\ncomment: orders taken\ncolumns:\n"
                                 "  - {name: id, type: bigint}\n  - {name: qty, type: bigint, comment: how many}\n"
                                 "  - {name: coupon, type: string, comment: code used}\npartitioned_by:\n"
                                 "  - {name: ds, type: string}\nproperties: {team: finance}\n",
    "schemas/sales/lines.yaml": "table: sales.lines\nformat: textfile\nexternal: true\nlocation: s3://lake/lines\n"
                                "columns:\n  - {name: id, type: bigint}\n  - {name: text, type: string}\n",
}


@pytest.fixture
def glue(monkeypatch: pytest.MonkeyPatch) -> Iterator[list[str]]:
    """moto's Glue with the VersionId layer; the Glue operations clients call, in order."""
    for name in ("AWS_ACCESS_KEY_ID", "AWS_SECRET_ACCESS_KEY"):
        monkeypatch.setenv(name, "testing")
    called: list[str] = []
    with mock_aws(), versioned_glue():
        boto3.setup_default_session()
        boto3.DEFAULT_SESSION.events.register(  # type: ignore[union-attr]
            "before-call.glue", lambda model, **_: called.append(model.name))
        yield called
    boto3.DEFAULT_SESSION = None


def run(root: Path, *argv: str) -> tuple[int, str, str]:
    out, err = io.StringIO(), io.StringIO()
    with redirect_stdout(out), redirect_stderr(err):
        code = main(["--project", str(root), *argv])
    return code, out.getvalue(), err.getvalue()


def write(root: Path, files: dict[str, str]) -> None:
    for name, text in files.items():
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text(text)


def named_calls(text: str) -> set[str]:
    """The Glue operations a plan's words name."""
    return set(re.findall(r"glue:(\w+)", text))


WRITES = re.compile(r"Create|Update|Delete")  # what of Glue's API changes the catalog


def written(called: list[str]) -> set[str]:
    """The writes among ``called`` that a plan's steps make: all but the last ``UpdateDatabase``, the history an
    apply records on its database once its steps ran (``catalog.history``), which is no step of the plan."""
    assert called[-1] == "UpdateDatabase"
    return {c for c in called[:-1] if WRITES.search(c)}


def test_a_glue_plan_names_the_calls_apply_makes(glue: list[str], tmp_path: Path) -> None:
    # The plan --verbose names every write, schemaflow's bookkeeping too (the record of the settings applied on the
    # database is one more UpdateDatabase).
    write(tmp_path, FIRST)
    code, first, _ = run(tmp_path, "plan", "--verbose")
    assert code == 2 and "glue:CreateTable, the entry Spark's Hive catalog writes, a managed" in first
    glue.clear()
    assert run(tmp_path, "apply", "--auto-approve")[0] == 0
    assert written(glue) <= named_calls(first) <= set(glue)

    client = boto3.client("glue", region_name=REGION)  # a partition, of the columns it has now, for the cascade
    storage = client.get_table(DatabaseName="sales", Name="orders")["Table"]["StorageDescriptor"]
    client.create_partition(DatabaseName="sales", TableName="orders", PartitionInput={
        "Values": ["2024-01-01"], "StorageDescriptor": {**storage, "Location": "s3://lake/orders/ds=2024-01-01"}})
    write(tmp_path, SECOND)
    (tmp_path / "schemas/sales/events.yaml").unlink()
    code, text, _ = run(tmp_path, "plan", "--allow-destructive")
    assert code == 2
    assert text == golden(CASES / "glue.txt", text)
    assert text in (DOCS / "glue.md").read_text()  # the page shows this plan as a reviewer reads it
    comment = run(tmp_path, "plan", "--allow-destructive", "--format", "markdown")[1]
    assert comment == golden(CASES / "glue.md", comment)
    assert "CREATE" not in text and "ALTER" not in text and "metastore alter_table" not in text
    verbose = run(tmp_path, "plan", "--allow-destructive", "--verbose")[1]
    glue.clear()
    assert run(tmp_path, "apply", "--allow-destructive", "--auto-approve")[0] == 0
    assert written(glue) <= named_calls(verbose) <= set(glue)
    assert "BatchUpdatePartition" in glue  # the cascade the plan names: the partition follows the table's columns
    columns = client.get_partition(DatabaseName="sales", TableName="orders", PartitionValues=["2024-01-01"])
    assert [c["Name"] for c in columns["Partition"]["StorageDescriptor"]["Columns"]] == ["id", "qty", "coupon"]
    assert "No changes" in run(tmp_path, "plan")[1]


def test_a_saved_glue_plan_shows_as_planned(glue: list[str], tmp_path: Path) -> None:
    write(tmp_path, FIRST)
    code, text, _ = run(tmp_path, "plan", "--out", str(tmp_path / "plan.json"))
    saved: dict[str, Any] = json.loads((tmp_path / "plan.json").read_text())
    assert saved["catalog"] == "glue"
    assert run(tmp_path, "show", str(tmp_path / "plan.json")) == (2, text, "")


def test_a_glue_plan_names_the_calls_an_iceberg_tables_commits_make(glue: list[str], tmp_path: Path) -> None:
    warehouse = tmp_path / "warehouse"
    settings = (f"databases: [sales]\nmetastore: {{type: glue, warehouse: 'file://{warehouse}', options: "
                f"{{region: {REGION}, catalog_id: \"123456789012\"}}}}\n")
    table = ("table: sales.clicks\nformat: iceberg\ncolumns:\n  - {name: id, type: bigint}\n"
             "  - {name: url, type: string}\n")
    write(tmp_path, {"schemaflow.yaml": settings, "schemas/sales/clicks.yaml": table})
    code, first, _ = run(tmp_path, "plan", "--verbose")
    assert code == 2 and ("-- glue: create Iceberg table sales.clicks (its first metadata file written, then "
                          "glue:CreateTable, the entry pyiceberg's Glue catalog writes)") in first, first
    glue.clear()
    assert run(tmp_path, "apply", "--auto-approve")[0] == 0
    assert written(glue) <= named_calls(first) <= set(glue)

    write(tmp_path, {"schemas/sales/clicks.yaml": table + "  - {name: referrer, type: string}\n"})
    code, second, _ = run(tmp_path, "plan", "--verbose")
    assert code == 2 and ("glue:GetTable, its next metadata file written, then glue:UpdateTable at the VersionId "
                          "read") in second and "this catalog takes no such change" not in second, second
    glue.clear()
    assert run(tmp_path, "apply", "--auto-approve")[0] == 0
    assert written(glue) <= named_calls(second) <= set(glue)
    assert "No changes" in run(tmp_path, "plan")[1]
