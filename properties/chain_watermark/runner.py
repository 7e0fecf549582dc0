"""Runs a ``chain_watermark`` scenario against the implementation and against the model.

Observations (docs/chain-watermark.md), the same from both runners and from the Flink harness:

* ``{"event": "fire", "operator": "A"|"B", "key": k, "ts": t}``: a timer fired;
* ``{"event": "emit", "operator": "A"|"B", "watermark": w}``: a processor emitted a watermark
  downstream (A's goes on to B at once; B's is the chain's output);
* ``{"event": "ran", "mail": name}``: ``run_mail``/``drain`` ran that mail (``null``: the mailbox
  was empty). Mails are named: a foreign mail by its step's ``name``, a timer's mail
  ``"<operator>:<key>@<ts>"``, a continuation ``"<operator>:emitWatermarkInsideMailbox"``.
"""

from __future__ import annotations

from typing import Iterable

from streamproof.impl.state.key_groups import KeyGroupRange
from streamproof.impl.tasks.mailbox import MIN_PRIORITY, Mail, MailboxExecutor, MailOptions, TaskMailbox
from streamproof.impl.tasks.stream_task import MailboxWatermarkProcessor
from streamproof.impl.timers.internal_time_service_manager import InternalTimeServiceManager
from streamproof.impl.timers.internal_timer_service import KeyContext
from streamproof.impl.timers.processing_time_service import ManualProcessingTimeService
from streamproof.model import chain_watermark as spec
from streamproof.properties.scenario import key_to_json
from streamproof.properties.tracecompare import TraceComparison, run_trace

MODES = spec.MODES
MAX_PARALLELISM = 128
SERVICE = "timers"
DRAIN_BUDGET = 10_000


def timer_mail_name(operator: str, key, ts: int) -> str:
    """As the model names it (and the harness, for string and long keys)."""
    return f"{operator}:{key}@{ts}"


# -- implementation ------------------------------------------------------------------------
class _Labelled:
    """An operator's executor whose mails carry the operator's name (``A:emitWatermarkInsideMailbox``)."""

    def __init__(self, executor: MailboxExecutor, operator: str):
        self.executor, self.operator = executor, operator

    def execute(self, command, description: str, options: MailOptions = MailOptions.DEFAULT) -> None:
        self.executor.execute(command, f"{self.operator}:{description}", options)

    def should_interrupt(self) -> bool:
        return self.executor.should_interrupt()


class _ImplOperator:
    """What ``impl.task.MailboxWatermarkProcessor`` needs of an operator: its timer service
    manager and a count of fired timers; the callbacks record ``fire`` and put the timer mails."""

    def __init__(self, run: "ImplChainRun", name: str, chain_index: int, mode: str):
        self.run, self.name = run, name
        self.timers_fired = 0
        self.key_context = KeyContext(MAX_PARALLELISM)
        self.time_service_manager = InternalTimeServiceManager(
            self.key_context, KeyGroupRange.of(0, MAX_PARALLELISM - 1), ManualProcessingTimeService())
        self.service = self.time_service_manager.get_internal_timer_service(SERVICE, self)
        self.executor = _Labelled(MailboxExecutor(run.mailbox, chain_index), name)
        corrected = mode == "corrected"
        self.processor = MailboxWatermarkProcessor(self, self.executor, self._emit,
                                                   intermediate=corrected, only_increasing=corrected)
        self.downstream = None  # B's processor, for A
        self.puts_mail: set = set()

    def _emit(self, watermark: int) -> None:
        self.run.out.append({"event": "emit", "operator": self.name, "watermark": watermark})
        if self.downstream is not None:
            self.downstream.processor.emit_watermark_inside_mailbox(watermark)

    def on_event_time(self, timer) -> None:
        ts, key, _ = timer
        self.timers_fired += 1
        self.run.out.append({"event": "fire", "operator": self.name, "key": key_to_json(key), "ts": ts})
        if (ts, key) in self.puts_mail:
            name = timer_mail_name(self.name, key, ts)
            self.run.mailbox.put(Mail(lambda: None, name, self.executor.executor.priority))

    def on_processing_time(self, timer) -> None:  # pragma: no cover - no processing-time timers here
        raise AssertionError("no processing-time timers in this family")

    def register(self, key, ts: int) -> None:
        self.key_context.set_current_key(key)
        self.service.register_event_time_timer("", ts)


