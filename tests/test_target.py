"""Targets: one project, its settings and database names chosen per target (no metastore needed)."""
from __future__ import annotations

import shutil
from pathlib import Path

import pytest

from schemaflow.cli import main
from schemaflow.errors import SchemaflowError, SpecError
from schemaflow.model import Table, View
from schemaflow.project import load_project
from schemaflow.sql.views import with_databases_renamed
from schemaflow.workflow import desired_state

ROOT = Path(__file__).resolve().parent.parent

TARGETS = """
target: dev
targets:
  dev:
    database_names: {retail: dev_retail, analytics: dev_analytics}
  prod:
    metastore: {uri: "thrift://metastore.internal:9083"}
    warehouse_dir: s3a://lake/warehouse
    spark:
      master: spark://spark.internal:7077
      conf: {spark.sql.shuffle.partitions: "200", spark.executor.memory: 8g}
    after_apply: ["echo refreshed"]
"""


@pytest.fixture
def project(example: Path) -> Path:
    shutil.copytree(ROOT / "migrations", example / "migrations")
    with (example / "schemaflow.yaml").open("a") as settings:
        settings.write(TARGETS)
    return example


def test_the_default_target_maps_database_names_and_keeps_the_rest(project):
    settings = load_project(project, env={}).settings
    assert settings.target == "dev"
    assert settings.database_names == {"analytics": "dev_analytics", "retail": "dev_retail"}
    assert (settings.metastore_uri, settings.spark_master) == (None, "local[2]")
    assert settings.spark_conf == {"spark.sql.shuffle.partitions": "4"}


def test_a_target_overrides_connection_settings_and_merges_spark_settings(project):
    settings = load_project(project, env={}, target="prod").settings
    assert (settings.target, settings.database_names) == ("prod", {})
    assert settings.metastore_uri == "thrift://metastore.internal:9083"
    assert (settings.warehouse_dir, settings.spark_master) == ("s3a://lake/warehouse", "spark://spark.internal:7077")
    assert settings.spark_conf == {"spark.executor.memory": "8g", "spark.sql.shuffle.partitions": "200"}
    assert settings.after_apply == ("echo refreshed",)
    assert settings.databases == ("analytics", "retail")  # project-wide settings stay


def test_the_target_is_chosen_by_the_option_then_the_environment_then_the_file(project):
    assert load_project(project, env={"SCHEMAFLOW_TARGET": "prod"}).settings.target == "prod"
    assert load_project(project, env={"SCHEMAFLOW_TARGET": "prod"}, target="dev").settings.target == "dev"
    # The environment still overrides the target's own settings, as it does the file's.
    env = {"SCHEMAFLOW_METASTORE_URI": "thrift://other:9083"}
    assert load_project(project, env=env, target="prod").settings.metastore_uri == "thrift://other:9083"


def test_an_unknown_target_is_refused_with_the_nearest_name(project):
    with pytest.raises(SchemaflowError) as raised:
        load_project(project, env={}, target="prd")
    assert str(raised.value) == "unknown target 'prd': did you mean 'prod'? schemaflow.yaml defines dev, prod"


def test_without_a_chosen_target_the_project_validates_but_reaches_no_metastore(project, capsys):
    settings = project / "schemaflow.yaml"
    settings.write_text(settings.read_text().replace("\ntarget: dev\n", "\n"))
    loaded = load_project(project, env={})
    assert (loaded.settings.target, loaded.settings.database_names) == (None, {})
    assert main(["--project", str(project), "validate"]) == 0
    assert capsys.readouterr().out == "valid: 6 tables and 4 views in 2 databases (analytics, retail)\n"
    # Planning against a metastore with no target chosen is refused before Spark starts.
    assert main(["--project", str(project), "plan"]) == 1
    assert capsys.readouterr().err == (
        "error: schemaflow.yaml defines targets (dev, prod) and none was chosen: pass --target NAME, set "
        "SCHEMAFLOW_TARGET, or name a default with 'target:' in schemaflow.yaml\n")


def test_a_target_named_in_a_project_without_targets_is_refused(example):
    with pytest.raises(SchemaflowError) as raised:
        load_project(example, env={"SCHEMAFLOW_TARGET": "dev"})
    assert str(raised.value).startswith("target 'dev' is not defined: schemaflow.yaml has no targets")


def test_two_databases_given_one_name_on_a_target_is_an_error_at_the_second(project):
    settings = project / "schemaflow.yaml"
    settings.write_text(settings.read_text().replace("analytics: dev_analytics", "analytics: dev_retail"))
    with pytest.raises(SpecError) as raised:
        load_project(project, env={})
    [problem] = raised.value.problems
    assert (problem.source.path, problem.source.line) == ("schemaflow.yaml", 11)
    assert problem.message == ("analytics and retail are both named dev_retail on target dev: "
                               "give each database a name of its own")


def test_a_mapped_name_that_is_no_database_of_the_project_is_an_error(project):
    settings = project / "schemaflow.yaml"
    settings.write_text(settings.read_text().replace("analytics: dev_analytics", "analytic: dev_analytics"))
    with pytest.raises(SpecError) as raised:
        desired_state(load_project(project, env={}, target="prod"))  # every target's names are checked
    assert [p.message for p in raised.value.problems] == [
        "database_names of target dev maps analytic, which is not a database of this project (analytics, retail): "
        "remove it or fix its name"]


