"""Campaigns on Apache Spark (docs/spark.md): the same scenarios as ``streamproof check``, as
properties x seeds x budget, on embedded Spark, a standalone cluster, YARN, Kubernetes or Spark
Connect, through the DataFrame API only (``spark.range(...).mapInArrow(...)``).

Modules: ``spec`` (the campaign, the result row, signatures; no pyspark), ``executor`` (the
per-seed function run on the executors; Arrow only), ``session`` (targets, Java, loopback and
quiet settings), ``ship`` (the code zip), ``campaign`` (planning, waves, resume, read-back),
``progress`` (StatusTracker / progress handler adapter), ``exhaustive`` (small scopes),
``report`` (Markdown/HTML from the Parquet files), ``cluster`` (a standalone cluster and a Connect
server on 127.0.0.1, for tests and the benchmark), ``testing`` (test helpers).

Only ``streamproof`` and the tests import this package; importing it imports no pyspark.
"""
