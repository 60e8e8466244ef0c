// Two idempotent Kafka producers that hold the same producer id and epoch (KAFKA-20031), for
// scripts/kafka/rig's `shared-pid` scenario: the release's own kafka-clients, launched as a
// single-file program:
//
//   java -cp 'target/kafka-jars/<release>/*' scripts/kafka/SharedPid.java \
//       --bootstrap 127.0.0.1:19101,127.0.0.1:19102 --out shared.jsonl
//       [--topic pidshark-shared] [--partitions 4] [--replication-factor 2] [--pause-ms 50]
//
// It creates the topic (Admin; CreateTime, min.insync.replicas 1), then two idempotent
// producers, A (client.id shared-a) and B (shared-b): enable.idempotence, acks=all,
// linger.ms=0, max.in.flight.requests.per.connection=1, and each send one record to an
// explicit partition, waited for before the next, so that every batch is one record in one
// Produce request and its sequence range is [k, k]. Each producer's Sender gets a producer id
// of its own with InitProducerId as soon as it starts; once both have one, B's
// TransactionManager is given A's ProducerIdAndEpoch (reflection: its private
// setProducerIdAndEpoch), before B has sent any batch. From then on B writes with A's id and
// epoch, its sequences starting at 0 on every partition, as a producer does with a new id.
//
// The plan (PLAN below; partitions 0..3 of the topic):
//   1. A: 3 records to p0 (seq 0..2) and 3 to p1 (0..2): appended.
//   2. B: 3 records to p0 (0..2): the broker takes each for a retry of A's batch with that
//      sequence (same id, epoch and range among the last 5 it keeps), answers NONE with A's
//      offset and appends nothing. 5 to p1: 0..2 the same, 3 and 4 appended (they follow A's
//      2). 3 to p2, where B is first: appended.
//   3. A: 2 records to p2 (seq 0, 1): now A is taken for a retry of B's, not appended; 1 to
//      p1 (seq 3): the same against B's seq 3.
//   4. A: 7 records to p3 (0..6); then B 1 to p3 with seq 0, a range no longer among the last
//      5 (2..6) and not next: OUT_OF_ORDER_SEQUENCE_NUMBER. The Java client then bumps B's
//      epoch by itself (idempotent producers since KIP-360) and retries the batch with seq 0
//      under the new epoch, which the broker appends (a higher epoch starting at 0).
//   5. B (new epoch) 1 record to p0 (seq 0, appended: a higher epoch at 0 replaces A's state);
//      then A 1 to p0 with its old epoch (seq 3): INVALID_PRODUCER_EPOCH; and A 1 to p2.
//
// One JSON object a line in --out: "topic" (name, topic id, partitions with leader,
// replicas, isr; at the start and the end), "init" (each producer's own id and epoch once its
// Sender had it), "forced" (B's id and epoch before and after), "state" (both producers' ids
// and epochs before and after the plan), one "send" per record (step, producer, client_id,
// partition, key, value, the record's timestamp, the client's next sequence for the
// partition before, the sequence it used and the id and epoch of its batch (read after a
// successful send), the RecordMetadata offset and timestamp the client was told, or the
// exception's class and message, t_start_ms / t_end_ms), and a "summary". The producer id
// and epoch are read by reflection from KafkaProducer.transactionManager.producerIdAndEpoch
// (ProducerIdAndEpoch is org.apache.kafka.common.utils in 3.9,
// org.apache.kafka.common.utils.internals in 4.4: read by field name).

import java.io.FileWriter;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.admin.TopicDescription;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.Node;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.serialization.StringSerializer;

public class SharedPid {
    static String bootstrap, topic = "pidshark-shared";
    static int partitions = 4, pauseMs = 50;
    static short rf = 2;
    static PrintWriter out;

    // {step, producer ("A" or "B"), partition, records}
    static final Object[][] PLAN = {
        {1, "A", 0, 3}, {1, "A", 1, 3},
        {2, "B", 0, 3}, {2, "B", 1, 5}, {2, "B", 2, 3},
        {3, "A", 2, 2}, {3, "A", 1, 1},
        {4, "A", 3, 7}, {4, "B", 3, 1},
        {5, "B", 0, 1}, {5, "A", 0, 1}, {5, "A", 2, 1},
    };

