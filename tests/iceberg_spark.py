"""Spark with Iceberg's own runtime, the engine teams query and write Iceberg tables with, started by the tests.

schemaflow commits Iceberg metadata through pyiceberg; what users run is Spark with Iceberg's Java runtime.
The newest pyspark has no Iceberg runtime on Maven Central (none for Spark 4.2 or 4.3), so the engine is
pinned beside the test venv: pyspark 3.5.9 (``tests/engine-requirements.txt``, installed by hash into the
test cache once, ``tests/artifacts.cache_dir``) with Iceberg 1.12.0's runtime for Spark 3.5 (the pinned
``iceberg-java`` set), run in its own process (``tests/spark_engine_driver.py``) against a metastore server
the tests started. Its catalog is Iceberg's ``SparkSessionCatalog`` over that server, as Iceberg's docs set
Spark up for a Hive metastore: Hive tables and Iceberg tables in one namespace, with Iceberg's procedures
(``migrate``, ``snapshot``). A second run downloads nothing; schemaflow itself never uses this engine.
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from collections.abc import Iterator
from types import TracebackType
from typing import Any

from tests.artifacts import _locked, cache_dir, files
from tests.metastore_server import TEST_JAVA_OPTIONS, java_binary, release_under_test

ENGINE = "pyspark-3.5.9"
REQUIREMENTS = Path(__file__).with_name("engine-requirements.txt")
DRIVER = Path(__file__).with_name("spark_engine_driver.py")
INSTALLED = ".installed"  # written last: a folder without it is an install that did not finish


def engine_home(cache: Path | None = None) -> Path:
    """The engine's packages in the test cache, installed from the pinned requirements (hashes required) once."""
    target = (cache or cache_dir()) / "engines" / ENGINE
    if (target / INSTALLED).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        if (target / INSTALLED).is_file():  # another test process installed it while this one waited
            return target
        staging = Path(tempfile.mkdtemp(prefix=f".{ENGINE}-", dir=target.parent))
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--require-hashes",
                               "--target", str(staging), "-r", str(REQUIREMENTS)], capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"installing the engine {ENGINE} failed:\n{done.stderr[-4000:]}")
        (staging / INSTALLED).write_text(REQUIREMENTS.read_text())
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target


class IcebergSpark:
    """A Spark session with Iceberg's runtime over the metastore server ``uri``: ``with IcebergSpark(...) as
    engine: engine.sql("SELECT ...")``. ``lock``: whether Iceberg's commits take the metastore's table lock
    (its default) or rely on the metastore's compare-and-swap alone (``iceberg.engine.hive.lock-enabled``)."""

    def __init__(self, uri: str, warehouse: Path, workdir: Path, lock: bool = True, timeout: float = 300.0) -> None:
        [runtime] = files("iceberg-java")
        self.settings = {
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
        }
        self.workdir = workdir
        self.timeout = timeout
        self.log = workdir / "engine.log"
        self.version = ""
        self.on_metastore = True  # whether its catalog is the metastore server's (else a REST catalog's)
        self._process: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[str] = queue.Queue()

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
        self.workdir.mkdir(parents=True, exist_ok=True)
        # Its own Spark's settings alone: not another pyspark's home, nor the Hive client a run's site gives schemaflow.
        env = {**{key: value for key, value in os.environ.items() if key not in ("SPARK_HOME", "SPARK_CONF_DIR")},
               "PYTHONPATH": str(engine_home()), "JAVA_HOME": str(Path(java_binary()).parent.parent),
               "PYSPARK_PYTHON": sys.executable}
        with self.log.open("w") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-S", str(DRIVER), json.dumps(self.settings)], cwd=self.workdir, env=env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        self.version = self._answer()["ready"]
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def sql(self, statement: str) -> list[dict[str, Any]]:
        """The statement's rows; raises ``AssertionError`` with Spark's message when it fails."""
        answer = self.attempt(statement)
        if "error" in answer:
            raise AssertionError(f"Spark with Iceberg refused {statement!r}: {answer['error']}")
        rows: list[dict[str, Any]] = answer["rows"]
        return rows

    def attempt(self, statement: str) -> dict[str, Any]:
        """The engine's answer to the statement: ``{"rows": [...]}`` or ``{"error": "..."}``."""
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(json.dumps({"sql": statement}) + "\n")
        self._process.stdin.flush()
        return self._answer()

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self._answers.put(line)
        self._answers.put("")

    def _answer(self) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=self.timeout)
        except queue.Empty:
            line = ""
        if not line:
            raise RuntimeError(f"the engine {ENGINE} did not answer; its log ({self.log}):\n"
                               f"{self.log.read_text(errors='replace')[-6000:]}")
        answer: dict[str, Any] = json.loads(line)
        return answer


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
