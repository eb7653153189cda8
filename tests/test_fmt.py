"""``schemaflow fmt``: each kind of file rewritten into its canonical layout, comments and scalars kept.

Every case formats a text and compares the result with the exact text expected; the example
project, the starter and every YAML file of the test cases are checked to format into themselves
on a second run (and the example project and starter to be canonical already).
"""
from __future__ import annotations

from typing import Any

import os
import re
import shutil
from pathlib import Path

import pytest
import yaml

from schemaflow.errors import SpecError
from schemaflow.model import Column, Table, View
from schemaflow import workers
from schemaflow.spec import fmt
from schemaflow.spec.export import schema_text
from schemaflow.spec.fmt import Formatted, format_project, format_text, unified_diff, write_formatted
from schemaflow.spec.yamlpos import load_yaml
from schemaflow.starter import write_starter

ROOT = Path(__file__).resolve().parent.parent
CASES = ROOT / "tests" / "cases"
TABLE = "schemas/retail/orders.yaml"


def test_keys_follow_the_schema_and_take_their_comments_along():
    text = (
        "# Orders, as the shop writes them.\n"
        "\n"
        "# What the table is for\n"
        "comment: One row per order line  # shown in the metastore\n"
        "columns:   # in table order\n"
        "  - {name: order_id, type: bigint}\n"
        "# owner and retention\n"
        "properties: {owner: sales-eng}\n"
        "table: retail.orders\n"
        "format: parquet\n")
    assert format_text(TABLE, text) == (
        "# Orders, as the shop writes them.\n"
        "\n"
        "table: retail.orders\n"
        "# What the table is for\n"
        "comment: One row per order line  # shown in the metastore\n"
        "format: parquet\n"
        "columns:   # in table order\n"
        "  - {name: order_id, type: bigint}\n"
        "# owner and retention\n"
        "properties: {owner: sales-eng}\n")


def test_targets_appended_at_the_end_of_the_settings_as_the_docs_show_are_where_fmt_puts_them():
    text = ("spark: {master: \"local[2]\"}\ndatabases: [retail]\ninvalidation: lenient\nafter_apply: [echo hi]\n"
            "exclude: [retail.tmp_*]\n")
    appended = text + "target: dev\ntargets:\n  dev:\n    database_names: {retail: dev_retail}\n"
    assert format_text("schemaflow.yaml", appended) == appended


def test_keys_the_schema_does_not_know_follow_in_their_written_order():
    text = "zeta: 1\ntable: retail.orders\nalpha: 2\ncolumns: []\n"
    assert format_text(TABLE, text) == "table: retail.orders\ncolumns: []\nzeta: 1\nalpha: 2\n"


def test_columns_are_written_one_flow_mapping_a_line():
    text = (
        "table: retail.orders\n"
        "columns:\n"
        "- name: order_id\n"
        "  type: bigint\n"
        "  comment: Order identifier\n"
        "- comment: Line amount\n"
        "  type: \"decimal(12,2)\"\n"
        "  name: amount\n"
        "partitioned_by: [{type: string, name: ds}]\n")
    assert format_text(TABLE, text) == (
        "table: retail.orders\n"
        "columns:\n"
        "  - {name: order_id, type: bigint, comment: Order identifier}\n"
        "  - {name: amount, type: \"decimal(12,2)\", comment: Line amount}\n"
        "partitioned_by:\n"
        "  - {name: ds, type: string}\n")


def test_the_columns_of_a_source_and_of_a_view_are_written_so_too():
    source = "columns:\n  - name: id\n    type: bigint\nsource: raw.events\ncomment: Landed by the ingest job\n"
    assert format_text("schemas/raw/events.yaml", source) == (
        "source: raw.events\ncomment: Landed by the ingest job\ncolumns:\n  - {name: id, type: bigint}\n")
    view = "view: retail.v\nsql: SELECT id FROM t\ncolumns:\n  - comment: Order id\n    name: id\n"
    assert format_text("schemas/retail/v.yaml", view) == (
        "view: retail.v\ncolumns:\n  - {name: id, comment: Order id}\nsql: SELECT id FROM t\n")


