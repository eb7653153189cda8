"""The process ``tests/iceberg_spark.py`` starts: a SparkSession of the pinned engine (a pyspark with Iceberg's
runtime), answering SQL statements one JSON line at a time.

Run with ``python -S`` and the engine's folder alone on ``PYTHONPATH`` (not the test venv's pyspark). Arguments:
a JSON object of Spark settings. Each line on stdin is ``{"sql": "..."}``; each answer on stdout is
``{"rows": [...]}`` (each row a JSON object, values that JSON lacks as strings) or ``{"error": "..."}``. The
answers have the process's stdout to themselves: the JVM's and Spark's own output goes to stderr.
"""
import json
import os
import sys


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the JVM or a library prints goes to stderr, never between two answers
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in json.loads(sys.argv[1]).items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    answers.write(json.dumps({"ready": spark.version}) + "\n")
    for line in sys.stdin:
        try:
            rows = [row.asDict(recursive=True) for row in spark.sql(json.loads(line)["sql"]).collect()]
            answers.write(json.dumps({"rows": rows}, default=str, sort_keys=True) + "\n")
        except Exception as error:  # noqa: BLE001 -- the statement's failure is the answer; the session goes on
            answers.write(json.dumps({"error": f"{type(error).__name__}: {error}"[:4000]}) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
