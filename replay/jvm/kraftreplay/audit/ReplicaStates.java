package kraftreplay.audit;

import static kraftreplay.audit.StateVersion.OPENED_CAUSE_OFFSET;
import static kraftreplay.audit.StateVersion.OPENED_CAUSE_TYPE;
import static kraftreplay.audit.StateVersion.OPENED_FROM;
import static kraftreplay.audit.StateVersion.OPENED_FROM_TIME;
import static kraftreplay.audit.StateVersion.OPENED_STATE;
import static kraftreplay.audit.StateVersion.OPENED_TOPIC_NAME;
import static kraftreplay.audit.StateVersion.STEP_CREATE;
import static kraftreplay.audit.StateVersion.STEP_FIRST;
import static kraftreplay.core.Interval.CAUSE_OFFSET;
import static kraftreplay.core.Interval.CAUSE_TYPE;
import static kraftreplay.core.Interval.FROM;
import static kraftreplay.core.Interval.WIDTH;
import static kraftreplay.core.Interval.longOrNull;
import static kraftreplay.core.Interval.openEnd;
import static kraftreplay.core.Interval.stringOrNull;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.api.java.UDF5;
import scala.collection.Seq;

/**
 * One replica's states in the terms of the ZooKeeper-era controller's {@code ReplicaStateMachine}, in one pass over
 * its versions in offset order: the rules {@code replay.audit.state_machines} states (its module docstring and
 * {@code docs/state-machines.md}).
 *
 * <p>A membership is a run of touching versions of the replica (a life); it is {@code NewReplica} while every
 * version of it so far is catching up (its broker unfenced, the replica adding and not in the ISR), then
 * {@code OnlineReplica} while its broker is unfenced and {@code OfflineReplica} while not; equal touching states of
 * one life are one version, with the start and cause of the first. A membership that ends goes through the deletion
 * steps at its end, at once when its broker is unfenced then, else {@code ReplicaDeletionIneligible} until the
 * broker's next unfenced period (retried then) or the next membership.
 *
 * <p>Resumed from a checkpoint C ({@code opened}: the replica's stored open rows with C), the versions are those
 * live after C; a stored membership state goes on (the version holding C keeps the stored row's start, cause,
 * previous state, step and reason) and a stored waiting deletion is a membership that ended at its start.
 *
 * <p>Input: the replica's broker id; its versions, its partition's edges (the versions starting a life of the
 * partition or changing its replica set: where a membership can start as the partition's, or end) and its broker's
 * unfenced periods, arrays of the structs {@code replay.audit.state_machines} declares ({@code REPLICA_STATE_INPUT},
 * {@code UNFENCED_PERIOD}) and {@code replay.core.partition_edges} ({@code PARTITION_EDGE}), each sorted by its
 * start; the opened rows ({@code OPENED_STATE}) or null. Output: its rows, structs of {@code STATE_RESULT}
 * (whether each transition is valid is judged after, by the controller's table in
 * {@code replay.audit.state_machines}).
 */
public final class ReplicaStates implements UDF5<Integer, Seq<Row>, Seq<Row>, Seq<Row>, Seq<Row>, List<Row>> {
    private static final long serialVersionUID = 1L;

    static final String NEW_REPLICA = "NewReplica";
    static final String ONLINE_REPLICA = "OnlineReplica";
    static final String OFFLINE_REPLICA = "OfflineReplica";
    static final String DELETION_STARTED = "ReplicaDeletionStarted";
    static final String DELETION_SUCCESSFUL = "ReplicaDeletionSuccessful";
    static final String DELETION_INELIGIBLE = "ReplicaDeletionIneligible";
    static final String NON_EXISTENT_REPLICA = "NonExistentReplica";
    private static final String REMOVE_TOPIC = "RemoveTopicRecord";

