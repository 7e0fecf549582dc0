package org.streamproof.harness;

import org.apache.flink.api.common.typeutils.SimpleTypeSerializerSnapshot;
import org.apache.flink.api.common.typeutils.TypeSerializer;
import org.apache.flink.api.common.typeutils.TypeSerializerSnapshot;
import org.apache.flink.core.memory.DataInputView;
import org.apache.flink.core.memory.DataOutputView;

import java.io.IOException;

/**
 * The key serializer of a {@code timers} scenario whose keys mix types: {@code String}, {@code
 * Long} (a JSON integer) and {@code Integer} ({@code {"int32": n}}). Each key is written as a
 * one-byte type tag and its value, so a snapshot restores the same Java objects. The keys stay the
 * JDK's own objects, so key groups are Flink's ({@code KeyGroupRangeAssignment} hashes {@code
 * key.hashCode()}) and timers of equal value but different type stay distinct, as in Flink.
 *
 * <p>The snapshot is a {@link SimpleTypeSerializerSnapshot}: it carries no configuration, a restore
 * instantiates it by class name through the harness' class loader and checks compatibility by
 * class, as Flink does for its stateless serializers.
 */
public final class TimersMixedKeySerializer extends TypeSerializer<Object> {
    private static final long serialVersionUID = 1L;

    public static final TimersMixedKeySerializer INSTANCE = new TimersMixedKeySerializer();

    private static final byte STRING = 0;
    private static final byte LONG = 1;
    private static final byte INTEGER = 2;

    @Override
    public boolean isImmutableType() {
        return true; // String, Long, Integer
    }

    @Override
    public TypeSerializer<Object> duplicate() {
        return this;
    }

    @Override
    public Object createInstance() {
        return "";
    }

    @Override
    public Object copy(Object from) {
        return from;
    }

    @Override
    public Object copy(Object from, Object reuse) {
        return from;
    }

    @Override
    public int getLength() {
        return -1;
    }

    @Override
    public void serialize(Object record, DataOutputView target) throws IOException {
        if (record instanceof String) {
            target.writeByte(STRING);
            target.writeUTF((String) record);
        } else if (record instanceof Long) {
            target.writeByte(LONG);
            target.writeLong((Long) record);
        } else if (record instanceof Integer) {
            target.writeByte(INTEGER);
            target.writeInt((Integer) record);
        } else {
            throw new IOException("not a timers key (String, Long or Integer): "
                    + (record == null ? "null" : record.getClass().getName()));
        }
    }

    @Override
    public Object deserialize(DataInputView source) throws IOException {
        byte tag = source.readByte();
        switch (tag) {
            case STRING:
                return source.readUTF();
            case LONG:
                return source.readLong();
            case INTEGER:
                return source.readInt();
            default:
                throw new IOException("unknown timers key tag " + tag);
        }
    }

    @Override
    public Object deserialize(Object reuse, DataInputView source) throws IOException {
        return deserialize(source);
    }

    @Override
    public void copy(DataInputView source, DataOutputView target) throws IOException {
        serialize(deserialize(source), target);
    }

    @Override
    public boolean equals(Object obj) {
        return obj instanceof TimersMixedKeySerializer;
    }

    @Override
    public int hashCode() {
        return TimersMixedKeySerializer.class.hashCode();
    }

    @Override
    public TypeSerializerSnapshot<Object> snapshotConfiguration() {
        return new Snapshot();
    }

    /** Restores {@link #INSTANCE}; public with a nullary constructor, as Flink requires. */
    public static final class Snapshot extends SimpleTypeSerializerSnapshot<Object> {
        public Snapshot() {
            super(() -> INSTANCE);
        }
    }
}
