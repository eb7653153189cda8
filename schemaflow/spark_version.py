"""Which Spark release schemaflow runs with, read from the installed pyspark's metadata.

The release decides facts a plan states as well as what the JVM offers: Spark 4's Parquet reader
converts widened column types that Spark 3.5's refuses (``plan.hazards``), and 3.5 lacks APIs that
4.x has (``catalog.spark_compat``). Reading the version needs no JVM and does not import pyspark,
so a JVM-free plan (``plan --base``, a thrift:// metastore) knows it too.
"""
from __future__ import annotations

from functools import cache
from importlib.metadata import version

SparkVersion = tuple[int, int]  # (major, minor)


@cache
def spark_version() -> SparkVersion:
    """The installed pyspark's (major, minor) release."""
    major, minor = version("pyspark").split(".")[:2]
    return int(major), int(minor)


def spark_name(release: SparkVersion) -> str:
    """``Spark 3.5``: a release as messages name it."""
    return f"Spark {release[0]}.{release[1]}"
