"""Iceberg tables declared (issue 29, item 1): read into the model, compared and fingerprinted with the
table, formatted, and planned through the command line with no JVM (refused where pyiceberg is missing)."""
from __future__ import annotations

import re
from pathlib import Path

import pytest

from schemaflow.catalog.snapshot import write_snapshot
from schemaflow.cli import main
from schemaflow.model import (Catalog, PartitionField, SortTerm, Table, fingerprint, from_data, state_digest,
                              to_data)
from schemaflow.spec import load_catalog
from schemaflow.spec.fmt import format_text
from schemaflow.sql.iceberg import InvalidTerm, parse_field, parse_sort_term
from tests.gitrepos import commit, example_repo

CLICKS = """\
table: retail.clicks
comment: One row per click
format: iceberg
location: /lake/retail/clicks
columns:
  - {name: ts, type: timestamp}
  - {name: id, type: bigint, comment: Click id}
  - {name: code, type: string}
  - {name: region, type: string}
partitioned_by:
  - day(ts)
  - bucket(16, id)
  - truncate(4, code)
  - region
sorted_by:
  - ts DESC NULLS LAST
  - id
properties: {format-version: 2, write.format.default: parquet}
"""
REFUSED = ("schemas/retail/clicks.yaml:1:1: retail.clicks is an Iceberg table, and creating or changing one needs "
           "pyiceberg, which is not installed here: install schemaflow with its extra iceberg (pip install '<where "
           "schemaflow comes from>[iceberg]'); nothing was planned or "
           "applied")
CREATED = ("create Iceberg table retail.clicks (4 columns, partitioned by (day(ts), bucket(16, id), truncate(4, code), "
           "region), sorted by (ts DESC NULLS LAST, id ASC NULLS FIRST))")


def _clicks(tmp_path: Path, text: str = CLICKS) -> Table:
    (tmp_path / "schemas" / "retail").mkdir(parents=True, exist_ok=True)
    (tmp_path / "schemas" / "retail" / "clicks.yaml").write_text(text)
    table = load_catalog(tmp_path).get("retail.clicks")
    assert isinstance(table, Table)
    return table


def test_an_iceberg_table_file_reads_into_the_model(tmp_path: Path):
    table = _clicks(tmp_path)
    assert (table.format, table.data_source, table.partition_columns, table.external) == ("iceberg", True, (), False)
    assert table.location == "/lake/retail/clicks"
    assert table.partition_spec == (PartitionField("day", "ts"), PartitionField("bucket", "id", 16),
                                    PartitionField("truncate", "code", 4), PartitionField("identity", "region"))
    assert table.sort_order == (SortTerm(PartitionField("identity", "ts"), descending=True, nulls_first=False),
                                SortTerm(PartitionField("identity", "id")))
    assert [str(f) for f in table.partition_spec] == ["day(ts)", "bucket(16, id)", "truncate(4, code)", "region"]
    assert [str(t) for t in table.sort_order] == ["ts DESC NULLS LAST", "id ASC NULLS FIRST"]
    assert table.properties == {"format-version": "2", "write.format.default": "parquet"}


def test_the_partition_spec_reads_on_one_line_as_spark_writes_it(tmp_path: Path):
    """YAML's flow list splits ``bucket(16, id)`` at its comma: the halves are one term again."""
    block = _clicks(tmp_path / "block")
    one_line = CLICKS.replace("partitioned_by:\n  - day(ts)\n  - bucket(16, id)\n  - truncate(4, code)\n  - region\n",
                              "partitioned_by: [day(ts), bucket(16, id), truncate(4, code), region]\n")
    assert one_line != CLICKS
    flow = _clicks(tmp_path / "flow", one_line.replace("sorted_by:\n  - ts DESC NULLS LAST\n  - id\n",
                                                       "sorted_by: [truncate(2, code) DESC, id]\n"))
    assert flow.partition_spec == block.partition_spec
    assert [str(t) for t in flow.sort_order] == ["truncate(2, code) DESC NULLS LAST", "id ASC NULLS FIRST"]


def test_spark_spellings_and_iceberg_defaults_are_the_same_table(tmp_path: Path):
    same = CLICKS.replace("  - day(ts)", "  - DAYS( ts )").replace("  - id\n", "  - ID asc nulls first\n")
    written = _clicks(tmp_path / "a")
    respelt = _clicks(tmp_path / "b", same)
    assert written == respelt and fingerprint(written) == fingerprint(respelt)
    for change in (CLICKS.replace("bucket(16, id)", "bucket(8, id)"), CLICKS.replace("ts DESC NULLS LAST", "ts DESC NULLS FIRST"),
                   CLICKS.replace("  - region\n", ""), CLICKS.replace("  - id\n", "  - id DESC\n")):
        other = _clicks(tmp_path / "c", change)
        assert other != written and fingerprint(other) != fingerprint(written)
        assert state_digest(other) != state_digest(written)


def test_the_layout_round_trips_through_plain_data_and_leaves_hive_tables_as_they_were(tmp_path: Path):
    table = _clicks(tmp_path)
    data = to_data(table)
    assert data["partition_spec"][1] == {"transform": "bucket", "column": "id", "argument": 16}
    assert data["sort_order"][0] == {"transform": "identity", "column": "ts", "argument": None, "descending": True,
                                     "nulls_first": False}
    assert from_data(data) == table
    hive = Table("retail", "t", ())
    assert "partition_spec" not in to_data(hive) and "sort_order" not in to_data(hive)
    assert "layout" not in state_digest(hive)