class ImplChainRun:
    """Drives ``impl.task.MailboxWatermarkProcessor`` (two of them, one ``impl.mailbox.TaskMailbox``)."""

    def __init__(self, mode: str = "flink-2.3"):
        if mode not in MODES:
            raise ValueError(f"mode must be one of {', '.join(MODES)}, not {mode!r}")
        self.mode = mode
        self.out: list[dict] = []
        self.mailbox: TaskMailbox | None = None
        self.ops: dict[str, _ImplOperator] = {}

    def apply(self, step, index: int | None = None) -> list[dict]:
        self.out = []
        op = step.op
        if op == "new_chain":
            self.mailbox = TaskMailbox()
            self.ops = {name: _ImplOperator(self, name, i, self.mode) for i, name in enumerate(spec.OPERATORS)}
            self.ops["A"].downstream = self.ops["B"]
        elif op == "register":
            self.ops[step.operator].register(step.key, step.ts)
        elif op == "timer_puts_mail":
            self.ops[step.operator].puts_mail.add((step.ts, step.key))
        elif op == "watermark":
            self.ops["A"].processor.emit_watermark_inside_mailbox(step.ts)
        elif op == "mail":
            self.mailbox.put(Mail(lambda: None, step.name, 0))
        elif op == "run_mail":
            self._run_one()
        elif op == "drain":
            for _ in range(DRAIN_BUDGET):
                if not self.mailbox.has_mail():
                    break
                self._run_one()
            else:
                raise RuntimeError(f"drain ran more than {DRAIN_BUDGET} mails")
        else:
            raise ValueError(f"unknown chain_watermark op {op!r}")
        return self.out

    def _run_one(self) -> None:
        mail = self.mailbox.try_take(MIN_PRIORITY)
        self.out.append({"event": "ran", "mail": None if mail is None else mail.description})
        if mail is not None:
            mail.run()

    def view(self) -> dict:
        """What both sides hold: pending mails, and per operator its pending timers, maximum input
        watermark and whether a continuation is scheduled."""
        return {"mails": [m.description for m in self.mailbox.pending_mails()],
                **{name: (sorted((t[0], repr(t[1])) for t in op.service.event_time_timers_queue),
                          op.processor.max_input_watermark, op.processor.progress_watermark_scheduled)
                   for name, op in self.ops.items()}}


# -- model -----------------------------------------------------------------------------------
class ModelChainRun:
    """Drives ``model.chain_watermark`` through the steps (it predicts every observation)."""

    def __init__(self, mode: str = "flink-2.3"):
        self.mode = mode
        self.model = spec.ChainModel(mode)

    def apply(self, step, index: int | None = None) -> list[dict]:
        m, op = self.model, step.op
        if op == "new_chain":
            self.model = spec.ChainModel(self.mode)
            out = []
        elif op == "register":
            out = m.register(step.operator, step.key, step.ts)
        elif op == "timer_puts_mail":
            out = m.timer_puts_mail(step.operator, step.key, step.ts)
        elif op == "watermark":
            out = m.watermark(step.ts)
        elif op == "mail":
            out = m.mail(step.name)
        elif op == "run_mail":
            out = m.run_mail()
        elif op == "drain":
            out = m.drain(DRAIN_BUDGET)
        else:
            raise ValueError(f"unknown chain_watermark op {op!r}")
        return [self._json(e) for e in out]

    def _json(self, event: dict) -> dict:
        if event["event"] == "fire":
            return {**event, "key": key_to_json(event["key"])}
        return event

    def view(self) -> dict:
        ops = self.model.ops
        return {"mails": [name for name, _ in self.model.mailbox],
                **{name: (sorted((t[0], repr(t[1])) for t in op.timers), op.max_input, op.scheduled)
                   for name, op in ops.items()}}


# -- whole scenarios -------------------------------------------------------------------------
COMPARISON = TraceComparison(ignore=frozenset({"step"}))
normalize, same_trace, difference = COMPARISON.normalize, COMPARISON.same, COMPARISON.difference


def run_impl(steps: Iterable, mode: str = "flink-2.3") -> list[dict]:
    return run_trace(ImplChainRun(mode).apply, steps)


def run_model(steps: Iterable, mode: str = "flink-2.3") -> list[dict]:
    return run_trace(ModelChainRun(mode).apply, steps)
