"""A partition value Spark writes as NULL, end to end through a real SparkSession and metastore: a table repartitioned by
a column holding '' is said to meet it in the plan; without the way through the verification stops the rewrite and
nothing is applied; with a migration accepting it, the apply finishes and the row reads back with NULL, as declared.
And a conversion said to lose no value (``sql.rewrite.lossless``, whose values the copy then does not check) makes
none NULL in Spark, at its type's extremes."""
from __future__ import annotations

import itertools

import pytest

from schemaflow.apply.executor import ApplyError, apply_plan
from schemaflow.sql.rewrite import lossless
from schemaflow.workflow import hash_migrations
from tests.projects import plan, write_project

pytestmark = pytest.mark.spark


def files(db: str, partitioned_by: str, accept: bool = False) -> dict[str, str]:
    data = [c for c in ("id", "name", "ds") if c != partitioned_by]
    columns = ", ".join(f"{{name: {c}, type: {'int' if c == 'id' else 'string'}}}" for c in data)
    written = {f"schemas/{db}/people.yaml": f"table: {db}.people\nusing: parquet\ncolumns: [{columns}]\n"
                                            f"partitioned_by: [{{name: {partitioned_by}, type: string}}]\n"}
    if accept:
        written["migrations/0001_empty_names.yaml"] = (
            f"description: A name that is '' is no name\nchanges:\n  - accept_loss: {{table: {db}.people, column: name}}\n")
    return written


def rows(spark, key: str) -> list[tuple]:
    return sorted((tuple(r) for r in spark.sql(f"SELECT id, name, ds FROM {key}").collect()), key=repr)


def test_an_empty_partition_value_is_said_in_the_plan_stops_the_rewrite_and_with_the_way_through_is_copied_as_null(
        tmp_path, spark, metastore, fresh_db):
    db = fresh_db()
    key = f"{db}.people"
    apply_plan(plan(write_project(tmp_path, files(db, "ds")), metastore), metastore)
    spark.sql(f"INSERT INTO {key} (id, name, ds) VALUES (1, '', '2024-01-01'), (2, 'bob', '2024-01-01'), "
              f"(3, NULL, '2024-01-02')")
    before = rows(spark, key)
    assert before == [(1, "", "2024-01-01"), (2, "bob", "2024-01-01"), (3, None, "2024-01-02")]

    # Repartitioned by name: the plan says what '' becomes, and the way through.
    refused = plan(write_project(tmp_path, files(db, "name")), metastore, allow_destructive=True)
    [step] = [s for s in refused.steps if s.object == key]
    assert (f"name: a row whose name is '' cannot be copied as it is: the partition Spark writes it in "
            f"(name=__HIVE_DEFAULT_PARTITION__) reads NULL, and then the rewrite stops before the cut-over; a migration "
            f"with accept_loss: {{table: {key}, column: name}} copies it as NULL") in step.hazards
    with pytest.raises(ApplyError) as raised:
        apply_plan(refused, metastore)
    assert "the copy differs from the rows moved in name=: 1 rows moved, 0 copied" in str(raised.value)
    assert f"{key} is unchanged and the copy was dropped" in str(raised.value)
    assert rows(spark, key) == before
    assert {t.name for t in spark.catalog.listTables(db)} == {"people"}

    # A migration accepts it: the apply finishes, the row is there with its name NULL, and the plan converges.
    project = write_project(tmp_path, files(db, "name", accept=True))
    hash_migrations(project)
    accepted = plan(project, metastore, allow_destructive=True)
    [step] = [s for s in accepted.steps if s.object == key]
    assert ("name: a row whose name is '' is copied with name NULL, as a migration accepts (the partition Spark "
            "writes it in (name=__HIVE_DEFAULT_PARTITION__) reads NULL)") in step.hazards
    apply_plan(accepted, metastore)
    assert rows(spark, key) == [(1, None, "2024-01-01"), (2, "bob", "2024-01-01"), (3, None, "2024-01-02")]
    assert [r[0] for r in spark.sql(f"SHOW PARTITIONS {key}").collect()] == ["name=__HIVE_DEFAULT_PARTITION__",
                                                                             "name=bob"]
    assert rows(spark, f"{key}_backup_") == before  # the backup keeps the '' as it was
    assert list(metastore.read((db,)).get(key).migrations) == ["0001_empty_names"]
    assert plan(project, metastore).is_empty


EXTREMES = {  # each type's least and greatest values (and a float's NaN), as Spark SQL literals
    "tinyint": ("-128Y", "127Y"), "smallint": ("-32768S", "32767S"), "int": ("-2147483648", "2147483647"),
    "bigint": ("-9223372036854775808L", "9223372036854775807L"),
    "float": ("CAST('-3.4028235E38' AS FLOAT)", "CAST('3.4028235E38' AS FLOAT)", "CAST('NaN' AS FLOAT)"),
    "double": ("-1.7976931348623157E308D", "1.7976931348623157E308D"),
    "decimal(10,2)": ("-99999999.99BD", "99999999.99BD"), "decimal(12,2)": ("-9999999999.99BD", "9999999999.99BD"),
    "decimal(19,0)": ("-9999999999999999999BD", "9999999999999999999BD"), "date": ("DATE'0001-01-01'", "DATE'9999-12-31'"),
    "timestamp": ("TIMESTAMP'0001-01-01 00:00:00'", "TIMESTAMP'9999-12-31 23:59:59.999999'"), "string": ("'x'",),
}


def test_a_conversion_said_to_lose_no_value_makes_none_null_at_its_types_extremes(spark) -> None:
    pairs = [(old, new) for old, new in itertools.permutations(EXTREMES, 2) if lossless(old, new)]
    assert len(pairs) > 20
    checked = [(old, new, value) for old, new in pairs for value in EXTREMES[old]]
    nulls = spark.sql("SELECT " + ", ".join(f"TRY_CAST({value} AS {new}) IS NULL" for _, new, value in checked)).first()
    assert [c for c, null in zip(checked, nulls, strict=True) if null] == []
    # And one that may lose values does, at the same extremes: the check above can fail.
    assert spark.sql("SELECT TRY_CAST(9223372036854775807L AS int) IS NULL").first()[0] is True
