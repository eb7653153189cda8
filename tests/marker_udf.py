"""A real metastore function that says when it runs: a Hive UDF compiled here (javac), whose class writes a marker
file as it loads, in a jar served over HTTP by a server of the test that counts what it serves; and another team's
Spark job, which registers it (``CREATE FUNCTION db.f AS 'marker.Marker' USING JAR 'http://...'``) and writes views
that call it. A test proves a class loaded by the marker, and a jar fetched by the server's requests.
"""
from __future__ import annotations

import functools
import json
import os
import shutil
import subprocess
import sys
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from http.server import SimpleHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path

import pyspark

from tests.projects import ROOT

UDF = """package marker;

public class Marker extends org.apache.hadoop.hive.ql.exec.UDF {
    static {
        try {
            java.nio.file.Files.writeString(java.nio.file.Path.of(%s), "loaded\\n");
        } catch (java.io.IOException e) {
            throw new RuntimeException(e);
        }
    }

    public String evaluate(String text) {
        return text == null ? null : "masked";
    }
}
"""
CLASS = "marker.Marker"


class Served:
    """An HTTP server of ``folder`` on 127.0.0.1, counting the requests it answered."""

    def __init__(self, folder: Path) -> None:
        self.requests: list[str] = []
        served = self

        class Handler(SimpleHTTPRequestHandler):
            def log_message(self, format: str, *args: object) -> None:
                served.requests.append(self.path)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(Handler, directory=str(folder)))
        self.thread = threading.Thread(target=self.server.serve_forever, daemon=True)
        self.thread.start()

    def url(self, name: str) -> str:
        return f"http://127.0.0.1:{self.server.server_address[1]}/{name}"

    def stop(self) -> None:
        self.server.shutdown()
        self.server.server_close()


@contextmanager
def marker_jar(folder: Path) -> Iterator[tuple[Served, Path]]:
    """A jar of the UDF ``marker.Marker`` made in ``folder``, served over HTTP as ``marker.jar``, and the file its
    class writes as it loads."""
    marker = folder / "loaded.txt"
    source = folder / "udf" / "marker" / "Marker.java"
    source.parent.mkdir(parents=True)
    source.write_text(UDF % json.dumps(str(marker)))
    (hive_exec,) = (Path(pyspark.__file__).parent / "jars").glob("hive-exec-*-core.jar")
    javac = shutil.which("javac")
    assert javac, "the tests compile a UDF: javac must be on PATH"
    subprocess.run([javac, "-cp", str(hive_exec), "-d", str(folder / "classes"), str(source)], check=True)
    served_folder = folder / "served"
    served_folder.mkdir()
    subprocess.run(["jar", "cf", str(served_folder / "marker.jar"), "-C", str(folder / "classes"), "."], check=True)
    served = Served(served_folder)
    try:
        yield served, marker
    finally:
        served.stop()


def spark_sql(project: Path, *statements: str) -> None:
    """Run ``statements`` through a Spark of the project's settings, in a process of its own (another team's job)."""
    code = ("import sys\nfrom schemaflow.catalog.hive.session import spark_session\nfrom schemaflow.project import "
            "load_project\nspark = spark_session(load_project(sys.argv[1], env={}).settings)\n"
            "for statement in sys.argv[2:]:\n    spark.sql(statement).collect()\n")
    ran = subprocess.run([sys.executable, "-c", code, str(project), *statements], capture_output=True, text=True,
                         env={**os.environ, "PYTHONPATH": str(ROOT)})
    assert ran.returncode == 0, ran.stderr[-3000:]


def forget(served: Served, marker: Path) -> None:
    """Forget what ran so far (another team's job loaded the class and fetched the jar): from now on, a marker or a
    request is this test's command's doing."""
    marker.unlink(missing_ok=True)
    served.requests.clear()
