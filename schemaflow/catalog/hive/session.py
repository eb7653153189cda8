"""The one SparkSession schemaflow works through, built from the project's settings.

The session has Hive support and talks to the configured metastore: a Thrift server when
``metastore_uri`` is set, otherwise an embedded Derby database under the project's state
directory. Every ``spark_conf`` entry of the settings is passed through, so a site can add what
its cluster needs (Kerberos principals, S3 credentials providers, ...).

Its JVM maps an archive of the classes Spark loads, kept between runs, and starts seconds sooner
(``catalog.hive.class_archive``); the first session without one has its JVM write it at the process's exit.

Nothing runs in its JVM that the settings do not name and the operator did not approve: the
Spark settings that load code need the operator's approval (``code_settings``), the driver's
class path holds no path relative to the folder schemaflow runs in (Spark's launcher would put
``hive-jackson/*`` there, so that a jar committed to a repository at that path would be loaded),
and Spark is the one the operator installed, never one found above that folder; the settings reach
the JVM in a file, not on its command line (``catalog.hive.spark_launch``).

Spark, Hive and DataNucleus log nothing (see ``log4j2.properties``), the JVM's own output goes to
``jvm.log`` in the state directory, and PySpark's JSON error loggers are silenced: schemaflow
reports failures itself, as one readable line.
"""
from __future__ import annotations

import atexit
import logging
import re
import shlex
import socket
import sys
import time
from pathlib import Path
from typing import Any
from collections.abc import Mapping

from py4j.protocol import Py4JError
from pyspark import SparkConf, SparkContext
from pyspark.errors import PySparkException
from pyspark.sql import SparkSession

from schemaflow.catalog.hive.class_archive import ClassArchive, class_archive
from schemaflow.catalog.hive.jvm import java_message
from schemaflow.catalog.hive.local_server import derby_url, state_directory, usable
from schemaflow.catalog.hive.spark_compat import HIVE_JARS_KEY, HIVE_VERSION_KEY, silence_error_loggers
from schemaflow.catalog.hive.spark_defaults import defaults_file, spark_defaults
from schemaflow.catalog.hive.spark_launch import launch_driver
from schemaflow.code_settings import check_approved
from schemaflow.errors import SchemaflowError
from schemaflow.project import Settings
from schemaflow.spark_version import installed

LOG4J_CONFIG = Path(__file__).with_name("log4j2.properties")
JAVA_OPTIONS_KEY = "spark.driver.extraJavaOptions"
# Spark's launcher puts its value (by default the relative "hive-jackson/*") first on the driver's class path.
DEFAULT_CLASS_PATH_KEY = "spark.driver.defaultExtraClassPath"
JVM_LOG = "jvm.log"
# Spark replaces ${env:X}, ${system:X}, ${var} in a statement's text before parsing it, user text
# (comments, view SQL) included: a comment "${env:AWS_SECRET_ACCESS_KEY}" would store that secret.
# schemaflow turns it off whatever the user's spark.conf says.
VARIABLE_SUBSTITUTION = "spark.sql.variable.substitute"
# Where the master and the metastore come from, for messages.
MASTER_SETTING = "spark.master in schemaflow.yaml or SCHEMAFLOW_SPARK_MASTER"
METASTORE_SETTING = "metastore.uri in schemaflow.yaml or SCHEMAFLOW_METASTORE_URI"
METASTORE_URIS_KEY = "spark.hadoop.hive.metastore.uris"
DEPLOY_MODE = "spark.submit.deployMode"
MASTER_TIMEOUT_SECONDS = 5

log = logging.getLogger(__name__)
# A log4j line ("26/11/23 14:00:19 WARN Utils: ..."), and the message of a thrown exception.
_LOG_LINE = re.compile(r"\d\d/\d\d/\d\d \d\d:\d\d:\d\d (TRACE|DEBUG|INFO|WARN) ")
_THROWN = re.compile(r"(?:^|\s)(?:[\w$]+\.)+\w*(?:Exception|Error): (.+)$")


