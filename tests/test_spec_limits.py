"""What ``validate`` accepts, ``apply`` can write and read back: the limits, at their boundaries.

Types within Spark's and Hive's bounds (what a kind's files keep, as Avro's, is in its module:
``test_kind_avro``); names and texts that fit the metastore's columns (package.jdo of the bundled
Hive 2.3.10 metastore); identifiers that end where they seem to; no property that Hive or Spark own;
YAML 1.1's readings of plain scalars undone where a file holds text; blank comments as none. The
refusals, one past each limit, are also cases of ``tests/cases/bad_input`` (``b_*``); what is
accepted at the limit is tested here.
"""
from __future__ import annotations

import json
import re
from importlib.resources import files
from pathlib import Path

import pytest

from schemaflow.catalog.hive.backend import OPTIONS as HIVE_OPTIONS
from schemaflow.catalog.hive.thrift_data import user_properties
from schemaflow.sql.table_parameters import RESERVED_KEYS, RESERVED_PREFIXES
from schemaflow.errors import SpecError
from schemaflow.model import Catalog, Table, View, ViewPartitions
from schemaflow.spec import load_catalog
from schemaflow.spec.yamlpos import load_yaml
from schemaflow.sql.types import InvalidType, canonical_type, is_primitive


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf-8")


def load(tmp_path: Path, **files: str) -> Catalog:
    """The catalog of a project made of ``files`` (``t="..."`` is ``schemas/bad/t.yaml``)."""
    for name, text in files.items():
        write(tmp_path / "schemas" / "bad" / f"{name}.yaml", text)
    return load_catalog(tmp_path)


def problems(tmp_path: Path, **files: str) -> list[str]:
    """The ``path:line:col: message`` lines loading such a project reports (none: it loads)."""
    try:
        load(tmp_path, **files)
    except SpecError as error:
        return [str(problem) for problem in error.problems]
    return []


def table(tmp_path: Path, text: str) -> Table:
    obj = load(tmp_path, t=text).objects["bad.t"]
    assert isinstance(obj, Table)
    return obj


def view(tmp_path: Path, text: str) -> View:
    obj = load(tmp_path, t=BASE, v=text).objects["bad.v"]
    assert isinstance(obj, View)
    return obj


BASE = "table: bad.t\ncolumns: [{name: a, type: int}]\npartitioned_by: [{name: ds, type: string}]\n"


# --- 1. Spark's type limits -------------------------------------------------------------------

@pytest.mark.parametrize("declared, canonical", [
    ("decimal(38,38)", "decimal(38,38)"),
    ("decimal(1,0)", "decimal(1,0)"),
    ("decimal(1,1)", "decimal(1,1)"),
    ("decimal(38)", "decimal(38,0)"),
    ("decimal", "decimal(10,0)"),
    ("decimal(012, 02)", "decimal(12,2)"),          # as the metastore gives it back, so a plan converges
    ("varchar(65535)", "varchar(65535)"),
    ("varchar(1)", "varchar(1)"),
    ("char(255)", "char(255)"),
    ("char(1)", "char(1)"),
    ("struct<`a`:int, B_2:string>", "struct<a:int,B_2:string>"),
    ("array<struct<x:decimal(38,0),y:map<string,char(255)>>>",
     "array<struct<x:decimal(38,0),y:map<string,char(255)>>>"),
])
def test_types_at_the_limits_are_accepted(declared: str, canonical: str) -> None:
    assert canonical_type(declared) == canonical


