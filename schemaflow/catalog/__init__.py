"""The live state: the Spark session, the Hive metastore read into the model, and snapshots of it.

``session`` builds the SparkSession, ``metastore`` reads and stamps the live objects through the
metastore client, and ``jvm`` turns JVM failures into one-line errors; these need a JVM and import
pyspark. ``snapshot`` is plain JSON, so a saved live state can be planned against with no JVM at
all. Nothing here is imported eagerly.
"""
from __future__ import annotations
