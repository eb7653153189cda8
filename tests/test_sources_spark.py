"""Sources against the real metastore: a view over tables that pipelines own, planned, applied and read back.

One source lives in a database the project does not manage (never read, never touched), the other
in the managed database itself (read, listed as not managed, never dropped). Spark's check of the
view's SQL reads stand-ins of both, made from their declared columns.
"""
from __future__ import annotations

import pytest

from tests.projects import plan, plan_and_apply, write_project

pytestmark = pytest.mark.spark


def parameters(metastore, key: str) -> dict[str, str]:
    """A live table's parameters, as the metastore holds them."""
    return dict(metastore.msc.getTable(*key.split(".")).getParameters())


def test_a_view_over_sources_is_applied_and_reads_their_rows_while_they_are_left_alone(
        tmp_path, metastore, spark, fresh_db):
    raw, shop = fresh_db(), fresh_db()
    spark.sql(f"CREATE TABLE {raw}.events (event_id BIGINT, kind STRING) PARTITIONED BY (ds STRING) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {raw}.events PARTITION (ds='2024-01-01') VALUES (1, 'click'), (2, 'view'), (3, 'click')")
    spark.sql(f"CREATE TABLE {shop}.feed (kind STRING, weight INT) STORED AS PARQUET")
    spark.sql(f"INSERT INTO {shop}.feed VALUES ('click', 2), ('view', 1)")
    project = write_project(tmp_path, {
        "schemaflow.yaml": f"databases: [{shop}]\n",
        f"schemas/{raw}/events.yaml": f"""
            source: {raw}.events
            comment: Loaded by the ingestion pipeline
            columns:
              - {{name: event_id, type: bigint}}
              - {{name: kind, type: string}}
            partitioned_by:
              - {{name: ds, type: string}}
            """,
        f"schemas/{shop}/feed.yaml": f"""
            source: {shop}.feed
            columns: [{{name: kind, type: string}}, {{name: weight, type: int}}]
            """,
        f"schemas/{shop}/weighted.yaml": f"""
            view: {shop}.weighted
            sql: |
              SELECT e.kind, SUM(f.weight) AS score, e.ds
              FROM {raw}.events e JOIN feed f ON e.kind = f.kind
              GROUP BY e.kind, e.ds
            """,
    })
    before = {key: parameters(metastore, key) for key in (f"{raw}.events", f"{shop}.feed")}

    planned = plan_and_apply(project, metastore, allow_destructive=True)

    assert [(s.kind, s.object) for s in planned.steps] == [("create_view", f"{shop}.weighted")]
    assert not planned.blocked  # Spark judged the SQL against the sources' stand-ins and accepted it
    notice = f"not managed: {shop}.feed (declared as a source in schemas/{shop}/feed.yaml); schemaflow leaves it alone"
    assert notice in planned.warnings
    assert not any(f"{raw}." in warning for warning in planned.warnings)  # its database is not even read
    again = plan(project, metastore, allow_destructive=True)
    assert again.is_empty and notice in again.warnings
    rows = spark.sql(f"SELECT kind, score, ds FROM {shop}.weighted ORDER BY kind").collect()
    assert [tuple(row) for row in rows] == [("click", 4, "2024-01-01"), ("view", 1, "2024-01-01")]
    after = {key: parameters(metastore, key) for key in before}
    assert after == before  # neither claimed, stamped nor altered
    assert sorted(metastore.msc.getAllTables(shop)) == ["feed", "weighted"]
    assert spark.sql(f"SELECT COUNT(*) AS n FROM {raw}.events").collect()[0].n == 3
