"""How schemaflow starts Spark, without a JVM: the Spark it runs (``catalog/hive/spark_home.py``), the settings it hands
over in a private file rather than on a command line (``catalog/hive/spark_launch.py``, ``catalog/hive/private_file.py``), and
the formats of those files (``catalog/hive/spark_defaults.py``, the local metastore server's ``java`` argument file).

The launch is run for real against a stand-in ``spark-submit`` (a shell script, the operator's ``SPARK_HOME``) that
records what it was given; tests/test_spark_launch_spark.py starts the real one.
"""
from __future__ import annotations

import os
import stat
from pathlib import Path

import pytest
from pyspark.errors import PySparkException

from schemaflow.catalog.hive import class_archive, local_server
from schemaflow.catalog.hive.private_file import private_file
from schemaflow.catalog.hive.spark_defaults import format_properties, parse_properties
from schemaflow.catalog.hive.spark_home import LAUNCH_PATHS, conf_dir, java, pin_spark_home, pyspark_folder, spark_home
from schemaflow.catalog.hive.spark_launch import SUBMIT_ARGS, launch_driver
from schemaflow.errors import SchemaflowError
from schemaflow.project import ENV_LOCAL_SERVER, Settings
from tests.inprocess import schemaflow

PYSPARK = pyspark_folder()
# Values that mean something in Java's properties format, or are not ASCII: each must come back as it was.
AWKWARD = {
    "spark.a=b:c": "x=y:z # not a comment ! nor this",
    "spark.path\\with\\backslashes": "C:\\temp\\",
    "spark.line.breaks": "one\ntwo\rthree\tfour\ffive",
    "#spark.starts.like.a.comment": "!starts like one too",
    "spark.unicode.été": "naïve ключ 🔑 𝔰𝔢𝔠𝔯𝔢𝔱",
    "spark.spaces in key": "inner  spaces stay",
    "spark.empty": "",
    "spark.quotes": "'single' \"double\" `back`",
}


def test_spark_is_pysparks_own_folder_unless_the_operator_sets_spark_home(tmp_path: Path):
    assert PYSPARK is not None and (PYSPARK / "bin" / "spark-submit").is_file()
    assert spark_home({}) == PYSPARK
    assert spark_home({"SPARK_HOME": ""}) == PYSPARK  # pyspark would run ./bin/spark-submit: the project's
    assert spark_home({"SPARK_HOME": str(tmp_path)}) == tmp_path
    assert conf_dir({}) == PYSPARK / "conf"
    assert conf_dir({"SPARK_HOME": str(tmp_path)}) == tmp_path / "conf"
    assert conf_dir({"SPARK_HOME": str(tmp_path), "SPARK_CONF_DIR": "/etc/spark"}) == Path("/etc/spark")


@pytest.mark.parametrize("name, value", [
    ("SPARK_HOME", "spark"), ("SPARK_HOME", "../spark"), ("SPARK_CONF_DIR", "conf"), ("JAVA_HOME", "jdk"),
    ("HADOOP_CONF_DIR", "./hadoop"), ("YARN_CONF_DIR", "yarn"), ("SPARK_DIST_CLASSPATH", "/opt/hadoop/*:lib/*"),
])
def test_a_relative_folder_spark_would_take_from_the_projects_folder_is_refused(name, value, monkeypatch):
    assert name in LAUNCH_PATHS
    before = os.environ.get("SPARK_HOME")
    monkeypatch.setenv(name, value)
    with pytest.raises(SchemaflowError) as refused:
        pin_spark_home()
    relative = value.split(":")[-1]
    assert str(refused.value) == (f"{name} holds the relative path '{relative}': Spark starts in the project's folder "
                                  "and would take it from there, from the repository's files; set it to an absolute "
                                  "path (each entry, for a list); nothing was run")
    if name != "SPARK_HOME":
        assert os.environ.get("SPARK_HOME") == before  # nothing pinned: refused before


def test_the_java_is_java_home_s_else_the_first_on_the_path(tmp_path):
    assert java({"JAVA_HOME": str(tmp_path)}) == tmp_path / "bin" / "java"
    (tmp_path / "java").write_text("#!/bin/sh\n")
    (tmp_path / "java").chmod(0o755)
    assert java({"PATH": str(tmp_path)}) == tmp_path / "java"
    with pytest.raises(SchemaflowError, match="JAVA_HOME holds the relative path 'jdk'"):
        java({"JAVA_HOME": "jdk"})


