package org.streamproof.harness;

import java.security.Permission;
import java.util.function.Consumer;

/**
 * Keeps Flink's {@code FatalExitExceptionHandler} from ending the harness JVM while a valve
 * scenario runs, and reports what it was handed.
 *
 * <p>{@code OperatorCoordinatorHolder} guards some main-thread callbacks with
 * {@code FutureUtils.assertNoException}: an exception there (e.g. {@code closeGateways} throwing
 * "Some subtask gateway can be closed while others cannot", finding 3 of docs/valve.md) goes to
 * {@code FatalExitExceptionHandler}, which logs it and calls
 * {@code FlinkSecurityManager.forceProcessExit}, i.e. {@code System.setSecurityManager(null)} then
 * {@code System.exit}. While a scenario runs, a security manager refuses both (the
 * {@code SecurityException} ends up in a future nobody reads), and the scenario's trace gets an
 * {@code error} event with {@code fatal: true} (what the Python harness reports for its fatal error
 * handler). The exception's type comes from the handler's log record when log4j-core is the slf4j
 * binding (it is in Flink's lib/); that log record is kept off the console.
 *
 * <p>Best effort: on a JDK that refuses {@code System.setSecurityManager} (18+ without
 * {@code -Djava.security.manager=allow}) the guard is simply absent.
 */
final class ValveFatalGuard {

    private static final String FATAL_LOGGER = "org.apache.flink.util.FatalExitExceptionHandler";

    private static volatile boolean installed;
    private static volatile Consumer<Throwable> listener;
    private static volatile Throwable lastLogged;
    /** What was reported since begin(): FutureUtils hands a failing handler's own failure (with
     * the original exception suppressed) to a fallback handler, the same fatal error again. */
    private static final java.util.Set<Throwable> reported =
            java.util.Collections.newSetFromMap(new java.util.IdentityHashMap<>());

    private ValveFatalGuard() {}

    /** Starts guarding; {@code onFatal} gets what the fatal handler was handed. */
    static synchronized void begin(Consumer<Throwable> onFatal) {
        install();
        lastLogged = null;
        reported.clear();
        listener = onFatal;
    }

    /** Stops guarding: System.exit works again. */
    static synchronized void end() {
        listener = null;
        lastLogged = null;
        reported.clear();
    }

    @SuppressWarnings("removal")
    private static void install() {
        if (installed) {
            return;
        }
        installed = true;
        try {
            ValveFatalLogCapture.install(FATAL_LOGGER, t -> lastLogged = t);
        } catch (Throwable ignored) {
            // no log4j-core: the fatal error is reported without its type
        }
        try {
            System.setSecurityManager(new Guard(System.getSecurityManager()));
        } catch (Throwable ignored) {
            // the JDK refuses security managers: no guard
        }
    }

    private static void fatal() {
        Consumer<Throwable> l = listener;
        if (l == null) {
            return;
        }
        Throwable t = lastLogged;
        lastLogged = null;
        if (t != null) {
            for (Throwable suppressed : t.getSuppressed()) {
                if (reported.contains(suppressed)) {
                    return; // the fallback handler, for a fatal error already reported
                }
            }
            reported.add(t);
        }
        l.accept(t != null ? t : new FatalExitRequested());
    }

    /** Stands for the fatal error when its log record could not be captured. */
    static final class FatalExitRequested extends RuntimeException {
        private static final long serialVersionUID = 1L;

        FatalExitRequested() {
            super("FatalExitExceptionHandler asked the process to exit");
        }
    }

    @SuppressWarnings("removal")
    private static final class Guard extends SecurityManager {
        private final SecurityManager previous;

        Guard(SecurityManager previous) {
            this.previous = previous;
        }

        @Override
        public void checkPermission(Permission perm) {
            if (listener != null && "setSecurityManager".equals(perm.getName())) {
                fatal();
                throw new SecurityException("the valve harness keeps the JVM alive");
            }
            if (previous != null) {
                previous.checkPermission(perm);
            }
        }

        @Override
        public void checkPermission(Permission perm, Object context) {
            checkPermission(perm);
        }

        @Override
        public void checkExit(int status) {
            if (listener != null) {
                fatal();
                throw new SecurityException("the valve harness keeps the JVM alive");
            }
            if (previous != null) {
                previous.checkExit(status);
            }
        }
    }
}
