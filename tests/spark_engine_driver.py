"""The process ``tests/spark_engine.py`` starts: a SparkSession of the pinned engine (pyspark with a format's
runtime), answering requests one JSON line at a time.

Run with ``python -S`` and the engine's folder and the checkout alone on ``PYTHONPATH`` (not the test venv's
pyspark). Arguments: a JSON object of Spark settings. Each line on stdin is a request, answered by one line on stdout:

- ``{"sql": "..."}``: ``{"rows": [...]}`` (each row a JSON object, values that JSON lacks as strings) or
  ``{"error": "..."}``;
- ``{"run_on_version": {"location": ..., "expected_version": ..., "statement": ...}}``: schemaflow's
  ``catalog.hive.delta_commit.run_on_version`` in this session: ``{"version": n}``, ``{"concurrent": {"expected":
  ..., "found": ...}}`` for its ``ConcurrentChange``, or ``{"error": "..."}``;
- ``{"apply": "<plan JSON>"}``: schemaflow's ``apply_plan`` of that plan with the Hive writer on this session (which
  needs schemaflow's own packages: ``tests/delta_spark.py`` says where they come from): ``{"applied": progress}`` or
  ``{"failed": error, "progress": progress}``;
- ``{"together": [request, ...]}``: the requests at once, each in a thread of its own on a session of its own
  (``newSession``: its own SQL settings, the same Spark): ``{"answers": [...]}`` in the requests' order;
- ``{"gateway": null}``: where py4j reaches this process's JVM, for a process attached to it: ``{"port": ...,
  "secret": ...}``.

The answers have the process's stdout to themselves: the JVM's and Spark's own output goes to stderr.

Run with the arguments ``attach POINT`` and ``PYSPARK_GATEWAY_PORT``/``PYSPARK_GATEWAY_SECRET`` in its environment
(what ``gateway`` answered), it is an apply of its own on that JVM, in a process of its own (``SparkEngine.attached``):
the plan's JSON on stdin (one JSON string), ``apply_plan`` on a session of the running Spark, and where the writer
reports progress holding ``POINT`` (a long action's report: ``Metastore.report``) it answers ``{"paused": report,
"pid": ...}`` and waits for a line on stdin, for a test to kill it there; then ``{"applied": ...}`` or ``{"failed":
...}``. The JVM outlives it: killed between two py4j calls, it leaves the catalog and the table's files as a process
killed with its JVM would.
"""
import json
import os
import sys
import threading


def answer(spark, request):
    try:
        if "sql" in request:
            return {"rows": [row.asDict(recursive=True) for row in spark.sql(request["sql"]).collect()]}
        if "run_on_version" in request:
            from schemaflow.catalog.hive.delta_commit import run_on_version
            from schemaflow.errors import ConcurrentChange
            try:
                return {"version": run_on_version(spark, **request["run_on_version"])}
            except ConcurrentChange as change:
                return {"concurrent": {"expected": change.expected, "found": change.found}}
        if "apply" in request:
            return apply(spark, request["apply"])
        if "gateway" in request:
            parameters = spark.sparkContext._gateway.gateway_parameters
            return {"port": parameters.port, "secret": parameters.auth_token}
        requests = request["together"]
        answers = [None] * len(requests)
        sessions = [spark.newSession() for _ in requests]
        ready = threading.Barrier(len(requests))

        def run(number):
            ready.wait()
            answers[number] = answer(sessions[number], requests[number])
        threads = [threading.Thread(target=run, args=(number,)) for number in range(len(requests))]
        for thread in threads:
            thread.start()
        for thread in threads:
            thread.join()
        return {"answers": answers}
    except Exception as error:  # noqa: BLE001 -- the request's failure is the answer; the session goes on
        return {"error": f"{type(error).__name__}: {error}"[:4000]}


def apply(spark, plan, report=None):
    import io
    from schemaflow.apply.executor import apply_plan
    from schemaflow.catalog.hive.metastore import Metastore
    from schemaflow.errors import SchemaflowError
    from schemaflow.plan.plan import Plan
    progress = io.StringIO()
    try:
        writer = Metastore.connect(spark)
        writer.progress = report
        apply_plan(Plan.from_data(json.loads(plan)), writer, progress)
    except SchemaflowError as error:
        return {"failed": str(error), "progress": progress.getvalue()}
    return {"applied": progress.getvalue()}


def attach(answers, point):
    """An apply of the plan on stdin on the JVM the environment names, paused where its progress reports ``point``."""
    from pyspark import SparkContext
    from pyspark.java_gateway import launch_gateway
    from pyspark.sql import SparkSession

    gateway = launch_gateway()  # PYSPARK_GATEWAY_PORT set: connects to that JVM, starts none
    jvm = gateway.jvm
    # The JVM's SparkContext and session (a JVM has one SparkContext), wrapped for this process.
    context = SparkContext(gateway=gateway, jsc=jvm.org.apache.spark.api.java.JavaSparkContext(
        jvm.org.apache.spark.SparkContext.getOrCreate()))
    spark = SparkSession(context, jvm.org.apache.spark.sql.SparkSession.active().newSession())

    def paused(message):
        if point in message:
            answers.write(json.dumps({"paused": message, "pid": os.getpid()}) + "\n")
            sys.stdin.readline()
    answers.write(json.dumps(apply(spark, json.loads(sys.stdin.readline()), paused), sort_keys=True) + "\n")


def main() -> None:
    answers = os.fdopen(os.dup(1), "w", buffering=1)
    os.dup2(2, 1)  # whatever the JVM or a library prints goes to stderr, never between two answers
    if sys.argv[1] == "attach":
        attach(answers, sys.argv[2])
        return
    from pyspark.sql import SparkSession

    builder = SparkSession.builder
    for key, value in json.loads(sys.argv[1]).items():
        builder = builder.config(key, value)
    spark = builder.enableHiveSupport().getOrCreate()
    answers.write(json.dumps({"ready": spark.version}) + "\n")
    for line in sys.stdin:
        answers.write(json.dumps(answer(spark, json.loads(line)), default=str, sort_keys=True) + "\n")
    spark.stop()


if __name__ == "__main__":
    main()
