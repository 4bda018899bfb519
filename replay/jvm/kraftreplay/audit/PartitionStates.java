package kraftreplay.audit;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF2;
import scala.collection.Seq;

/**
 * One partition's states in the terms of the ZooKeeper-era controller's {@code PartitionStateMachine}, in one pass
 * over its versions in offset order: the rules {@code replay.audit.state_machines} states (its module docstring and
 * {@code docs/state-machines.md}).
 *
 * <p>A life of the partition is a run of touching versions (its creation to its deletion): {@code NewPartition} at
 * its start, then {@code OnlinePartition} while it has a leader and {@code OfflinePartition} while its leader is -1,
 * equal touching states of one life one version with the start, cause, leader and ISR of the first; a life that
 * ends (the topic deleted) goes {@code Offline} → {@code NonExistentPartition} at its end.
 *
 * <p>Resumed from a checkpoint C ({@code opened}: the partition's stored open row with C), the versions are those live
 * after C, and the version holding C is the stored open row going on (its start, cause, previous state, step and
 * reason).
 *
 * <p>Input: the partition's versions, structs of {@code replay.audit.state_machines.PARTITION_STATE_INPUT} sorted by
 * their start, and the opened rows ({@code OPENED_STATE}) or null. Output: its rows, structs of {@code STATE_RESULT}
 * (whether each transition is valid is judged after, by the controller's table in
 * {@code replay.audit.state_machines}).
 */
public final class PartitionStates implements UDF2<Seq<Row>, Seq<Row>, List<Row>> {
    private static final long serialVersionUID = 1L;

    static final String NEW_PARTITION = "NewPartition";
    static final String ONLINE_PARTITION = "OnlinePartition";
    static final String OFFLINE_PARTITION = "OfflinePartition";
    static final String NON_EXISTENT_PARTITION = "NonExistentPartition";
    private static final String REMOVE_TOPIC = "RemoveTopicRecord";
    private static final String TOPIC_DELETED = "topic deleted";
    // the steps (replay.audit.state_machines): a creation 10 (New) and 11 (its first real state)
    private static final int STEP_CREATE = 10;
    private static final int STEP_FIRST = 11;

    // PARTITION_STATE_INPUT: the interval and its cause, then the values the states are read from
    private static final int FROM = 0;
    private static final int TO = 1;
    private static final int FROM_TIME = 2;
    private static final int TO_TIME = 3;
    private static final int CAUSE_OFFSET = 4;
    private static final int CAUSE_TYPE = 5;
    private static final int TOPIC_NAME = 6;
    private static final int LEADER = 7;
    private static final int ISR = 8;
    // OPENED_STATE: the checkpoint C, then the stored row's values a resumed replay goes on from
    private static final int AT_C = 0;
    private static final int OPENED_PREVIOUS = 2;
    private static final int OPENED_STEP = 3;
    private static final int OPENED_FROM = 4;
    private static final int OPENED_FROM_TIME = 5;
    private static final int OPENED_CAUSE_OFFSET = 6;
    private static final int OPENED_CAUSE_TYPE = 7;
    private static final int OPENED_REASON = 8;

    /** One output row: a state of the partition over an interval, and the transition into it. */
    private static final class State {
        String topicName;
        int life;
        String state;
        String previousState;
        int step;
        Long from;
        Long to;
        Long fromTime;
        Long toTime;
        Long causeOffset;
        String causeType;
        String reason;
        boolean spliced;

        Row row() {
            return RowFactory.create(topicName, state, previousState, step, from, to, fromTime, toTime, causeOffset,
                causeType, reason);
        }
    }

    private static Long longOrNull(Row row, int field) {
        return row.isNullAt(field) ? null : row.getLong(field);
    }

    private static String stringOrNull(Row row, int field) {
        return row.isNullAt(field) ? null : row.getString(field);
    }

    /** The reason of a state as the first version of it gives it: its leader, or the ISR it waits on. */
    private static String reason(String state, Row version) {
        if (ONLINE_PARTITION.equals(state)) {
            return "leader " + version.getInt(LEADER);
        }
        if (version.isNullAt(ISR)) {
            return null;
        }
        Seq<?> isr = (Seq<?>) version.get(ISR);
        StringBuilder members = new StringBuilder();
        for (int i = 0; i < isr.length(); i++) {
            Object member = isr.apply(i);
            if (member != null) {
                members.append(members.length() == 0 ? "" : ", ").append(member);
            }
        }
        return "no leader (ISR [" + members + "])";
    }

