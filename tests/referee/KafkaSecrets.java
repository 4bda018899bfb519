/*
 * Kafka's own answer to "which config values and SCRAM fields are secrets" (issue 19, item 6).
 *
 *   java KafkaSecrets schema
 *     One JSON object: for each ConfigResource.Type, every key of the ConfigDef that the KafkaConfigSchema of
 *     kafka.server.KafkaRaftServer.configSchema() (the schema the controller redacts its log lines with) holds
 *     for it, with its ConfigDef.Type; which ConfigDef.Types are sensitive; the Kafka version. A type without
 *     a ConfigDef there has "configDef": false (every key of it is sensitive: KafkaConfigSchema.isSensitive).
 *     isSensitive consults no synonyms, so none are printed.
 *
 *   java KafkaSecrets redact FILE...
 *     For every record of each segment or snapshot file (Kafka's FileRecords and MetadataRecordSerde), one JSON
 *     line {"file", "offset", "type", "loggable"}: Kafka's RecordRedactor.toLoggableString with that schema.
 */

import java.io.File;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.nio.ByteBuffer;
import java.util.Map;
import java.util.TreeMap;

import org.apache.kafka.common.config.ConfigDef;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.protocol.ApiMessage;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.metadata.KafkaConfigSchema;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.metadata.util.RecordRedactor;

public final class KafkaSecrets {
    private KafkaSecrets() { }

    static String quote(String text) {
        StringBuilder out = new StringBuilder("\"");
        for (char c : text.toCharArray()) {
            switch (c) {
                case '"': out.append("\\\""); break;
                case '\\': out.append("\\\\"); break;
                default:
                    if (c < 0x20) {
                        out.append(String.format("\\u%04x", (int) c));
                    } else {
                        out.append(c);
                    }
            }
        }
        return out.append('"').toString();
    }

    /** The ConfigDefs the schema was built with (a private field: Kafka offers no getter). */
    @SuppressWarnings("unchecked")
    static Map<ConfigResource.Type, ConfigDef> configDefs(KafkaConfigSchema schema) throws Exception {
        Field field = KafkaConfigSchema.class.getDeclaredField("configDefs");
        field.setAccessible(true);
        return (Map<ConfigResource.Type, ConfigDef>) field.get(schema);
    }

    /** AppInfoParser.getVersion(): in o.a.k.common.utils.internals since 4.x, o.a.k.common.utils before. */
    static String kafkaVersion() throws Exception {
        Class<?> parser;
        try {
            parser = Class.forName("org.apache.kafka.common.utils.internals.AppInfoParser");
        } catch (ClassNotFoundException e) {
            parser = Class.forName("org.apache.kafka.common.utils.AppInfoParser");
        }
        return (String) parser.getMethod("getVersion").invoke(null);
    }

    static void printSchema(KafkaConfigSchema schema) throws Exception {
        Map<ConfigResource.Type, ConfigDef> defs = configDefs(schema);
        StringBuilder out = new StringBuilder("{\"kafkaVersion\": ").append(quote(kafkaVersion()));
        out.append(", \"sensitiveTypes\": [");
        String separator = "";
        for (ConfigDef.Type type : ConfigDef.Type.values()) {
            if (type.isSensitive()) {
                out.append(separator).append(quote(type.name()));
                separator = ", ";
            }
        }
        out.append("], \"resourceTypes\": [");
        separator = "";
        for (ConfigResource.Type type : ConfigResource.Type.values()) {
            ConfigDef def = defs.get(type);
            out.append(separator).append("{\"name\": ").append(quote(type.name())).append(", \"id\": ")
                .append(type.id()).append(", \"configDef\": ").append(def != null).append(", \"keys\": {");
            separator = ", ";
            if (def != null) {
                String keySeparator = "";
                for (Map.Entry<String, ConfigDef.ConfigKey> key : new TreeMap<>(def.configKeys()).entrySet()) {
                    out.append(keySeparator).append(quote(key.getKey())).append(": ")
                        .append(quote(key.getValue().type.name()));
                    keySeparator = ", ";
                }
            }
            out.append("}}");
        }
        System.out.println(out.append("]}"));
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
        if (args.length == 1 && args[0].equals("schema")) {
            printSchema(schema);
        } else if (args.length >= 2 && args[0].equals("redact")) {
            for (int index = 1; index < args.length; index++) {
                printRedacted(schema, args[index]);
            }
        } else {
            System.err.println("usage: KafkaSecrets schema | redact FILE...");
            System.exit(2);
        }
    }
}
