package kraftreplay.audit;

import java.util.ArrayList;
import java.util.Comparator;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
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
 * <p>Input: the replica's broker id; its versions, its partition's versions and its broker's unfenced periods,
 * arrays of the structs {@code replay.audit.state_machines} declares ({@code REPLICA_STATE_INPUT},
 * {@code INTERVAL}, {@code UNFENCED_PERIOD}), each sorted by its start; the opened rows ({@code OPENED_STATE}) or
 * null. Output: its rows, structs of {@code REPLICA_STATE_RESULT} (whether each transition is valid is judged
 * after, by the controller's table in {@code replay.audit.state_machines}).
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
    // the steps (replay.audit.state_machines): a creation 10 (New) and 11 (its first real state)
    private static final int STEP_CREATE = 10;
    private static final int STEP_FIRST = 11;

    // REPLICA_STATE_INPUT: the interval and its cause, then the values the states are read from
    private static final int FROM = 0;
    private static final int TO = 1;
    private static final int FROM_TIME = 2;
    private static final int TO_TIME = 3;
    private static final int CAUSE_OFFSET = 4;
    private static final int CAUSE_TYPE = 5;
    private static final int TOPIC_NAME = 6;
    private static final int IN_ISR = 7;
    private static final int ADDING = 8;
    private static final int BROKER_FENCED = 9;
    // UNFENCED_PERIOD: up_from, up_to, up_from_time, up_cause_offset, up_cause_type
    private static final int UP_FROM = 0;
    private static final int UP_TO = 1;
    private static final int UP_FROM_TIME = 2;
    private static final int UP_CAUSE_OFFSET = 3;
    private static final int UP_CAUSE_TYPE = 4;
    // OPENED_STATE: the checkpoint C, then the stored row's values a resumed replay goes on from
    private static final int AT_C = 0;
    private static final int OPENED_STATE = 1;
    private static final int OPENED_PREVIOUS = 2;
    private static final int OPENED_STEP = 3;
    private static final int OPENED_FROM = 4;
    private static final int OPENED_FROM_TIME = 5;
    private static final int OPENED_CAUSE_OFFSET = 6;
    private static final int OPENED_CAUSE_TYPE = 7;
    private static final int OPENED_REASON = 8;
    private static final int OPENED_TOPIC_NAME = 9;

    /** One output row: a state of the replica over an interval, and the transition into it. */
    static final class State {
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

    private static Long longOrNull(Row row, int field) {
        return row.isNullAt(field) ? null : row.getLong(field);
    }

    private static String stringOrNull(Row row, int field) {
        return row.isNullAt(field) ? null : row.getString(field);
    }

    private static boolean isTrue(Row row, int field) {
        return !row.isNullAt(field) && row.getBoolean(field);
    }

    private static boolean isFalse(Row row, int field) {
        return !row.isNullAt(field) && !row.getBoolean(field);
    }

    private static long openEnd(Long end) {
        return end == null ? Long.MAX_VALUE : end;
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
        List<State> ordinary = ordinary(broker, versions, partition, member);
        List<State> edges = new ArrayList<>();
        for (State row : ordinary) {
            if (row.step == STEP_FIRST && !row.spliced) {
                State creation = new State();
                creation.topicName = row.topicName;
                creation.life = row.life;
                creation.state = NEW_REPLICA;
                creation.previousState = NON_EXISTENT_REPLICA;
                creation.step = STEP_CREATE;
                creation.from = row.from;
                creation.to = row.from;
                creation.fromTime = row.fromTime;
                creation.toTime = row.fromTime;
                creation.causeOffset = row.causeOffset;
                creation.causeType = row.causeType;
                creation.reason = row.reason;
                edges.add(creation);
            }
        }
        edges.addAll(deletions(broker, ordinary, partition, unfenced, waiting));
        // a membership that starts while the deletion of the one before still waits starts from the state that
        // deletion is in: the edges (creations, deletion steps) in offset and step order
        edges.sort(Comparator.comparingLong((State s) -> s.from).thenComparingInt(s -> s.step));
        for (int i = 1; i < edges.size(); i++) {
            State edge = edges.get(i);
            if (edge.step == STEP_CREATE && edges.get(i - 1).state != null) {
                edge.previousState = edges.get(i - 1).state;
            }
        }
        List<Row> rows = new ArrayList<>(ordinary.size() + edges.size());
        for (State row : ordinary) {
            rows.add(row.row());
        }
        for (State row : edges) {
            rows.add(row.row());
        }
        return rows;
    }

    /** The membership states: each version's state, equal touching ones of a life merged, then their transitions. */
    private static List<State> ordinary(String broker, Seq<Row> versions, Seq<Row> partition, Row member) {
        List<State> merged = new ArrayList<>();
        List<String> fencedTexts = new ArrayList<>();
        if (versions == null) {
            return merged;
        }
        // the membership live at C goes on: it has left NewReplica already unless its stored state is NewReplica
        int carry = member != null && !NEW_REPLICA.equals(member.getString(OPENED_STATE)) ? 1 : 0;
        int life = 0;
        long left = 0;
        long leftBeforeRun = 0;
        Long previousTo = null;
        for (int i = 0; i < versions.length(); i++) {
            Row version = versions.apply(i);
            long from = version.getLong(FROM);
            if (i == 0 || previousTo == null || previousTo != from) {
                life++;
                leftBeforeRun = left;
            }
            previousTo = longOrNull(version, TO);
            boolean alive = isFalse(version, BROKER_FENCED);
            boolean catchingUp = alive && isTrue(version, ADDING) && isFalse(version, IN_ISR);
            left += catchingUp ? 0 : 1;
            long leftNew = left - leftBeforeRun + (life == 1 ? carry : 0);
            String state = leftNew == 0 ? NEW_REPLICA : alive ? ONLINE_REPLICA : OFFLINE_REPLICA;
            State last = merged.isEmpty() ? null : merged.get(merged.size() - 1);
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
            merged.add(row);
            fencedTexts.add(version.isNullAt(BROKER_FENCED) ? " not registered" : " fenced");
        }
        List<Long> lifeStarts = new ArrayList<>();
        Long partitionTo = null;
        for (int i = 0; partition != null && i < partition.length(); i++) {
            Row span = partition.apply(i);
            long from = span.getLong(FROM);
            if (i == 0 || partitionTo == null || partitionTo != from) {
                lifeStarts.add(from);
            }
            partitionTo = longOrNull(span, TO);
        }
        for (int j = 0; j < merged.size(); j++) {
            State row = merged.get(j);
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
            // resumed: the version holding C is the stored open row going on
            if (member != null && row.from <= member.getLong(AT_C)) {
                row.spliced = true;
                row.previousState = stringOrNull(member, OPENED_PREVIOUS);
                row.step = member.getInt(OPENED_STEP);
                row.from = member.getLong(OPENED_FROM);
                row.fromTime = longOrNull(member, OPENED_FROM_TIME);
                row.causeOffset = longOrNull(member, OPENED_CAUSE_OFFSET);
                row.causeType = stringOrNull(member, OPENED_CAUSE_TYPE);
                row.reason = stringOrNull(member, OPENED_REASON);
            }
        }
        return merged;
    }

    /** The deletion steps of every membership that ended, and of a stored deletion still waiting for its broker. */
    private static List<State> deletions(String broker, List<State> ordinary, Seq<Row> partition, Seq<Row> unfenced,
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
        for (State row : ordinary) {
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
        List<State> steps = new ArrayList<>();
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
                steps.add(step(island, OFFLINE_REPLICA, island.lastState, 1, island.end, island.endTime, null, null,
                    causeOffset, causeType, why));
            }
            steps.add(step(island, DELETION_STARTED, OFFLINE_REPLICA, 2, island.end, island.endTime, null, null,
                causeOffset, causeType, why));
            if (now) {
                steps.add(step(island, DELETION_SUCCESSFUL, DELETION_STARTED, 3, island.end, island.endTime, null,
                    null, causeOffset, causeType, broker + " deleted the replica"));
                steps.add(step(island, NON_EXISTENT_REPLICA, DELETION_SUCCESSFUL, 4, island.end, island.endTime, null,
                    null, causeOffset, causeType, why));
            } else {
                State ineligible = step(island, DELETION_INELIGIBLE, DELETION_STARTED, 3, island.end, island.endTime,
                    null, null, causeOffset, causeType, broker + " is down: deletion waits for it");
                ineligible.to = back != null ? back : nextStart;
                ineligible.toTime = backTime != null ? backTime : nextStartTime;
                steps.add(ineligible);
            }
            if (later) {
                String retry = broker + " is back: deletion retried";
                Long backOffset = longOrNull(up, UP_CAUSE_OFFSET);
                String backType = stringOrNull(up, UP_CAUSE_TYPE);
                steps.add(step(island, OFFLINE_REPLICA, DELETION_INELIGIBLE, 5, back, backTime, null, null,
                    backOffset, backType, retry));
                steps.add(step(island, DELETION_STARTED, OFFLINE_REPLICA, 6, back, backTime, null, null, backOffset,
                    backType, retry));
                steps.add(step(island, DELETION_SUCCESSFUL, DELETION_STARTED, 7, back, backTime, null, null,
                    backOffset, backType, retry));
                steps.add(step(island, NON_EXISTENT_REPLICA, DELETION_SUCCESSFUL, 8, back, backTime, null, null,
                    backOffset, backType, retry));
            }
        }
        return steps;
    }

    /** A generated transition at {@code at}; without an end ({@code to} null) it lasts no offset. */
    private static State step(Island island, String state, String previous, int step, Long at, Long atTime, Long to,
                              Long toTime, Long causeOffset, String causeType, String reason) {
        State row = new State();
        row.topicName = island.topicName;
        row.life = island.life;
        row.state = state;
        row.previousState = previous;
        row.step = step;
        row.from = at;
        row.to = to != null ? to : at;
        row.fromTime = atTime;
        row.toTime = to != null ? toTime : atTime;
        row.causeOffset = causeOffset;
        row.causeType = causeType;
        row.reason = reason;
        return row;
    }
}