@pytest.mark.parametrize("declared, reason", [
    ("decimal(39,2)", "decimal precision 39 in 'decimal(39,2)' is out of range: Spark and Hive allow 1 to 38"),
    ("decimal(0)", "decimal precision 0 in 'decimal(0)' is out of range"),
    ("decimal(5,6)", "decimal scale 6 in 'decimal(5,6)' is greater than the precision 5"),
    ("decimal(10,2.5)", "'2.5' in 'decimal(10,2.5)' is not a whole number: write one, as in decimal(12,2)"),
    ("decimal(1e1)", "'1e1' in 'decimal(1e1)' is not a whole number"),
    ("decimal(10,2,1)", "decimal takes a precision and a scale"),
    ("varchar(0)", "varchar length 0 in 'varchar(0)' is out of range: Hive allows varchar(1) to varchar(65535)"),
    ("varchar(65536)", "varchar length 65536 in 'varchar(65536)' is out of range"),
    ("char(0)", "char length 0 in 'char(0)' is out of range: Hive allows char(1) to char(255)"),
    ("char(256)", "char length 256 in 'char(256)' is out of range"),
    ("varchar(1_0)", "'1_0' in 'varchar(1_0)' is not a whole number: write one, as in varchar(10)"),
    ("struct<`a b`:int>", "struct field name 'a b' in 'struct<`a b`:int>' is not valid"),
    ("struct<`a:b`:int>", "struct field name 'a:b'"),
    ("struct<`a,b`:int>", "struct field name 'a,b'"),
    ("struct<`a<b>`:int>", "struct field name 'a<b>'"),
    ("struct<`a``b`:int>", "struct field name 'a`b'"),
    ("struct<`a\nb`:int>", "struct field name 'a\\nb'"),
    ("struct<``:int>", "struct field name ''"),
    ("struct<`1a`:int>", "struct field name '1a'"),
    ("struct<a:int,A:string>", "struct field 'A' is declared twice in 'struct<a:int,A:string>' (field names are "
                               "case-insensitive): rename one"),
    ("map<string,array<decimal(39,0)>>", "decimal precision 39 in 'map<string,array<decimal(39,0)>>'"),
    ("struct<a:struct<b:varchar(0)>>", "varchar length 0 in 'struct<a:struct<b:varchar(0)>>'"),
    ("array<struct<x:int,X:int>>", "struct field 'X' is declared twice"),
])
def test_types_past_the_limits_are_refused(declared: str, reason: str) -> None:
    with pytest.raises(InvalidType) as refused:
        canonical_type(declared)
    assert reason in str(refused.value)


def test_only_primitive_types_hold_one_value() -> None:
    assert [is_primitive(canonical_type(t)) for t in ("int", "decimal(12,2)", "varchar(3)", "array<int>",
                                                      "map<string,int>", "struct<a:int>")] == [True] * 3 + [False] * 3


def test_partition_columns_must_be_primitive(tmp_path: Path) -> None:
    text = ("table: bad.t\ncolumns: [{name: a, type: int}]\npartitioned_by:\n"
            "  - {name: p1, type: \"array<string>\"}\n  - {name: p2, type: \"map<string,int>\"}\n"
            "  - {name: p3, type: \"struct<y:int>\"}\n  - {name: p4, type: \"decimal(38,38)\"}\n")
    assert problems(tmp_path, t=text) == [
        f"schemas/bad/t.yaml:{line}:22: a partition column holds one value, not {type_}: each partition is named "
        "by its values; declare a primitive type, such as string, or make it a data column"
        for line, type_ in ((4, "array<string>"), (5, "map<string,int>"), (6, "struct<y:int>"))
    ]


# --- 2. The metastore's column lengths --------------------------------------------------------

def test_names_and_texts_at_the_metastore_limits_are_accepted(tmp_path: Path) -> None:
    db = "d" * 128
    write(tmp_path / "schemas" / db / "t.yaml",
          f"table: {db}.t{'x' * 255}\ncomment: {'c' * 32672}\n"
          f"columns:\n  - {{name: c{'x' * 766}, type: int, comment: {'x' * 256}}}\n"
          f"partitioned_by:\n  - {{name: p{'x' * 127}, type: string, comment: {'x' * 4000}}}\n"
          f"properties:\n  k{'x' * 255}: {'v' * 32672}\n")
    with pytest.raises(SpecError) as refused:
        load_catalog(tmp_path)
    # Nothing but where the file lies: no 261-character file name can be made on most file systems.
    assert [p.message for p in refused.value.problems] == [
        f"{db}.t{'x' * 255} must be declared in schemas/{db}/t{'x' * 255}.yaml: rename or move this file"]


