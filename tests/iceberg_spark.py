"""Spark with Iceberg's own runtime, the engine teams query and write Iceberg tables with, started by the tests.

schemaflow commits Iceberg metadata through pyiceberg; what users run is Spark with Iceberg's Java runtime.
The newest pyspark has no Iceberg runtime on Maven Central (none for Spark 4.2 or 4.3), so it runs on the pinned
engine beside the test venv (``tests/spark_engine.py``: pyspark 3.5.9 in its own process) with Iceberg 1.12.0's
runtime for Spark 3.5 (the pinned ``iceberg-java`` set), against a metastore server the tests started. Its catalog
is Iceberg's ``SparkSessionCatalog`` over that server, as Iceberg's docs set Spark up for a Hive metastore: Hive
tables and Iceberg tables in one namespace, with Iceberg's procedures (``migrate``, ``snapshot``). schemaflow itself
never uses this engine.
"""
from __future__ import annotations

from pathlib import Path
from collections.abc import Iterator
from typing import Any

from tests.artifacts import files
from tests.metastore_server import TEST_JAVA_OPTIONS, release_under_test
from tests.spark_engine import SparkEngine


class IcebergSpark(SparkEngine):
    """A Spark session with Iceberg's runtime over the metastore server ``uri``: ``with IcebergSpark(...) as
    engine: engine.sql("SELECT ...")``. ``lock``: whether Iceberg's commits take the metastore's table lock
    (its default) or rely on the metastore's compare-and-swap alone (``iceberg.engine.hive.lock-enabled``)."""

    name = "Spark with Iceberg"

    def __init__(self, uri: str, warehouse: Path, workdir: Path, lock: bool = True, timeout: float = 300.0) -> None:
        [runtime] = files("iceberg-java")
        super().__init__({
            "spark.master": "local[1]", "spark.ui.enabled": "false", "spark.sql.shuffle.partitions": "2",
            "spark.jars": str(runtime),
            "spark.driver.extraJavaOptions": " ".join(TEST_JAVA_OPTIONS),
            "spark.sql.extensions": "org.apache.iceberg.spark.extensions.IcebergSparkSessionExtensions",
            "spark.sql.catalog.spark_catalog": "org.apache.iceberg.spark.SparkSessionCatalog",
            "spark.sql.catalog.spark_catalog.type": "hive",
            "spark.sql.catalog.spark_catalog.uri": uri,
            # Iceberg's catalog caches a table it loaded (30 s by default): a session would read a table as it was
            # before schemaflow's commit. The tests read what the metastore holds now.
            "spark.sql.catalog.spark_catalog.cache-enabled": "false",
            "spark.hadoop.hive.metastore.uris": uri,
            "spark.hadoop.iceberg.engine.hive.lock-enabled": str(lock).lower(),
            "spark.sql.warehouse.dir": str(warehouse),
            "spark.local.dir": str(workdir / "spark-local"),
        }, workdir, timeout)
        self.on_metastore = True  # whether its catalog is the metastore server's (else a REST catalog's)

    @classmethod
    def on_rest_catalog(cls, name: str, uri: str, workdir: Path) -> IcebergSpark:
        """Spark with Iceberg's runtime whose catalog ``name`` is the Iceberg REST catalog at ``uri`` (``type=rest``),
        as Iceberg's docs set Spark up for one; the session's own catalog, unused, is an embedded one in ``workdir``."""
        engine = cls("", workdir / "warehouse", workdir)
        engine.on_metastore = False
        hive = ("spark.sql.catalog.spark_catalog", "spark.hadoop.hive.", "spark.hadoop.iceberg.")
        engine.settings = {key: value for key, value in engine.settings.items() if not key.startswith(hive)}
        engine.settings |= {f"spark.sql.catalog.{name}": "org.apache.iceberg.spark.SparkCatalog",
                            f"spark.sql.catalog.{name}.type": "rest", f"spark.sql.catalog.{name}.uri": uri,
                            f"spark.sql.catalog.{name}.cache-enabled": "false"}  # reads what the catalog holds now
        return engine

    def __enter__(self) -> IcebergSpark:
        unreachable = release_under_test().no_iceberg_engine
        if unreachable and self.on_metastore:
            raise RuntimeError(f"Spark with Iceberg's runtime cannot reach a Hive {release_under_test().name} server: "
                               f"{unreachable}; run the remote tests with -m 'remote and not iceberg_engine'")
        super().__enter__()
        return self


def engine_fixture() -> Any:
    """A module's fixture ``engine``: Spark with Iceberg's runtime on the run's Derby server (``metastore_server``),
    taking Iceberg's table lock (its default), started once for the module: ``engine = engine_fixture()``."""
    import pytest

    @pytest.fixture(scope="module")
    def engine(metastore_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[IcebergSpark]:
        workdir = tmp_path_factory.mktemp("iceberg_engine")
        with IcebergSpark(metastore_server, workdir / "warehouse", workdir) as spark:
            yield spark
    return engine
