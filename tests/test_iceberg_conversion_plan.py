"""A Parquet table converted to Iceberg in place (issue 29, item 5), planned with no JVM: the step and what it
says, the conversions refused with their way out, a stopped conversion finished from its backup, and the
backup kept until a plan with --drop-backups drops it."""
from __future__ import annotations

from dataclasses import replace

from schemaflow.model import Catalog, Column, IcebergState, PartitionField, SortTerm, Table
from schemaflow.plan.backups import BackupDrops
from schemaflow.plan.plan import Plan, PlanBuilder
from schemaflow.plan.rewrite import REWRITE_BLOCK
from schemaflow.plan.steps import IcebergCommit, RewriteRows, Step

DATA = (Column("id", "bigint", "Order id"), Column("amount", "decimal(10,2)"))
DT = Column("dt", "date")
HIVE = Table("shop", "orders", DATA, (DT,), version="v7")
ICEBERG = Table("shop", "orders", DATA + (DT,), format="iceberg", data_source=True, properties={"format-version": "2"},
                partition_spec=(PartitionField("identity", "dt"),))


def _plan(want: Table, *live: Table, allow_destructive: bool = False, drop_backups: bool = False) -> Plan:
    desired = Catalog(databases=("shop",), objects={want.key: want})
    return PlanBuilder(desired, Catalog(databases=("shop",), objects={t.key: t for t in live}),
                       allow_destructive=allow_destructive, drop_backups=BackupDrops(drop_backups)).build()


def _blocked(plan: Plan) -> list[str]:
    return [f"{s.summary}: {s.blocked}" for s in plan.steps if s.blocked]


def test_a_partitioned_hive_parquet_table_is_converted_its_files_registered_and_the_table_kept_as_backup():
    plan = _plan(replace(ICEBERG, sort_order=(SortTerm(PartitionField("identity", "id")),)), HIVE)
    [step] = plan.steps
    assert step.kind == "convert_to_iceberg" and not step.blocked and not step.destructive
    assert step.summary == ("convert table shop.orders to Iceberg: register its Parquet files, keep the Parquet table "
                            "as shop.orders_backup_")
    assert step.notes[:4] == (
        "no data file is rewritten: Iceberg reads the Parquet files by column name (its name mapping), each with the "
        "values of its Hive partition (dt), and every row reads back as before",
        "shop.orders is made external, then renamed to shop.orders_backup_: neither the rename nor a later drop "
        "moves or deletes the files the Iceberg table reads",
        "Iceberg's metadata and new data files go to _iceberg/ in the table's folder (write.metadata.path, "
        "write.data.path), which readers of shop.orders_backup_ skip",
        "shop.orders_backup_ is kept until a plan with --drop-backups drops its entry; its files stay. Until "
        "then, expire no snapshot of shop.orders after rewriting its files (Iceberg would delete the Parquet files "
        "shop.orders_backup_ reads)")
    assert step.hazards == ("readers of shop.orders (and of the views over it) need Iceberg's runtime from now on; a job "
                            "that still writes Parquet files into its folders writes into shop.orders_backup_, which "
                            "the Iceberg table does not see",)
    [convert, stamp] = step.actions
    assert isinstance(convert, IcebergCommit) and convert.create and convert.backup == "shop.orders_backup_"
    assert convert.describe() == (
        "-- iceberg convert shop.orders: columns (id bigint COMMENT 'Order id', amount decimal(10,2), dt date); "
        "partitioned by (dt); sorted by (id ASC NULLS FIRST); its Parquet files registered, the Parquet table kept "
        "as shop.orders_backup_")
    # The new table gets every declared property, as a created one does; the claim guards the Parquet table.
    assert stamp.set["format-version"] == "2"
    assert plan.guards == {"shop.orders": "v7"}
    assert Step.from_data(step.to_data()) == step


def test_an_unpartitioned_data_source_parquet_table_converts_too():
    using = Table("shop", "orders", DATA + (DT,), data_source=True, version="v1")
    [step] = _plan(replace(ICEBERG, partition_spec=()), using).steps
    assert step.kind == "convert_to_iceberg" and not step.blocked
    assert step.notes[0] == ("no data file is rewritten: Iceberg reads the Parquet files by column name (its name "
                             "mapping), and every row reads back as before")