def test_a_column_longer_than_a_line_stays_in_block_style():
    fits = "x" * (fmt.LINE_WIDTH - len("  - {name: a, type: int, comment: }"))
    text = (f"table: retail.orders\ncolumns:\n"
            f"  - {{name: a, type: int, comment: {fits}}}\n"
            f"  - {{name: b, type: int, comment: {fits}x}}\n")
    formatted = format_text(TABLE, text)
    assert formatted == (f"table: retail.orders\ncolumns:\n"
                         f"  - {{name: a, type: int, comment: {fits}}}\n"
                         f"  - name: b\n    type: int\n    comment: {fits}x\n")
    assert max(len(line) for line in formatted.splitlines()) == fmt.LINE_WIDTH  # the first column's line


def test_a_column_stays_in_block_style_to_keep_its_comments_and_plain_scalars():
    text = (
        "table: retail.orders\n"
        "columns:\n"
        "  - name: id  # never null\n"
        "    type: bigint\n"
        "  - name: amount\n"
        "    type: decimal(12,2)\n"  # plain: a flow mapping would read "decimal(12" and "2)"
        "  # - {name: discount, type: int}\n"
        "partitioned_by:\n"
        "  - {name: ds, type: string}  # load date\n")
    assert format_text(TABLE, text) == text


def test_a_flow_mapping_that_holds_a_comment_is_written_in_block_style_to_keep_it():
    text = ("table: retail.orders\n"
            "\n"
            "columns: []\n"
            "properties: {\n"
            "  zone: eu,\n"
            "  owner: ops,  # the team\n"
            "}\n")
    assert format_text(TABLE, text) == ("table: retail.orders\n"
                                        "\n"
                                        "columns: []\n"
                                        "properties:\n"
                                        "  owner: ops  # the team\n"
                                        "  zone: eu\n")


def test_free_form_mappings_are_sorted_and_on_one_line_when_they_fit():
    long = "v" * fmt.LINE_WIDTH
    text = (
        "table: retail.orders\n"
        "columns: []\n"
        "using: csv\n"
        "options:\n  sep: '|'\n  header: 'true'\n"
        f"properties: {{zone: eu, owner: sales-eng, notes: {long}}}\n")
    assert format_text(TABLE, text) == (
        "table: retail.orders\n"
        "using: csv\n"
        "options: {header: 'true', sep: '|'}\n"
        "columns: []\n"
        f"properties:\n  notes: {long}\n  owner: sales-eng\n  zone: eu\n")


def test_scalars_are_written_as_they_were():
    text = (
        "table: retail.orders\n"
        "external: True\n"
        "comment: \"caf\\u00e9 \\\"menu\\\"\"\n"
        "location: ~\n"
        "columns:\n"
        "  - {name: amount, type: \"decimal(12,2)\", comment: '1.10'}\n"
        "  - {name: n, type: int, comment: 0x1F}\n"
        "properties: {version: 1.10, since: 2024-01-01, 'quoted key': \"x\"}\n")
    assert format_text(TABLE, text) == (
        "table: retail.orders\n"
        "comment: \"caf\\u00e9 \\\"menu\\\"\"\n"
        "external: True\n"
        "location: ~\n"
        "columns:\n"
        "  - {name: amount, type: \"decimal(12,2)\", comment: '1.10'}\n"
        "  - {name: n, type: int, comment: 0x1F}\n"
        "properties: {'quoted key': \"x\", since: 2024-01-01, version: 1.10}\n")


def test_a_literal_sql_block_is_kept_as_written():
    sql = ("sql: |  # the query\n"
           "  SELECT customer_id, SUM(amount) AS revenue  \n"
           "  FROM retail.orders\n"
           "\n"
           "    -- indented more, after a blank line\n"
           "  GROUP BY customer_id\n")
    text = "view: retail.daily_revenue\n" + sql + "comment: Revenue per customer\n"
    assert format_text("schemas/retail/daily_revenue.yaml", text) == (
        "view: retail.daily_revenue\ncomment: Revenue per customer\n" + sql)


def test_the_layout_is_normalised():
    text = ("\ufefftable: retail.orders\r\n"
            "row_format:\r\n"
            "    escaped_by: \"\\\\\"\r\n"
            "    fields_terminated_by: ','\r\n"
            "format: textfile   \r\n"
            "columns:\r\n"
            "-   {name: a, type: int}\r\n"
            "\r\n\r\n")
    assert format_text(TABLE, text) == (
        "table: retail.orders\n"
        "format: textfile\n"
        "row_format:\n"
        "  fields_terminated_by: ','\n"
        "  escaped_by: \"\\\\\"\n"
        "columns:\n"
        "  - {name: a, type: int}\n")


