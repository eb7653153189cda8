"""A standalone Thrift Hive metastore server for tests, of the Hive line a test run names.

The default release is the Hive 2.3 ``HiveMetaStore`` that pyspark bundles; the 3.1 and 4.0 lines, which
production metastores run, come from their binary distributions on Maven Central with the Hadoop jars
they expect beside them (``tests/artifacts.py``, fetched once). ``SCHEMAFLOW_TEST_METASTORE`` names the
release the remote tests start (``2.3``, ``3.1``, ``4.0``). Each server keeps its metastore in its own
Derby database in a private directory, or in a PostgreSQL database (``tests/postgres_server.py``) when
its settings say so. It listens on all interfaces (it has no bind option), so it gets a free high port
and clients connect to 127.0.0.1. It is ready when the port accepts connections. Used as a context
manager, it is stopped, with everything it started, on exit.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import TracebackType
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from typing import TYPE_CHECKING, Any
from xml.sax.saxutils import escape

import yaml

from schemaflow.processes import accepts as accepts_connections
from tests.artifacts import files, unpacked

if TYPE_CHECKING:
    from schemaflow.catalog.hive.metastore import Metastore

# Without this selector the server dies with NoClassDefFoundError: com/lmax/disruptor.
LOG4J_SELECTOR = "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector"
MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
# The databases a server can keep its metastore in (conftest's ``new_metastore_server`` makes either).
ALL_BACKENDS = ("derby", "postgresql")
# The JVMs of a test run (Spark's, through SPARK_SUBMIT_OPTS, and these servers, through conftest) live
# for seconds and do little: the client compiler alone and the serial collector spend far less of two
# cores than the JVM's defaults (measured: two remote apply tests 70 s -> 54 s). The benchmarks keep
# the defaults, as users run them.
TEST_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


RELEASE_VARIABLE = "SCHEMAFLOW_TEST_METASTORE"


@dataclass(frozen=True)
class Release:
    """A line of the Hive metastore: where its classes come from, the tool that creates its schema (none:
    the 2.3 servers create their tables themselves) and the settings its server needs."""
    name: str
    distribution: str | None = None  # the set of tests/artifacts.lock holding its binary distribution
    schema_tool: str | None = None
    settings: Mapping[str, str] = field(default_factory=dict)
    # How schemaflow's projects on it guard their writes: "lock" where the server ignores the compare-and-swap
    # (no HIVE-26882: every 3.1 release), as a team on it must declare.
    guard: str = "compare-and-swap"
    # The Hive client Spark needs for it where its built-in one (2.3) cannot talk to it: its version, and the set of
    # tests/artifacts.lock holding its jars.
    client: tuple[str, str] | None = None
    # The databases its servers keep a metastore in that schemaflow can guard its writes on (its apply refuses the
    # others, saying why).
    backends: tuple[str, ...] = ALL_BACKENDS
    # The type its servers store a managed table Spark creates as (Hive 4's default transformer makes it external).
    stores_managed_as: str = "MANAGED_TABLE"
    # Why Spark with Iceberg's runtime (tests/iceberg_spark.py) cannot reach its servers, if it cannot: the tests
    # that need that engine (marked ``iceberg_engine``), and those of Spark 3.5 with delta-spark on the same Hive
    # client (tests/delta_spark.py, ``delta_engine``), are then not run on it.
    no_iceberg_engine: str | None = None

    def home(self) -> Path:
        """The unpacked binary distribution (fetched first if it is not in the cache)."""
        assert self.distribution is not None, f"Hive {self.name} runs from the pyspark wheel's jars"
        [archive] = files(self.distribution)
        return unpacked(archive)

    def classpath(self) -> list[str]:
        """The server's jars: pyspark's for 2.3, else the distribution's own before Hadoop's."""
        if self.distribution is None:
            return [f"{pyspark_jars()}/*"]
        return [f"{self.home() / 'lib'}/*", *map(str, files("hadoop"))]

    def client_settings(self) -> dict[str, str]:
        """The Spark settings of a project on a server of this line: Hive's client jars where Spark's own cannot
        talk to it (fetched first if they are not in the cache), as a team on it sets them; none for the others."""
        if self.client is None:
            return {}
        version, jars = self.client
        return {"spark.sql.hive.metastore.version": version, "spark.sql.hive.metastore.jars": "path",
                "spark.sql.hive.metastore.jars.path": ",".join(path.as_uri() for path in files(jars))}

    def create_schema(self, url: str, db_type: str, classpath: Sequence[Path] = (), user: str = "APP",
                      java_options: Sequence[str] = (), timeout: float = 300.0) -> None:
        """Create the metastore's tables, its transaction tables among them, in the database at ``url``
        with the release's own schema tool, as an operator installing it does."""
        assert self.schema_tool is not None
        driver = {"derby": "org.apache.derby.jdbc.EmbeddedDriver", "postgres": "org.postgresql.Driver"}[db_type]
        command = [java_binary(), *java_options, "-cp", os.pathsep.join([*self.classpath(), *map(str, classpath)]),
                   self.schema_tool, "-initSchema", "-dbType", db_type, "-url", url, "-driver", driver,
                   "-userName", user, "-passWord", "unused"]
        done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL,
                              env=dict(os.environ, METASTORE_HOME=str(self.home())))
        if done.returncode != 0:
            raise RuntimeError(f"Hive {self.name}'s schema tool failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


# What the standalone servers of 3.1 and later need in place of the defaults they were built with: the
# expression proxy and cleaner task of the full Hive (hive-exec, absent here) are Hive's own defaults.
STANDALONE = {
    "metastore.expression.proxy": "org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy",
    "metastore.task.threads.always": "org.apache.hadoop.hive.metastore.events.EventCleanerTask",
    "datanucleus.schema.autoCreateAll": "false",
}
RELEASES = {
    "2.3": Release("2.3"),
    "3.1": Release("3.1", "hive-metastore-3.1", "org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool",
                   STANDALONE, guard="lock"),
    "4.0": Release("4.0", "hive-metastore-4.0",
                   "org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool", STANDALONE,
                   client=("4.0.1", "hive-client-4.0"),
                   # Its schema keeps table parameters as a CLOB on Derby, which its compare-and-swap cannot compare.
                   backends=("postgresql",), stores_managed_as="EXTERNAL_TABLE",
                   no_iceberg_engine="Iceberg's catalog in Spark reads tables with Spark's built-in Hive 2.3 client, "
                                     "whose get_table Hive 4 removed (apache/iceberg#12878)"),
}


def release_under_test() -> Release:
    """The release ``SCHEMAFLOW_TEST_METASTORE`` names (default 2.3, pyspark's own)."""
    name = os.environ.get(RELEASE_VARIABLE, "2.3")
    if name not in RELEASES:
        raise RuntimeError(f"{RELEASE_VARIABLE}={name!r}: the tests start Hive {', '.join(RELEASES)}")
    return RELEASES[name]


def default_backend() -> str:
    """The database a test's own server keeps its metastore in: Derby, unless the release under test cannot guard
    writes on it."""
    return release_under_test().backends[0]


# The databases the tests run servers on: those of the release under test, or fewer (SCHEMAFLOW_TEST_BACKENDS=derby
# runs each backend-parametrised test on Derby alone, as CI does for other Spark releases, whose clients meet the
# same server code either way).
BACKENDS = tuple(name for name in os.environ.get("SCHEMAFLOW_TEST_BACKENDS", ",".join(ALL_BACKENDS)).split(",")
                 if name in release_under_test().backends)
if not set(os.environ.get("SCHEMAFLOW_TEST_BACKENDS", "derby").split(",")) <= set(ALL_BACKENDS):
    raise RuntimeError(f"SCHEMAFLOW_TEST_BACKENDS={os.environ['SCHEMAFLOW_TEST_BACKENDS']}: the tests know "
                       f"{', '.join(ALL_BACKENDS)}")


def one_backend(preferred: str) -> str:
    """The one database a backend-parametrised test runs on where what it proves rests on the server's code, not on
    how its database orders concurrent transactions (a plan found stale, claims read back, a conversion): ``preferred``
    where the run has it, else the run's first. The suite keeps both databases among such tests, as it does among the
    kill points; races between concurrent writers run on every backend."""
    return preferred if preferred in BACKENDS else BACKENDS[0]


def metastore_setting(uri: str | None = None, release: Release | None = None) -> str:
    """The settings file's ``metastore`` line of a project on a server of ``release`` (default: the one under
    test) at ``uri`` (None: the environment names it): its guard declared where the server needs the lock."""
    fields = ([f"uri: '{uri}'"] if uri else []) + (["guard: lock"] if lock_guards(release) else [])
    return f"metastore: {{{', '.join(fields)}}}\n" if fields else ""


def give_client(project: Path, release: Release) -> dict[str, str]:
    """Add ``release``'s ``client_settings`` to ``project``'s schemaflow.yaml; returns the environment in which the
    operator approves them (jars are code schemaflow runs only when approved) and supplies the jars' folders."""
    from schemaflow.code_settings import OPERATOR_PATHS_VARIABLE
    from schemaflow.project import load_project

    settings_file = project / "schemaflow.yaml"
    settings = yaml.safe_load(settings_file.read_text()) if settings_file.exists() else None
    settings = settings or {}
    settings.setdefault("spark", {}).setdefault("conf", {}).update(release.client_settings())
    settings_file.write_text(yaml.safe_dump(settings, sort_keys=False))
    folders = sorted({str(jar.parent) for jar in files(release.client[1])}) if release.client else []
    env = {OPERATOR_PATHS_VARIABLE: ":".join(folders)}
    return {**env, "SCHEMAFLOW_APPROVED_CODE": " ".join(setting.id for setting in load_project(project, env=env)
                                                        .settings.code)}


def site_defaults(folder: Path, release: Release) -> str:
    """Write a ``spark-defaults.conf`` in ``folder`` giving Spark ``release``'s ``client_settings``, as a site's
    operator does for every job on its cluster; returns the folder, for ``SPARK_CONF_DIR``."""
    folder.mkdir(parents=True, exist_ok=True)
    (folder / "spark-defaults.conf").write_text("".join(f"{key} {value}\n"
                                                        for key, value in release.client_settings().items()))
    return str(folder)


_CLIENT_LOADERS: dict[str, Any] = {}  # by release: the class loader of its Hive client in the test process's JVM


@contextmanager
def other_client(spark: Any, uri: str, release: Release | None = None) -> Iterator[Metastore]:
    """Another writer's connection to the server ``uri`` of ``release`` (default: the one under test), from the test
    process's JVM (``spark``'s): a metastore client of its own, of Spark's built-in Hive or, where the line needs
    another (``Release.client``), of that one, its jars loaded before Spark's own as Spark loads them."""
    from schemaflow.catalog.hive.jvm import jvm_view, loaded_by
    from schemaflow.catalog.hive.metastore import Metastore

    release = release or release_under_test()
    view = jvm_view(spark)
    loader = view.java.lang.ClassLoader.getSystemClassLoader()  # Spark's own classes, Hive 2.3's among them
    if release.client is not None:
        if release.name not in _CLIENT_LOADERS:  # one per JVM, as Spark makes one per client
            jars = files(release.client[1])
            urls = spark.sparkContext._gateway.new_array(view.java.net.URL, len(jars))
            for index, jar in enumerate(jars):
                urls[index] = view.java.net.URL(jar.as_uri())
            _CLIENT_LOADERS[release.name] = view.org.apache.spark.util.ChildFirstURLClassLoader(urls, loader)
        loader = _CLIENT_LOADERS[release.name]
    # Through Java's reflection on the loader's own classes: py4j keeps a static method or constructor it called by its
    # class's name, so that calling it by name would reach the first loader's class of that name in this JVM.
    # Within the block, the thread's class loader is ``loader``: Hive's client and its HiveConf find classes by name
    # through it.
    with loaded_by(spark, loader):
        no_values = spark.sparkContext._gateway.new_array(view.java.lang.Object, 0)
        hive_conf = loader.loadClass("org.apache.hadoop.hive.conf.HiveConf")
        conf = hive_conf.getConstructor(spark.sparkContext._gateway.new_array(view.java.lang.Class, 0)).newInstance(
            no_values)
        conf.set("hive.metastore.uris", uri)
        [get_proxy] = [method for method in loader.loadClass("org.apache.hadoop.hive.metastore.RetryingMetaStoreClient")
                       .getMethods() if method.getName() == "getProxy" and method.getParameterCount() == 2
                       and method.getParameterTypes()[1].getName() == "boolean"]
        arguments = spark.sparkContext._gateway.new_array(view.java.lang.Object, 2)
        arguments[0], arguments[1] = conf, True
        client = get_proxy.invoke(None, arguments)
    try:
        yield Metastore(spark, client, uri, loader=loader)
    finally:
        client.close()


def lock_guards(release: Release | None = None) -> bool:
    """Whether schemaflow's writes to a server of ``release`` (default: the one under test) take the table lock."""
    return (release or release_under_test()).guard == "lock"


class MetastoreServer:
    """A metastore server in ``workdir``: ``with MetastoreServer(dir) as server: server.uri``."""

    def __init__(self, workdir: Path, timeout: float = 120.0, settings: Mapping[str, str] | None = None,
                 classpath: Sequence[Path] = (), java_options: Sequence[str] = (), derby_from: Path | None = None,
                 release: Release = RELEASES["2.3"]) -> None:
        self.workdir = workdir
        self.release = release
        self.derby_from = derby_from  # a Derby database to start from, copied (one holding the transaction tables)
        self.settings = dict(settings or {})  # more hive-site.xml properties of the server
        self.classpath = list(classpath)  # more jars, such as another database's JDBC driver
        self.java_options = list(java_options)
        self.timeout = timeout
        self.port = free_port()
        self.log = workdir / "server.log"
        self.startup_seconds: float | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"thrift://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        return self.workdir / "warehouse"

    def __enter__(self) -> MetastoreServer:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Start the server and wait until it accepts connections; raise with its log if it does not."""
        conf_dir = self.workdir / "conf"
        conf_dir.mkdir(parents=True, exist_ok=True)
        if self.derby_from is not None and not (self.workdir / "metastore_db").exists():
            shutil.copytree(self.derby_from, self.workdir / "metastore_db")
        site = hive_site(self.workdir, {**self.release.settings, **self.settings})
        for name in ("hive-site.xml", "metastore-site.xml"):  # 2.3 reads the first, 3.1 and later the second
            (conf_dir / name).write_text(site)
        command = [
            java_binary(), *self.java_options, LOG4J_SELECTOR,
            f"-Dderby.system.home={self.workdir}", f"-Dhive.log.dir={self.workdir}",
            "-cp", os.pathsep.join([str(conf_dir), *self.release.classpath(), *map(str, self.classpath)]),
            MAIN_CLASS, "-p", str(self.port),
        ]
        started = time.monotonic()
        with self.log.open("wb") as log:
            self._process = subprocess.Popen(
                command, cwd=self.workdir, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = started + self.timeout
        while not accepts_connections(self.port):
            if self._process.poll() is not None:
                self._fail(f"exited with status {self._process.returncode}")
            if time.monotonic() > deadline:
                self._fail(f"did not accept connections on port {self.port} within {self.timeout:.0f} s")
            time.sleep(0.25)
        self.startup_seconds = time.monotonic() - started

    def stop(self) -> None:
        """Stop the server and any process it started (its whole process group)."""
        process, self._process = self._process, None
        stop_group(process)

    def _fail(self, what: str) -> None:
        self.stop()
        log = self.log.read_text(errors="replace")[-8000:]
        raise RuntimeError(f"the Hive metastore server {what}; its log ({self.log}):\n{log}")


def stop_group(process: subprocess.Popen[bytes] | None) -> None:
    """Stop a server started in a session of its own, with every process it started (its whole process group)."""
    if process is None or process.poll() is not None:
        return
    os.killpg(process.pid, signal.SIGTERM)
    try:
        process.wait(timeout=20)
    except subprocess.TimeoutExpired:
        os.killpg(process.pid, signal.SIGKILL)
        process.wait()


def derby_with_transaction_tables(folder: Path, java_options: Sequence[str] = (), timeout: float = 300.0,
                                  release: Release = RELEASES["2.3"]) -> Path:
    """A Derby metastore database in ``folder`` for servers to start from, holding the metastore's transaction
    tables: with them, and a connection pool other than BoneCP (absent from pyspark's jars), a server takes
    locks. Hive 2.3's alone, as Hive's own tests create them (``tests/TransactionTables.java``); the whole
    schema of a later release, by its schema tool."""
    database = folder / "metastore_db"
    if release.schema_tool is not None:
        release.create_schema(f"jdbc:derby:;databaseName={database};create=true", "derby",
                              java_options=java_options, timeout=timeout)
        return database
    source = Path(__file__).with_name("TransactionTables.java")
    command = [java_binary(), *java_options, "-cp", f"{pyspark_jars()}/*", str(source),
               f"jdbc:derby:;databaseName={database};create=true", "org.apache.derby.jdbc.EmbeddedDriver", "APP"]
    done = subprocess.run(command, capture_output=True, text=True, timeout=timeout, stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise RuntimeError(f"creating the transaction tables failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")
    return database


NewServer = Callable[..., MetastoreServer]  # (backend, workdir, settings=None) -> a server not yet started


def hive_site(workdir: Path, more: Mapping[str, str] | None = None) -> str:
    """The hive-site.xml of a server whose Derby database and warehouse live in ``workdir``, with ``more``."""
    settings = {
        "javax.jdo.option.ConnectionURL": f"jdbc:derby:;databaseName={workdir / 'metastore_db'};create=true",
        "datanucleus.schema.autoCreateAll": "true",
        "hive.metastore.schema.verification": "false",
        "hive.metastore.warehouse.dir": str(workdir / "warehouse"),
        **(more or {}),
    }
    properties = "\n".join(
        f"  <property><name>{escape(k)}</name><value>{escape(v)}</value></property>" for k, v in settings.items()
    )
    return f'<?xml version="1.0"?>\n<configuration>\n{properties}\n</configuration>\n'


def free_port() -> int:
    """A TCP port that nothing listens on now (the OS picks it from the high range)."""
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("", 0))
        return probe.getsockname()[1]


def pyspark_jars() -> Path:
    """The jars the servers start from: the installed pyspark's, or SCHEMAFLOW_TEST_METASTORE_JARS.

    Spark 3.5's jars hold the Hive 2.3.9 metastore, which enforces no compare-and-swap guard (HIVE-26882
    came with 2.3.10) and which schemaflow therefore refuses as a server: the tests of schemaflow on
    Spark 3.5 start their servers from a pyspark 4 wheel's jars, as a team on 3.5 runs a newer metastore.
    """
    chosen = os.environ.get("SCHEMAFLOW_TEST_METASTORE_JARS")
    if chosen:
        return Path(chosen)
    spec = importlib.util.find_spec("pyspark")
    assert spec is not None and spec.origin is not None, "pyspark is not installed"
    return Path(spec.origin).parent / "jars"


def java_binary() -> str:
    java_home = os.environ.get("JAVA_HOME")
    java = str(Path(java_home) / "bin" / "java") if java_home else shutil.which("java")
    assert java, "no java on PATH and JAVA_HOME is not set"
    return java
