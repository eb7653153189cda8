"""Iceberg's own REST catalog server for tests: ``RESTCatalogServer`` from Iceberg's test fixtures, no Docker.

The server and what it runs on are the ``[iceberg-rest-server]`` set of ``tests/artifacts.lock`` (fetched once into
the cache, ``tests/artifacts.py``). It is configured through the environment, as Iceberg's ``RCKUtils`` maps it
(``CATALOG_X_Y`` becomes the catalog property ``x.y``, ``__`` a ``-``): a free port, a ``file://`` warehouse and a JdbcCatalog on a
SQLite database, both in the server's own directory. It is ready when ``GET /v1/config`` answers. Used as a
context manager, it is stopped, with everything it started, on exit.
"""
from __future__ import annotations

import os
import subprocess
import time
import urllib.error
import urllib.request
from pathlib import Path
from types import TracebackType
from collections.abc import Sequence

from tests.artifacts import files
from tests.metastore_server import free_port, java_binary, stop_group

MAIN_CLASS = "org.apache.iceberg.rest.RESTCatalogServer"
ARTIFACTS = "iceberg-rest-server"


class RestCatalogServer:
    """A REST catalog server in ``workdir``: ``with RestCatalogServer(dir) as server: server.uri``."""

    def __init__(self, workdir: Path, timeout: float = 120.0, java_options: Sequence[str] = ()) -> None:
        self.workdir = workdir
        self.timeout = timeout
        self.java_options = list(java_options)
        self.port = free_port()
        self.log = workdir / "server.log"
        self.startup_seconds: float | None = None
        self._process: subprocess.Popen[bytes] | None = None

    @property
    def uri(self) -> str:
        return f"http://127.0.0.1:{self.port}"

    @property
    def warehouse(self) -> Path:
        return self.workdir / "warehouse"

    def __enter__(self) -> RestCatalogServer:
        self.start()
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        self.stop()

    def start(self) -> None:
        """Start the server and wait until it answers ``GET /v1/config``; raise with its log if it does not."""
        self.warehouse.mkdir(parents=True, exist_ok=True)
        environment = {
            **os.environ,
            "CATALOG_REST_PORT": str(self.port),
            "CATALOG_WAREHOUSE": self.warehouse.as_uri(),
            "CATALOG_URI": f"jdbc:sqlite:{self.workdir / 'catalog.db'}",
            "CATALOG_JDBC_USER": "schemaflow",
            "CATALOG_JDBC_PASSWORD": "schemaflow",
            "CATALOG_JDBC_SCHEMA__VERSION": "V1",  # jdbc.schema-version: the JdbcCatalog's tables that hold views
        }
        classpath = os.pathsep.join(map(str, files(ARTIFACTS)))
        started = time.monotonic()
        with self.log.open("wb") as log:
            self._process = subprocess.Popen(
                [java_binary(), *self.java_options, "-cp", classpath, MAIN_CLASS], cwd=self.workdir,
                env=environment, stdin=subprocess.DEVNULL, stdout=log, stderr=subprocess.STDOUT,
                start_new_session=True,
            )
        deadline = started + self.timeout
        while not self._answers():
            if self._process.poll() is not None:
                self._fail(f"exited with status {self._process.returncode}")
            if time.monotonic() > deadline:
                self._fail(f"did not answer GET /v1/config on port {self.port} within {self.timeout:.0f} s")
            time.sleep(0.1)
        self.startup_seconds = time.monotonic() - started

    def stop(self) -> None:
        """Stop the server and any process it started (its whole process group)."""
        process, self._process = self._process, None
        stop_group(process)

    def _answers(self) -> bool:
        try:
            with urllib.request.urlopen(f"{self.uri}/v1/config", timeout=2) as answer:
                return bool(answer.status == 200)
        except (urllib.error.URLError, OSError):
            return False

    def _fail(self, what: str) -> None:
        self.stop()
        log = self.log.read_text(errors="replace")[-8000:]
        raise RuntimeError(f"the Iceberg REST catalog server {what}; its log ({self.log}):\n{log}")
