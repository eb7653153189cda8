"""A Spark standalone cluster for tests: a master and one worker of one core, started from pyspark's own
``spark-class`` as processes the test owns, stopped when it ends."""
from __future__ import annotations

import os
import signal
import subprocess
import time
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path

from tests.metastore_server import accepts_connections, free_port


@contextmanager
def standalone_cluster(workdir: Path) -> Iterator[str]:
    """A Spark standalone master and one worker, started from pyspark's own spark-class; yields the master URL."""
    import pyspark

    home = Path(pyspark.__file__).parent
    env = {**os.environ, "SPARK_HOME": str(home), "SPARK_LOG_DIR": str(workdir), "SPARK_WORKER_DIR": str(workdir)}
    port = free_port()
    url = f"spark://127.0.0.1:{port}"
    master_log, worker_log = workdir / "master.log", workdir / "worker.log"
    started = []
    try:
        with master_log.open("wb") as log:
            started.append(subprocess.Popen(
                [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.master.Master", "--host", "127.0.0.1",
                 "--port", str(port), "--webui-port", str(free_port())], env=env, stdout=log, stderr=log,
                start_new_session=True))
        with worker_log.open("wb") as log:
            started.append(subprocess.Popen(
                [str(home / "bin" / "spark-class"), "org.apache.spark.deploy.worker.Worker", "--cores", "1",
                 "--memory", "1g", "--webui-port", str(free_port()), "--work-dir", str(workdir / "work"), url],
                env=env, stdout=log, stderr=log, start_new_session=True))
        deadline = time.monotonic() + 120
        while not (accepts_connections(port) and "Registering worker" in master_log.read_text(errors="replace")):
            assert time.monotonic() < deadline, master_log.read_text(errors="replace")[-2000:]
            time.sleep(0.5)
        yield url
    finally:
        for process in started:
            os.killpg(process.pid, signal.SIGTERM)
            process.wait(timeout=60)
