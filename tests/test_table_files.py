"""What a table's files hold, as a plan of its rewrite reads it through Spark's client: statistics, else a listing."""
from __future__ import annotations

import os
from pathlib import Path
from urllib.parse import urlparse

import pytest

from schemaflow.catalog.hive.table_files import held
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
    # Spark keeps no statistics of a data-source table it writes: its folder is listed (its data files, as the
    # statistics count them: not Spark's marker files).
    bytes_, files = on_disk(metastore, db, "plain", (".", "_"))
    assert metastore.stored(f"{db}.plain") == Stored(bytes_, files, None, listed=1)
    # The metastore keeps them of each partition Spark adds: the data files alone.
    bytes_, files = on_disk(metastore, db, "parted", (".", "_"))
    assert metastore.stored(f"{db}.parted") == Stored(bytes_, files, 3)
    # Once Spark's ANALYZE wrote its statistics, the metastore keeps its own beside them: no listing.
    spark.sql(f"ANALYZE TABLE {db}.plain COMPUTE STATISTICS NOSCAN")
    assert metastore.stored(f"{db}.plain") == Stored(*on_disk(metastore, db, "plain", (".", "_")), None)
    with pytest.raises(SchemaflowError, match=f"measuring the files of {db}.missing"):
        metastore.stored(f"{db}.missing")


def test_one_listing_gives_each_folder_its_files_and_a_digest_that_changes_with_them(spark, metastore, fresh_db,
                                                                                      tmp_path):
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.parts (id INT, ds STRING) USING parquet PARTITIONED BY (ds)")
    spark.sql(f"INSERT INTO {db}.parts SELECT id, CAST(id % 2 AS STRING) FROM range(100)")
    elsewhere = tmp_path / "elsewhere" / "ds=9"
    spark.sql(f"ALTER TABLE {db}.parts ADD PARTITION (ds='9') LOCATION 'file:{elsewhere}'")
    spark.sql(f"INSERT INTO {db}.parts PARTITION (ds='9') SELECT id FROM range(5)")
    root = metastore.msc.getTable(db, "parts").getSd().getLocation()
    folders = [f"{root}/ds=0", f"{root}/ds=1", f"file:{elsewhere}", f"{root}/ds=10"]  # ds=10: no such folder
    first = held(metastore, root, folders)
    for folder in folders[:3]:
        files = [f for f in Path(urlparse(folder).path).rglob("*") if f.is_file() and not f.name.startswith((".", "_"))]
        assert (first[folder].bytes, first[folder].files) == (sum(f.stat().st_size for f in files), len(files)) != (0, 0)
    assert (first[folders[3]].bytes, first[folders[3]].files) == (0, 0)
    assert len({h.digest for h in first.values()}) == 4
    # ds=1 is prefix of no other folder's files: ds=10 appears, and only its own digest changes with it.
    spark.sql(f"INSERT INTO {db}.parts SELECT id, '10' FROM range(3)")
    second = held(metastore, root, folders)
    assert [second[f] == first[f] for f in folders] == [True, True, True, False]
    assert second[folders[3]].files >= 1
    # A file replaced by one of the same length is a change.
    data = min(f for f in Path(urlparse(folders[0]).path).iterdir() if f.name.endswith(".parquet"))
    os.utime(data, ns=(data.stat().st_atime_ns, data.stat().st_mtime_ns + 5_000_000_000))
    assert held(metastore, root, folders)[folders[0]].digest != second[folders[0]].digest
