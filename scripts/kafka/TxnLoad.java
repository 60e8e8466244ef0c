// A transactional workload of real Kafka Java producers, for scripts/kafka/rig's
// `transactions` scenario (issue 37): the release's own kafka-clients, launched as a
// single-file program:
//
//   java -cp 'target/kafka-jars/<release>/*' scripts/kafka/TxnLoad.java \
//       --bootstrap 127.0.0.1:19101,127.0.0.1:19102 --out txn.jsonl [--ids 40] [--txns 50]
//       [--abort-every 7] [--fence 6] [--fence-at 0.75] [--fence-file F] [--pause-ms 30]
//       [--topic pidshark-txn] [--partitions 4]
//
// It creates the topic (Admin), prints the cluster's finalized features, then runs one
// producer per transactional id `txn-<i>` (i < --ids), each on its own thread:
// initTransactions, then --txns short transactions (one record each), every
// --abort-every-th aborted. For the first --fence ids a second producer with the same
// transactional.id (instance "b") is started at --fence-at of the transactions, once
// --fence-file exists (the rig creates it when the idempotent load has moved the brokers
// to later blocks), while instance "a" holds an open transaction: b's initTransactions
// fences a, whose commit then fails; b goes on with the remaining transactions.
//
// Truth, one JSON object a line in --out: the producer id and epoch the client itself holds,
// read by reflection from KafkaProducer.transactionManager.producerIdAndEpoch, after each
// initTransactions ("init"), each abort ("abort"), the fencing ("fenced", a's view when its
// commit failed, and the exception), and after its last transaction ("final"); with the
// client's own isTransactionV2Enabled where the release has it (4.x). Also "features" (the
// finalized feature levels, from Admin.describeFeatures) at the start and the end, and a
// "summary". Written against the public client API of 3.9.1 and 4.4.0 (only the
// TransactionManager's fields are read by reflection).

import java.io.File;
import java.io.FileWriter;
import java.io.IOException;
import java.io.PrintWriter;
import java.lang.reflect.Field;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicLong;

import org.apache.kafka.clients.admin.Admin;
import org.apache.kafka.clients.admin.AdminClientConfig;
import org.apache.kafka.clients.admin.FeatureMetadata;
import org.apache.kafka.clients.admin.FinalizedVersionRange;
import org.apache.kafka.clients.admin.NewTopic;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerConfig;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.serialization.StringSerializer;

public class TxnLoad {
    static String bootstrap, topic = "pidshark-txn", fenceFile;
    static int ids = 40, txns = 50, abortEvery = 7, fence = 6, partitions = 4, pauseMs = 30;
    static double fenceAt = 0.75;
    static PrintWriter out;
    static final AtomicLong committed = new AtomicLong(), aborted = new AtomicLong(),
            fenced = new AtomicLong(), failures = new AtomicLong();

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

    /** The client's own view: {"producer_id":..,"epoch":..,"txn_v2":..}. */
    static String view(KafkaProducer<String, String> p) {
        try {
            Object tm = field(p, "transactionManager");
            Object pe = field(tm, "producerIdAndEpoch");
            long id = (Long) field(pe, "producerId");
            short epoch = (Short) field(pe, "epoch");
            String v2;
            try {
                v2 = String.valueOf(field(tm, "isTransactionV2Enabled"));
            } catch (NoSuchFieldException e) {
                v2 = "null"; // 3.9: the client has no transactions v2
            }
            return "\"producer_id\":" + id + ",\"epoch\":" + epoch + ",\"txn_v2\":" + v2;
        } catch (ReflectiveOperationException e) {
            throw new IllegalStateException("TransactionManager by reflection: " + e, e);
        }
    }

    static void event(String instance, String tid, String what, int txn,
                      KafkaProducer<String, String> p, String extra) {
        emit("{\"event\":" + q(what) + ",\"instance\":" + q(instance)
                + ",\"transactional_id\":" + q(tid) + ",\"client_id\":" + q(instance)
                + ",\"txn_index\":" + txn + "," + view(p) + ",\"t_ms\":"
                + System.currentTimeMillis() + (extra == null ? "" : "," + extra) + "}");
    }

