"""Pinned components from Maven Central, fetched once into a cache and checked, for the tests to start.

The tests start what no Python package carries (the Hive metastore servers of the 3.1 and 4.0 lines and
the Hadoop jars they expect beside them, Iceberg's Spark runtime, PostgreSQL's JDBC driver). ``tests/artifacts.lock`` pins each by its path in the
repository and its SHA-256; ``files(name)`` returns the named set's files, downloading only those not
yet in the cache, each to a temporary name, checked, then renamed, so a second run downloads nothing
and a failed or altered download never counts as fetched. Test processes running side by side take a
lock per file. schemaflow itself never downloads anything: only these tests do.

``SCHEMAFLOW_TEST_CACHE`` moves the cache (default ``$XDG_CACHE_HOME/schemaflow-tests``, else
``~/.cache/schemaflow-tests``); ``SCHEMAFLOW_MAVEN_MIRROR`` names a mirror of Maven Central.
"""
from __future__ import annotations

import fcntl
import hashlib
import os
import re
import tarfile
import urllib.request
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from pathlib import Path

LOCK_FILE = Path(__file__).with_name("artifacts.lock")
MAVEN_CENTRAL = "https://repo1.maven.org/maven2/"
CHUNK = 1 << 20
SHA256 = re.compile(r"[0-9a-f]{64}")


@dataclass(frozen=True)
class Artifact:
    """One pinned file: its path under the repository and the SHA-256 it must have."""
    path: str
    sha256: str


def pinned(text: str) -> dict[str, tuple[Artifact, ...]]:
    """The sets of a lock file's text: ``[name]`` lines, each followed by ``path sha256`` lines."""
    sets: dict[str, list[Artifact]] = {}
    current: list[Artifact] | None = None
    for number, line in enumerate(text.splitlines(), 1):
        line = line.strip()
        if not line or line.startswith("#"):
            continue
        if line.startswith("[") and line.endswith("]"):
            current = sets.setdefault(line[1:-1], [])
            continue
        parts = line.split()
        if current is None or len(parts) != 2 or not SHA256.fullmatch(parts[1]) or ".." in parts[0].split("/"):
            raise ValueError(f"{LOCK_FILE.name}:{number}: expected '[set]' or 'path sha256', found {line!r}")
        current.append(Artifact(parts[0], parts[1]))
    return {name: tuple(artifacts) for name, artifacts in sets.items()}


def cache_dir(environ: Mapping[str, str] = os.environ) -> Path:
    """Where fetched files are kept between runs."""
    if "SCHEMAFLOW_TEST_CACHE" in environ:
        return Path(environ["SCHEMAFLOW_TEST_CACHE"])
    return Path(environ.get("XDG_CACHE_HOME") or Path.home() / ".cache") / "schemaflow-tests"


def files(name: str, cache: Path | None = None, repository: str | None = None) -> tuple[Path, ...]:
    """The set ``name``'s files in the cache, each fetched and checked first if it is not there yet."""
    artifacts = pinned(LOCK_FILE.read_text())[name]
    return tuple(fetch(artifact, cache or cache_dir(), repository or os.environ.get(
        "SCHEMAFLOW_MAVEN_MIRROR", MAVEN_CENTRAL)) for artifact in artifacts)


def fetch(artifact: Artifact, cache: Path, repository: str) -> Path:
    """The artifact's file in ``cache``: downloaded from ``repository`` and checked when it is not there."""
    target = cache / artifact.path
    if target.is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        if target.is_file():  # another test process fetched it while this one waited
            return target
        url = repository.rstrip("/") + "/" + artifact.path
        partial = target.with_name(target.name + ".part")
        digest = hashlib.sha256()
        try:
            with urllib.request.urlopen(url, timeout=60) as answer, partial.open("wb") as out:
                while chunk := answer.read(CHUNK):
                    digest.update(chunk)
                    out.write(chunk)
        except OSError as error:
            partial.unlink(missing_ok=True)
            raise RuntimeError(f"cannot fetch {url} for the tests: {error}; the tests that start this component "
                               f"need it once (then it is kept in {cache})") from error
        if digest.hexdigest() != artifact.sha256:
            partial.unlink()
            raise RuntimeError(f"{url} has SHA-256 {digest.hexdigest()}, not the {artifact.sha256} "
                               f"{LOCK_FILE.name} pins: refusing it")
        os.replace(partial, target)
    return target


def unpacked(archive: Path) -> Path:
    """The folder a fetched ``.tar.gz`` unpacks into, beside it (unpacked once; its one top folder)."""
    folder = archive.with_name(archive.name.removesuffix(".tar.gz"))
    done = folder / ".unpacked"
    if not done.exists():
        with _locked(folder):
            if not done.exists():
                with tarfile.open(archive) as tar:
                    tar.extractall(folder, filter="data")
                done.touch()
    [top] = [child for child in folder.iterdir() if child.is_dir()]
    return top


@contextmanager
def _locked(path: Path) -> Iterator[None]:
    """An exclusive lock beside ``path``, held by one test process at a time."""
    with path.with_name(path.name + ".lock").open("w") as lock:
        fcntl.flock(lock, fcntl.LOCK_EX)
        yield
