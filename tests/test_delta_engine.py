"""Delta tables as delta-spark writes them on a Hive metastore, and schemaflow's Delta commit guard
(``catalog.hive.delta_commit.run_on_version``) with two writers: measured with Spark 3.5.9 and delta-spark 3.3.2
(``tests/delta_spark.py``) over the run's metastore server.

The facts schemaflow's Delta support rests on: the metastore holds a placeholder (``col array<string>``, provider
``delta``) that no ALTER changes, the log holds the schema; RENAME and DROP COLUMN need column mapping (protocol 2/5);
type widening moves the protocol to 3/7 and, on Spark 3.5, widens ``smallint`` to ``int`` but refuses ``int`` to
``bigint``. Then the guard: a statement lands on exactly the version read, else ``ConcurrentChange`` and nothing of
it is in the log; two appliers of one plan (one after the other, and at once), and an outside writer's INSERT or
ALTER between the read and the run. Every outcome is read back from the ``_delta_log`` files, through Spark and
through delta-rs (``deltalake``).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from deltalake import DeltaTable

from schemaflow.catalog.hive.thrift_reader import ThriftReader
from tests.delta_spark import DeltaSpark

pytestmark = [pytest.mark.remote, pytest.mark.delta_engine]

DB = "delta_facts"


@pytest.fixture(scope="module")
def engine(delta_spark: DeltaSpark) -> DeltaSpark:
    delta_spark.sql(f"CREATE DATABASE {DB}")
    return delta_spark


def _create(engine: DeltaSpark, name: str, columns: str, properties: str = "") -> str:
    """A new Delta table ``DB.name``, empty; its location (a local path)."""
    engine.sql(f"CREATE TABLE {DB}.{name} ({columns}) USING delta {properties}")
    [detail] = engine.sql(f"DESCRIBE DETAIL {DB}.{name}")
    location: str = detail["location"].removeprefix("file:")
    return location


def _commits(location: str) -> dict[int, list[dict[str, Any]]]:
    """The log's commits by version: each a list of its actions."""
    return {int(path.stem): [json.loads(line) for line in path.read_text().splitlines() if line]
            for path in sorted((Path(location) / "_delta_log").glob("*.json"))}


def _latest(location: str, kind: str) -> dict[str, Any]:
    """The last ``protocol`` or ``metaData`` action in the log."""
    found = [action[kind] for _, actions in sorted(_commits(location).items()) for action in actions if kind in action]
    return found[-1]


def _log_columns(location: str) -> list[tuple[str, str]]:
    """The columns (name, type) of the log's schema."""
    schema = json.loads(_latest(location, "metaData")["schemaString"])
    return [(field["name"], field["type"]) for field in schema["fields"]]


def _spark_columns(engine: DeltaSpark, name: str) -> list[tuple[str, str]]:
    columns = []
    for row in engine.sql(f"DESCRIBE TABLE {DB}.{name}"):
        if not row["col_name"] or row["col_name"].startswith("#"):
            break
        columns.append((row["col_name"], row["data_type"]))
    return columns


def _protocol(location: str) -> tuple[int, int, list[str], list[str]]:
    protocol = _latest(location, "protocol")
    return (protocol["minReaderVersion"], protocol["minWriterVersion"], sorted(protocol.get("readerFeatures", [])),
            sorted(protocol.get("writerFeatures", [])))


def _commit_info(location: str, version: int) -> dict[str, Any]:
    [info] = [action["commitInfo"] for action in _commits(location)[version] if "commitInfo" in action]
    return info


def test_the_metastore_holds_a_placeholder_and_the_log_the_schema(
        engine: DeltaSpark, metastore_server: str) -> None:
    location = _create(engine, "placeholder", "id bigint, name string")
    engine.sql(f"ALTER TABLE {DB}.placeholder ADD COLUMNS (extra int COMMENT 'added')")
    engine.sql(f"ALTER TABLE {DB}.placeholder SET TBLPROPERTIES ('team' = 'data')")

    [entry] = ThriftReader(metastore_server).named_table_data(DB, ["placeholder"])
    assert [(c["name"], c["type"]) for c in entry["sd"]["cols"]] == [("col", "array<string>")]
    parameters = entry["parameters"]
    assert parameters["spark.sql.sources.provider"] == "delta"
    # Spark's copy of the schema, where it writes one, holds no field: never the table's columns.
    schema = "".join(parameters[key] for key in sorted(parameters) if key.startswith("spark.sql.sources.schema.part."))
    assert json.loads(schema or '{"fields": []}')["fields"] == []
    assert "team" not in parameters and "extra" not in json.dumps(entry)

    expected = [("id", "long"), ("name", "string"), ("extra", "integer")]
    assert _log_columns(location) == expected
    assert _spark_columns(engine, "placeholder") == [("id", "bigint"), ("name", "string"), ("extra", "int")]
    assert [field.name for field in DeltaTable(location).schema().fields] == [name for name, _ in expected]
    assert _latest(location, "metaData")["configuration"] == {"team": "data"}


