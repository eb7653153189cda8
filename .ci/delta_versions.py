"""Delta's type widening on a Spark 4 release, against what schemaflow plans in place (``plan.delta.widens``).

The tests' Delta engine is pyspark 3.5.9 with delta-spark 3.3.2 (tests/delta_spark.py), where Delta widens little;
a plan for Spark 4 widens in place what Delta 4 documents. This checks that fact on the real thing, before a release:
a venv of pyspark 4.2.1 with delta-spark 4.4.0 (pinned in tests/artifacts.lock, ``delta-spark-4.2``), one Delta table
per type pair with type widening on, ``ALTER TABLE ... ALTER COLUMN c TYPE``, and the outcome beside ``widens(old, new,
(4, 2))``: a pair Delta takes that schemaflow would rewrite, or one schemaflow would alter that Delta refuses, fails
the run. It also renames and drops a column of a table with column mapping, reading the row back.

    .venv/bin/python .ci/delta_versions.py     # about 3 minutes on two cores (a venv, one Spark)
"""
from __future__ import annotations

import json
import subprocess
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
sys.path.insert(0, str(ROOT))

from schemaflow.plan.delta import widens  # noqa: E402
from tests.artifacts import files  # noqa: E402

PYSPARK, RELEASE, JARS = "4.2.1", (4, 2), "delta-spark-4.2"
PAIRS = (("tinyint", "smallint"), ("tinyint", "int"), ("smallint", "int"), ("int", "bigint"), ("tinyint", "bigint"),
         ("float", "double"), ("int", "double"), ("bigint", "double"), ("int", "decimal(10,0)"),
         ("int", "decimal(12,2)"), ("bigint", "decimal(20,0)"), ("bigint", "decimal(19,0)"),
         ("decimal(5,2)", "decimal(7,4)"), ("decimal(5,2)", "decimal(8,3)"), ("decimal(5,2)", "decimal(6,1)"),
         ("date", "timestamp_ntz"), ("int", "string"), ("bigint", "int"))
# Run in the venv's Python: each pair's outcome (the column's type after, or the error's first line), as JSON.
PROBE = """
import json, sys, tempfile
from pyspark.sql import SparkSession
jars, pairs = sys.argv[1], json.loads(sys.argv[2])
spark = (SparkSession.builder.master("local[1]").config("spark.jars", jars).config("spark.ui.enabled", "false")
         .config("spark.sql.extensions", "io.delta.sql.DeltaSparkSessionExtension")
         .config("spark.sql.catalog.spark_catalog", "org.apache.spark.sql.delta.catalog.DeltaCatalog")
         .config("spark.sql.warehouse.dir", tempfile.mkdtemp()).getOrCreate())
spark.sparkContext.setLogLevel("OFF")
out = {}
for i, (old, new) in enumerate(pairs):
    spark.sql(f"CREATE TABLE t{i} (c {old}) USING delta TBLPROPERTIES ('delta.enableTypeWidening'='true')")
    try:
        spark.sql(f"ALTER TABLE t{i} ALTER COLUMN c TYPE {new}")
        out[f"{old} -> {new}"] = spark.table(f"t{i}").schema["c"].dataType.simpleString()
    except Exception as error:
        out[f"{old} -> {new}"] = "refused: " + (str(error).splitlines() or [type(error).__name__])[0][:100]
spark.sql("CREATE TABLE m (a int, b int) USING delta TBLPROPERTIES ('delta.columnMapping.mode'='name')")
spark.sql("INSERT INTO m VALUES (1, 2)")
spark.sql("ALTER TABLE m RENAME COLUMN a TO x")
spark.sql("ALTER TABLE m DROP COLUMN b")
out["column mapping: rename a -> x, drop b"] = repr([r.asDict() for r in spark.table("m").collect()])
print("PROBE " + json.dumps(out))
"""


def main() -> int:
    jars = ",".join(str(jar) for jar in files(JARS))
    with tempfile.TemporaryDirectory(prefix="delta-versions-") as work:
        venv = Path(work) / f"pyspark-{PYSPARK}"
        subprocess.run([sys.executable, "-m", "venv", venv], check=True)
        subprocess.run([venv / "bin" / "pip", "install", "--quiet", f"pyspark=={PYSPARK}"], check=True)
        probed = subprocess.run([venv / "bin" / "python", "-c", PROBE, jars, json.dumps(PAIRS)],
                                capture_output=True, text=True)
    lines = [line for line in probed.stdout.splitlines() if line.startswith("PROBE ")]
    if probed.returncode or not lines:
        print(probed.stdout[-3000:], probed.stderr[-3000:], sep="\n")
        return 1
    found = json.loads(lines[-1][len("PROBE "):])
    wrong = 0
    print(f"| pyspark {PYSPARK}, {JARS} | Delta | schemaflow plans |\n|---|---|---|")
    for old, new in PAIRS:
        took = not found[f"{old} -> {new}"].startswith("refused")
        planned = widens(old, new, RELEASE)
        wrong += took != planned
        print(f"| {old} -> {new} | {found[f'{old} -> {new}']} | {'in place' if planned else 'a rewrite'}"
              f"{'' if took == planned else ' (WRONG)'} |")
    mapped = found["column mapping: rename a -> x, drop b"]
    print(f"column mapping: rename a -> x, drop b: {mapped}")
    return 1 if wrong or mapped != "[{'x': 1}]" else 0


if __name__ == "__main__":
    sys.exit(main())