def test_a_mapped_name_that_lands_on_another_project_database_is_an_error(project):
    settings = project / "schemaflow.yaml"
    settings.write_text(settings.read_text().replace("{retail: dev_retail, analytics: dev_analytics}",
                                                     "{retail: analytics}"))
    with pytest.raises(SpecError) as raised:
        desired_state(load_project(project, env={}))
    assert [p.message for p in raised.value.problems] == [
        "analytics and retail would both be analytics on target dev: give each a name of its own in database_names"]


def test_the_desired_catalog_on_a_target_has_the_target_names_everywhere(project):
    desired = desired_state(load_project(project, env={}))
    assert desired.databases == ("dev_analytics", "dev_retail")
    assert sorted(desired.objects) == sorted(key.replace("retail.", "dev_retail.").replace("analytics.", "dev_analytics.")
                                            for key in desired_state(load_project(project, env={}, target="prod")).objects)
    assert all(obj.key.startswith(obj.database + ".") for obj in desired.objects.values())
    segment = desired.objects["dev_analytics.revenue_by_segment"]
    assert isinstance(segment, View)
    assert segment.sql == (
        "SELECT r.ds, c.segment, COUNT(DISTINCT r.customer_id) AS customers, SUM(r.revenue) AS revenue\n"
        "FROM dev_retail.daily_revenue r\n"
        "JOIN dev_retail.customers c ON c.customer_id = r.customer_id\n"
        "GROUP BY r.ds, c.segment")
    assert segment.reads == ("dev_retail.customers", "dev_retail.daily_revenue")
    assert set(segment.uses) == {"dev_retail.customers", "dev_retail.daily_revenue"}
    assert segment.lineage["segment"] == ("dev_retail.customers.segment",)
    # Unqualified names resolve against the view's own database, which is renamed: the text stays.
    orders = desired.objects["dev_retail.customer_orders"]
    assert isinstance(orders, View) and "FROM orders o" in orders.sql
    assert orders.reads == ("dev_retail.customers", "dev_retail.orders", "dev_retail.products")
    [migration] = desired.migrations
    assert [change.table for change in migration.changes] == ["dev_retail.customers"]
    assert isinstance(desired.objects["dev_retail.orders"], Table)


def test_only_database_names_change_in_a_view_text_comments_quotes_and_layout_stay():
    sql = ("SELECT retail.orders.id, o.x  -- from retail.orders\n"
           "FROM retail.orders o JOIN `Retail`.items i ON TRUE\n"
           "JOIN analytics.s USING (k) WHERE EXISTS (SELECT 1 FROM retail.z)")
    assert with_databases_renamed(sql, {"retail": "dev_retail"}) == (
        "SELECT dev_retail.orders.id, o.x  -- from retail.orders\n"
        "FROM dev_retail.orders o JOIN `dev_retail`.items i ON TRUE\n"
        "JOIN analytics.s USING (k) WHERE EXISTS (SELECT 1 FROM dev_retail.z)")


def test_plan_between_git_refs_names_the_targets_databases(project, capsys):
    import git

    repo = git.Repo.init(project, initial_branch="main")
    repo.index.add(["schemas", "migrations", "schemaflow.yaml"])
    repo.index.commit("start")
    orders = project / "schemas" / "retail" / "orders.yaml"
    orders.write_text(orders.read_text().replace("  - {name: amount, type: \"decimal(12,2)\"}\n",
                                                 "  - {name: amount, type: \"decimal(12,2)\"}\n"
                                                 "  - {name: coupon, type: string}\n"))
    assert main(["--project", str(project), "plan", "--base", "main", "--target", "dev", "--no-color"]) == 2
    out = capsys.readouterr().out
    assert "add 1 column to dev_retail.orders: coupon string" in out
    assert "retail.orders" not in out.replace("dev_retail.orders", "")


def test_the_docs_targets_example_is_valid_and_means_what_it_says(example):
    page = (ROOT / "docs" / "guides" / "targets.md").read_text()
    section = page[page.index("# Targets: dev, staging and prod"):]
    block = section[section.index("```yaml\n") + len("```yaml\n"):section.index("```\n", section.index("```yaml"))]
    (example / "schemaflow.yaml").write_text(block)
    assert load_project(example, env={}).settings.database_names == {"analytics": "dev_analytics",
                                                                     "retail": "dev_retail"}
    prod = load_project(example, env={}, target="prod").settings
    assert (prod.metastore_uri, prod.spark_master) == ("thrift://metastore.example.com:9083",
                                                       "spark://spark-master.example.com:7077")
    staging = desired_state(load_project(example, env={}, target="staging"))
    assert staging.databases == ("stg_analytics", "stg_retail")


def test_a_database_new_in_the_change_under_review_may_be_mapped_before_its_base_has_it(project, capsys):
    import git

    repo = git.Repo.init(project, initial_branch="main")
    repo.index.add(["schemas", "migrations", "schemaflow.yaml"])
    repo.index.commit("start")
    settings = project / "schemaflow.yaml"
    settings.write_text(settings.read_text().replace("databases: [analytics, retail]", "databases: [analytics, "
                        "marketing, retail]").replace("analytics: dev_analytics}", "analytics: dev_analytics, "
                                                                                   "marketing: dev_marketing}"))
    (project / "schemas" / "marketing").mkdir()
    (project / "schemas" / "marketing" / "leads.yaml").write_text(
        "table: marketing.leads\ncolumns:\n  - {name: id, type: bigint}\n")
    assert main(["--project", str(project), "plan", "--base", "main", "--target", "dev", "--no-color"]) == 2
    out = capsys.readouterr().out
    assert "create table dev_marketing.leads" in out