def test_an_external_table_s_entry_names_a_placeholder_folder_and_its_path_option_the_log_s(
        engine: DeltaSpark, metastore_server: str, tmp_path: Path) -> None:
    folder = tmp_path / "external"
    engine.sql(f"CREATE TABLE {DB}.external (id bigint) USING delta LOCATION '{folder}'")
    [entry] = ThriftReader(metastore_server).named_table_data(DB, ["external"])
    assert entry["sd"]["location"].endswith("/external-__PLACEHOLDER__")  # Spark's, for a table Hive cannot read
    assert entry["sd"]["serdeInfo"]["parameters"]["path"].removeprefix("file:") == str(folder)
    table = ThriftReader(metastore_server).read((DB,)).get(f"{DB}.external")
    assert table is not None and table.unreadable is None and [c.name for c in table.columns] == ["id"], table


def test_rename_and_drop_need_column_mapping_which_moves_the_protocol_to_2_5(engine: DeltaSpark) -> None:
    location = _create(engine, "mapping", "id bigint, name string, gone string")
    engine.sql(f"INSERT INTO {DB}.mapping VALUES (1, 'one', 'x'), (2, 'two', 'y')")
    assert _protocol(location)[:2] == (1, 2)
    for statement in ("RENAME COLUMN name TO label", "DROP COLUMN gone"):
        refused = engine.attempt(f"ALTER TABLE {DB}.mapping {statement}")
        assert "column mapping" in refused["error"].lower(), refused
    assert _log_columns(location) == [("id", "long"), ("name", "string"), ("gone", "string")]

    engine.sql(f"ALTER TABLE {DB}.mapping SET TBLPROPERTIES ('delta.columnMapping.mode' = 'name', "
               "'delta.minReaderVersion' = '2', 'delta.minWriterVersion' = '5')")
    assert _protocol(location) == (2, 5, [], [])
    engine.sql(f"ALTER TABLE {DB}.mapping RENAME COLUMN name TO label")
    engine.sql(f"ALTER TABLE {DB}.mapping DROP COLUMN gone")

    assert _log_columns(location) == [("id", "long"), ("label", "string")]
    assert engine.sql(f"SELECT id, label FROM {DB}.mapping ORDER BY id") == [
        {"id": 1, "label": "one"}, {"id": 2, "label": "two"}]
    delta_rs = DeltaTable(location)
    assert [field.name for field in delta_rs.schema().fields] == ["id", "label"]
    assert (delta_rs.protocol().min_reader_version, delta_rs.protocol().min_writer_version) == (2, 5)
    assert delta_rs.metadata().configuration["delta.columnMapping.mode"] == "name"


def test_type_widening_moves_the_protocol_to_3_7_and_spark_3_5_refuses_int_to_bigint(engine: DeltaSpark) -> None:
    location = _create(engine, "widening", "small smallint, whole int")
    engine.sql(f"INSERT INTO {DB}.widening VALUES (1, 10)")
    engine.sql(f"ALTER TABLE {DB}.widening SET TBLPROPERTIES ('delta.enableTypeWidening' = 'true')")
    # Writer 7 lists the features writer 2 implied (appendOnly, invariants) beside the new one.
    assert _protocol(location) == (3, 7, ["typeWidening-preview"], ["appendOnly", "invariants", "typeWidening-preview"])

    engine.sql(f"ALTER TABLE {DB}.widening ALTER COLUMN small TYPE int")
    refused = engine.attempt(f"ALTER TABLE {DB}.widening ALTER COLUMN whole TYPE bigint")
    assert "error" in refused and "bigint" in refused["error"].lower(), refused

    assert _log_columns(location) == [("small", "integer"), ("whole", "integer")]
    assert engine.sql(f"SELECT small, whole FROM {DB}.widening") == [{"small": 1, "whole": 10}]
    delta_rs = DeltaTable(location)
    assert (delta_rs.protocol().min_reader_version, delta_rs.protocol().min_writer_version) == (3, 7)
    assert sorted(delta_rs.protocol().writer_features) == ["appendOnly", "invariants", "typeWidening-preview"]
    assert delta_rs.protocol().reader_features == ["typeWidening-preview"]


def test_a_statement_lands_on_the_version_read(engine: DeltaSpark) -> None:
    location = _create(engine, "guarded", "id bigint")
    read = max(_commits(location))
    engine.sql("SET spark.databricks.delta.maxCommitAttempts = 5")
    answer = engine.run_on_version(location, read, f"ALTER TABLE {DB}.guarded ADD COLUMNS (added string)")
    assert answer == {"version": read + 1}
    # The session's own setting is given back.
    assert engine.sql("SET spark.databricks.delta.maxCommitAttempts") == [
        {"key": "spark.databricks.delta.maxCommitAttempts", "value": "5"}]
    engine.sql("RESET spark.databricks.delta.maxCommitAttempts")  # the session is the other modules' too
    info = _commit_info(location, read + 1)
    assert (info["operation"], info["readVersion"]) == ("ADD COLUMNS", read)
    assert max(_commits(location)) == read + 1 == DeltaTable(location).version()
    assert _spark_columns(engine, "guarded") == [("id", "bigint"), ("added", "string")]


