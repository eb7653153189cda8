"""Shared fixtures: one SparkSession per test process, fresh databases per test, a metastore server.

The tests run in two processes (pytest-xdist, see pyproject.toml); each has the fixtures below of
its own. Starting Spark costs seconds, so every ``spark``-marked test of a process shares one
session with a private embedded metastore and warehouse in a temporary directory; each test
isolates itself by creating its own databases through ``fresh_db``, which drops them afterwards. A
second SparkSession cannot start in the same process, so tests against the standalone Thrift server
(``metastore_server``, marked ``remote``) run schemaflow in subprocesses. Those servers keep the
metastore in Derby or, as production metastores do, in PostgreSQL (``postgres_metastore_server``):
one PostgreSQL server per process, each metastore server on its own copy of one schema template.
pyspark is imported only when a fixture that needs it is used, so the fast tests run without a JVM.
"""
from __future__ import annotations

import itertools
import os
import re
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path
from typing import TYPE_CHECKING
from collections.abc import Callable, Iterator, Mapping

import pytest

from schemaflow.catalog.hive.class_archive import ARCHIVE_SETTING
from schemaflow.project import ENV_LOCAL_SERVER, Settings
from tests.metastore_server import (TEST_JAVA_OPTIONS, MetastoreServer, NewServer, default_backend,
                                    derby_with_transaction_tables, release_under_test, site_defaults)
from tests.postgres_server import PostgresServer
from tests.rest_server import RestCatalogServer

ROOT = Path(__file__).resolve().parent.parent
pytest_plugins = ["tests.interrupts"]  # SIGTERM tears the fixtures down, servers included

if TYPE_CHECKING:
    from pyspark.sql import SparkSession

    from schemaflow.catalog.hive.metastore import Metastore
    from tests.delta_spark import DeltaSpark

_database_numbers = itertools.count(1)


def pytest_configure(config: pytest.Config) -> None:
    """Spark's JVMs, in this process and in the schemaflow processes the tests start, get the test run's
    JVM options (``TEST_JAVA_OPTIONS``) unless the developer set their own; those processes import the
    checkout under test. In CI, where schemaflow
    keeps no class archive by default (``catalog.hive.class_archive``), the run keeps one in a folder of its
    own, so that the schemaflow processes the tests start share it."""
    os.environ.setdefault("SPARK_SUBMIT_OPTS", " ".join(TEST_JAVA_OPTIONS))
    # A local metastore server outlives the command that starts it: the tests' projects are many and short-lived,
    # so each of their commands opens its embedded metastore itself; tests/test_local_server.py runs the server.
    os.environ.setdefault(ENV_LOCAL_SERVER, "0")
    # Every process a test starts imports this checkout's schemaflow, whatever copy is installed beside it.
    os.environ["PYTHONPATH"] = os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")]))
    release = release_under_test()
    if release.client is not None and "SPARK_CONF_DIR" not in os.environ:
        # A site on this line gives its Spark the line's Hive client in spark-defaults.conf, for every job: so do
        # the schemaflow processes of the run (the test process's own Spark keeps its embedded metastore, ``spark``).
        os.environ["SPARK_CONF_DIR"] = site_defaults(Path(tempfile.mkdtemp(prefix="schemaflow-spark-conf-")), release)
        config.add_cleanup(lambda: shutil.rmtree(os.environ.pop("SPARK_CONF_DIR"), ignore_errors=True))
    if os.environ.get("CI") and ARCHIVE_SETTING not in os.environ:
        os.environ[ARCHIVE_SETTING] = tempfile.mkdtemp(prefix="schemaflow-class-archive-")
        config.add_cleanup(lambda: shutil.rmtree(os.environ.pop(ARCHIVE_SETTING), ignore_errors=True))


@pytest.fixture
def example(tmp_path: Path) -> Path:
    """A copy of the example warehouse's schemas and settings, to plan without a metastore."""
    shutil.copytree(ROOT / "schemas", tmp_path / "schemas")
    shutil.copy(ROOT / "schemaflow.yaml", tmp_path)
    return tmp_path


@pytest.fixture(scope="session")
def spark_settings(tmp_path_factory: pytest.TempPathFactory) -> Settings:
    """Settings for a private embedded metastore and warehouse in a temporary directory."""
    root = tmp_path_factory.mktemp("spark")
    return Settings(warehouse_dir=str(root / "warehouse"), derby_dir=str(root / "state"), spark_master="local[2]")


@pytest.fixture(scope="session")
def spark(spark_settings: Settings) -> Iterator[SparkSession]:
    """The one SparkSession of the test run, built the way schemaflow builds it."""
    from schemaflow.catalog.hive.session import spark_session

    site = os.environ.pop("SPARK_CONF_DIR", None)  # the site's Hive client is for metastore servers, not embedded
    try:
        session = spark_session(spark_settings)
    finally:
        if site is not None:
            os.environ["SPARK_CONF_DIR"] = site
    yield session
    session.stop()


@pytest.fixture(scope="session")
def metastore(spark: SparkSession) -> Metastore:
    """The metastore of the shared session."""
    from schemaflow.catalog.hive.metastore import Metastore

    return Metastore.connect(spark)


