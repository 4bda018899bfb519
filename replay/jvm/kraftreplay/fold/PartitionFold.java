package kraftreplay.fold;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;
import scala.collection.Seq;

/**
 * One partition's events folded in the order Kafka applies them, as Kafka's {@code TopicsDelta} and
 * {@code PartitionRegistration.merge} apply them: the registration after each event.
 *
 * <p>The events (one partition key, sorted by visible offset, offset, seq) are every one the set-based steps
 * around it gave the key: creates (PartitionRecord of a live topic, well formed), deletes (the topic's removal or
 * replacement), changes (PartitionChangeRecord, flagged {@code malformed} where Kafka refuses the record itself)
 * and ELR clears. What is decided here needs the events before it: a change or clear applies only to a live
 * partition (created, not deleted since: {@code TopicsDelta} finds none otherwise), a malformed change never; a
 * clear merges only where the ELR or the last known ELR is not empty; a merge whose directories do not match its
 * replicas ({@code PartitionRegistration}'s constructor, after {@code defaultToMigrating}) is refused and changes
 * nothing.
 *
 * <p>The registrations become versions as {@code replay.core.history.to_intervals} makes them: the registration
 * after the last applied event at a visible offset is a version (the records of a transaction become visible
 * together), ended by the next applied event's visible offset; a delete ends one and starts none.
 *
 * <p>Input: an array of the event structs {@code replay.fold.partitions.FOLD_EVENT} declares (fields in that
 * order; more may follow, unread), and {@code DirectoryId.MIGRATING} as Kafka's text. Output: an array of the
 * same length, each element the struct {@code replay.fold.partitions.FOLD_RESULT} declares: the event's outcome,
 * the registration after it (null values after a delete and for an event not applied), its version's end and which
 * of the registration's invariants it breaks.
 */
public final class PartitionFold implements UDF2<Seq<Row>, String, List<Row>> {
    private static final long serialVersionUID = 1L;

    /** The event made the registration (or deleted it). */
    public static final String APPLIED = "applied";
    /** A clear that found no ELR to clear: Kafka does not merge it. */
    public static final String NOTHING_TO_CLEAR = "nothing to clear";
    /** A merge whose directories do not match its replicas: refused, the registration stays. */
    public static final String DIRECTORIES_REFUSED = "directories refused";
    /** A change Kafka refuses as a record (its own directories or recovery state): never merged. */
    public static final String MALFORMED = "malformed";
    /** A change or clear with no live partition to merge into: not applied. */
    public static final String NO_PARTITION = "no partition";

    private static final int KIND = 3;
    private static final int ARRAYS = 4;  // the six int arrays, FOLD_EVENT[4..9]
    private static final int ARRAY_COUNT = 6;
    private static final int ELR = 4;  // eligible_leader_replicas, within the arrays
    private static final int LAST_KNOWN_ELR = 5;
    private static final int LEADER = 10;
    private static final int BASE_LEADER_EPOCH = 11;
    private static final int BASE_PARTITION_EPOCH = 12;
    private static final int LEADER_RECOVERY_STATE = 13;
    private static final int RECORD_DIRS = 14;
    private static final int VISIBLE_TIME_MS = 15;
    private static final int IS_MALFORMED = 16;
    private static final int VISIBLE_OFFSET = 0;
    // the result's fields: the outcome, the registration (11 values), then its version's end and whether it is one
    private static final int VALID_TO_OFFSET = 12;
    private static final int VALID_TO_TIME_MS = 13;
    private static final int IS_VERSION = 14;
    // the registration's invariants Kafka's controller keeps and a log may break: checked, not enforced
    private static final int LEADER_OUTSIDE_REPLICAS = 15;
    private static final int ISR_OUTSIDE_REPLICAS = 16;
    private static final int RESULT_WIDTH = 17;