    @Override
    public List<Row> call(Seq<Row> versions, Seq<Row> opened) {
        Row stored = opened == null || opened.length() == 0 ? null : opened.apply(0);
        List<State> ordinary = new ArrayList<>();
        int life = 0;
        Long previousTo = null;
        for (int i = 0; i < versions.length(); i++) {
            Row version = versions.apply(i);
            long from = version.getLong(FROM);
            if (i == 0 || previousTo == null || previousTo != from) {
                life++;
            }
            previousTo = longOrNull(version, TO);
            String state = !version.isNullAt(LEADER) && version.getInt(LEADER) >= 0 ? ONLINE_PARTITION
                : OFFLINE_PARTITION;
            State last = ordinary.isEmpty() ? null : ordinary.get(ordinary.size() - 1);
            if (last != null && last.life == life && last.state.equals(state) && last.to != null
                    && last.to == from) {
                last.to = previousTo;
                last.toTime = longOrNull(version, TO_TIME);
                continue;
            }
            State row = new State();
            row.topicName = stringOrNull(version, TOPIC_NAME);
            row.life = life;
            row.state = state;
            row.from = from;
            row.to = previousTo;
            row.fromTime = longOrNull(version, FROM_TIME);
            row.toTime = longOrNull(version, TO_TIME);
            row.causeOffset = longOrNull(version, CAUSE_OFFSET);
            row.causeType = stringOrNull(version, CAUSE_TYPE);
            row.reason = reason(state, version);
            boolean first = last == null || last.life != life;
            row.previousState = first ? NEW_PARTITION : last.state;
            row.step = first ? STEP_FIRST : 0;
            ordinary.add(row);
        }
        for (State row : ordinary) {
            // resumed: the version holding C is the stored open row going on
            if (stored != null && row.from <= stored.getLong(AT_C)) {
                row.spliced = true;
                row.previousState = stringOrNull(stored, OPENED_PREVIOUS);
                row.step = stored.getInt(OPENED_STEP);
                row.from = stored.getLong(OPENED_FROM);
                row.fromTime = longOrNull(stored, OPENED_FROM_TIME);
                row.causeOffset = longOrNull(stored, OPENED_CAUSE_OFFSET);
                row.causeType = stringOrNull(stored, OPENED_CAUSE_TYPE);
                row.reason = stringOrNull(stored, OPENED_REASON);
            }
        }
        List<Row> rows = new ArrayList<>(ordinary.size() + 4);
        for (int j = 0; j < ordinary.size(); j++) {
            State row = ordinary.get(j);
            rows.add(row.row());
            if (row.step == STEP_FIRST && !row.spliced) {
                rows.add(transition(row, NEW_PARTITION, NON_EXISTENT_PARTITION, STEP_CREATE, row.from, row.fromTime,
                    row.causeOffset, row.causeType, "partition created"));
            }
            boolean lastOfLife = j + 1 == ordinary.size() || ordinary.get(j + 1).life != row.life;
            if (lastOfLife && row.to != null) {
                if (ONLINE_PARTITION.equals(row.state)) {
                    rows.add(transition(row, OFFLINE_PARTITION, ONLINE_PARTITION, 1, row.to, row.toTime, row.to,
                        REMOVE_TOPIC, TOPIC_DELETED));
                }
                rows.add(transition(row, NON_EXISTENT_PARTITION, OFFLINE_PARTITION, 2, row.to, row.toTime, row.to,
                    REMOVE_TOPIC, TOPIC_DELETED));
            }
        }
        return rows;
    }

    /** A generated transition at {@code at}, lasting no offset. */
    private static Row transition(State of, String state, String previous, int step, Long at, Long atTime,
                                  Long causeOffset, String causeType, String reason) {
        return RowFactory.create(of.topicName, state, previous, step, at, at, atTime, atTime, causeOffset, causeType,
            reason);
    }
}
