"""The conformance kit (docs/conformance.md): the same scenarios on Apache Flink's own classes, the
implementation and the model, compared observation by observation.

``flink_env`` finds or installs a Flink release's jars and builds the Java harness (``java/``)
against them; ``harness`` runs scenarios on it in one JVM per batch; one module per family maps the
family's scenarios to what the harness can drive and compares the traces.
"""