def spark_session(settings: Settings) -> SparkSession:
    """The active SparkSession, or a new one with Hive support configured from ``settings``."""
    silence_error_loggers()
    check_approved(settings.spark_code, settings.approved_code, "when Spark starts")
    settings_conf = spark_conf(settings)
    check_driver_settings(settings_conf)  # even with a session at hand: the settings are wrong either way
    active = SparkSession.getActiveSession()
    if active is not None:
        return active
    state_dir = state_directory(settings)
    jvm_log = state_dir / JVM_LOG
    with usable(state_dir):  # the folder and the JVM's log in it, or one line saying why not
        jvm_log.write_bytes(b"")
    archive = class_archive(settings_conf)
    if archive is not None:
        settings_conf[JAVA_OPTIONS_KEY] = f"{settings_conf[JAVA_OPTIONS_KEY]} {archive.option}".strip()
    conf = SparkConf(loadDefaults=False).setAll(sorted(settings_conf.items()))
    started = time.monotonic()
    try:
        with jvm_log.open("wb") as output:
            # In the project's folder: a relative path in a setting (a jar, a class path) is the project's file,
            # the one whose content its approval covers (``code_settings``).
            gateway = launch_driver(settings_conf, {"stdout": output, "stderr": output, "cwd": settings.root or None})
        SparkContext(conf=conf, gateway=gateway)
        if archive is not None and archive.writing is not None:
            atexit.register(_stop_for_archive, gateway, archive)
        # A standalone master that drops the application leaves a stopped context: this fails then.
        spark = SparkSession.builder.getOrCreate()
    except (PySparkException, Py4JError) as error:
        reason = _jvm_failure(jvm_log) or java_message(error)
        raise SchemaflowError(
            f"could not start Spark with master {settings.spark_master} ({MASTER_SETTING}): {reason} "
            f"(the JVM's output is in {jvm_log})"
        ) from None
    log.debug("Spark session started in %.1f s", time.monotonic() - started)
    return spark


def _stop_for_archive(gateway: Any, archive: ClassArchive) -> None:
    """At the process's exit: stop Spark and its JVM (closing its standard input ends it), which then
    writes the class archive; wait for that, so that only a complete one is used (``catalog.hive.class_archive``)."""
    context = SparkContext._active_spark_context
    if context is not None:
        context.stop()
    started = time.monotonic()
    sys.stderr.write("Writing the JVM's class archive for faster Spark starts, once for this environment (about 10 s "
                     "on a quiet machine; see Troubleshooting) ...\n")
    sys.stderr.flush()
    gateway.proc.stdin.close()
    archive.finish(gateway.proc)
    sys.stderr.write(f"Written in {time.monotonic() - started:.0f} s: later commands start Spark faster.\n"
                     if archive.path.exists() else "No archive was written: later commands start Spark as this one "
                     "did.\n")


def check_driver_settings(conf: Mapping[str, str]) -> None:
    """Refuse, in one line naming the setting, what would fail only after a long wait or a stack trace.

    schemaflow is the Spark driver (its work is metastore calls and DDL in this process), so it
    runs in client mode; and a standalone master (``spark://host:port[,host:port]``) or a metastore
    server (``thrift://host:port[,...]``) that does not answer would make Spark and Hive's client retry
    for a minute or more before failing obscurely, where a plan without a JVM fails in seconds.
    """
    if conf.get(DEPLOY_MODE, "client") != "client":
        raise SchemaflowError(f"{DEPLOY_MODE}={conf[DEPLOY_MODE]} in spark.conf: schemaflow is the Spark driver "
                              "and runs in client mode; remove that setting (executors may still run on the cluster)")
    client = {**spark_defaults(), **conf}.get(HIVE_VERSION_KEY, "")
    found = installed()
    if client.split(".")[0].isdigit() and int(client.split(".")[0]) >= 4 and found and found[0] < (4, 0):
        where = "spark.conf" if HIVE_VERSION_KEY in conf else defaults_file()
        raise SchemaflowError(f"{HIVE_VERSION_KEY}: {client} in {where}: Hive 4's client came with Spark 4.0, and "
                              f"this is pyspark {found[1]}; apply with Spark 4.0 or later; nothing was run")
    master = conf["spark.master"]
    if master.startswith("spark://"):
        _answers(master, "spark://", f"the Spark master {master} ({MASTER_SETTING})",
                 "check the address, or that the master is running")
    uris = conf.get(METASTORE_URIS_KEY)
    if uris:
        _answers(uris, "thrift://", f"the Hive metastore {uris} ({METASTORE_SETTING})",
                 "check the address, or that the metastore server is running; nothing was run")