def test_a_comment_block_under_a_list_stays_with_the_list():
    text = (
        "table: retail.orders\n"
        "buckets:\n"
        "  count: 8\n"
        "  clustered_by:\n"
        "    - customer_id\n"
        "    # - order_id, once backfilled\n"
        "  # sorted_by: [amount]\n"
        "\n"
        "# the columns\n"
        "columns: []\n")
    assert format_text(TABLE, text) == (
        "table: retail.orders\n"
        "\n"
        "# the columns\n"
        "columns: []\n"
        "buckets:\n"
        "  clustered_by:\n"
        "    - customer_id\n"
        "    # - order_id, once backfilled\n"
        "  count: 8\n"
        "  # sorted_by: [amount]\n")


def test_a_migration_is_ordered_as_its_schema():
    text = (
        "# Rename, then drop.\n"
        "changes:\n"
        "  - rename_column: {to: signed_up, table: retail.customers, from: signup_date}\n"
        "  - drop_column:\n"
        "      column: legacy_id  # unused since 2023\n"
        "      table: retail.customers\n"
        "description: Rename signup_date and drop legacy_id\n")
    assert format_text("migrations/0002_rename.yaml", text) == (
        "# Rename, then drop.\n"
        "description: Rename signup_date and drop legacy_id\n"
        "changes:\n"
        "  - rename_column: {table: retail.customers, from: signup_date, to: signed_up}\n"
        "  - drop_column:\n"
        "      table: retail.customers\n"
        "      column: legacy_id  # unused since 2023\n")


def test_the_settings_are_ordered_as_their_schema():
    text = (
        "databases:\n"
        "  retail: {properties: {team: sales, owner: ops}, comment: Shop}\n"
        "  analytics:\n"
        "targets:\n"
        "  prod:\n"
        "    database_names: {retail: prod_retail}\n"
        "    metastore: {uri: thrift://metastore:9083}\n"
        "spark:\n"
        "  conf:\n"
        "    spark.sql.shuffle.partitions: \"4\"\n"
        "    spark.executor.memory: 2g\n"
        "  master: local[2]\n"
        "metastore:\n"
        "  uri: thrift://localhost:9083\n")
    assert format_text("schemaflow.yaml", text) == (
        "metastore:\n"
        "  uri: thrift://localhost:9083\n"
        "spark:\n"
        "  master: local[2]\n"
        "  conf: {spark.executor.memory: 2g, spark.sql.shuffle.partitions: \"4\"}\n"
        "databases:\n"
        "  retail: {comment: Shop, properties: {owner: ops, team: sales}}\n"
        "  analytics:\n"
        "targets:\n"
        "  prod:\n"
        "    metastore: {uri: thrift://metastore:9083}\n"
        "    database_names: {retail: prod_retail}\n")


def test_an_alias_moved_before_its_anchor_keeps_the_data_and_the_comments():
    text = ("table: retail.orders\n"
            "partitioned_by: &day\n"
            "  - {name: ds, type: string}  # load date\n"
            "columns: *day\n")
    assert format_text(TABLE, text) == ("table: retail.orders\n"
                                        "columns: &day\n"
                                        "  - {name: ds, type: string}  # load date\n"
                                        "partitioned_by: *day\n")


@pytest.mark.parametrize("path, text", [
    ("schemas/retail/orders.yaml", "comment: neither a table nor a view\n"),
    ("schemas/retail/orders.yaml", "table: retail.orders\nview: retail.orders\n"),
    ("schemas/retail/orders.yaml", "- table: retail.orders\n"),
    ("migrations/sub/0001_x.yaml", "changes:  [] \n"),
    ("schemaflow.yaml", "# all defaults\n"),
])
def test_a_file_whose_kind_cannot_be_told_is_left_as_it_is(path, text):
    assert format_text(path, text) == text


