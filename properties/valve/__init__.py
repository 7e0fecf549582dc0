"""The ``valve`` family: the operator-coordinator event valve checkpoint protocol (FLINK-26029),
flink-2.3, legacy and streamproof, and the ``valve_job`` family of jobs around it.

Modules: ``steps`` (vocabulary), ``catalogue`` (registered properties), ``bugzoo`` (known-bug
variants), and the runners, checks and state machines they use (properties/families.py).
"""