    /** A live registration: the values the last records set, and the directories they last gave. */
    private static final class Registration {
        final Object[] arrays = new Object[ARRAY_COUNT];
        Integer leader;
        Long leaderEpoch;
        Long partitionEpoch;
        Integer leaderRecoveryState;
        Seq<String> lastDirs;
        final String migratingDir;

        Registration(String migratingDir) {
            this.migratingDir = migratingDir;
        }

        Registration copy() {
            Registration next = new Registration(migratingDir);
            System.arraycopy(arrays, 0, next.arrays, 0, ARRAY_COUNT);
            next.leader = leader;
            next.leaderEpoch = leaderEpoch;
            next.partitionEpoch = partitionEpoch;
            next.leaderRecoveryState = leaderRecoveryState;
            next.lastDirs = lastDirs;
            return next;
        }

        int replicaCount() {
            Object replicas = arrays[0];
            return replicas == null ? -1 : ((Seq<?>) replicas).length();
        }

        /** {@code defaultToMigrating}: a list that is empty or all MIGRATING means MIGRATING for every replica. */
        boolean migrating() {
            if (lastDirs == null) {
                return false;
            }
            for (int i = 0; i < lastDirs.length(); i++) {
                if (!migratingDir.equals(lastDirs.apply(i))) {
                    return false;
                }
            }
            return true;
        }

        boolean directoriesMismatch() {
            return lastDirs != null && !migrating() && lastDirs.length() != replicaCount();
        }

        Object directories() {
            if (lastDirs == null) {
                return null;
            }
            if (migrating()) {
                String[] all = new String[Math.max(replicaCount(), 0)];
                Arrays.fill(all, migratingDir);
                return Arrays.asList(all);
            }
            return lastDirs;
        }

        boolean hasElr() {
            return notEmpty(arrays[ELR]) || notEmpty(arrays[LAST_KNOWN_ELR]);
        }

        Object[] values(String outcome) {
            return new Object[] {outcome, arrays[0], arrays[1], arrays[2], arrays[3], arrays[4], arrays[5],
                leader, leaderEpoch, partitionEpoch, leaderRecoveryState, directories(), null, null, false,
                leaderOutsideReplicas(), isrOutsideReplicas()};
        }

        /** A leader (not none) that is not one of the replicas; unknown (false) where either is null. */
        boolean leaderOutsideReplicas() {
            Seq<?> replicas = (Seq<?>) arrays[0];
            if (leader == null || leader < 0 || replicas == null) {
                return false;
            }
            boolean unknown = false;
            for (int i = 0; i < replicas.length(); i++) {
                Object replica = replicas.apply(i);
                if (leader.equals(replica)) {
                    return false;
                }
                unknown |= replica == null;
            }
            return !unknown;
        }

        /** An ISR member that is not one of the replicas; false where either list is null. */
        boolean isrOutsideReplicas() {
            Seq<?> replicas = (Seq<?>) arrays[0];
            Seq<?> isr = (Seq<?>) arrays[1];
            if (replicas == null || isr == null) {
                return false;
            }
            for (int i = 0; i < isr.length(); i++) {
                if (!replicas.contains(isr.apply(i))) {
                    return true;
                }
            }
            return false;
        }
    }

    private static boolean notEmpty(Object array) {
        return array != null && ((Seq<?>) array).length() > 0;
    }

    private static Object[] outcomeOnly(String outcome) {
        Object[] values = new Object[RESULT_WIDTH];
        values[0] = outcome;
        values[IS_VERSION] = false;
        values[LEADER_OUTSIDE_REPLICAS] = false;
        values[ISR_OUTSIDE_REPLICAS] = false;
        return values;
    }

