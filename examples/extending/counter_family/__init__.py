"""An example scenario family defined outside streamproof (docs/extending.md).

The component under test is :class:`~counter_family.counter.CheckpointedCounter`, a counter whose
value survives a failure through checkpoints. The family declares its steps (``steps.py``), one
property that compares the counter with its specification step by step (``catalogue.py``, the
specification in ``spec.py``) and one known bug the property must catch (``bugzoo.py``).
"""
