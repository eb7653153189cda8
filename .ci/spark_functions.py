"""Spark's built-in functions per release, written into the package (schemaflow/sql/spark_functions.json): the
names a view may call without the operator's approval (``schemaflow.sql.spark_functions``).

    .venv/bin/python .ci/spark_functions.py            # every release; each one's entry replaced
    .venv/bin/python .ci/spark_functions.py 4.0.5      # one (a pyspark release)

Each release is read from a running Spark of its own, in a venv of its own (the reference venv for the
newest, ``spark_versions.REFERENCE``; a new one, removed after, for the others: ``spark_versions.RELEASES``),
through its JVM (``schemaflow.catalog.hive.builtin_functions``): about 450 MB of pyspark each, installed one at a
time. tests/test_view_functions_spark.py checks the installed release's list against what this wrote, so a
CI run on each of its releases (4.3 and 3.5) finds a list that is not Spark's.
"""
from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from spark_versions import REFERENCE, RELEASES, ROOT, make_venv, pyspark_of  # noqa: E402

DATA = ROOT / "schemaflow" / "sql" / "spark_functions.json"
# Run in the release's venv, with this checkout first on its path: the registries as JSON on stdout.
LIST = """
import json
from pyspark.sql import SparkSession
from schemaflow.catalog.hive.builtin_functions import registered
spark = SparkSession.builder.master("local[1]").config("spark.ui.enabled", "false").getOrCreate()
print(json.dumps(registered(spark)))
spark.stop()
"""


def listed(venv: Path) -> dict[str, object]:
    """The built-in functions of the pyspark in ``venv``, as the package data keeps them."""
    from schemaflow.sql.spark_functions import allowed

    ran = subprocess.run([venv / "bin" / "python", "-c", LIST], cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT)},
                         capture_output=True, text=True, check=True)
    return {"pyspark": pyspark_of(venv), **allowed(json.loads(ran.stdout.strip().splitlines()[-1]))}


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    reference = pyspark_of(REFERENCE)
    every = (*RELEASES, reference)
    parser.add_argument("releases", nargs="*", default=every, help=f"pyspark releases (all: {' '.join(every)})")
    args = parser.parse_args()
    data = json.loads(DATA.read_text()) if DATA.exists() else {}
    for release in args.releases:
        work = Path(tempfile.mkdtemp(prefix="spark-functions-"))
        try:
            venv = REFERENCE if release == reference else make_venv(release, work)
            entry = listed(venv)
        finally:
            shutil.rmtree(work, ignore_errors=True)
        data[".".join(release.split(".")[:2])] = entry
        print(f"pyspark {release}: {len(entry['functions'])} functions, "  # type: ignore[arg-type]
              f"{len(entry['table_functions'])} table functions", flush=True)  # type: ignore[arg-type]
        DATA.write_text(json.dumps(dict(sorted(data.items())), indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.path.insert(0, str(ROOT))
    sys.exit(main())
