"""The library calls behind each command: desired state, live state, plan, apply.

The CLI parses arguments and picks exit codes; everything it does goes through these functions,
so a test (or another program) can drive schemaflow the same way. The JVM is started only when
live state is needed, and only once per process.
"""
from __future__ import annotations

import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any, TextIO

from schemaflow.errors import SchemaflowError
from schemaflow.model import Catalog
from schemaflow.plan.plan import Plan, build_plan
from schemaflow.project import Project
from schemaflow.spec import load_catalog


def desired_state(project: Project) -> Catalog:
    """The catalog the project's YAML declares; raises ``SpecError`` listing every problem."""
    return load_catalog(project.root, project.settings.databases)


@dataclass
class Live:
    """The live metastore of a project, connected on first use (or given, as tests do)."""

    project: Project
    connected: Any = None  # a catalog.metastore.Metastore
    progress: TextIO = sys.stderr

    @property
    def metastore(self):
        if self.connected is None:
            # Imported here: pyspark loads only when a command needs the live metastore.
            from schemaflow.catalog.metastore import Metastore
            from schemaflow.catalog.session import spark_session

            settings = self.project.settings
            where = settings.metastore_uri or f"the embedded metastore in {settings.derby_dir}"
            self.progress.write(f"Starting Spark ({settings.spark_master}) and connecting to {where} ...\n")
            self.progress.flush()
            self.connected = Metastore.connect(spark_session(settings))
        return self.connected

    def read(self, databases: tuple[str, ...]) -> Catalog:
        return self.metastore.read(databases)

    def target(self):
        """What the executor runs actions against: the metastore client and its Spark session."""
        return self.metastore


def make_plan(project: Project, live: Live, *, allow_destructive: bool = False) -> Plan:
    """Plan the project's desired state against its live metastore."""
    desired = desired_state(project)
    current = live.read(desired.databases)
    return build_plan(desired, current, allow_destructive=allow_destructive,
                      count_partitions=live.metastore.count_partitions)


def plan_against_snapshot(project: Project, snapshot: Path, *, allow_destructive: bool = False) -> Plan:
    """Plan against a saved live state, with no JVM: partition counts come from the snapshot if it has them."""
    from schemaflow.catalog.snapshot import load_snapshot

    desired = desired_state(project)
    saved = load_snapshot(snapshot)
    return build_plan(desired, saved.catalog.in_databases(desired.databases), allow_destructive=allow_destructive,
                      count_partitions=saved.partition_counts.get)


def load_plan(path: Path) -> Plan:
    import json

    try:
        return Plan.from_data(json.loads(path.read_text()))
    except FileNotFoundError:
        raise SchemaflowError(f"{path}: no such plan file; write one with schemaflow plan --out {path}")
    except (ValueError, KeyError, TypeError) as error:
        raise SchemaflowError(f"{path}: not a schemaflow plan ({error}); write one with schemaflow plan --out")