    static String q(String s) {
        if (s == null) return "null";
        StringBuilder b = new StringBuilder("\"");
        for (char c : s.toCharArray()) {
            if (c == '"' || c == '\\') b.append('\\').append(c);
            else if (c < 0x20) b.append(String.format("\\u%04x", (int) c));
            else b.append(c);
        }
        return b.append('"').toString();
    }

    static synchronized void emit(String json) {
        out.println(json);
        out.flush();
    }

    static Field findField(Class<?> cls, String name) throws NoSuchFieldException {
        for (Class<?> c = cls; c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f;
            } catch (NoSuchFieldException e) {
                // the superclass may have it
            }
        }
        throw new NoSuchFieldException(cls.getName() + "." + name);
    }

    static Object field(Object o, String name) throws ReflectiveOperationException {
        return findField(o.getClass(), name).get(o);
    }

    static Method method(Object o, String name, Class<?>... types) throws NoSuchMethodException {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Method m = c.getDeclaredMethod(name, types);
                m.setAccessible(true);
                return m;
            } catch (NoSuchMethodException e) {
                // the superclass may have it
            }
        }
        throw new NoSuchMethodException(o.getClass().getName() + "." + name);
    }

    static Object tm(KafkaProducer<String, String> p) throws ReflectiveOperationException {
        return field(p, "transactionManager");
    }

    /** [producer id, epoch] of a ProducerIdAndEpoch. */
    static long[] idEpoch(Object pe) throws ReflectiveOperationException {
        return new long[] {(Long) field(pe, "producerId"), (Short) field(pe, "epoch")};
    }

    /** The producer's own id and epoch: "producer_id":..,"epoch":.. */
    static String view(KafkaProducer<String, String> p) {
        try {
            long[] ie = idEpoch(field(tm(p), "producerIdAndEpoch"));
            return "\"producer_id\":" + ie[0] + ",\"epoch\":" + ie[1];
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("TransactionManager by reflection: " + e, e);
        }
    }

    /** The client's state for one partition: next sequence, and the id and epoch its
     * sequences belong to (TransactionManager.sequenceNumber / producerIdAndEpoch(tp)). */
    static String partitionView(KafkaProducer<String, String> p, TopicPartition tp, String pre) {
        try {
            Object t = tm(p);
            int seq = (Integer) method(t, "sequenceNumber", TopicPartition.class).invoke(t, tp);
            long[] ie = idEpoch(
                    method(t, "producerIdAndEpoch", TopicPartition.class).invoke(t, tp));
            return "\"" + pre + "next_seq\":" + seq + ",\"" + pre + "partition_producer_id\":"
                    + ie[0] + ",\"" + pre + "partition_epoch\":" + ie[1];
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("TransactionManager by reflection: " + e, e);
        }
    }

    static KafkaProducer<String, String> producer(String clientId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.MAX_IN_FLIGHT_REQUESTS_PER_CONNECTION, "1");
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "5000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "20000");
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "100");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "20000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    /** Waits until the producer's Sender holds a producer id of its own. */
    static void awaitId(KafkaProducer<String, String> p, String name) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            Object pe = field(tm(p), "producerIdAndEpoch");
            if ((Boolean) method(pe, "isValid").invoke(pe)) return;
            if (System.currentTimeMillis() > deadline)
                throw new IllegalStateException(name + ": no producer id after 60 s");
            Thread.sleep(20);
        }
    }

    static void describeTopic(Admin admin, String when) throws Exception {
        TopicDescription d = admin.describeTopics(Collections.singletonList(topic))
                .allTopicNames().get().get(topic);
        StringBuilder b = new StringBuilder();
        for (TopicPartitionInfo pi : d.partitions()) {
            if (b.length() > 0) b.append(',');
            b.append("{\"partition\":").append(pi.partition()).append(",\"leader\":")
                    .append(pi.leader() == null ? "null" : String.valueOf(pi.leader().id()))
                    .append(",\"replicas\":").append(ids(pi.replicas()))
                    .append(",\"isr\":").append(ids(pi.isr())).append('}');
        }
        emit("{\"event\":\"topic\",\"when\":" + q(when) + ",\"name\":" + q(topic)
                + ",\"topic_id\":" + q(d.topicId().toString()) + ",\"partitions\":[" + b
                + "],\"t_ms\":" + System.currentTimeMillis() + "}");
    }

    static String ids(List<Node> nodes) {
        StringBuilder b = new StringBuilder("[");
        for (Node n : nodes) {
            if (b.length() > 1) b.append(',');
            b.append(n.id());
        }
        return b.append(']').toString();
    }

    /** Waits until every partition has a leader and its full ISR. */
    static void awaitTopic(Admin admin) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            try {
                TopicDescription d = admin.describeTopics(Collections.singletonList(topic))
                        .allTopicNames().get().get(topic);
                boolean ready = d.partitions().size() == partitions;
                for (TopicPartitionInfo pi : d.partitions())
                    ready &= pi.leader() != null && pi.isr().size() == rf;
                if (ready) return;
            } catch (ExecutionException e) {
                // not yet known to the broker asked
            }
            if (System.currentTimeMillis() > deadline)
                throw new IllegalStateException("topic " + topic + " not ready after 60 s");
            Thread.sleep(100);
        }
    }

    public static void main(String[] args) throws Exception {
        String outPath = null;
        for (int a = 0; a < args.length; a += 2) {
            String k = args[a], v = args[a + 1];
            switch (k) {
                case "--bootstrap": bootstrap = v; break;
                case "--out": outPath = v; break;
                case "--topic": topic = v; break;
                case "--partitions": partitions = Integer.parseInt(v); break;
                case "--replication-factor": rf = Short.parseShort(v); break;
                case "--pause-ms": pauseMs = Integer.parseInt(v); break;
                default: throw new IllegalArgumentException("unknown option " + k);
            }
        }
        if (bootstrap == null || outPath == null)
            throw new IllegalArgumentException("--bootstrap and --out are required");
        out = new PrintWriter(new FileWriter(outPath));
        long t0 = System.currentTimeMillis();
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        int ok = 0, failed = 0;
        Map<String, Integer> errors = new HashMap<>();
        try (Admin admin = Admin.create(ap)) {
            Map<String, String> configs = new HashMap<>();
            configs.put("message.timestamp.type", "CreateTime");
            configs.put("min.insync.replicas", "1");
            admin.createTopics(Collections.singletonList(
                    new NewTopic(topic, partitions, rf).configs(configs))).all().get();
            awaitTopic(admin);
            describeTopic(admin, "start");

            Map<String, KafkaProducer<String, String>> producers = new HashMap<>();
            Map<String, String> clientIds = Map.of("A", "shared-a", "B", "shared-b");
            for (String name : new String[] {"A", "B"}) {
                KafkaProducer<String, String> p = producer(clientIds.get(name));
                awaitId(p, name);
                producers.put(name, p);
                emit("{\"event\":\"init\",\"producer\":" + q(name) + ",\"client_id\":"
                        + q(clientIds.get(name)) + "," + view(p) + ",\"t_ms\":"
                        + System.currentTimeMillis() + "}");
            }
            KafkaProducer<String, String> a = producers.get("A"), b = producers.get("B");
            // B takes A's id and epoch before it sends anything
            String before = view(b);
            Object ape = field(tm(a), "producerIdAndEpoch");
            Object btm = tm(b);
            method(btm, "setProducerIdAndEpoch", ape.getClass()).invoke(btm, ape);
            emit("{\"event\":\"forced\",\"producer\":\"B\",\"client_id\":\"shared-b\","
                    + "\"before\":{" + before + "},\"after\":{" + view(b) + "},\"from\":\"A\""
                    + ",\"t_ms\":" + System.currentTimeMillis() + "}");
            emit("{\"event\":\"state\",\"when\":\"before\",\"A\":{" + view(a) + "},\"B\":{"
                    + view(b) + "},\"t_ms\":" + System.currentTimeMillis() + "}");

            Map<String, Integer> count = new HashMap<>(); // records per producer and partition
            int serial = 0;
            for (Object[] s : PLAN) {
                int step = (Integer) s[0], part = (Integer) s[2], n = (Integer) s[3];
                String name = (String) s[1];
                KafkaProducer<String, String> p = producers.get(name);
                String cid = clientIds.get(name);
                TopicPartition tp = new TopicPartition(topic, part);
                for (int i = 0; i < n; i++) {
                    int k = count.merge(name + part, 1, Integer::sum) - 1;
                    String value = cid + " p" + part + " #" + k;
                    String pre = partitionView(p, tp, "before_");
                    long ts = System.currentTimeMillis();
                    String result;
                    boolean success = false;
                    try {
                        Future<RecordMetadata> f =
                                p.send(new ProducerRecord<>(topic, part, ts, cid, value));
                        RecordMetadata md = f.get(40, TimeUnit.SECONDS);
                        result = "\"offset\":" + md.offset() + ",\"metadata_timestamp\":"
                                + md.timestamp() + ",\"error\":null";
                        success = true;
                        ok++;
                    } catch (Exception e) {
                        Throwable c = e instanceof ExecutionException && e.getCause() != null
                                ? e.getCause() : e;
                        result = "\"offset\":null,\"error\":" + q(c.getClass().getName())
                                + ",\"message\":" + q(c.getMessage());
                        errors.merge(c.getClass().getSimpleName(), 1, Integer::sum);
                        failed++;
                    }
                    long tEnd = System.currentTimeMillis();
                    String post = partitionView(p, tp, "after_");
                    // after a success the partition's next sequence is the one used plus one,
                    // under the id and epoch of the batch just acknowledged
                    String used = "";
                    if (success) {
                        Object t = tm(p);
                        int next = (Integer) method(t, "sequenceNumber", TopicPartition.class)
                                .invoke(t, tp);
                        long[] ie = idEpoch(method(t, "producerIdAndEpoch", TopicPartition.class)
                                .invoke(t, tp));
                        used = ",\"seq\":" + (next - 1) + ",\"batch_producer_id\":" + ie[0]
                                + ",\"batch_epoch\":" + ie[1];
                    }
                    emit("{\"event\":\"send\",\"serial\":" + serial++ + ",\"step\":" + step
                            + ",\"producer\":" + q(name) + ",\"client_id\":" + q(cid)
                            + ",\"topic\":" + q(topic) + ",\"partition\":" + part
                            + ",\"key\":" + q(cid) + ",\"value\":" + q(value)
                            + ",\"timestamp\":" + ts + "," + pre + used + "," + result + ","
                            + post + "," + view(p) + ",\"t_start_ms\":" + ts
                            + ",\"t_end_ms\":" + tEnd + "}");
                    if (pauseMs > 0) Thread.sleep(pauseMs);
                }
            }
            emit("{\"event\":\"state\",\"when\":\"after\",\"A\":{" + view(a) + "},\"B\":{"
                    + view(b) + "},\"t_ms\":" + System.currentTimeMillis() + "}");
            for (KafkaProducer<String, String> p : producers.values())
                p.close(Duration.ofSeconds(5));
            describeTopic(admin, "end");
        }
        StringBuilder eb = new StringBuilder();
        for (Map.Entry<String, Integer> e : errors.entrySet()) {
            if (eb.length() > 0) eb.append(',');
            eb.append(q(e.getKey())).append(':').append(e.getValue());
        }
        emit("{\"event\":\"summary\",\"sends\":" + (ok + failed) + ",\"acknowledged\":" + ok
                + ",\"failed\":" + failed + ",\"errors\":{" + eb + "},\"seconds\":"
                + (System.currentTimeMillis() - t0) / 1000.0 + "}");
        out.close();
        System.exit(0);
    }
}
