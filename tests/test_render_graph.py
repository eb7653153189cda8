"""``schemaflow graph``: the declared dependency graph as text, Mermaid and Graphviz, whole or around one object."""
from __future__ import annotations

from pathlib import Path

from schemaflow.cli import main

ROOT = Path(__file__).resolve().parent.parent


def graph(project: Path, capsys, *args: str) -> tuple[int, str, str]:
    code = main(["--project", str(project), "graph", *args])
    captured = capsys.readouterr()
    return code, captured.out, captured.err


def test_text_lists_every_object_with_the_columns_each_view_uses(example, capsys):
    code, out, _ = graph(example, capsys)
    assert code == 0
    assert out.startswith(
        "analytics.daily_sessions (view)\n"
        "  reads analytics.sessions: device, ds, pages\n"
        "analytics.marketing_spend (table)\n"
        "analytics.revenue_by_segment (view)\n"
        "  reads retail.customers: customer_id, segment\n"
        "  reads retail.daily_revenue: customer_id, ds, revenue\n")
    # Columns used only in JOIN conditions count: customer_orders joins products on product_id.
    assert ("retail.customer_orders (view)\n"
            "  reads retail.customers: customer_id, name, segment\n"
            "  reads retail.orders: amount, customer_id, ds, order_id, product_id\n"
            "  reads retail.products: product_id, title\n") in out
    assert "retail.orders (table)\n  read by retail.customer_orders\n  read by retail.daily_revenue\n" in out
    assert graph(example, capsys) == (0, out, "")  # deterministic


def test_mermaid_around_one_object_shows_only_its_upstream_and_downstream(example, capsys):
    code, out, _ = graph(example, capsys, "--format", "mermaid", "Retail.Daily_Revenue")
    assert code == 0
    assert out == (
        "graph LR\n"
        '  n1("analytics.revenue_by_segment")\n'
        '  n2("retail.daily_revenue")\n'
        '  n3["retail.orders"]\n'
        '  n1 -->|"customer_id, ds, revenue"| n2\n'
        '  n2 -->|"amount, customer_id, ds"| n3\n')


def test_dot_around_a_table_shows_every_view_downstream(example, capsys):
    code, out, _ = graph(example, capsys, "--format", "dot", "retail.orders")
    assert code == 0
    assert out == (
        "digraph schemaflow {\n"
        "  rankdir=LR;\n"
        "  node [shape=box];\n"
        '  "analytics.revenue_by_segment" [style=rounded];\n'
        '  "retail.customer_orders" [style=rounded];\n'
        '  "retail.daily_revenue" [style=rounded];\n'
        '  "retail.orders";\n'
        '  "analytics.revenue_by_segment" -> "retail.daily_revenue" [label="customer_id, ds, revenue"];\n'
        '  "retail.customer_orders" -> "retail.orders" [label="amount, customer_id, ds, order_id, product_id"];\n'
        '  "retail.daily_revenue" -> "retail.orders" [label="amount, customer_id, ds"];\n'
        "}\n")


def test_an_unknown_object_is_an_error(example, capsys):
    assert graph(example, capsys, "retail.nope") == (
        1, "", "error: no table or view retail.nope is declared; see schemaflow graph for them all\n")


def test_cycles_are_reported_with_their_path(capsys):
    # Hive's create_or_replace_view7.q, create_or_replace_view8.q and recursive_view.q as schemas.
    code, out, err = graph(ROOT / "tests/cases/spec/hive_view_cycles", capsys)
    assert (code, out) == (1, "")
    assert "schemas/cov7/v1.yaml:3:1: view cycle: cov7.v1 -> cov7.v3 -> cov7.v2 -> cov7.v1" in err.splitlines()
    assert "schemas/cov8/v1.yaml:3:1: view cycle: cov8.v1 -> cov8.v1" in err.splitlines()
    assert "schemas/rec/r0.yaml:3:1: view cycle: rec.r0 -> rec.r2 -> rec.r1 -> rec.r0" in err.splitlines()


def test_json_gives_tools_the_objects_and_the_columns_on_each_edge(example, capsys):
    import json

    code, out, _ = graph(example, capsys, "--format", "json", "retail.daily_revenue")
    assert code == 0
    document = json.loads(out)
    assert document["objects"] == [{"kind": "view", "object": "analytics.revenue_by_segment"},
                                   {"kind": "view", "object": "retail.daily_revenue"},
                                   {"kind": "table", "object": "retail.orders"}]
    assert document["edges"] == [
        {"columns": ["customer_id", "ds", "revenue"], "reads": "retail.daily_revenue",
         "view": "analytics.revenue_by_segment"},
        {"columns": ["amount", "customer_id", "ds"], "reads": "retail.orders", "view": "retail.daily_revenue"}]
