package kraftreplay.fold;

import static kraftreplay.core.Interval.WIDTH;

import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;
import kraftreplay.core.Interval;
import kraftreplay.core.PartitionEdges;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;
import scala.collection.Seq;

/**
 * A partition's versions split into its replicas' versions, in one pass over them in offset order: each broker
 * listed in a version's replicas gets that version with its role in it, as Spark's {@code leader = broker} and
 * {@code array_contains} would give it (null where the field is null), and the directory at its position (null where
 * there is none). A broker listed twice in one version is one replica, at its first position (as
 * {@code PartitionRegistration.directory} reads it).
 *
 * <p>The partition's versions come sorted by offset and grouped by partition, so no row is sorted by replica: a
 * replica's versions come out in offset order.
 *
 * <p>The partition's edges ({@link PartitionEdges}: where a replica's life can start or end) come with each replica, so
 * the replica states read them without reading the partition's versions again.
 *
 * <p>Input: the partition's versions, structs of {@code replay.fold.replicas.PARTITION_VERSION}, in offset order as
 * collected from the fold's rows (else sorted here). Output: its replicas in broker order, structs of
 * {@code broker_id}, {@code _versions} (structs of {@code replay.fold.replicas.REPLICA_VERSION}) and {@code _spans}
 * (the partition's edges, structs of {@code replay.core.partition_edges.PARTITION_EDGE}).
 */
public final class PartitionReplicas implements UDF1<Seq<Row>, List<Row>> {
    private static final long serialVersionUID = 1L;

    // PARTITION_VERSION: the interval and its cause, then the partition's values
    private static final int TOPIC_NAME = WIDTH;
    private static final int REPLICAS = WIDTH + 1;
    private static final int LEADER = WIDTH + 2;
    private static final int ISR = WIDTH + 3;
    private static final int ELIGIBLE_LEADER_REPLICAS = WIDTH + 4;
    private static final int ADDING_REPLICAS = WIDTH + 5;
    private static final int REMOVING_REPLICAS = WIDTH + 6;
    private static final int DIRECTORIES = WIDTH + 7;

    /** {@code array_contains(list, broker)}: null for a null list, or a list without it that holds a null. */
    private static Boolean contains(Row version, int field, int broker) {
        if (version.isNullAt(field)) {
            return null;
        }
        Seq<?> members = (Seq<?>) version.get(field);
        boolean nulls = false;
        for (int i = 0; i < members.length(); i++) {
            Object member = members.apply(i);
            if (member == null) {
                nulls = true;
            } else if ((Integer) member == broker) {
                return true;
            }
        }
        return nulls ? null : false;
    }

    /** The directory at the replica's position: null for a null list or a position past its end. */
    private static Object directory(Row version, int position) {
        if (version.isNullAt(DIRECTORIES)) {
            return null;
        }
        Seq<?> directories = (Seq<?>) version.get(DIRECTORIES);
        return position < directories.length() ? directories.apply(position) : null;
    }

    /** The version as one replica's: the interval, the topic's name, then the broker's role in it. */
    private static Row replicaVersion(Row version, int broker, int position) {
        Object[] values = new Object[WIDTH + 7];
        for (int i = 0; i < WIDTH; i++) {
            values[i] = version.get(i);
        }
        values[WIDTH] = version.get(TOPIC_NAME);
        values[WIDTH + 1] = version.isNullAt(LEADER) ? null : version.getInt(LEADER) == broker;
        values[WIDTH + 2] = contains(version, ISR, broker);
        values[WIDTH + 3] = contains(version, ELIGIBLE_LEADER_REPLICAS, broker);
        values[WIDTH + 4] = contains(version, ADDING_REPLICAS, broker);
        values[WIDTH + 5] = contains(version, REMOVING_REPLICAS, broker);
        values[WIDTH + 6] = directory(version, position);
        return RowFactory.create(values);
    }

    @Override
    public List<Row> call(Seq<Row> collected) {
        List<Row> versions = Interval.inOffsetOrder(collected);
        Map<Integer, List<Row>> replicas = new TreeMap<>();
        for (Row version : versions) {
            if (version.isNullAt(REPLICAS)) {
                continue;
            }
            Seq<?> brokers = (Seq<?>) version.get(REPLICAS);
            for (int position = 0; position < brokers.length(); position++) {
                Object listed = brokers.apply(position);
                if (listed == null || brokers.indexOf(listed) != position) {
                    continue;
                }
                int broker = (Integer) listed;
                replicas.computeIfAbsent(broker, b -> new ArrayList<>()).add(replicaVersion(version, broker, position));
            }
        }
        List<Row> edges = PartitionEdges.of(versions, REPLICAS);
        List<Row> rows = new ArrayList<>(replicas.size());
        for (Map.Entry<Integer, List<Row>> replica : replicas.entrySet()) {
            rows.add(RowFactory.create(replica.getKey(), replica.getValue(), edges));
        }
        return rows;
    }
}