    static KafkaProducer<String, String> producer(String tid, String instance) {
        Properties p = new Properties();
        p.put(ProducerConfig.BOOTSTRAP_SERVERS_CONFIG, bootstrap);
        p.put(ProducerConfig.TRANSACTIONAL_ID_CONFIG, tid);
        p.put(ProducerConfig.CLIENT_ID_CONFIG, instance);
        p.put(ProducerConfig.ENABLE_IDEMPOTENCE_CONFIG, "true");
        p.put(ProducerConfig.ACKS_CONFIG, "all");
        p.put(ProducerConfig.LINGER_MS_CONFIG, "0");
        p.put(ProducerConfig.BATCH_SIZE_CONFIG, "1024");
        p.put(ProducerConfig.BUFFER_MEMORY_CONFIG, String.valueOf(1 << 20));
        p.put(ProducerConfig.TRANSACTION_TIMEOUT_CONFIG, "30000");
        p.put(ProducerConfig.MAX_BLOCK_MS_CONFIG, "60000");
        p.put(ProducerConfig.KEY_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        p.put(ProducerConfig.VALUE_SERIALIZER_CLASS_CONFIG, StringSerializer.class.getName());
        return new KafkaProducer<>(p);
    }

    static void features(Admin admin, String when) throws Exception {
        FeatureMetadata fm = admin.describeFeatures().featureMetadata().get();
        StringBuilder b = new StringBuilder();
        for (Map.Entry<String, FinalizedVersionRange> e : fm.finalizedFeatures().entrySet()) {
            if (b.length() > 0) b.append(',');
            b.append(q(e.getKey())).append(":{\"min\":").append(e.getValue().minVersionLevel())
                    .append(",\"max\":").append(e.getValue().maxVersionLevel()).append('}');
        }
        emit("{\"event\":\"features\",\"when\":" + q(when) + ",\"finalized\":{" + b
                + "},\"t_ms\":" + System.currentTimeMillis() + "}");
    }

    static void send(KafkaProducer<String, String> p, String tid, int txn) throws Exception {
        p.send(new ProducerRecord<>(topic, tid + "-" + txn, "v" + txn)).get();
    }

    static void waitForFenceFile() throws InterruptedException {
        if (fenceFile == null) return;
        long deadline = System.currentTimeMillis() + 300_000;
        while (!new File(fenceFile).exists()) {
            if (System.currentTimeMillis() > deadline)
                throw new IllegalStateException("no " + fenceFile + " after 300 s");
            Thread.sleep(20);
        }
    }

    static void worker(int i) {
        String tid = "txn-" + i;
        String name = tid + "/a";
        KafkaProducer<String, String> p = producer(tid, name);
        int fenceTxn = i < fence ? (int) (txns * fenceAt) : -1;
        try {
            p.initTransactions();
            event(name, tid, "init", 0, p, null);
            for (int t = 0; t < txns; t++) {
                if (t == fenceTxn) {
                    waitForFenceFile();
                    p.beginTransaction();
                    send(p, tid, t);
                    String bname = tid + "/b";
                    KafkaProducer<String, String> b = producer(tid, bname);
                    b.initTransactions(); // fences a, whose transaction is open
                    event(bname, tid, "init", t, b, "\"fences\":" + q(name));
                    String error = null;
                    try {
                        p.commitTransaction();
                    } catch (Exception e) {
                        error = e.getClass().getName();
                    }
                    if (error == null) {
                        failures.incrementAndGet();
                        event(name, tid, "not_fenced", t, p, null);
                    } else {
                        fenced.incrementAndGet();
                        event(name, tid, "fenced", t, p, "\"error\":" + q(error));
                    }
                    p.close(Duration.ofSeconds(5));
                    p = b;
                    name = bname;
                }
                p.beginTransaction();
                send(p, tid, t);
                if (abortEvery > 0 && t % abortEvery == abortEvery - 1) {
                    p.abortTransaction();
                    aborted.incrementAndGet();
                    event(name, tid, "abort", t, p, null);
                } else {
                    p.commitTransaction();
                    committed.incrementAndGet();
                }
                if (pauseMs > 0) Thread.sleep(pauseMs);
            }
            event(name, tid, "final", txns, p, null);
        } catch (Exception e) {
            failures.incrementAndGet();
            emit("{\"event\":\"failure\",\"instance\":" + q(name) + ",\"error\":"
                    + q(e.toString()) + ",\"t_ms\":" + System.currentTimeMillis() + "}");
        } finally {
            p.close(Duration.ofSeconds(10));
        }
    }

    public static void main(String[] args) throws Exception {
        String outPath = null;
        for (int a = 0; a < args.length; a += 2) {
            String k = args[a], v = args[a + 1];
            switch (k) {
                case "--bootstrap": bootstrap = v; break;
                case "--out": outPath = v; break;
                case "--ids": ids = Integer.parseInt(v); break;
                case "--txns": txns = Integer.parseInt(v); break;
                case "--abort-every": abortEvery = Integer.parseInt(v); break;
                case "--fence": fence = Integer.parseInt(v); break;
                case "--fence-at": fenceAt = Double.parseDouble(v); break;
                case "--fence-file": fenceFile = v; break;
                case "--pause-ms": pauseMs = Integer.parseInt(v); break;
                case "--topic": topic = v; break;
                case "--partitions": partitions = Integer.parseInt(v); break;
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
            features(admin, "start");
            admin.createTopics(Collections.singletonList(
                    new NewTopic(topic, partitions, (short) 1))).all().get();
            List<Thread> threads = new ArrayList<>();
            for (int i = 0; i < ids; i++) {
                final int n = i;
                Thread t = new Thread(() -> worker(n), "txn-" + i);
                t.start();
                threads.add(t);
            }
            for (Thread t : threads) t.join();
            features(admin, "end");
        }
        emit("{\"event\":\"summary\",\"committed\":" + committed + ",\"aborted\":" + aborted
                + ",\"fenced\":" + fenced + ",\"failures\":" + failures + ",\"seconds\":"
                + (System.currentTimeMillis() - t0) / 1000.0 + "}");
        out.close();
        System.exit(failures.get() == 0 ? 0 : 1);
    }
}
