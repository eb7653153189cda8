"""The pinned components the tests fetch: checked, kept, fetched once; and the lock file as written."""
from __future__ import annotations

import hashlib
import http.server
import io
import re
import tarfile
import threading
from collections.abc import Iterator
from pathlib import Path

import pytest

from tests.artifacts import LOCK_FILE, Artifact, cache_dir, fetch, pinned, unpacked


class Repository(http.server.ThreadingHTTPServer):
    """A Maven-like repository on loopback serving ``files`` by path, counting what it served."""

    def __init__(self, files: dict[str, bytes]) -> None:
        self.files, self.served = files, []

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(handler) -> None:  # noqa: N802 - the name http.server calls
                path = handler.path.lstrip("/")
                self.served.append(path)
                body = self.files.get(path)
                handler.send_response(200 if body is not None else 404)
                handler.end_headers()
                handler.wfile.write(body or b"")

            def log_message(handler, *args: object) -> None:
                pass

        super().__init__(("127.0.0.1", 0), Handler)

    @property
    def url(self) -> str:
        return f"http://127.0.0.1:{self.server_address[1]}/"


@pytest.fixture
def repository() -> Iterator[Repository]:
    server = Repository({"org/x/x/1/x-1.jar": b"jar bytes"})
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    yield server
    server.shutdown()


JAR = Artifact("org/x/x/1/x-1.jar", hashlib.sha256(b"jar bytes").hexdigest())


def test_a_file_is_fetched_checked_and_kept_so_the_second_run_downloads_nothing(repository, tmp_path):
    first = fetch(JAR, tmp_path, repository.url)
    assert first == tmp_path / "org/x/x/1/x-1.jar" and first.read_bytes() == b"jar bytes"
    assert fetch(JAR, tmp_path, repository.url) == first
    assert repository.served == ["org/x/x/1/x-1.jar"]
    assert sorted(p.name for p in first.parent.iterdir()) == ["x-1.jar", "x-1.jar.lock"]


def test_a_file_whose_digest_differs_from_the_pin_is_refused_and_not_kept(repository, tmp_path):
    altered = Artifact(JAR.path, "0" * 64)
    with pytest.raises(RuntimeError, match=f"has SHA-256 {JAR.sha256}, not the {'0' * 64} artifacts.lock pins"):
        fetch(altered, tmp_path, repository.url)
    assert not (tmp_path / JAR.path).exists() and not (tmp_path / (JAR.path + ".part")).exists()


def test_a_file_the_repository_lacks_says_what_and_where_it_is_kept(repository, tmp_path):
    with pytest.raises(RuntimeError, match=r"cannot fetch http://127\.0\.0\.1:\d+/org/y/y-1\.jar for the tests: "
                                           r"HTTP Error 404.*then it is kept in "):
        fetch(Artifact("org/y/y-1.jar", "1" * 64), tmp_path, repository.url)


def test_an_archive_unpacks_once_into_its_top_folder(tmp_path):
    archive = tmp_path / "dist-1-bin.tar.gz"
    with tarfile.open(archive, "w:gz") as tar:
        data = b"#!/bin/sh\n"
        entry = tarfile.TarInfo("dist-1/bin/start")
        entry.size = len(data)
        tar.addfile(entry, io.BytesIO(data))
    top = unpacked(archive)
    assert top == tmp_path / "dist-1-bin" / "dist-1" and (top / "bin" / "start").read_bytes() == data
    (top / "bin" / "start").write_bytes(b"changed")
    assert unpacked(archive) == top and (top / "bin" / "start").read_bytes() == b"changed"  # not unpacked again


def test_the_lock_file_pins_every_set_the_servers_need_by_digest():
    sets = pinned(LOCK_FILE.read_text())
    assert sorted(sets) == ["delta-spark", "delta-spark-4.2", "hadoop", "hive-client-4.0", "hive-metastore-3.1", "hive-metastore-4.0",
                            "iceberg-java", "iceberg-rest-server", "postgresql-jdbc"]
    assert [a.path.rsplit("/", 1)[1] for a in sets["delta-spark"]] == ["delta-spark_2.12-3.3.2.jar",
                                                                      "delta-storage-3.3.2.jar"]
    assert [a.path.rsplit("/", 1)[1] for a in sets["hive-metastore-3.1"] + sets["hive-metastore-4.0"]] == [
        "hive-standalone-metastore-3.1.3-bin.tar.gz", "hive-standalone-metastore-server-4.0.1-bin.tar.gz"]
    # A file two sets need (Hive 4's client shares two jars with Hadoop, Iceberg's REST server three) is pinned alike
    # in both, and fetched once.
    every = [artifact for artifacts in sets.values() for artifact in artifacts]
    assert len({a.path for a in every}) == len(every) - 5
    assert len({(a.path, a.sha256) for a in every}) == len({a.path for a in every})


@pytest.mark.parametrize("line", ["org/x.jar", "org/x.jar abc", "org/x.jar " + "A" * 64, "../../etc/passwd " + "0" * 64])
def test_a_lock_line_that_is_not_a_path_and_a_digest_is_refused_at_its_line(line):
    with pytest.raises(ValueError, match=r"^artifacts\.lock:3: expected '\[set\]' or 'path sha256'"):
        pinned(f"# pins\n[set]\n{line}\n")


def test_the_cache_is_the_users_unless_the_run_names_another():
    assert cache_dir({"SCHEMAFLOW_TEST_CACHE": "/c"}) == Path("/c")
    assert cache_dir({"XDG_CACHE_HOME": "/x"}) == Path("/x/schemaflow-tests")
    assert cache_dir({}) == Path.home() / ".cache" / "schemaflow-tests"


def test_the_engine_is_pinned_by_hash_and_installed_once(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    from tests import spark_engine

    lines = [line for line in spark_engine.REQUIREMENTS.read_text().splitlines() if line and not line.startswith("#")]
    assert [line.split("==")[0] for line in lines] == ["pyspark", "py4j"]
    assert all(re.fullmatch(r"[a-z0-9]+==[\d.]+ --hash=sha256:[0-9a-f]{64}", line) for line in lines)
    assert spark_engine.ENGINE == "pyspark-" + lines[0].split("==")[1].split()[0]
    # Installed (its marker written last), it is used as it is: nothing runs pip again.
    home = tmp_path / "engines" / spark_engine.ENGINE
    home.mkdir(parents=True)
    (home / spark_engine.INSTALLED).write_text("")
    monkeypatch.setattr(spark_engine.subprocess, "run", lambda *a, **k: pytest.fail("pip ran again"))
    assert spark_engine.engine_home(tmp_path) == home
