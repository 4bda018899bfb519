import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.TreeMap;

import com.fasterxml.jackson.databind.ObjectMapper;

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
 * a map), a default entity's name null. Written by Jackson (on Kafka's own classpath).
 */
public final class DescribeClientQuotas {
    public static void main(String[] args) throws Exception {
        Properties props = new Properties();
        props.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, args[0]);
        props.put(AdminClientConfig.CLIENT_ID_CONFIG, "kraft-replay-test-quotas");
        ObjectMapper json = new ObjectMapper();
        List<String> lines = new ArrayList<>();
        try (Admin admin = Admin.create(props)) {
            Map<ClientQuotaEntity, Map<String, Double>> quotas =
                admin.describeClientQuotas(ClientQuotaFilter.all()).entities().get();
            for (Map.Entry<ClientQuotaEntity, Map<String, Double>> entity : quotas.entrySet()) {
                List<Map<String, String>> parts = new ArrayList<>();
                for (Map.Entry<String, String> part : new TreeMap<>(entity.getKey().entries()).entrySet()) {
                    Map<String, String> named = new LinkedHashMap<>();
                    named.put("entityType", part.getKey());
                    named.put("entityName", part.getValue());
                    parts.add(named);
                }
                for (Map.Entry<String, Double> quota : new TreeMap<>(entity.getValue()).entrySet()) {
                    Map<String, Object> line = new LinkedHashMap<>();
                    line.put("entity", parts);
                    line.put("key", quota.getKey());
                    line.put("value", quota.getValue());
                    lines.add(json.writeValueAsString(line));
                }
            }
        }
        for (String line : lines) {
            System.out.println(line);
        }
    }
}
