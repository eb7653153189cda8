"""A PostgreSQL server for tests, holding the Hive metastore's schema once as a template.

Production metastores run on PostgreSQL or MySQL, not Derby, so the remote tests run against a
metastore server backed by PostgreSQL too. The server comes from the machine's PostgreSQL binaries
(Debian's ``postgresql`` package, or ``SCHEMAFLOW_TEST_POSTGRES_BIN``) and the metastore reaches it
through PostgreSQL's JDBC driver, pinned in ``tests/artifacts.lock`` and fetched from Maven Central once
(or the jar ``SCHEMAFLOW_TEST_POSTGRES_JDBC`` names); the README's set-up installs the server.

The metastore's tables are created once per run, in a template database, by DataNucleus's
SchemaTool over the ``package.jdo`` of the pyspark wheel's ``hive-metastore`` jar: a metastore
server left to create them itself (``datanucleus.schema.autoCreateAll``) deadlocks on PostgreSQL, its
first CREATE TABLE waiting on a foreign key of its own open transaction. Each metastore server then
gets a copy of the template (``CREATE DATABASE ... TEMPLATE``), which takes well under a second.

PostgreSQL refuses to run as root: as root, the server runs as the ``postgres`` user, in a
directory of its own outside pytest's (which only root may enter).
"""
from __future__ import annotations

import glob
import os
import shutil
import signal
import subprocess
import tempfile
import zipfile
from pathlib import Path
from types import TracebackType
from collections.abc import Sequence

from tests.artifacts import files
from tests.metastore_server import RELEASES, Release, free_port, java_binary, pyspark_jars

BIN_VARIABLE = "SCHEMAFLOW_TEST_POSTGRES_BIN"
JDBC_VARIABLE = "SCHEMAFLOW_TEST_POSTGRES_JDBC"
INSTALL = "apt-get install -y postgresql"
USER = "metastore"
# The metastore's transaction tables in PostgreSQL's SQL (Hive 2.3's hive-txn-schema for PostgreSQL): what its
# lock calls need. (On Derby, tests/TransactionTables.java has Hive create them itself.)
TRANSACTION_TABLES = """
CREATE TABLE TXNS (TXN_ID bigint PRIMARY KEY, TXN_STATE char(1) NOT NULL, TXN_STARTED bigint NOT NULL,
  TXN_LAST_HEARTBEAT bigint NOT NULL, TXN_USER varchar(128) NOT NULL, TXN_HOST varchar(128) NOT NULL);
CREATE TABLE TXN_COMPONENTS (TC_TXNID bigint REFERENCES TXNS (TXN_ID), TC_DATABASE varchar(128) NOT NULL,
  TC_TABLE varchar(128), TC_PARTITION varchar(767) DEFAULT NULL, TC_OPERATION_TYPE char(1) NOT NULL);
CREATE TABLE COMPLETED_TXN_COMPONENTS (CTC_TXNID bigint, CTC_DATABASE varchar(128) NOT NULL,
  CTC_TABLE varchar(256), CTC_PARTITION varchar(767));
CREATE TABLE NEXT_TXN_ID (NTXN_NEXT bigint NOT NULL);
INSERT INTO NEXT_TXN_ID VALUES (1);
CREATE TABLE HIVE_LOCKS (HL_LOCK_EXT_ID bigint NOT NULL, HL_LOCK_INT_ID bigint NOT NULL, HL_TXNID bigint,
  HL_DB varchar(128) NOT NULL, HL_TABLE varchar(128), HL_PARTITION varchar(767) DEFAULT NULL,
  HL_LOCK_STATE char(1) NOT NULL, HL_LOCK_TYPE char(1) NOT NULL, HL_LAST_HEARTBEAT bigint NOT NULL,
  HL_ACQUIRED_AT bigint, HL_USER varchar(128) NOT NULL, HL_HOST varchar(128) NOT NULL, HL_HEARTBEAT_COUNT integer,
  HL_AGENT_INFO varchar(128), HL_BLOCKEDBY_EXT_ID bigint, HL_BLOCKEDBY_INT_ID bigint,
  PRIMARY KEY (HL_LOCK_EXT_ID, HL_LOCK_INT_ID));
CREATE INDEX HL_TXNID_INDEX ON HIVE_LOCKS USING hash (HL_TXNID);
CREATE TABLE NEXT_LOCK_ID (NL_NEXT bigint NOT NULL);
INSERT INTO NEXT_LOCK_ID VALUES (1);
CREATE TABLE COMPACTION_QUEUE (CQ_ID bigint PRIMARY KEY, CQ_DATABASE varchar(128) NOT NULL,
  CQ_TABLE varchar(128) NOT NULL, CQ_PARTITION varchar(767), CQ_STATE char(1) NOT NULL, CQ_TYPE char(1) NOT NULL,
  CQ_TBLPROPERTIES varchar(2048), CQ_WORKER_ID varchar(128), CQ_START bigint, CQ_RUN_AS varchar(128),
  CQ_HIGHEST_TXN_ID bigint, CQ_META_INFO bytea, CQ_HADOOP_JOB_ID varchar(32));
CREATE TABLE NEXT_COMPACTION_QUEUE_ID (NCQ_NEXT bigint NOT NULL);
INSERT INTO NEXT_COMPACTION_QUEUE_ID VALUES (1);
CREATE TABLE COMPLETED_COMPACTIONS (CC_ID bigint PRIMARY KEY, CC_DATABASE varchar(128) NOT NULL,
  CC_TABLE varchar(128) NOT NULL, CC_PARTITION varchar(767), CC_STATE char(1) NOT NULL, CC_TYPE char(1) NOT NULL,
  CC_TBLPROPERTIES varchar(2048), CC_WORKER_ID varchar(128), CC_START bigint, CC_END bigint, CC_RUN_AS varchar(128),
  CC_HIGHEST_TXN_ID bigint, CC_META_INFO bytea, CC_HADOOP_JOB_ID varchar(32));
CREATE TABLE AUX_TABLE (MT_KEY1 varchar(128) NOT NULL, MT_KEY2 bigint NOT NULL, MT_COMMENT varchar(255),
  PRIMARY KEY (MT_KEY1, MT_KEY2));
CREATE TABLE WRITE_SET (WS_DATABASE varchar(128) NOT NULL, WS_TABLE varchar(128) NOT NULL,
  WS_PARTITION varchar(767), WS_TXNID bigint NOT NULL, WS_COMMIT_ID bigint NOT NULL,
  WS_OPERATION_TYPE char(1) NOT NULL);
"""
TEMPLATE = "metastore_template"
# Settings DataNucleus must share between creating the schema and the server that uses it: Hive
# 2.3 names its identifiers and value sequences this way.
DATANUCLEUS_NAMING = {
    "datanucleus.identifierFactory": "datanucleus1",
    "datanucleus.rdbms.useLegacyNativeValueStrategy": "true",
}