def test_a_location_of_4000_characters_fits(tmp_path: Path) -> None:
    location = "s3a://bucket/" + "x" * (4000 - len("s3a://bucket/"))
    text = f"table: bad.t\nexternal: true\nlocation: {location}\ncolumns: [{{name: a, type: int}}]\n"
    assert table(tmp_path, text).location == location
    assert problems(tmp_path, t=text.replace(location, location + "x")) == [
        "schemas/bad/t.yaml:3:11: location is 4001 characters; the metastore stores at most 4000 (SDS.LOCATION): "
        "shorten it"]


def test_limits_count_as_java_does_emoji_twice(tmp_path: Path) -> None:
    smile = "\U0001F600"
    assert problems(tmp_path, t=f"table: bad.t\ncolumns:\n  - {{name: a, type: int, comment: {smile * 128}}}\n") == []
    longer = f"table: bad.t\ncolumns:\n  - {{name: a, type: int, comment: {'x' + smile * 128}}}\n"
    assert problems(tmp_path, t=longer) == [
        "schemas/bad/t.yaml:3:35: column comment is 257 characters (characters beyond U+FFFF, such as emoji, count "
        "twice); the metastore stores at most 256 (COLUMNS_V2.COMMENT): shorten it"]


def test_a_struct_type_of_32672_characters_fits(tmp_path: Path) -> None:
    fields = ",".join(f"f{i:05d}:int" for i in range(2722))
    fields += ",last" + "x" * (32672 - len(f"struct<{fields},last:int>")) + ":int"
    assert len(f"struct<{fields}>") == 32672
    obj = table(tmp_path, f"table: bad.t\ncolumns:\n  - name: wide\n    type: \"struct<{fields}>\"\n")
    assert obj.columns[0].type == f"struct<{fields}>"


def test_view_texts_at_the_metastore_limits_are_accepted(tmp_path: Path) -> None:
    text = (f"view: bad.v\ncomment: {'c' * 32672}\ncolumns: [{{name: a, comment: {'x' * 256}}}, {{name: ds}}]\n"
            f"partitioned_on: [ds]\npartitions: [{{ds: {'v' * 255}}}]\nsql: SELECT a, ds FROM t\n")
    assert problems(tmp_path, t=BASE, v=text) == []
    assert problems(tmp_path, t=BASE, v=text.replace("v" * 255, "v" * 256)) == [
        "schemas/bad/v.yaml:5:19: partition value is 256 characters; the metastore stores at most 255 "
        "(PARTITION_KEY_VALS.PART_KEY_VAL): shorten it"]


def test_view_sql_of_32700_characters_fits(tmp_path: Path) -> None:
    sql = "SELECT '" + "x" * (32700 - len("SELECT '' AS one")) + "' AS one"
    assert len(sql) == 32700
    # What is stored, and counted, is the SQL without the spaces and semicolons that end it.
    assert view(tmp_path, f"view: bad.v\nsql: {sql};  \n").sql == sql


def test_a_partition_name_counts_the_characters_hive_escapes(tmp_path: Path) -> None:
    views = "view: bad.v\npartitioned_on: [ds]\nsql: SELECT a, ds FROM t\npartitions: [{ds: \"VALUE\"}]\n"
    # ds= and 254 slashes written as %2F: 3 + 762 = 765 characters; 255 of them: 768.
    assert problems(tmp_path, t=BASE, v=views.replace("VALUE", "/" * 254 + "x")) == []
    assert problems(tmp_path, t=BASE, v=views.replace("VALUE", "/" * 255)) == [
        "schemas/bad/v.yaml:4:14: partition name is 768 characters; the metastore stores at most 767 "
        "(PARTITIONS.PART_NAME): shorten its values (Hive writes each '/', ':', '=', '%' and the like in them as %XX)"]