    // REPLICA_STATE_INPUT: the interval and its cause, then the values the states are read from
    private static final int TOPIC_NAME = WIDTH;
    private static final int IN_ISR = WIDTH + 1;
    private static final int ADDING = WIDTH + 2;
    private static final int BROKER_FENCED = WIDTH + 3;
    // PARTITION_EDGE: the interval and its cause, then whether it starts a life of the partition
    private static final int STARTS_LIFE = WIDTH;
    // UNFENCED_PERIOD: up_from, up_to, up_from_time, up_cause_offset, up_cause_type
    private static final int UP_FROM = 0;
    private static final int UP_TO = 1;
    private static final int UP_FROM_TIME = 2;
    private static final int UP_CAUSE_OFFSET = 3;
    private static final int UP_CAUSE_TYPE = 4;
    /** A membership as the deletion steps read it: its last state, its end, its start and a waiting cause. */
    private static final class Island {
        String topicName;
        int life;
        String lastState;
        Long end;
        Long endTime;
        long start;
        Long startTime;
        Long waitingOffset;
        String waitingType;
    }

    private static boolean isTrue(Row row, int field) {
        return !row.isNullAt(field) && row.getBoolean(field);
    }

    private static boolean isFalse(Row row, int field) {
        return !row.isNullAt(field) && !row.getBoolean(field);
    }

    @Override
    public List<Row> call(Integer brokerId, Seq<Row> versions, Seq<Row> partition, Seq<Row> unfenced,
                          Seq<Row> opened) {
        String broker = "broker " + brokerId;
        Row member = null;
        List<Row> waiting = new ArrayList<>();
        if (opened != null) {
            for (int i = 0; i < opened.length(); i++) {
                Row row = opened.apply(i);
                if (DELETION_INELIGIBLE.equals(row.getString(OPENED_STATE))) {
                    waiting.add(row);
                } else if (member == null) {
                    member = row;
                }
            }
        }
        List<StateVersion> ordinary = ordinary(broker, versions, partition, member);
        List<StateVersion> edges = new ArrayList<>();
        for (StateVersion row : ordinary) {
            if (row.step == STEP_FIRST && !row.spliced) {
                edges.add(row.creation(NEW_REPLICA, NON_EXISTENT_REPLICA, row.reason));
            }
        }
        edges.addAll(deletions(broker, ordinary, partition, unfenced, waiting));
        // a membership that starts while the deletion of the one before still waits starts from the state that
        // deletion is in: the edges (creations, deletion steps) in offset and step order
        edges.sort(Comparator.comparingLong((StateVersion s) -> s.from).thenComparingInt(s -> s.step));
        for (int i = 1; i < edges.size(); i++) {
            StateVersion edge = edges.get(i);
            if (edge.step == STEP_CREATE && edges.get(i - 1).state != null) {
                edge.previousState = edges.get(i - 1).state;
            }
        }
        List<Row> rows = new ArrayList<>(ordinary.size() + edges.size());
        for (StateVersion row : ordinary) {
            rows.add(row.row());
        }
        for (StateVersion row : edges) {
            rows.add(row.row());
        }
        return rows;
    }

