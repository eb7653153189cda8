"""What the benchmarks in bench/ share: a private Spark session and metastore, progress, ratios.

``private_session`` gives a benchmark a Spark session with Hive support on a metastore of its own
in a temporary directory: embedded Derby, or (``remote``) the standalone Thrift metastore server
of ``tests/metastore_server.py``, so that every metastore call crosses a socket as with the shared
metastore of a real cluster; that server keeps its metastore in Derby, or (``backend``) in
PostgreSQL, as production metastores do (``tests/postgres_server.py``). Spark's and Hive's scratch files stay in that directory; on exit the
session is stopped, the server too, and the directory is removed.

Benchmarks report progress on stderr (``progress``, ``Heartbeat``) and their results on stdout.
"""
from __future__ import annotations

import argparse
import os
import platform
import sys
import tempfile
import time
from contextlib import ExitStack, contextmanager
from dataclasses import dataclass
from pathlib import Path
from collections.abc import Iterator

import pyspark
from pyspark.sql import SparkSession

from schemaflow.catalog.hive.metastore import Metastore
from schemaflow.catalog.hive.session import spark_session
from schemaflow.code_settings import code_settings
from schemaflow.project import Settings
from tests.metastore_server import ALL_BACKENDS, MetastoreServer
from tests.postgres_server import PostgresServer

# Column types, in turn; each is spelt here as Hive, Spark and schemaflow all spell it.
COLUMN_TYPES = ("bigint", "string", "decimal(12,2)", "timestamp", "int", "double", "date", "boolean")
HEARTBEAT_SECONDS = 5.0


@dataclass(frozen=True)
class Session:
    """A running Spark session, its metastore, and what to say about them in a report."""

    spark: SparkSession
    metastore: Metastore
    where: str   # which metastore, in words
    java: str    # the JVM's version

    @property
    def machine(self) -> str:
        return (f"{os.cpu_count()} cores, Python {platform.python_version()}, pyspark {pyspark.__version__}, "
                f"Java {self.java}")


@contextmanager
def private_session(name: str, remote: bool, backend: str = "derby") -> Iterator[Session]:
    """A Spark session on a metastore of its own, in a temporary directory named after ``name``; with
    ``remote``, a metastore server whose database is ``backend`` (one of ``ALL_BACKENDS``)."""
    with ExitStack() as stack:
        workdir = Path(stack.enter_context(tempfile.TemporaryDirectory(prefix=f"schemaflow-{name}-")))
        private = {  # Spark's and Hive's scratch files, which default to /tmp, stay in workdir
            "spark.local.dir": str(workdir / "spark-local"),
            "spark.hadoop.hive.exec.scratchdir": str(workdir / "hive-scratch"),
            "spark.hadoop.hive.exec.local.scratchdir": str(workdir / "hive-local-scratch"),
        }
        # Not settings schemaflow knows to be safe: the benchmark, as operator, approves them.
        approved = frozenset(setting.id for setting in code_settings((), private))
        if remote:
            assert backend in ALL_BACKENDS, backend
            # HikariCP: pyspark lacks BoneCP, Hive 2.3's default pool, without which DROP DATABASE fails.
            server_settings = {"datanucleus.connectionPoolingType": "HikariCP"}
            classpath = []
            if backend == "postgresql":
                progress("starting PostgreSQL")
                postgres = stack.enter_context(PostgresServer())
                server_settings = postgres.metastore_settings(postgres.new_database())
                classpath = [postgres.jdbc_jar]
            progress(f"starting the standalone Thrift metastore server on {backend}")
            server = stack.enter_context(MetastoreServer(workdir / "server", settings=server_settings,
                                                         classpath=classpath))
            settings = Settings(metastore_uri=server.uri, warehouse_dir=str(server.warehouse),
                                derby_dir=str(workdir / "client"), spark_conf=private, approved_code=approved)
            where = (f"standalone Thrift server on this machine (tests/metastore_server.py), its metastore in "
                     f"{backend}, over a socket")
        else:
            settings = Settings(warehouse_dir=str(workdir / "warehouse"), derby_dir=str(workdir / "state"),
                                spark_conf=private, approved_code=approved)
            where = "embedded Derby, in the Spark JVM"
        progress("starting Spark")
        spark = spark_session(settings)
        stack.callback(spark.stop)
        java = spark.sparkContext._jvm.System.getProperty("java.version")
        yield Session(spark, Metastore.connect(spark), where, java)


class Heartbeat:
    """Tells stderr how far a long loop has got, at most every ``HEARTBEAT_SECONDS``."""

    def __init__(self, label: str, total: int, unit: str) -> None:
        self.label = label
        self.total = total
        self.unit = unit
        self.started = self.last = time.monotonic()

    def __call__(self, done: int) -> None:
        now = time.monotonic()
        if now - self.last >= HEARTBEAT_SECONDS:
            self.last = now
            progress(f"    {self.label}: {done:,}/{self.total:,} {self.unit}, {now - self.started:.0f} s")


def progress(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def ratio(seconds: float, baseline: float) -> str:
    if seconds >= baseline:
        return f"{seconds / baseline:.1f}x slower"
    return f"{baseline / seconds:.1f}x faster"


def positive(text: str) -> int:
    """An argparse type: a whole number of at least 1."""
    value = int(text)
    if value < 1:
        raise argparse.ArgumentTypeError(f"must be at least 1, not {value}")
    return value
