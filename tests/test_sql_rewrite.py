"""The SQL of a table rewrite: each column filled from the live column it was, and the verification queries."""
from __future__ import annotations

import pytest
import sqlglot

from schemaflow.model import Column, Table
from schemaflow.sql.dialect import DIALECT
from schemaflow.sql.rewrite import (Filled, checksums, convertible, filling, flagged, insert, lossless, moved, select,
                                    stored, totals)

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


def test_verification_counts_rows_and_sums_a_hash_of_every_column_per_partition() -> None:
    columns = filling(WANT, HAVE, {"full_name": "name"})
    query = checksums(moved("db.t", columns), columns, ["ds"], nulled=True)
    # Each hash's high and low halves are summed apart: no sum overflows.
    assert query.startswith("SELECT `ds`, COUNT(*) AS rows, SUM(SHIFTRIGHT(XXHASH64(`id`), 32)) AS `high id`, "
                            "SUM(XXHASH64(`id`) & 4294967295) AS `low id`, ")
    assert "SUM(SHIFTRIGHT(XXHASH64(TO_JSON(`tags`)), 32)) AS `high tags`" in query  # Spark hashes no map
    # One reading of the source: the rows as moved, and per converted column whether its value became NULL.
    assert ", SUM(`lost id`) AS `lost id`, SUM(`lost amount`) AS `lost amount` FROM (SELECT TRY_CAST(`id` AS BIGINT) " \
        "AS `id`, " in query
    assert (", IF(NOT `id` IS NULL AND TRY_CAST(`id` AS BIGINT) IS NULL, 1, 0) AS `lost id`, IF(NOT `amount` IS NULL "
            "AND TRY_CAST(`amount` AS DECIMAL(10, 2)) IS NULL, 1, 0) AS `lost amount` FROM `db`.`t`) AS `moved` "
            "GROUP BY `ds`") in query
    # What is observed of the rows as the copy writes them: the same totals, of all rows.
    assert totals(columns[:1], nulled=True) == ["COUNT(*) AS rows", "SUM(SHIFTRIGHT(XXHASH64(`id`), 32)) AS `high id`",
                                                "SUM(XXHASH64(`id`) & 4294967295) AS `low id`", "SUM(`lost id`) AS `lost id`"]
    assert flagged("db.t", columns[:1]) == ("SELECT TRY_CAST(`id` AS BIGINT) AS `id`, IF(NOT `id` IS NULL AND "
                                            "TRY_CAST(`id` AS BIGINT) IS NULL, 1, 0) AS `lost id` FROM `db`.`t`")
    assert checksums(stored("db.t_rewrite_"), columns[:1], []) == (
        "SELECT COUNT(*) AS rows, SUM(SHIFTRIGHT(XXHASH64(`id`), 32)) AS `high id`, SUM(XXHASH64(`id`) & 4294967295) AS "
        "`low id` FROM `db`.`t_rewrite_`")


@pytest.mark.parametrize("old, new, keeps", [
    ("int", "bigint", True), ("bigint", "int", False), ("int", "decimal(10,0)", True), ("int", "decimal(9,0)", False),
    ("decimal(10,2)", "decimal(12,2)", True), ("decimal(10,2)", "decimal(10,1)", False), ("string", "int", False),
    ("int", "string", True), ("float", "double", True), ("double", "float", False), ("date", "timestamp", True),
    ("timestamp", "date", False),
])
def test_a_conversion_that_can_lose_values_is_told_apart(old: str, new: str, keeps: bool) -> None:
    assert lossless(old, new) is keeps


@pytest.mark.parametrize("old, new, casts", [
    ("string", "int", True), ("array<int>", "array<string>", True), ("map<string,int>", "map<string,bigint>", True),
    ("struct<x:int>", "struct<y:bigint>", True), ("struct<x:int>", "struct<x:int,y:int>", False),
    ("array<struct<a:int>>", "array<struct<a:int,b:int>>", False), ("int", "struct<x:int>", False),
    ("array<int>", "map<int,int>", False),
])
def test_spark_casts_a_nested_value_only_to_a_type_of_the_same_shape(old: str, new: str, casts: bool) -> None:
    assert convertible(old, new) is casts
