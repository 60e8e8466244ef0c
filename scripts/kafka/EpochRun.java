// One transactional Kafka producer that runs transactions until its producer epoch is used up
// and the coordinator hands it a new producer id, for scripts/kafka/rig's `epoch-exhaustion`
// scenario (4.x, transactions v2): the release's own kafka-clients, launched as a single-file
// program:
//
//   java -cp 'target/kafka-jars/<release>/*' scripts/kafka/EpochRun.java \
//       --bootstrap 127.0.0.1:19101,127.0.0.1:19102 --out epoch.jsonl --progress progress.json
//       [--transactional-id pidshark-epoch] [--topic pidshark-epoch] [--partitions 1]
//       [--record-from 32700] [--go-file F] [--after-rotation 5] [--max-txns 40000]
//
// It creates the topic (Admin), then runs one producer (client.id pidshark-epoch) with that
// transactional.id: initTransactions, then one short transaction after another, each
// beginTransaction, one record sent (its value names the transaction), commitTransaction.
// With transaction.version=2 every EndTxn bumps the producer epoch and its v5 response
// carries the producer id and epoch the client goes on with; once the epoch is used up the
// coordinator puts a new producer id (epoch 0) in that response (TransactionMetadata
// .prepareAbortOrCommit / prepareComplete; TransactionCoordinator.endTransaction).
// Empty transactions do not help: the client sends no EndTxn for a transaction in which
// nothing was sent (TransactionManager: "Not sending EndTxn for completed transaction").
//
// Once the epoch the client holds reaches --record-from, it waits for --go-file to exist (the
// rig starts tcpdump, then creates it), and from then on writes every transaction to --out;
// it stops --after-rotation transactions after the producer id changed.
//
// --out, one JSON object a line: "features" (finalized feature levels at the start),
// "init" (id and epoch after initTransactions), "txn" (per transaction from --record-from on:
// index, the id and epoch the client held before and after it, read by reflection from
// KafkaProducer.transactionManager.producerIdAndEpoch, the record's value, partition and
// offset, t_start_ms / t_commit_ms / t_end_ms), "rotated" (the transaction after which the id
// changed), "final", "summary". --progress is rewritten about once a second with
// {"txns","producer_id","epoch","rate","waiting"}.

import java.io.File;
import java.io.FileWriter;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.nio.file.Files;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.util.Collections;
import java.util.Map;
import java.util.Properties;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.clients.producer.RecordMetadata;
import org.apache.kafka.common.serialization.StringSerializer;

public class EpochRun {
    static String bootstrap, topic = "pidshark-epoch", tid = "pidshark-epoch", goFile;
    static String progressPath;
    static int partitions = 1, recordFrom = 32700, afterRotation = 5;
    static long maxTxns = 40000;
    static PrintWriter out;

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

    static void emit(String json) {
        out.println(json);
        out.flush();
    }

    static Object field(Object o, String name) throws ReflectiveOperationException {
        for (Class<?> c = o.getClass(); c != null; c = c.getSuperclass()) {
            try {
                Field f = c.getDeclaredField(name);
                f.setAccessible(true);
                return f.get(o);
            } catch (NoSuchFieldException e) {
                // the superclass may have it
            }
        }
        throw new NoSuchFieldException(o.getClass().getName() + "." + name);
    }

    /** [producer id, epoch] the client holds. */
    static long[] held(KafkaProducer<String, String> p) throws ReflectiveOperationException {
        Object pe = field(field(p, "transactionManager"), "producerIdAndEpoch");
        return new long[] {(Long) field(pe, "producerId"), (Short) field(pe, "epoch")};
    }

    static String txnV2(KafkaProducer<String, String> p) {
        try {
            return String.valueOf(field(field(p, "transactionManager"), "isTransactionV2Enabled"));
        } catch (ReflectiveOperationException e) {
            return "null";
        }
    }

