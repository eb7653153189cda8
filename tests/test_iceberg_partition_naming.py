"""The ids and names of an Iceberg table's partition fields, as Iceberg's own library gives them (no JVM).

pyiceberg's ``UpdateSpec`` (which follows Java's ``BaseUpdatePartitionSpec``) is the oracle of one replace, for
every transform on format versions 1 and 2; the rest pins Iceberg's rules by example: a field back in a later
spec takes its id and name back (version 2), a void field gives its name up to a field added (version 1), and a
name another engine gave that would make two fields one name is refused with nothing committed.
"""
from __future__ import annotations

import itertools
import json
from pathlib import Path
from typing import Any

import pytest
from pyiceberg.table import StaticTable

from schemaflow.catalog import iceberg_specs, iceberg_updates
from schemaflow.catalog.iceberg_specs import created_fields, next_fields
from schemaflow.errors import SchemaflowError
from schemaflow.model import Column, PartitionField, Table

COLUMNS = {"id": 1, "code": 2, "ts": 3}
TERMS = {"bucket(8, id)": PartitionField("bucket", "id", 8), "bucket(4, id)": PartitionField("bucket", "id", 4),
         "truncate(4, code)": PartitionField("truncate", "code", 4),
         "truncate(2, code)": PartitionField("truncate", "code", 2), "code": PartitionField("identity", "code"),
         "id": PartitionField("identity", "id"), **{f"{unit}(ts)": PartitionField(unit, "ts")
                                                    for unit in ("year", "month", "day", "hour")}}
# Each field replaced by another of its kind (or by another column, for identity).
REPLACES = [("bucket(8, id)", "bucket(4, id)"), ("truncate(4, code)", "truncate(2, code)"), ("code", "id"),
            ("year(ts)", "month(ts)"), ("month(ts)", "day(ts)"), ("day(ts)", "hour(ts)"), ("hour(ts)", "year(ts)")]


def _spec(spec_id: int, *fields: tuple[int, str, str, str]) -> dict[str, Any]:
    return {"spec-id": spec_id, "fields": [{"source-id": COLUMNS[column], "field-id": field_id, "transform": transform,
                                            "name": name} for field_id, column, transform, name in fields]}


def _names(fields: list[dict[str, Any]]) -> list[tuple[int, str, str]]:
    return [(f["field-id"], f["name"], f["transform"]) for f in fields]


def test_a_new_tables_fields_take_the_names_of_icebergs_builder() -> None:
    fields = created_fields(list(TERMS.values()), COLUMNS, itertools.count(1000))
    assert [f["name"] for f in fields] == ["id_bucket", "id_bucket", "code_trunc", "code_trunc", "code", "id",
                                           "ts_year", "ts_month", "ts_day", "ts_hour"]
    assert [f["field-id"] for f in fields] == list(range(1000, 1010))


@pytest.mark.parametrize("version", [1, 2])
@pytest.mark.parametrize(("old", "new"), REPLACES)
def test_a_replaced_field_is_numbered_and_named_as_pyiceberg_names_it(tmp_path: Path, version: int, old: str,
                                                                      new: str) -> None:
    before = TERMS[old]
    table = Table("db", "t", columns=(Column("id", "bigint"), Column("code", "string"), Column("ts", "timestamp")),
                  format="iceberg", data_source=True, partition_spec=(before,),
                  properties={"format-version": str(version)})
    created = iceberg_updates.first_metadata(table, str(tmp_path), {"format-version": str(version)})
    metadata = json.loads(created.model_dump_json())
    assert metadata["format-version"] == version
    path = tmp_path / "v1.metadata.json"
    path.write_text(json.dumps(metadata))
    update = StaticTable.from_metadata(str(path)).update_spec()
    spec = metadata["partition-specs"][0]
    update.remove_field(spec["fields"][0]["name"]).add_field(TERMS[new].column, iceberg_specs.transform_text(TERMS[new]))
    expected = [(f.field_id, f.name, str(f.transform)) for f in update._apply().fields]

    fields = next_fields("db.t", version, metadata["partition-specs"], spec, (TERMS[new],), COLUMNS, 1000)
    assert _names(fields) == expected


def test_a_field_back_in_a_later_spec_takes_its_id_and_name_back() -> None:
    specs = [_spec(0, (1000, "id", "bucket[8]", "id_bucket"), (1001, "ts", "day", "ts_day")),
             _spec(1, (1002, "id", "bucket[4]", "id_bucket_4"), (1003, "ts", "hour", "ts_hour"))]
    fields = next_fields("db.t", 2, specs, specs[1], (TERMS["bucket(8, id)"], TERMS["hour(ts)"], TERMS["code"]),
                         COLUMNS, 1003)
    assert _names(fields) == [(1000, "id_bucket", "bucket[8]"), (1003, "ts_hour", "hour"), (1004, "code", "identity")]


def test_format_version_1_keeps_a_removed_field_void_under_its_name_until_a_new_field_takes_it() -> None:
    specs = [_spec(0, (1000, "code", "identity", "code"), (1001, "ts", "day", "ts_day"))]
    fields = next_fields("db.t", 1, specs, specs[0], (TERMS["day(ts)"],), COLUMNS, 1001)
    assert _names(fields) == [(1000, "code", "void"), (1001, "ts_day", "day")]
    specs.append({"spec-id": 1, "fields": fields})
    fields = next_fields("db.t", 1, specs, specs[1], (TERMS["code"], TERMS["day(ts)"]), COLUMNS, 1001)
    # Version 1 takes no field back: identity(code) is new, and the void field gives its name up.
    assert _names(fields) == [(1000, "code_1000", "void"), (1001, "ts_day", "day"), (1002, "code", "identity")]


def test_a_name_another_engine_gave_that_a_new_field_would_share_is_refused() -> None:
    # Format version 1: a field the spec keeps holds the name Iceberg gives the field added (Iceberg refuses too).
    specs = [_spec(0, (1000, "ts", "day", "id_bucket_4"))]
    with pytest.raises(SchemaflowError, match=(
            r"db.t: Iceberg names the partition field it adds 'id_bucket_4', the name of its field 1000 \(day\): "
            r"rename that partition field with Iceberg's API .*; nothing was committed")):
        next_fields("db.t", 1, specs, specs[0], (TERMS["day(ts)"], TERMS["bucket(4, id)"]), COLUMNS, 1000)
    # Format version 2: an earlier spec's field has it, and its column is still there.
    specs = [_spec(0, (1000, "ts", "day", "id_bucket_4")), _spec(1)]
    with pytest.raises(SchemaflowError, match=(
            r"db.t: the partition field bucket\[4\] of source 1 would be named 'id_bucket_4', as the partition field "
            r"1000 is, and Iceberg's metadata tables would fail on the name: rename")):
        next_fields("db.t", 2, specs, specs[1], (TERMS["bucket(4, id)"],), COLUMNS, 1000)
    # Its column dropped, the metadata tables no longer read that field: the name is free.
    fields = next_fields("db.t", 2, specs, specs[1], (TERMS["bucket(4, id)"],), {"id": 1, "code": 2}, 1000)
    assert _names(fields) == [(1001, "id_bucket_4", "bucket[4]")]
