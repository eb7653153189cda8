"""A Delta table in the Hive metastore read as the live state, with no JVM: Spark registers it with a placeholder schema
(``col array<string>``) and the provider ``delta``; the live reader takes its schema, partition columns, comment,
properties and ``DeltaState`` from its log (``catalog.delta_log``, here written by deltalake), never the placeholder, and
a table file declaring what the log holds plans nothing. A log that cannot be read leaves the table unreadable."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pyarrow as pa
from deltalake import write_deltalake

from schemaflow.catalog.hive.thrift_data import to_model
from schemaflow.claims import new_run
from schemaflow.model import VERSION_KEY, Catalog, Column, Table
from schemaflow.plan.plan import PlanBuilder
from schemaflow.spec import load_catalog

ROWS = pa.table({"id": pa.array([1, 2], pa.int64()), "qty": pa.array([3, 4], pa.int32()), "ds": ["d1", "d2"]})
DECLARED = """\
table: shop.orders
format: delta
comment: One row per order
columns:
  - {name: id, type: bigint}
  - {name: qty, type: int}
partitioned_by:
  - {name: ds, type: string}
"""


def entry(location: str) -> dict[str, Any]:
    """The metastore entry Spark writes for a Delta table (measured: tests/test_delta_engine.py): a placeholder
    column, the provider, the location in the storage descriptor and as the ``path`` SerDe parameter."""
    return {"dbName": "shop", "tableName": "orders", "tableType": "MANAGED_TABLE",
            "parameters": {"spark.sql.sources.provider": "delta", "spark.sql.create.version": "3.5.9"},
            "sd": {"cols": [{"name": "col", "type": "array<string>", "comment": "from deserializer"}],
                   "location": location, "serdeInfo": {"parameters": {"path": location}}}}


def test_the_log_is_the_live_table_and_a_file_declaring_it_plans_nothing(tmp_path: Path) -> None:
    lake = tmp_path / "lake" / "orders"
    write_deltalake(lake, ROWS, partition_by=["ds"], description="One row per order")
    live = to_model(entry(f"file:{lake}"), ("file:" + str(tmp_path / "lake"),))
    assert isinstance(live, Table) and live.unreadable is None, live
    assert (live.format, live.data_source, live.comment) == ("delta", True, "One row per order")
    assert live.columns == (Column("id", "bigint"), Column("qty", "int"))
    assert live.partition_columns == (Column("ds", "string"),)
    assert live.delta is not None and (live.delta.log_version, live.delta.column_mapping) == (0, "none")

    (tmp_path / "project" / "schemas" / "shop").mkdir(parents=True)
    (tmp_path / "project" / "schemas" / "shop" / "orders.yaml").write_text(DECLARED)
    desired = load_catalog(tmp_path / "project")
    plan = PlanBuilder(desired, Catalog(databases=("shop",), objects={live.key: live})).build()
    assert plan.steps == ()

    (tmp_path / "project" / "schemas" / "shop" / "orders.yaml").write_text(
        DECLARED.replace("  - {name: qty, type: int}\n", "  - {name: qty, type: int}\n  - {name: note, type: string}\n"))
    plan = PlanBuilder(load_catalog(tmp_path / "project"), Catalog(databases=("shop",), objects={live.key: live})).build()
    [step] = plan.steps
    assert (step.summary, step.blocked) == ("alter Delta table shop.orders: add note string", None)
    assert step.actions[0].describe() == (f"-- on top of Delta log version 0 of table {live.delta.table_id}\n"
                                          "ALTER TABLE `shop`.`orders` ADD COLUMNS (\n  `note` string\n);")


def test_a_delta_entry_whose_log_is_not_there_is_unreadable_and_never_the_placeholder(tmp_path: Path) -> None:
    live = to_model(entry(f"file:{tmp_path / 'missing'}"), ())
    assert isinstance(live, Table) and live.columns == () and live.delta is None
    assert live.unreadable == (f"the Delta table location 'file:{tmp_path / 'missing'}' holds no _delta_log: it is not "
                               "a Delta table's; see that its metastore entry names its own metadata file")
    nowhere = to_model({**entry(""), "sd": {"cols": [{"name": "col", "type": "array<string>"}]}}, ())
    assert isinstance(nowhere, Table)
    assert nowhere.unreadable == "its metastore entry names no location; see that Spark registered the Delta table"



def configured(lake: Path, version: str) -> None:
    """A Delta table at ``lake`` whose last commit sets ``schemaflow.version`` (Spark's SET TBLPROPERTIES writes it;
    deltalake refuses to), a commit of the metadata of its first with that key added."""
    write_deltalake(lake, ROWS)
    [metadata] = [line for line in map(json.loads, (lake / "_delta_log" / f"{0:020d}.json").read_text().splitlines())
                  if "metaData" in line]
    metadata["metaData"]["configuration"][VERSION_KEY] = version
    (lake / "_delta_log" / f"{1:020d}.json").write_text(json.dumps(metadata) + "\n")


def test_a_delta_tables_version_is_its_entrys_or_a_claim_its_log_alone_holds(tmp_path: Path) -> None:
    """The claim a CREATE carried into the log stands for the version while the entry holds none (a run stopped
    before writing it: ``catalog.hive.delta_commit``); a stamp in the log alone does not, nor a log's claim under an
    entry's version."""
    claim = new_run().token
    lake = tmp_path / "lake" / "orders"
    configured(lake, claim)
    storage = ("file:" + str(tmp_path / "lake"),)
    assert to_model(entry(f"file:{lake}"), storage).version == claim
    stamped = entry(f"file:{lake}")
    stamped["parameters"][VERSION_KEY] = "0123456789abcdef"
    assert to_model(stamped, storage).version == "0123456789abcdef"

    other = tmp_path / "lake" / "other"
    configured(other, "0123456789abcdef")
    assert to_model(entry(f"file:{other}"), storage).version is None
