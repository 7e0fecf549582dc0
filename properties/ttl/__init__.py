"""The ``ttl`` family: keyed state with a time-to-live (Flink's ``StateTtlConfig``) on
``streamproof.flink``'s state handles, against the specification in ``model/state_ttl.py``.

Modules: ``steps`` (vocabulary), ``catalogue`` (registered properties), ``bugzoo`` (known-bug
variants), and the check they use (properties/families.py).
"""
