"""The ``termination`` family: FLIP-269's CANCEL / TRIGGER / WAIT actions for processing-time
timers at end of input, in jobs and in a z3 model of the flush.

Modules: ``steps`` (vocabulary), ``catalogue`` (registered properties), ``bugzoo`` (known-bug
variants), and the runners, checks and state machines they use (properties/families.py).
"""
