"""The task mailbox: ports of Flink's own tests (TaskMailboxImplTest, MailboxExecutorImplTest,
TaskMailboxProcessorTest), each run against the implementation and, where the model covers it,
against the model; the processor's loop; the differential state machine and its reachability."""

from pathlib import Path

import pytest
from hypothesis import settings

from streamproof.impl.tasks.mailbox import (
    DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY, InterruptPolicy, Mail, MailboxClosedError,
    MailboxExecutor, MailboxLoopBudgetExceeded, MailboxProcessor, MailboxState, MailboxStateError,
    MailboxWouldBlockError, MailOptions, RejectedExecutionError, TaskMailbox,
)
from streamproof.model import mailbox as spec
from streamproof.properties import registry
from streamproof.properties.bugzoo import get_variant
from streamproof.properties.explore import explore
from streamproof.properties.mailbox.machine import MailboxMachine
from streamproof.properties.mailbox.runner import normalize, run_impl, run_model
from streamproof.properties.mailbox.steps import (
    Close, CreateBatch, HasMail, NewMailbox, Put, Quiesce, ShouldInterrupt, Size, TryTake, TryTakeFromBatch, TryYield,
)
from streamproof.properties.scenario import load_scenario_file
from streamproof.replayer import replay

TestMailboxDifferential = MailboxMachine.TestCase
EXAMPLES = sorted((Path(__file__).resolve().parents[1] / "examples" / "mailbox").glob("*.json"))

CLOSED_ERROR = {"event": "error", "text": "MailboxClosedException"}


def took(name):
    return {"event": "took", "mail": name}


def yielded(name):
    return {"event": "yielded", "mail": name}


def value(event, v):
    return {"event": event, "value": v}


def both(steps, expected, policy="any_mail"):
    """Runs the steps on the implementation and on the model; both must observe ``expected``."""
    steps = [NewMailbox(), *steps]
    impl, model = run_impl(steps, policy), run_model(steps, policy)
    assert normalize(impl) == normalize(expected), f"implementation: {impl}"
    assert normalize(model) == normalize(expected), f"model: {model}"


def noop():
    pass


# -- TaskMailboxImplTest -----------------------------------------------------------------------
def test_put_as_head():
    """testPutAsHead: put_first goes ahead of all other mail. Among urgent mail Flink 2.3 keeps
    put order (vector put_urgent_first_fifo_among_urgent), so B (first put) comes before A."""
    both([Put("C", DEFAULT_PRIORITY, "default"), Put("B", MAX_PRIORITY, "urgent"),
          Put("D", DEFAULT_PRIORITY, "default"), Put("A", MAX_PRIORITY, "urgent"),
          *[TryTake(DEFAULT_PRIORITY)] * 5],
         [took("B"), took("A"), took("C"), took("D"), took(None)])
    box = TaskMailbox()
    c, b, d, a = (Mail(noop, n) for n in "CBDA")
    box.put(c)
    box.put_first(b)
    box.put(d)
    box.put_first(a)
    assert [box.take(DEFAULT_PRIORITY) for _ in range(4)] == [b, a, c, d]
    assert box.try_take(DEFAULT_PRIORITY) is None


def test_put_as_head_with_priority():
    """testPutAsHeadWithPriority: priority hides mail, urgent or not; it never reorders it."""
    both([Put("C", 3, "default"), Put("B", 2, "default"), Put("D", 1, "default"),
          Put("A", 2, "urgent"), TryTake(2), TryTake(2), TryTake(2), TryTake(1), TryTake(1)],
         [took("A"), took("C"), took("B"), took("D"), took(None)])


def test_put_with_priority_and_reading_from_main_mailbox():
    """testPutWithPriorityAndReadingFromMainMailbox: MIN_PRIORITY reads in queue order."""
    both([Put("C", 3, "default"), Put("B", 2, "default"), Put("D", 1, "default"),
          Put("A", 2, "urgent"), *[TryTake(MIN_PRIORITY)] * 5],
         [took("A"), took("C"), took("B"), took("D"), took(None)])


