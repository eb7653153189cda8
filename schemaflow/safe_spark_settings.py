"""The Spark settings a project may set without the operator: an allow-list, each key with the shape of its value.

``spark.conf`` in ``schemaflow.yaml`` reaches Spark as it is written, and a pull request writes it. Most of
Spark's, Hadoop's and Hive's settings can do more than tune: load a class or a jar, run a script, send the
job's data, logs or credentials to another endpoint, file system or database. Listing those cannot be done
(Hadoop alone adds a class-name setting per file system, and a setting whose class name is lower-case, an
endpoint or a directory looks like any other), so the list is turned around: this module names the settings
known to be safe for data and configuration, those teams set for schemaflow's work (shuffle partitions,
adaptive execution, memory and cores, file sizes, the time zone, Parquet and ORC without classes, Hive's
conversions, the partition overwrite mode, the metastore client's timeout), each with the shape of value it
may take. A key of this list whose value has that shape is a plain setting; any other key, or a value of
another shape, is a setting that needs the operator's approval (``code_settings``). Left out on purpose: every
setting that takes a path, an address or a class, but for delta-spark's session extension and catalog, each by its
one class name (the jars that hold them need the operator: ``spark.jars.packages`` loads code); what chooses whose
credentials the job uses (Kerberos principals and keytabs); what makes Spark write to the metastore as it reads a
table (``spark.sql.hive.caseSensitiveInferenceMode``).

Every key of ``SPARK`` and ``HIVE`` is defined by each Spark release schemaflow supports (3.5, and 4.0 through 4.3),
with the same meaning: tests/test_code_approval_spark.py asks the installed Spark's registry of settings (and Hive's,
for the two Hive client settings) for each one, that the shape admits the default Spark gives it, and that
Spark accepts each example of the shape. ``DELTA``'s are delta-spark's, which the test venv's Spark lacks: the
engine with delta-spark starts with them (tests/delta_spark.py, checked by tests/test_delta_apply.py). The shapes are
narrower than what Spark parses (no spaces, no ``${...}``, bounded lengths), never wider.
"""
from __future__ import annotations

import re
from dataclasses import dataclass
from collections.abc import Mapping


@dataclass(frozen=True)
class Shape:
    """The values a setting may take: ``words`` says it to people, ``pattern`` admits it, ``examples`` are values
    Spark accepts (every one, for an enumeration)."""

    words: str
    pattern: str
    examples: tuple[str, ...]

    def admits(self, value: str) -> bool:
        return re.fullmatch(self.pattern, value) is not None


def one_of(*values: str) -> Shape:
    """An enumeration, in any case (Spark compares these in upper or lower case)."""
    return Shape(f"one of {', '.join(values)}", "(?i:" + "|".join(map(re.escape, values)) + ")", values)


def java_class(name: str) -> Shape:
    """One Java class, by its exact name (the JVM tells case apart)."""
    return Shape(f"the class {name}", re.escape(name), (name,))


BOOLEAN = Shape("true or false", "(?i:true|false)", ("true", "false"))
COUNT = Shape("a whole number, such as 8", "[0-9]{1,10}", ("8",))
# Spark's JavaUtils.byteStringAs: b, k(b), m(b), g(b), t(b), p(b); bytes without a unit.
SIZE = Shape("a size, such as 64m or 134217728 (bytes; units b, k, m, g, t, p, alone or with b)",
             "(?i:[0-9]{1,15}(?:b|[kmgtp]b?)?)", ("64m", "134217728"))
SIZE_OR_OFF = Shape("a size, such as 10m, or -1 for none", "-1|" + SIZE.pattern, ("10m", "-1"))
# Spark's JavaUtils.timeStringAs: us, ms, s, m or min, h, d; a bare number in the setting's own unit.
DURATION = Shape("a duration, such as 120s (units us, ms, s, m or min, h, d)",
                 "(?i:[0-9]{1,15}(?:us|ms|s|m|min|h|d)?)", ("120s",))
FRACTION = Shape("a fraction between 0 and 1, such as 0.6", r"0(?:\.[0-9]{1,6})?|1(?:\.0{1,6})?", ("0.6",))
TIME_ZONE = Shape("a time-zone id, such as UTC, Europe/Paris or +02:00",
                  r"[A-Za-z][A-Za-z0-9_+-]{0,30}(?:/[A-Za-z][A-Za-z0-9_+-]{0,30}){0,2}|[+-][0-9]{2}:[0-9]{2}",
                  ("UTC", "Europe/Paris", "+02:00"))
VERSION = Shape("a Hive release, such as 2.3.10", r"[0-9]{1,2}(?:\.[0-9]{1,2}){1,2}", ("2.3.10",))

