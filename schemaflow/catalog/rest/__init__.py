"""The Iceberg REST catalog as a catalog backend (``iceberg_rest``): namespaces as databases, Iceberg tables and
views, written through the catalog's own commit requirements (``writer``), read as the model (``reader``), reached
through pyiceberg's REST client with options from an allow-list and credentials from the environment
(``connection``)."""
