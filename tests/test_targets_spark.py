"""Two targets, one project, against the real metastore: each target's databases get the schemas under
their own names, views read their own target's tables, and a plan saved for one target is refused on
the other."""
from __future__ import annotations

from pathlib import Path

import pytest

from tests.inprocess import schemaflow

pytestmark = pytest.mark.spark

ORDERS = """table: shop.orders
columns:
  - {name: order_id, type: bigint}
  - {name: amount, type: "decimal(10,2)"}
partitioned_by:
  - {name: ds, type: string}
"""
CUSTOMERS = """table: shop.customers
columns:
  - {name: customer_id, type: bigint}
  - {name: signup_date, type: string}
"""
TOTALS = """view: shop.order_totals
sql: |
  SELECT ds, SUM(amount) AS total
  FROM shop.orders  -- qualified: shop is renamed on each target
  GROUP BY ds
"""
RECENT = """view: shop.recent_orders
sql: SELECT order_id, ds FROM orders WHERE ds >= '2024-01-01'
"""
RENAME = """description: Rename signup_date to signed_up
changes:
  - rename_column: {table: shop.customers, from: signup_date, to: signed_up}
"""


def write(root: Path, dev: str, prod: str) -> None:
    (root / "schemas" / "shop").mkdir(parents=True)
    for name, text in {"orders": ORDERS, "customers": CUSTOMERS, "order_totals": TOTALS,
                       "recent_orders": RECENT}.items():
        (root / "schemas" / "shop" / f"{name}.yaml").write_text(text)
    (root / "schemaflow.yaml").write_text(
        "databases: [shop]\n"
        "targets:\n"
        f"  dev: {{database_names: {{shop: {dev}}}}}\n"
        f"  prod: {{database_names: {{shop: {prod}}}}}\n")


def test_one_project_is_applied_to_two_targets_under_their_own_database_names(
        tmp_path, spark, metastore, fresh_db, monkeypatch):
    dev, prod = fresh_db(), fresh_db()
    write(tmp_path, dev, prod)
    project = str(tmp_path)

    unchosen = schemaflow("--project", project, "plan")
    assert unchosen.code == 1 and "defines targets (dev, prod) and none was chosen" in unchosen.err

    for target in ("dev", "prod"):
        applied = schemaflow("--project", project, "--target", target, "apply", "--auto-approve")
        assert applied.code == 0, applied.said
        assert applied.out.endswith("Applied 4 steps.\n")

    for database, other in ((dev, prod), (prod, dev)):
        live = metastore.read((database,))
        assert sorted(live.objects) == [f"{database}.{name}"
                                        for name in ("customers", "order_totals", "orders", "recent_orders")]
        totals = live.objects[f"{database}.order_totals"]
        assert f"FROM {database}.orders  -- qualified" in totals.sql and other not in totals.sql
    # Each target's views read that target's tables.
    spark.sql(f"INSERT INTO {dev}.orders PARTITION (ds='2024-02-01') VALUES (1, 10.00)")
    spark.sql(f"INSERT INTO {prod}.orders PARTITION (ds='2024-02-01') VALUES (2, 99.00), (3, 1.00)")
    assert [tuple(r) for r in spark.sql(f"SELECT ds, CAST(total AS STRING) FROM {dev}.order_totals").collect()] == [
        ("2024-02-01", "10.00")]
    assert [r.order_id for r in spark.sql(f"SELECT order_id FROM {prod}.recent_orders ORDER BY 1").collect()] == [2, 3]

    for target, database in (("dev", dev), ("prod", prod)):
        replanned = schemaflow("--project", project, "plan", "--target", target)  # the option after the command
        assert (replanned.code, replanned.out) == (
            0, f"No changes: target {target} matches the schemas (databases: {database}).\n")

    # A migration and a schema change, planned for dev and saved.
    (tmp_path / "migrations").mkdir()
    (tmp_path / "migrations" / "0001_signed_up.yaml").write_text(RENAME)
    customers = tmp_path / "schemas" / "shop" / "customers.yaml"
    customers.write_text(customers.read_text().replace("signup_date", "signed_up"))
    assert schemaflow("--project", project, "hash-migrations").code == 0
    monkeypatch.setenv("SCHEMAFLOW_TARGET", "dev")
    # The rename makes signup_date's values read NULL as signed_up: allowed as a drop is.
    planned = schemaflow("--project", project, "plan", "--no-color", "--allow-destructive", "--out",
                         str(tmp_path / "dev.json"))
    assert planned.code == 2, planned.said
    assert "rename signup_date to signed_up" in planned.out and f"{dev}.customers" in planned.out
    assert prod not in planned.out and "shop." not in planned.out

    refused = schemaflow("--project", project, "--target", "prod", "apply", str(tmp_path / "dev.json"),
                         "--auto-approve")
    assert refused.code == 1
    assert ("it was planned for target dev, and this run is for target prod. Plan again with this target, or apply "
            "it with the target it was planned for (--target or SCHEMAFLOW_TARGET).") in refused.err
    assert [c.name for c in metastore.read((prod,)).objects[f"{prod}.customers"].columns] == [
        "customer_id", "signup_date"]

    applied = schemaflow("--project", project, "apply", str(tmp_path / "dev.json"), "--auto-approve")
    assert applied.code == 0, applied.said
    assert [c.name for c in metastore.read((dev,)).objects[f"{dev}.customers"].columns] == ["customer_id", "signed_up"]
    assert [c.name for c in metastore.read((prod,)).objects[f"{prod}.customers"].columns] == [
        "customer_id", "signup_date"]
    prod_plan = schemaflow("--project", project, "--target", "prod", "plan", "--no-color", "--allow-destructive")
    assert prod_plan.code == 2 and f"{prod}.customers" in prod_plan.out and dev not in prod_plan.out

    # import reads the target's database and writes the project's names.
    imported = schemaflow("--project", project, "import", "--database", "shop", "--out", str(tmp_path / "imported"))
    assert imported.code == 0, imported.said
    written = tmp_path / "imported" / "shop"
    assert sorted(p.name for p in written.iterdir()) == [
        "customers.yaml", "order_totals.yaml", "orders.yaml", "recent_orders.yaml"]
    assert "table: shop.customers\n" in (written / "customers.yaml").read_text()
    totals = (written / "order_totals.yaml").read_text()
    assert "view: shop.order_totals\n" in totals and "FROM shop.orders" in totals and dev not in totals
