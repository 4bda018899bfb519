/*
 * Kafka's own fold of a KRaft metadata log directory, the referee of kraft-replay's reference fold.
 *
 * Usage: java -cp <this dir>:<Kafka's jars> KafkaFold <__cluster_metadata-0 dir> [offset,offset,...]
 *        java -cp <this dir>:<Kafka's jars> KafkaFold <__cluster_metadata-0 dir> --end
 *        java -cp <this dir>:<Kafka's jars> KafkaFold <__cluster_metadata-0 dir> --catch-up
 *
 * It does what a broker's MetadataLoader does, with Kafka's own classes: the latest *.checkpoint snapshot (if
 * any) replayed into a delta over the empty image, then every *.log batch after it through Kafka's
 * MetadataBatchLoader (MetadataDelta.replay per record, transactions as KIP-868 defines them), publishing after
 * every batch, the finest granularity MetadataLoader ever publishes at. For every published image (or only those
 * at the requested offsets) it prints one JSON line with the entities in the shape of `kraft-replay state
 * --format json` (Kafka's camelCase field names), plus "controllers" and "features" (with 3.x's
 * "zkMigrationState"), and the other image parts (configs, clientQuotas, acls, scramCredentials without secrets,
 * delegationTokens, producerIds): the entities that changed since the line before (printImage). Every fault Kafka's loader reports (a record it refuses) is a
 * {"fault": ...} line. The last line is {"end": ...} with the counts.
 *
 * One source for Kafka 3.9 and 4.x: the classes that moved between them (the record classes went to
 * org.apache.kafka.common.record.internal, LogContext to ...utils.internal) and the loader's constructor and
 * flush (4.x added a SupportedConfigChecker and an isOffsetBatchAligned flag) are reached by reflection.
 *
 * --end (bench/bench_kafka_fold.py): the same fold to the end of the log, printing no image, only the end line with
 * the wall time of the fold, the final image's size and the JVM heap (peak, and in use after a full GC, which is
 * what the final image holds). It still publishes after every batch: the loader discards an aborted metadata
 * transaction only when it flushes right after the AbortTransactionRecord, so a fold that flushed only at the end
 * would publish the aborted records (at 200k simulated records: 34,506 partitions instead of 4,512).
 *
 * --catch-up: the log after the snapshot as a restarted broker loads it: MetadataLoader.handleCommit gets the
 * batches it reads back from its own log in one BatchReader and flushes once after the last, so they make one
 * delta; the image at the end is printed. Kafka's image then is not always the per-batch one: ScramDelta.apply
 * drops the upserts of a mechanism it iterates after a removal that emptied the mechanism's user map (a delta
 * holding alice's and bob's SCRAM-SHA-256 credentials and bob's removal loses alice's: "bob" iterates first).
 */

import java.io.BufferedWriter;
import java.io.File;
import java.io.OutputStreamWriter;
import java.io.Writer;
import java.lang.reflect.Constructor;
import java.lang.reflect.Method;
import java.lang.reflect.Proxy;
import java.nio.ByteBuffer;
import java.nio.charset.StandardCharsets;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;

import org.apache.kafka.clients.admin.ScramMechanism;
import org.apache.kafka.common.Endpoint;
import org.apache.kafka.common.Uuid;
import org.apache.kafka.common.config.ConfigResource;
import org.apache.kafka.common.protocol.ByteBufferAccessor;
import org.apache.kafka.common.quota.ClientQuotaEntity;
import org.apache.kafka.common.security.token.delegation.TokenInformation;
import org.apache.kafka.common.utils.Time;
import org.apache.kafka.image.ClientQuotaImage;
import org.apache.kafka.image.ConfigurationImage;
import org.apache.kafka.image.MetadataImage;
import org.apache.kafka.image.TopicImage;
import org.apache.kafka.image.loader.MetadataBatchLoader;
import org.apache.kafka.metadata.BrokerRegistration;
import org.apache.kafka.metadata.ControllerRegistration;
import org.apache.kafka.metadata.DelegationTokenData;
import org.apache.kafka.metadata.MetadataRecordSerde;
import org.apache.kafka.metadata.PartitionRegistration;
import org.apache.kafka.metadata.ScramCredentialData;
import org.apache.kafka.metadata.VersionRange;
import org.apache.kafka.metadata.authorizer.StandardAcl;
import org.apache.kafka.raft.Batch;
import org.apache.kafka.raft.LeaderAndEpoch;
import org.apache.kafka.server.common.ApiMessageAndVersion;
import org.apache.kafka.server.fault.FaultHandler;

