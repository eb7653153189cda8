"""Which Spark release schemaflow runs with: the installed pyspark's, or, where none is installed, the release the
project declares (``spark.release`` in schemaflow.yaml).

The release decides facts a plan states as well as what the JVM offers: Spark 4's Parquet reader
converts widened column types that Spark 3.5's refuses (``plan.hazards``), and 3.5 lacks APIs that
4.x has (``catalog.hive.spark_compat``). Reading the version needs no JVM and does not import pyspark,
so a JVM-free plan (``plan --base``, a thrift:// metastore) knows it too. pyspark is an extra
(``schemaflow-hive[spark]``): a pull request's plan runs without it, on the release the project
declares, and an apply whose pyspark is another release than declared is refused, so that what was
reviewed is what runs.
"""
from __future__ import annotations

from functools import cache
from importlib.metadata import PackageNotFoundError, version

from schemaflow.errors import SchemaflowError

SparkVersion = tuple[int, int]  # (major, minor)
# No release is on the package index yet: the hint names where schemaflow comes from, as the README does.
INSTALL = ("install schemaflow with its extra spark (pip install '<where schemaflow comes from>[spark]', from a clone: "
           "pip install '/path/to/schemaflow[spark]')")


@cache
def installed() -> tuple[SparkVersion, str] | None:
    """The installed pyspark's (major, minor) release and full version; None where pyspark is not installed."""
    try:
        full = version("pyspark")
    except PackageNotFoundError:
        return None
    major, minor = full.split(".")[:2]
    return (int(major), int(minor)), full


def spark_version(declared: SparkVersion | None = None) -> SparkVersion:
    """The release plans are made for: the installed pyspark's, which must be the ``declared`` one where the
    project declares one; without pyspark, the declared one."""
    found = installed()
    if found is not None and declared is not None and found[0] != declared:
        raise SchemaflowError(f"schemaflow.yaml: spark.release is {release_text(declared)}, but pyspark {found[1]} is "
                              f"installed here: install pyspark {release_text(declared)}.x, or change spark.release "
                              "to the release apply runs with (a plan for another release says other things)")
    if found is not None:
        return found[0]
    if declared is not None:
        return declared
    raise SchemaflowError("a plan needs the Spark release apply runs with, and pyspark is not installed: "
                          f"{INSTALL}, or declare the release in schemaflow.yaml (spark: {{release: \"4.0\"}})")


def parse_release(text: str) -> SparkVersion:
    """``"3.5"`` as (3, 5): ``spark.release`` as the settings' JSON Schema admits it."""
    major, minor = text.split(".")
    return int(major), int(minor)


def release_text(release: SparkVersion) -> str:
    return f"{release[0]}.{release[1]}"


def spark_name(release: SparkVersion) -> str:
    """``Spark 3.5``: a release as messages name it."""
    return f"Spark {release_text(release)}"
