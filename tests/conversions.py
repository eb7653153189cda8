"""Tables a conversion to Iceberg starts from, on a metastore server the tests started: a project pointed at the
server, its table applied, filled with rows in partitions as a job writes them (files in each partition's folder,
the partition registered), then declared as Iceberg."""
from __future__ import annotations

from pathlib import Path

from tests.metastore_server import Release, metastore_setting, other_client, site_defaults
from tests.projects import schemaflow


def on_server(project: Path, uri: str, tmp_path: Path, release: Release | None = None) -> dict[str, str]:
    """The environment that points the ``project`` at the server ``uri`` (of ``release``; default: the one under
    test), its guard declared where the server needs the lock (``metastore_setting``)."""
    settings = project / "schemaflow.yaml"
    existing = settings.read_text() if settings.exists() else ""
    if metastore_setting(release=release):
        settings.write_text(existing + metastore_setting(release=release))
    env = {"SCHEMAFLOW_METASTORE_URI": uri, "SCHEMAFLOW_WAREHOUSE_DIR": str(tmp_path / "warehouse")}
    if release is not None:  # Spark given that line's Hive client, not the one the run's site gives it
        env["SPARK_CONF_DIR"] = site_defaults(tmp_path / "spark-conf", release)
    return env


ORDERS = """\
table: conv_db.orders
format: parquet
columns:
  - {name: id, type: bigint}
  - {name: amount, type: 'decimal(10,2)'}
  - {name: note, type: string}
partitioned_by:
  - {name: dt, type: date}
"""


def filled(tmp_path: Path, spark, server: str, key: str, format: str, days: int,
            release: Release | None = None) -> tuple[Path, dict, dict]:
    """A project whose table ``key`` (ORDERS, stored as ``format``) is applied on ``server`` and filled
    with rows in ``days`` partitions (day d holds d rows), as a job writes them: a file of ``format`` in each
    partition's folder, the partition registered; then declared as Iceberg. The project, the environment that
    points schemaflow at the server, and the rows by day, sorted."""
    database, name = key.split(".")
    project = tmp_path / "project"
    (project / "schemas" / database).mkdir(parents=True)
    declared = ORDERS.replace("conv_db.orders", key).replace("format: parquet", f"format: {format}")
    (project / "schemas" / database / f"{name}.yaml").write_text(declared)
    env = on_server(project, server, tmp_path, release)
    created = schemaflow(project, "apply", "--auto-approve", env=env)
    assert created.returncode == 0, created.stdout + created.stderr
    written = write_partitions(spark, server, key, days, format, release)
    (project / "schemas" / database / f"{name}.yaml").write_text(
        declared.replace(f"format: {format}", "format: iceberg").replace(
            "partitioned_by:\n  - {name: dt, type: date}\n", "  - {name: dt, type: date}\npartitioned_by: [dt]\n"))
    return project, env, written


def write_partitions(spark, server: str, key: str, days: int, format: str, release: Release | None = None) -> dict:
    """Rows of ``key`` in ``days`` partitions (day d holds d rows), written as a job writes them: a file
    of ``format`` in each partition's folder, the partition registered, on ``server`` (of ``release``; default: the
    one under test). The rows by day, sorted."""
    import datetime
    from decimal import Decimal

    import pyarrow as pa
    import pyarrow.parquet as pq
    from pyarrow import orc

    written = {}
    schema = pa.schema([("id", pa.int64()), ("amount", pa.decimal128(10, 2)), ("note", pa.string())])
    with other_client(spark, server, release) as other:
        for day in range(1, days + 1):
            partition = other.msc.appendPartition(*key.split("."), [f"2024-01-0{day}"])
            rows = [{"id": 10 * day + n, "amount": Decimal(f"{day}.{n}0"), "note": f"n{n}"} for n in range(day)]
            folder = partition.getSd().getLocation().removeprefix("file:")
            table = pa.Table.from_pylist(rows, schema=schema)
            if format == "orc":
                orc.write_table(table, f"{folder}/part-00000.orc")
            else:
                pq.write_table(table, f"{folder}/part-00000.parquet")
            written[datetime.date(2024, 1, day)] = sorted((r["id"], r["amount"], r["note"]) for r in rows)
    return written


