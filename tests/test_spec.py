"""YAML → model: a valid project loads into exact objects; every invalid case reports exact positions.

Each folder under ``tests/cases/spec/`` is a project. Invalid ones hold ``expected.txt``: the
``path:line:col: message`` lines that loading it must report, in order. A ``schemaflow.yaml`` in a
case is read first, and its ``databases`` are the ones the project manages.
"""
from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from schemaflow.errors import SpecError
from schemaflow.model import (Bucketing, Catalog, Column, Source, Table, View, ViewPartitions, catalog_digest, fingerprint,
                              from_data, to_data)
from schemaflow.spec import load_catalog
from schemaflow.spec.settings import check_settings
from schemaflow.spec.yamlpos import load_yaml
from tests.golden import golden

CASES = Path(__file__).parent / "cases" / "spec"
INVALID = sorted(case.name for case in CASES.iterdir() if (case / "expected.txt").exists())


def load_case(case: Path) -> Catalog:
    settings = check_settings(case / "schemaflow.yaml") if (case / "schemaflow.yaml").exists() else {}
    return load_catalog(case, tuple(settings.get("databases", ())))


@pytest.mark.parametrize("name", INVALID)
def test_invalid_case(name: str) -> None:
    case = CASES / name
    with pytest.raises(SpecError) as caught:
        load_case(case)
    assert str(caught.value).splitlines() == (case / "expected.txt").read_text().splitlines()


def test_valid_project_loads_into_the_exact_model() -> None:
    catalog = load_case(CASES / "valid")
    orders = Table(
        database="retail",
        name="orders",
        columns=(
            Column("order_id", "bigint", "Order identifier"),
            Column("customer_id", "bigint"),
            Column("amount", "decimal(12,2)"),
        ),
        partition_columns=(Column("ds", "string", "Load date"),),
        comment="One row per order line",
        format="parquet",
        properties={"owner": "sales-eng"},
    )
    contacts = Table(
        database="crm",
        name="contacts",
        columns=(
            Column("customer_id", "bigint"),
            Column("email", "varchar(320)", "Primary address"),
            Column("tags", "array<string>"),
        ),
        format="orc",
        external=True,
        location="s3a://crm/contacts",
    )
    daily_revenue = View(
        database="retail",
        name="daily_revenue",
        sql="SELECT customer_id, SUM(amount) AS revenue, ds\nFROM retail.orders\nGROUP BY customer_id, ds",
        columns=(Column("customer_id"), Column("revenue", comment="Sum of amounts"), Column("ds")),
        comment="Revenue per customer and day",
        partitioned_on=("ds",),
    )
    top_customers = View(
        database="retail",
        name="top_customers",
        sql=(
            "WITH ranked AS (\n  SELECT r.*, c.Email\n  FROM daily_revenue r\n"
            "  JOIN crm.contacts c ON c.customer_id = r.customer_id\n)\nSELECT * FROM ranked WHERE revenue > 1000"
        ),
        columns=(Column("customer_id"), Column("revenue"), Column("ds"), Column("email")),
        properties={"certified": "true", "refresh": "daily", "ttl_days": "30"},
    )
    assert catalog == Catalog(
        databases=("crm", "retail"),
        objects={
            "crm.contacts": contacts,
            "retail.daily_revenue": daily_revenue,
            "retail.orders": orders,
            "retail.top_customers": top_customers,
        },
    )
    assert list(catalog.objects) == sorted(catalog.objects)
    # What equality leaves out: reads and source positions.
    assert catalog.objects["retail.daily_revenue"].reads == ("retail.orders",)
    assert catalog.objects["retail.top_customers"].reads == ("crm.contacts", "retail.daily_revenue")
    assert catalog.objects["retail.orders"].source == Source("schemas/retail/orders.yaml", 1, 1)
    assert [c.source for c in catalog.objects["crm.contacts"].columns] == [
        Source("schemas/crm/contacts.yaml", line, 5) for line in (6, 8, 11)
    ]
    assert catalog.objects["retail.orders"].partition_columns[0].source == Source("schemas/retail/orders.yaml", 9, 5)
    assert catalog.objects["retail.daily_revenue"].columns[1].source == Source("schemas/retail/daily_revenue.yaml", 5, 5)
    assert catalog.objects["retail.top_customers"].columns[0].source is None