def test_batch_and_non_batch_take():
    """testBatchAndNonBatchTake: a batch holds the mail present at its creation; try_take reads
    the batch first; try_take_from_batch never reads past it; close drops the rest."""
    puts = [Put(str(i), DEFAULT_PRIORITY, "default") for i in range(6)]
    both([*puts[:3], CreateBatch(), *puts[3:], TryTakeFromBatch(), TryTake(0), TryTake(0),
          TryTakeFromBatch(), TryTake(0), TryTake(0), Close()],
         [{"event": "batch", "created": True}, took("0"), took("1"), took("2"), took(None),
          took("3"), took("4"), {"event": "closed", "dropped": ["5"]}])
    box = TaskMailbox()
    mails = [Mail(noop, str(i)) for i in range(6)]
    for mail in mails[:3]:
        box.put(mail)
    assert box.create_batch()
    for mail in mails[3:]:
        box.put(mail)
    assert box.try_take_from_batch() is mails[0]
    assert box.try_take(DEFAULT_PRIORITY) is mails[1]
    assert box.take(DEFAULT_PRIORITY) is mails[2]
    assert box.try_take_from_batch() is None
    assert box.try_take(DEFAULT_PRIORITY) is mails[3]
    assert box.take(DEFAULT_PRIORITY) is mails[4]
    assert box.close() == [mails[5]]


def test_batch_priority():
    """testBatchPriority: a take of higher priority passes over the batch to newer mail."""
    both([Put("A", 1, "default"), CreateBatch(), Put("B", 2, "default"), TryTake(2),
          TryTakeFromBatch(), TryTakeFromBatch()],
         [{"event": "batch", "created": True}, took("B"), took("A"), took(None)])


def test_life_cycle_quiesce():
    """testLifeCycleQuiesce: QUIESCED refuses puts (urgent ones too) and still gives out mail."""
    both([Put("A", 0, "default"), Put("B", 0, "default"), Quiesce(), Put("C", 0, "default"),
          Put("U", 0, "urgent"), TryTake(0), TryTake(0), TryTake(0), Quiesce()],
         [value("state", "QUIESCED"), CLOSED_ERROR, CLOSED_ERROR, took("A"), took("B"), took(None),
          value("state", "QUIESCED")])
    box = TaskMailbox()
    box.put(Mail(noop, "A"))
    box.quiesce()
    assert box.state is MailboxState.QUIESCED and not box.state.is_accepting_mails
    for put in (box.put, box.put_first):
        with pytest.raises(MailboxClosedError, match="QUIESCED"):
            put(Mail(noop, "late"))
    assert box.take(DEFAULT_PRIORITY).description == "A"


def test_life_cycle_close():
    """testLifeCycleClose: CLOSED refuses puts and takes; closing again drops nothing."""
    both([Put("A", 0, "default"), Close(), Put("B", 0, "urgent"), TryTake(0), TryTakeFromBatch(),
          TryYield(0), HasMail(), Size(), ShouldInterrupt(0), CreateBatch(), Quiesce(), Close()],
         [{"event": "closed", "dropped": ["A"]}, CLOSED_ERROR, CLOSED_ERROR, CLOSED_ERROR, CLOSED_ERROR,
          value("has_mail", False), value("size", 0), value("should_interrupt", False),
          {"event": "batch", "created": False}, value("state", "CLOSED"), {"event": "closed", "dropped": []}])
    box = TaskMailbox()
    box.close()
    for call in (lambda: box.put(Mail(noop, "x")), lambda: box.put_first(Mail(noop, "x")),
                 lambda: box.take(0), lambda: box.try_take(0), box.try_take_from_batch):
        with pytest.raises(MailboxClosedError, match="CLOSED"):
            call()
    assert issubclass(MailboxClosedError, MailboxStateError)


def test_take_where_flink_would_block_raises():
    box = TaskMailbox()
    box.put(Mail(noop, "low", 1))
    with pytest.raises(MailboxWouldBlockError, match=r"take\(2\) would block"):
        box.take(2)
    assert box.size() == 1


