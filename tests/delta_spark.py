"""Spark with delta-spark, the engine teams write Delta tables with, started by the tests.

Maven Central has no delta-spark for the newest pyspark (none for 4.3), so Delta runs on the pinned engine beside
the test venv (``tests/spark_engine.py``: pyspark 3.5.9 in its own process) with delta-spark 3.3.2 and its log store
(the pinned ``delta-spark`` set), against a metastore server the tests started. Its session catalog is Delta's
``DeltaCatalog`` with Delta's SQL extensions, as Delta's docs set Spark up: Hive tables and Delta tables in one
namespace. The same process runs schemaflow's own Delta commit (``catalog.hive.delta_commit``), whose delta-spark the
test venv's pyspark cannot load, and schemaflow's apply with the Hive writer (``apply_plan``, the request ``apply``).

schemaflow's own packages (sqlglot, pyyaml, jsonschema, ...) come from the test venv: its site-packages follow the
engine's folder on the engine's ``PYTHONPATH`` (``also``), so the engine's pyspark 3.5.9 and its py4j are the ones
imported, and the venv's pyspark is never reached. That is the least of the ways tried to run schemaflow there: the
CLI in a process of its own would start its own Spark, which needs delta-spark's jars and settings approved as code
(``spark.jars``), and a venv of its own per engine would install schemaflow's dependencies again. The plans it
applies are made in the test process, without a JVM, as ``plan`` makes them (the live state over Thrift, each Delta
table's log read by ``catalog.delta_log``).
"""
from __future__ import annotations

import sysconfig
from pathlib import Path
from typing import Any

from tests.artifacts import files
from tests.metastore_server import TEST_JAVA_OPTIONS, release_under_test
from tests.spark_engine import SparkEngine


class DeltaSpark(SparkEngine):
    """A Spark session with delta-spark over the metastore server ``uri``: ``with DeltaSpark(...) as engine:
    engine.sql("SELECT ...")``."""

    name = "Spark with Delta"
    also = (sysconfig.get_paths()["purelib"],)  # schemaflow's packages, after the engine's pyspark (above)

    def __init__(self, uri: str, warehouse: Path, workdir: Path, timeout: float = 300.0) -> None:
        super().__init__({
            "spark.master": "local[1]", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
            "spark.jars": ",".join(str(jar) for jar in files("delta-spark")),
            "spark.driver.extraJavaOptions": " ".join(TEST_JAVA_OPTIONS),
            "spark.sql.extensions": "io.delta.sql.DeltaSparkSessionExtension",
            "spark.sql.catalog.spark_catalog": "org.apache.spark.sql.delta.catalog.DeltaCatalog",
            # A log's state is rebuilt in 50 partitions by default: 50 tasks per read of a small test table.
            "spark.databricks.delta.snapshotPartitions": "1",
            "spark.hadoop.hive.metastore.uris": uri,
            "spark.sql.warehouse.dir": str(warehouse),
            "spark.local.dir": str(workdir / "spark-local"),
        }, workdir, timeout)

    def __enter__(self) -> DeltaSpark:
        release = release_under_test()
        if release.no_iceberg_engine:
            raise RuntimeError(f"Spark 3.5 with Delta cannot reach a Hive {release.name} server: it reads tables with "
                               f"Spark's built-in Hive 2.3 client, which that server refuses; run the remote tests "
                               f"with -m 'remote and not delta_engine'")
        super().__enter__()
        return self

    def run_on_version(self, location: str, expected_version: int, statement: str) -> dict[str, Any]:
        """schemaflow's ``run_on_version`` run in the engine: ``{"version": n}``, ``{"concurrent": {...}}`` or
        ``{"error": "..."}``."""
        return self.ask(self.applier(location, expected_version, statement))

    def apply(self, plan_json: str) -> dict[str, Any]:
        """schemaflow's ``apply_plan`` of the plan with the Hive writer in the engine: ``{"applied": progress}`` or
        ``{"failed": error, "progress": progress}``."""
        return self.ask({"apply": plan_json})

    def together(self, *requests: dict[str, Any]) -> list[dict[str, Any]]:
        """The answers to ``requests`` run at once, each on a session of its own."""
        answers: list[dict[str, Any]] = self.ask({"together": list(requests)})["answers"]
        return answers

    @staticmethod
    def applier(location: str, expected_version: int, statement: str) -> dict[str, Any]:
        """The request that runs ``run_on_version`` (for ``together``)."""
        return {"run_on_version": {"location": location, "expected_version": expected_version,
                                   "statement": statement}}