# --- 3. Identifiers end where they seem to ----------------------------------------------------

def test_every_schema_pattern_ends_at_the_end_of_the_text() -> None:
    """``$`` would also match before a final newline in Python (jsonschema uses ``re.search``)."""
    found: list[str] = []
    for resource in (files("schemaflow.spec") / "schemas").iterdir():
        if resource.name.endswith(".json"):
            text = resource.read_text(encoding="utf-8")
            found += re.findall(r'"pattern": ("(?:[^"\\]|\\.)*")', text)
            assert '$"' not in text, resource.name
    # The Hive metastore's URI pattern is its backend's settings schema's (catalog.hive.backend), checked at validate.
    # A backend's name has one pattern, where the catalog is named and where the catalog moved from is, and a release
    # one, spark.release's and a reader's version: eight in the files, six of them distinct, and the Hive URI's.
    patterns = sorted({json.loads(p) for p in found} | {HIVE_OPTIONS["properties"]["uri"]["pattern"]})
    assert len(found) == 8 and len(patterns) == 7
    for pattern in patterns:
        assert pattern.startswith("^") and pattern.endswith("(?![\\s\\S])")
    release, glob, java_class, identifier, object_name, backend, uri = sorted(patterns)
    for pattern, good in ((identifier, "a_1"), (object_name, "db.t"), (uri, "thrift://h:9083"), (glob, "db.tmp_*"),
                          (java_class, "org.apache.hadoop.hive.serde2.OpenCSVSerde"), (release, "3.5"),
                          (backend, "hive")):
        assert re.search(pattern, good) and not re.search(pattern, good + "\n")


@pytest.mark.parametrize("text, message", [
    ('table: "bad.t\\n"\ncolumns: [{name: a, type: int}]\n', "1:8: table 'bad.t\\n' is not valid"),
    ("table: |\n  bad.t\ncolumns: [{name: a, type: int}]\n", "1:8: table 'bad.t\\n' is not valid"),
    ('table: bad.t\ncolumns: [{name: "a\\n", type: int}]\n', "2:18: name 'a\\n' is not valid"),
])
def test_a_name_with_a_trailing_newline_is_refused(tmp_path: Path, text: str, message: str) -> None:
    assert problems(tmp_path, t=text)[0].startswith(f"schemas/bad/t.yaml:{message}")


# --- 4. Property keys that Hive or Spark own --------------------------------------------------

@pytest.mark.parametrize("key, advice", [
    ("spark.sql.sources.provider", "declare 'format:' and 'columns:' instead"),
    ("SPARK.SQL.sources.schema", "declare 'format:' and 'columns:' instead"),
    ("comment", "declare it with 'comment:' instead"),
    ("COMMENT", "declare it with 'comment:' instead"),
    ("EXTERNAL", "declare 'external: true' instead"),
    ("External", "declare 'external: true' instead"),
    ("transient_lastDdlTime", "the metastore stamps the time of every change there: remove it"),
    *((key, "(ANALYZE TABLE computes them): remove it") for key in (
        "numFiles", "numRows", "rawDataSize", "totalSize", "COLUMN_STATS_ACCURATE", "numPartitions",
        "numFilesErasureCoded")),
    ("last_modified_by", "under 'last_modified_': remove it"),
    ("last_modified_time", "under 'last_modified_': remove it"),
    ("view.schemaMode", "under 'view.': remove it"),
    ("bucketing_version", "remove it"),
    ("schemaflow.anything", "schemaflow writes the 'schemaflow.' properties itself"),
])
def test_reserved_keys_are_refused_with_what_to_do(tmp_path: Path, key: str, advice: str) -> None:
    text = f"table: bad.t\ncolumns: [{{name: a, type: int}}]\nproperties:\n  owner: me\n  {key}: x\n"
    [problem] = problems(tmp_path, t=text)
    assert problem.startswith(f"schemas/bad/t.yaml:5:3: property '{key}' is reserved: ")
    assert problem.endswith(advice)


