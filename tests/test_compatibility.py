"""The metastore's type-change rule: unit cases from NOTES.md, and the whole rule against a real metastore."""
from __future__ import annotations

import itertools

import pytest

from schemaflow.catalog.hive.jvm import JAVA_ERRORS
from schemaflow.model import Column
from schemaflow.plan.compatibility import compatible, incompatibilities

# Seen on the bundled Hive 2.3.10 metastore (NOTES.md §3).
ACCEPTED = [("int", "bigint"), ("bigint", "string"), ("string", "double"), ("double", "varchar(10)"),
            ("int", "decimal(10,2)"), ("decimal(10,2)", "decimal(5,1)")]
REFUSED = [("bigint", "int"), ("string", "int"), ("string", "decimal(10,2)"), ("int", "boolean"), ("int", "struct<a:int>"),
           ("struct<a:int>", "struct<a:int,b:int>")]


@pytest.mark.parametrize("old, new", ACCEPTED)
def test_accepted_changes(old, new):
    assert compatible(old, new)


@pytest.mark.parametrize("old, new", REFUSED)
def test_refused_changes(old, new):
    assert not compatible(old, new)


def test_dropping_a_middle_column_shifts_types_into_other_positions():
    old = [Column("a", "int"), Column("b", "string"), Column("c", "int")]
    assert [i.describe() for i in incompatibilities(old, [old[0], old[2]])] == [
        "position 2 would change from b string to c int: the metastore compares types position by "
        "position and refuses that (hive.metastore.disallow.incompatible.col.type.changes)"]
    assert incompatibilities(old, old[:2]) == []  # dropping the last column is fine


TYPES = ["tinyint", "smallint", "int", "bigint", "decimal(10,2)", "decimal(5,1)", "float", "double", "string",
         "varchar(10)", "char(2)", "boolean", "binary", "date", "timestamp", "array<int>", "struct<a:int>"]


@pytest.mark.spark
def test_the_rule_matches_the_real_metastore_for_every_pair(spark, metastore, fresh_db):
    db = fresh_db()
    api = spark._jvm.org.apache.hadoop.hive.metastore.api
    spark.sql(f"CREATE TABLE {db}.template (x INT) STORED AS PARQUET")
    template = metastore.msc.getTable(db, "template")
    disagreements = []
    for number, (old, new) in enumerate(itertools.permutations(TYPES, 2)):
        table = template.deepCopy()
        table.setTableName(f"t{number}")
        table.getSd().setLocation(None)
        table.getSd().setCols([api.FieldSchema("c", old, None)])
        metastore.msc.createTable(table)
        table.getSd().setCols([api.FieldSchema("c", new, None)])
        try:
            metastore.msc.alter_table(db, f"t{number}", table)
            accepted = True
        except JAVA_ERRORS as error:  # the metastore's InvalidOperationException, through py4j
            assert "incompatible" in str(error), str(error)
            accepted = False
        if accepted != compatible(old, new):
            disagreements.append((old, new, accepted))
    assert disagreements == [], "\n".join(map(str, disagreements))
