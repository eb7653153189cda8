"""The pinned Spark engine the tests start beside the test venv, as its own process: what teams run to read and
write the table formats whose Spark runtimes the newest pyspark lacks (Iceberg's, Delta's).

The newest pyspark has no Iceberg runtime and no delta-spark on Maven Central, so the engine is pinned beside the
test venv: pyspark 3.5.9 (``tests/engine-requirements.txt``, installed by hash into the test cache once,
``tests/artifacts.cache_dir``), run in its own process (``tests/spark_engine_driver.py``) with the settings a
format's module gives it (``tests/iceberg_spark.py``, ``tests/delta_spark.py``), answering one JSON request at a
time. The checkout is on its ``PYTHONPATH`` too, so that it can run schemaflow's own engine-side code (only modules
that need nothing beyond pyspark and the standard library). A second run downloads nothing.
"""
from __future__ import annotations

import json
import os
import queue
import shutil
import subprocess
import sys
import tempfile
import threading
from pathlib import Path
from types import TracebackType
from typing import Any

from tests.artifacts import _locked, cache_dir
from tests.metastore_server import java_binary

ENGINE = "pyspark-3.5.9"
REQUIREMENTS = Path(__file__).with_name("engine-requirements.txt")
DRIVER = Path(__file__).with_name("spark_engine_driver.py")
CHECKOUT = Path(__file__).resolve().parent.parent
INSTALLED = ".installed"  # written last: a folder without it is an install that did not finish


def engine_home(cache: Path | None = None) -> Path:
    """The engine's packages in the test cache, installed from the pinned requirements (hashes required) once."""
    target = (cache or cache_dir()) / "engines" / ENGINE
    if (target / INSTALLED).is_file():
        return target
    target.parent.mkdir(parents=True, exist_ok=True)
    with _locked(target):
        if (target / INSTALLED).is_file():  # another test process installed it while this one waited
            return target
        staging = Path(tempfile.mkdtemp(prefix=f".{ENGINE}-", dir=target.parent))
        done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--require-hashes",
                               "--target", str(staging), "-r", str(REQUIREMENTS)], capture_output=True, text=True)
        if done.returncode != 0:
            shutil.rmtree(staging, ignore_errors=True)
            raise RuntimeError(f"installing the engine {ENGINE} failed:\n{done.stderr[-4000:]}")
        (staging / INSTALLED).write_text(REQUIREMENTS.read_text())
        shutil.rmtree(target, ignore_errors=True)
        staging.rename(target)
    return target


class SparkEngine:
    """The engine's process with the Spark ``settings``: ``with Engine(...) as engine: engine.sql("SELECT ...")``.
    ``name`` says which runtime it carries, in its errors."""

    name = "Spark"
    # Folders of packages the engine's process imports after its own (pyspark, py4j) and the checkout: none here.
    also: tuple[str, ...] = ()

    def __init__(self, settings: dict[str, str], workdir: Path, timeout: float = 300.0) -> None:
        self.settings = settings
        self.workdir = workdir
        self.timeout = timeout
        self.log = workdir / "engine.log"
        self.version = ""
        self._process: subprocess.Popen[str] | None = None
        self._answers: queue.Queue[str] = queue.Queue()
        self._env: dict[str, str] = {}

    def __enter__(self) -> SparkEngine:
        self.workdir.mkdir(parents=True, exist_ok=True)
        # Its own Spark's settings alone: not another pyspark's home, nor the Hive client a run's site gives schemaflow.
        self._env = {**{key: value for key, value in os.environ.items() if key not in ("SPARK_HOME", "SPARK_CONF_DIR")},
                     "PYTHONPATH": os.pathsep.join([str(engine_home()), str(CHECKOUT), *self.also]),
                     "JAVA_HOME": str(Path(java_binary()).parent.parent), "PYSPARK_PYTHON": sys.executable}
        with self.log.open("w") as log:
            self._process = subprocess.Popen(
                [sys.executable, "-S", str(DRIVER), json.dumps(self.settings)], cwd=self.workdir, env=self._env,
                stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True, start_new_session=True)
        threading.Thread(target=self._read, daemon=True).start()
        self.version = self._answer()["ready"]
        return self

    def __exit__(self, kind: type[BaseException] | None, error: BaseException | None, tb: TracebackType | None) -> None:
        process, self._process = self._process, None
        if process is None:
            return
        assert process.stdin is not None
        process.stdin.close()
        try:
            process.wait(timeout=60)
        except subprocess.TimeoutExpired:
            process.kill()
            process.wait()

    def sql(self, statement: str) -> list[dict[str, Any]]:
        """The statement's rows; raises ``AssertionError`` with Spark's message when it fails."""
        answer = self.attempt(statement)
        if "error" in answer:
            raise AssertionError(f"{self.name} refused {statement!r}: {answer['error']}")
        rows: list[dict[str, Any]] = answer["rows"]
        return rows

    def attempt(self, statement: str) -> dict[str, Any]:
        """The engine's answer to the statement: ``{"rows": [...]}`` or ``{"error": "..."}``."""
        return self.ask({"sql": statement})

    def ask(self, request: dict[str, Any]) -> dict[str, Any]:
        """The engine's answer to one request of ``tests/spark_engine_driver.py``."""
        assert self._process is not None and self._process.stdin is not None
        self._process.stdin.write(json.dumps(request) + "\n")
        self._process.stdin.flush()
        return self._answer()

    def attached(self, *arguments: str) -> subprocess.Popen[str]:
        """A process of its own running the driver with ``arguments`` on this engine's JVM (its py4j gateway), which
        it does not start nor stop: killed, it leaves the JVM and its SparkSession running."""
        gateway = self.ask({"gateway": None})
        with self.log.open("a") as log:
            return subprocess.Popen([sys.executable, "-S", str(DRIVER), *arguments], cwd=self.workdir,
                                    env={**self._env, "PYSPARK_GATEWAY_PORT": str(gateway["port"]),
                                         "PYSPARK_GATEWAY_SECRET": gateway["secret"]},
                                    stdin=subprocess.PIPE, stdout=subprocess.PIPE, stderr=log, text=True)

    def _read(self) -> None:
        assert self._process is not None and self._process.stdout is not None
        for line in self._process.stdout:
            self._answers.put(line)
        self._answers.put("")

    def _answer(self) -> dict[str, Any]:
        try:
            line = self._answers.get(timeout=self.timeout)
        except queue.Empty:
            line = ""
        if not line:
            raise RuntimeError(f"the engine {ENGINE} ({self.name}) did not answer; its log ({self.log}):\n"
                               f"{self.log.read_text(errors='replace')[-6000:]}")
        answer: dict[str, Any] = json.loads(line)
        return answer
