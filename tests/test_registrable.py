"""Whether a Parquet table's files can be registered in an Iceberg table, read from their footers: no JVM."""
from __future__ import annotations

from pathlib import Path

import pyarrow as pa
import pyarrow.parquet as pq
import pytest

from schemaflow.catalog.hive.registrable import data_files, unregistrable
from schemaflow.errors import SchemaflowError

COLUMNS = {"id", "s_manager", "at", "ds"}


def folder(root: Path, name: str, **written: pa.Table) -> str:
    path = root / name
    path.mkdir(parents=True)
    for file, table in written.items():
        pq.write_table(table, path / file)
    (path / "_SUCCESS").write_text("")  # hidden from readers, as Hive's and Spark's markers are
    return str(path)


def test_files_iceberg_registers_pass_and_each_kind_it_cannot_is_named_with_the_file(tmp_path: Path):
    good = pa.table({"id": [1], "s_manager": ["ann"], "at": pa.array([0], pa.timestamp("us"))})
    fine = [folder(tmp_path, "ds=1", a=good), folder(tmp_path, "ds=2", b=good, c=good)]
    assert unregistrable(fine, COLUMNS, False) is None

    int96 = tmp_path / "ds=3"
    int96.mkdir()
    pq.write_table(good, int96 / "old.parquet", use_deprecated_int96_timestamps=True)
    assert unregistrable([*fine, str(int96)], COLUMNS, False) == (
        f"{int96}/old.parquet holds timestamps as INT96 (at), as Hive writes a Parquet table's timestamps, and Spark by "
        f"default (spark.sql.parquet.outputTimestampType), which Iceberg's Python implementation cannot register (4 "
        f"footers read)")
    # A data-source table's files are Spark's alone.
    assert unregistrable([str(int96)], COLUMNS, True) == (
        f"{int96}/old.parquet holds timestamps as INT96 (at), as Spark writes timestamps to Parquet files by default "
        f"(spark.sql.parquet.outputTimestampType), which Iceberg's Python implementation cannot register (1 footer "
        f"read)")

    capitals = folder(tmp_path, "ds=4", hive=good.rename_columns(["id", "S_manager", "at"]))
    assert unregistrable([capitals], COLUMNS, False) == (
        f"{capitals}/hive spells S_manager with capitals, and Iceberg registers a file's columns only by the table's "
        f"names (s_manager) (1 footer read)")

    text = folder(tmp_path, "ds=5")
    Path(text, "rows.csv").write_text("1,ann\n")
    assert unregistrable([text], COLUMNS, False).startswith(f"{text}/rows.csv is not a Parquet file Iceberg can read (")

    nested = folder(tmp_path, "ds=6", a=good)
    Path(nested, "sub").mkdir()
    assert unregistrable([nested], COLUMNS, False) == (
        f"{nested} holds the folder 'sub', which Iceberg cannot register as a data file")
    # At apply (the conversion in place reads the files again): the same, with what to do.
    with pytest.raises(SchemaflowError, match="holds the folder 'sub', .*: move its files up into the partition's "
                       r"folder, or plan the conversion again \(it then copies the rows\)"):
        data_files(nested)
    assert unregistrable([str(tmp_path / "none")], COLUMNS, False) is None  # no folder: no files (a partition without rows)
