"""The ``mailbox`` family: TaskMailbox and MailboxExecutor (FLIP-443's interruptible firing
goes through them), checked against ``model/mailbox.py`` and Flink 2.3's recorded traces.

Modules: ``steps`` (vocabulary), ``catalogue`` (registered properties), ``bugzoo`` (known-bug
variants), and the runners, checks and state machines they use (properties/families.py).
"""
