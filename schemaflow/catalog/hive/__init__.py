"""The Hive metastore as a catalog backend, and the Spark engine it works through.

``backend`` registers it (``hive``, the default); ``metastore`` reads and writes the live state through a SparkSession's
Thrift client (``session``, ``jvm``, ``spark_*``), ``thrift_reader`` reads a metastore server without a JVM over
``thrift_wire``, and ``thrift_data`` maps the metastore's entries onto the model (the Glue Data Catalog holds the same
entries, so ``catalog.glue`` reads them through it). ``local_server`` serves the embedded Derby metastore to every
process of a project. The rest is what only a catalog with an engine can do: column cascades (``columns``), view
partitions, rewrites (``rewrite*``) and Iceberg commits and conversions through the metastore (``iceberg_commit``,
``iceberg_convert``, ``table_lock``).
"""