public final class KafkaFold {
    private static Writer out;
    private static Set<Long> wanted;  // null: every published image
    private static long published;
    private static long faults;
    private static long currentOffset = -1;

    /** Kafka 3.9 keeps the record classes in o.a.k.common.record, 4.x in its .internal subpackage. */
    private static Class<?> firstClass(String... names) throws ClassNotFoundException {
        for (String name : names) {
            try {
                return Class.forName(name);
            } catch (ClassNotFoundException e) {
                // the other Kafka version's name
            }
        }
        throw new ClassNotFoundException(String.join(" or ", names));
    }

    private static Class<?> recordClass(String simple) throws ClassNotFoundException {
        return firstClass("org.apache.kafka.common.record.internal." + simple, "org.apache.kafka.common.record." + simple);
    }

    /** One batch of a segment or snapshot file, decoded with Kafka's FileRecords and MetadataRecordSerde. */
    private record FileBatch(long baseOffset, long lastOffset, int epoch, long appendTime, int size, boolean control,
                             List<ApiMessageAndVersion> records) { }

    private interface BatchVisitor {
        void visit(FileBatch batch) throws Exception;
    }

    /** Each batch of the file in turn, so that memory holds one batch of a segment, not the whole segment. */
    private static void forEachBatch(File file, BatchVisitor visitor) throws Exception {
        Class<?> fileRecords = recordClass("FileRecords");
        Class<?> recordBatch = recordClass("RecordBatch");
        Method value = recordClass("Record").getMethod("value");
        Method isControl = recordBatch.getMethod("isControlBatch");
        Method baseOffset = recordBatch.getMethod("baseOffset");
        Method lastOffset = recordBatch.getMethod("lastOffset");
        Method epoch = recordBatch.getMethod("partitionLeaderEpoch");
        Method maxTimestamp = recordBatch.getMethod("maxTimestamp");
        Method sizeInBytes = recordBatch.getMethod("sizeInBytes");
        Object records = fileRecords.getMethod("open", File.class).invoke(null, file);
        try {
            for (Object batch : (Iterable<?>) fileRecords.getMethod("batches").invoke(records)) {
                boolean control = (Boolean) isControl.invoke(batch);
                List<ApiMessageAndVersion> messages = new ArrayList<>();
                if (!control) {
                    for (Object record : (Iterable<?>) batch) {
                        ByteBuffer buffer = (ByteBuffer) value.invoke(record);
                        messages.add(MetadataRecordSerde.INSTANCE.read(new ByteBufferAccessor(buffer), buffer.remaining()));
                    }
                }
                visitor.visit(new FileBatch((Long) baseOffset.invoke(batch), (Long) lastOffset.invoke(batch),
                    (Integer) epoch.invoke(batch), (Long) maxTimestamp.invoke(batch), (Integer) sizeInBytes.invoke(batch),
                    control, messages));
            }
        } finally {
            ((AutoCloseable) records).close();
        }
    }

    /** Kafka's MetadataBatchLoader, built through whichever constructor this Kafka has. */
    private static MetadataBatchLoader newLoader(FaultHandler faultHandler, MetadataBatchLoader.MetadataUpdater updater)
            throws Exception {
        Object logContext = firstClass("org.apache.kafka.common.utils.internals.LogContext",
            "org.apache.kafka.common.utils.LogContext").getConstructor().newInstance();
        for (Constructor<?> constructor : MetadataBatchLoader.class.getConstructors()) {
            Class<?>[] types = constructor.getParameterTypes();
            if (types.length == 4) {
                return (MetadataBatchLoader) constructor.newInstance(logContext, Time.SYSTEM, faultHandler, updater);
            }
            if (types.length == 5) {  // 4.x: a SupportedConfigChecker; every config is supported here
                Object checker = Proxy.newProxyInstance(types[4].getClassLoader(), new Class<?>[] {types[4]},
                    (proxy, method, args) -> method.getName().equals("isSupported") ? Boolean.TRUE : null);
                return (MetadataBatchLoader) constructor.newInstance(logContext, Time.SYSTEM, faultHandler, updater,
                    checker);
            }
        }
        throw new IllegalStateException("no known MetadataBatchLoader constructor");
    }

