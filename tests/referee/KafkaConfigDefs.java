/*
 * Kafka's own config definitions, as its controller holds them: the KafkaConfigSchema of
 * kafka.server.KafkaRaftServer.configSchema() (issue 19: the secrets RecordRedactor keeps out, item 6; the topic
 * configs an election reads, item 4).
 *
 *   java KafkaConfigDefs configs
 *     records/kafka_configs.json, byte for byte (python -m tests.referee.kafka_configs writes what this prints):
 *     - the Kafka version;
 *     - which ConfigDef.Types are sensitive, and for each ConfigResource.Type whether the schema has a ConfigDef
 *       for it and each key of that ConfigDef with its ConfigDef.Type (KafkaConfigSchema.isSensitive: a type
 *       without a ConfigDef has every key sensitive; it consults no synonyms);
 *     - for each key of the TOPIC ConfigDef, its default (KafkaConfigSchema.getDefault: the value
 *       ConfigurationControlManager.getTopicConfig falls back to, ConfigSource.DEFAULT_CONFIG) and the broker
 *       config names the schema's resolveEffectiveTopicConfig reads before it, in Kafka's order (the schema's
 *       own synonym map: ServerTopicConfigSynonyms.ALL_TOPIC_CONFIG_SYNONYMS).
 *
 *   java KafkaConfigDefs redact FILE...
 *     For every record of each segment or snapshot file (Kafka's FileRecords and MetadataRecordSerde), one JSON
 *     line {"file", "offset", "type", "loggable"}: Kafka's RecordRedactor.toLoggableString with that schema.
 */

import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.metadata.util.RecordRedactor;
import org.apache.kafka.server.config.ConfigSynonym;

public final class KafkaConfigDefs {
    private KafkaConfigDefs() { }

    static final String REGENERATE = "python -m tests.referee.kafka_configs";
    static final String COMMENT = "Generated from Kafka's own jars by tests/referee/KafkaConfigDefs.java: do not "
        + "edit. The KafkaConfigSchema of kafka.server.KafkaRaftServer.configSchema() (the controller's: "
        + "RecordRedactor redacts with it, resolveEffectiveTopicConfig resolves with it). resourceTypes: each "
        + "ConfigResource.Type, whether it has a ConfigDef there, and each key's ConfigDef.Type "
        + "(KafkaConfigSchema.isSensitive consults no synonyms). topicConfigs: each key of the TOPIC ConfigDef, "
        + "its default (KafkaConfigSchema.getDefault) and the broker config names resolveEffectiveTopicConfig "
        + "reads before it, in order.";

    /** A JSON string, ASCII only (no platform encoding can change what is printed). */
    static String quote(String text) {
        if (text == null) {
            return "null";
        }
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                case '\n': out.append("\\n"); break;
                case '\r': out.append("\\r"); break;
                case '\t': out.append("\\t"); break;
                default:
                    if (c < 0x20 || c > 0x7f) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }

    /** A JSON value, indented by one space a level, as Python's json.dumps(value, indent=1) writes it. */
    static void write(StringBuilder out, Object value, int depth) {
        String inner = "\n" + " ".repeat(depth + 1);
        if (value instanceof Map<?, ?> map) {
            if (map.isEmpty()) {
                out.append("{}");
                return;
            }
            out.append('{');
            String separator = inner;
            for (Map.Entry<?, ?> entry : map.entrySet()) {
                out.append(separator).append(quote((String) entry.getKey())).append(": ");
                write(out, entry.getValue(), depth + 1);
                separator = "," + inner;
            }
            out.append('\n').append(" ".repeat(depth)).append('}');
        } else if (value instanceof List<?> list) {
            if (list.isEmpty()) {
                out.append("[]");
                return;
            }
            out.append('[');
            String separator = inner;
            for (Object item : list) {
                out.append(separator);
                write(out, item, depth + 1);
                separator = "," + inner;
            }
            out.append('\n').append(" ".repeat(depth)).append(']');
        } else if (value instanceof String text) {
            out.append(quote(text));
        } else {
            out.append(value);  // a number, a boolean or null
        }
    }

    /** A private field of the schema (Kafka offers no getter for what it was built with). */
    static Object schemaField(KafkaConfigSchema schema, String name) throws ReflectiveOperationException {
        Field field = KafkaConfigSchema.class.getDeclaredField(name);
        field.setAccessible(true);
        return field.get(schema);
    }

    /** AppInfoParser.getVersion(): in o.a.k.common.utils.internals since 4.x, o.a.k.common.utils before. */
    static String kafkaVersion() throws ReflectiveOperationException {
        Class<?> parser;
        try {
            parser = Class.forName("org.apache.kafka.common.utils.internals.AppInfoParser");
        } catch (ClassNotFoundException e) {
            parser = Class.forName("org.apache.kafka.common.utils.AppInfoParser");
        }
        return (String) parser.getMethod("getVersion").invoke(null);
    }

