package kraftreplay.core;

import org.apache.spark.sql.Row;

/**
 * The fields every pass's input struct starts with: an interval and the record that started it, in the order
 * {@code replay.core.jvm_functions.INTERVAL} declares them (sorting the structs sorts them by their start); and the
 * null-aware reads of a struct's fields the passes share.
 */
public final class Interval {
    public static final int FROM = 0;
    public static final int TO = 1;
    public static final int FROM_TIME = 2;
    public static final int TO_TIME = 3;
    public static final int CAUSE_OFFSET = 4;
    public static final int CAUSE_TYPE = 5;
    /** The fields of the interval: a struct's own values start here. */
    public static final int WIDTH = 6;

    private Interval() {
    }

    public static Long longOrNull(Row row, int field) {
        return row.isNullAt(field) ? null : row.getLong(field);
    }

    public static String stringOrNull(Row row, int field) {
        return row.isNullAt(field) ? null : row.getString(field);
    }

    /** An interval's end with null (still open) read as the largest offset. */
    public static long openEnd(Long end) {
        return end == null ? Long.MAX_VALUE : end;
    }
}
