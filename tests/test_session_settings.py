"""What schemaflow asks of Spark before starting it, and how it tells a failed start: no JVM needed."""
from __future__ import annotations

import os
import socket
from pathlib import Path

import pytest

from schemaflow.catalog.hive.session import VARIABLE_SUBSTITUTION, _jvm_failure, check_driver_settings, spark_conf
from schemaflow.errors import SchemaflowError
from schemaflow.project import Settings


def test_variable_substitution_is_off_whatever_the_users_spark_conf_says():
    settings = Settings(spark_conf={VARIABLE_SUBSTITUTION: "true", "spark.sql.shuffle.partitions": "4"})
    conf = spark_conf(settings)
    assert conf[VARIABLE_SUBSTITUTION] == "false"
    assert conf["spark.sql.shuffle.partitions"] == "4"  # the rest of the user's settings are kept


def test_cluster_deploy_mode_is_refused_in_one_line_naming_the_setting():
    conf = spark_conf(Settings(spark_conf={"spark.submit.deployMode": "cluster"}))
    with pytest.raises(SchemaflowError) as refused:
        check_driver_settings(conf)
    assert str(refused.value).startswith("spark.submit.deployMode=cluster in spark.conf: schemaflow is the Spark "
                                         "driver and runs in client mode; remove that setting")


def test_an_unreachable_standalone_master_is_refused_at_once_naming_the_setting():
    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    conf = spark_conf(Settings(spark_master=f"spark://127.0.0.1:{port}"))
    with pytest.raises(SchemaflowError) as refused:
        check_driver_settings(conf)
    message = str(refused.value)
    assert message.startswith(f"cannot reach the Spark master spark://127.0.0.1:{port} (spark.master in "
                              "schemaflow.yaml or SCHEMAFLOW_SPARK_MASTER): ")
    assert "\n" not in message


def test_a_standalone_master_that_answers_passes_the_check():
    with socket.socket() as master:
        master.bind(("127.0.0.1", 0))
        master.listen()
        port = master.getsockname()[1]
        # The first of two HA masters is down: the second answers.
        check_driver_settings(spark_conf(Settings(spark_master=f"spark://127.0.0.1:1,127.0.0.1:{port}")))


def test_a_failed_start_is_told_by_the_exception_in_the_jvms_output(tmp_path: Path):
    log = tmp_path / "jvm.log"
    log.write_text(
        "WARNING: Using incubator modules: jdk.incubator.vector\n"
        "Using Spark's default log4j profile: org/apache/spark/log4j2-defaults.properties\n"
        "26/11/23 14:00:19 WARN Utils: Your hostname, vm, resolves to a loopback address: 127.0.0.1\n"
        "Exception in thread \"main\" org.apache.spark.SparkException: When running with master 'yarn' either "
        "HADOOP_CONF_DIR or YARN_CONF_DIR must be set in the environment.\n"
        "\tat org.apache.spark.deploy.SparkSubmitArguments.error(SparkSubmitArguments.scala:640)\n")
    assert _jvm_failure(log) == ("When running with master 'yarn' either HADOOP_CONF_DIR or YARN_CONF_DIR must be "
                                 "set in the environment.")
    log.write_text("WARNING: x\nError: Could not find or load main class org.example.Missing\n")
    assert _jvm_failure(log) == "Error: Could not find or load main class org.example.Missing"


def test_apply_against_an_unreachable_metastore_fails_at_once_without_starting_spark(tmp_path: Path, monkeypatch):
    import shutil

    from tests.inprocess import schemaflow

    with socket.socket() as probe:  # a port nothing listens on
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    root = Path(__file__).resolve().parent.parent
    shutil.copytree(root / "schemas", tmp_path / "schemas")
    shutil.copy(root / "schemaflow.yaml", tmp_path)
    monkeypatch.setenv("SCHEMAFLOW_METASTORE_URI", f"thrift://127.0.0.1:1,thrift://127.0.0.1:{port}")
    ran = schemaflow("--project", str(tmp_path), "apply", "--auto-approve")
    assert ran.code == 1
    assert (f"cannot reach the Hive metastore thrift://127.0.0.1:1,thrift://127.0.0.1:{port} (metastore.uri in "
            "schemaflow.yaml or SCHEMAFLOW_METASTORE_URI): ") in ran.err
    assert "nothing was run" in ran.err
    assert not (tmp_path / ".schemaflow" / "jvm.log").exists()  # no JVM was started


@pytest.mark.parametrize(("master", "conf", "cores"), [
    ("local", {}, 1),
    ("local[3]", {}, 3),
    ("local[4, 2]", {}, 4),
    ("local[*]", {}, os.cpu_count()),
    ("spark://h:7077", {"spark.cores.max": "16"}, 16),
    ("yarn", {"spark.executor.instances": "5", "spark.executor.cores": "4"}, 20),
    ("yarn", {"spark.executor.instances": "5"}, None),  # the cores each executor gets are the cluster's to say
    ("spark://h:7077", {"spark.cores.max": "all"}, None),
])
def test_the_cores_a_rewrite_is_estimated_on_are_those_the_settings_give_spark(master, conf, cores):
    assert Settings(spark_master=master, spark_conf=conf).spark_cores == cores
