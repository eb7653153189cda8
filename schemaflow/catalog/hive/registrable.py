"""Whether a Parquet table's files can be registered in an Iceberg table as they are, read from their footers
when the conversion is planned: what a conversion in place (``catalog.hive.iceberg_convert``) would otherwise meet file by
file at apply, one table at a time, is found for every table of a plan at once.

Iceberg's Python implementation registers a Parquet file by its columns' exact names (through the table's name
mapping) and reads timestamps in microseconds. So a file that holds timestamps as INT96 (as Hive writes a Parquet
table's, and Spark writes any Parquet file's by default: ``int96_writers``), that spells a column otherwise than the
table does (Hive writes the capitals of its DDL into the files; the metastore keeps names in lower case), or that
holds a column the table no longer has (renamed or dropped in place after the file was written, which its readers no
longer see), cannot be registered; neither can a folder inside a table's or
a partition's folder, nor a file that is not Parquet. Such a table is converted by copying (``plan.rewrite``).
"""
from __future__ import annotations

from collections.abc import Collection, Sequence

from schemaflow.errors import SchemaflowError
from schemaflow.wording import plural

def data_files(folder: str) -> list[str]:
    """The data files in ``folder``, by name: what Hive reads of it (hidden files, ``_`` and ``.``, are not); a
    ``SchemaflowError`` for a folder in it, which Iceberg cannot register as a data file."""
    files, nested = _listed(folder)
    if nested:
        raise SchemaflowError(f"{nested}: move its files up into the partition's folder, or plan the conversion again "
                              "(it then copies the rows)")
    return files


def _listed(folder: str) -> tuple[list[str], str | None]:
    """The data files in ``folder``, and why it cannot be registered if it holds a folder."""
    from pyarrow import fs  # type: ignore[import-untyped]
    filesystem, path = fs.FileSystem.from_uri(folder)
    found = filesystem.get_file_info(fs.FileSelector(path, allow_not_found=True))
    files = []
    for info in sorted(found, key=lambda i: i.base_name):
        if info.base_name.startswith(("_", ".")):
            continue
        if info.type != fs.FileType.File:
            return [], f"{folder} holds the folder {info.base_name!r}, which Iceberg cannot register as a data file"
        files.append(f"{folder}/{info.base_name}")
    return files, None


def int96_writers(data_source: bool) -> str:
    """Who writes the INT96 timestamps of a data-source table's (``data_source``) or of a Hive table's Parquet files,
    as measured with Spark 4.3 (``spark.sql.parquet.outputTimestampType`` is INT96 unless set) and Hive's writer."""
    if data_source:
        return "as Spark writes timestamps to Parquet files by default (spark.sql.parquet.outputTimestampType)"
    return "as Hive writes a Parquet table's timestamps, and Spark by default (spark.sql.parquet.outputTimestampType)"


def unregistrable(folders: Sequence[str], columns: Collection[str], data_source: bool) -> str | None:
    """Why the files under ``folders`` (a table's, or each of its partitions') cannot be registered in an Iceberg
    table whose columns are ``columns`` (a data-source table's with ``data_source``); None when every footer allows
    it."""
    from pyarrow import fs

    read = 0
    for folder in folders:
        try:
            files, nested = _listed(folder)
        except OSError as error:  # no such file system, no permission: the apply would meet it too
            return f"its folder {folder} cannot be listed ({error})"
        if nested:
            return nested
        for path in files:
            filesystem, inside = fs.FileSystem.from_uri(path)
            why = _footer(filesystem, inside, path, columns, data_source)
            read += 1
            if why:
                return f"{why} ({plural(read, 'footer')} read)"
    return None


def _footer(filesystem: object, inside: str, path: str, columns: Collection[str], data_source: bool) -> str | None:
    """What in the footer of the Parquet file at ``path`` keeps Iceberg from registering it, if anything."""
    from pyarrow import ArrowException, parquet

    try:
        with filesystem.open_input_file(inside) as file:  # type: ignore[attr-defined]
            metadata = parquet.read_metadata(file)
    except (OSError, ArrowException) as error:
        return f"{path} is not a Parquet file Iceberg can read ({error})"
    schema = metadata.schema
    int96 = sorted({schema.column(i).path for i in range(len(schema)) if schema.column(i).physical_type == "INT96"})
    if int96:
        return (f"{path} holds timestamps as INT96 ({', '.join(int96)}), {int96_writers(data_source)}, which "
                "Iceberg's Python implementation cannot register")
    names = schema.to_arrow_schema().names
    spelt = [name for name in names if name not in columns and name.lower() in columns]
    if spelt:
        return (f"{path} spells {', '.join(spelt)} with capitals, and Iceberg registers a file's columns only by the "
                f"table's names ({', '.join(name.lower() for name in spelt)})")
    # A column renamed or dropped in place since the file was written (its readers find the new name NULL in it).
    gone = [name for name in names if name.lower() not in columns]
    if gone:
        return (f"{path} holds {', '.join(gone)}, which the table no longer has (renamed or dropped since the file was "
                "written), and Iceberg registers a file only with columns of the table")
    return None
