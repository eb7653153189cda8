"""The class-archive cache is per environment: an environment's new archive never evicts another's that is still
installed; it removes its own older one, those of environments deleted since, and those no record names."""
from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pyspark
import pytest

from schemaflow.catalog.hive import class_archive
from schemaflow.catalog.hive.class_archive import ARCHIVE_SETTING


@pytest.fixture
def writing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(class_archive, "_writing_allowed", True)


def test_environments_keep_their_archives_and_one_deleted_loses_its_own(tmp_path: Path, writing):
    cache = tmp_path / "cache"
    cache.mkdir()
    environments = [tmp_path / f"venv{n}" for n in range(5)]  # other virtual environments, each with its archive
    archives = []
    for n, environment in enumerate(environments):
        environment.mkdir()
        archives.append(cache / f"spark-{n:012d}-0123456789ab.jsa")
        archives[-1].write_bytes(b"theirs")
        (cache / f"spark-{n:012d}.environment").write_text(str(environment))
    shutil.rmtree(environments[0])  # a virtual environment deleted
    unrecorded = cache / "spark-ffffffffffff-0123456789ab.jsa"  # an older schemaflow's, which recorded none
    unrecorded.write_bytes(b"old")

    archive = class_archive.class_archive({}, {**os.environ, ARCHIVE_SETTING: str(cache)})
    assert archive is not None and archive.writing is not None
    mine = archive.path.name.split("-")[1]
    older = cache / f"spark-{mine}-0123456789ab.jsa"  # this environment's, made for another java
    older.write_bytes(b"older")
    archive.writing.write_bytes(b"whole")
    archive.finish(subprocess.Popen([sys.executable, "-c", ""]))  # a JVM that wrote it and ended well

    record = cache / f"spark-{mine}.environment"
    assert sorted(cache.iterdir()) == sorted([archive.path, record, *archives[1:],
                                              *[cache / f"spark-{n:012d}.environment" for n in range(1, 5)]])
    assert record.read_text() == str(Path(pyspark.__file__).parent)
    assert archive.path.read_bytes() == b"whole"
