"""The ``timers`` family: one keyed timer service (InternalTimerServiceImpl) driven step by step,
checked against ``model/timers.py`` and Flink 2.3's recorded traces.

Modules: ``steps`` (vocabulary), ``catalogue`` (registered properties), ``bugzoo`` (known-bug
variants), and the runners, checks and state machines they use (properties/families.py).
"""
