package org.streamproof.harness;

import org.apache.flink.api.common.operators.MailboxExecutor.MailOptions;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.streaming.runtime.tasks.StreamTaskActionExecutor;
import org.apache.flink.streaming.runtime.tasks.mailbox.Mail;
import org.apache.flink.streaming.runtime.tasks.mailbox.MailboxExecutorImpl;
import org.apache.flink.streaming.runtime.tasks.mailbox.TaskMailboxImpl;

import java.util.ArrayList;
import java.util.IdentityHashMap;
import java.util.List;
import java.util.Map;
import java.util.Optional;

/**
 * The {@code mailbox} family on Flink's own {@code TaskMailboxImpl} and {@code
 * MailboxExecutorImpl}, driven from the mailbox thread (this one). Mails are named by the
 * scenario's {@code mail}; observations follow shared/vectors/flink_mailbox_traces.json, a refused
 * step giving {@code {"event": "error", "text": the exception's simple name}}.
 */
public final class MailboxHarness {
    private TaskMailboxImpl box;
    private final Map<Mail, String> names = new IdentityHashMap<>();
    private final List<String> ran = new ArrayList<>();

    public static List<Map<String, Object>> run(JsonNode scenario) throws Exception {
        MailboxHarness h = new MailboxHarness();
        List<Map<String, Object>> events = new ArrayList<>();
        for (JsonNode step : Util.steps(scenario)) {
            try {
                Map<String, Object> e = h.apply(step);
                if (e != null) {
                    events.add(e);
                }
            } catch (Util.Unsupported e) {
                throw e;
            } catch (Exception e) {
                events.add(Util.event("error", "text", e.getClass().getSimpleName()));
            }
        }
        return events;
    }

    private Map<String, Object> apply(JsonNode step) throws Exception {
        String op = Util.text(step, "op");
        if (box == null && !op.equals("new_mailbox")) {
            throw new Util.Unsupported("'" + op + "' before new_mailbox");
        }
        switch (op) {
            case "new_mailbox":
                box = new TaskMailboxImpl(Thread.currentThread());
                return null;
            case "put": {
                String name = Util.text(step, "mail");
                Mail mail = new Mail(options(Util.optText(step, "options", "default")), () -> ran.add(name),
                        Util.intValue(step, "priority"), "%s", name);
                names.put(mail, name);
                box.put(mail);
                return null;
            }
            case "try_take":
                return took(box.tryTake(Util.intValue(step, "priority")));
            case "create_batch":
                return Util.event("batch", "created", box.createBatch());
            case "try_take_from_batch":
                return took(box.tryTakeFromBatch());
            case "try_yield": {
                int before = ran.size();
                boolean yielded = executor(step).tryYield();
                return Util.event("yielded", "mail", yielded && ran.size() > before ? ran.get(before) : null);
            }
            case "should_interrupt":
                return Util.event("should_interrupt", "value", executor(step).shouldInterrupt());
            case "has_mail":
                return Util.event("has_mail", "value", box.hasMail());
            case "size":
                return Util.event("size", "value", box.size());
            case "quiesce":
                box.quiesce();
                return Util.event("state", "value", box.getState().name());
            case "close": {
                List<String> dropped = new ArrayList<>();
                for (Mail m : box.close()) {
                    dropped.add(names.get(m));
                }
                return Util.event("closed", "dropped", dropped);
            }
            default:
                throw new Util.Unsupported("unknown mailbox op '" + op + "'");
        }
    }

    private MailboxExecutorImpl executor(JsonNode step) {
        return new MailboxExecutorImpl(box, Util.intValue(step, "priority"), StreamTaskActionExecutor.IMMEDIATE);
    }

    private static MailOptions options(String name) {
        switch (name) {
            case "default":
                return MailOptions.options();
            case "deferrable":
                return MailOptions.deferrable();
            case "urgent":
                return MailOptions.urgent();
            default:
                throw new Util.Unsupported("options must be default, deferrable or urgent, not '" + name + "'");
        }
    }

    private Map<String, Object> took(Optional<Mail> mail) {
        return Util.event("took", "mail", mail.map(names::get).orElse(null));
    }
}