def test_a_java_in_the_folder_spark_starts_in_is_never_the_one_it_runs(tmp_path, monkeypatch):
    """An empty or relative PATH entry is the current folder, the project's when Spark starts: not looked in, and
    JAVA_HOME is set to the java found in the absolute ones, which Spark's scripts then run."""
    installed = tmp_path / "jdk" / "bin"
    installed.mkdir(parents=True)
    for folder in (tmp_path, installed):
        (folder / "java").write_text("#!/bin/sh\n")
        (folder / "java").chmod(0o755)
    monkeypatch.chdir(tmp_path)
    monkeypatch.setenv("PATH", f":.:bin:{installed}")
    monkeypatch.delenv("JAVA_HOME", raising=False)
    monkeypatch.delenv("SPARK_HOME", raising=False)
    assert java() == installed / "java"
    pin_spark_home()
    assert os.environ["JAVA_HOME"] == str(tmp_path / "jdk")


@pytest.mark.parametrize("operators", [None, "", "operator's"])
def test_spark_home_is_set_before_pyspark_looks(operators, tmp_path, monkeypatch):
    if operators is None:
        monkeypatch.delenv("SPARK_HOME", raising=False)
    else:
        monkeypatch.setenv("SPARK_HOME", str(tmp_path) if operators else "")
        fake_spark(tmp_path, tmp_path)
    home = pin_spark_home()
    assert home == (tmp_path if operators else PYSPARK)
    assert os.environ["SPARK_HOME"] == str(home)


def test_a_spark_home_without_spark_submit_is_refused_in_one_line(tmp_path, monkeypatch):
    monkeypatch.setenv("SPARK_HOME", str(tmp_path))
    with pytest.raises(SchemaflowError) as refused:
        pin_spark_home()
    assert str(refused.value) == (f"{tmp_path} holds no bin/spark-submit, which starts Spark: set SPARK_HOME to the "
                                  "folder of a Spark installation; nothing was run")


def test_the_class_archive_is_the_same_whether_spark_home_is_set_yet_or_not(tmp_path, monkeypatch):
    monkeypatch.setattr(class_archive, "_writing_allowed", True)
    plain = {key: value for key, value in os.environ.items() if key != "SPARK_HOME"}
    before = class_archive.class_archive({}, {**plain, class_archive.ARCHIVE_SETTING: str(tmp_path)})
    after = class_archive.class_archive({}, {**plain, class_archive.ARCHIVE_SETTING: str(tmp_path),
                                             "SPARK_HOME": str(PYSPARK)})
    other = class_archive.class_archive({}, {**plain, class_archive.ARCHIVE_SETTING: str(tmp_path),
                                             "SPARK_HOME": str(tmp_path)})
    assert before is not None and after is not None and other is not None
    assert before.path == after.path != other.path


def test_properties_are_written_so_that_they_read_back_as_they_were():
    text = format_properties(AWKWARD)
    assert parse_properties(text) == AWKWARD
    assert text.isascii() and len(text.splitlines()) == len(AWKWARD)  # one line each, whatever the value holds
    assert format_properties({"spark.hadoop.hive.metastore.uris": "thrift://m:9083"}) == \
        "spark.hadoop.hive.metastore.uris=thrift\\u003a//m\\u003a9083\n"


def test_a_private_file_is_this_users_alone_and_gone_after(tmp_path):
    with private_file("x.properties", "secret=1\n") as path:
        assert path.read_text() == "secret=1\n"
        assert stat.S_IMODE(path.stat().st_mode) == 0o600
        assert stat.S_IMODE(path.parent.stat().st_mode) == 0o700
    assert not path.exists() and not path.parent.exists()
    with pytest.raises(RuntimeError), private_file("y", "secret=2\n") as failed:
        raise RuntimeError("the process did not start")
    assert not failed.parent.exists()


