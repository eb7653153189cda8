"""The site's spark-defaults.conf, read as Spark's launcher reads it (``schemaflow/catalog/hive/spark_defaults.py``)."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemaflow.catalog.hive.session import check_driver_settings, spark_conf
from schemaflow.catalog.hive.spark_defaults import defaults_file, parse_properties, spark_defaults
from schemaflow.errors import SchemaflowError
from schemaflow.project import Settings


def test_entries_are_read_as_java_properties_and_trimmed_as_spark_does() -> None:
    text = ("# a comment\n"
            "   ! another\n"
            "\n"
            "spark.sql.hive.metastore.version   4.0.1\n"
            "spark.sql.hive.metastore.jars=path\n"
            "spark.a : b  \n"
            "spark.sql.hive.metastore.jars.path file:/opt/hive/a.jar,\\\n"
            "        file:/opt/hive/b.jar\n"
            "key\\ with\\ space=tab\\there\n"
            "spark.unicode=\\u00e9t\\u00e9\n"
            "spark.empty\n"
            "spark.comment.after.continuation=one\\\n"
            "# part of the value\n")
    assert parse_properties(text) == {
        "spark.sql.hive.metastore.version": "4.0.1",
        "spark.sql.hive.metastore.jars": "path",
        "spark.a": "b",
        "spark.sql.hive.metastore.jars.path": "file:/opt/hive/a.jar,file:/opt/hive/b.jar",
        "key with space": "tab\there",
        "spark.unicode": "été",
        "spark.empty": "",
        "spark.comment.after.continuation": "one# part of the value",
    }


def test_an_even_number_of_trailing_backslashes_ends_the_line() -> None:
    assert parse_properties("a=x\\\\\nb=y\n") == {"a": "x\\", "b": "y"}


def test_the_file_is_where_spark_s_launcher_looks(tmp_path: Path) -> None:
    assert defaults_file({"SPARK_CONF_DIR": str(tmp_path), "SPARK_HOME": "/opt/spark"}) == tmp_path / "spark-defaults.conf"
    assert defaults_file({"SPARK_HOME": "/opt/spark"}) == Path("/opt/spark/conf/spark-defaults.conf")
    found = defaults_file({})
    assert found is not None and found.parent.parent.name == "pyspark"  # pyspark's own folder
    assert spark_defaults({"SPARK_CONF_DIR": str(tmp_path)}) == {}  # no such file


@pytest.fixture
def site_client(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """A site whose spark-defaults.conf gives Spark Hive 4's client."""
    (tmp_path / "spark-defaults.conf").write_text("spark.sql.hive.metastore.version 4.0.1\n"
                                                  "spark.sql.hive.metastore.jars path\n"
                                                  "spark.sql.hive.metastore.jars.path file:/opt/hive/lib/a.jar\n")
    monkeypatch.setenv("SPARK_CONF_DIR", str(tmp_path))
    return tmp_path


def test_a_hive_client_the_site_chooses_sees_py4j(site_client: Path) -> None:
    conf = spark_conf(Settings(metastore_uri="thrift://hms:9083"))
    assert conf["spark.sql.hive.metastore.sharedPrefixes"] == (
        "com.mysql.jdbc,org.postgresql,com.microsoft.sqlserver,oracle.jdbc,py4j.")
    assert "spark.sql.hive.metastore.jars" not in conf  # the site's setting stays the site's
    (site_client / "spark-defaults.conf").write_text("spark.sql.hive.metastore.jars builtin\n")
    assert "spark.sql.hive.metastore.sharedPrefixes" not in spark_conf(Settings(metastore_uri="thrift://hms:9083"))


def test_a_hive_4_client_the_site_chooses_is_refused_on_spark_3_5_naming_the_file(
        site_client: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr("schemaflow.catalog.hive.session.installed", lambda: ((3, 5), "3.5.9"))
    with pytest.raises(SchemaflowError) as refused:
        check_driver_settings({"spark.master": "local[1]"})
    assert str(refused.value) == (
        f"spark.sql.hive.metastore.version: 4.0.1 in {site_client / 'spark-defaults.conf'}: Hive 4's client came with "
        "Spark 4.0, and this is pyspark 3.5.9; apply with Spark 4.0 or later; nothing was run")
    with pytest.raises(SchemaflowError, match=r"^spark.sql.hive.metastore.version: 4.1.0 in spark.conf: "):
        check_driver_settings({"spark.master": "local[1]", "spark.sql.hive.metastore.version": "4.1.0"})
    check_driver_settings({"spark.master": "local[1]", "spark.sql.hive.metastore.version": "2.3.10"})  # the project's wins