    /** maybeFlushBatches(leaderAndEpoch) in 3.9, (leaderAndEpoch, isOffsetBatchAligned) in 4.x. */
    private static void flush(MetadataBatchLoader loader) throws Exception {
        for (Method method : MetadataBatchLoader.class.getMethods()) {
            if (method.getName().equals("maybeFlushBatches")) {
                if (method.getParameterCount() == 1) {
                    method.invoke(loader, LeaderAndEpoch.UNKNOWN);
                } else {
                    method.invoke(loader, LeaderAndEpoch.UNKNOWN, true);
                }
                return;
            }
        }
        throw new IllegalStateException("no maybeFlushBatches");
    }

    public static void main(String[] args) throws Exception {
        if (args.length < 1) {
            System.err.println("usage: KafkaFold <__cluster_metadata-0 directory> [offset,offset,...]");
            System.exit(2);
        }
        File dir = new File(args[0]);
        boolean endOnly = Arrays.asList(args).contains("--end");
        boolean catchUp = Arrays.asList(args).contains("--catch-up");
        if (endOnly) {
            wanted = new HashSet<>();  // publish as ever, print no image
        } else if (args.length > 1 && !args[1].isEmpty() && !args[1].startsWith("--")) {
            wanted = new HashSet<>();
            for (String offset : args[1].split(",")) {
                wanted.add(Long.parseLong(offset.trim()));
            }
        }
        out = new BufferedWriter(new OutputStreamWriter(System.out, StandardCharsets.UTF_8), 1 << 16);
        FaultHandler faultHandler = (message, cause) -> {
            faults++;
            try {
                out.write("{\"fault\":" + str(message + (cause == null ? "" : ": " + cause)) + ",\"offset\":"
                    + currentOffset + "}\n");
            } catch (java.io.IOException e) {
                throw new RuntimeException(e);
            }
            return new RuntimeException(message, cause);
        };
        MetadataBatchLoader loader = newLoader(faultHandler, (delta, image, manifest) -> {
            long offset = manifest.provenance().lastContainedOffset();
            published++;
            lastImage = image;
            if (wanted == null || wanted.contains(offset)) {
                try {
                    printImage(offset, image);
                } catch (Exception e) {
                    throw new RuntimeException(e);
                }
            }
        });

        String[] names = dir.list();
        Arrays.sort(names);
        long snapshotEnd = -1;
        String snapshot = null;
        List<String> segments = new ArrayList<>();
        for (String name : names) {
            if (name.matches("\\d{20}-\\d{10}\\.checkpoint")) {
                long end = Long.parseLong(name.substring(0, 20));
                if (end > snapshotEnd) {
                    snapshotEnd = end;
                    snapshot = name;
                }
            } else if (name.matches("\\d{20}\\.log")) {
                segments.add(name);
            }
        }
        long started = System.nanoTime();
        long[] counts = new long[2];  // records, batches
        final long end = snapshotEnd;
        if (snapshot != null) {
            // MetadataLoader.loadSnapshot: every record into a delta over the empty image, published at end - 1.
            // Through the batch loader from an empty image it is that, without MetadataProvenance's
            // version-specific constructor.
            forEachBatch(new File(dir, snapshot), batch -> {
                if (batch.control()) {
                    return;
                }
                currentOffset = end - 1;
                loader.loadBatch(Batch.data(end - 1 - batch.records().size() + 1, batch.epoch(),
                    batch.appendTime(), batch.size(), batch.records()), LeaderAndEpoch.UNKNOWN);
                counts[0] += batch.records().size();
            });
            flush(loader);
        }
        for (String segment : segments) {
            forEachBatch(new File(dir, segment), batch -> {
                if (batch.control() || batch.baseOffset() < end) {
                    return;  // control batches hold no metadata; a snapshot already holds what precedes it
                }
                currentOffset = batch.baseOffset();
                loader.loadBatch(Batch.data(batch.baseOffset(), batch.epoch(), batch.appendTime(), batch.size(),
                    batch.records()), LeaderAndEpoch.UNKNOWN);
                currentOffset = batch.lastOffset();
                if (!catchUp) {
                    flush(loader);
                }
                counts[0] += batch.records().size();
                counts[1]++;
            });
        }
        if (catchUp) {
            flush(loader);
        }
        long elapsedNs = System.nanoTime() - started;
        StringBuilder b = new StringBuilder("{\"end\":true,\"snapshotEndOffset\":" + snapshotEnd + ",\"batches\":"
            + counts[1] + ",\"records\":" + counts[0] + ",\"published\":" + published + ",\"faults\":" + faults);
        if (endOnly) {
            b.append(",\"seconds\":").append(elapsedNs / 1e9).append(summary(lastImage)).append(heap());
        }
        out.write(b.append("}\n").toString());
        out.flush();
    }