class PostgresServer:
    """``with PostgresServer() as pg: pg.metastore_settings(pg.new_database("x"))``."""

    def __init__(self, timeout: float = 60.0, java_options: Sequence[str] = ()) -> None:
        self.bin = postgres_bin()
        self.jdbc_jar = jdbc_jar()
        self.timeout = timeout
        self.java_options = list(java_options)  # of SchemaTool's JVM
        self.port = free_port()
        self.as_postgres = os.geteuid() == 0
        self.workdir = Path(tempfile.mkdtemp(prefix="schemaflow-postgres-"))
        self.data = self.workdir / "data"
        self.log = self.workdir / "server.log"
        self._databases = 0
        self._release_templates: set[str] = set()

    def __enter__(self) -> PostgresServer:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Initialise a cluster, start it on a free port and create the metastore's template database."""
        if self.as_postgres:
            shutil.chown(self.workdir, "postgres", "postgres")
        self._run(str(self.bin / "initdb"), "-D", str(self.data), "-U", USER, "--auth=trust", "--no-sync",
                  "-E", "UTF8", "--locale=C")
        self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-l", str(self.log), "-w", "-t", str(int(self.timeout)),
                  "-o", f"-h 127.0.0.1 -p {self.port} -k {self.workdir} -c fsync=off -c full_page_writes=off "
                        "-c synchronous_commit=off -c max_connections=200", "start")
        self.sql(f"CREATE DATABASE {TEMPLATE}")
        create_metastore_schema(self.workdir / "schematool", self.jdbc_url(TEMPLATE), self.jdbc_jar,
                                java_options=self.java_options)
        # Not in package.jdo: the tables of the metastore's locks and transactions, as production metastores have.
        self.sql(TRANSACTION_TABLES, TEMPLATE)

    def stop(self) -> None:
        """Stop the server (fast shutdown) and remove its files."""
        if (self.data / "postmaster.pid").exists():
            try:
                self._run(str(self.bin / "pg_ctl"), "-D", str(self.data), "-m", "immediate", "-w", "stop")
            except RuntimeError:
                pid = int((self.data / "postmaster.pid").read_text().split()[0])
                os.kill(pid, signal.SIGKILL)
        shutil.rmtree(self.workdir, ignore_errors=True)

    def new_database(self, name: str | None = None, release: Release = RELEASES["2.3"]) -> str:
        """A new database holding an empty metastore schema of ``release``; returns its name."""
        self._databases += 1
        name = name or f"metastore_{self._databases}"
        self.sql(f"CREATE DATABASE {name} TEMPLATE {self._template(release)}")
        return name

    def _template(self, release: Release) -> str:
        """The database holding ``release``'s empty schema, created by its schema tool the first time."""
        if release.schema_tool is None:
            return TEMPLATE
        template = "template_hive_" + release.name.replace(".", "_")
        if template not in self._release_templates:
            self.sql(f"CREATE DATABASE {template}")
            release.create_schema(self.jdbc_url(template), "postgres", classpath=[self.jdbc_jar], user=USER,
                                  java_options=self.java_options)
            self._release_templates.add(template)
        return template

    def query_metastores(self, query: str) -> list[str]:
        """``query``'s rows (fields joined by ``|``) from every metastore database made here, sorted."""
        made = self.sql(f"SELECT datname FROM pg_database WHERE datname <> '{TEMPLATE}' AND datname LIKE 'metastore%'")
        return sorted(row for database in made.split() for row in self.sql(query, database).splitlines())

    def jdbc_url(self, database: str) -> str:
        return f"jdbc:postgresql://127.0.0.1:{self.port}/{database}"

    def metastore_settings(self, database: str) -> dict[str, str]:
        """The hive-site.xml properties of a metastore server whose database is ``database`` here."""
        return {
            "javax.jdo.option.ConnectionURL": self.jdbc_url(database),
            "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
            "javax.jdo.option.ConnectionUserName": USER,
            "javax.jdo.option.ConnectionPassword": "",
            "datanucleus.schema.autoCreateAll": "false",
            # pyspark lacks BoneCP, Hive 2.3's default pool; without a pool DROP DATABASE fails.
            "datanucleus.connectionPoolingType": "HikariCP",
            "datanucleus.connectionPool.maxPoolSize": "4",
            # The compare-and-swap on a table parameter is a direct-SQL UPDATE (on by default; said here).
            "hive.metastore.try.direct.sql": "true",
            **DATANUCLEUS_NAMING,
        }

    def sql(self, statement: str, database: str = "postgres") -> str:
        """Run one statement through psql; return what it printed (unaligned, tuples only)."""
        return self._run(str(self.bin / "psql"), "-h", "127.0.0.1", "-p", str(self.port), "-U", USER, "-d", database,
                         "-v", "ON_ERROR_STOP=1", "-At", "-c", statement)

    def _run(self, *command: str) -> str:
        prefix = ["runuser", "-u", "postgres", "--"] if self.as_postgres else []
        done = subprocess.run([*prefix, *command], cwd=self.workdir, capture_output=True, text=True,
                              timeout=self.timeout, stdin=subprocess.DEVNULL)
        if done.returncode != 0:
            log = self.log.read_text(errors="replace")[-4000:] if self.log.exists() else ""
            raise RuntimeError(f"{' '.join(command)} failed ({done.returncode}):\n{done.stdout}{done.stderr}\n{log}")
        return done.stdout