def test_urgent_mail_put_during_a_batch_runs_in_that_batch():
    """Vector urgent_during_batch, and the batch view: the urgent mail is the batch's next mail."""
    both([Put("a", 0, "default"), Put("b", 0, "default"), CreateBatch(), Put("U", 0, "urgent"),
          Put("c", 0, "default"), TryTakeFromBatch(), TryTakeFromBatch(), TryTakeFromBatch(),
          TryTakeFromBatch(), CreateBatch(), TryTakeFromBatch()],
         [{"event": "batch", "created": True}, took("U"), took("a"), took("b"), took(None),
          {"event": "batch", "created": True}, took("c")])


# -- MailboxExecutorImplTest -------------------------------------------------------------------
def test_deferrable():
    """testDeferrable: deferrable mail counts as MIN_PRIORITY: an operator's executor neither
    yields to it nor takes it, the mailbox loop (MIN_PRIORITY) does; it still interrupts."""
    both([Put("X", 1, "deferrable"), Put("Y", 1, "default"), TryYield(1), TryYield(1),
          ShouldInterrupt(1), TryYield(MIN_PRIORITY)],
         [yielded("Y"), yielded(None), value("should_interrupt", True), yielded("X")])
    box = TaskMailbox()
    ran = []
    operator = MailboxExecutor(box, 1)
    main = MailboxExecutor(box, MIN_PRIORITY)
    operator.execute(lambda: ran.append("continue firing timers"), "continuation", MailOptions.DEFERRABLE)
    assert box.pending_mails()[0].get_priority() == MIN_PRIORITY
    assert not operator.try_yield() and operator.should_interrupt()
    with pytest.raises(MailboxWouldBlockError):
        operator.yield_()
    assert main.try_yield() and ran == ["continue firing timers"]


def test_try_yield_ignoring_deferrable():
    """Even the MIN_PRIORITY executor passes over deferrable mail (ours; see docs/decisions)."""
    box = TaskMailbox()
    model = spec.MailboxModel()
    ran = []
    main = MailboxExecutor(box, MIN_PRIORITY)
    for name, options in (("d", MailOptions.DEFERRABLE), ("n", MailOptions.DEFAULT)):
        main.execute(lambda name=name: ran.append(name), name, options)
        model.put(spec.Letter(name, MIN_PRIORITY if options is MailOptions.DEFAULT else 0, options.value))
    assert main.try_yield_ignoring_deferrable() and ran == ["n"]
    assert model.try_yield_ignoring_deferrable(MIN_PRIORITY).name == "n"
    assert not main.try_yield_ignoring_deferrable()
    assert model.try_yield_ignoring_deferrable(MIN_PRIORITY) is None
    assert main.try_yield() and ran == ["n", "d"]
    assert model.try_yield(MIN_PRIORITY).name == "d"


def test_should_interrupt_any_mail_or_urgent_only():
    """Flink today interrupts for any mail; FLINK-35051 would interrupt for urgent mail only."""
    steps = [ShouldInterrupt(0), Put("A", 5, "default"), Put("D", 0, "deferrable"), ShouldInterrupt(0),
             Put("U", 0, "urgent"), ShouldInterrupt(9), TryTake(0), ShouldInterrupt(0)]
    interrupts = lambda *answers: [value("should_interrupt", a) for a in answers]  # noqa: E731
    both(steps, [*interrupts(False, True, True), took("U"), *interrupts(True)])
    both(steps, [*interrupts(False, False, True), took("U"), *interrupts(False)], policy="urgent_only")
    box = TaskMailbox()
    executor = MailboxExecutor(box, 0, InterruptPolicy.URGENT_ONLY)
    executor.execute(noop, "record")
    assert not executor.should_interrupt() and MailboxExecutor(box, 0).should_interrupt()
    executor.execute(noop, "barrier", MailOptions.URGENT)
    assert executor.should_interrupt()


def test_execute_on_a_quiesced_mailbox_is_rejected():
    box = TaskMailbox()
    box.quiesce()
    with pytest.raises(RejectedExecutionError, match="cannot execute 'late'.*QUIESCED"):
        MailboxExecutor(box, 0).execute(noop, "late")
    assert issubclass(RejectedExecutionError, MailboxClosedError)