def fake_spark(home: Path, record: Path) -> None:
    """A stand-in ``spark-submit`` in ``home`` that records its arguments, environment and properties file, then
    fails as a JVM that could not start does."""
    (home / "bin").mkdir(parents=True)
    (home / "jars").mkdir()
    script = home / "bin" / "spark-submit"
    script.write_text(f"""#!/bin/sh
record={record}
printf '%s\\n' "$@" > "$record/arguments"
printf '%s\\n' "$SPARK_HOME" > "$record/spark_home"
stat -c %a "$2" > "$record/mode"
stat -c %a "$(dirname "$2")" > "$record/folder_mode"
cp "$2" "$record/spark.properties"
exit 1
""")
    script.chmod(0o755)


@pytest.mark.parametrize("operators_args", [None, "--verbose pyspark-shell"])
def test_spark_submit_gets_one_private_file_holding_the_settings_over_the_sites_defaults(operators_args, tmp_path,
                                                                                          monkeypatch):
    home, record, site = tmp_path / "spark", tmp_path / "record", tmp_path / "site"
    record.mkdir()
    site.mkdir()
    fake_spark(home, record)
    (site / "spark-defaults.conf").write_text("spark.site.only  from the site\nspark.both=the site's\n")
    monkeypatch.setenv("SPARK_HOME", str(home))
    monkeypatch.setenv("SPARK_CONF_DIR", str(site))
    if operators_args is None:
        monkeypatch.delenv(SUBMIT_ARGS, raising=False)
    else:
        monkeypatch.setenv(SUBMIT_ARGS, operators_args)
    conf = {"spark.both": "the project's", "spark.hadoop.hive.metastore.uris": "thrift://metastore.internal:9083",
            "spark.hadoop.javax.jdo.option.ConnectionURL": "jdbc:postgresql://db/metastore?password=hunter2",
            **AWKWARD}
    with pytest.raises(PySparkException, match="JAVA_GATEWAY_EXITED"):
        launch_driver(conf, {"cwd": tmp_path})
    arguments = (record / "arguments").read_text().splitlines()
    assert arguments[:1] == ["--properties-file"]
    assert arguments[2:] == (operators_args or "pyspark-shell").split()
    assert not Path(arguments[1]).exists() and not Path(arguments[1]).parent.exists()  # removed after
    assert (record / "mode").read_text() == "600\n" and (record / "folder_mode").read_text() == "700\n"
    assert (record / "spark_home").read_text() == f"{home}\n"
    # The site's entries beneath the project's, as --conf had them; nothing else on the command line.
    assert parse_properties((record / "spark.properties").read_text()) == {
        "spark.site.only": "from the site", **conf}
    assert os.environ.get(SUBMIT_ARGS) == operators_args  # as it was


def test_a_relative_spark_home_stops_the_command_before_spark_starts(tmp_path, monkeypatch):
    (tmp_path / "schemas" / "sales").mkdir(parents=True)
    (tmp_path / "schemaflow.yaml").write_text("databases: [sales]\n")
    (tmp_path / "schemas" / "sales" / "t.yaml").write_text("table: sales.t\ncolumns: [{name: a, type: int}]\n")
    monkeypatch.setenv("SPARK_HOME", "spark")
    monkeypatch.setenv(ENV_LOCAL_SERVER, "0")
    ran = schemaflow("plan", "--project", str(tmp_path))
    assert ran.code == 1
    assert ran.err.splitlines()[-1] == ("error: SPARK_HOME holds the relative path 'spark': Spark starts in the "
                                        "project's folder and would take it from there, from the repository's "
                                        "files; set it to an absolute path (each entry, for a list); nothing was run")
    assert not (tmp_path / ".schemaflow" / "jvm.log").exists()


def test_the_local_servers_settings_are_in_an_argument_file_java_reads_back():
    properties = local_server._server_properties(Settings(warehouse_dir='/w/a "b"\\c'), Path("/state"))
    text = local_server._argument_file(properties)
    assert text.splitlines()[0] == '"-Djavax.jdo.option.ConnectionURL=jdbc:derby:;databaseName=/state/metastore_db;' \
                                   'create=true"'
    assert '"-Dhive.metastore.warehouse.dir=/w/a \\"b\\"\\\\c"' in text.splitlines()


def test_a_value_is_trimmed_as_spark_trims_it():
    """Spark trims what Java's ``String.trim`` does but line breaks; white space beyond ASCII stays."""
    assert parse_properties("spark.a=\\u0001\\u00a0x\\n\\t \n") == {"spark.a": "\u00a0x\n"}
