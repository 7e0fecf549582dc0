package org.streamproof.harness;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

import java.io.BufferedReader;
import java.io.FileDescriptor;
import java.io.FileOutputStream;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Method;
import java.nio.charset.StandardCharsets;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.Map;

/**
 * The streamproof conformance harness: drives Apache Flink's own classes through streamproof
 * scenarios.
 *
 * <p>Protocol: one scenario per line on stdin (JSON: {@code family}, {@code params}, {@code
 * steps}); for each, one line on stdout, in the same order: {@code {"observed": [...]}} or {@code
 * {"error": "one line"}} when the harness cannot drive the scenario. A scenario of family {@code
 * some_family} is run by {@code org.streamproof.harness.SomeFamilyHarness}, found by reflection,
 * whose {@code public static List<Map<String, Object>> run(JsonNode scenario) throws Exception}
 * returns the observations. Anything else written to System.out (logging) goes to stderr.
 */
public final class Main {
    private static final Map<String, Method> RUNNERS = new HashMap<>();

    private Main() {}

    public static void main(String[] args) throws Exception {
        PrintStream out =
                new PrintStream(new FileOutputStream(FileDescriptor.out), false, StandardCharsets.UTF_8);
        System.setOut(System.err); // the protocol owns stdout; stray prints go to stderr
        ObjectMapper mapper = new ObjectMapper();
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            Map<String, Object> result = new LinkedHashMap<>();
            try {
                JsonNode scenario = mapper.readTree(line);
                result.put("observed", runner(scenario.path("family").asText("")).invoke(null, scenario));
            } catch (InvocationTargetException e) {
                result.put("error", Util.oneLine(e.getCause() != null ? e.getCause() : e));
            } catch (Throwable e) {
                result.put("error", Util.oneLine(e));
            }
            String text;
            try {
                text = mapper.writeValueAsString(result);
            } catch (Exception e) {
                text = mapper.writeValueAsString(Map.of("error", Util.oneLine(e)));
            }
            out.println(text);
            out.flush();
        }
        out.flush();
    }

    /** {@code chain_watermark} → {@code ChainWatermarkHarness.run}. */
    static Method runner(String family) throws Exception {
        Method m = RUNNERS.get(family);
        if (m != null) {
            return m;
        }
        if (!family.matches("[a-z][a-z0-9_]*")) {
            throw new Util.Unsupported("no harness for family '" + family + "'");
        }
        StringBuilder name = new StringBuilder("org.streamproof.harness.");
        for (String part : family.split("_")) {
            if (!part.isEmpty()) {
                name.append(Character.toUpperCase(part.charAt(0))).append(part.substring(1));
            }
        }
        name.append("Harness");
        Class<?> c;
        try {
            c = Class.forName(name.toString());
        } catch (ClassNotFoundException e) {
            throw new Util.Unsupported("no harness for family '" + family + "' (no class " + name + ")");
        }
        m = c.getMethod("run", JsonNode.class);
        RUNNERS.put(family, m);
        return m;
    }
}
