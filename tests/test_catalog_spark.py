"""The live state read from a real metastore: objects made with Spark SQL come back as exact models.

The JVM tests (marked ``spark``) share one SparkSession and work in databases of their own. The
unmarked tests check the pure parts (the Spark configuration, Thrift JSON → model) without a JVM.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any
from collections.abc import Callable

import pytest
from pyspark.sql import SparkSession

from schemaflow.catalog.hive.metastore import Metastore
from schemaflow.catalog.hive.thrift_data import hive_storage, to_model, user_properties
from schemaflow.catalog.hive.session import spark_conf
from schemaflow.errors import SchemaflowError
from schemaflow.model import MANAGED_KEYS_KEY, VERSION_KEY, Bucketing, Column, Table, View
from schemaflow.project import Settings
from schemaflow.sql.table_kinds import names

JAVA_OPTIONS = "spark.driver.extraJavaOptions"
MakeDb = Callable[[], str]  # the fresh_db fixture: makes an empty database, returns its name

# --- pure: configuration and Thrift JSON → model ----------------------------------------------


def test_spark_conf_for_an_embedded_metastore() -> None:
    conf = spark_conf(Settings(warehouse_dir="/w", derby_dir="/p/.schemaflow", spark_master="local[1]"))
    assert conf["spark.master"] == "local[1]"
    assert conf["spark.sql.catalogImplementation"] == "hive"
    assert conf["spark.ui.enabled"] == "false"
    assert conf["spark.sql.warehouse.dir"] == "/w"
    assert conf["spark.hadoop.hive.downloaded.resources.dir"] == "/p/.schemaflow/hive-resources"
    assert conf["spark.hadoop.javax.jdo.option.ConnectionURL"] == \
        "jdbc:derby:;databaseName=/p/.schemaflow/metastore_db;create=true"
    assert "spark.hadoop.hive.metastore.uris" not in conf
    options = conf[JAVA_OPTIONS].split()
    assert options[0].startswith("-Dlog4j.configurationFile=") and options[0].endswith("log4j2.properties")
    assert Path(options[0].split("=", 1)[1]).is_file()
    assert options[1] == "-Dderby.system.home=/p/.schemaflow"


def test_spark_conf_for_a_remote_metastore_keeps_the_users_settings() -> None:
    settings = Settings(
        metastore_uri="thrift://hms:9083", derby_dir="/p/.schemaflow",
        spark_conf={
            JAVA_OPTIONS: "-Djava.security.krb5.conf=/etc/krb5.conf",
            "spark.hadoop.hive.metastore.sasl.enabled": "true",
            "spark.ui.enabled": "true",
        },
    )
    conf = spark_conf(settings)
    assert conf["spark.hadoop.hive.metastore.uris"] == "thrift://hms:9083"
    assert "spark.hadoop.javax.jdo.option.ConnectionURL" not in conf
    assert "spark.sql.warehouse.dir" not in conf
    assert conf["spark.hadoop.hive.metastore.sasl.enabled"] == "true"
    assert conf["spark.ui.enabled"] == "true"
    options = conf[JAVA_OPTIONS].split()
    assert options[0] == "-Djava.security.krb5.conf=/etc/krb5.conf"
    assert [o.split("=")[0] for o in options[1:]] == ["-Dlog4j.configurationFile"]


def test_a_users_log4j_configuration_replaces_ours() -> None:
    settings = Settings(derby_dir="/s", spark_conf={JAVA_OPTIONS: "-Dlog4j.configurationFile=/mine"})
    assert spark_conf(settings)[JAVA_OPTIONS] == "-Dlog4j.configurationFile=/mine -Dderby.system.home=/s"


def test_thrift_json_to_model() -> None:
    data: dict[str, Any] = {
        "dbName": "d", "tableName": "t", "tableType": "MANAGED_TABLE",
        "sd": {
            "cols": [{"name": "u", "type": "uniontype<int,string>", "comment": ""},
                     {"name": "n", "type": "INTEGER"}],
            "location": "file:/w/d.db/t", "inputFormat": "com.example.In", "outputFormat": "com.example.Out",
            "serdeInfo": {"serializationLib": "com.example.SerDe"},
        },
        "parameters": {"comment": "", MANAGED_KEYS_KEY: "", "numRows": "5", "owner": "x"},
    }
    assert to_model(data) == Table(
        "d", "t", (Column("u", "uniontype<int,string>"), Column("n", "int")), format="custom",
        serde="com.example.SerDe", input_format="com.example.In", output_format="com.example.Out",
        properties={"owner": "x"},
    )
    assert to_model(data).managed_keys == ()


def test_bookkeeping_parameters_are_not_properties() -> None:
    parameters = {
        "comment": "c", "transient_lastDdlTime": "1", "EXTERNAL": "TRUE", "numFiles": "1", "totalSize": "1",
        "numRows": "1", "rawDataSize": "1", "COLUMN_STATS_ACCURATE": "{}", "numFilesErasureCoded": "0",
        "last_modified_by": "u", "last_modified_time": "1", "bucketing_version": "2",
        "spark.sql.create.version": "4.0.5", "spark.sql.sources.schema": "{}", "view.schemaMode": "BINDING",
        VERSION_KEY: "v", MANAGED_KEYS_KEY: "owner", "schemaflow.other": "x",
        "owner": "o", "sparkling": "yes", "viewer": "v", "Team": "t",
    }
    assert user_properties(parameters) == {"Team": "t", "owner": "o", "sparkling": "yes", "viewer": "v"}


_TEXT = ("org.apache.hadoop.mapred.TextInputFormat", "org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat")
_LAZY = "org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe"


@pytest.mark.parametrize("serde, classes, parameters, expected", [
    # As Spark 4 stores ROW FORMAT DELIMITED FIELDS TERMINATED BY '|': the delimiter twice.
    (_LAZY, _TEXT, {"field.delim": "|", "serialization.format": "|"},
     dict(format="textfile", serde=None, serde_properties={"field.delim": "|"})),
    ("org.apache.hadoop.hive.serde2.OpenCSVSerde", _TEXT, {"separatorChar": ",", "serialization.format": "1"},
     dict(format="textfile", serde="org.apache.hadoop.hive.serde2.OpenCSVSerde", serde_properties={"separatorChar": ","})),
    (_LAZY, ("com.example.In", "com.example.Out"), {"serialization.format": "1"},
     dict(format="custom", serde=None, input_format="com.example.In", output_format="com.example.Out")),
    ("com.example.SerDe", _TEXT, {}, dict(format="textfile", serde="com.example.SerDe")),
])
def test_hive_storage_is_read_as_declared(serde: str, classes: tuple[str, str], parameters: dict[str, str],
                                          expected: dict[str, object]) -> None:
    sd = {"serdeInfo": {"serializationLib": serde, "parameters": parameters},
          "inputFormat": classes[0], "outputFormat": classes[1]}
    storage = hive_storage(sd)
    assert {key: storage[key] for key in expected} == expected
    assert storage["serde_properties"] == expected.get("serde_properties", {})


def test_a_data_source_table_is_read_from_sparks_schema() -> None:
    # As Spark 4 stores CREATE TABLE t (a INT COMMENT 'ca', v VARCHAR(3), ds STRING) USING csv
    # OPTIONS (header 'true') PARTITIONED BY (ds) CLUSTERED BY (a) SORTED BY (v) INTO 4 BUCKETS.
    schema = ('{"type":"struct","fields":[{"name":"a","type":"integer","nullable":true,"metadata":{"comment":"ca"}},'
              '{"name":"v","type":"string","nullable":true,"metadata":{"__CHAR_VARCHAR_TYPE_STRING":"varchar(3)"}},'
              '{"name":"m","type":{"type":"map","keyType":"string","valueType":{"type":"array","elementType":"long",'
              '"containsNull":true},"valueContainsNull":true},"nullable":true,"metadata":{}},'
              '{"name":"ds","type":"string","nullable":true,"metadata":{}}]}')
    middle = len(schema) // 2
    data = {
        "dbName": "db", "tableName": "t", "tableType": "MANAGED_TABLE", "partitionKeys": [{"name": "ds", "type": "string"}],
        "sd": {"cols": [{"name": "col", "type": "array<string>", "comment": "from deserializer"}],
               "serdeInfo": {"serializationLib": _LAZY, "parameters": {
                   "path": "file:/w/db.db/t", "header": "true", "serialization.format": "1"}}},
        "parameters": {"spark.sql.sources.provider": "csv", "spark.sql.sources.schema.numParts": "2",
                       "spark.sql.sources.schema.part.0": schema[:middle], "spark.sql.sources.schema.part.1": schema[middle:],
                       "spark.sql.sources.schema.numPartCols": "1", "spark.sql.sources.schema.partCol.0": "ds",
                       "spark.sql.sources.schema.numBuckets": "4", "spark.sql.sources.schema.numBucketCols": "1",
                       "spark.sql.sources.schema.bucketCol.0": "a", "spark.sql.sources.schema.numSortCols": "1",
                       "spark.sql.sources.schema.sortCol.0": "v"},
    }
    assert to_model(data) == Table(
        "db", "t", (Column("a", "int", "ca"), Column("v", "varchar(3)"), Column("m", "map<string,array<bigint>>")),
        partition_columns=(Column("ds", "string"),), format="csv", data_source=True,
        serde_properties={"header": "true"}, bucketing=Bucketing(("a",), 4, ("v",)),
    )


# --- against the shared SparkSession ------------------------------------------------------------


@pytest.mark.spark
def test_tables_read_back_exactly(
    spark: SparkSession, metastore: Metastore, fresh_db: MakeDb, tmp_path: Path,
) -> None:
    db = fresh_db()
    spark.sql(f"""CREATE TABLE {db}.orders (
        id BIGINT COMMENT 'Order id', amount DECIMAL(12,2), tags MAP<STRING,STRING>,
        detail STRUCT<code: INT, notes: ARRAY<STRING>> COMMENT 'Größe "x"')
        COMMENT 'Order lines' PARTITIONED BY (ds STRING COMMENT 'Load date', hour INT)
        STORED AS PARQUET TBLPROPERTIES ('team'='sales')""")
    spark.sql(f"CREATE TABLE {db}.aliases (n INTEGER, l LONG, s SHORT, b BYTE, r REAL, c CHAR(3), v VARCHAR(5)) "
              "STORED AS ORC")
    location = tmp_path / "external" / "events"
    spark.sql(f"CREATE EXTERNAL TABLE {db}.events (at TIMESTAMP, day DATE) STORED AS ORC LOCATION '{location}'")

    catalog = metastore.read((db,))

    assert catalog.databases == (db,)
    assert list(catalog.objects) == [f"{db}.aliases", f"{db}.events", f"{db}.orders"]
    assert catalog.objects[f"{db}.orders"] == Table(
        db, "orders",
        (Column("id", "bigint", "Order id"), Column("amount", "decimal(12,2)"),
         Column("tags", "map<string,string>"),
         Column("detail", "struct<code:int,notes:array<string>>", 'Größe "x"')),
        partition_columns=(Column("ds", "string", "Load date"), Column("hour", "int")),
        comment="Order lines", format="parquet", properties={"team": "sales"},
    )
    assert catalog.objects[f"{db}.aliases"] == Table(
        db, "aliases",
        (Column("n", "int"), Column("l", "bigint"), Column("s", "smallint"), Column("b", "tinyint"),
         Column("r", "float"), Column("c", "char(3)"), Column("v", "varchar(5)")),
        format="orc",
    )
    assert catalog.objects[f"{db}.events"] == Table(
        db, "events", (Column("at", "timestamp"), Column("day", "date")),
        format="orc", external=True, location=f"file:{location}",
    )
    for obj in catalog.objects.values():
        assert (obj.managed_keys, obj.version) == ((), None)


@pytest.mark.spark
def test_storage_formats_are_detected(spark: SparkSession, metastore: Metastore, fresh_db: MakeDb) -> None:
    db = fresh_db()
    formats = names(data_source=False)  # every Hive format registered
    for name in formats:
        spark.sql(f"CREATE TABLE {db}.t_{name} (a INT) STORED AS {name.upper()}")
    spark.sql(f"CREATE TABLE {db}.t_using_parquet (a INT) USING parquet")
    spark.sql(f"CREATE TABLE {db}.t_using_csv (a INT) USING csv")

    found = {t.name: t.format for t in metastore.read((db,)).tables()}

    assert found == {f"t_{n}": n for n in formats} | {"t_using_parquet": "parquet", "t_using_csv": "csv"}
    assert {t.name for t in metastore.read((db,)).tables() if t.data_source} == {"t_using_parquet", "t_using_csv"}


@pytest.mark.spark
def test_views_read_back_exactly(spark: SparkSession, metastore: Metastore, fresh_db: MakeDb) -> None:
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.orders (id BIGINT, amount DECIMAL(12,2), ds STRING) STORED AS PARQUET")
    sql = f"SELECT id, amount * 2 AS doubled, ds FROM {db}.orders"
    spark.sql(f"CREATE VIEW {db}.named (order_id COMMENT 'The id', twice, day COMMENT 'Day') "
              f"COMMENT 'Orders, doubled' AS {sql}")
    spark.sql(f"CREATE VIEW {db}.plain AS SELECT id FROM {db}.orders")

    catalog = metastore.read((db,))

    assert catalog.objects[f"{db}.named"] == View(
        db, "named", sql,
        columns=(Column("order_id", "bigint", "The id"), Column("twice", "decimal(14,2)"),
                 Column("day", "string", "Day")),
        comment="Orders, doubled",
    )
    assert catalog.objects[f"{db}.plain"] == View(db, "plain", f"SELECT id FROM {db}.orders", (Column("id", "bigint"),))
    assert all(v.reads == () for v in catalog.views())


@pytest.mark.spark
def test_a_partitioned_view_keeps_its_partition_columns_last(
    spark: SparkSession, metastore: Metastore, fresh_db: MakeDb,
) -> None:
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.orders (id BIGINT, ds STRING) STORED AS PARQUET")
    spark.sql(f"CREATE VIEW {db}.daily AS SELECT id, ds FROM {db}.orders")
    # As Hive's CREATE VIEW ... PARTITIONED ON (ds) stores it: the trailing column moves to the keys.
    view = metastore.msc.getTable(db, "daily")
    view.getPartitionKeys().add(view.getSd().getCols().pop())
    metastore.msc.alter_table(db, "daily", view)

    live = metastore.read((db,)).objects[f"{db}.daily"]

    assert live == View(db, "daily", f"SELECT id, ds FROM {db}.orders",
                        columns=(Column("id", "bigint"), Column("ds", "string")), partitioned_on=("ds",))


@pytest.mark.spark
def test_parameters_set_through_the_client(spark: SparkSession, metastore: Metastore, fresh_db: MakeDb) -> None:
    from pyspark.errors import AnalysisException

    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.t (a INT) STORED AS PARQUET TBLPROPERTIES ('team'='sales', 'stale'='x')")
    spark.sql(f"CREATE VIEW {db}.v AS SELECT a FROM {db}.t")
    with pytest.raises(AnalysisException, match="owner"):  # why set_parameters uses the client
        spark.sql(f"ALTER TABLE {db}.t SET TBLPROPERTIES ('owner'='data-eng')")

    stamp = {"owner": "data-eng", VERSION_KEY: "abc123", MANAGED_KEYS_KEY: "team,owner"}
    metastore.set_parameters(f"{db}.t", stamp, ["stale", "never-there"])
    metastore.set_parameters(f"{db}.v", {"owner": "bi", VERSION_KEY: "def456", MANAGED_KEYS_KEY: "owner"}, [])
    spark.sql(f"ALTER TABLE {db}.t ADD COLUMNS (b STRING)")
    spark.sql(f"ALTER TABLE {db}.t SET TBLPROPERTIES ('team'='finance')")
    catalog = metastore.read((db,))

    table, view = catalog.objects[f"{db}.t"], catalog.objects[f"{db}.v"]
    assert table.properties == {"owner": "data-eng", "team": "finance"}
    assert (table.managed_keys, table.version) == (("owner", "team"), "abc123")
    assert table.columns == (Column("a", "int"), Column("b", "string"))
    assert view.properties == {"owner": "bi"}
    assert (view.managed_keys, view.version) == (("owner",), "def456")
    assert spark.sql(f"SELECT * FROM {db}.v").count() == 0

    metastore.set_parameters(f"{db}.t", {}, ["owner", VERSION_KEY, MANAGED_KEYS_KEY])
    table = metastore.read((db,)).objects[f"{db}.t"]
    assert (table.properties, table.managed_keys, table.version) == ({"team": "finance"}, (), None)


@pytest.mark.spark
def test_an_embedded_metastore_has_no_second_connection(metastore: Metastore) -> None:
    # Its Derby database would hold one writer up against the other: apply writes in turn there.
    with metastore.beside() as second:
        assert second is None


@pytest.mark.spark
def test_count_partitions(spark: SparkSession, metastore: Metastore, fresh_db: MakeDb) -> None:
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.p (a INT) PARTITIONED BY (ds STRING) STORED AS PARQUET")
    spark.sql(f"CREATE TABLE {db}.flat (a INT) STORED AS PARQUET")
    assert metastore.count_partitions(f"{db}.p") == 0
    spark.sql(f"INSERT INTO {db}.p PARTITION (ds) VALUES (1, '2024-01-01'), (2, '2024-01-02'), (3, '2024-01-03')")
    assert metastore.count_partitions(f"{db}.p") == 3
    assert metastore.count_partitions(f"{db}.flat") == 0


@pytest.mark.spark
def test_missing_databases_have_no_objects(spark: SparkSession, metastore: Metastore, fresh_db: MakeDb) -> None:
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.t (a INT) STORED AS PARQUET")
    catalog = metastore.read((f"{db}_missing", db))
    assert catalog.databases == (db,)
    assert list(catalog.objects) == [f"{db}.t"]
    assert metastore.read((f"{db}_missing",)).objects == {}
    assert db in metastore.databases() and f"{db}_missing" not in metastore.databases()
    assert list(metastore.databases()) == sorted(metastore.databases())


@pytest.mark.spark
def test_failures_are_one_line_schemaflow_errors(spark: SparkSession, metastore: Metastore, fresh_db: MakeDb) -> None:
    db = fresh_db()
    with pytest.raises(SchemaflowError) as missing:
        metastore.count_partitions(f"{db}.nope")
    assert str(missing.value) == \
        f"counting the partitions of {db}.nope: Specified database/table does not exist : {db}.nope"
    with pytest.raises(SchemaflowError) as unset:
        metastore.set_parameters(f"{db}.nope", {"a": "b"}, [])
    assert str(unset.value) == f"setting the parameters of {db}.nope: {db}.nope table not found"


@pytest.mark.spark
def test_spark_errors_leave_stderr_quiet(spark: SparkSession, capfd: pytest.CaptureFixture[str]) -> None:
    from pyspark.errors import AnalysisException

    with pytest.raises(AnalysisException):
        spark.sql("SELECT * FROM no_such_db.no_such_table")
    assert capfd.readouterr().err == ""


class CountingClient:
    """A stand-in for the metastore client that counts the calls made through it."""

    def __init__(self, msc: Any) -> None:
        self.msc = msc
        self.calls: dict[str, int] = {}

    def __getattr__(self, name: str) -> Callable[..., Any]:
        method = getattr(self.msc, name)

        def call(*args: Any) -> Any:
            self.calls[name] = self.calls.get(name, 0) + 1
            return method(*args)

        return call


@pytest.mark.spark
def test_bulk_read_takes_a_handful_of_metastore_calls(
    spark: SparkSession, metastore: Metastore, fresh_db: MakeDb,
) -> None:
    db = fresh_db()
    spark.sql(f"CREATE TABLE {db}.template (id BIGINT COMMENT 'Id', name STRING, amount DECIMAL(10,2)) "
              f"PARTITIONED BY (ds STRING) STORED AS ORC")
    template = metastore.msc.getTable(db, "template")
    template.getSd().setLocation(None)
    for number in range(199):  # cloned in the JVM: creating 200 tables with Spark SQL takes a minute
        table = template.deepCopy()
        table.setTableName(f"t{number:03}")
        metastore.msc.createTable(table)
    counting = CountingClient(metastore.msc)

    catalog = Metastore(spark, counting, metastore.endpoint).read((db,))

    assert len(catalog.objects) == 200
    assert counting.calls == {"getAllDatabases": 1, "getDatabase": 1, "getAllTables": 1, "getTableObjectsByName": 2}
    assert catalog.objects[f"{db}.t123"] == Table(
        db, "t123", (Column("id", "bigint", "Id"), Column("name", "string"), Column("amount", "decimal(10,2)")),
        partition_columns=(Column("ds", "string"),), format="orc",
    )
