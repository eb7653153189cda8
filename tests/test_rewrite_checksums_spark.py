"""The checksums a rewrite verifies its copy with, computed by Spark over rows a copy could hold.

One sum of a hash per row (``sql.rewrite.totals``) says whether the copy holds the rows moved: it changes where a
value moves to another row or to another column, also where the other column's value is NULL (Spark's hash skips a
NULL argument: the row's hash is over its values' hashes). Per partition, each column's checksum says which columns
differ.
"""
from __future__ import annotations

import pytest

from schemaflow.sql.rewrite import EVERY, HIGH, LOW, ROWS, Filled, checksums
from schemaflow.sql.quoting import table_node

pytestmark = pytest.mark.spark

COLUMNS = (Filled("a", "string", "a", "string"), Filled("b", "string", "b", "string"),
           Filled("n", "int", "n", "int"), Filled("tags", "map<string,int>", "tags", "map<string,int>"))
SCHEMA = "a string, b string, n int, tags map<string,int>, p string"
MOVED = [("x", None, 1, {"k": 1}, "1"), (None, "y", 2, None, "1"), ("z", "z", 3, {}, "2")]
COPIES = {  # what a faulty copy could hold of MOVED, and the columns whose own checksums then differ
    "the same rows in another order": ([MOVED[2], MOVED[0], MOVED[1]], set()),
    "a and b swapped, one of each pair NULL": ([(None, "x", 1, {"k": 1}, "1"), ("y", None, 2, None, "1"), MOVED[2]],
                                              {"a", "b"}),
    "n of two rows exchanged": ([("x", None, 2, {"k": 1}, "1"), (None, "y", 1, None, "1"), MOVED[2]], set()),
    "a map's value changed": ([("x", None, 1, {"k": 2}, "1"), *MOVED[1:]], {"tags"}),
    "a row lost": (MOVED[:2], {"a", "b", "n", "tags"}),
}


def test_the_rows_checksum_catches_values_moved_between_rows_and_columns_and_each_columns_says_which(spark):
    def totals(rows: list[tuple], keys: list[str]) -> dict[tuple[str, ...], dict[str, int]]:
        spark.createDataFrame(rows, SCHEMA).createOrReplaceGlobalTempView("checked")
        found = {}
        for row in spark.sql(checksums(table_node("global_temp.checked"), COLUMNS, keys)).collect():
            values = row.asDict()
            found[tuple(str(values.pop(k)) for k in keys)] = values
        return found

    [moved] = totals(MOVED, []).values()
    assert sorted(moved) == [HIGH + EVERY, LOW + EVERY, ROWS]  # all rows as one: the count and the rows' checksum
    per_partition = totals(MOVED, ["p"])
    assert sorted(per_partition) == [("1",), ("2",)] and sorted(per_partition[("1",)]) == sorted(
        [ROWS, HIGH + EVERY, LOW + EVERY, *(half + c.column for c in COLUMNS for half in (HIGH, LOW))])
    for copy, (rows, columns) in COPIES.items():
        [held] = totals(rows, []).values()
        assert (held == moved) is (copy == "the same rows in another order"), copy
        by_partition = totals(rows, ["p"])
        differing = {c.column for c in COLUMNS for where in per_partition
                     if by_partition.get(where, {}).get(HIGH + c.column) != per_partition[where][HIGH + c.column]
                     or by_partition.get(where, {}).get(LOW + c.column) != per_partition[where][LOW + c.column]}
        assert differing == columns, copy