def test_a_statement_delta_refuses_on_an_unchanged_log_fails_with_its_own_error(engine: DeltaSpark) -> None:
    location = _create(engine, "refused", "id bigint, name string")
    read = max(_commits(location))
    answer = engine.run_on_version(location, read, f"ALTER TABLE {DB}.refused DROP COLUMN name")
    assert "column mapping" in answer["error"].lower(), answer
    assert max(_commits(location)) == read


def test_two_appliers_of_one_plan_one_after_the_other(engine: DeltaSpark) -> None:
    location = _create(engine, "two_appliers", "id bigint")
    read = max(_commits(location))
    statement = f"ALTER TABLE {DB}.two_appliers ADD COLUMNS (added string)"
    assert engine.run_on_version(location, read, statement) == {"version": read + 1}
    assert engine.run_on_version(location, read, statement) == {
        "concurrent": {"expected": str(read), "found": str(read + 1)}}
    assert max(_commits(location)) == read + 1
    assert _log_columns(location) == [("id", "long"), ("added", "string")]


@pytest.mark.parametrize("round_", range(3))
def test_two_appliers_of_one_plan_at_once_one_lands_the_other_is_a_concurrent_change(
        engine: DeltaSpark, round_: int) -> None:
    name = f"at_once_{round_}"
    location = _create(engine, name, "id bigint")
    read = max(_commits(location))
    statement = f"ALTER TABLE {DB}.{name} ADD COLUMNS (added string)"
    answers = engine.together(*(DeltaSpark.applier(location, read, statement) for _ in range(2)))
    assert sorted(answers, key=lambda answer: "concurrent" in answer)[0] == {"version": read + 1}, answers
    [lost] = [answer for answer in answers if "concurrent" in answer]
    assert lost["concurrent"]["expected"] == str(read), answers
    assert lost["concurrent"]["found"].startswith(str(read + 1)), answers
    assert max(_commits(location)) == read + 1 == DeltaTable(location).version()
    assert _log_columns(location) == [("id", "long"), ("added", "string")]
    assert _commit_info(location, read + 1)["readVersion"] == read


@pytest.mark.parametrize(("name", "outside", "operation"), [
    ("outside_insert", "INSERT INTO {table} VALUES (7)", "WRITE"),
    ("outside_alter", "ALTER TABLE {table} SET TBLPROPERTIES ('team' = 'elsewhere')", "SET TBLPROPERTIES")])
def test_an_outside_commit_between_read_and_run_is_a_concurrent_change_and_nothing_is_applied(
        engine: DeltaSpark, name: str, outside: str, operation: str) -> None:
    location = _create(engine, name, "id bigint")
    read = max(_commits(location))
    engine.sql(outside.format(table=f"{DB}.{name}"))
    answer = engine.run_on_version(location, read, f"ALTER TABLE {DB}.{name} ADD COLUMNS (added string)")
    assert answer == {"concurrent": {"expected": str(read), "found": str(read + 1)}}
    assert max(_commits(location)) == read + 1 == DeltaTable(location).version()
    assert _commit_info(location, read + 1)["operation"] == operation
    assert _log_columns(location) == [("id", "long")]
    assert _spark_columns(engine, name) == [("id", "bigint")]
    assert engine.sql(f"SELECT id FROM {DB}.{name}") == ([{"id": 7}] if operation == "WRITE" else [])


def test_two_appliers_of_different_changes_at_once_one_lands_the_other_says_where_its_commit_is(
        engine: DeltaSpark) -> None:
    """The window ``run_on_version`` leaves open (its module says why): a commit between its read of the log and the
    statement's own. The applier that meets it is still a concurrent change, and says its commit is in the table."""
    location = _create(engine, "different", "id bigint")
    read = max(_commits(location))
    answers = engine.together(DeltaSpark.applier(location, read, f"ALTER TABLE {DB}.different ADD COLUMNS (a int)"),
                              DeltaSpark.applier(location, read, f"ALTER TABLE {DB}.different ADD COLUMNS (b int)"))
    [(won, column)] = [(answer, column) for answer, column in zip(answers, "ab", strict=True) if "version" in answer]
    [lost] = [answer["concurrent"] for answer in answers if "concurrent" in answer]
    assert won == {"version": read + 1} and lost["expected"] == str(read), answers
    assert _commit_info(location, read + 1)["readVersion"] == read
    if "is in the table" in lost["found"]:  # it met the window: its commit landed on top of the winner's
        assert max(_commits(location)) == read + 2 and _commit_info(location, read + 2)["readVersion"] == read + 1
        assert sorted(_log_columns(location)) == [("a", "integer"), ("b", "integer"), ("id", "long")]
    else:
        assert max(_commits(location)) == read + 1
        assert _log_columns(location) == [("id", "long"), (column, "integer")]
