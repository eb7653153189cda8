"""A rewrite step as the plan builds it: what it says, what it runs, and the one that finishes a stopped cut-over."""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.errors import SpecError
from schemaflow.spec.loader import load_catalog

from schemaflow.model import AcceptLoss, Bucketing, Catalog, Column, DropColumn, Migration, RenameColumn, Stored, Table
from schemaflow.plan.changes import AlterColumns, SetStorage
from schemaflow.plan.diff import diff_table
from schemaflow.plan.plan import LiveFiles, PlanBuilder
from schemaflow.plan.rewrite import REWRITE_BLOCK
from schemaflow.plan.steps import RewriteRows

LIVE = Table("retail", "orders", (Column("id", "int"), Column("name", "string"), Column("amount", "string")),
             (Column("ds", "string"),), data_source=True, version="v1")
WANT = Table("retail", "orders", (Column("id", "bigint"), Column("full_name", "string"), Column("note", "string")),
             (Column("ds", "string"),), data_source=True)
MIGRATIONS = (Migration("0001_rename", "", (RenameColumn("retail.orders", "name", "full_name"),)),
              Migration("0002_drop", "", (DropColumn("retail.orders", "amount"),)))


def plan(live: Catalog, allow: bool = True):
    return PlanBuilder(Catalog(("retail",), {WANT.key: WANT}, migrations=MIGRATIONS), live, allow_destructive=allow,
                       count_partitions=lambda key: 12).build()


def test_a_rewrite_says_what_it_copies_where_and_what_it_leaves_behind():
    [step] = plan(Catalog(("retail",), {LIVE.key: LIVE})).steps
    assert step.summary == ("rewrite table retail.orders: rename name to full_name (0001_rename); drop amount "
                            "(0002_drop); change type of id from int to bigint; add note string")
    assert step.notes[0].startswith("copies the rows of 12 partitions of retail.orders into retail.orders_rewrite_")
    assert "new column note: NULL in every row copied" in step.notes
    assert "not copied: amount (its values stay in retail.orders_backup_)" in step.notes
    assert "applies migration 0001_rename, 0002_drop" in step.notes
    assert step.values[0] == "column name: renamed to full_name"
    # int to bigint loses nothing: the folder that moves with the backup is all it puts at risk.
    assert [h.partition(":")[0] for h in step.hazards] == ["cut-over"]
    [copy] = step.body
    assert isinstance(copy, RewriteRows) and not copy.resumed
    # The string partition column is written without NULL, which Spark's file writer puts where it puts NULL: the
    # step says so above the statement it shows.
    assert copy.copy.endswith("SELECT TRY_CAST(`id` AS BIGINT) AS `id`, `name` AS `full_name`, CAST(NULL AS STRING) "
                              "AS `note`, COALESCE(`ds`, '') AS `ds` FROM `retail`.`orders`")
    assert ("-- ds: NULL written as '', which Spark writes as NULL is, in the default partition (read back as NULL)\n"
            + copy.copy + ";\n") in copy.describe()
    assert copy.create.startswith("CREATE TABLE `retail`.`orders_rewrite_` (")
    # The migrations are recorded in the rename that makes the copy the table, with its columns; not by the stamp after.
    assert set(copy.records) == {"schemaflow.migration.0001_rename", "schemaflow.migration.0002_drop"}
    assert step.stamp is not None and not {k for k in step.stamp.set if k.startswith("schemaflow.migration.")}
    assert plan(Catalog(("retail",), {LIVE.key: LIVE}), allow=False).steps[0].blocked == REWRITE_BLOCK


def test_a_cut_over_a_stopped_apply_left_half_done_is_finished_and_nothing_copied_again():
    backup = replace(LIVE, name="orders_backup_", backup_of="retail.orders")
    staging = replace(WANT, name="orders_rewrite_", rewrite_of="retail.orders", version="claimed")
    [step] = plan(Catalog(("retail",), {backup.key: backup, staging.key: staging})).steps
    assert step.summary == "rewrite table retail.orders: finish the cut-over"
    assert step.notes[0] == ("finishes the rewrite a stopped apply began: retail.orders is retail.orders_backup_ "
                             "already, and retail.orders_rewrite_ holds the verified copy")
    [copy] = step.body
    assert isinstance(copy, RewriteRows) and copy.resumed
    assert copy.describe().startswith("-- finish the rewrite of retail.orders (guarded)")
    # The copy a rewrite is filling is its own, never a table to drop: the rewrite is made again.
    again = plan(Catalog(("retail",), {LIVE.key: LIVE, staging.key: staging}))
    assert [(s.kind, s.object) for s in again.steps] == [("rewrite_table", "retail.orders")]


