/*
 * Kafka's own answer to "what is a topic config when nothing in the log sets it" (issue 19, item 4).
 *
 *   java -cp KAFKA_JARS KafkaTopicConfigs.java KEY...
 *     One JSON object: the Kafka version and, for each topic config KEY, the default of the TOPIC ConfigDef that
 *     kafka.server.KafkaRaftServer.configSchema() holds (KafkaConfigSchema.getDefault: the value
 *     ConfigurationControlManager.getTopicConfig falls back to, ConfigSource.DEFAULT_CONFIG) and the broker
 *     config names it looks up before that, in Kafka's order (ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS:
 *     the names KafkaConfigSchema.resolveEffectiveTopicConfig reads in the node, cluster-default and static
 *     broker configs).
 */

import java.util.List;

import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.server.config.ConfigSynonym;
import org.apache.kafka.server.config.ServerTopicConfigSynonyms;

public final class KafkaTopicConfigs {
    private KafkaTopicConfigs() { }

    static String quote(String text) {
        return text == null ? "null" : "\"" + text.replace("\\", "\\\\").replace("\"", "\\\"") + "\"";
    }

    /** AppInfoParser.getVersion(): in common.utils before Kafka 4.4, in common.utils.internals since. */
    static String kafkaVersion() throws ReflectiveOperationException {
        Class<?> parser;
        try {
            parser = Class.forName("org.apache.kafka.common.utils.internals.AppInfoParser");
        } catch (ClassNotFoundException e) {
            parser = Class.forName("org.apache.kafka.common.utils.AppInfoParser");
        }
        return (String) parser.getMethod("getVersion").invoke(null);
    }

    public static void main(String[] args) throws ReflectiveOperationException {
        KafkaConfigSchema schema = kafka.server.KafkaRaftServer.configSchema();
        StringBuilder out = new StringBuilder("{\"kafkaVersion\": ").append(quote(kafkaVersion()));
        out.append(", \"keys\": {");
        String separator = "";
        for (String key : args) {
            out.append(separator).append(quote(key)).append(": {\"default\": ")
                .append(quote(schema.getDefault(ConfigResource.Type.TOPIC, key))).append(", \"synonyms\": [");
            List<ConfigSynonym> synonyms = ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS.getOrDefault(
                key, List.of());
            String inner = "";
            for (ConfigSynonym synonym : synonyms) {
                out.append(inner).append(quote(synonym.name()));
                inner = ", ";
            }
            out.append("]}");
            separator = ", ";
        }
        System.out.println(out.append("}}"));
    }
}
