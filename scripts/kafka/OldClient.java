// Producers of an old Java client (kafka-clients 2.4.1: Produce up to v8, which Wireshark 4.0
// decodes down to every record batch's header), for scripts/kafka/rig's `old-client`
// scenario, launched as a single-file program on the old client's jars:
//
//   java -cp 'target/kafka-jars/clients-2.4.1/*' scripts/kafka/OldClient.java \
//       --bootstrap 127.0.0.1:19101,127.0.0.1:19102 --out old.jsonl
//       [--rounds-a 80] [--rounds-b 60] [--txns 8] [--replication-factor 2]
//
// It creates two topics (Admin; CreateTime, min.insync.replicas 1, replication factor 2):
// pidshark-old-a (4 partitions) and pidshark-old-b (3 partitions, max.message.bytes 4096).
// Then, one after the other:
//
//   1. Two idempotent producers, A (client.id old-a, no compression) and B (old-b, lz4: the
//      records of its batches are compressed, the batch headers are not), acks=all,
//      linger.ms 10000, so that nothing leaves before the program calls flush(). In each
//      round A sends 1..4 records to each of three partitions (two of pidshark-old-a, one of
//      pidshark-old-b) and flushes; then B sends 1..5 records to two partitions (one of each
//      topic) and flushes. So every batch holds that round's records of its partition, and
//      a Produce request carries the batches of the partitions its broker leads, of both
//      topics. A round is waited for (every send's result) before the next.
//   2. A sends one 6000-byte record to pidshark-old-b (max.message.bytes 4096): the leader
//      answers MESSAGE_TOO_LARGE, and the client fails the send (RecordTooLargeException).
//   3. One transactional producer T (client.id old-txn, transactional.id pidshark-old-txn):
//      initTransactions, then --txns transactions of 2 to 4 records each to one partition of
//      each topic, sent in two flushes (two Produce requests a broker); every third
//      transaction (index 2, 5, ...) is aborted, the others committed.
//
// One JSON object a line in --out: "topic" (name, partitions with leader, replicas, isr; at
// the start and the end), "init" (each producer's id and epoch once its Sender had it),
// one "send" per record (producer, client_id, transactional_id, round or transaction index,
// topic, partition, key, value size and value (short values), timestamp, the record's index
// in its round's batch, the client's producer id and epoch after the send, the RecordMetadata
// topic, partition and offset the client was told, or the exception's class and message,
// t_start_ms / t_end_ms), "txn" (each transaction: index, committed or aborted, the result of
// commit/abort), "api_versions" (the Produce version each producer settled on per broker,
// from its ApiVersions) and a "summary". The producer id and epoch are read by reflection
// from KafkaProducer.transactionManager.producerIdAndEpoch.

import java.io.FileWriter;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.lang.reflect.Method;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collection;
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
import org.apache.kafka.common.TopicPartitionInfo;
import org.apache.kafka.common.protocol.ApiKeys;
import org.apache.kafka.common.serialization.StringSerializer;

public class OldClient {
    static String bootstrap;
    static final String TOPIC_A = "pidshark-old-a", TOPIC_B = "pidshark-old-b";
    static final Map<String, Integer> PARTITIONS = Map.of(TOPIC_A, 4, TOPIC_B, 3);
    static int roundsA = 80, roundsB = 60, txns = 8, pauseMs = 10;
    static short rf = 2;
    static PrintWriter out;
    static int ok = 0, failed = 0;
    static Map<String, Integer> errors = new HashMap<>();

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

    /** The producer's own id and epoch: "producer_id":..,"epoch":.. */
    static String view(KafkaProducer<String, String> p) {
        try {
            Object pe = field(field(p, "transactionManager"), "producerIdAndEpoch");
            return "\"producer_id\":" + field(pe, "producerId") + ",\"epoch\":"
                    + field(pe, "epoch");
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("TransactionManager by reflection: " + e, e);
        }
    }