    @SuppressWarnings("unchecked")
    private static Registration created(Row event, String migratingDir) {
        Registration created = new Registration(migratingDir);
        for (int i = 0; i < ARRAY_COUNT; i++) {
            created.arrays[i] = event.get(ARRAYS + i);
        }
        created.leader = (Integer) event.get(LEADER);
        created.leaderEpoch = event.isNullAt(BASE_LEADER_EPOCH) ? null : (long) event.getInt(BASE_LEADER_EPOCH);
        created.partitionEpoch =
            event.isNullAt(BASE_PARTITION_EPOCH) ? null : (long) event.getInt(BASE_PARTITION_EPOCH);
        created.leaderRecoveryState = (Integer) event.get(LEADER_RECOVERY_STATE);
        created.lastDirs = (Seq<String>) event.get(RECORD_DIRS);
        return created;
    }

    /** {@code PartitionRegistration.merge}: every value the record sets replaces the registration's. */
    @SuppressWarnings("unchecked")
    private static Registration merged(Registration before, Row event, boolean change) {
        Registration next = before.copy();
        for (int i = 0; i < ARRAY_COUNT; i++) {
            if (!event.isNullAt(ARRAYS + i)) {
                next.arrays[i] = event.get(ARRAYS + i);
            }
        }
        if (change && !event.isNullAt(LEADER)) {
            next.leader = event.getInt(LEADER);
            next.leaderEpoch = before.leaderEpoch == null ? null : before.leaderEpoch + 1;
        }
        next.partitionEpoch = before.partitionEpoch == null ? null : before.partitionEpoch + 1;
        if (!event.isNullAt(LEADER_RECOVERY_STATE)) {
            next.leaderRecoveryState = event.getInt(LEADER_RECOVERY_STATE);
        }
        if (!event.isNullAt(RECORD_DIRS)) {
            next.lastDirs = (Seq<String>) event.get(RECORD_DIRS);
        }
        return next;
    }

    @Override
    public List<Row> call(Seq<Row> events, String migratingDir) {
        List<Object[]> results = new ArrayList<>(events.length());
        List<Integer> applied = new ArrayList<>(events.length());
        Registration live = null;
        for (int i = 0; i < events.length(); i++) {
            Row event = events.apply(i);
            String kind = event.getString(KIND);
            switch (kind) {
                case "create" -> {
                    live = created(event, migratingDir);
                    results.add(live.values(APPLIED));
                    applied.add(i);
                }
                case "delete" -> {
                    live = null;
                    results.add(outcomeOnly(APPLIED));
                    applied.add(i);
                }
                case "change", "clear" -> {
                    if (!event.isNullAt(IS_MALFORMED) && event.getBoolean(IS_MALFORMED)) {
                        results.add(outcomeOnly(MALFORMED));
                        continue;
                    }
                    if (live == null) {
                        results.add(outcomeOnly(NO_PARTITION));
                        continue;
                    }
                    if (kind.equals("clear") && !live.hasElr()) {
                        results.add(outcomeOnly(NOTHING_TO_CLEAR));
                        continue;
                    }
                    Registration next = merged(live, event, kind.equals("change"));
                    if (next.directoriesMismatch()) {
                        results.add(outcomeOnly(DIRECTORIES_REFUSED));
                        continue;
                    }
                    live = next;
                    results.add(live.values(APPLIED));
                    applied.add(i);
                }
                default -> throw new IllegalArgumentException("unknown partition event kind " + kind);
            }
        }
        for (int k = 0; k < applied.size(); k++) {
            Row event = events.apply(applied.get(k));
            Object[] values = results.get(applied.get(k));
            Row next = k + 1 < applied.size() ? events.apply(applied.get(k + 1)) : null;
            if (next != null) {
                values[VALID_TO_OFFSET] = next.getLong(VISIBLE_OFFSET);
                values[VALID_TO_TIME_MS] = next.isNullAt(VISIBLE_TIME_MS) ? null : next.getLong(VISIBLE_TIME_MS);
            }
            values[IS_VERSION] = !event.getString(KIND).equals("delete")
                && (next == null || next.getLong(VISIBLE_OFFSET) != event.getLong(VISIBLE_OFFSET));
        }
        List<Row> rows = new ArrayList<>(results.size());
        for (Object[] values : results) {
            rows.add(RowFactory.create(values));
        }
        return rows;
    }
}
