import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.quota.ClientQuotaFilter;

/**
 * A live cluster's client quotas as Kafka's own Admin client answers them (Admin.describeClientQuotas, what
 * `kafka-configs --describe --entity-type users` asks): kafka-python's admin client has no call for it.
 *
 * Usage: java -cp <this dir>:<Kafka's jars> DescribeClientQuotas <bootstrap servers>
 *
 * Prints one JSON line per quota, in the shape of `kraft-replay state --format json`'s "clientQuotas":
 * {"entity": [{"entityType", "entityName"}], "key", "value"}, the entity's parts sorted by type (Kafka's entity is
 * a map), a default entity's name null.
 */
public final class DescribeClientQuotas {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "kraft-replay-test-quotas");
        List<String> lines = new ArrayList<>();
        try (Admin admin = Admin.create(props)) {
            Map<ClientQuotaEntity, Map<String, Double>> quotas =
                admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get();
            for (Map.Entry<ClientQuotaEntity, Map<String, Double>> entity : quotas.entrySet()) {
                StringBuilder parts = new StringBuilder("[");
                String sep = "";
                for (Map.Entry<String, String> part : new TreeMap<>(entity.getKey().entries()).entrySet()) {
                    parts.append(sep).append("{\"entityType\":").append(str(part.getKey())).append(",\"entityName\":")
                        .append(part.getValue() == null ? "null" : str(part.getValue())).append('}');
                    sep = ",";
                }
                parts.append(']');
                for (Map.Entry<String, Double> quota : new TreeMap<>(entity.getValue()).entrySet()) {
                    lines.add("{\"entity\":" + parts + ",\"key\":" + str(quota.getKey()) + ",\"value\":"
                        + quota.getValue() + "}");
                }
            }
        }
        for (String line : lines) {
            System.out.println(line);
        }
    }

    private static String str(String s) {
        StringBuilder b = new StringBuilder(s.length() + 2).append('"');
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') {
                b.append('\\').append(c);
            } else if (c < 0x20) {
                b.append(String.format("\\u%04x", (int) c));
            } else {
                b.append(c);
            }
        }
        return b.append('"').toString();
    }
}
