"""The ``chain_watermark`` family: Flink's ``MailboxWatermarkProcessor`` in a chain of two
operators ``A -> B`` sharing one task mailbox (FLIP-443's interruptible timers), checked against
``model/chain_watermark.py`` and against Flink 2.3's own classes
(``streamproof/conformance/java/.../ChainWatermarkHarness.java``).

Modules: ``steps`` (vocabulary), ``runner`` (implementation and model runs), ``check`` (the
differential check), ``machine`` (the state machine), ``catalogue`` (the registered property
``chain_watermark.differential``), ``conform`` (the conformance family). See docs/chain-watermark.md.
"""