def create_metastore_schema(workdir: Path, url: str, driver_jar: Path, timeout: float = 300.0,
                            java_options: Sequence[str] = ()) -> None:
    """Create the Hive 2.3 metastore's tables in the database at ``url`` with DataNucleus's SchemaTool."""
    workdir.mkdir(parents=True, exist_ok=True)
    jars = pyspark_jars()
    (metastore_jar,) = glob.glob(str(jars / "hive-metastore-*.jar"))
    with zipfile.ZipFile(metastore_jar) as jar:
        (workdir / "package.jdo").write_bytes(jar.read("package.jdo"))
    properties = {
        "javax.jdo.option.ConnectionURL": url,
        "javax.jdo.option.ConnectionDriverName": "org.postgresql.Driver",
        "javax.jdo.option.ConnectionUserName": USER,
        "javax.jdo.option.ConnectionPassword": "",
        **DATANUCLEUS_NAMING,
    }
    (workdir / "schema.properties").write_text("".join(f"{k}={v}\n" for k, v in properties.items()))
    command = [java_binary(), *java_options, "-cp", f"{jars}/*{os.pathsep}{driver_jar}", "org.datanucleus.store.schema.SchemaTool",
               "-create", "-api", "JDO", "-props", str(workdir / "schema.properties"), str(workdir / "package.jdo")]
    done = subprocess.run(command, cwd=workdir, capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0 or "Exception" in done.stderr:
        raise RuntimeError(f"creating the metastore schema failed ({done.returncode}):\n{done.stdout}\n{done.stderr}")


def postgres_bin() -> Path:
    """The directory of PostgreSQL's server programs (initdb, pg_ctl, psql)."""
    given = os.environ.get(BIN_VARIABLE)
    on_path = shutil.which("initdb")
    candidates = [Path(given)] if given else [Path(on_path).resolve().parent] if on_path else [
        Path(found).parent for found in sorted(glob.glob("/usr/lib/postgresql/*/bin/initdb"),
                                               key=lambda path: int(Path(path).parts[-3]), reverse=True)]
    for candidate in candidates:
        if (candidate / "initdb").exists() and (candidate / "pg_ctl").exists():
            return candidate
    raise RuntimeError(f"no PostgreSQL server programs found (initdb, pg_ctl): install them ({INSTALL}) "
                       f"or set {BIN_VARIABLE} to their directory")


def jdbc_jar() -> Path:
    """PostgreSQL's JDBC driver, for the metastore server: the pinned one, unless the run names another."""
    if JDBC_VARIABLE not in os.environ:
        [jar] = files("postgresql-jdbc")
        return jar
    jar = Path(os.environ[JDBC_VARIABLE])
    if not jar.exists():
        raise RuntimeError(f"no PostgreSQL JDBC driver at {jar}: unset {JDBC_VARIABLE} for the pinned one")
    return jar

