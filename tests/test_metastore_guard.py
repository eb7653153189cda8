"""``metastore.guard``: compare-and-swap (the default) or the metastore's table lock, read from schemaflow.yaml and
reviewed as any setting. What each does against a server is in tests/test_metastore_releases.py (Hive 3.1, which has
no compare-and-swap) and tests/test_iceberg_remote.py (the lock Iceberg's commits take)."""
from __future__ import annotations

from pathlib import Path

import pytest

from schemaflow.errors import SchemaflowError
from schemaflow.plan.settings_changes import settings_steps
from schemaflow.project import load_project


def _project(tmp_path: Path, settings: str) -> Path:
    (tmp_path / "schemas").mkdir()
    (tmp_path / "schemaflow.yaml").write_text(settings)
    return tmp_path


@pytest.mark.parametrize(("settings", "locks"), [
    ("metastore: {uri: 'thrift://hms:9083', guard: lock}\n", True),
    ("metastore: {uri: 'thrift://hms:9083', guard: compare-and-swap}\n", False),
    ("metastore: {uri: 'thrift://hms:9083'}\n", False),
    ("databases: [a]\n", False)])
def test_the_guard_is_the_metastores_compare_and_swap_unless_the_settings_say_lock(tmp_path, settings, locks):
    assert load_project(_project(tmp_path, settings), env={}).settings.lock_guards is locks


def test_another_guard_is_refused_where_it_is_written(tmp_path):
    project = _project(tmp_path, "metastore:\n  uri: 'thrift://hms:9083'\n  guard: optimistic\n")
    with pytest.raises(SchemaflowError) as refused:
        load_project(project, env={})
    assert "schemaflow.yaml:3:10: " in str(refused.value) and "'optimistic'" in str(refused.value)
    assert "compare-and-swap" in str(refused.value) and "lock" in str(refused.value)


def test_guarding_by_the_lock_is_a_reviewed_step_that_says_what_it_gives_up():
    before = {"metastore": {"uri": "thrift://hms:9083"}}
    [step] = settings_steps(before, {"metastore": {"uri": "thrift://hms:9083", "guard": "lock"}})
    assert step.summary == "set metastore.guard in schemaflow.yaml"
    assert step.values == ('metastore.guard: (not set) -> "lock"',)
    assert step.hazards == ("guards each write with the metastore's table lock instead of its compare-and-swap: a "
                            "writer that alters a table without taking the lock (a plain Spark ALTER TABLE) is not seen",)
    [back] = settings_steps({"metastore": {"uri": "thrift://hms:9083", "guard": "lock"}}, before)
    assert back.summary == "remove metastore.guard in schemaflow.yaml" and back.hazards == ()
