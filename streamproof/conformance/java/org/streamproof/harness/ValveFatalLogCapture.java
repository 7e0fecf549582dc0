package org.streamproof.harness;

import java.util.function.Consumer;

import org.apache.logging.log4j.Level;
import org.apache.logging.log4j.LogManager;
import org.apache.logging.log4j.core.LogEvent;
import org.apache.logging.log4j.core.LoggerContext;
import org.apache.logging.log4j.core.appender.AbstractAppender;
import org.apache.logging.log4j.core.config.Configuration;
import org.apache.logging.log4j.core.config.LoggerConfig;
import org.apache.logging.log4j.core.config.Property;

/**
 * Routes one logger (Flink's {@code FatalExitExceptionHandler}) to a capture instead of the
 * console: the valve harness reports the exception as a fatal {@code error} event. Loaded only by
 * {@link ValveFatalGuard}, which survives its absence (no log4j-core on the class path).
 */
final class ValveFatalLogCapture {

    private ValveFatalLogCapture() {}

    static void install(String loggerName, Consumer<Throwable> sink) {
        Object context = LogManager.getContext(false);
        if (!(context instanceof LoggerContext)) {
            return;
        }
        LoggerContext ctx = (LoggerContext) context;
        Configuration config = ctx.getConfiguration();
        AbstractAppender appender =
                new AbstractAppender("streamproof-valve-fatal", null, null, true, Property.EMPTY_ARRAY) {
                    @Override
                    public void append(LogEvent event) {
                        if (event.getThrown() != null) {
                            sink.accept(event.getThrown());
                        }
                    }
                };
        appender.start();
        LoggerConfig loggerConfig = new LoggerConfig(loggerName, Level.ALL, false);
        loggerConfig.addAppender(appender, Level.ALL, null);
        config.addLogger(loggerName, loggerConfig);
        ctx.updateLoggers();
    }
}
