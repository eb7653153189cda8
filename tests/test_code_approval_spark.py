"""The allow-list of safe Spark settings against the installed Spark itself (``safe_spark_settings``).

Every key the list names is one Spark defines (its registry of settings: core and SQL), or, for the Hive client's,
one Hive's ``HiveConf`` defines; the shape the list gives it admits the default Spark (or Hive) gives it; and Spark
(or Hive) accepts every example of the shape, every value of an enumeration. Run on each Spark release schemaflow
supports (.ci/spark_versions.py), this holds the list to each of them.
"""
from __future__ import annotations

from typing import Any

import pytest

from schemaflow.safe_spark_settings import HADOOP_PREFIX, HIVE, SPARK, Shape

# The Scala objects that define the settings: loading one registers its settings in Spark's registry.
DEFINERS = ("org.apache.spark.internal.config.package$", "org.apache.spark.sql.internal.SQLConf$",
            "org.apache.spark.sql.hive.HiveUtils$")


def spark_entry(jvm: Any, key: str) -> Any:
    """Spark's ``ConfigEntry`` of ``key``, every object that defines settings loaded first; None where Spark has none."""
    loader = jvm.java.lang.Thread.currentThread().getContextClassLoader()
    for definer in DEFINERS:
        jvm.java.lang.Class.forName(definer, True, loader)
    return jvm.org.apache.spark.internal.config.ConfigEntry.findEntry(key)


def spark_default(entry: Any) -> str | None:
    """The default of a setting as Spark writes it (that of the setting it falls back to), None where it has none."""
    while entry.getClass().getSimpleName() == "FallbackConfigEntry":
        entry = entry.fallback()
    return str(entry.defaultValueString()) if entry.defaultValue().isDefined() else None


def spark_refuses(entry: Any, value: str) -> str | None:
    """What Spark says reading ``value`` for the setting, None when it takes it."""
    from py4j.protocol import Py4JJavaError
    from pyspark.errors import PySparkException

    try:
        entry.valueConverter().andThen(entry.stringConverter()).apply(value)
    except (PySparkException, Py4JJavaError) as error:  # pyspark turns Spark's own errors into its exceptions
        return str(error).splitlines()[0]
    return None


@pytest.mark.spark
@pytest.mark.parametrize("key", SPARK)
def test_each_listed_spark_setting_is_sparks_with_the_shape_of_its_values(spark, key):
    shape: Shape = SPARK[key]
    entry = spark_entry(spark.sparkContext._jvm, key)
    assert entry is not None, f"{key} is no setting of Spark {spark.version}"
    default = spark_default(entry)
    assert default is None or shape.admits(default), f"{key}'s default {default!r} is not {shape.words}"
    assert {example: spark_refuses(entry, example) for example in shape.examples} == dict.fromkeys(shape.examples)


@pytest.mark.spark
@pytest.mark.parametrize("key", HIVE)
def test_each_listed_hive_client_setting_is_hives_with_the_shape_of_its_values(spark, key):
    shape: Shape = HIVE[key]
    setting = spark.sparkContext._jvm.org.apache.hadoop.hive.conf.HiveConf.getConfVars(key.removeprefix(HADOOP_PREFIX))
    assert setting is not None, f"{key} is no setting of Hive's client in Spark {spark.version}"
    assert shape.admits(setting.getDefaultValue()), f"{key}'s default {setting.getDefaultValue()!r} is not {shape.words}"
    assert {example: setting.validate(example) for example in shape.examples} == dict.fromkeys(shape.examples)
