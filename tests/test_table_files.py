"""What a table's files hold, as a plan of its rewrite reads it through Spark's client: statistics, else a listing."""
from __future__ import annotations

from pathlib import Path
from urllib.parse import urlparse

import pytest

from schemaflow.errors import SchemaflowError
from schemaflow.model import Stored

pytestmark = pytest.mark.spark


def on_disk(metastore, database: str, name: str, hidden: tuple[str, ...]) -> tuple[int, int]:
    """The bytes and files under a table's folder, those whose names start with ``hidden`` left out."""
    folder = Path(urlparse(metastore.msc.getTable(database, name).getSd().getLocation()).path)
    files = [f for f in folder.rglob("*") if f.is_file() and not f.name.startswith(hidden)]
    return sum(f.stat().st_size for f in files), len(files)


def test_a_table_without_statistics_is_measured_by_a_listing_and_partitions_by_theirs(spark, metastore, fresh_db):
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.plain (id INT, name STRING) USING parquet")
    spark.sql(f"INSERT INTO {db}.plain SELECT id, CAST(id AS STRING) FROM range(1000)")
    spark.sql(f"CREATE TABLE {db}.parted (id INT, ds STRING) USING parquet PARTITIONED BY (ds)")
    spark.sql(f"INSERT INTO {db}.parted SELECT id, CAST(id % 3 AS STRING) FROM range(1000)")
    # Spark keeps no statistics of a data-source table it writes: its folder is listed (Spark's marker file too).
    bytes_, files = on_disk(metastore, db, "plain", (".",))
    assert metastore.stored(f"{db}.plain") == Stored(bytes_, files, None, listed=1)
    # The metastore keeps them of each partition Spark adds: the data files alone.
    bytes_, files = on_disk(metastore, db, "parted", (".", "_"))
    assert metastore.stored(f"{db}.parted") == Stored(bytes_, files, 3)
    # Once Spark's ANALYZE wrote its statistics, the metastore keeps its own beside them: no listing.
    spark.sql(f"ANALYZE TABLE {db}.plain COMPUTE STATISTICS NOSCAN")
    assert metastore.stored(f"{db}.plain") == Stored(*on_disk(metastore, db, "plain", (".", "_")), None)
    with pytest.raises(SchemaflowError, match=f"measuring the files of {db}.missing"):
        metastore.stored(f"{db}.missing")
