"""The implementation: a Flink-style stream runtime, laid out as Flink's is (docs/architecture.md).

Layers, each importing only those before it: :mod:`.state` (key groups, keyed state),
:mod:`.timers` (the timer service, its snapshots, termination actions), :mod:`.operators` (the
keyed process operator, windows, sinks), :mod:`.tasks` (mailbox, stream task, operator chains),
:mod:`.graph` (job graphs, the job runtime, checkpoints, the simulator). :mod:`.coordination`
(the operator-coordinator event valve) stands apart: it imports none of them.
"""