@pytest.mark.parametrize(("text", "field"), [
    ("region", PartitionField("identity", "region")), ("identity(Region)", PartitionField("identity", "region")),
    ("years(ts)", PartitionField("year", "ts")), ("date_hour(ts)", PartitionField("hour", "ts")),
    ("date(ts)", PartitionField("day", "ts")), (" bucket ( 16 , id ) ", PartitionField("bucket", "id", 16)),
])
def test_partition_fields_as_spark_writes_them(text: str, field: PartitionField):
    assert parse_field(text) == field


@pytest.mark.parametrize(("text", "refusal"), [
    ("", "does not start with a column or a transform"), ("bucket(16, id", "no closing parenthesis"),
    ("void(id)", "unknown transform 'void'"), ("bucket(16, id, x)", "takes a count and a column"),
    ("day()", "day takes one column"), ("a b", "is not a partition field"), ("ts\x00", "holds '\\x00'"),
    ("bucket(99999999999999999999, id)", "a whole number from 1 to 2147483647"),
])
def test_partition_fields_iceberg_would_not_take(text: str, refusal: str):
    with pytest.raises(InvalidTerm, match=re.escape(refusal)):
        parse_field(text)


def test_sort_terms_as_write_ordered_by_writes_them():
    assert parse_sort_term("bucket(4, id) DESC") == SortTerm(PartitionField("bucket", "id", 4), True, False)
    assert parse_sort_term("ts NULLS LAST") == SortTerm(PartitionField("identity", "ts"), False, False)
    for bad in ("ts DESC ASC", "ts NULLS", "ts LAST NULLS", "ts DESC NULLS FIRST x", "ts, id"):
        with pytest.raises(InvalidTerm, match="is not a sort term"):
            parse_sort_term(bad)


def test_fmt_keeps_an_iceberg_file_in_its_canonical_layout():
    assert format_text("schemas/retail/clicks.yaml", CLICKS) == CLICKS
    shuffled = ("properties: {write.format.default: parquet, format-version: 2}\nsorted_by: [ts DESC NULLS LAST, id]\n"
                + CLICKS.replace("properties: {format-version: 2, write.format.default: parquet}\n", "")
                .replace("sorted_by:\n  - ts DESC NULLS LAST\n  - id\n", ""))
    # Keys in their order; a list of terms keeps the style it was written in (on one line, as Spark writes it).
    assert format_text("schemas/retail/clicks.yaml", shuffled) == CLICKS.replace(
        "sorted_by:\n  - ts DESC NULLS LAST\n  - id\n", "sorted_by: [ts DESC NULLS LAST, id]\n")
    one_line = CLICKS.replace("partitioned_by:\n  - day(ts)\n  - bucket(16, id)\n  - truncate(4, code)\n  - region\n",
                              "partitioned_by: [day(ts), bucket(16, id), truncate(4, code), region]\n")
    assert format_text("schemas/retail/clicks.yaml", one_line) == one_line


def test_validate_accepts_it_and_plan_plans_it_before_any_metastore(example: Path, tmp_path: Path,
                                                                     capsys: pytest.CaptureFixture[str]):
    repo = example_repo(tmp_path / "repo")
    root = Path(str(repo.working_tree_dir))
    _clicks(root)
    assert main(["--project", str(root), "validate"]) == 0
    assert capsys.readouterr() == ("valid: 7 tables and 4 views in 2 databases (analytics, retail)\n", "")
    assert main(["--project", str(root), "plan", "--base", "main"]) == 2
    planned = capsys.readouterr().out
    assert CREATED in planned and "-- iceberg create retail.clicks: columns (ts timestamp, id bigint COMMENT 'Click id', " \
        "code string, region string); partitioned by (day(ts), bucket(16, id), truncate(4, code), region); sorted by " \
        "(ts DESC NULLS LAST, id ASC NULLS FIRST); comment 'One row per click'; at '/lake/retail/clicks'" in planned
    empty = tmp_path / "empty.json"
    write_snapshot(Catalog(), empty)
    assert main(["--project", str(root), "plan", "--against", str(empty)]) == 2
    assert CREATED in capsys.readouterr().out


def test_plan_refuses_it_where_pyiceberg_is_missing(example: Path, tmp_path: Path, capsys: pytest.CaptureFixture[str],
                                                     monkeypatch: pytest.MonkeyPatch):
    repo = example_repo(tmp_path / "repo")
    root = Path(str(repo.working_tree_dir))
    _clicks(root)
    monkeypatch.setattr("schemaflow.workflow.find_spec", lambda name: None if name == "pyiceberg" else object())
    assert main(["--project", str(root), "validate"]) == 0  # validate needs no pyiceberg
    capsys.readouterr()
    assert main(["--project", str(root), "plan", "--base", "main"]) == 1
    assert REFUSED in capsys.readouterr().err.splitlines()
    # Declared at the base and removed since: planning would drop it, which is planning it too.
    commit(repo, "an Iceberg table")
    (root / "schemas" / "retail" / "clicks.yaml").unlink()
    assert main(["--project", str(root), "plan", "--base", "main"]) == 1
    assert REFUSED in capsys.readouterr().err.splitlines()