def test_a_rewrite_whose_backup_name_another_table_holds_is_refused_with_the_way_out():
    other = Table("retail", "orders_backup_", (Column("id", "int"),))
    [step] = [s for s in plan(Catalog(("retail",), {LIVE.key: LIVE, other.key: other})).steps
              if s.object == "retail.orders"]
    assert step.kind == "unsupported" and step.blocked.endswith(
        "a rewrite keeps the old table as retail.orders_backup_ and fills the new one as retail.orders_rewrite_, and "
        "retail.orders_backup_ is another table already: rename or drop it first")
    # The backup an earlier rewrite of the same table left is in the rewrite's way: its drop is a step of its own,
    # which allowing the rewrite does not allow (plan.backups).
    earlier = replace(LIVE, name="orders_backup_", backup_of="retail.orders")
    steps = plan(Catalog(("retail",), {LIVE.key: LIVE, earlier.key: earlier})).steps
    assert [(s.kind, s.object) for s in steps] == [("drop_table", "retail.orders_backup_"),
                                                   ("rewrite_table", "retail.orders")]
    assert steps[0].blocked.startswith("a backup is dropped only when asked: plan with --drop-backups")
    assert steps[1].blocked.startswith("waits on step 1, the drop of retail.orders_backup_")


def test_a_table_declared_to_keep_its_values_readable_is_rewritten_where_a_change_in_place_would_hide_them():
    hive = Table("retail", "people", (Column("id", "int"), Column("name", "string")), (Column("ds", "string"),),
                 format="parquet", bucketing=Bucketing(("id",), 4), version="v1")
    renamed = replace(hive, columns=(Column("id", "int"), Column("full_name", "string")), version=None)
    migration = (Migration("0001_rename", "", (RenameColumn("retail.people", "name", "full_name"),)),)
    # By default in place, with the hazard offering the rewrite.
    [in_place] = diff_table(renamed, hive, migration)
    assert isinstance(in_place, AlterColumns)
    [hazard] = in_place.to_step().hazards
    assert hazard.endswith("reads NULL in existing data (declare 'rewrite: when_values_hide' on the table to copy "
                           "them under the new name)")
    # Declared, a rewrite that copies the values under the new name.
    [rewrite] = diff_table(replace(renamed, rewrite_hiding=True), hive, migration)
    step = rewrite.to_step()
    assert step.summary == "rewrite table retail.people: rename name to full_name: parquet files find columns by name"
    [copy] = step.body
    assert isinstance(copy, RewriteRows) and "`name` AS `full_name`" in copy.copy
    # A new bucket count and a SerDe setting the files were not written with, likewise; a setting that does not
    # change how rows read (compression) stays in place.
    rebucketed = replace(hive, bucketing=Bucketing(("id",), 8), serde_properties={"field.delim": ","}, version=None,
                         rewrite_hiding=True)
    [both] = diff_table(rebucketed, hive)
    assert both.to_step().summary == ("rewrite table retail.people: bucket count 4 -> 8: the files are bucketed into "
                                      "4; SERDEPROPERTIES field.delim: the files were written with the old ones")
    compressed = replace(hive, serde_properties={"parquet.compression": "zstd"}, version=None, rewrite_hiding=True)
    assert [type(c) for c in diff_table(compressed, hive)] == [SetStorage]
    # Nothing hidden, nothing rewritten.
    assert diff_table(replace(hive, version=None, rewrite_hiding=True), hive) == []


def test_the_choice_is_declared_on_the_table_and_a_misspelt_one_is_an_error_that_says_where(tmp_path: Path):
    (tmp_path / "schemas" / "retail").mkdir(parents=True)
    table = tmp_path / "schemas" / "retail" / "people.yaml"
    table.write_text("table: retail.people\nformat: parquet\ncolumns: [{name: id, type: int}]\n"
                     "rewrite: when_values_hide\n")
    assert load_catalog(tmp_path).get("retail.people").rewrite_hiding
    table.write_text(table.read_text().replace("when_values_hide", "always"))
    with pytest.raises(SpecError) as raised:
        load_catalog(tmp_path)
    assert "schemas/retail/people.yaml:4:10" in str(raised.value) and "when_values_hide" in str(raised.value)