@pytest.mark.parametrize("make, message", [
    (lambda: Mail(noop, "m", -2), r"priority must be an integer in \[-1, 2\^31-1\]"),
    (lambda: Mail(noop, "m", True), "priority must be an integer"),
    (lambda: Mail("not callable", "m"), "runnable must be callable"),
    (lambda: Mail(noop, "m", 0, "urgent"), "options must be MailOptions"),
    (lambda: MailboxExecutor(TaskMailbox(), 2**31), "priority must be an integer"),
    (lambda: TaskMailbox().try_take(1.5), "priority must be an integer"),
])
def test_bad_arguments_are_clear_errors(make, message):
    with pytest.raises((ValueError, TypeError), match=message):
        make()


# -- TaskMailboxProcessorTest / MailboxProcessor -----------------------------------------------
def test_avoid_starvation():
    """testAvoidStarvation: a mail that keeps re-enqueuing itself does not starve the default
    action, because each loop iteration runs only the batch fixed at its start."""
    invocations, index = [0], [0]

    def default_action(controller):
        invocations[0] += 1
        if invocations[0] == 3:
            controller.all_actions_completed()

    processor = MailboxProcessor(default_action)
    executor = processor.get_main_mailbox_executor()

    def blocking_mail():
        index[0] += 1
        executor.execute(blocking_mail, f"Blocking mail{index[0]}")

    executor.execute(blocking_mail, "Blocking mail0")
    assert processor.run_mailbox_loop(max_steps=100)
    assert invocations[0] == 3 and index[0] == 3
    assert not processor.is_mailbox_loop_running()
    assert [m.description for m in processor.mailbox.pending_mails()] == ["Blocking mail3"]


def _self_enqueuing_run(steps: int) -> list:
    """A mail that re-enqueues itself 4 times, and the log of ``steps`` loop iterations."""
    log = []
    processor = MailboxProcessor(lambda controller: log.append("default"))
    executor = processor.get_main_mailbox_executor()

    def mail(n):
        log.append(n)
        if n < 4:
            executor.execute(lambda: mail(n + 1), f"mail{n + 1}")

    executor.execute(lambda: mail(0), "mail0")
    for _ in range(steps):
        processor.run_mailbox_step()
    return log


def test_starvation_without_a_fixed_batch():
    """With the bug-zoo variant batch-sees-later-puts, the batch grows while it runs: the default
    action waits until the mail stops re-enqueuing itself (forever, if it never stops)."""
    assert _self_enqueuing_run(3) == [0, "default", 1, "default", 2, "default"]
    with get_variant("batch-sees-later-puts").patch():
        assert _self_enqueuing_run(1) == [0, 1, 2, 3, 4, "default"]


def test_a_step_runs_the_batch_then_one_default_action():
    log = []
    processor = MailboxProcessor(lambda controller: log.append("default"))
    executor = processor.get_mailbox_executor(0)

    def first():
        log.append("first")
        executor.execute(lambda: log.append("later"), "later")  # the next batch
        executor.execute(lambda: log.append("urgent"), "urgent", MailOptions.URGENT)  # this batch, next

    executor.execute(first, "first")
    executor.execute(lambda: log.append("second"), "second")
    assert processor.run_mailbox_step()
    assert log == ["first", "urgent", "second", "default"]
    assert processor.run_mailbox_step()
    assert log[4:] == ["later", "default"]


def test_suspended_default_action_waits_for_mail_and_resumes():
    log, suspension = [], []

    def default_action(controller):
        log.append("input")
        if len(log) == 1:
            suspension.append(controller.suspend_default_action())
            assert controller.suspend_default_action() is suspension[0]  # one suspension at a time
        else:
            controller.all_actions_completed()

    processor = MailboxProcessor(default_action)
    assert processor.run_mailbox_loop(max_steps=10) is False  # would block: no input, no mail
    assert not processor.is_default_action_available() and processor.is_mailbox_loop_running()
    assert not processor.run_mailbox_step()  # nothing to run
    processor.get_main_mailbox_executor().execute(lambda: suspension[0].resume(), "input available")
    assert processor.run_mailbox_loop(max_steps=10) is True
    assert log == ["input", "input"] and not processor.is_mailbox_loop_running()
    assert not processor.run_mailbox_step()  # the loop has ended for good