def test_keys_near_the_reserved_ones_are_the_users(tmp_path: Path) -> None:
    keys = ["owner", "comments", "external_id", "spark.sqlx", "spark.sql", "views", "viewer", "numRowsExpected",
            "last_modified", "my.comment"]
    text = "table: bad.t\ncolumns: [{name: a, type: int}]\nproperties:\n" + "".join(f"  {k}: x\n" for k in keys)
    assert table(tmp_path, text).properties == dict.fromkeys(sorted(keys), "x")


def test_whatever_the_live_reader_leaves_out_cannot_be_declared(tmp_path: Path) -> None:
    """A key ``user_properties`` hides from the live state would be planned again on every run."""
    hidden = sorted(RESERVED_KEYS) + [prefix + "x" for prefix in RESERVED_PREFIXES]
    assert user_properties(dict.fromkeys(hidden, "x")) == {}
    text = "table: bad.t\ncolumns: [{name: a, type: int}]\nproperties:\n" + "".join(f"  {k}: x\n" for k in hidden)
    assert len([p for p in problems(tmp_path, t=text) if "is reserved" in p]) == len(hidden)


@pytest.mark.parametrize("key", ["a,b", " ", ""])
def test_a_property_key_is_one_entry_of_the_managed_list(tmp_path: Path, key: str) -> None:
    text = f'table: bad.t\ncolumns: [{{name: a, type: int}}]\nproperties:\n  "{key}": x\n'
    assert problems(tmp_path, t=text) == [
        f"schemas/bad/t.yaml:4:3: property key {key!r} is not valid: schemaflow lists the keys it manages, "
        "separated by commas, so a key must not be blank or hold a comma; rename it"]


# --- 5. Text as written -----------------------------------------------------------------------

YAML_1_1 = {"NO": "NO", "yes": "yes", "on": "on", "Off": "Off", "1.10": "1.10", "030": "030", "1_000": "1_000",
            "0x1F": "0x1F", "1e3": "1e3", ".inf": ".inf", "-.Inf": "-.Inf", ".nan": ".nan", "2024-01-01": "2024-01-01",
            "2024-01-01 10:00:00": "2024-01-01 10:00:00", "true": "true", "12:30": "12:30", "+1": "+1", "0b11": "0b11"}


def test_property_values_are_stored_as_written(tmp_path: Path) -> None:
    text = "table: bad.t\ncolumns: [{name: a, type: int}]\nproperties:\n" + "".join(
        f"  k{i}: {written}\n" for i, written in enumerate(YAML_1_1))
    text += "  quoted: 'NO'\n  folded: a\n    b\n"
    properties = table(tmp_path, text).properties
    assert [properties[f"k{i}"] for i in range(len(YAML_1_1))] == list(YAML_1_1.values())
    assert properties["quoted"] == "NO" and properties["folded"] == "a b"


def test_comments_names_and_partition_values_are_kept_as_written(tmp_path: Path) -> None:
    obj = table(tmp_path, "table: bad.t\ncomment: yes\ncolumns:\n  - {name: on, type: int, comment: 1.10}\n"
                          "  - {name: No, type: string, comment: 2024-01-01}\n")
    assert (obj.comment, [(c.name, c.comment) for c in obj.columns]) == ("yes", [("on", "1.10"), ("no", "2024-01-01")])
    listed = view(tmp_path, "view: bad.v\ncomment: 030\ncolumns: [{name: a, comment: off}, {name: ds}]\n"
                            "partitioned_on: [ds]\npartitions: [{ds: 2024-01-01}, {ds: 030}]\n"
                            "sql: SELECT a, ds FROM t\n")
    assert (listed.comment, listed.columns[0].comment) == ("030", "off")
    assert listed.partitions == ViewPartitions(values=(("030",), ("2024-01-01",)))