def measured(stored: Stored | None, cores: int | None = 2):
    return PlanBuilder(Catalog(("retail",), {WANT.key: WANT}, migrations=MIGRATIONS),
                       Catalog(("retail",), {LIVE.key: LIVE}), allow_destructive=True, count_partitions=lambda key: 12,
                       files=LiveFiles(lambda key: stored if key == "retail.orders" else None, cores,
                                      lambda table: None)).build().steps[0].notes


def test_a_rewrite_says_how_much_it_reads_where_the_figures_come_from_and_about_how_long_it_takes():
    rate = "at the 11.0 MB/s a core bench/rewrite.py measured on a laptop"
    assert (f"reads 12 partitions, 40 files, 1.6 GB of retail.orders (the metastore's statistics of 12): about 18 s "
            f"on 8 cores, {rate}") in measured(Stored(1_600_000_000, 40, 12), cores=8)
    assert (f"reads 12 partitions, 40 files, 1.6 GB of retail.orders (the metastore's statistics of 9, a listing of "
            f"3): about 2 min of one core's time, {rate}") in measured(Stored(1_600_000_000, 40, 12, listed=3), None)
    assert (f"reads 12 partitions, 30 files, 12.0 kB of retail.orders (the metastore's statistics of 10; not counted: "
            f"2 partitions with none): about 1 s on 2 cores, {rate}") in measured(Stored(12_000, 30, 12, unknown=2))
    assert (f"reads 5 files, 48.0 MB of retail.orders (a listing of its folder): about 2 s on 2 cores, {rate}"
            ) in measured(Stored(48_000_000, 5, None, listed=1))
    assert (f"reads 48.0 MB of retail.orders (the metastore's statistics): about 2 s on 2 cores, {rate}"
            ) in measured(Stored(48_000_000, None, None))
    assert ("reads files of a size not known: retail.orders keeps no statistics of them (ANALYZE TABLE retail.orders "
            "COMPUTE STATISTICS NOSCAN records them), and a plan made without Spark lists no files"
            ) in measured(Stored(0, 0, None, unknown=1))
    assert "reads no file: retail.orders has no partitions" in measured(Stored(0, 0, 0))
    assert not any(n.startswith("reads") for n in measured(None))  # not measured: nothing said


def test_a_conversion_a_migration_accepts_loss_in_is_a_hazard_that_says_so_and_its_copy_counts_rather_than_stops():
    want = replace(WANT, columns=(Column("id", "bigint"), Column("full_name", "string"), Column("amount", "int")))
    accepting = Migration("0003_amounts", "", (AcceptLoss("retail.orders", "amount"),))
    renaming = Migration("0001_rename", "", (RenameColumn("retail.orders", "name", "full_name"),))
    [step] = PlanBuilder(Catalog(("retail",), {want.key: want}, migrations=(renaming, accepting)),
                         Catalog(("retail",), {LIVE.key: LIVE}), allow_destructive=True).build().steps
    assert step.hazards[0] == ("amount: string -> int can lose values (a value int cannot hold becomes NULL, as a "
                               "migration accepts: the copy counts them)")
    [copy] = step.body
    assert [f.column for f in copy.columns if f.accepts_loss] == ["amount"]
    assert "values a conversion makes NULL counted in amount (accepted)" in copy.describe()  # id is widened: none
    assert "schemaflow.migration.0003_amounts" in copy.records  # recorded with its columns, at the cut-over
    # Without it, the same conversion stops the rewrite.
    [step] = PlanBuilder(Catalog(("retail",), {want.key: want}, migrations=(renaming,)),
                         Catalog(("retail",), {LIVE.key: LIVE}), allow_destructive=True).build().steps
    assert step.hazards[0] == ("amount: string -> int can lose values (a value int cannot hold becomes NULL, and then "
                               "the rewrite stops before the cut-over; a migration with accept_loss: {table: "
                               "retail.orders, column: amount} makes them NULL as intended)")
