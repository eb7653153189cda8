"""The JVM's class archive: where it is kept, when a session writes it, and that a JVM really maps it."""
from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest

from schemaflow.catalog.hive import class_archive
from schemaflow.catalog.hive.class_archive import ARCHIVE_SETTING, PART, ClassArchive
from schemaflow.code_settings import APPROVAL_VARIABLE, OPERATOR_PATHS_VARIABLE, code_settings

JAVA_OPTIONS = "spark.driver.extraJavaOptions"


@pytest.fixture
def writing(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(class_archive, "_writing_allowed", True)


def environ(folder: Path, **more: str) -> dict[str, str]:
    return {**os.environ, ARCHIVE_SETTING: str(folder), **more}


def test_the_first_session_of_a_short_process_writes_it_to_a_part_file_of_its_own(tmp_path, writing):
    archive = class_archive.class_archive({}, environ(tmp_path))
    assert archive is not None and archive.writing is not None
    assert archive.writing.parent == archive.path.parent == tmp_path
    assert archive.writing.name == f"{archive.path.name}.{os.getpid()}{PART}"
    assert archive.option == f"-XX:ArchiveClassesAtExit={archive.writing}"


def test_a_long_lived_process_only_uses_an_archive_that_exists(tmp_path):
    assert class_archive.class_archive({}, environ(tmp_path)) is None
    with pytest.MonkeyPatch.context() as patch:
        patch.setattr(class_archive, "_writing_allowed", True)
        path = class_archive.class_archive({}, environ(tmp_path)).path  # type: ignore[union-attr]
    path.write_bytes(b"archive")
    assert class_archive.class_archive({}, environ(tmp_path)) == ClassArchive(path)
    assert ClassArchive(path).option == f"-XX:SharedArchiveFile={path}"


def test_it_is_off_when_asked_in_ci_by_default_and_when_the_user_chooses_sharing(tmp_path, writing):
    assert class_archive.class_archive({}, environ(tmp_path, **{ARCHIVE_SETTING: "off"})) is None
    in_ci = {k: v for k, v in environ(tmp_path, CI="true").items() if k != ARCHIVE_SETTING}
    assert class_archive.class_archive({}, in_ci) is None
    assert class_archive.class_archive({}, environ(tmp_path, CI="true")) is not None  # named: kept there
    for option in ("-Xshare:off", "-XX:SharedArchiveFile=/mine.jsa"):
        assert class_archive.class_archive({JAVA_OPTIONS: f"-Da=b {option}"}, environ(tmp_path)) is None


def test_by_default_it_is_kept_in_the_user_s_cache(tmp_path, writing):
    plain = {k: v for k, v in os.environ.items() if k not in (ARCHIVE_SETTING, "CI", "XDG_CACHE_HOME")}
    found = class_archive.class_archive({}, {**plain, "HOME": str(tmp_path)})
    assert found is not None and found.path.parent == tmp_path / ".cache" / "schemaflow"
    found = class_archive.class_archive({}, {**plain, "XDG_CACHE_HOME": str(tmp_path / "xdg")})
    assert found is not None and found.path.parent == tmp_path / "xdg" / "schemaflow"


def test_another_class_path_makes_another_archive(tmp_path, writing):
    one = class_archive.class_archive({}, environ(tmp_path))
    other = class_archive.class_archive({"spark.driver.extraClassPath": "/opt/lib/*"}, environ(tmp_path))
    conf_dir = class_archive.class_archive({}, environ(tmp_path, SPARK_CONF_DIR="/etc/spark"))
    assert one is not None and other is not None and conf_dir is not None
    assert len({one.path, other.path, conf_dir.path}) == 3


def test_none_is_written_while_a_running_process_writes_it_and_a_dead_writer_s_part_is_removed(tmp_path, writing):
    mine = class_archive.class_archive({}, environ(tmp_path))
    assert mine is not None and mine.writing is not None
    running = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
    try:
        other = tmp_path / f"{mine.path.name}.{running.pid}{PART}"
        other.write_bytes(b"half")
        assert class_archive.class_archive({}, environ(tmp_path)) is None
    finally:
        running.kill()
        running.wait()
    assert class_archive.class_archive({}, environ(tmp_path)) == mine
    assert not other.exists()


class Ended:
    def __init__(self, code: int) -> None:
        self.code = code

    def wait(self, timeout: float) -> int:
        return self.code


def test_only_a_jvm_that_ended_well_gives_its_archive_the_name_and_its_installation_s_older_ones_go(tmp_path, writing):
    archive = class_archive.class_archive({}, environ(tmp_path))
    assert archive is not None and archive.writing is not None
    installation = archive.path.name.split("-")[1]
    older = tmp_path / f"spark-{installation}-0123456789ab.jsa"  # this pyspark's, made for another java
    older.write_bytes(b"older")
    elsewhere = tmp_path / "spark-ba9876543210-0123456789ab.jsa"  # another virtual environment's, which is there
    elsewhere.write_bytes(b"theirs")
    theirs = tmp_path / "spark-ba9876543210.environment"
    theirs.write_text(str(tmp_path))
    archive.writing.write_bytes(b"half")
    archive.finish(Ended(137))
    assert not archive.writing.exists() and not archive.path.exists() and older.exists()

    archive.writing.write_bytes(b"whole")
    archive.finish(Ended(0))
    assert archive.path.read_bytes() == b"whole"
    mine = tmp_path / f"spark-{installation}.environment"
    assert sorted(tmp_path.iterdir()) == sorted([archive.path, mine, elsewhere, theirs])


@pytest.mark.spark
def test_a_command_leaves_the_archive_and_the_next_command_s_jvm_maps_spark_s_classes_from_it(tmp_path):
    project = tmp_path / "project"
    (project / "schemas").mkdir(parents=True)
    folder = tmp_path / "archive"
    env = {**os.environ, ARCHIVE_SETTING: str(folder)}

    def snapshot(*settings: str) -> str:
        (project / "schemaflow.yaml").write_text("".join(settings))
        done = subprocess.run([sys.executable, "-m", "schemaflow", "snapshot", "--out", str(tmp_path / "live.json")],
                              cwd=project, env=env, capture_output=True, text=True, timeout=300)
        assert done.returncode == 0, done.stderr
        return done.stderr

    # A Spark session on the embedded metastore, whose JVM writes the archive as the command ends, saying so.
    said = snapshot().splitlines()
    assert said[-2].startswith("Writing the JVM's class archive for faster Spark starts, once for this environment")
    assert said[-1].startswith("Written in ") and said[-1].endswith(" s: later commands start Spark faster.")
    [archive] = folder.glob("*.jsa")
    assert archive.name.startswith("spark-") and archive.stat().st_size > 10_000_000
    # ... and beside it, which environment it is of (so environments do not evict each other's).
    [record] = folder.glob("*.environment")
    assert sorted(folder.iterdir()) == sorted([archive, record]) and Path(record.read_text()).is_dir()

    loaded = tmp_path / "classes.log"
    logging = f"-Xlog:class+load=info:file={loaded}"
    env[APPROVAL_VARIABLE] = code_settings((), {JAVA_OPTIONS: logging})[0].id  # a JVM option runs only as approved
    env[OPERATOR_PATHS_VARIABLE] = str(tmp_path)  # ... and names a file outside the project only in the operator's
    assert "class archive" not in snapshot(f"spark: {{conf: {{{JAVA_OPTIONS}: '{logging}'}}}}\n")
    spark_classes = [line for line in loaded.read_text().splitlines() if " org.apache.spark.SparkContext " in line]
    assert spark_classes and "source: shared objects file (top)" in spark_classes[0], spark_classes
    assert sorted(folder.iterdir()) == sorted([archive, record])  # used, not written again

