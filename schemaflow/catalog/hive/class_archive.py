"""The JVM's archive of the classes Spark loads (class data sharing), kept between runs.

A JVM that maps such an archive starts Spark in about 5 s instead of 8.5 on two cores (measured):
it finds thousands of classes loaded, verified and linked already. Java 17 writes the archive when a
JVM exits (``-XX:ArchiveClassesAtExit``) and maps it when one starts (``-XX:SharedArchiveFile``); a
JVM that finds it missing, or made by another JVM or class path, starts as usual without it.

Where there is none, the first session of a process that ends soon (the command line, which calls
``write_at_exit``) asks its JVM to write one, to a file of its own, unless another process is
writing one already. When the process exits, that JVM is stopped and waited for (the writing
takes about 10 s, once), and only then does the file take the archive's name: a JVM killed while
writing leaves nothing in use. A long-lived process (a notebook, a test run) only uses an archive. The
archive's name is a digest of pyspark's installation, then of what else the JVM's class path and
classes come from (the ``java`` that ``spark-submit`` runs, pyspark's version, the settings and
folders that add to the class path), so a change to any of them makes a new one, and the installation's
old one is removed: one archive per installation (each is 110-180 MB). Other installations' (other virtual
environments) are never evicted by this one's: each installation's folder is recorded beside its archive
(``spark-<installation>.environment``), and a new archive removes only those of installations whose folder is gone
(a virtual environment deleted), and any that no record names (an older schemaflow's).

``SCHEMAFLOW_CLASS_ARCHIVE`` names the folder, or is ``off``. By default it is the user's cache
(``$XDG_CACHE_HOME/schemaflow``, else ``~/.cache/schemaflow``), except in CI (``CI`` set), whose
machines seldom live to a second run: there, every run would pay for the writing.
"""
from __future__ import annotations

import hashlib
import json
import os
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Any
from collections.abc import Mapping

from schemaflow.catalog.hive.spark_home import java, spark_home
from schemaflow.processes import alive

ARCHIVE_SETTING = "SCHEMAFLOW_CLASS_ARCHIVE"
# What adds to the driver JVM's class path besides pyspark's jars (spark-class and the launcher read them).
CLASS_PATH_SETTINGS = ("spark.driver.extraClassPath",)
CLASS_PATH_VARIABLES = ("SPARK_CONF_DIR", "HADOOP_CONF_DIR", "YARN_CONF_DIR", "SPARK_DIST_CLASSPATH")
# Java options of the user's that already choose what the JVM shares: then schemaflow adds none.
SHARING_OPTIONS = ("-Xshare", "SharedArchiveFile", "ArchiveClassesAtExit")
PREFIX, SUFFIX, PART, RECORD = "spark-", ".jsa", ".part", ".environment"
EXIT_SECONDS = 120  # how long the process waits at its exit for the JVM to write the archive
_writing_allowed = False


def write_at_exit() -> None:
    """Let this process's Spark session write the archive where there is none: for a process that ends soon."""
    global _writing_allowed
    _writing_allowed = True


@dataclass(frozen=True)
class ClassArchive:
    """The archive for this JVM: ``path`` when it exists, else ``writing``, where this session's JVM writes it."""

    path: Path
    writing: Path | None = None

    @property
    def option(self) -> str:
        if self.writing is not None:
            return f"-XX:ArchiveClassesAtExit={self.writing}"
        return f"-XX:SharedArchiveFile={self.path}"

    def finish(self, process: Any) -> None:
        """After the JVM ``process`` (a ``subprocess.Popen``) has been told to stop: wait for it to write the
        archive, then give the archive its name and remove older ones (or, if it failed, the part written)."""
        if self.writing is None:
            return
        try:
            code = process.wait(timeout=EXIT_SECONDS)
        except subprocess.TimeoutExpired:  # still writing: leave it, a later run cleans up
            return
        if code == 0 and self.writing.exists():
            os.replace(self.writing, self.path)
            _record(self.path)
            folder = self.path.parent
            for other in folder.glob(f"{PREFIX}*{SUFFIX}"):
                if other != self.path and (_installation(other) == _installation(self.path)
                                           or not _installed(folder, _installation(other))):
                    other.unlink(missing_ok=True)
            for record in folder.glob(f"{PREFIX}*{RECORD}"):
                if not _installed(folder, record.name[len(PREFIX):-len(RECORD)]):
                    record.unlink(missing_ok=True)
        else:
            self.writing.unlink(missing_ok=True)


