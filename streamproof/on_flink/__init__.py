"""Apache Flink as the second oracle: a certified job run as written on PyFlink's local MiniCluster
(``streamproof certify JOB --on-flink``; docs/conformance.md, "Whole jobs on Apache Flink").

- :mod:`.runner`: runs of a job file on Flink, outputs read back from exactly-once file sinks;
- :mod:`.driver`: the Flink client those runs start (PyFlink patched at four points);
- :mod:`.instrument`: what runs in Flink's Python workers: counted functions, one failure injected;
- :mod:`.oracle`: failure-free runs, runs with a failure, the simulator's fidelity;
- :mod:`.report`: the certificate's "On Apache Flink" section;
- :mod:`.campaign`: ``campaign --on-flink``: one Spark task (one MiniCluster) per job.
"""