def test_catalog_databases_default_to_those_declared() -> None:
    assert load_catalog(CASES / "valid").databases == ("crm", "retail")
    assert load_catalog(CASES / "valid", ("retail", "crm", "extra")).databases == ("retail", "crm", "extra")


def test_select_star_view_takes_the_table_columns(tmp_path: Path) -> None:
    write(tmp_path / "schemas/sales/t.yaml", "table: sales.t\ncolumns:\n  - {name: a, type: int}\npartitioned_by:\n  - {name: ds, type: string}\n")
    write(tmp_path / "schemas/sales/v.yaml", "view: sales.v\npartitioned_on: [ds]\nsql: SELECT * FROM t;  \n")
    view = load_catalog(tmp_path).objects["sales.v"]
    assert view == View("sales", "v", "SELECT * FROM t", columns=(Column("a"), Column("ds")), partitioned_on=("ds",))
    assert view.reads == ("sales.t",)


def test_empty_schemas_folder_is_an_empty_catalog(tmp_path: Path) -> None:
    write(tmp_path / "schemas/.gitkeep", "")  # what keeps an empty folder in git
    assert load_catalog(tmp_path) == Catalog()


def test_settings_are_returned_as_plain_data(tmp_path: Path) -> None:
    write(
        tmp_path / "schemaflow.yaml",
        "metastore:\n  uri: thrift://127.0.0.1:9083\nwarehouse_dir: /data/warehouse\n"
        "spark:\n  master: local[2]\n  conf: {spark.sql.shuffle.partitions: \"4\"}\ndatabases: [retail]\n",
    )
    assert check_settings(tmp_path / "schemaflow.yaml") == {
        "metastore": {"uri": "thrift://127.0.0.1:9083"},
        "warehouse_dir": "/data/warehouse",
        "spark": {"master": "local[2]", "conf": {"spark.sql.shuffle.partitions": "4"}},
        "databases": ["retail"],
    }
    write(tmp_path / "schemaflow.yaml", "# nothing set\n")
    assert check_settings(tmp_path / "schemaflow.yaml") == {}


@pytest.mark.parametrize(
    "text, sql_position, file_position",
    [
        ("sql: |\n  SELECT a,\n         b\n", (2, 8), (3, 10)),      # literal block: SQL line 2 is file line 3
        ("sql: |2\n    SELECT a,\n           b\n", (2, 10), (3, 12)),  # the indentation indicator's extra spaces stay in the text
        ("sql: 'SELECT a, b'\n", (1, 11), (1, 17)),                    # quoted: counted after the quote
        ("sql: SELECT a, b\n", (1, 11), (1, 16)),
        ("sql: >\n  SELECT a,\n  b\n", (1, 11), (1, 6)),              # folded: lines are joined, so the value's start
    ],
)
def test_positions_inside_a_text_value(
    tmp_path: Path, text: str, sql_position: tuple[int, int], file_position: tuple[int, int]
) -> None:
    write(tmp_path / "f.yaml", text)
    doc = load_yaml(tmp_path / "f.yaml", "f.yaml")
    assert doc.within(("sql",), *sql_position) == Source("f.yaml", *file_position)


def test_yaml_positions_of_values_and_keys(tmp_path: Path) -> None:
    write(tmp_path / "f.yaml", "a:\n  - {x: 1}\n  - y: [2, 3]\n")
    doc = load_yaml(tmp_path / "f.yaml", "f.yaml")
    assert doc.data == {"a": [{"x": 1}, {"y": [2, 3]}]}
    assert doc.at("a", 1, "y", 1) == Source("f.yaml", 3, 12)
    assert doc.key("a", 1, "y") == Source("f.yaml", 3, 5)
    assert doc.at("a", 0) == Source("f.yaml", 2, 5)
    assert doc.at("a", 0, "missing") == Source("f.yaml", 2, 5)   # nearest ancestor


def write(path: Path, text: str) -> None:
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text)