    /** The last image published (the end of the log). */
    private static MetadataImage lastImage;

    /** The final image's size: what the fold built. */
    private static String summary(MetadataImage image) {
        if (image == null) {
            return ",\"brokers\":0,\"topics\":0,\"partitions\":0";
        }
        long partitions = 0;
        for (TopicImage topic : image.topics().topicsById().values()) {
            partitions += topic.partitions().size();
        }
        return ",\"brokers\":" + image.cluster().brokers().size() + ",\"topics\":"
            + image.topics().topicsById().size() + ",\"partitions\":" + partitions + ",\"lastOffset\":"
            + image.provenance().lastContainedOffset();
    }

    /** The heap at its peak during the fold (all heap pools), in use after a full GC (what the image holds), and
     * the maximum the JVM may take, in bytes; and the time the collectors took. */
    private static String heap() {
        long peak = 0;
        for (java.lang.management.MemoryPoolMXBean pool : java.lang.management.ManagementFactory.getMemoryPoolMXBeans()) {
            if (pool.getType() == java.lang.management.MemoryType.HEAP) {
                peak += pool.getPeakUsage().getUsed();
            }
        }
        long gcMs = 0;
        for (java.lang.management.GarbageCollectorMXBean gc
                : java.lang.management.ManagementFactory.getGarbageCollectorMXBeans()) {
            gcMs += Math.max(0, gc.getCollectionTime());
        }
        System.gc();
        Runtime runtime = Runtime.getRuntime();
        return ",\"heapPeakBytes\":" + peak + ",\"heapAfterGcBytes\":" + (runtime.totalMemory() - runtime.freeMemory())
            + ",\"heapMaxBytes\":" + runtime.maxMemory() + ",\"gcMillis\":" + gcMs;
    }

    // --- the image, in the JSON shape of `kraft-replay state --format json` --------------------------------

    /** Each section's entities as last printed: key -> JSON. */
    private static final Map<String, Map<String, String>> PRINTED = new TreeMap<>();
    /** The partition registration (and topic name) each printed partition line was made from. */
    private static final Map<String, Object> SEEN = new HashMap<>();

