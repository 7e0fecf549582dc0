"""Tasks (Flink's ``org.apache.flink.streaming.runtime.tasks`` and its ``mailbox`` package): the
mailbox (:mod:`.mailbox`: ``TaskMailboxImpl``, ``MailboxExecutorImpl``, ``MailboxProcessor``), the
stream task of one keyed operator with its chained sink (:mod:`.stream_task`, ``StreamTask``), what
flows on its input channels (:mod:`.stream_elements`), its watermark valve and FLIP-443's mailbox
watermark processor (:mod:`.watermarks`), its snapshot and configuration (:mod:`.task_state`), and
operator chains (:mod:`.chained_operators`: the operators a chain wraps; :mod:`.operator_chain`:
``OperatorChain`` run by one task).

Left out: network buffers and credit-based flow control (a channel is a bounded queue), the
checkpoint barrier handler's timeouts (alignment switches to unaligned only by configuration),
and task cancellation and interruption by thread.
"""