def test_an_orc_table_is_converted_by_copying_its_rows_into_parquet_files_iceberg_then_registers():
    orc = replace(HIVE, format="orc")
    assert _blocked(_plan(ICEBERG, orc)) == [
        "rewrite table shop.orders: convert to Iceberg by copying: Iceberg registers Parquet files only, and the table "
        f"is STORED AS orc: {REWRITE_BLOCK}"]
    [step] = _plan(ICEBERG, orc, allow_destructive=True).steps
    assert step.kind == "rewrite_table" and step.destructive and not step.blocked
    rows, convert, stamp = step.actions
    assert isinstance(rows, RewriteRows) and rows.registrable and rows.staging == "shop.orders_rewrite_"
    # The copy: a Parquet table partitioned as the Iceberg table is by identity, its columns the Iceberg table's.
    assert (rows.table.format, rows.table.data_source) == ("parquet", True)
    assert [(c.name, c.type) for c in rows.table.all_columns] == [(c.name, c.type) for c in ICEBERG.columns]
    assert [c.name for c in rows.table.partition_columns] == ["dt"]
    assert ("-- with spark.sql.parquet.outputTimestampType = TIMESTAMP_MICROS (not INT96), so that Iceberg can "
            "register the files\nINSERT INTO") in rows.describe()
    assert isinstance(convert, IcebergCommit) and convert.create and not convert.keep
    assert convert.backup == "shop.orders_rewrite_" and convert.table == ICEBERG
    assert convert.describe().endswith("its Parquet files registered, the Parquet table's entry moved to "
                                       "shop.orders_rewrite_, then dropped (its files are the Iceberg table's)")
    assert ("shop.orders_rewrite_ is a Parquet table written with timestamps in microseconds, so that Iceberg can "
            "register its files: after the cut-over they become the Iceberg table shop.orders's, none copied again, "
            "and the Parquet table's entry is dropped") in step.notes
    assert step.hazards[-1] == "readers of shop.orders (and of the views over it) need Iceberg's runtime from now on"
    assert stamp.set["format-version"] == "2"
    assert Step.from_data(step.to_data()) == step


def test_a_parquet_table_a_rewrite_kept_a_backup_of_converts_in_place_without_a_second_backup():
    """As a conversion by copying stopped after its cut-over leaves it: the next plan registers the copy's files."""
    backup = replace(HIVE, name="orders_backup_", format="orc", backup_of="shop.orders")
    copy = Table("shop", "orders", DATA, (DT,), data_source=True, version="claim-1")
    [step] = _plan(ICEBERG, copy, backup).steps
    # Allowed to drop, the plan still keeps the rewrite's backup: the conversion keeps no other.
    assert [s.summary for s in _plan(ICEBERG, copy, backup, allow_destructive=True).steps] == [step.summary]
    assert step.kind == "convert_to_iceberg" and not step.blocked
    assert step.summary == "convert table shop.orders to Iceberg: register its Parquet files, keep shop.orders_backup_, from its rewrite"
    [convert, _] = step.actions
    assert isinstance(convert, IcebergCommit) and (convert.backup, convert.keep) == ("shop.orders_rewrite_", False)
    assert step.notes[3] == ("shop.orders_rewrite_'s entry is dropped once the Iceberg table is registered (its files "
                             "are the Iceberg table's): shop.orders_backup_, the table before its rewrite, is the backup "
                             "kept")
    # The name it moves the entry to must be free.
    other = Table("shop", "orders_rewrite_", DATA)
    assert _blocked(_plan(ICEBERG, copy, backup, other))[-1] == (
        "converting to Iceberg while shop.orders_rewrite_ exists on shop.orders: converting to Iceberg while "
        "shop.orders_rewrite_ exists is not supported in place: the Parquet table's entry waits as shop.orders_rewrite_ "
        "while the Iceberg table is registered: drop or rename that one first")


