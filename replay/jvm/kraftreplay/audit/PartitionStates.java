package kraftreplay.audit;

import static kraftreplay.core.Interval.WIDTH;
import static kraftreplay.core.Interval.stringOrNull;

import java.util.ArrayList;
import java.util.List;
import org.apache.spark.sql.Row;
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

    // PARTITION_STATE_INPUT: the interval and its cause, then the values the states are read from
    private static final int TOPIC_NAME = WIDTH;
    private static final int LEADER = WIDTH + 1;
    private static final int ISR = WIDTH + 2;

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
        List<StateVersion> ordinary = new ArrayList<>();
        int life = 0;
        for (int i = 0; i < versions.length(); i++) {
            Row version = versions.apply(i);
            if (StateVersion.startsLife(i == 0 ? null : versions.apply(i - 1), version)) {
                life++;
            }
            String state = !version.isNullAt(LEADER) && version.getInt(LEADER) >= 0 ? ONLINE_PARTITION
                : OFFLINE_PARTITION;
            StateVersion last = ordinary.isEmpty() ? null : ordinary.get(ordinary.size() - 1);
            if (last != null && last.continuedBy(version, life, state)) {
                continue;
            }
            StateVersion row = StateVersion.of(version, stringOrNull(version, TOPIC_NAME), life, state);
            row.reason = reason(state, version);
            boolean first = last == null || last.life != life;
            row.previousState = first ? NEW_PARTITION : last.state;
            row.step = first ? StateVersion.STEP_FIRST : 0;
            ordinary.add(row);
        }
        List<Row> rows = new ArrayList<>(ordinary.size() + 4);
        for (int j = 0; j < ordinary.size(); j++) {
            StateVersion row = ordinary.get(j);
            row.goOnFrom(stored);
            rows.add(row.row());
            if (row.step == StateVersion.STEP_FIRST && !row.spliced) {
                rows.add(row.creation(NEW_PARTITION, NON_EXISTENT_PARTITION, "partition created").row());
            }
            boolean lastOfLife = j + 1 == ordinary.size() || ordinary.get(j + 1).life != row.life;
            if (lastOfLife && row.to != null) {
                if (ONLINE_PARTITION.equals(row.state)) {
                    rows.add(deletion(row, OFFLINE_PARTITION, ONLINE_PARTITION, 1));
                }
                rows.add(deletion(row, NON_EXISTENT_PARTITION, OFFLINE_PARTITION, 2));
            }
        }
        return rows;
    }

    /** A step of the deletion at the end of ``row``'s life (the topic's removal). */
    private static Row deletion(StateVersion row, String state, String previous, int step) {
        return StateVersion.transition(row.topicName, row.life, state, previous, step, row.to, row.toTime, row.to,
            REMOVE_TOPIC, TOPIC_DELETED).row();
    }
}