    @SuppressWarnings("unchecked")
    static void printConfigs(KafkaConfigSchema schema) throws ReflectiveOperationException {
        Map<ConfigResource.Type, ConfigDef> defs = (Map<ConfigResource.Type, ConfigDef>) schemaField(
            schema, "configDefs");
        Map<String, List<ConfigSynonym>> synonyms = (Map<String, List<ConfigSynonym>>) schemaField(
            schema, "logConfigSynonyms");
        Map<String, Object> document = new LinkedHashMap<>();
        document.put("comment", COMMENT);
        document.put("regenerate", REGENERATE);
        document.put("kafkaVersion", kafkaVersion());
        List<Object> sensitive = new ArrayList<>();
        for (ConfigDef.Type type : ConfigDef.Type.values()) {
            if (type.isSensitive()) {
                sensitive.add(type.name());
            }
        }
        document.put("sensitiveTypes", sensitive);
        List<Object> resourceTypes = new ArrayList<>();
        for (ConfigResource.Type type : ConfigResource.Type.values()) {
            ConfigDef def = defs.get(type);
            Map<String, Object> keys = new LinkedHashMap<>();
            if (def != null) {
                new TreeMap<>(def.configKeys()).forEach((name, key) -> keys.put(name, key.type.name()));
            }
            Map<String, Object> item = new LinkedHashMap<>();
            item.put("name", type.name());
            item.put("id", (int) type.id());
            item.put("configDef", def != null);
            item.put("keys", keys);
            resourceTypes.add(item);
        }
        document.put("resourceTypes", resourceTypes);
        Map<String, Object> topicConfigs = new LinkedHashMap<>();
        for (String name : new TreeMap<>(defs.get(ConfigResource.Type.TOPIC).configKeys()).keySet()) {
            List<Object> names = new ArrayList<>();
            for (ConfigSynonym synonym : synonyms.getOrDefault(name, List.of())) {
                names.add(synonym.name());
            }
            Map<String, Object> item = new LinkedHashMap<>();
            item.put("default", schema.getDefault(ConfigResource.Type.TOPIC, name));
            item.put("synonyms", names);
            topicConfigs.put(name, item);
        }
        document.put("topicConfigs", topicConfigs);
        StringBuilder out = new StringBuilder();
        write(out, document, 0);
        System.out.print(out.append('\n'));
    }

    static Class<?> recordClass(String simple) throws ClassNotFoundException {
        try {
            return Class.forName("org.apache.kafka.common.record.internal." + simple);
        } catch (ClassNotFoundException e) {
            return Class.forName("org.apache.kafka.common.record." + simple);
        }
    }

    static void printRedacted(KafkaConfigSchema schema, String path) throws Exception {
        RecordRedactor redactor = new RecordRedactor(schema);
        Class<?> fileRecords = recordClass("FileRecords");
        Class<?> recordBatch = recordClass("RecordBatch");
        Class<?> record = recordClass("Record");
        Method value = record.getMethod("value");
        Method offset = record.getMethod("offset");
        Method isControl = recordBatch.getMethod("isControlBatch");
        Object records = fileRecords.getMethod("open", File.class).invoke(null, new File(path));
        try {
            for (Object batch : (Iterable<?>) fileRecords.getMethod("batches").invoke(records)) {
                if ((Boolean) isControl.invoke(batch)) {
                    continue;
                }
                for (Object item : (Iterable<?>) batch) {
                    ByteBuffer buffer = (ByteBuffer) value.invoke(item);
                    ApiMessage message = MetadataRecordSerde.INSTANCE.read(
                        new ByteBufferAccessor(buffer), buffer.remaining()).message();
                    System.out.println("{\"file\": " + quote(path) + ", \"offset\": " + offset.invoke(item)
                        + ", \"type\": " + quote(message.getClass().getSimpleName())
                        + ", \"loggable\": " + quote(redactor.toLoggableString(message)) + "}");
                }
            }
        } finally {
            ((AutoCloseable) records).close();
        }
    }

    public static void main(String[] args) throws Exception {
        KafkaConfigSchema schema = kafka.server.KafkaRaftServer.configSchema();
        if (args.length == 1 && args[0].equals("configs")) {
            printConfigs(schema);
        } else if (args.length >= 2 && args[0].equals("redact")) {
            for (int index = 1; index < args.length; index++) {
                printRedacted(schema, args[index]);
            }
        } else {
            System.err.println("usage: KafkaConfigDefs configs | redact FILE...");
            System.exit(2);
        }
    }
}
