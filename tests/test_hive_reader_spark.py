"""Views that Hive reads as well as Spark, on the real metastore.

Spark stores a view's text as written; Hive expands that text itself, from its own current database,
and takes the output names from the text. Hive's own query engine (2.3.10, whose jars ship with
pyspark) runs here in the test's JVM through Spark's Hive client, against the same metastore:
schemaflow's views are read by both engines, from any current database, by their declared column
names, while a view made by Spark alone fails in Hive as it does in production. (Hive's function
registry does not load from pyspark's jars, which lack LLAP's classes: the queries here use no
function, join or condition, which is enough to make Hive expand and resolve each view's text.)
"""
from __future__ import annotations

from contextlib import contextmanager
from collections.abc import Iterator

import pytest

from tests.inprocess import schemaflow

pytestmark = pytest.mark.spark


@contextmanager
def hive(spark) -> Iterator:
    """Hive's Driver over the session's metastore (Spark lets it run only with spark.testing set)."""
    system = spark._jvm.java.lang.System
    client = spark._jsparkSession.sharedState().externalCatalog().unwrapped().client()
    system.setProperty("spark.testing", "true")
    try:
        yield client
    finally:
        client.runSqlHive("USE default")
        system.clearProperty("spark.testing")


def hive_rows(client, current: str, query: str) -> list[str]:
    client.runSqlHive(f"USE {current}")
    return sorted(client.runSqlHive(query).mkString("\n").splitlines())


def test_views_are_read_alike_by_hive_from_any_database_and_by_spark(tmp_path, spark, metastore, fresh_db):
    db, elsewhere = fresh_db(), fresh_db()
    (tmp_path / "schemas" / db).mkdir(parents=True)
    (tmp_path / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    files = {
        "orders": f"table: {db}.orders\ncolumns:\n  - {{name: id, type: int}}\n  - {{name: amount, type: int}}\n"
                  "partitioned_by:\n  - {name: ds, type: string}\n",
        "renamed": f"view: {db}.renamed\ncolumns:\n  - {{name: order_id, comment: The order}}\n  - {{name: amount}}\n"
                   "  - {name: ds}\nsql: SELECT id, amount, ds FROM orders  -- unqualified, as people write it\n",
        "over_view": f"view: {db}.over_view\nsql: SELECT r.order_id, r.amount FROM renamed r\n",
        "daily": f"view: {db}.daily\ncolumns:\n  - {{name: order_id}}\n  - {{name: ds}}\npartitioned_on: [ds]\n"
                 "sql: SELECT id, ds FROM orders\n",
    }
    for name, text in files.items():
        (tmp_path / "schemas" / db / f"{name}.yaml").write_text(text)
    applied = schemaflow("--project", str(tmp_path), "apply", "--auto-approve")
    assert applied.code == 0, applied.said
    spark.sql(f"INSERT INTO {db}.orders PARTITION (ds = 'd1') VALUES (1, 10), (2, 20)")
    spark.sql(f"USE {db}")
    spark.sql(f"CREATE VIEW {db}.by_spark (order_id) AS SELECT id FROM orders")  # as Spark alone stores it
    spark.sql("USE default")

    # Spark reads them as declared.
    assert sorted(tuple(r) for r in spark.sql(f"SELECT order_id, amount, ds FROM {db}.renamed").collect()) == [
        (1, 10, "d1"), (2, 20, "d1")]
    assert [f.name for f in spark.table(f"{db}.renamed").schema.fields] == ["order_id", "amount", "ds"]
    assert spark.table(f"{db}.renamed").schema["order_id"].metadata.get("comment") == "The order"
    assert sorted(tuple(r) for r in spark.table(f"{db}.over_view").collect()) == [(1, 10), (2, 20)]
    assert sorted(tuple(r) for r in spark.table(f"{db}.daily").collect()) == [(1, "d1"), (2, "d1")]

    with hive(spark) as client:
        for current in ("default", elsewhere, db):
            assert hive_rows(client, current, f"SELECT order_id, amount, ds FROM {db}.renamed") == [
                "1\t10\td1", "2\t20\td1"]
            assert hive_rows(client, current, f"SELECT order_id, amount FROM {db}.over_view") == ["1\t10", "2\t20"]
            assert hive_rows(client, current, f"SELECT order_id, ds FROM {db}.daily") == ["1\td1", "2\td1"]
        # A view Spark stored as written: Hive finds neither its table from elsewhere nor its column names.
        with pytest.raises(Exception, match="Table not found 'orders'"):
            hive_rows(client, elsewhere, f"SELECT order_id FROM {db}.by_spark")
        with pytest.raises(Exception, match="Invalid table alias or column reference 'order_id'"):
            hive_rows(client, db, f"SELECT order_id FROM {db}.by_spark")

    spark.sql(f"DROP VIEW {db}.by_spark")
    replanned = schemaflow("--project", str(tmp_path), "plan")
    assert (replanned.code, replanned.out) == (
        0, f"No changes: the metastore matches the schemas (databases: {db}).\n")
