"""The ``job`` family: whole jobs (sources, keyed exchange, a keyed operator, an exactly-once
sink) with checkpoints, failover, rescaling and interruptible timers.

Modules: ``steps`` (vocabulary), ``catalogue`` (registered properties), ``bugzoo`` (known-bug
variants), and the runners, checks and state machines they use (properties/families.py).
"""
