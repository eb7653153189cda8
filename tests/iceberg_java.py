"""What Iceberg's own Java library reads of a table schemaflow committed through pyiceberg.

pyiceberg writes schemaflow's Iceberg commits and, elsewhere in the tests, reads them back: a metadata
file it accepts and Iceberg's Java library (what Spark, Trino and Flink read with) misreads would pass.
``read`` runs ``tests/IcebergRead.java`` on Iceberg's pinned runtime jar (``tests/artifacts.py``) and the
installed pyspark's Hadoop and Hive client jars (the metastore client of the server's line first, where it needs
one), against the metastore server the table is in.
"""
from __future__ import annotations

import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from tests.artifacts import files
from tests.metastore_server import java_binary, pyspark_jars, release_under_test

PROGRAM = Path(__file__).with_name("IcebergRead.java")
METASTORE_CLIENT = "hive-standalone-metastore-common-"  # the jar of Hive 3 and 4's metastore client


@dataclass(frozen=True)
class IcebergView:
    """A table as Iceberg's Java library loads it: schema, spec and sort order as its parsers write them."""
    schema: dict[str, Any]
    spec: dict[str, Any]
    sort: dict[str, Any]
    properties: dict[str, str]
    snapshots: int
    rows: tuple[str, ...]  # each Record as the library prints it, sorted

    def fields(self) -> list[tuple[int, str, str]]:
        """The schema's top-level fields: (field id, name, type)."""
        return [(f["id"], f["name"], f["type"]) for f in self.schema["fields"]]


def read(uri: str, key: str, timeout: float = 300.0) -> IcebergView:
    [runtime] = files("iceberg-java")
    # The metastore client of the server's line where Hive 2.3's cannot read it (Hive 4 removed the call it makes for a
    # table), before pyspark's; the rest of Hive stays 2.3's, as Iceberg's catalog reads HiveConf fields Hive 4 renamed.
    client = release_under_test().client
    hive = [str(jar) for jar in files(client[1]) if jar.name.startswith(METASTORE_CLIENT)] if client else []
    done = subprocess.run([java_binary(), "-cp", os.pathsep.join([str(runtime), *hive, f"{pyspark_jars()}/*"]),
                           str(PROGRAM), uri, key], capture_output=True, text=True, timeout=timeout,
                          stdin=subprocess.DEVNULL)
    if done.returncode != 0:
        raise AssertionError(f"Iceberg's Java library could not read {key} ({done.returncode}):\n{done.stderr[-4000:]}")
    said: dict[str, list[str]] = {}
    for line in done.stdout.splitlines():
        kind, _, value = line.partition(" ")
        said.setdefault(kind, []).append(value)
    return IcebergView(json.loads(said["schema"][0]), json.loads(said["spec"][0]), json.loads(said["sort"][0]),
                       dict(p.split("=", 1) for p in said.get("property", [])), int(said["snapshots"][0]),
                       tuple(said.get("row", [])))
