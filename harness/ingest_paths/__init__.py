"""Every way a Python user puts a DataFrame's rows into QuestDB, behind one interface
(``harness.ingest_paths.registry``): ILP through the official client, PGWire ``INSERT``s from asyncpg and
psycopg, the HTTP ``/imp`` upload, and the server's own imports of a file (``COPY``, ``read_parquet()``)."""