    /** The membership states: each version's state, equal touching ones of a life merged, then their transitions. */
    private static List<StateVersion> ordinary(String broker, Seq<Row> versions, Seq<Row> partition, Row member) {
        List<StateVersion> merged = new ArrayList<>();
        List<String> fencedTexts = new ArrayList<>();
        if (versions == null) {
            return merged;
        }
        // the membership live at C goes on: it has left NewReplica already unless its stored state is NewReplica
        int carry = member != null && !NEW_REPLICA.equals(member.getString(OPENED_STATE)) ? 1 : 0;
        int life = 0;
        long left = 0;
        long leftBeforeRun = 0;
        for (int i = 0; i < versions.length(); i++) {
            Row version = versions.apply(i);
            if (StateVersion.startsLife(i == 0 ? null : versions.apply(i - 1), version)) {
                life++;
                leftBeforeRun = left;
            }
            boolean alive = isFalse(version, BROKER_FENCED);
            boolean catchingUp = alive && isTrue(version, ADDING) && isFalse(version, IN_ISR);
            left += catchingUp ? 0 : 1;
            long leftNew = left - leftBeforeRun + (life == 1 ? carry : 0);
            String state = leftNew == 0 ? NEW_REPLICA : alive ? ONLINE_REPLICA : OFFLINE_REPLICA;
            StateVersion last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
            if (last != null && last.continuedBy(version, life, state)) {
                continue;
            }
            merged.add(StateVersion.of(version, stringOrNull(version, TOPIC_NAME), life, state));
            fencedTexts.add(version.isNullAt(BROKER_FENCED) ? " not registered" : " fenced");
        }
        List<Long> lifeStarts = new ArrayList<>();
        for (int i = 0; partition != null && i < partition.length(); i++) {
            Row span = partition.apply(i);
            if (span.getBoolean(STARTS_LIFE)) {
                lifeStarts.add(span.getLong(FROM));
            }
        }
        for (int j = 0; j < merged.size(); j++) {
            StateVersion row = merged.get(j);
            boolean first = j == 0 || merged.get(j - 1).life != row.life;
            String previous = j == 0 ? null : merged.get(j - 1).state;
            String origin = lifeStarts.contains(row.from) ? "partition created" : "added by a reassignment";
            if (OFFLINE_REPLICA.equals(row.state)) {
                row.reason = broker + fencedTexts.get(j);
            } else if (first) {
                row.reason = origin;
            } else if (NEW_REPLICA.equals(previous)) {
                row.reason = "caught up: joined the ISR";
            } else {
                row.reason = broker + " unfenced";
            }
            boolean isNew = NEW_REPLICA.equals(row.state);
            row.previousState = first && isNew ? NON_EXISTENT_REPLICA : first ? NEW_REPLICA : previous;
            row.step = first && !isNew ? STEP_FIRST : first ? STEP_CREATE : 0;
            row.goOnFrom(member);
        }
        return merged;
    }