    /**
     * One line per published image: the features, and of brokers, controllers, topics and partitions only the
     * entities that differ from the image printed before (the first line has them all), plus the keys gone
     * since ("gone"). A reader applies the lines in order to have every image; printing whole images at every
     * batch end would make the output quadratic.
     */
    private static void printImage(long offset, MetadataImage image) throws Exception {
        Map<String, Map<String, String>> now = new TreeMap<>();
        Map<String, String> brokers = new TreeMap<>();
        for (BrokerRegistration broker : image.cluster().brokers().values()) {
            brokers.put(String.valueOf(broker.id()), "{\"brokerId\":" + broker.id()
                + ",\"brokerEpoch\":" + broker.epoch()
                + ",\"incarnationId\":" + str(broker.incarnationId().toString())
                + ",\"fenced\":" + broker.fenced()
                + ",\"inControlledShutdown\":" + broker.inControlledShutdown()
                + ",\"rack\":" + broker.rack().map(KafkaFold::str).orElse("null")
                + ",\"endPoints\":" + endpoints(broker.listeners())
                + ",\"features\":" + versionRanges(broker.supportedFeatures())
                + ",\"logDirs\":" + uuids(broker.directories())
                + ",\"isMigratingZkBroker\":" + migratingZkBroker(broker) + "}");
        }
        now.put("brokers", brokers);
        Map<String, String> controllers = new TreeMap<>();
        for (ControllerRegistration controller : image.cluster().controllers().values()) {
            controllers.put(String.valueOf(controller.id()), "{\"controllerId\":" + controller.id()
                + ",\"incarnationId\":" + str(controller.incarnationId().toString())
                + ",\"zkMigrationReady\":" + controller.zkMigrationReady()
                + ",\"endPoints\":" + endpoints(controller.listeners())
                + ",\"features\":" + versionRanges(controller.supportedFeatures()) + "}");
        }
        now.put("controllers", controllers);
        Map<String, String> topics = new TreeMap<>();
        Map<String, String> partitions = new TreeMap<>();
        for (TopicImage topic : image.topics().topicsById().values()) {
            String id = str(topic.id().toString());
            String name = str(topic.name());
            topics.put(id, "{\"topicId\":" + id + ",\"name\":" + name + "}");
            for (Map.Entry<Integer, PartitionRegistration> entry : topic.partitions().entrySet()) {
                PartitionRegistration p = entry.getValue();
                String key = "[" + id + "," + entry.getKey() + "]";
                // An image shares every registration a delta left alone: the same object prints the same line.
                if (SEEN.get(key) == p && SEEN.get("name " + key) == topic.name()) {
                    partitions.put(key, PRINTED.get("partitions").get(key));
                    continue;
                }
                SEEN.put(key, p);
                SEEN.put("name " + key, topic.name());
                partitions.put(key, "{\"topicId\":" + id
                    + ",\"topicName\":" + name
                    + ",\"partitionId\":" + entry.getKey()
                    + ",\"leader\":" + p.leader
                    + ",\"leaderEpoch\":" + p.leaderEpoch
                    + ",\"partitionEpoch\":" + p.partitionEpoch
                    + ",\"replicas\":" + ints(p.replicas)
                    + ",\"isr\":" + ints(p.isr)
                    + ",\"addingReplicas\":" + ints(p.addingReplicas)
                    + ",\"removingReplicas\":" + ints(p.removingReplicas)
                    + ",\"eligibleLeaderReplicas\":" + ints(p.elr)
                    + ",\"lastKnownElr\":" + ints(p.lastKnownElr)
                    + ",\"leaderRecoveryState\":" + p.leaderRecoveryState.value()
                    + ",\"directories\":" + uuids(Arrays.asList(p.directories)) + "}");
            }
        }
        now.put("topics", topics);
        now.put("partitions", partitions);
        imageParts(image, now);

        StringBuilder b = new StringBuilder(1024);
        b.append("{\"offset\":").append(offset).append(",\"features\":{");
        Map<String, Short> features = new TreeMap<>(image.features().finalizedVersions());
        Object mv = image.features().getClass().getMethod("metadataVersion").invoke(image.features());
        if (mv instanceof Optional<?> optional) {  // 4.x: absent until a FeatureLevelRecord sets it
            mv = optional.orElse(null);
        }
        if (mv != null) {
            features.put("metadata.version", (Short) mv.getClass().getMethod("featureLevel").invoke(mv));
        }
        try {  // 3.x: FeaturesImage.zkMigrationState, NONE (0) in an empty image; 4.x has none
            Object state = image.features().getClass().getMethod("zkMigrationState").invoke(image.features());
            short value = (Byte) state.getClass().getMethod("value").invoke(state);
            if (value != 0) {
                features.put("zkMigrationState", value);
            }
        } catch (NoSuchMethodException e) {
            // Kafka 4.x
        }
        String sep = "";
        for (Map.Entry<String, Short> feature : features.entrySet()) {
            b.append(sep).append(str(feature.getKey())).append(':').append(feature.getValue());
            sep = ",";
        }
        b.append('}');
        StringBuilder gone = new StringBuilder();
        for (Map.Entry<String, Map<String, String>> section : now.entrySet()) {
            Map<String, String> before = PRINTED.getOrDefault(section.getKey(), Map.of());
            b.append(",\"").append(section.getKey()).append("\":[");
            sep = "";
            for (Map.Entry<String, String> entity : section.getValue().entrySet()) {
                if (!entity.getValue().equals(before.get(entity.getKey()))) {
                    b.append(sep).append(entity.getValue());
                    sep = ",";
                }
            }
            b.append(']');
            gone.append(gone.length() == 0 ? "" : ",").append('"').append(section.getKey()).append("\":[");
            sep = "";
            for (String key : before.keySet()) {
                if (!section.getValue().containsKey(key)) {
                    gone.append(sep).append(key);
                    sep = ",";
                }
            }
            gone.append(']');
        }
        b.append(",\"gone\":{").append(gone).append("}}\n");
        PRINTED.putAll(now);
        out.write(b.toString());
    }