@pytest.mark.parametrize("text, expected", [
    ("table: [retail.orders\n", "schemas/retail/orders.yaml:2:1: invalid YAML: expected ',' or ']', but got "
                                "'<stream end>' (while parsing a flow sequence started on line 1)"),
    ("table: a\ntable: b\n", "schemas/retail/orders.yaml:2:1: duplicate key 'table' (first set on line 1)"),
    ("table: a\nbase: &b {x: 1}\nproperties:\n  <<: *b\n",
     "schemas/retail/orders.yaml:4:3: cannot format a merge key (<<): write out the keys it merges"),
])
def test_what_cannot_be_formatted_is_a_located_error(text, expected):
    with pytest.raises(SpecError) as caught:
        format_text(TABLE, text)
    assert str(caught.value) == expected


@pytest.mark.parametrize("broken, message", [
    (lambda text: text.replace("bigint", "int"), "change its data"),
    (lambda text: text.replace("# ", "#"), "change its comments"),
])
def test_a_result_that_differs_from_the_file_is_refused(monkeypatch, tmp_path, broken, message):
    weave = fmt._weave
    monkeypatch.setattr(fmt, "_weave", lambda *args: (broken(weave(*args)[0]), set()))
    (tmp_path / "schemas" / "retail").mkdir(parents=True)
    text = "columns: [{name: id, type: bigint}]  # ids\ntable: retail.orders\n"
    (tmp_path / TABLE).write_text(text)
    formatted, problems = format_project(tmp_path)
    assert formatted == []
    assert [str(problem) for problem in problems] == [
        f"{TABLE}:1:1: formatting would {message} (a bug in schemaflow fmt): the file is left as it is"]
    assert write_formatted(tmp_path, formatted) == [] and (tmp_path / TABLE).read_text() == text


def test_a_project_is_formatted_file_by_file_and_only_changed_files_are_written(tmp_path):
    canonical = "table: retail.orders\ncolumns:\n  - {name: id, type: bigint}\n"
    files = {
        "schemaflow.yaml": "databases: [retail]\nspark: {master: local}\n",
        TABLE: canonical,
        "schemas/retail/customers.yml": "columns: []\ntable: retail.customers\n",
        "schemas/retail/broken.yaml": "table: retail.broken\ncolumns: [\n",
        "schemas/retail/.hidden.yaml": "columns: []\ntable: retail.hidden\n",
        "schemas/retail/notes.txt": "not yaml: [\n",
        "migrations/0001_first.yaml": "changes: [{drop_column: {column: a, table: retail.orders}}]\ndescription: x\n",
        "migrations/schemaflow.sum": "total 0\n",
    }
    for path, text in files.items():
        (tmp_path / path).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / path).write_text(text)
    os.utime(tmp_path / TABLE, ns=(0, 0))
    formatted, problems = format_project(tmp_path)
    assert [(f.path, f.changed) for f in formatted] == [
        ("migrations/0001_first.yaml", True), ("schemaflow.yaml", True),
        ("schemas/retail/customers.yml", True), (TABLE, False)]
    assert [str(problem) for problem in problems] == [
        "schemas/retail/broken.yaml:3:1: invalid YAML: expected the node content, but found '<stream end>' "
        "(while parsing a flow node started on line 3)"]
    assert write_formatted(tmp_path, formatted) == [
        "migrations/0001_first.yaml", "schemaflow.yaml", "schemas/retail/customers.yml"]
    assert (tmp_path / "schemaflow.yaml").read_text() == "spark: {master: local}\ndatabases: [retail]\n"
    assert (tmp_path / "schemas/retail/customers.yml").read_text() == "table: retail.customers\ncolumns: []\n"
    assert (tmp_path / TABLE).stat().st_mtime_ns == 0  # not rewritten
    for path in ("schemas/retail/broken.yaml", "schemas/retail/.hidden.yaml", "migrations/schemaflow.sum"):
        assert (tmp_path / path).read_text() == files[path]
    assert [f.changed for f in format_project(tmp_path)[0]] == [False] * 4


def test_a_file_that_is_not_utf8_is_a_problem(tmp_path):
    (tmp_path / "schemas" / "retail").mkdir(parents=True)
    (tmp_path / TABLE).write_bytes(b"table: retail.orders\ncomment: caf\xe9\n")
    formatted, problems = format_project(tmp_path)
    assert formatted == []
    assert [str(problem) for problem in problems] == [
        f"{TABLE}:1:1: cannot read the file: it is not UTF-8 text (byte 33)"]


