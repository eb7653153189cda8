"""What differs between the Spark releases schemaflow runs on (3.5, and 4.0 through 4.3), in one place.

Measured with pyspark 3.5.9 (Hive 2.3.9 client and embedded metastore) against 4.0.5 to 4.3.0 (Hive
2.3.10):

- PySpark 4 logs every SQL error as a JSON line on stderr through its own loggers
  (``pyspark.logger``); 3.5 has no such module and logs none.
- HIVE-26882's compare-and-swap came with Hive 2.3.10. A 2.3.9 client lacks the constants that name
  its environment-context keys, but passes the entries to the server as they are: a 2.3.10 server
  (or the one pyspark 4 starts) enforces them. The keys are therefore written out here.
- The metastore embedded in Spark 3.5's JVM is Hive 2.3.9's and enforces no guard. An embedded Derby
  database admits one process (Derby locks its directory), so nothing else writes beside the JVM
  that holds it: there schemaflow checks each guard itself, reading the version before it writes
  (``Metastore.guards_in_process``), and it refuses any other metastore that ignores guards.

The plan-side differences (what readers of old files see, the schema mode Spark stores for a view)
follow the release too, through ``schemaflow.spark_version``.
"""
from __future__ import annotations

import logging
from importlib.util import find_spec

# HIVE-26882: the key whose value a write expects, and that value (hive_metastoreConstants in 2.3.10).
EXPECTED_PARAMETER_KEY = "expected_parameter_key"
EXPECTED_PARAMETER_VALUE = "expected_parameter_value"
# Which Hive client jars Spark loads ("builtin": its own, Hive 2.3; a Hive 4 metastore needs Hive 4's, Spark 4.0+).
HIVE_JARS_KEY = "spark.sql.hive.metastore.jars"
HIVE_VERSION_KEY = "spark.sql.hive.metastore.version"  # their Hive release (Hive 4's came with Spark 4.0)
# The settings that choose that client (its release, its jars, what it shares with Spark), not how it connects.
CLIENT_CHOICE = frozenset({HIVE_VERSION_KEY, HIVE_JARS_KEY, "spark.sql.hive.metastore.jars.path",
                           "spark.sql.hive.metastore.sharedPrefixes", "spark.sql.hive.metastore.barrierPrefixes"})
# PySpark 4 logs every SQL error as a JSON line on stderr through these loggers.
PYSPARK_ERROR_LOGGERS = ("SQLQueryContextLogger", "DataFrameQueryContextLogger")


def silence_error_loggers() -> None:
    """Keep PySpark's JSON error lines off stderr (schemaflow reports failures itself); nothing on 3.5."""
    if find_spec("pyspark.logger") is None:
        return
    from pyspark.logger import PySparkLogger  # absent before PySpark 4
    for name in PYSPARK_ERROR_LOGGERS:
        PySparkLogger.getLogger(name).setLevel(logging.CRITICAL + 1)


def enforces_guards(hive_version: str) -> bool:
    """Whether the embedded metastore of Hive ``hive_version`` enforces compare-and-swap guards: pyspark
    bundles 2.3.10 (Spark 4), which does, or 2.3.9 (Spark 3.5), which does not. Another (a site's own
    ``spark.sql.hive.metastore.jars``) is probed as a server is (``Metastore.check_guards``)."""
    return tuple(int(part) for part in hive_version.split("-")[0].split(".")[:3]) >= (2, 3, 10)


def derby_embedded(jdbc_url: str | None) -> bool:
    """Whether a metastore's ``javax.jdo.option.ConnectionURL`` is an embedded Derby database (one
    process at a time), not Derby's network server or another database."""
    url = jdbc_url or "jdbc:derby:"
    return url.startswith("jdbc:derby:") and not url.startswith("jdbc:derby://")
