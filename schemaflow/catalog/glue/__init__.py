"""The AWS Glue Data Catalog as a catalog backend (``metastore.type: glue``), through boto3 (the ``glue`` extra).

``shape`` maps Glue's table JSON onto the Thrift table data every Hive reader of schemaflow reads, and back;
``spark_entry`` makes that data of a declared table as Spark's Hive catalog would; ``client`` opens boto3 and names
the catalog; ``reader`` and ``writer`` are the backend's halves; ``backend`` registers it.
"""