def test_the_diff_shows_what_would_change():
    formatted = Formatted(TABLE, "columns: []\ntable: retail.orders", "table: retail.orders\ncolumns: []\n")
    assert unified_diff(formatted) == (
        f"--- a/{TABLE}\n"
        f"+++ b/{TABLE}\n"
        "@@ -1,2 +1,2 @@\n"
        "+table: retail.orders\n"
        " columns: []\n"
        "-table: retail.orders\n"
        "\\ No newline at end of file\n")
    assert unified_diff(Formatted(TABLE, "a: 1\n", "a: 1\n")) == ""


def test_the_example_project_is_canonical():
    formatted, problems = format_project(ROOT)
    assert problems == []
    assert [f.path for f in formatted] == (
        ["migrations/0001_customers_signed_up.yaml", "schemaflow.yaml"]
        + sorted(path.relative_to(ROOT).as_posix() for path in (ROOT / "schemas").rglob("*.yaml")))
    assert [f.path for f in formatted if f.changed] == []


def test_the_starter_project_is_canonical(tmp_path):
    write_starter(tmp_path, "shop")  # its templates filled in
    formatted, problems = format_project(tmp_path)
    assert problems == []
    assert [(f.path, f.changed) for f in formatted] == [("schemaflow.yaml", False), ("schemas/shop/events.yaml", False)]


def test_the_files_import_writes_are_canonical():
    table = Table("retail", "events", (Column("id", "bigint", "it's `odd`: yes"), Column("tags", "array<string>")),
                  (Column("ds", "string", "Load date"),), comment="Line one\nline two", format="orc",
                  external=True, location="file:/data/events", properties={"retention": "30", "owner": "ops"})
    view = View("retail", "daily", "SELECT id, ds\nFROM retail.events", (Column("id", comment="Event id"),),
                comment="Per day", partitioned_on=("ds",))
    for obj in (table, view):
        text = schema_text(obj)
        assert format_text(f"schemas/retail/{obj.name}.yaml", text) == text


def _project_path(path: Path) -> str:
    """The path of a test case's file in its project (``schemas/...``, ``migrations/...``, ``schemaflow.yaml``)."""
    found = re.search(r"(?:^|/)(schemas/.*|migrations/[^/]*|schemaflow\.yaml)$", path.as_posix())
    return found.group(1) if found else path.name


YAML_FILES = sorted(
    [ROOT / "schemaflow.yaml", *(ROOT / "schemas").rglob("*.y*ml"), *(ROOT / "migrations").glob("*.y*ml"),
     *(path for group in ("markdown", "spec") for path in (CASES / group).rglob("*.yaml") if path.is_file())])


@pytest.mark.parametrize("file", YAML_FILES, ids=lambda file: file.relative_to(ROOT).as_posix())
def test_formatting_twice_changes_nothing_more(file):
    """Every file schemaflow reads formats into text that formats into itself and holds the same data.
    A file it refuses (bad syntax, duplicate keys, a billion laughs: unsafe to hand to yaml.safe_load)
    is an error, not formatted."""
    path = _project_path(file)
    try:
        text = file.read_text(encoding="utf-8")
        load_yaml(file, path)
    except (UnicodeDecodeError, SpecError):
        with pytest.raises(SpecError):
            format_text(path, file.read_bytes().decode("utf-8", "surrogateescape"))
        return
    once = format_text(path, text)
    assert format_text(path, once) == once
    assert yaml.safe_load(once) == yaml.safe_load(text)


# The bad-input cases of files and YAML (a_*): those of metastore limits and types are scalars, kept as written.
@pytest.mark.parametrize("case", sorted([*(CASES / "spec").iterdir(), *(CASES / "bad_input").glob("a_*")]),
                         ids=lambda case: f"{case.parent.name}/{case.name}")
def test_every_test_project_is_formatted_or_reported(case):
    """Links, folders where files belong, billion laughs, surrogates: each a located problem, none a crash."""
    formatted, problems = format_project(case)
    assert all(format_text(file.path, file.after) == file.after for file in formatted)
    assert not [str(problem) for problem in problems if "schemaflow fmt" in problem.message]
    assert [f.path for f in formatted] == sorted(f.path for f in formatted)


