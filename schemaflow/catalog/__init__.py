"""The live state, whichever catalog holds it: the backend-neutral part here, one package per backend.

``backend`` says what a catalog backend offers (a reader of the live state as the model, a writer taking typed
changes), ``backends`` is the registry of them by name with their capabilities, ``live`` opens the one a project's
settings name; ``drift``, ``history``, ``snapshot`` and ``stamping`` work on the model for every backend, and
``iceberg_metadata``/``iceberg_updates``/``iceberg_specs`` are an Iceberg table's read and commit in any catalog. The
backends: ``hive`` (the Hive metastore and the Spark engine it works through: the only part that needs a JVM),
``rest`` (an Iceberg REST catalog) and ``glue`` (the AWS Glue Data Catalog). Nothing here imports a backend: the
registry imports one when a project names it. Nothing here is imported eagerly.
"""
