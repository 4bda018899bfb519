package kraftreplay.audit;

import static kraftreplay.core.Interval.CAUSE_OFFSET;
import static kraftreplay.core.Interval.CAUSE_TYPE;
import static kraftreplay.core.Interval.FROM;
import static kraftreplay.core.Interval.FROM_TIME;
import static kraftreplay.core.Interval.TO;
import static kraftreplay.core.Interval.TO_TIME;
import static kraftreplay.core.Interval.longOrNull;
import static kraftreplay.core.Interval.stringOrNull;

import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;

/**
 * One row of a state table ({@code replay.audit.state_machines.STATE_RESULT}): a state of a replica or a partition
 * over an interval, the transition into it, and the life (run of touching versions) it belongs to. What both state
 * machines' passes do alike: a version's state started or continued, a transition lasting no offset, and a resumed
 * pass going on from the stored open row ({@code OPENED_STATE}).
 */
final class StateVersion {
    // ``step`` values (replay.audit.state_machines): a (re-)creation 10 (New) and 11 (its first real state)
    static final int STEP_CREATE = 10;
    static final int STEP_FIRST = 11;
    // OPENED_STATE: the checkpoint C, then the stored row's values a resumed pass goes on from
    private static final int AT_C = 0;
    static final int OPENED_STATE = 1;
    private static final int OPENED_PREVIOUS = 2;
    private static final int OPENED_STEP = 3;
    static final int OPENED_FROM = 4;
    static final int OPENED_FROM_TIME = 5;
    static final int OPENED_CAUSE_OFFSET = 6;
    static final int OPENED_CAUSE_TYPE = 7;
    private static final int OPENED_REASON = 8;
    static final int OPENED_TOPIC_NAME = 9;

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

    /** ``state`` over ``version``'s interval, with its cause, in ``life``. */
    static StateVersion of(Row version, String topicName, int life, String state) {
        StateVersion row = new StateVersion();
        row.topicName = topicName;
        row.life = life;
        row.state = state;
        row.from = version.getLong(FROM);
        row.to = longOrNull(version, TO);
        row.fromTime = longOrNull(version, FROM_TIME);
        row.toTime = longOrNull(version, TO_TIME);
        row.causeOffset = longOrNull(version, CAUSE_OFFSET);
        row.causeType = stringOrNull(version, CAUSE_TYPE);
        return row;
    }

    /** A transition at {@code at} lasting no offset (left at the offset it was entered). */
    static StateVersion transition(String topicName, int life, String state, String previous, int step, Long at,
                                   Long atTime, Long causeOffset, String causeType, String reason) {
        StateVersion row = new StateVersion();
        row.topicName = topicName;
        row.life = life;
        row.state = state;
        row.previousState = previous;
        row.step = step;
        row.from = at;
        row.to = at;
        row.fromTime = atTime;
        row.toTime = atTime;
        row.causeOffset = causeOffset;
        row.causeType = causeType;
        row.reason = reason;
        return row;
    }

    /** ``version`` starts a life: the first version, or one that does not touch the one ``before`` it. */
    static boolean startsLife(Row before, Row version) {
        return before == null || before.isNullAt(TO) || before.getLong(TO) != version.getLong(FROM);
    }

    /**
     * ``version`` goes on in this row when it touches it and holds the same state in the same life (as
     * {@code replay.core.history.collapse} merges them): the row then takes its end.
     */
    boolean continuedBy(Row version, int versionLife, String versionState) {
        if (life != versionLife || !state.equals(versionState) || to == null || to != version.getLong(FROM)) {
            return false;
        }
        to = longOrNull(version, TO);
        toTime = longOrNull(version, TO_TIME);
        return true;
    }

    /** Resumed: the row holding C is the stored open row going on (its start, cause, previous state, step, reason). */
    void goOnFrom(Row opened) {
        if (opened == null || from > opened.getLong(AT_C)) {
            return;
        }
        spliced = true;
        previousState = stringOrNull(opened, OPENED_PREVIOUS);
        step = opened.getInt(OPENED_STEP);
        from = opened.getLong(OPENED_FROM);
        fromTime = longOrNull(opened, OPENED_FROM_TIME);
        causeOffset = longOrNull(opened, OPENED_CAUSE_OFFSET);
        causeType = stringOrNull(opened, OPENED_CAUSE_TYPE);
        reason = stringOrNull(opened, OPENED_REASON);
    }

    /** The creation before a first state not spliced onto a stored one: {@code nonExistent} → {@code created}. */
    StateVersion creation(String created, String nonExistent, String creationReason) {
        return transition(topicName, life, created, nonExistent, STEP_CREATE, from, fromTime, causeOffset, causeType,
            creationReason);
    }

    Row row() {
        return RowFactory.create(topicName, state, previousState, step, from, to, fromTime, toTime, causeOffset,
            causeType, reason);
    }
}
