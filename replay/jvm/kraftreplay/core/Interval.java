package kraftreplay.core;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.List;
import org.apache.spark.sql.Row;
import scala.collection.Seq;

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

    private static long start(Row version) {
        return version.isNullAt(FROM) ? Long.MIN_VALUE : version.getLong(FROM);
    }

    /**
     * Structs that start with an interval, in the order of their starts: as they come when collected from rows sorted
     * by their start (checked, one pass), else sorted here.
     */
    public static List<Row> inOffsetOrder(Seq<Row> collected) {
        List<Row> versions = new ArrayList<>(collected.length());
        boolean sorted = true;
        for (int v = 0; v < collected.length(); v++) {
            Row version = collected.apply(v);
            sorted &= versions.isEmpty() || start(versions.get(versions.size() - 1)) <= start(version);
            versions.add(version);
        }
        if (!sorted) {
            versions.sort(Comparator.comparingLong(Interval::start));
        }
        return versions;
    }

    /** An interval's end with null (still open) read as the largest offset. */
    public static long openEnd(Long end) {
        return end == null ? Long.MAX_VALUE : end;
    }
}
