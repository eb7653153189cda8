"""The SQL of a table rewrite: each column filled from the live column it was, and the verification queries."""
from __future__ import annotations

from dataclasses import replace

import pytest
import sqlglot

from schemaflow.model import Column, Table
from schemaflow.sql.dialect import DIALECT
from schemaflow.sql.rewrite import (Filled, checksums, convertible, default_partitions, filling, flagged, insert,
                                    lossless, moved, one_to_one, select, stored, totals, within)
from schemaflow.wording import size

HAVE = Table("db", "t", (Column("id", "int"), Column("name", "string"), Column("amount", "string"),
                         Column("tags", "map<string,int>")), (Column("ds", "date"),))
WANT = Table("db", "t", (Column("id", "bigint"), Column("full_name", "string"), Column("amount", "decimal(10,2)"),
                         Column("tags", "map<string,int>"), Column("note", "string")), (Column("ds", "date"),))


def test_each_new_column_is_filled_from_the_live_column_it_was_cast_where_its_type_changes() -> None:
    columns = filling(WANT, HAVE, {"full_name": "name"})
    assert columns == (Filled("id", "bigint", "id", "int"), Filled("full_name", "string", "name", "string"),
                       Filled("amount", "decimal(10,2)", "amount", "string"),
                       Filled("tags", "map<string,int>", "tags", "map<string,int>"), Filled("note", "string", None, None),
                       Filled("ds", "date", "ds", "date"))
    assert [f.column for f in columns if f.cast] == ["id", "amount"]
    assert insert("db.t_rewrite_", select("db.t", columns)) == (
        "INSERT INTO `db`.`t_rewrite_`\n"
        "SELECT TRY_CAST(`id` AS BIGINT) AS `id`, `name` AS `full_name`, TRY_CAST(`amount` AS DECIMAL(10, 2)) AS "
        "`amount`, `tags` AS `tags`, CAST(NULL AS STRING) AS `note`, `ds` AS `ds` FROM `db`.`t`")


def test_hostile_names_stay_names_in_every_query() -> None:
    evil = "x`; DROP TABLE y; --"
    have = Table("db", "t", (Column(evil, "int"),))
    want = Table("db", "t", (Column(evil, "bigint"),))
    columns = filling(want, have, {})
    for query in (select("db.t", columns), checksums(stored("db.t"), columns, ()),
                  checksums(moved("db.t", columns), columns, (), nulled=True)):
        [tree] = sqlglot.parse(query, dialect=DIALECT)
        assert isinstance(tree, sqlglot.exp.Select) and "x``; DROP TABLE y; --" in query