def test_all_actions_completed_then_drain_and_close():
    """The poison mail is urgent: it ends the loop ahead of the mail queued before it, which
    drain() then runs (the task quiesces first, so nothing new gets in)."""
    log = []

    def default_action(controller):
        executor.execute(lambda: log.append("after end of input"), "mail")
        controller.all_actions_completed()

    processor = MailboxProcessor(default_action)
    executor = processor.get_mailbox_executor(0)
    assert processor.run_mailbox_loop(max_steps=10)
    assert log == [] and processor.has_mail()
    processor.prepare_close()
    assert processor.mailbox.state is MailboxState.QUIESCED
    processor.drain()
    assert log == ["after end of input"] and not processor.has_mail()
    executor2 = processor.get_main_mailbox_executor()
    with pytest.raises(RejectedExecutionError):
        executor2.execute(noop, "too late")
    assert processor.close() == [] and processor.mailbox.state is MailboxState.CLOSED


def test_suspend_returns_from_the_loop_which_can_run_again():
    runs = [0]

    def default_action(controller):
        runs[0] += 1
        if runs[0] == 2:
            processor.suspend()
        if runs[0] == 4:
            controller.all_actions_completed()

    processor = MailboxProcessor(default_action)
    assert processor.run_mailbox_loop(max_steps=10) and runs[0] == 2
    assert processor.is_mailbox_loop_running()
    assert processor.run_mailbox_loop(max_steps=10) and runs[0] == 4
    assert not processor.is_mailbox_loop_running()


def test_close_returns_dropped_mail_and_a_runaway_loop_is_a_clear_error():
    processor = MailboxProcessor(lambda controller: None)
    with pytest.raises(MailboxLoopBudgetExceeded, match="never called controller.all_actions_completed"):
        processor.run_mailbox_loop(max_steps=3)
    processor.get_main_mailbox_executor().execute(noop, "left over")
    assert [m.description for m in processor.close()] == ["left over"]


# -- the differential state machine ------------------------------------------------------------
def test_interesting_cases_are_reached():
    """A property that never meets its interesting cases tests nothing: count them."""
    prop = registry.get("mailbox.differential")
    result = explore(prop, examples=max(200, settings().max_examples), seed=12345)
    assert result.holds, result.message
    print("\nreachability over", result.examples, "examples:", dict(sorted(result.reach.items())))
    for label in prop.reachability:
        assert result.reach.get(label, 0) > 0, f"never reached: {label}"


# -- the hand-written examples ------------------------------------------------------------------
def test_there_are_mailbox_examples():
    assert len(EXAMPLES) >= 3


@pytest.mark.parametrize("path", EXAMPLES, ids=lambda p: p.name)
def test_example_replays_and_matches_what_it_expects(path):
    result = replay(load_scenario_file(path))
    assert result.holds and result.matches_expected is True, result.failure()


def test_priorities_span_javas_int_range_and_mail_defaults_to_priority_0():
    """Mutation testing (tests/mutation.py) found these unpinned: TaskMailbox.MAX_PRIORITY is
    Integer.MAX_VALUE, MIN_PRIORITY is -1 (deferrable), and a Mail built without one has priority 0."""
    from streamproof.impl.tasks.mailbox import DEFAULT_PRIORITY, MAX_PRIORITY, MIN_PRIORITY, Mail

    assert (MIN_PRIORITY, DEFAULT_PRIORITY, MAX_PRIORITY) == (-1, 0, 2**31 - 1)
    assert Mail(lambda: None, "m").priority == 0
    assert Mail(lambda: None, "top", 2**31 - 1).priority == 2**31 - 1
    for bad in (2**31, -2, True, 1.0):
        with pytest.raises(ValueError, match="priority"):
            Mail(lambda: None, "bad", bad)