    static void progress(long txns, long[] h, double rate, boolean waiting) throws Exception {
        File tmp = new File(progressPath + ".tmp");
        try (PrintWriter w = new PrintWriter(new FileWriter(tmp))) {
            w.println("{\"txns\":" + txns + ",\"producer_id\":" + h[0] + ",\"epoch\":" + h[1]
                    + ",\"rate\":" + Math.round(rate * 10) / 10.0 + ",\"waiting\":" + waiting
                    + ",\"t_ms\":" + System.currentTimeMillis() + "}");
        }
        Files.move(tmp.toPath(), new File(progressPath).toPath(),
                StandardCopyOption.REPLACE_EXISTING, StandardCopyOption.ATOMIC_MOVE);
    }

    /** From the recording on, the client logs its transactional requests and responses
     * (Sender at DEBUG: "Sending transactional request ... with correlation ID n";
     * TransactionManager at TRACE: "Received transactional response ..."): log4j2's
     * Configurator, by reflection (4.x clients log through log4j2 here). */
    static String traceTransactions() {
        try {
            Class<?> level = Class.forName("org.apache.logging.log4j.Level");
            Object debug = level.getMethod("getLevel", String.class).invoke(null, "DEBUG");
            Object trace = level.getMethod("getLevel", String.class).invoke(null, "TRACE");
            java.lang.reflect.Method set = Class.forName(
                    "org.apache.logging.log4j.core.config.Configurator")
                    .getMethod("setLevel", String.class, level);
            set.invoke(null, "org.apache.kafka.clients.producer.internals.Sender", debug);
            set.invoke(null, "org.apache.kafka.clients.producer.internals.TransactionManager",
                    trace);
            return null;
        } catch (ReflectiveOperationException | LinkageError e) {
            return e.toString();
        }
    }

