"""Table storage: Hive formats, SerDes, delimiters and buckets, and Spark data-source tables.

How each is declared and refused (at path:line:col), the DDL that creates it, and what the plan
does with a change to it: in place, or blocked with the way out.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.errors import SpecError
from schemaflow.model import Bucketing, Column, Table
from schemaflow.plan.changes import AddColumns, SetColumnComments, SetStorage, Unsupported
from schemaflow.plan.diff import diff_table
from schemaflow.plan.rewrite import REWRITE_BLOCK, RewriteTable
from schemaflow.spec.declaration import read_object
from schemaflow.spec.yamlpos import load_yaml
from schemaflow.sql import ddl

COLUMNS = "columns:\n  - {name: id, type: bigint}\n  - {name: line, type: string}\n"


def read(tmp_path: Path, text: str) -> tuple[Table | None, list[str]]:
    path = tmp_path / "t.yaml"
    path.write_text("table: raw.t\n" + text)
    try:
        declaration = read_object(load_yaml(path, "t.yaml"))
    except SpecError as error:
        return None, [str(p) for p in error.problems]
    assert declaration.obj is None or isinstance(declaration.obj, Table)
    return declaration.obj, [str(p) for p in declaration.problems]


def test_a_delimited_text_table_keeps_every_delimiter_as_a_serde_property(tmp_path: Path) -> None:
    table, problems = read(tmp_path, "format: textfile\nrow_format:\n  fields_terminated_by: '|'\n"
                           "  null_defined_as: ''\n  lines_terminated_by: \"\\n\"\n" + COLUMNS)
    assert problems == []
    assert table is not None and table.serde is None
    assert table.serde_properties == {"field.delim": "|", "serialization.null.format": "", "line.delim": "\n"}


def test_a_data_source_table_is_never_confused_with_a_hive_one(tmp_path: Path) -> None:
    table, problems = read(tmp_path, "using: parquet\noptions: {compression: snappy}\n" + COLUMNS)
    assert problems == []
    assert table is not None and (table.format, table.data_source) == ("parquet", True)
    hive, _ = read(tmp_path, "format: parquet\n" + COLUMNS)
    assert hive is not None and not hive.data_source
    # Its files are rewritten through Spark into the other kind of table (plan.rewrite).
    assert [(type(c), c.reasons) for c in diff_table(table, hive) if isinstance(c, RewriteTable)] == [
        (RewriteTable, ("storage (format 'STORED AS parquet' -> 'USING parquet')",))]


def test_classes_of_a_named_format_are_that_format(tmp_path: Path) -> None:
    table, problems = read(tmp_path, "input_format: org.apache.hadoop.mapred.TextInputFormat\n"
                           "output_format: org.apache.hadoop.hive.ql.io.HiveIgnoreKeyTextOutputFormat\n"
                           "serde: org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe\n" + COLUMNS)
    assert problems == []
    assert table is not None and (table.format, table.serde, table.input_format) == ("textfile", None, None)


@pytest.mark.parametrize("text, problem", [
    ("using: csv\nformat: textfile\n",
     "t.yaml:3:1: 'format' is for a Hive-format table, and 'using: csv' makes a Spark data-source table: give its "
     "settings as 'options:', or remove 'using:'"),
    ("options: {header: 'true'}\n",
     "t.yaml:2:1: 'options' are a Spark data source's: add 'using:' (parquet, orc, json, csv, text), or declare "
     "SERDEPROPERTIES as 'serde_properties:'"),
    ("using: csv\noptions: {PATH: /x}\n",
     "t.yaml:3:11: option 'path' is the table's location: declare 'external: true' and 'location:' instead"),
    ("using: avro\n", "t.yaml:2:8: using must be one of: parquet, orc, json, csv, text (not 'avro')"),
    ("input_format: com.example.In\n",
     "t.yaml:2:1: name the format, or both its classes: 'format:', or 'input_format:' with 'output_format:'"),
    ("serde: OpenCSVSerde\n", "t.yaml:2:8: serde 'OpenCSVSerde' is not valid: write a Java class's full name, such "
     "as org.apache.hadoop.hive.serde2.OpenCSVSerde"),
    ("serde: org.apache.hadoop.hive.serde2.OpenCSVSerde\nrow_format: {fields_terminated_by: ','}\n",
     "t.yaml:3:14: row_format sets the delimiters of org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe, which "
     "this table does not use: give its SerDe's own settings as 'serde_properties:'"),
    ("format: orc\nrow_format: {fields_terminated_by: ','}\n",
     "t.yaml:3:14: row_format sets the delimiters of org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe, which "
     "this table does not use: give its SerDe's own settings as 'serde_properties:'"),
    ("format: textfile\nrow_format: {fields_terminated_by: '||'}\n",
     "t.yaml:3:14: a delimiter is one character, not '||' (write \"\\x01\" for Hive's default, ^A)"),
    ("format: textfile\nrow_format: {lines_terminated_by: '\\r'}\n",
     "t.yaml:3:14: Hive ends lines with a newline only: write \"\\n\" or remove it"),
    ("format: textfile\nrow_format: {fields_terminated_by: ','}\nserde_properties: {field.delim: ';'}\n",
     "t.yaml:3:14: 'fields_terminated_by' sets 'field.delim', which serde_properties sets too: keep one"),
    ("buckets: {clustered_by: [nope], count: 4}\n", "t.yaml:2:26: 'nope' is not a column of the table"),
    ("buckets: {clustered_by: [id], count: 100001}\n",
     "t.yaml:2:38: Spark makes at most 100000 buckets (spark.sql.sources.bucketing.maxBuckets): declare fewer"),
    ("buckets: {clustered_by: [id], count: 0}\n", "t.yaml:2:38: count must be at least 1"),
])
def test_storage_that_cannot_be_created_is_refused_where_it_is_written(tmp_path: Path, text: str,
                                                                       problem: str) -> None:
    _, problems = read(tmp_path, text + COLUMNS)
    assert problems == [problem]


def test_a_partition_column_cannot_be_a_bucket_column(tmp_path: Path) -> None:
    _, problems = read(tmp_path, "buckets: {clustered_by: [id], sorted_by: [ds], count: 4}\n" + COLUMNS
                       + "partitioned_by:\n  - {name: ds, type: string}\n")
    assert problems == ["t.yaml:2:43: 'ds' is a partition column: a table buckets the rows within each partition "
                        "by data columns"]


# --- DDL -----------------------------------------------------------------------------------------

ID, LINE, DS = Column("id", "bigint"), Column("line", "string", "The 'line'"), Column("ds", "string", "Day")


def test_a_data_source_table_lists_its_partition_columns_among_its_columns() -> None:
    table = Table("raw", "t", (ID, LINE), (DS,), comment="T", format="csv", data_source=True, external=True,
                  location="/data/t", serde_properties={"header": "true"}, bucketing=Bucketing(("id",), 4, ("line",)))
    assert ddl.create_table(table) == (
        "CREATE TABLE `raw`.`t` (\n  `id` bigint,\n  `line` string COMMENT 'The \\'line\\'',\n"
        "  `ds` string COMMENT 'Day'\n)\n"
        "USING csv\nCOMMENT 'T'\nOPTIONS ('header' = 'true')\nPARTITIONED BY (`ds`)\n"
        "CLUSTERED BY (`id`) SORTED BY (`line`) INTO 4 BUCKETS\nLOCATION '/data/t'\n"
        "TBLPROPERTIES ('schemaflow.version' = ${claim})")


def test_serde_properties_are_written_as_a_serde_clause_never_row_format_delimited() -> None:
    # Spark 4 drops NULL DEFINED AS from ROW FORMAT DELIMITED; SERDEPROPERTIES keep it.
    text = Table("raw", "t", (ID,), format="textfile", serde_properties={"field.delim": "|",
                                                                         "serialization.null.format": "NA"})
    assert ddl.create_table(text).splitlines()[3:5] == [
        "ROW FORMAT SERDE 'org.apache.hadoop.hive.serde2.lazy.LazySimpleSerDe' WITH SERDEPROPERTIES "
        "('field.delim' = '|', 'serialization.null.format' = 'NA')", "STORED AS TEXTFILE"]
    # Spark allows a SerDe clause with text, sequence and RC files only: other formats name their classes.
    orc = Table("raw", "t", (ID,), format="orc", serde_properties={"orc.x": "1"})
    assert ddl.create_table(orc).splitlines()[3:5] == [
        "ROW FORMAT SERDE 'org.apache.hadoop.hive.ql.io.orc.OrcSerde' WITH SERDEPROPERTIES ('orc.x' = '1')",
        "STORED AS INPUTFORMAT 'org.apache.hadoop.hive.ql.io.orc.OrcInputFormat' "
        "OUTPUTFORMAT 'org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat'"]


# --- the plan ------------------------------------------------------------------------------------

def test_settings_and_bucket_count_change_in_place_with_their_hazards() -> None:
    have = Table("raw", "t", (ID, LINE), (DS,), format="textfile", serde_properties={"field.delim": "|"},
                 bucketing=Bucketing(("id",), 4))
    want = Table("raw", "t", (ID, LINE), (DS,), format="textfile", serde_properties={"field.delim": ","},
                 bucketing=Bucketing(("id",), 8))
    [change] = diff_table(want, have)
    assert isinstance(change, SetStorage)
    step = change.to_step()
    assert step.summary == "change storage of raw.t: SERDEPROPERTIES field.delim: '|' -> ','; buckets 4 -> 8"
    assert step.notes == ("existing partitions keep their own storage settings (their files were written with "
                          "them); new partitions take the table's",)
    assert len(step.hazards) == 2 and "to rewrite its rows with the new ones" in step.hazards[0] and "8" in step.hazards[1]
    # Other bucket columns cannot come in place: the files are bucketed by the old ones, and are rewritten.
    moved = diff_table(Table("raw", "t", (ID, LINE), (DS,), format="textfile", serde_properties={"field.delim": "|"},
                             bucketing=Bucketing(("line",), 4)), have)
    assert [type(c) for c in moved] == [RewriteTable]
    assert moved[0].reasons == ("storage (bucketed by 'id' -> 'line')",)  # words, not Python's tuples
    sorted_ = replace(have, bucketing=Bucketing(("id",), 4, ("line",)))
    assert diff_table(sorted_, have)[0].reasons == ("storage (bucketed by 'id' -> 'id sorted by line')",)


def test_a_data_source_table_takes_appends_and_comments_and_refuses_the_rest() -> None:
    have = Table("raw", "t", (ID, LINE), (DS,), format="parquet", data_source=True)
    commented = Table("raw", "t", (ID, Column("line", "string", "New")), (DS,), format="parquet", data_source=True)
    appended = Table("raw", "t", (ID, LINE, Column("n", "int")), (DS,), format="parquet", data_source=True)
    [comments] = diff_table(commented, have)
    assert comments == SetColumnComments("raw.t", (Column("line", "string", "New"),), (LINE.comment,))
    assert diff_table(appended, have) == [AddColumns("raw.t", (Column("n", "int"),), partitioned=False)]
    assert comments.to_step().actions[0].statements == ("ALTER TABLE `raw`.`t` ALTER COLUMN `line` COMMENT 'New'",)
    assert comments.to_step().values == (f"comment of line: {LINE.comment!r} -> 'New'",)

    retyped = Table("raw", "t", (Column("id", "string"), LINE), (DS,), format="parquet", data_source=True)
    # What Spark refuses on such a table, the table takes by a rewrite of its rows (plan.rewrite).
    [refused] = diff_table(retyped, have)
    assert isinstance(refused, RewriteTable)
    assert refused.reasons == ("change type of id from bigint to string",)
    key_comment = Table("raw", "t", (ID, LINE), (Column("ds", "string", "Other"),), format="parquet", data_source=True)
    assert [c.reasons for c in diff_table(key_comment, have) if isinstance(c, RewriteTable)] == [
        ("change comment of partition column ds",)]
    text = Table("raw", "t", (LINE,), format="text", data_source=True)
    [no_add] = diff_table(Table("raw", "t", (LINE, ID), format="text", data_source=True), text)
    assert isinstance(no_add, RewriteTable) and no_add.reasons == ("add id",)
    # An external table's files are not schemaflow's to rewrite.
    outside = replace(have, external=True, location="file:/lake/t")
    [kept] = diff_table(replace(retyped, external=True, location="file:/lake/t"), outside)
    assert isinstance(kept, Unsupported) and kept.what == "change type of id from bigint to string"
    assert kept.way_out.startswith("an external table's files are not rewritten by schemaflow")


# --- databases ------------------------------------------------------------------------------------

def test_databases_declare_their_comment_location_and_properties(tmp_path: Path) -> None:
    from schemaflow.model import Catalog, Database
    from schemaflow.plan.changes import CreateDatabase, SetDatabaseProperties
    from schemaflow.plan.diff import diff
    from schemaflow.project import load_project

    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemaflow.yaml").write_text(
        "databases:\n  Retail: {comment: Orders, location: s3://lake/retail.db, properties: {owner_team: NO}}\n"
        "  analytics:\n")
    settings = load_project(tmp_path, env={}).settings
    assert settings.databases == ("retail", "analytics")
    declared = Database("retail", "Orders", "s3://lake/retail.db", {"owner_team": "NO"})  # as written, not false
    assert settings.database_details == {"retail": declared}

    desired = Catalog(("analytics", "retail"), database_details=settings.database_details)
    assert diff(desired, Catalog()) == [CreateDatabase("analytics"), CreateDatabase("retail", declared)]
    live = Catalog(("analytics", "retail"), database_details={
        "analytics": Database("analytics", "Derived", "file:/w/analytics.db", {"x": "1"}),
        "retail": Database("retail", "Orders", "s3://lake/retail.db/", {"owner_team": "sales", "other": "kept"})})
    [change] = diff(desired, live)
    assert change == SetDatabaseProperties("retail", {"owner_team": "sales"}, {"owner_team": "NO"})
    assert change.to_step().summary == "properties of database retail: owner_team: 'sales' -> 'NO'"
    moved = Catalog(("retail",), database_details={"retail": Database("retail", "Other", "s3://elsewhere")})
    assert [(c.key, c.what) for c in diff(moved, live) if isinstance(c, Unsupported)] == [
        ("retail", "changing the comment 'Orders' -> 'Other'"),
        ("retail", "changing the location 's3://lake/retail.db/' -> 's3://elsewhere'")]


@pytest.mark.parametrize("text, problem", [
    ("databases: {retail: {comment: 1}}\n", "schemaflow.yaml:1:31: comment must be a string, not a number"),
    ("databases: {retail: {colour: red}}\n",
     "schemaflow.yaml:1:22: unknown key 'colour' (expected one of: comment, location, properties)"),
    ("databases: {retail: {properties: {" + "k" * 181 + ": v}}}\n",
     "schemaflow.yaml:1:35: database property key is 181 characters; the metastore stores at most 180 "
     "(DATABASE_PARAMS.PARAM_KEY): shorten it"),
])
def test_database_attributes_are_checked_where_they_are_written(tmp_path: Path, text: str, problem: str) -> None:
    from schemaflow.project import load_project

    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemaflow.yaml").write_text(text)
    with pytest.raises(SpecError) as raised:
        load_project(tmp_path, env={})
    assert [str(p) for p in raised.value.problems] == [problem]


def test_a_metastore_without_the_type_rule_takes_any_type_change():
    from schemaflow.model import Catalog
    from schemaflow.plan.plan import PlanBuilder

    live = Table("raw", "t", (Column("a", "int"), LINE), format="orc")
    want = Table("raw", "t", (Column("a", "boolean"), LINE), format="orc")
    desired, current = Catalog(("raw",), {want.key: want}), Catalog(("raw",), {live.key: live})
    # The metastore refuses it in place: a rewrite makes it, when allowed.
    [refused] = PlanBuilder(desired, current).build().steps
    assert refused.kind == "rewrite_table" and refused.blocked == REWRITE_BLOCK
    assert "hive.metastore.disallow.incompatible.col.type.changes" in refused.summary
    [taken] = PlanBuilder(desired, current, type_rule=False).build().steps
    assert taken.kind == "alter_columns" and not taken.blocked


REGEX_SERDE = "serde: org.apache.hadoop.hive.serde2.RegexSerDe\nformat: textfile\n"


@pytest.mark.parametrize("regex, problem", [
    ("'(\\\\d+) .*'", "t.yaml:4:33: input.regex has 1 capturing group and the table 2 data columns: RegexSerDe reads "
                      "a row only when they match, so every read of the table would fail; give each column a group "
                      "(and make other groups non-capturing, (?:...))"),
    ("'(\\\\d+) (?:x)(\\\\w+) (\\\\S+)'", "t.yaml:4:33: input.regex has 3 capturing groups and the table 2 data columns"),
])
def test_a_regex_serde_needs_a_capturing_group_per_column(tmp_path: Path, regex: str, problem: str) -> None:
    _, problems = read(tmp_path, REGEX_SERDE + f"serde_properties: {{input.regex: {regex}}}\n" + COLUMNS)
    assert len(problems) == 1 and problems[0].startswith(problem)


def test_a_regex_with_a_group_per_column_is_a_table_whatever_its_other_groups(tmp_path: Path) -> None:
    regex = "'(?<id>\\\\d+) (?:[(]x\\\\))?(\\\\w+)(?=$)'"
    table, problems = read(tmp_path, REGEX_SERDE + f"serde_properties: {{input.regex: {regex}}}\n" + COLUMNS)
    assert problems == [] and table is not None and table.serde_properties["input.regex"].startswith("(?<id>")


def test_only_a_setting_that_changes_how_rows_read_warns_that_they_may_come_apart() -> None:
    from schemaflow.plan.changes import SetStorage

    def hazards(old: dict[str, str], new: dict[str, str], buckets: int | None = None) -> tuple[str, ...]:
        return SetStorage("shop.t", old, new, 4, buckets or 4, data_source=True, partitioned=False).to_step().hazards

    assert hazards({"mergeSchema": "false"}, {"mergeSchema": "true", "compression": "zstd"}) == ()
    [apart] = hazards({"sep": ","}, {"sep": ";"})
    assert "their rows may come apart or read NULL" in apart
    [pruned] = hazards({}, {}, buckets=8)
    assert pruned == ("existing files were bucketed into 4, and Spark reads them as 8: a filter on the bucket columns "
                      "prunes by the new count and returns fewer rows or none, and bucketed joins pair the wrong files "
                      "(declare 'rewrite: when_values_hide' on the table to rewrite its rows into the new buckets)")


AVRO_CLASSES = ("input_format: org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat\n"
                "output_format: org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat\n")


@pytest.mark.parametrize("storage, column, problem", [
    ("using: text\n", "{name: d, type: 'decimal(1,0)'}", "Spark's text data source holds one string column a row, "
                                                         "not decimal(1,0)"),
    ("using: csv\n", "{name: tags, type: 'array<string>'}", "Spark's csv data source holds no array"),
    ("using: csv\n", "{name: m, type: 'map<string,int>'}", "Spark's csv data source holds no map"),
    (AVRO_CLASSES, "{name: s, type: smallint}", "avro stores smallint as int"),  # avro by its classes
    ("format: textfile\nserde: org.apache.hadoop.hive.serde2.avro.AvroSerDe\n", "{name: s, type: smallint}",
     "avro stores smallint as int"),                                             # and by its SerDe
])
def test_a_type_the_tables_files_cannot_hold_is_refused_however_the_storage_is_written(tmp_path, storage, column,
                                                                                       problem):
    _, problems = read(tmp_path, storage + f"columns:\n  - {column}\n")
    assert len(problems) == 1 and problem in problems[0], problems


def test_what_csv_and_text_hold_is_accepted(tmp_path):
    table, problems = read(tmp_path, "using: csv\ncolumns: [{name: b, type: binary}, {name: d, type: 'decimal(1,0)'}]\n"
                                     "partitioned_by: [{name: ds, type: date}]\n")
    assert problems == [] and table is not None
    table, problems = read(tmp_path, "using: text\ncolumns: [{name: line, type: string}]\n"
                                     "partitioned_by: [{name: n, type: int}]\n")
    assert problems == [] and table is not None