def test_view_partitions_listed_or_derived_load_into_the_model(tmp_path: Path) -> None:
    write(tmp_path / "schemas/sales/t.yaml", "table: sales.t\ncolumns: [{name: a, type: int}]\n"
                                             "partitioned_by: [{name: ds, type: string}, {name: hr, type: string}]\n")
    write(tmp_path / "schemas/sales/listed.yaml", "view: sales.listed\npartitioned_on: [ds]\nsql: SELECT a, ds FROM t\n"
                                                  "partitions: [{ds: '2024-01-02'}, {DS: '2024-01-01'}]\n")
    write(tmp_path / "schemas/sales/derived.yaml", "view: sales.derived\npartitioned_on: [ds]\nsql: SELECT a, ds FROM t\n"
                                                   "partitions: {derive_from: Sales.T, complete_when: {HR: ['01', '00', '01']}}\n")
    write(tmp_path / "schemas/sales/counted.yaml", "view: sales.counted\npartitioned_on: [ds]\nsql: SELECT a, ds FROM t\n"
                                                   "partitions: {derive_from: sales.t, complete_when: {hr: 24}}\n")
    write(tmp_path / "schemas/sales/plain.yaml", "view: sales.plain\npartitioned_on: [ds]\nsql: SELECT a, ds FROM t\n")
    objects = load_catalog(tmp_path).objects
    assert objects["sales.listed"].partitions == ViewPartitions(values=(("2024-01-01",), ("2024-01-02",)))
    assert objects["sales.derived"].partitions == ViewPartitions(derive_from="sales.t", complete_when={"hr": ("00", "01")})
    assert objects["sales.counted"].partitions == ViewPartitions(derive_from="sales.t", complete_when={"hr": 24})
    assert objects["sales.plain"].partitions is None
    # The plain-data form round-trips them; the fingerprint leaves them out, as a table's partitions are.
    for key in ("sales.listed", "sales.derived", "sales.counted", "sales.plain"):
        assert from_data(to_data(objects[key])) == objects[key]
    assert fingerprint(objects["sales.listed"]) == fingerprint(replace(objects["sales.listed"], partitions=None))


def _stamped_objects() -> dict[str, Table | View]:
    """Objects of every kind and detail: the example project's, those of a test project, and a table
    with every storage detail, a view with listed partitions and one deriving them."""
    root = Path(__file__).resolve().parent.parent
    objects: dict[str, Table | View] = {**load_catalog(root).objects, **load_catalog(CASES / "valid").objects}
    stored = Table("lake", "raw", (Column("id", "bigint", "the key"), Column("body", "map<string,int>")),
                   (Column("ds", "string"),), "Raw events", "custom", True, "s3://bucket/raw", {"owner": "lake"},
                   serde="org.example.Serde", input_format="org.example.In", output_format="org.example.Out",
                   serde_properties={"field.delim": ","}, bucketing=Bucketing(("id",), 8, ("id desc",)))
    source = Table("lake", "events", (Column("id", "bigint"),), data_source=True, format="json")
    listed = View("lake", "listed", "SELECT id, ds FROM lake.raw", (Column("id", None, "key"), Column("ds")),
                  partitioned_on=("ds",), partitions=ViewPartitions((("2024-01-01",),)))
    derived = replace(listed, name="derived", partitions=ViewPartitions(derive_from="lake.raw",
                                                                       complete_when={"hr": 24}))
    return objects | {o.key: o for o in (stored, source, listed, derived)}


def test_fingerprints_are_the_same_from_version_to_version():
    """Each object's fingerprint is its ``schemaflow.version`` in the metastores schemaflow applied to,
    and a saved plan records the project's digest: another fingerprint for the same definition would
    make every object look changed, or changed outside schemaflow, after an upgrade."""
    objects = _stamped_objects()
    lines = [f"{key} {fingerprint(obj)}" for key, obj in sorted(objects.items())]
    lines.append(f"digest {catalog_digest(Catalog(objects=dict(sorted(objects.items()))))}")
    assert "\n".join(lines) + "\n" == golden(CASES / "fingerprints.txt", "\n".join(lines) + "\n")
