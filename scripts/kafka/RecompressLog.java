// Rewrites a Kafka log segment with every batch compressed by one codec, with Kafka's own
// record classes (so the bytes are what a Kafka writer would make), for
// scripts/make-metadata-log-fixtures.
//
//   java -cp 'target/kafka-jars/4.4.0/*:DIR' RecompressLog IN.log OUT.log none|gzip|snappy|lz4|zstd
//
// Each batch keeps its base offset, partition leader epoch, producer fields, transactional and
// control flags, and each record its offset, timestamp, key, value and headers. A batch Kafka
// refuses to build compressed is written uncompressed and named on stderr ("kept ... none").
// Written against Kafka 4.4.0, where the record classes live in ...record.internal.

import java.io.File;
import java.io.FileOutputStream;
import java.nio.ByteBuffer;

import org.apache.kafka.common.compress.Compression;
import org.apache.kafka.common.record.TimestampType;
import org.apache.kafka.common.record.internal.FileLogInputStream.FileChannelRecordBatch;
import org.apache.kafka.common.record.internal.FileRecords;
import org.apache.kafka.common.record.internal.MemoryRecords;
import org.apache.kafka.common.record.internal.MemoryRecordsBuilder;
import org.apache.kafka.common.record.internal.Record;
import org.apache.kafka.common.record.internal.RecordBatch;
import org.apache.kafka.common.record.internal.SimpleRecord;

public class RecompressLog {
    static Compression codec(String name) {
        switch (name) {
            case "none": return Compression.NONE;
            case "gzip": return Compression.gzip().build();
            case "snappy": return Compression.snappy().build();
            case "lz4": return Compression.lz4().build();
            case "zstd": return Compression.zstd().build();
            default: throw new IllegalArgumentException("unknown codec " + name);
        }
    }

    static MemoryRecords rebuild(RecordBatch batch, Compression compression) {
        // room for the batch uncompressed plus headroom; the builder grows it if need be
        ByteBuffer buf = ByteBuffer.allocate(batch.sizeInBytes() * 2 + 1024);
        MemoryRecordsBuilder b = MemoryRecords.builder(buf, batch.magic(), compression,
                TimestampType.CREATE_TIME, batch.baseOffset(), RecordBatch.NO_TIMESTAMP,
                batch.producerId(), batch.producerEpoch(), batch.baseSequence(),
                batch.isTransactional(), batch.isControlBatch(), batch.partitionLeaderEpoch());
        for (Record r : batch) {
            SimpleRecord s = new SimpleRecord(r.timestamp(), r.key(), r.value(), r.headers());
            if (batch.isControlBatch()) {
                b.appendControlRecordWithOffset(r.offset(), s);
            } else {
                b.appendWithOffset(r.offset(), s);
            }
        }
        // a batch whose records do not reach its last offset (compaction) keeps that offset
        if (b.numRecords() > 0) {
            b.overrideLastOffset(batch.lastOffset());
        }
        return b.build();
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: RecompressLog IN.log OUT.log none|gzip|snappy|lz4|zstd");
            System.exit(2);
        }
        Compression compression = codec(args[2]);
        int batches = 0, kept = 0;
        try (FileRecords in = FileRecords.open(new File(args[0]), false);
             FileOutputStream out = new FileOutputStream(args[1])) {
            for (FileChannelRecordBatch batch : in.batches()) {
                batch.ensureValid();
                MemoryRecords built;
                try {
                    built = rebuild(batch, compression);
                } catch (IllegalArgumentException | UnsupportedOperationException e) {
                    System.err.println("kept batch " + batch.baseOffset() + " none: " + e);
                    built = rebuild(batch, Compression.NONE);
                    kept++;
                }
                ByteBuffer bytes = built.buffer();
                out.getChannel().write(bytes);
                batches++;
            }
        }
        System.err.println("RecompressLog: " + batches + " batches, " + kept
                + " left uncompressed, codec " + args[2]);
    }
}