    /** Waits until the producer's Sender holds a producer id of its own. */
    static void awaitId(KafkaProducer<String, String> p, String name) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            Object pe = field(field(p, "transactionManager"), "producerIdAndEpoch");
            if ((Boolean) method(pe, "isValid").invoke(pe)) return;
            if (System.currentTimeMillis() > deadline)
                throw new IllegalStateException(name + ": no producer id after 60 s");
            Thread.sleep(20);
        }
    }

    /** The Produce version the producer uses with each broker it knows. */
    static String produceVersions(KafkaProducer<String, String> p) {
        StringBuilder b = new StringBuilder("{");
        try {
            Object av = field(p, "apiVersions");
            @SuppressWarnings("unchecked")
            Map<String, Object> nodes = (Map<String, Object>) field(av, "nodeApiVersions");
            for (Map.Entry<String, Object> e : nodes.entrySet()) {
                Object v = method(e.getValue(), "latestUsableVersion", ApiKeys.class)
                        .invoke(e.getValue(), ApiKeys.PRODUCE);
                if (b.length() > 1) b.append(',');
                b.append(q(e.getKey())).append(':').append(v);
            }
        } catch (ReflectiveOperationException e) {
            return q("unknown: " + e);
        }
        return b.append('}').toString();
    }

    static KafkaProducer<String, String> producer(String clientId, String compression,
                                                  String transactionalId) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, clientId);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        if (transactionalId != null) p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, transactionalId);
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "10000");
        p.put(ProducerConfig.COMPRESSION_TYPE_CONFIG, compression);
        p.put(ProducerConfig.REQUEST_TIMEOUT_MS_CONFIG, "10000");
        p.put(ProducerConfig.DELIVERY_TIMEOUT_MS_CONFIG, "30000");
        p.put(ProducerConfig.RETRY_BACKOFF_MS_CONFIG, "100");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "30000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    static void describeTopics(Admin admin, String when) throws Exception {
        Map<String, TopicDescription> all =
                admin.describeTopics(new ArrayList<>(PARTITIONS.keySet())).all().get();
        for (String topic : new String[] {TOPIC_A, TOPIC_B}) {
            StringBuilder b = new StringBuilder();
            for (TopicPartitionInfo pi : all.get(topic).partitions()) {
                if (b.length() > 0) b.append(',');
                b.append("{\"partition\":").append(pi.partition()).append(",\"leader\":")
                        .append(pi.leader() == null ? "null" : String.valueOf(pi.leader().id()))
                        .append(",\"replicas\":").append(ids(pi.replicas()))
                        .append(",\"isr\":").append(ids(pi.isr())).append('}');
            }
            emit("{\"event\":\"topic\",\"when\":" + q(when) + ",\"name\":" + q(topic)
                    + ",\"partitions\":[" + b + "],\"t_ms\":" + System.currentTimeMillis() + "}");
        }
    }

    static String ids(List<Node> nodes) {
        StringBuilder b = new StringBuilder("[");
        for (Node n : nodes) {
            if (b.length() > 1) b.append(',');
            b.append(n.id());
        }
        return b.append(']').toString();
    }

    /** Waits until every partition of both topics has a leader and its full ISR. */
    static void awaitTopics(Admin admin) throws Exception {
        long deadline = System.currentTimeMillis() + 60_000;
        while (true) {
            try {
                Map<String, TopicDescription> all =
                        admin.describeTopics(new ArrayList<>(PARTITIONS.keySet())).all().get();
                boolean ready = true;
                for (Map.Entry<String, TopicDescription> e : all.entrySet()) {
                    ready &= e.getValue().partitions().size() == PARTITIONS.get(e.getKey());
                    for (TopicPartitionInfo pi : e.getValue().partitions())
                        ready &= pi.leader() != null && pi.isr().size() == rf;
                }
                if (ready) return;
            } catch (ExecutionException e) {
                // not yet known to the broker asked
            }
            if (System.currentTimeMillis() > deadline)
                throw new IllegalStateException("topics not ready after 60 s");
            Thread.sleep(100);
        }
    }

    /** One record to send: where, and what the program says of it. */
    static class Send {
        final String name, topic, value, context;
        final int partition, index;
        final long ts;
        Future<RecordMetadata> future;

        Send(String name, String topic, int partition, String value, int index, String context) {
            this.name = name;
            this.topic = topic;
            this.partition = partition;
            this.value = value;
            this.index = index;
            this.context = context;
            this.ts = System.currentTimeMillis();
        }
    }

    static int serial = 0;

    /** Sends every record of `sends` (one batch per partition), flushes, waits for each
     * result and emits one "send" line per record. */
    static void round(KafkaProducer<String, String> p, String clientId, String txnId,
                      List<Send> sends) {
        for (Send s : sends) {
            try {
                s.future = p.send(new ProducerRecord<>(s.topic, s.partition, s.ts, clientId,
                        s.value));
            } catch (Exception e) {
                s.future = null;
                record(p, clientId, txnId, s, null, e);
            }
        }
        p.flush();
        for (Send s : sends) {
            if (s.future == null) continue;
            try {
                record(p, clientId, txnId, s, s.future.get(60, TimeUnit.SECONDS), null);
            } catch (Exception e) {
                record(p, clientId, txnId, s, null, e);
            }
        }
    }

    static void record(KafkaProducer<String, String> p, String clientId, String txnId, Send s,
                       RecordMetadata md, Exception e) {
        String result;
        if (md != null) {
            result = "\"told_topic\":" + q(md.topic()) + ",\"told_partition\":" + md.partition()
                    + ",\"offset\":" + md.offset() + ",\"metadata_timestamp\":" + md.timestamp()
                    + ",\"error\":null";
            ok++;
        } else {
            Throwable c = e instanceof ExecutionException && e.getCause() != null
                    ? e.getCause() : e;
            result = "\"offset\":null,\"error\":" + q(c.getClass().getName()) + ",\"message\":"
                    + q(c.getMessage());
            errors.merge(c.getClass().getSimpleName(), 1, Integer::sum);
            failed++;
        }
        String shown = s.value.length() <= 64 ? s.value : s.value.substring(0, 32) + "...";
        emit("{\"event\":\"send\",\"serial\":" + serial++ + ",\"producer\":" + q(s.name)
                + ",\"client_id\":" + q(clientId) + ",\"transactional_id\":" + q(txnId) + ","
                + s.context + ",\"topic\":" + q(s.topic) + ",\"partition\":" + s.partition
                + ",\"index_in_batch\":" + s.index + ",\"key\":" + q(clientId) + ",\"value\":"
                + q(shown) + ",\"value_size\":" + s.value.length() + ",\"timestamp\":" + s.ts
                + "," + result + "," + view(p) + ",\"t_start_ms\":" + s.ts + ",\"t_end_ms\":"
                + System.currentTimeMillis() + "}");
    }

    /** `n` records of one partition for a round. */
    static void add(List<Send> sends, String name, String clientId, String topic, int partition,
                    int n, String tag, String context) {
        for (int i = 0; i < n; i++) {
            String value = clientId + " " + topic + "-" + partition + " " + tag + " #" + i;
            sends.add(new Send(name, topic, partition, value, i, context));
        }
    }

    public static void main(String[] args) throws Exception {
        String outPath = null;
        for (int a = 0; a < args.length; a += 2) {
            String k = args[a], v = args[a + 1];
            switch (k) {
                case "--bootstrap": bootstrap = v; break;
                case "--out": outPath = v; break;
                case "--rounds-a": roundsA = Integer.parseInt(v); break;
                case "--rounds-b": roundsB = Integer.parseInt(v); break;
                case "--txns": txns = Integer.parseInt(v); break;
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
        try (Admin admin = Admin.create(ap)) {
            List<NewTopic> topics = new ArrayList<>();
            for (String topic : new String[] {TOPIC_A, TOPIC_B}) {
                Map<String, String> configs = new HashMap<>();
                configs.put("message.timestamp.type", "CreateTime");
                configs.put("min.insync.replicas", "1");
                if (topic.equals(TOPIC_B)) configs.put("max.message.bytes", "4096");
                topics.add(new NewTopic(topic, PARTITIONS.get(topic), rf).configs(configs));
            }
            admin.createTopics(topics).all().get();
            awaitTopics(admin);
            describeTopics(admin, "start");

            // 1. two idempotent producers, round after round
            KafkaProducer<String, String> a = producer("old-a", "none", null);
            KafkaProducer<String, String> b = producer("old-b", "lz4", null);
            awaitId(a, "A");
            awaitId(b, "B");
            emit("{\"event\":\"init\",\"producer\":\"A\",\"client_id\":\"old-a\","
                    + "\"compression\":\"none\"," + view(a) + "}");
            emit("{\"event\":\"init\",\"producer\":\"B\",\"client_id\":\"old-b\","
                    + "\"compression\":\"lz4\"," + view(b) + "}");
            int rounds = Math.max(roundsA, roundsB);
            for (int r = 0; r < rounds; r++) {
                String context = "\"round\":" + r;
                if (r < roundsA) {
                    List<Send> sends = new ArrayList<>();
                    add(sends, "A", "old-a", TOPIC_A, r % 4, 1 + (r * 7) % 4, "r" + r, context);
                    add(sends, "A", "old-a", TOPIC_A, (r + 1) % 4, 1 + (r * 5 + 1) % 4, "r" + r,
                            context);
                    add(sends, "A", "old-a", TOPIC_B, r % 3, 1 + (r * 3 + 2) % 4, "r" + r,
                            context);
                    round(a, "old-a", null, sends);
                }
                if (r < roundsB) {
                    List<Send> sends = new ArrayList<>();
                    add(sends, "B", "old-b", TOPIC_A, (r + 2) % 4, 1 + (r * 3) % 5, "r" + r,
                            context);
                    add(sends, "B", "old-b", TOPIC_B, (r + 1) % 3, 1 + (r * 2 + 1) % 5, "r" + r,
                            context);
                    round(b, "old-b", null, sends);
                }
                if (pauseMs > 0) Thread.sleep(pauseMs);
            }
            // 2. a record larger than pidshark-old-b's max.message.bytes: MESSAGE_TOO_LARGE
            {
                StringBuilder big = new StringBuilder("old-a too large ");
                while (big.length() < 6000) big.append((char) ('a' + big.length() % 26));
                List<Send> sends = new ArrayList<>();
                sends.add(new Send("A", TOPIC_B, 0, big.toString(), 0, "\"round\":" + rounds));
                round(a, "old-a", null, sends);
            }
            emit("{\"event\":\"api_versions\",\"producer\":\"A\",\"produce_version_by_node\":"
                    + produceVersions(a) + "}");
            emit("{\"event\":\"api_versions\",\"producer\":\"B\",\"produce_version_by_node\":"
                    + produceVersions(b) + "}");
            a.close(Duration.ofSeconds(5));
            b.close(Duration.ofSeconds(5));

            // 3. a transactional producer: commits and aborts
            String tid = "pidshark-old-txn";
            KafkaProducer<String, String> t = producer("old-txn", "none", tid);
            t.initTransactions();
            emit("{\"event\":\"init\",\"producer\":\"T\",\"client_id\":\"old-txn\","
                    + "\"transactional_id\":" + q(tid) + ",\"compression\":\"none\"," + view(t)
                    + "}");
            for (int i = 0; i < txns; i++) {
                boolean commit = i % 3 != 2;
                String context = "\"txn\":" + i;
                t.beginTransaction();
                for (int half = 0; half < 2; half++) {
                    List<Send> sends = new ArrayList<>();
                    add(sends, "T", "old-txn", TOPIC_A, (i + half) % 4, 1 + (i + half) % 2,
                            "t" + i + "." + half, context);
                    add(sends, "T", "old-txn", TOPIC_B, (i + 2 * half) % 3, 1 + (i * 3 + half) % 3,
                            "t" + i + "." + half, context);
                    round(t, "old-txn", tid, sends);
                }
                String result = "null";
                try {
                    if (commit) t.commitTransaction();
                    else t.abortTransaction();
                } catch (Exception e) {
                    result = q(e.getClass().getName() + ": " + e.getMessage());
                }
                emit("{\"event\":\"txn\",\"txn\":" + i + ",\"transactional_id\":" + q(tid)
                        + ",\"end\":" + q(commit ? "commit" : "abort") + ",\"error\":" + result
                        + "," + view(t) + ",\"t_ms\":" + System.currentTimeMillis() + "}");
                if (pauseMs > 0) Thread.sleep(pauseMs);
            }
            emit("{\"event\":\"api_versions\",\"producer\":\"T\",\"produce_version_by_node\":"
                    + produceVersions(t) + "}");
            t.close(Duration.ofSeconds(5));
            describeTopics(admin, "end");
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