@pytest.fixture
def fresh_db(spark: SparkSession, request: pytest.FixtureRequest) -> Iterator[Callable[[], str]]:
    """A maker of new, empty databases with names unique in the run; all dropped after the test."""
    created: list[str] = []
    stem = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[:40]

    def make() -> str:
        name = f"db{next(_database_numbers)}_{stem}"
        spark.sql(f"CREATE DATABASE `{name}`")
        created.append(name)
        return name

    yield make
    for name in created:
        spark.sql(f"DROP DATABASE IF EXISTS `{name}` CASCADE")


@pytest.fixture(scope="session")
def postgres() -> Iterator[PostgresServer]:
    """This test process's PostgreSQL server, holding the metastore schema as a template."""
    with PostgresServer(java_options=TEST_JAVA_OPTIONS) as server:
        yield server


# A server's pool for its connections to its database: HikariCP, since pyspark lacks BoneCP, Hive 2.3's default,
# without which DROP DATABASE fails and the metastore's lock calls (its transaction handler) cannot run.
LOCKS = {"datanucleus.connectionPoolingType": "HikariCP"}


@pytest.fixture(scope="session")
def derby_template(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """A Derby metastore database holding the transaction tables, which each Derby server of the run starts from."""
    return derby_with_transaction_tables(tmp_path_factory.mktemp("derby_template"), TEST_JAVA_OPTIONS,
                                         release=release_under_test())


@pytest.fixture(scope="session")
def new_metastore_server(request: pytest.FixtureRequest) -> NewServer:
    """Makes a (not yet started) metastore server in ``workdir`` on ``backend``: its own Derby database,
    or a new database on the run's PostgreSQL server; both with the metastore's transaction tables, as
    production metastores have them, so that the server takes locks (as Iceberg's Hive catalog asks it to).
    The server is of the Hive release ``SCHEMAFLOW_TEST_METASTORE`` names (``tests/metastore_server.py``)."""
    release = release_under_test()

    def make(backend: str, workdir: Path, settings: Mapping[str, str] | None = None) -> MetastoreServer:
        if backend == "derby":
            return MetastoreServer(workdir, settings={**LOCKS, **(settings or {})}, java_options=TEST_JAVA_OPTIONS,
                                   derby_from=request.getfixturevalue("derby_template"), release=release)
        assert backend == "postgresql", backend
        pg: PostgresServer = request.getfixturevalue("postgres")
        return MetastoreServer(workdir, settings={**pg.metastore_settings(pg.new_database(release=release)),
                                                  **(settings or {})},
                               classpath=[pg.jdbc_jar], java_options=TEST_JAVA_OPTIONS, release=release)
    return make


@pytest.fixture(scope="session")
def metastore_server(new_metastore_server: NewServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone Thrift metastore server for the run, on Derby (on PostgreSQL for a release whose servers on
    Derby cannot run schemaflow's guards); yields its thrift:// URI."""
    with new_metastore_server(default_backend(), tmp_path_factory.mktemp("metastore_server")) as server:
        yield server.uri


@pytest.fixture(scope="session")
def postgres_metastore_server(new_metastore_server: NewServer, tmp_path_factory: pytest.TempPathFactory) -> Iterator[str]:
    """A standalone Thrift metastore server on PostgreSQL for the run; yields its thrift:// URI."""
    with new_metastore_server("postgresql", tmp_path_factory.mktemp("postgres_metastore_server")) as server:
        yield server.uri


@pytest.fixture(scope="session")
def delta_spark(metastore_server: str, tmp_path_factory: pytest.TempPathFactory) -> Iterator[DeltaSpark]:
    """Spark with delta-spark over ``metastore_server`` for this test process (``tests/delta_spark.py``), shared by the
    modules that read and write through it: each start costs about 20 seconds. Each module creates databases of its
    own in it."""
    from tests.delta_spark import DeltaSpark

    workdir = tmp_path_factory.mktemp("delta_spark")
    with DeltaSpark(metastore_server, workdir / "warehouse", workdir) as spark:
        yield spark


@pytest.fixture(scope="session")
def rest_catalog_server(tmp_path_factory: pytest.TempPathFactory) -> Iterator[RestCatalogServer]:
    """Iceberg's own REST catalog server for this test process (``tests/rest_server.py``); tests take a namespace
    of their own on it (``rest_namespace``)."""
    with RestCatalogServer(tmp_path_factory.mktemp("rest_catalog_server"), java_options=TEST_JAVA_OPTIONS) as server:
        yield server


@pytest.fixture
def rest_namespace(rest_catalog_server: RestCatalogServer, request: pytest.FixtureRequest) -> str:
    """A namespace name unique in the run, for one test on the REST catalog server (not created: the test does)."""
    stem = re.sub(r"[^a-z0-9]+", "_", request.node.name.lower()).strip("_")[:40]
    return f"ns{next(_database_numbers)}_{stem}"


@pytest.fixture(scope="session")
def run_python() -> Callable[..., subprocess.CompletedProcess[str]]:
    """A runner of Python snippets in new processes that import schemaflow from this source tree."""
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [str(ROOT), os.environ.get("PYTHONPATH")])))

    def run(code: str, *args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-c", code, *args], cwd=ROOT, env=env, capture_output=True, text=True, timeout=timeout,
        )

    return run