    /** The deletion steps of every membership that ended, and of a stored deletion still waiting for its broker. */
    private static List<StateVersion> deletions(String broker, List<StateVersion> ordinary, Seq<Row> partition, Seq<Row> unfenced,
                                         List<Row> waiting) {
        List<Island> islands = new ArrayList<>();
        for (Row row : waiting) {
            Island island = new Island();
            island.topicName = stringOrNull(row, OPENED_TOPIC_NAME);
            island.life = 0;
            island.lastState = OFFLINE_REPLICA;
            island.end = row.getLong(OPENED_FROM);
            island.endTime = longOrNull(row, OPENED_FROM_TIME);
            island.start = row.getLong(OPENED_FROM);
            island.startTime = island.endTime;
            island.waitingOffset = longOrNull(row, OPENED_CAUSE_OFFSET);
            island.waitingType = stringOrNull(row, OPENED_CAUSE_TYPE);
            islands.add(island);
        }
        Island current = null;
        for (StateVersion row : ordinary) {
            if (current == null || current.life != row.life) {
                current = new Island();
                current.topicName = row.topicName;
                current.life = row.life;
                current.start = row.from;
                current.startTime = row.fromTime;
                islands.add(current);
            } else if (row.from < current.start) {
                current.start = row.from;
                current.startTime = row.fromTime;
            }
            current.lastState = row.state;
            current.end = row.to;
            current.endTime = row.toTime;
        }
        Map<Long, Row> goesOn = new HashMap<>();
        for (int i = 0; partition != null && i < partition.length(); i++) {
            Row span = partition.apply(i);
            goesOn.put(span.getLong(FROM), span);
        }
        List<StateVersion> steps = new ArrayList<>();
        for (int i = 0; i < islands.size(); i++) {
            Island island = islands.get(i);
            if (island.end == null) {
                continue;
            }
            Island next = i + 1 < islands.size() ? islands.get(i + 1) : null;
            Long nextStart = next == null ? null : next.start;
            Long nextStartTime = next == null ? null : next.startTime;
            Row change = goesOn.get(island.end);
            Long changeOffset = island.waitingOffset != null ? island.waitingOffset
                : change == null ? null : longOrNull(change, CAUSE_OFFSET);
            String changeType = island.waitingType != null ? island.waitingType
                : change == null ? null : stringOrNull(change, CAUSE_TYPE);
            Row up = null;  // the broker's first unfenced period that reaches past the end
            for (int u = 0; unfenced != null && u < unfenced.length(); u++) {
                Row period = unfenced.apply(u);
                if (openEnd(longOrNull(period, UP_TO)) > island.end) {
                    up = period;
                    break;
                }
            }
            Long back = null;
            Long backTime = null;
            if (up != null && openEnd(nextStart) >= up.getLong(UP_FROM)) {
                back = Math.max(up.getLong(UP_FROM), island.end);
            }
            if (back != null) {
                backTime = back > island.end ? longOrNull(up, UP_FROM_TIME) : island.endTime;
            }
            Long causeOffset = changeOffset != null ? changeOffset : island.end;
            String causeType = changeType != null ? changeType : REMOVE_TOPIC;
            String why = changeOffset != null ? "removed by a reassignment" : "topic deleted";
            boolean now = back != null && back.longValue() == island.end.longValue();
            boolean later = back != null && back > island.end;
            if (!OFFLINE_REPLICA.equals(island.lastState)) {
                steps.add(step(island, OFFLINE_REPLICA, island.lastState, 1, island.end, island.endTime,
                    causeOffset, causeType, why));
            }
            steps.add(step(island, DELETION_STARTED, OFFLINE_REPLICA, 2, island.end, island.endTime,
                causeOffset, causeType, why));
            if (now) {
                steps.add(step(island, DELETION_SUCCESSFUL, DELETION_STARTED, 3, island.end, island.endTime,
                    causeOffset, causeType, broker + " deleted the replica"));
                steps.add(step(island, NON_EXISTENT_REPLICA, DELETION_SUCCESSFUL, 4, island.end, island.endTime,
                    causeOffset, causeType, why));
            } else {
                StateVersion ineligible = step(island, DELETION_INELIGIBLE, DELETION_STARTED, 3, island.end,
                    island.endTime, causeOffset, causeType, broker + " is down: deletion waits for it");
                ineligible.to = back != null ? back : nextStart;
                ineligible.toTime = backTime != null ? backTime : nextStartTime;
                steps.add(ineligible);
            }
            if (later) {
                String retry = broker + " is back: deletion retried";
                Long backOffset = longOrNull(up, UP_CAUSE_OFFSET);
                String backType = stringOrNull(up, UP_CAUSE_TYPE);
                steps.add(step(island, OFFLINE_REPLICA, DELETION_INELIGIBLE, 5, back, backTime,
                    backOffset, backType, retry));
                steps.add(step(island, DELETION_STARTED, OFFLINE_REPLICA, 6, back, backTime, backOffset,
                    backType, retry));
                steps.add(step(island, DELETION_SUCCESSFUL, DELETION_STARTED, 7, back, backTime,
                    backOffset, backType, retry));
                steps.add(step(island, NON_EXISTENT_REPLICA, DELETION_SUCCESSFUL, 8, back, backTime,
                    backOffset, backType, retry));
            }
        }
        return steps;
    }

    /** A step of ``island``'s deletion at {@code at}, lasting no offset (the caller gives a waiting step its end). */
    private static StateVersion step(Island island, String state, String previous, int step, Long at, Long atTime,
                                     Long causeOffset, String causeType, String reason) {
        return StateVersion.transition(island.topicName, island.life, state, previous, step, at, atTime, causeOffset,
            causeType, reason);
    }
}