def test_verification_counts_rows_and_sums_a_hash_of_each_row_and_per_partition_of_every_column() -> None:
    columns = filling(WANT, HAVE, {"full_name": "name"})
    query = checksums(moved("db.t", columns), columns, ["ds"], nulled=True)
    # A row's hash is of its values' hashes, in the columns' order; its high and low halves are summed apart: no sum
    # overflows. Per partition, each column's checksum beside, to say which columns differ.
    row = ("XXHASH64(XXHASH64(`id`), XXHASH64(`full_name`), XXHASH64(`amount`), XXHASH64(TO_JSON(`tags`)), "
           "XXHASH64(`note`), XXHASH64(`ds`))")  # Spark hashes no map
    assert query.startswith(f"SELECT `ds`, COUNT(*) AS rows, SUM(SHIFTRIGHT({row}, 32)) AS `high *`, "
                            f"SUM({row} & 4294967295) AS `low *`, SUM(`lost amount`) AS `lost amount`, "
                            "SUM(SHIFTRIGHT(XXHASH64(`id`), 32)) AS `high id`, SUM(XXHASH64(`id`) & 4294967295) AS "
                            "`low id`, ")
    assert "SUM(SHIFTRIGHT(XXHASH64(TO_JSON(`tags`)), 32)) AS `high tags`" in query
    # One reading of the source: the rows as moved, and per column whose conversion may lose values (amount, from
    # text; not id, widened) whether its value became NULL.
    assert " FROM (SELECT TRY_CAST(`id` AS BIGINT) AS `id`, " in query
    assert (", IF(NOT `amount` IS NULL AND TRY_CAST(`amount` AS DECIMAL(10, 2)) IS NULL, 1, 0) AS `lost amount` "
            "FROM `db`.`t`) AS `moved` GROUP BY `ds`") in query
    assert "`lost id`" not in query
    # What is observed of the rows as the copy writes them, and read back of all rows: the count and one checksum
    # of the rows, however many columns.
    assert totals(columns[:1], nulled=True) == ["COUNT(*) AS rows", "SUM(SHIFTRIGHT(XXHASH64(XXHASH64(`id`)), 32)) AS "
                                                "`high *`", "SUM(XXHASH64(XXHASH64(`id`)) & 4294967295) AS `low *`"]
    assert totals(columns[2:3], nulled=True)[-1] == "SUM(`lost amount`) AS `lost amount`"
    assert flagged("db.t", columns[:1]) == "SELECT TRY_CAST(`id` AS BIGINT) AS `id` FROM `db`.`t`"
    assert flagged("db.t", columns[2:3]) == ("SELECT TRY_CAST(`amount` AS DECIMAL(10, 2)) AS `amount`, IF(NOT `amount` "
                                             "IS NULL AND TRY_CAST(`amount` AS DECIMAL(10, 2)) IS NULL, 1, 0) AS "
                                             "`lost amount` FROM `db`.`t`")
    assert checksums(stored("db.t_rewrite_"), columns[:1], []) == (
        "SELECT COUNT(*) AS rows, SUM(SHIFTRIGHT(XXHASH64(XXHASH64(`id`)), 32)) AS `high *`, "
        "SUM(XXHASH64(XXHASH64(`id`)) & 4294967295) AS `low *` FROM `db`.`t_rewrite_`")


def test_a_string_partition_column_spark_writes_as_files_is_written_without_null_and_verified_as_it_reads_back(
) -> None:
    have = Table("db", "t", (Column("id", "int"), Column("region", "string")), (Column("ds", "string"),))
    want = Table("db", "t", (Column("id", "bigint"),), (Column("ds", "string"), Column("region", "string")),
                 data_source=True)
    columns = filling(want, have, {})
    # Spark's file writer puts NULL and '' alike in the default partition: written as '', no NULL for its write to
    # turn '' into (a projection of every row); hashed and grouped as NULLIF(ds, ''), what the copy reads back as.
    assert select("db.t", columns) == ("SELECT TRY_CAST(`id` AS BIGINT) AS `id`, COALESCE(`ds`, '') AS `ds`, `region` AS "
                                       "`region` FROM `db`.`t`")
    query = checksums(stored("db.t_rewrite_"), columns, ["ds", "region"])
    assert query.startswith("SELECT NULLIF(`ds`, '') AS `ds`, `region`, COUNT(*) AS rows, SUM(SHIFTRIGHT(XXHASH64("
                            "XXHASH64(`id`), XXHASH64(NULLIF(`ds`, '')), XXHASH64(`region`)), 32))")
    assert query.endswith(" FROM `db`.`t_rewrite_` GROUP BY NULLIF(`ds`, ''), `region`")
    # region, a data column of text, may hold '': written as it is (Spark then turns it into NULL and the verification
    # stops the copy), unless a migration accepts its '' as NULL.
    assert default_partitions(want, columns, {"region"}) == {"ds"}
    accepted = filling(want, have, {}, accepted={"region"})
    assert default_partitions(want, accepted, {"region"}) == {"ds", "region"}
    assert "COALESCE(`region`, '') AS `region`" in select("db.t", accepted)
    # Only a string in a table Spark's file writer writes (a Hive format's too); not one its format's writer writes.
    assert default_partitions(replace(want, data_source=False), columns, ()) == {"ds", "region"}
    assert default_partitions(replace(want, format="delta"), columns, ()) == set()
    dated = replace(want, partition_columns=(Column("ds", "date"), Column("region", "varchar(8)")))
    assert default_partitions(dated, filling(dated, have, {}), ()) == set()