    /**
     * The image's other parts, each entity in the shape of `kraft-replay state --format json` (Kafka's field
     * names), keyed by the JSON of its key fields (what "gone" prints): configs, clientQuotas, acls,
     * scramCredentials (never a salt or key), delegationTokens, producerIds (one entity, none while it is -1).
     */
    private static void imageParts(MetadataImage image, Map<String, Map<String, String>> now) throws Exception {
        Map<String, String> configs = new TreeMap<>();
        for (Map.Entry<ConfigResource, ConfigurationImage> resource : image.configs().resourceData().entrySet()) {
            int type = resource.getKey().type().id();
            String name = str(resource.getKey().name());
            for (Map.Entry<String, String> config : resource.getValue().data().entrySet()) {
                configs.put("[" + type + "," + name + "," + str(config.getKey()) + "]", "{\"resourceType\":" + type
                    + ",\"resourceName\":" + name + ",\"name\":" + str(config.getKey())
                    + ",\"value\":" + (config.getValue() == null ? "null" : str(config.getValue())) + "}");
            }
        }
        now.put("configs", configs);
        Map<String, String> quotas = new TreeMap<>();
        for (Map.Entry<ClientQuotaEntity, ClientQuotaImage> entity : image.clientQuotas().entities().entrySet()) {
            StringBuilder parts = new StringBuilder("[");
            String sep = "";
            for (Map.Entry<String, String> part : new TreeMap<>(entity.getKey().entries()).entrySet()) {
                parts.append(sep).append("{\"entityType\":").append(str(part.getKey())).append(",\"entityName\":")
                    .append(part.getValue() == null ? "null" : str(part.getValue())).append('}');
                sep = ",";
            }
            parts.append(']');
            @SuppressWarnings("unchecked")
            Map<String, Double> values = (Map<String, Double>) quotaMap(entity.getValue());
            for (Map.Entry<String, Double> quota : values.entrySet()) {
                quotas.put("[" + parts + "," + str(quota.getKey()) + "]", "{\"entity\":" + parts + ",\"key\":"
                    + str(quota.getKey()) + ",\"value\":" + quota.getValue() + "}");
            }
        }
        now.put("clientQuotas", quotas);
        Map<String, String> acls = new TreeMap<>();
        for (Map.Entry<Uuid, StandardAcl> entry : image.acls().acls().entrySet()) {
            StandardAcl acl = entry.getValue();
            String id = str(entry.getKey().toString());
            acls.put(id, "{\"id\":" + id + ",\"resourceType\":" + acl.resourceType().code()
                + ",\"resourceName\":" + str(acl.resourceName()) + ",\"patternType\":" + acl.patternType().code()
                + ",\"principal\":" + str(acl.principal()) + ",\"host\":" + str(acl.host())
                + ",\"operation\":" + acl.operation().code() + ",\"permissionType\":" + acl.permissionType().code()
                + "}");
        }
        now.put("acls", acls);
        Map<String, String> scram = new TreeMap<>();
        for (Map.Entry<ScramMechanism, Map<String, ScramCredentialData>> mechanism
                : image.scram().mechanisms().entrySet()) {
            byte type = mechanism.getKey().type();
            for (Map.Entry<String, ScramCredentialData> user : mechanism.getValue().entrySet()) {
                scram.put("[" + str(user.getKey()) + "," + type + "]", "{\"name\":" + str(user.getKey())
                    + ",\"mechanism\":" + type + ",\"iterations\":" + user.getValue().iterations() + "}");
            }
        }
        now.put("scramCredentials", scram);
        Map<String, String> tokens = new TreeMap<>();
        for (Map.Entry<String, DelegationTokenData> entry : image.delegationTokens().tokens().entrySet()) {
            TokenInformation token = entry.getValue().tokenInformation();
            StringBuilder renewers = new StringBuilder("[");
            String sep = "";
            for (String renewer : token.renewersAsString()) {
                renewers.append(sep).append(str(renewer));
                sep = ",";
            }
            tokens.put(str(entry.getKey()), "{\"tokenId\":" + str(token.tokenId()) + ",\"owner\":"
                + str(token.ownerAsString()) + ",\"requester\":" + str(token.tokenRequesterAsString())
                + ",\"renewers\":" + renewers.append(']') + ",\"issueTimestamp\":" + token.issueTimestamp()
                + ",\"maxTimestamp\":" + token.maxTimestamp() + ",\"expirationTimestamp\":" + token.expiryTimestamp()
                + "}");
        }
        now.put("delegationTokens", tokens);
        Map<String, String> producerIds = new TreeMap<>();
        if (image.producerIds().nextProducerId() != -1) {  // ProducerIdsImage.EMPTY
            producerIds.put("[]", "{\"nextProducerId\":" + image.producerIds().nextProducerId() + "}");
        }
        now.put("producerIds", producerIds);
    }

