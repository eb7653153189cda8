"""The CI trust boundary against a real Spark and metastore: what the JVM loads, and hooks once approved."""
from __future__ import annotations

import os
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest

from schemaflow.code_settings import APPROVAL_VARIABLE
from schemaflow.project import load_project
from tests.gitrepos import commit, init_repo
from tests.inprocess import schemaflow

ROOT = Path(__file__).resolve().parent.parent

# Starts Spark as schemaflow does for the project in sys.argv[3], and says what its driver can load and where
# it runs (the project's folder, whatever folder schemaflow runs in).
PROBE = """
import sys
from schemaflow.catalog.hive.session import spark_session
from schemaflow.project import Settings
spark = spark_session(Settings(derby_dir=sys.argv[1], warehouse_dir=sys.argv[2], root=sys.argv[3]))
jvm = spark._jvm
path = jvm.System.getProperty("java.class.path").split(":")
print("relative:", [entry for entry in path if not entry.startswith("/")])
print("probe:", jvm.Thread.currentThread().getContextClassLoader().getResource("schemaflow-probe.txt"))
print("cwd:", jvm.System.getProperty("user.dir"))
"""


@pytest.mark.spark
def test_a_jar_committed_as_hive_jackson_is_not_on_the_drivers_class_path(tmp_path: Path):
    """Spark's launcher puts the relative ``hive-jackson/*`` first on the driver's class path: a jar a pull
    request commits there would be loaded (a SparkSessionExtensionsProvider runs at getOrCreate)."""
    checkout = tmp_path / "checkout"
    (checkout / "hive-jackson").mkdir(parents=True)
    with zipfile.ZipFile(checkout / "hive-jackson" / "x.jar", "w") as jar:
        jar.writestr("META-INF/services/org.apache.spark.sql.SparkSessionExtensionsProvider", "com.example.Evil\n")
        jar.writestr("schemaflow-probe.txt", "loaded")
    env = {**os.environ, "PYTHONPATH": str(ROOT), "SCHEMAFLOW_CLASS_ARCHIVE": "off"}
    ran = subprocess.run([sys.executable, "-c", PROBE, str(tmp_path / "state"), str(tmp_path / "warehouse"),
                          str(checkout)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=300)
    assert ran.returncode == 0, ran.stderr
    # The JVM runs in the project's folder (a relative path in a setting is the project's file, whose content an
    # approval covers), and still loads nothing from a relative class path there.
    assert ran.stdout.splitlines() == ["relative: []", "probe: None", f"cwd: {checkout}"]


@pytest.mark.spark
def test_an_approved_hook_runs_after_apply_without_the_jobs_secrets(tmp_path, metastore, fresh_db, monkeypatch):
    db = fresh_db()
    project = tmp_path / "repo"
    repo = init_repo(project)
    (project / "schemas" / db).mkdir(parents=True)
    (project / "schemas" / db / ".gitkeep").write_text("")
    (project / "schemaflow.yaml").write_text(f"databases: [{db}]\n")
    commit(repo, "main")
    (project / "schemas" / db / "t.yaml").write_text(f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n")
    (project / "schemaflow.yaml").write_text(f"databases: [{db}]\nafter_apply: ['cd && env > hook-env.txt']\n")
    commit(repo, "a table, and a hook")
    monkeypatch.chdir(project)
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "fake-secret-of-the-job")
    assert schemaflow("plan", "--base", "HEAD~1", "--head", "HEAD", "--out", "reviewed.json").code == 2

    refused = schemaflow("apply", "--reviewed", "reviewed.json", "--auto-approve")
    assert refused.code == 1 and "the operator has not approved them; nothing was run" in refused.err
    assert f"{db}.t" not in metastore.read((db,)).objects
    assert not (project / ".schemaflow" / "hooks" / "hook-env.txt").exists()

    [hook] = load_project(project, env={}).settings.code
    monkeypatch.setenv(APPROVAL_VARIABLE, hook.id)
    applied = schemaflow("apply", "--reviewed", "reviewed.json", "--auto-approve")
    assert applied.code == 0, applied.said
    assert f"{db}.t" in metastore.read((db,)).objects
    environment = (project / ".schemaflow" / "hooks" / "hook-env.txt").read_text()  # the hooks' own folder (HOME)
    assert f"SCHEMAFLOW_CHANGED={db}.t\n" in environment and "PATH=" in environment
    assert "fake-secret-of-the-job" not in environment and APPROVAL_VARIABLE not in environment


@pytest.mark.spark
def test_plan_against_the_metastore_shows_the_settings_changed_since_the_last_apply(tmp_path, metastore, fresh_db,
                                                                                   monkeypatch):
    import json

    from schemaflow.model import SETTINGS_KEY
    from schemaflow.plan.settings_changes import settings_digest

    db = fresh_db()
    project = tmp_path / "repo"
    repo = init_repo(project)
    (project / "schemas" / db).mkdir(parents=True)
    (project / "schemas" / db / "t.yaml").write_text(f"table: {db}.t\ncolumns: [{{name: a, type: int}}]\n")
    (project / "schemaflow.yaml").write_text(f"databases: [{db}]\ninvalidation: strict\n")
    applied_from = commit(repo, "main")
    monkeypatch.chdir(project)
    first = schemaflow("plan")  # nothing recorded here yet: nothing to compare the settings with
    assert first.code == 2 and first.out.splitlines()[0] == "1 step on 1 object, 0 destructive.", first.out
    assert schemaflow("apply", "--auto-approve").code == 0  # ... and its last step records them
    record = json.loads(metastore.database(db).properties[SETTINGS_KEY])  # read back from the metastore
    assert record == {"commit": applied_from, "digest": settings_digest(load_project(project, env={}).settings.declared),
                      "parts": 1}
    assert schemaflow("plan").out.startswith("No changes")

    (project / "schemaflow.yaml").write_text(f"databases: [{db}]\ninvalidation: cascade\n"
                                             "after_apply: ['echo refreshed']\n")
    commit(repo, "a hook, and cascade")
    changed = schemaflow("plan")
    assert changed.code == 2
    assert changed.out.splitlines()[0] == "2 steps on 2 settings, 0 destructive, 1 hazardous."
    assert "~ 1. set after_apply in schemaflow.yaml" in changed.out
    assert '     invalidation: "strict" -> "cascade"' in changed.out  # the old value, from git at the recorded commit
    [hook] = load_project(project, env={}).settings.code
    assert schemaflow("--approve-code", hook.id, "apply", "--auto-approve").code == 0
    assert schemaflow("plan").out.startswith("No changes")