def _answers(addresses: str, scheme: str, what: str, way_out: str) -> None:
    """Return once one of ``addresses`` (``scheme``host:port, separated by commas) accepts a connection."""
    reason: Exception | None = None
    for address in addresses.split(","):
        host, _, port = address.strip().removeprefix(scheme).rpartition(":")
        try:
            socket.create_connection((host, int(port)), timeout=MASTER_TIMEOUT_SECONDS).close()
            return
        except (OSError, ValueError) as error:
            reason = error
    raise SchemaflowError(f"cannot reach {what}: {reason}; {way_out}")


SHARED_PREFIXES_KEY = "spark.sql.hive.metastore.sharedPrefixes"
# Spark's default for it: the JDBC drivers a metastore's database needs, shared with Hive's classes.
SPARK_SHARED_PREFIXES = "com.mysql.jdbc,org.postgresql,com.microsoft.sqlserver,oracle.jdbc"


def spark_conf(settings: Settings) -> dict[str, str]:
    """The Spark configuration for ``settings``: schemaflow's entries, then the user's on top,
    except variable substitution, which is always off.

    The user's ``spark.driver.extraJavaOptions`` are kept, and schemaflow's options appended,
    except those the user sets already (such as their own ``-Dlog4j.configurationFile``).
    """
    state_dir = state_directory(settings)
    conf = {
        "spark.master": settings.spark_master,
        "spark.app.name": "schemaflow",
        "spark.sql.catalogImplementation": "hive",
        "spark.ui.enabled": "false",
        DEFAULT_CLASS_PATH_KEY: "",  # nothing from the working directory (a user's own is an approved code setting)
        # Hive's default is a new /tmp/<session id>_resources directory per session, never removed.
        "spark.hadoop.hive.downloaded.resources.dir": str(state_dir / "hive-resources"),
    }
    java_options = {"log4j.configurationFile": str(LOG4J_CONFIG)}
    if settings.warehouse_dir:
        conf["spark.sql.warehouse.dir"] = settings.warehouse_dir
    if settings.metastore_uri:
        conf[METASTORE_URIS_KEY] = settings.metastore_uri
    else:
        conf["spark.hadoop.javax.jdo.option.ConnectionURL"] = derby_url(state_dir)
        java_options["derby.system.home"] = str(state_dir)
    user_conf = dict(settings.spark_conf)
    user_java = user_conf.pop(JAVA_OPTIONS_KEY, "")
    ours = [
        shlex.quote(f"-D{name}={value}")
        for name, value in java_options.items()
        if f"-D{name}=" not in user_java
    ]
    conf[JAVA_OPTIONS_KEY] = " ".join(([user_java] if user_java else []) + ours)
    conf.update(user_conf)
    conf[VARIABLE_SUBSTITUTION] = "false"
    chosen = {**spark_defaults(), **conf}  # the site's spark-defaults.conf may choose the Hive client
    if chosen.get(HIVE_JARS_KEY, "builtin") != "builtin":
        # Hive client jars of their own are loaded apart, and schemaflow makes Hive's objects through their class
        # loader (``jvm.loaded_by``): py4j's classes must be found there too, for a Java failure to reach Python.
        shared = chosen.get(SHARED_PREFIXES_KEY, SPARK_SHARED_PREFIXES)
        conf[SHARED_PREFIXES_KEY] = ",".join(filter(None, [shared, "py4j."]))
    return conf


def _jvm_failure(jvm_log: Path) -> str:
    """The line of the JVM's output that says why it stopped: the first exception's message, else the
    first line that is not a warning or a log line."""
    lines = [line for line in jvm_log.read_text(errors="replace").splitlines()
             if line.strip() and not line.startswith(("WARNING", " ", "\t", "Using Spark's default log4j"))
             and not _LOG_LINE.match(line)]
    for line in lines:
        thrown = _THROWN.search(line)
        if thrown:
            return thrown.group(1)
    return lines[0] if lines else ""
