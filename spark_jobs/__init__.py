"""PySpark Structured Streaming jobs that read canal-bridge's Kafka topics (docs/spark.md).

- ``decode``: FlatMessages -> one row per change, values cast to Spark types (shared).
- ``changelog``: every change, append-only Parquet by database/table/date.
- ``mirror`` (+ ``mirror_table``, ``ddl``): a current-state Delta copy of each source table.
- ``reconcile``: compares a mirror table with the live source table.
- ``session``, ``stream``: the SparkSession and the options/run loop the jobs share.
"""
