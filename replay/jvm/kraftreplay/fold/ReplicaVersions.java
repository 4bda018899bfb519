package kraftreplay.fold;

import static kraftreplay.core.Interval.CAUSE_OFFSET;
import static kraftreplay.core.Interval.CAUSE_TYPE;
import static kraftreplay.core.Interval.FROM;
import static kraftreplay.core.Interval.FROM_TIME;
import static kraftreplay.core.Interval.TO;
import static kraftreplay.core.Interval.TO_TIME;
import static kraftreplay.core.Interval.WIDTH;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;
import scala.collection.Seq;

/**
 * One replica's versions: its partition's versions (the replica's role in each) cut where its broker's state
 * changes, consecutive pieces with equal values merged, in one pass over both lists in offset order.
 *
 * <p>A replica's state changes when its partition changes or when its broker is fenced, unfenced, registered or
 * unregistered: a piece is a partition version intersected with a broker interval. A piece starts where the later
 * of the two starts (and takes the cause of that one: the partition's record, or the broker's), and ends where the
 * earlier of the two ends. A broker without a timeline (never registered) leaves each partition version whole, with
 * {@code broker_fenced} null. Pieces that touch and hold equal values are one version, with the start and cause of
 * the first, as {@code replay.core.history.collapse} merges them (nulls equal, as Spark compares structs).
 *
 * <p>Input: the replica's versions and its broker's intervals, arrays of the structs
 * {@code replay.fold.replicas.REPLICA_VERSION} and {@code BROKER_INTERVAL} declare, each sorted by its start (the
 * intervals of one list are disjoint). Output: the replica's versions, structs of
 * {@code replay.fold.replicas.REPLICA_VERSION} with {@code broker_fenced} last.
 */
public final class ReplicaVersions implements UDF2<Seq<Row>, Seq<Row>, List<Row>> {
    private static final long serialVersionUID = 1L;

    // both structs start with the interval (kraftreplay.core.Interval); a version's values follow: topic_name ...
    // directory; a broker interval's: broker_fenced
    private static final int FENCED = WIDTH;

    private static long openEnd(Row interval) {
        return interval.isNullAt(TO) ? Long.MAX_VALUE : interval.getLong(TO);
    }

    /** A piece: the partition version's values with the broker's fencing, over the two intervals' overlap. */
    private static Object[] piece(Row version, Row broker) {
        int valueCount = version.length() - WIDTH;
        Object[] piece = new Object[version.length() + 1];
        for (int i = 0; i < valueCount; i++) {
            piece[WIDTH + i] = version.get(WIDTH + i);
        }
        Row starts = version;
        Row ends = version;
        if (broker != null) {
            piece[version.length()] = broker.get(FENCED);
            if (broker.getLong(FROM) > version.getLong(FROM)) {
                starts = broker;
            }
            if (openEnd(broker) < openEnd(version)) {
                ends = broker;
            }
        }
        piece[FROM] = starts.get(FROM);
        piece[FROM_TIME] = starts.get(FROM_TIME);
        piece[CAUSE_OFFSET] = starts.get(CAUSE_OFFSET);
        piece[CAUSE_TYPE] = starts.get(CAUSE_TYPE);
        piece[TO] = ends.get(TO);
        piece[TO_TIME] = ends.get(TO_TIME);
        return piece;
    }

    /** The piece continues the one before: they touch and every value is equal. */
    private static boolean continues(Object[] before, Object[] piece) {
        if (before[TO] == null || !before[TO].equals(piece[FROM])) {
            return false;
        }
        for (int i = WIDTH; i < piece.length; i++) {
            if (!Objects.equals(before[i], piece[i])) {
                return false;
            }
        }
        return true;
    }

    @Override
    public List<Row> call(Seq<Row> versions, Seq<Row> timeline) {
        List<Object[]> merged = new ArrayList<>(versions.length());
        int first = 0;  // the first broker interval that may still overlap a version (both lists in offset order)
        for (int v = 0; v < versions.length(); v++) {
            Row version = versions.apply(v);
            List<Object[]> pieces = new ArrayList<>();
            if (timeline != null) {
                while (first < timeline.length() && openEnd(timeline.apply(first)) <= version.getLong(FROM)) {
                    first++;
                }
                for (int b = first; b < timeline.length(); b++) {
                    Row broker = timeline.apply(b);
                    if (broker.getLong(FROM) >= openEnd(version)) {
                        break;
                    }
                    pieces.add(piece(version, broker));
                }
            }
            if (pieces.isEmpty()) {
                pieces.add(piece(version, null));
            }
            for (Object[] piece : pieces) {
                Object[] before = merged.isEmpty() ? null : merged.get(merged.size() - 1);
                if (before != null && continues(before, piece)) {
                    before[TO] = piece[TO];
                    before[TO_TIME] = piece[TO_TIME];
                } else {
                    merged.add(piece);
                }
            }
        }
        List<Row> rows = new ArrayList<>(merged.size());
        for (Object[] values : merged) {
            rows.add(RowFactory.create(values));
        }
        return rows;
    }
}