@pytest.mark.parametrize("old, new, keeps", [
    ("int", "bigint", True), ("bigint", "int", False), ("int", "decimal(10,0)", True), ("int", "decimal(9,0)", False),
    ("decimal(10,2)", "decimal(12,2)", True), ("decimal(10,2)", "decimal(10,1)", False), ("string", "int", False),
    ("int", "string", True), ("float", "double", True), ("double", "float", False), ("date", "timestamp", True),
    ("timestamp", "date", False),
])
def test_a_conversion_that_can_lose_values_is_told_apart(old: str, new: str, keeps: bool) -> None:
    assert lossless(old, new) is keeps
    assert Filled("c", new, "c", old).lossy is not keeps


@pytest.mark.parametrize("old, new, casts", [
    ("string", "int", True), ("array<int>", "array<string>", True), ("map<string,int>", "map<string,bigint>", True),
    ("struct<x:int>", "struct<y:bigint>", True), ("struct<x:int>", "struct<x:int,y:int>", False),
    ("array<struct<a:int>>", "array<struct<a:int,b:int>>", False), ("int", "struct<x:int>", False),
    ("array<int>", "map<int,int>", False),
])
def test_spark_casts_a_nested_value_only_to_a_type_of_the_same_shape(old: str, new: str, casts: bool) -> None:
    assert convertible(old, new) is casts


def test_a_chunk_of_partitions_is_selected_by_its_values_typed_as_its_columns_null_as_is_null() -> None:
    one = within([("ds", "date")], [("2024-01-01",), (None,), ("2024-01-02",)])
    assert one.sql(dialect=DIALECT) == ("`ds` IN (CAST('2024-01-01' AS DATE), CAST('2024-01-02' AS DATE)) "
                                        "OR `ds` IS NULL")
    two = within([("region", "string"), ("n`", "int")], [("eu'; DROP", "1"), ("us", None)])
    assert two.sql(dialect=DIALECT) == ("(`region` = 'eu\\'; DROP' AND `n``` = CAST('1' AS INT)) "
                                        "OR (`region` = 'us' AND `n``` IS NULL)")
    assert sqlglot.parse_one(flagged("db.t", filling(WANT, HAVE, {}), one), dialect=DIALECT).find(sqlglot.exp.Where)
    assert stored("db.t", two).sql(dialect=DIALECT).startswith("(SELECT * FROM `db`.`t` WHERE (`region` = ")


@pytest.mark.parametrize("want, have, each", [
    ({"ds": "ds"}, ["ds"], True),
    ({"day": "ds"}, ["ds"], True),                            # renamed: the same values
    ({"ds": "ds", "region": "region"}, ["ds"], False),        # another partition column: rows move between partitions
    ({"region": "region", "ds": "ds"}, ["ds", "region"], False),  # reordered
    ({}, ["ds"], False),
    ({"ds": "ds"}, [], False),
])
def test_a_table_is_copied_partition_by_partition_only_where_each_partition_stays_one(
        want: dict[str, str], have: list[str], each: bool) -> None:
    """``want`` maps each new partition column to the live column it is filled from."""
    columns = (Filled("id", "int", "id", "int"), *(Filled(new, "string", old, "string") for new, old in want.items()))
    assert one_to_one(columns, list(want), have) is each


def test_a_partition_column_whose_type_changes_is_copied_whole() -> None:
    columns = (Filled("id", "int", "id", "int"), Filled("ds", "date", "ds", "string"))
    assert not one_to_one(columns, ["ds"], ["ds"])  # '2024-1-1' and '2024-01-01' would become one partition


@pytest.mark.parametrize("count, shown", [(0, "0 B"), (999, "999 B"), (1000, "1.0 kB"), (3_400_000, "3.4 MB"),
                                          (1_780_000_000, "1.8 GB"), (2 * 10**12, "2.0 TB")])
def test_sizes_are_shown_in_decimal_units(count: int, shown: str) -> None:
    assert size(count) == shown
