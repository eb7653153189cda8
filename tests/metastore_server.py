"""A standalone Thrift Hive metastore server for tests, started from the pyspark wheel's jars.

The server is the Hive 2.3 ``HiveMetaStore`` that pyspark bundles, backed by its own Derby
database in a private directory, or by a PostgreSQL database (``tests/postgres_server.py``) when its
settings say so. It listens on all interfaces (it has no bind option), so it gets
a free high port and clients connect to 127.0.0.1. It is ready when the port accepts connections.
Used as a context manager, it is stopped, with everything it started, on exit.
"""
from __future__ import annotations

import importlib.util
import os
import shutil
import signal
import socket
import subprocess
import time
from pathlib import Path
from types import TracebackType
from collections.abc import Callable, Mapping, Sequence
from xml.sax.saxutils import escape

# Without this selector the server dies with NoClassDefFoundError: com/lmax/disruptor.
LOG4J_SELECTOR = "-Dlog4j2.contextSelector=org.apache.logging.log4j.core.selector.ClassLoaderContextSelector"
MAIN_CLASS = "org.apache.hadoop.hive.metastore.HiveMetaStore"
# The databases a server can keep its metastore in (conftest's ``new_metastore_server`` makes either).
BACKENDS = ("derby", "postgresql")
# The JVMs of a test run (Spark's, through SPARK_SUBMIT_OPTS, and these servers, through conftest) live
# for seconds and do little: the client compiler alone and the serial collector spend far less of two
# cores than the JVM's defaults (measured: two remote apply tests 70 s -> 54 s). The benchmarks keep
# the defaults, as users run them.
TEST_JAVA_OPTIONS = ("-XX:TieredStopAtLevel=1", "-XX:+UseSerialGC")


class MetastoreServer:
    """A metastore server in ``workdir``: ``with MetastoreServer(dir) as server: server.uri``."""

    def __init__(self, workdir: Path, timeout: float = 120.0, settings: Mapping[str, str] | None = None,
                 classpath: Sequence[Path] = (), java_options: Sequence[str] = (), derby_from: Path | None = None) -> None:
        self.workdir = workdir
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
        (conf_dir / "hive-site.xml").write_text(hive_site(self.workdir, self.settings))
        command = [
            java_binary(), *self.java_options, LOG4J_SELECTOR,
            f"-Dderby.system.home={self.workdir}", f"-Dhive.log.dir={self.workdir}",
            "-cp", os.pathsep.join([str(conf_dir), f"{pyspark_jars()}/*", *map(str, self.classpath)]), MAIN_CLASS, "-p", str(self.port),
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
        if process is None or process.poll() is not None:
            return
        os.killpg(process.pid, signal.SIGTERM)
        try:
            process.wait(timeout=20)
        except subprocess.TimeoutExpired:
            os.killpg(process.pid, signal.SIGKILL)
            process.wait()

    def _fail(self, what: str) -> None:
        self.stop()
        log = self.log.read_text(errors="replace")[-8000:]
        raise RuntimeError(f"the Hive metastore server {what}; its log ({self.log}):\n{log}")


def derby_with_transaction_tables(folder: Path, java_options: Sequence[str] = (), timeout: float = 300.0) -> Path:
    """A Derby metastore database in ``folder`` holding the metastore's transaction tables alone, as Hive's own
    tests create them (``tests/TransactionTables.java``), for servers to start from: with them, and a connection
    pool other than BoneCP (absent from the jars), a server takes locks."""
    database = folder / "metastore_db"
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


def accepts_connections(port: int) -> bool:
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=1):
            return True
    except OSError:
        return False


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