def test_what_cannot_convert_is_refused_with_the_way_out():
    renamed = replace(ICEBERG, columns=(Column("order_id", "bigint"), DATA[1], DT), partition_spec=(
        PartitionField("month", "dt"),))
    assert _blocked(_plan(renamed, HIVE)) == [
        "converting to Iceberg with other columns on shop.orders: converting to Iceberg with other columns is not "
        "supported in place: a conversion keeps every column as the Parquet table reads it: declare the columns "
        "id bigint, amount decimal(10,2), dt date (data columns, then partition columns; a tinyint or smallint is an "
        "int in Iceberg, a char or varchar a string), convert, then change them in a later change",
        "converting to Iceberg partitioned by (month(dt)) on shop.orders: converting to Iceberg partitioned by "
        "(month(dt)) is not supported in place: a conversion keeps the Hive partitions: declare partitioned_by: [dt], "
        "convert, then change the partition spec in a later change (Iceberg evolves it without rewriting)"]
    taken = Table("shop", "orders_backup_", DATA, version="v2")
    [step] = [s for s in _plan(ICEBERG, HIVE, taken).steps if s.object == "shop.orders"]
    assert step.blocked == ("converting to Iceberg while shop.orders_backup_ exists is not supported in place: the "
                            "Parquet table is kept as shop.orders_backup_: drop or rename that one first")


def test_a_conversion_a_stopped_apply_left_after_the_rename_is_finished_from_the_backup():
    backup = replace(HIVE, name="orders_backup_", external=True, location="file:/lake/shop/orders",
                     backup_of="shop.orders")
    plan = _plan(ICEBERG, backup)
    [step] = plan.steps  # and no drop of the backup: the conversion still reads it
    assert step.kind == "convert_to_iceberg" and not step.blocked
    assert step.notes[1] == ("finishes the conversion a stopped apply began: shop.orders_backup_ is the Parquet "
                             "table, already renamed")
    assert plan.guards == {}  # the name is free: registering the table fails if another writer took it


def test_the_backup_is_kept_with_a_warning_until_a_plan_allows_its_drop():
    backup = replace(HIVE, name="orders_backup_", external=True, location="file:/lake/shop/orders",
                     backup_of="shop.orders")
    converted = replace(ICEBERG, iceberg=IcebergState("u", 0, 0, 0, 2, "file:/lake/shop/orders/_iceberg/metadata/0.json"),
                        version="v8")
    plan = _plan(ICEBERG, converted, backup)
    assert plan.steps == () and plan.warnings == (
        "shop.orders_backup_ keeps the Parquet table shop.orders was converted from (its files are the Iceberg "
        "table's); plan with --drop-backups to drop it",)
    allowed = _plan(ICEBERG, converted, backup, allow_destructive=True)  # allowing drops keeps every backup
    assert allowed.steps == () and allowed.warnings == plan.warnings
    [drop] = _plan(ICEBERG, converted, backup, drop_backups=True).steps
    assert drop.summary == "drop table shop.orders_backup_" and drop.destructive and not drop.blocked
    assert drop.notes == ("the Parquet table shop.orders was converted from: its entry goes; its files are the Iceberg "
                          "table's and are kept",)


def test_a_column_iceberg_has_no_type_for_converts_as_the_type_iceberg_reads_it_as():
    narrow = replace(HIVE, columns=(Column("id", "smallint"), Column("code", "varchar(8)")), partition_columns=())
    want = replace(ICEBERG, columns=(Column("id", "int"), Column("code", "string")), partition_spec=())
    [step] = _plan(want, narrow).steps
    assert step.kind == "convert_to_iceberg" and not step.blocked
    [refused] = _plan(replace(want, columns=(Column("id", "bigint"), Column("code", "string"))), narrow).steps
    assert refused.blocked and "declare the columns id int, code string (data columns" in refused.blocked


def test_a_conversion_keeps_the_files_where_they_are_so_another_location_is_refused():
    [step] = _plan(replace(ICEBERG, location="s3://lake/elsewhere/orders"), HIVE).steps
    assert step.blocked == (
        "converting to Iceberg at 's3://lake/elsewhere/orders' is not supported in place: a conversion leaves the "
        "Parquet files where they are, and the Iceberg table takes the Parquet table's folder: declare no location "
        "(or the external table's own), convert, then copy the table elsewhere if it is to move")
    external = replace(HIVE, external=True, location="file:/lake/shop/orders")
    [step] = _plan(replace(ICEBERG, location="/lake/shop/orders"), external).steps
    assert step.kind == "convert_to_iceberg" and not step.blocked
