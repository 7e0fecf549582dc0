"""The ``snapshots`` family: copy-on-write timer snapshots, their binary format, restore and
rescaling (FLINK-9182).

Modules: ``steps`` (vocabulary), ``catalogue`` (registered properties), ``bugzoo`` (known-bug
variants), and the runners, checks and state machines they use (properties/families.py).
"""
