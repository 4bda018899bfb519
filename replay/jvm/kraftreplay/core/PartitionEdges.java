package kraftreplay.core;

import static kraftreplay.core.Interval.FROM;
import static kraftreplay.core.Interval.TO;
import static kraftreplay.core.Interval.WIDTH;

import java.util.ArrayList;
import java.util.List;
import java.util.Objects;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.RowFactory;
import org.apache.spark.sql.api.java.UDF1;
import scala.collection.Seq;

/**
 * A partition's edges, in one pass over its versions in offset order: the versions that start a life of the
 * partition (no version touches them before: a life is a run of touching versions, its creation to its deletion) and
 * those whose replica set differs from the version before's. A replica's life can start as its partition's at the
 * first, and a membership can end at the second (the record that ended it): the replica states read these, few next
 * to all the versions.
 *
 * <p>Input: the partition's versions, structs of {@code replay.core.partition_edges.EDGE_INPUT} (the interval, then
 * the replicas), in any order. Output: its edges in offset order, structs of {@code PARTITION_EDGE} (the interval,
 * then whether it starts a life). {@link #of} gives them from versions of another struct (the replicas' cut, which
 * reads each partition's versions once for both).
 */
public final class PartitionEdges implements UDF1<Seq<Row>, List<Row>> {
    private static final long serialVersionUID = 1L;

    // EDGE_INPUT: the interval and its cause, then the partition's replicas
    private static final int REPLICAS = WIDTH;

    /** The edges of a partition's {@code versions} (in offset order), whose replicas are field {@code replicas}. */
    public static List<Row> of(List<Row> versions, int replicas) {
        List<Row> edges = new ArrayList<>();
        Row before = null;
        for (Row version : versions) {
            boolean startsLife = before == null || before.isNullAt(TO) || version.isNullAt(FROM)
                    || before.getLong(TO) != version.getLong(FROM);
            // Spark's = of two arrays: null when either is null, which is not "the same"
            boolean sameReplicas = before != null && !before.isNullAt(replicas) && !version.isNullAt(replicas)
                    && Objects.equals(before.get(replicas), version.get(replicas));
            if (startsLife || !sameReplicas) {
                Object[] edge = new Object[WIDTH + 1];
                for (int i = 0; i < WIDTH; i++) {
                    edge[i] = version.get(i);
                }
                edge[WIDTH] = startsLife;
                edges.add(RowFactory.create(edge));
            }
            before = version;
        }
        return edges;
    }

    @Override
    public List<Row> call(Seq<Row> versions) {
        return of(Interval.inOffsetOrder(versions), REPLICAS);
    }
}
