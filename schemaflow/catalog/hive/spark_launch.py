"""How schemaflow starts Spark's driver JVM: the Spark the operator installed, its settings in a file no other
process reads.

pyspark's ``launch_gateway(conf)`` gives ``spark-submit`` every setting as ``--conf KEY=VALUE``, and so puts them on
the command lines of the launcher's JVM and the driver's, which every process of the same user reads: the
metastore's address, its database's JDBC URL and every ``spark.conf`` value (S3 keys, tokens). Here they go into a
properties file instead (``catalog.hive.private_file``), given to ``spark-submit`` with ``--properties-file`` through
``PYSPARK_SUBMIT_ARGS``, the arguments pyspark adds to its command, and removed as ``launch_gateway`` returns: it
waits for the gateway the driver opens after ``spark-submit`` and the launcher have read their arguments.

Given such a file, Spark reads no ``spark-defaults.conf`` (Spark 4 would with ``--load-spark-defaults``, which 3.5
lacks): the file holds the site's entries (``catalog.hive.spark_defaults``) beneath schemaflow's, the precedence
``--conf`` had over them. pyspark then sets the same settings on the JVM's configuration, as before.

Spark's launcher still writes the driver's Java options, class path and memory into the ``java`` command it runs:
schemaflow's own options there name files and folders alone (a user's are code settings, approved by the operator,
and shown there).
"""
from __future__ import annotations

import os
import shlex
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from typing import Any

from pyspark.java_gateway import launch_gateway

from schemaflow.catalog.hive.private_file import private_file
from schemaflow.catalog.hive.spark_defaults import format_properties, spark_defaults
from schemaflow.catalog.hive.spark_home import pin_spark_home

SUBMIT_ARGS = "PYSPARK_SUBMIT_ARGS"
# What pyspark gives spark-submit without PYSPARK_SUBMIT_ARGS: the primary resource of a Python driver.
PYSPARK_SHELL = "pyspark-shell"
PROPERTIES_FILE = "spark.properties"


def launch_driver(conf: Mapping[str, str], popen_kwargs: dict[str, Any]) -> Any:
    """Start the driver JVM of the Spark the operator installed (``catalog.hive.spark_home``) with ``conf``, over the
    site's ``spark-defaults.conf``; returns pyspark's gateway to it (``launch_gateway``'s)."""
    pin_spark_home()
    with private_file(PROPERTIES_FILE, format_properties({**spark_defaults(), **conf})) as properties, \
            _submit_args(f"--properties-file {shlex.quote(str(properties))}"):
        return launch_gateway(None, popen_kwargs)


@contextmanager
def _submit_args(ours: str) -> Iterator[None]:
    """``PYSPARK_SUBMIT_ARGS`` with ``ours`` first, then the operator's (or pyspark's default), while pyspark reads
    it; as it was afterwards."""
    theirs = os.environ.get(SUBMIT_ARGS)
    os.environ[SUBMIT_ARGS] = f"{ours} {theirs or PYSPARK_SHELL}"
    try:
        yield
    finally:
        if theirs is None:
            del os.environ[SUBMIT_ARGS]
        else:
            os.environ[SUBMIT_ARGS] = theirs