def class_archive(conf: Mapping[str, str], environ: Mapping[str, str] = os.environ) -> ClassArchive | None:
    """The archive a new session with Spark configuration ``conf`` uses or writes; None when it shares nothing
    (turned off, in CI by default, the user's own sharing options, no ``java`` found, no folder to write in)."""
    folder = _folder(environ)
    java = _java(environ)
    if folder is None or java is None or any(o in conf.get("spark.driver.extraJavaOptions", "")
                                             for o in SHARING_OPTIONS):
        return None
    path = folder / f"{PREFIX}{_digest(java, conf, environ)}{SUFFIX}"
    if path.exists():
        return ClassArchive(path)
    if not _writing_allowed:
        return None
    try:
        folder.mkdir(parents=True, exist_ok=True)
    except OSError:
        return None
    if _being_written(folder, path.name):
        return None
    return ClassArchive(path, writing=folder / f"{path.name}.{os.getpid()}{PART}")


def _folder(environ: Mapping[str, str]) -> Path | None:
    setting = environ.get(ARCHIVE_SETTING, "")
    if setting.lower() == "off" or (not setting and environ.get("CI")):
        return None
    if setting:
        return Path(setting)
    cache = environ.get("XDG_CACHE_HOME") or (str(Path(environ["HOME"]) / ".cache") if environ.get("HOME") else "")
    return Path(cache) / "schemaflow" if cache else None


def _java(environ: Mapping[str, str]) -> Path | None:
    """The ``java`` that ``spark-submit`` runs, as a real path (None: there is none)."""
    found = java(environ)
    return found.resolve() if found is not None and found.exists() else None


def _digest(java: Path, conf: Mapping[str, str], environ: Mapping[str, str]) -> str:
    """``<installation>-<the rest>``: pyspark's folder, then the java, version, Spark installation (the operator's
    ``SPARK_HOME`` or pyspark's folder, whether or not ``SPARK_HOME`` is set yet) and class path settings."""
    import pyspark

    status = java.stat()
    content = {"java": [str(java), status.st_size, status.st_mtime_ns], "pyspark": pyspark.__version__,
               "spark_home": str(spark_home(environ)), "settings": {key: conf.get(key) for key in CLASS_PATH_SETTINGS},
               "environment": {name: environ.get(name) for name in CLASS_PATH_VARIABLES}}
    return f"{_short(str(Path(pyspark.__file__).parent))}-{_short(json.dumps(content, sort_keys=True))}"


def _installation(archive: Path) -> str:
    """The digest of the pyspark folder whose archive ``archive`` is (``_digest``)."""
    return archive.name[len(PREFIX):].split("-", 1)[0]


def _record(archive: Path) -> None:
    """Record beside ``archive`` the folder of this process's pyspark, whose archive it is."""
    import pyspark

    record = archive.with_name(f"{PREFIX}{_installation(archive)}{RECORD}")
    written = record.with_name(f"{record.name}.{os.getpid()}")
    written.write_text(str(Path(pyspark.__file__).parent))
    written.replace(record)


def _installed(folder: Path, installation: str) -> bool:
    """Whether the pyspark folder recorded for ``installation`` in ``folder`` is there (False: none is recorded)."""
    try:
        return Path((folder / f"{PREFIX}{installation}{RECORD}").read_text()).is_dir()
    except (OSError, ValueError):  # no record, or one that names no path
        return False


def _short(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()[:12]


def _being_written(folder: Path, name: str) -> bool:
    """Whether a running process writes the archive ``name``; parts whose writers are gone (killed while
    writing), never complete and never used, are removed."""
    writing = False
    for part in folder.glob(f"{PREFIX}*{PART}"):
        pid = part.name[:-len(PART)].rsplit(".", 1)[-1]
        if pid.isdigit() and alive(int(pid)):
            writing = writing or part.name.startswith(name)
        else:
            part.unlink(missing_ok=True)
    return writing