    public static void main(String[] args) throws Exception {
        String outPath = null;
        for (int a = 0; a < args.length; a += 2) {
            String k = args[a], v = args[a + 1];
            switch (k) {
                case "--bootstrap": bootstrap = v; break;
                case "--out": outPath = v; break;
                case "--progress": progressPath = v; break;
                case "--transactional-id": tid = v; break;
                case "--topic": topic = v; break;
                case "--partitions": partitions = Integer.parseInt(v); break;
                case "--record-from": recordFrom = Integer.parseInt(v); break;
                case "--go-file": goFile = v; break;
                case "--after-rotation": afterRotation = Integer.parseInt(v); break;
                case "--max-txns": maxTxns = Long.parseLong(v); break;
                default: throw new IllegalArgumentException("unknown option " + k);
            }
        }
        if (bootstrap == null || outPath == null || progressPath == null)
            throw new IllegalArgumentException("--bootstrap, --out and --progress are required");
        out = new PrintWriter(new FileWriter(outPath));
        long t0 = System.currentTimeMillis();
        Properties ap = new Properties();
        ap.put(AdminClientConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        try (Admin admin = Admin.create(ap)) {
            FeatureMetadata fm = admin.describeFeatures().featureMetadata().get();
            StringBuilder b = new StringBuilder();
            for (Map.Entry<String, FinalizedVersionRange> e : fm.finalizedFeatures().entrySet()) {
                if (b.length() > 0) b.append(',');
                b.append(q(e.getKey())).append(":{\"min\":").append(e.getValue().minVersionLevel())
                        .append(",\"max\":").append(e.getValue().maxVersionLevel()).append('}');
            }
            emit("{\"event\":\"features\",\"finalized\":{" + b + "},\"t_ms\":"
                    + System.currentTimeMillis() + "}");
            admin.createTopics(Collections.singletonList(
                    new NewTopic(topic, partitions, (short) 1))).all().get();
        }
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, tid);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        long txns = 0, recorded = 0;
        int exit = 0;
        try (KafkaProducer<String, String> producer = new KafkaProducer<>(p)) {
            producer.initTransactions();
            long[] h = held(producer);
            long firstId = h[0];
            emit("{\"event\":\"init\",\"transactional_id\":" + q(tid) + ",\"client_id\":" + q(tid)
                    + ",\"producer_id\":" + h[0] + ",\"epoch\":" + h[1] + ",\"txn_v2\":"
                    + txnV2(producer) + ",\"t_ms\":" + System.currentTimeMillis() + "}");
            long lastProgress = 0, rateFrom = System.currentTimeMillis(), rateTxns = 0;
            double rate = 0;
            long rotatedAt = -1;
            boolean recording = false;
            while (txns < maxTxns) {
                long now = System.currentTimeMillis();
                if (now - lastProgress >= 1000) {
                    if (now > rateFrom) rate = (txns - rateTxns) * 1000.0 / (now - rateFrom);
                    rateFrom = now;
                    rateTxns = txns;
                    progress(txns, h, rate, false);
                    lastProgress = now;
                }
                if (!recording && h[0] == firstId && h[1] >= recordFrom) {
                    progress(txns, h, rate, true);
                    if (goFile != null) {
                        long deadline = System.currentTimeMillis() + 120_000;
                        while (!new File(goFile).exists()) {
                            if (System.currentTimeMillis() > deadline)
                                throw new IllegalStateException("no " + goFile + " after 120 s");
                            Thread.sleep(20);
                        }
                    }
                    recording = true;
                    String logError = traceTransactions();
                    emit("{\"event\":\"recording\",\"txns\":" + txns + ",\"producer_id\":" + h[0]
                            + ",\"epoch\":" + h[1] + ",\"trace_log_error\":" + q(logError)
                            + ",\"t_ms\":" + System.currentTimeMillis() + "}");
                }
                long[] before = h;
                String value = "txn " + txns;
                long tStart = System.currentTimeMillis();
                producer.beginTransaction();
                RecordMetadata md = producer.send(new ProducerRecord<>(topic, tid, value)).get();
                long tCommit = System.currentTimeMillis();
                producer.commitTransaction();
                long tEnd = System.currentTimeMillis();
                h = held(producer);
                if (recording) {
                    recorded++;
                    emit("{\"event\":\"txn\",\"index\":" + txns
                            + ",\"before\":{\"producer_id\":" + before[0] + ",\"epoch\":"
                            + before[1] + "},\"after\":{\"producer_id\":" + h[0]
                            + ",\"epoch\":" + h[1] + "},\"value\":" + q(value)
                            + ",\"partition\":" + md.partition() + ",\"offset\":" + md.offset()
                            + ",\"t_start_ms\":" + tStart + ",\"t_commit_ms\":" + tCommit
                            + ",\"t_end_ms\":" + tEnd + "}");
                }
                txns++;
                if (rotatedAt < 0 && h[0] != firstId) {
                    rotatedAt = txns - 1;
                    emit("{\"event\":\"rotated\",\"index\":" + rotatedAt
                            + ",\"from\":{\"producer_id\":" + before[0] + ",\"epoch\":"
                            + before[1] + "},\"to\":{\"producer_id\":"
                            + h[0] + ",\"epoch\":" + h[1] + "},\"t_ms\":" + tEnd + "}");
                }
                if (rotatedAt >= 0 && txns - 1 - rotatedAt >= afterRotation) break;
            }
            progress(txns, h, rate, false);
            emit("{\"event\":\"final\",\"producer_id\":" + h[0] + ",\"epoch\":" + h[1]
                    + ",\"txn_v2\":" + txnV2(producer) + ",\"t_ms\":" + System.currentTimeMillis()
                    + "}");
            if (rotatedAt < 0) exit = 2;
            emit("{\"event\":\"summary\",\"transactions\":" + txns + ",\"recorded\":" + recorded
                    + ",\"rotated_at\":" + rotatedAt + ",\"first_producer_id\":" + firstId
                    + ",\"seconds\":" + (System.currentTimeMillis() - t0) / 1000.0 + "}");
            producer.close(Duration.ofSeconds(10));
        } catch (Exception e) {
            emit("{\"event\":\"failure\",\"error\":" + q(e.toString()) + ",\"txns\":" + txns
                    + ",\"t_ms\":" + System.currentTimeMillis() + "}");
            exit = 1;
        }
        out.close();
        System.exit(exit);
    }
}