# Texts with each kind of value _Plan reads from what ruamel.yaml loads: quoted keys and values of
# both quotes and escapes, literal blocks of each chomping, empty values, keys that are not text,
# flow and block collections, anchors and aliases of collections and scalars.
EVENT_BUILT = [
    "table: retail.orders\ncomment: \"caf\\u00e9 \\\"menu\\\"\"\ncolumns:\n  - {name: 'id', type: \"bigint\"}\n"
    "properties: {'1': one, 2: two, \"q\": '', e: , t: true, n: ~}\n",
    "view: retail.v\nsql: |-\n  SELECT 1\ncomment: |+\n  kept\n\ncolumns:\n  - name: a\n    comment: |\n      x\n",
    "table: retail.orders\npartitioned_by: &day\n  - {name: ds, type: &t string}\ncolumns: *day\n"
    "properties: {kind: *t, owner: &o team, also: *o}\n",
    "table: retail.orders\ncolumns:\n- name: id\n  type: bigint\n  comment:\n- {name: x, type: 'decimal(1,0)'}\n",
]


@pytest.mark.parametrize("text", EVENT_BUILT)
def test_values_built_from_the_events_format_as_ruamel_yamls_own(monkeypatch, text):
    source, _ = fmt._tree(text)
    kind = "view" if text.startswith("view") else "table"
    loaded = fmt._load_ruamel(text)
    monkeypatch.setattr(fmt, "_load_ruamel", lambda text: pytest.fail("ruamel.yaml loaded a file it need not"))
    from_events = fmt._format_once(text, kind)
    monkeypatch.setattr(fmt, "_values", lambda text, root: loaded)
    assert from_events == fmt._format_once(text, kind)
    assert fmt._data(from_events) == fmt._data(text)


@pytest.mark.parametrize("text", [
    "view: retail.v\nsql: >\n  SELECT 1\n  FROM t\n",
    "table: retail.orders\ncomment: !!str 1\n",
    "table: retail.orders\nproperties: !!map {a: b}\n",
])
def test_a_folded_scalar_or_a_tag_is_loaded_by_ruamel_yaml(monkeypatch, text):
    loads = []
    load = fmt._load_ruamel
    monkeypatch.setattr(fmt, "_load_ruamel", lambda text: loads.append(text) or load(text))
    fmt._values(text, fmt._tree(text)[0])
    assert loads == [text]


def _mixed_project(root: Path) -> None:
    """The example project with a file to format and one that cannot be read."""
    shutil.copytree(ROOT / "schemas", root / "schemas")
    (root / "schemas" / "retail" / "bad.yaml").write_text("table: [retail.bad\n")
    (root / TABLE).write_text("columns: [{type: bigint, name: id}]\ntable: retail.orders\n")


def test_a_large_project_is_formatted_by_a_process_per_core_as_one_process_formats_it(monkeypatch, tmp_path):
    _mixed_project(tmp_path)
    alone = format_project(tmp_path)
    pools: list[int] = []

    class Pool(workers.ProcessPoolExecutor):
        def __init__(self, workers: int, **options: Any) -> None:
            pools.append(workers)
            super().__init__(workers, **options)
    monkeypatch.setattr(workers, "ProcessPoolExecutor", Pool)
    monkeypatch.setattr(fmt.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(fmt, "FILES_PER_PROCESS", 2)
    said: list[str] = []
    assert format_project(tmp_path, said.append) == alone
    assert pools == [2]
    assert said == [f"Formatting {len(alone[0]) + len(alone[1])} files in 2 processes ..."]
    assert [f.path for f in alone[0] if f.changed] == [TABLE] and [p.source.path for p in alone[1]] == [
        "schemas/retail/bad.yaml"]


def test_where_no_process_can_be_started_the_files_are_formatted_one_by_one(monkeypatch, tmp_path):
    _mixed_project(tmp_path)
    alone = format_project(tmp_path)

    def refused(workers: int, **options: object) -> None:
        raise OSError(38, "Function not implemented")
    monkeypatch.setattr(workers, "ProcessPoolExecutor", refused)
    monkeypatch.setattr(fmt.os, "cpu_count", lambda: 2)
    monkeypatch.setattr(fmt, "FILES_PER_PROCESS", 2)
    assert format_project(tmp_path) == alone