def test_complete_when_values_are_kept_as_written(tmp_path: Path) -> None:
    hourly = ("table: bad.t\ncolumns: [{name: a, type: int}]\n"
              "partitioned_by: [{name: ds, type: string}, {name: hr, type: string}]\n")
    catalog = load(tmp_path, t=hourly, v="view: bad.v\npartitioned_on: [ds]\nsql: SELECT a, ds FROM t\n"
                                        "partitions: {derive_from: bad.t, complete_when: {hr: [00, 01, 23]}}\n")
    expected = ViewPartitions(derive_from="bad.t", complete_when={"hr": ("00", "01", "23")})
    derived = catalog.objects["bad.v"]
    assert isinstance(derived, View) and derived.partitions == expected


@pytest.mark.parametrize("text, where", [("  owner: ~\n", "4:10"), ("  owner: null\n", "4:10"), ("  owner:\n", "4:9")])
def test_a_property_without_a_value_is_refused(tmp_path: Path, text: str, where: str) -> None:
    assert problems(tmp_path, t="table: bad.t\ncolumns: [{name: a, type: int}]\nproperties:\n" + text) == [
        f"schemas/bad/t.yaml:{where}: property 'owner' has no value: write a string, a number or a boolean "
        "(true or false)"]


@pytest.mark.parametrize("name", ["1_000", "0x1F", "1e3", "2024"])
def test_a_column_name_yaml_reads_as_a_number_is_refused_as_written(tmp_path: Path, name: str) -> None:
    assert problems(tmp_path, t=f"table: bad.t\ncolumns: [{{name: {name}, type: int}}]\n") == [
        f"schemas/bad/t.yaml:2:18: name '{name}' is not valid: a Hive name has letters, digits and underscores and "
        "does not start with a digit"]


def test_the_document_keeps_each_plain_scalars_text(tmp_path: Path) -> None:
    write(tmp_path / "f.yaml", "a: NO\nb: 'NO'\nc: [1.10, \"030\"]\nd: ~\ne: {f: 2024-01-01}\n")
    doc = load_yaml(tmp_path / "f.yaml", "f.yaml")
    assert doc.data["a"] is False and doc.written("a") == "NO"
    assert doc.written("b") is None
    assert (doc.written("c", 0), doc.written("c", 1)) == ("1.10", None)
    assert doc.written("d") == "~" and doc.data["d"] is None
    assert doc.written("e", "f") == "2024-01-01" and doc.written("e") is None


# --- 6. A blank comment is no comment ---------------------------------------------------------

@pytest.mark.parametrize("blank", ['""', "' '", '"\\t\\n"'])
def test_a_blank_comment_is_none(tmp_path: Path, blank: str) -> None:
    obj = table(tmp_path, f"table: bad.t\ncomment: {blank}\ncolumns: [{{name: a, type: int, comment: {blank}}}]\n"
                          f"partitioned_by: [{{name: ds, type: string, comment: {blank}}}]\n")
    assert (obj.comment, obj.columns[0].comment, obj.partition_columns[0].comment) == (None, None, None)
    listed = view(tmp_path, f"view: bad.v\ncomment: {blank}\ncolumns: [{{name: a, comment: {blank}}}, {{name: ds}}]\n"
                            "sql: SELECT a, ds FROM t\n")
    assert (listed.comment, listed.columns[0].comment) == (None, None)


def test_a_comment_with_words_keeps_its_spaces(tmp_path: Path) -> None:
    assert table(tmp_path, "table: bad.t\ncomment: ' x '\ncolumns: [{name: a, type: int}]\n").comment == " x "