    /** ClientQuotaImage.quotas() in 4.x, quotaMap() in 3.x. */
    private static Object quotaMap(ClientQuotaImage quota) throws Exception {
        for (String name : new String[] {"quotas", "quotaMap"}) {
            try {
                Method method = ClientQuotaImage.class.getMethod(name);
                return method.invoke(quota);
            } catch (NoSuchMethodException e) {
                // the other Kafka version's name
            }
        }
        throw new IllegalStateException("no ClientQuotaImage quotas accessor");
    }

    private static String ints(int[] values) {
        return Arrays.toString(values).replace(" ", "");
    }

    /** BrokerRegistration.isMigratingZkBroker() exists only while Kafka had ZooKeeper migration (up to 3.9). */
    private static boolean migratingZkBroker(BrokerRegistration broker) {
        try {
            return (Boolean) BrokerRegistration.class.getMethod("isMigratingZkBroker").invoke(broker);
        } catch (ReflectiveOperationException e) {
            return false;
        }
    }

    private static String endpoints(Map<String, Endpoint> listeners) {
        StringBuilder b = new StringBuilder("[");
        String sep = "";
        for (Map.Entry<String, Endpoint> e : new TreeMap<>(listeners).entrySet()) {
            Endpoint endpoint = e.getValue();
            b.append(sep).append("{\"name\":").append(str(e.getKey()))
                .append(",\"host\":").append(str(endpoint.host()))
                .append(",\"port\":").append(endpoint.port())
                .append(",\"securityProtocol\":").append(endpoint.securityProtocol().id)
                .append('}');
            sep = ",";
        }
        return b.append(']').toString();
    }

    private static String versionRanges(Map<String, VersionRange> features) {
        StringBuilder b = new StringBuilder("[");
        String sep = "";
        for (Map.Entry<String, VersionRange> e : new TreeMap<>(features).entrySet()) {
            b.append(sep).append("{\"name\":").append(str(e.getKey()))
                .append(",\"minSupportedVersion\":").append(e.getValue().min())
                .append(",\"maxSupportedVersion\":").append(e.getValue().max())
                .append('}');
            sep = ",";
        }
        return b.append(']').toString();
    }

    private static String uuids(List<Uuid> ids) {
        StringBuilder b = new StringBuilder("[");
        String sep = "";
        for (Uuid id : ids) {
            b.append(sep).append(str(id.toString()));
            sep = ",";
        }
        return b.append(']').toString();
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