# Spark's own settings (core and SQL), by key.
SPARK: Mapping[str, Shape] = {
    # The driver (cluster is refused before Spark starts: schemaflow is the driver), memory, cores and executors.
    "spark.submit.deployMode": one_of("client", "cluster"),
    "spark.driver.memory": SIZE,
    "spark.driver.cores": COUNT,
    "spark.driver.maxResultSize": SIZE,
    "spark.executor.memory": SIZE,
    "spark.executor.memoryOverhead": SIZE,
    "spark.executor.cores": COUNT,
    "spark.executor.instances": COUNT,
    "spark.cores.max": COUNT,
    "spark.task.cpus": COUNT,
    "spark.dynamicAllocation.enabled": BOOLEAN,
    "spark.dynamicAllocation.minExecutors": COUNT,
    "spark.dynamicAllocation.maxExecutors": COUNT,
    "spark.memory.fraction": FRACTION,
    "spark.network.timeout": DURATION,
    # Shuffles, joins and adaptive execution.
    "spark.sql.shuffle.partitions": COUNT,
    "spark.sql.adaptive.enabled": BOOLEAN,
    "spark.sql.adaptive.coalescePartitions.enabled": BOOLEAN,
    "spark.sql.adaptive.advisoryPartitionSizeInBytes": SIZE,
    "spark.sql.adaptive.skewJoin.enabled": BOOLEAN,
    "spark.sql.autoBroadcastJoinThreshold": SIZE_OR_OFF,
    "spark.sql.broadcastTimeout": DURATION,
    # Files read and written.
    "spark.sql.files.maxPartitionBytes": SIZE,
    "spark.sql.files.openCostInBytes": SIZE,
    "spark.sql.files.maxRecordsPerFile": COUNT,
    "spark.sql.files.ignoreCorruptFiles": BOOLEAN,
    "spark.sql.files.ignoreMissingFiles": BOOLEAN,
    "spark.sql.sources.partitionOverwriteMode": one_of("STATIC", "DYNAMIC"),
    # Values: the session's time zone, ANSI SQL, how dates are parsed.
    "spark.sql.session.timeZone": TIME_ZONE,
    "spark.sql.ansi.enabled": BOOLEAN,
    "spark.sql.legacy.timeParserPolicy": one_of("EXCEPTION", "LEGACY", "CORRECTED"),
    # Parquet and ORC, without classes.
    "spark.sql.parquet.compression.codec": one_of("none", "uncompressed", "snappy", "gzip", "lzo", "brotli", "lz4",
                                                  "lz4_raw", "zstd"),
    "spark.sql.parquet.mergeSchema": BOOLEAN,
    "spark.sql.parquet.writeLegacyFormat": BOOLEAN,
    "spark.sql.parquet.outputTimestampType": one_of("INT96", "TIMESTAMP_MICROS", "TIMESTAMP_MILLIS"),
    "spark.sql.parquet.filterPushdown": BOOLEAN,
    "spark.sql.orc.compression.codec": one_of("none", "uncompressed", "snappy", "zlib", "lzo", "zstd", "lz4"),
    "spark.sql.orc.impl": one_of("native", "hive"),
    "spark.sql.orc.filterPushdown": BOOLEAN,
    # Hive tables: Spark's own readers for them, partition pruning, the client's release.
    "spark.sql.hive.convertMetastoreParquet": BOOLEAN,
    "spark.sql.hive.convertMetastoreOrc": BOOLEAN,
    "spark.sql.hive.convertInsertingPartitionedTable": BOOLEAN,
    "spark.sql.hive.metastorePartitionPruning": BOOLEAN,
    "spark.sql.hive.metastore.version": VERSION,
}
HADOOP_PREFIX = "spark.hadoop."  # Spark hands these to Hadoop's and Hive's configuration, without the prefix
# Hive's metastore client settings, by key as spark.conf writes them.
HIVE: Mapping[str, Shape] = {
    "spark.hadoop.hive.metastore.client.socket.timeout": DURATION,
    "spark.hadoop.hive.metastore.sasl.enabled": BOOLEAN,
}
# delta-spark in the user's Spark, as Delta's docs set it up, and the Delta SQL setting that tunes its reads of a log.
# Not Delta's commit settings (``spark.databricks.delta.maxCommitAttempts`` is schemaflow's own guard), nor defaults
# for new tables' properties (``spark.databricks.delta.properties.defaults.*``: a table created would differ from
# the one declared).
DELTA: Mapping[str, Shape] = {
    "spark.sql.extensions": java_class("io.delta.sql.DeltaSparkSessionExtension"),
    "spark.sql.catalog.spark_catalog": java_class("org.apache.spark.sql.delta.catalog.DeltaCatalog"),
    "spark.databricks.delta.snapshotPartitions": COUNT,
}
SAFE: Mapping[str, Shape] = {**SPARK, **HIVE, **DELTA}
