"""The ``avro`` Hive format's own behaviour: its type rule (``TypeRule.AVRO``, ``sql.types.check_avro``). Avro's files
keep fewer types than the metastore declares (Hive's AvroSerDe writes smallint as int, varchar as string, struct field
names in lower case, map keys as strings): what they keep is accepted as declared, and anything else is refused with
the type to declare, for the table's data columns alone. How the same rule reaches a table stored with Avro's classes
or its SerDe rather than ``format: avro`` is in ``test_storage``; what every kind shares, in ``test_table_kinds``."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemaflow.sql.types import InvalidType, canonical_type, check_avro
from tests.projects import reported, write_project


@pytest.mark.parametrize("declared", [
    "int", "bigint", "float", "double", "boolean", "string", "binary", "date", "timestamp", "decimal(38,10)",
    "array<bigint>", "map<string,array<int>>", "struct<user_id:bigint,tinyint:int>",
])
def test_avro_keeps_these_as_declared(declared: str) -> None:
    check_avro(canonical_type(declared))


@pytest.mark.parametrize("declared, message", [
    ("tinyint", "avro stores tinyint as int: declare 'int'"),
    ("array<smallint>", "avro stores smallint as int: declare 'array<int>'"),
    ("struct<a:tinyint,b:smallint>", "avro stores smallint and tinyint as int: declare 'struct<a:int,b:int>'"),
    ("varchar(10)", "avro stores varchar as string: declare 'string'"),
    ("map<string,char(2)>", "avro stores char as string: declare 'map<string,string>'"),
    ("struct<userId:bigint>", "avro stores struct field names in lower case: declare 'struct<userid:bigint>'"),
    ("struct<Id:tinyint,tags:array<varchar(5)>>",
     "avro stores tinyint as int, varchar as string, struct field names in lower case: "
     "declare 'struct<id:int,tags:array<string>>'"),
    ("map<int,string>",
     "avro map keys are strings: in 'map<int,string>' declare the keys as string, or use another format"),
    ("map<varchar(3),int>", "avro map keys are strings: in 'map<varchar(3),int>'"),
    ("array<map<bigint,int>>", "avro map keys are strings: in 'array<map<bigint,int>>'"),
])
def test_avro_refuses_what_it_would_change(declared: str, message: str) -> None:
    with pytest.raises(InvalidType) as refused:
        check_avro(canonical_type(declared))
    assert str(refused.value).startswith(message)


def test_avro_rules_apply_to_data_columns_of_avro_tables_only(tmp_path: Path) -> None:
    text = ("table: bad.t\nformat: FORMAT\ncolumns: [{name: a, type: tinyint}]\n"
            "partitioned_by: [{name: p, type: smallint}]\n")
    write_project(tmp_path, {"schemas/bad/t.yaml": text.replace("FORMAT", "parquet")})
    assert reported(tmp_path) == []
    # A partition's values are kept in the metastore, not in the avro files: smallint stays smallint.
    write_project(tmp_path, {"schemas/bad/t.yaml": text.replace("FORMAT", "avro")})
    assert reported(tmp_path) == [
        "schemas/bad/t.yaml:3:27: avro stores tinyint as int: declare 'int'"]
