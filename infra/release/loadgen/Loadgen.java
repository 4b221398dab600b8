// xp's load generator in Java: the producers and consumer groups of
// `xp loadgen --client java`, on Apache Kafka's own KafkaProducer and
// KafkaConsumer, so that a run measures what a Java service pays (the Java
// client spends several times franz-go's CPU per record, and its TLS costs
// it more). It exists beside the Go load generator, not instead of it:
// `xp loadgen` creates the topics, writes the payloads and the job, runs
// this class, and judges the run from what it reports, with the same health
// rules and result as the Go client's (docs/loadgen.md). What runs here is
// the Go loop's schedule, line for line: records due at t0 + i/rate (open
// loop, latency from the intended send time) or a window of records in
// flight (closed loop), the xp-t and xp-d headers, the digest check, one
// count per partition offset and group, per-second HdrHistograms in
// microseconds (1 us to 60 s, 3 digits) in the V2-compressed encoding Go's
// hdrhistogram reads. Written for xp, compiled by `make java-client`
// against kafka-clients and HdrHistogram from Maven Central.
//
// Protocol: java -cp 'libs/*' xp.loadgen.Loadgen JOB.properties. Lines on
// stdout: "phase NAME UNIX_NS" as each phase starts (NAME warmup, measure,
// drain; UNIX_NS when it ends at the latest), "pacer TID SLACK_NS" as
// each open-loop pacer thread starts, then "result JSON"; or
// "error MESSAGE" and exit status 1 when the cluster cannot be used. End
// of standard input stops the run early (it still reports).
//
// The security surface of a row reaches this class as Kafka client
// properties (ssl.enabled.protocols, ssl.cipher.suites, sasl.mechanism and
// its login, written by xp) and one job key, connection.churn. What the
// TLS connections negotiated is read back from the client's own SSL
// engines (Engines, set as ssl.engine.factory.class) and reported, not
// assumed from the properties.
package xp.loadgen;

import java.io.BufferedInputStream;
import java.io.DataInputStream;
import java.io.FileInputStream;
import java.io.IOException;
import java.io.InputStream;
import java.lang.management.GarbageCollectorMXBean;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.KeyStore;
import java.security.PublicKey;
import java.security.cert.Certificate;
import java.security.interfaces.ECPublicKey;
import java.security.interfaces.RSAPublicKey;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Base64;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.Set;
import java.util.SplittableRandom;
import java.util.TreeSet;
import java.util.concurrent.ConcurrentLinkedQueue;
import java.util.concurrent.Semaphore;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicLong;
import java.util.concurrent.atomic.AtomicLongArray;
import java.util.concurrent.atomic.AtomicReferenceArray;
import java.util.concurrent.locks.LockSupport;
import java.util.zip.CRC32;
import java.util.zip.CRC32C;
import java.util.zip.DataFormatException;
import java.util.zip.Deflater;

import javax.net.ssl.SSLEngine;
import javax.net.ssl.SSLException;
import javax.net.ssl.SSLSession;

import org.HdrHistogram.Histogram;
import org.apache.kafka.clients.consumer.ConsumerRebalanceListener;
import org.apache.kafka.clients.consumer.ConsumerRecord;
import org.apache.kafka.clients.consumer.ConsumerRecords;
import org.apache.kafka.clients.consumer.KafkaConsumer;
import org.apache.kafka.clients.producer.KafkaProducer;
import org.apache.kafka.clients.producer.ProducerRecord;
import org.apache.kafka.common.Metric;
import org.apache.kafka.common.MetricName;
import org.apache.kafka.common.TopicPartition;
import org.apache.kafka.common.errors.WakeupException;
import org.apache.kafka.common.header.Header;
import org.apache.kafka.common.header.internals.RecordHeaders;
import org.apache.kafka.common.security.auth.SslEngineFactory;
import org.apache.kafka.common.security.ssl.DefaultSslEngineFactory;
import org.apache.kafka.common.serialization.ByteBufferDeserializer;
import org.apache.kafka.common.serialization.ByteArraySerializer;

public final class Loadgen {
    static final String HEADER_TIME = "xp-t";
    static final String HEADER_DIGEST = "xp-d";
    static final long SECOND = 1_000_000_000L;
    static final long SEND_GRACE = SECOND;
    static final int MAX_ERR_SAMPLES = 5;

    final Properties job;
    final Properties client = new Properties();
    final String[] topics;
    final int[] parts;
    final int[] first;
    final Map<String, Integer> index = new HashMap<>();
    final int nparts;
    final int producers, groups, perGroup;
    final long rate;
    final int inFlight;
    final long warmupNs, durationNs, drainNs;
    final int nsec;
    final List<byte[]> payloads = new ArrayList<>();
    final long[] digests;

    // The run's clock: the wall time at the start plus monotonic time
    // since, so an NTP step cannot bend a latency.
    final long wall0, mono0;
    long t0, warmEnd, measEnd;

    final Recorder pub, e2e, sendDelay;
    final AtomicLong ackedAll = new AtomicLong(), consumedAll = new AtomicLong();
    final AtomicLong pubMeasured = new AtomicLong(), pubWarm = new AtomicLong();
    final AtomicLong consMeasured = new AtomicLong(), consWarm = new AtomicLong();
    final AtomicLong errs = new AtomicLong(), unsent = new AtomicLong(), duplicates = new AtomicLong();
    final AtomicLong sent = new AtomicLong(), completed = new AtomicLong();
    final AtomicLong backlogMax = new AtomicLong();
    final AtomicLongArray topicPub, topicCons;
    AtomicLongArray[] seen;
    final List<String> errSamples = new ArrayList<>();
    final AtomicBoolean stopping = new AtomicBoolean(); // end of stdin: stop early
    final AtomicBoolean closing = new AtomicBoolean(); // clients closing: their errors are not the run's
    volatile boolean consumersStop;

    final List<long[]> series = new ArrayList<>();
    double cpuStart, cpuEnd;

    // Connection churn (job key connection.churn, 0: none): each producer
    // closes its KafkaProducer every churn records and opens a new one.
    // The current producers, the reconnects set off by a record intended
    // in the window, the connections the producers so opened set up
    // (their connection-creation-total) and how long each reconnect took.
    final int churn;
    AtomicReferenceArray<KafkaProducer<byte[], byte[]>> current;
    boolean[] churnedInWindow;
    final AtomicLong reconnects = new AtomicLong(), handshakes = new AtomicLong();
    // The pacers' run-queue wait (ns) and turns on a CPU over the window,
    // and how many were measured (threadSched).
    final AtomicLong pacerWait = new AtomicLong(), pacerRuns = new AtomicLong(), pacers = new AtomicLong();
    final Histogram reconnectHist = Recorder.newHistogram();

    Loadgen(Properties job) throws IOException {
        this.job = job;
        try (InputStream in = new FileInputStream(job.getProperty("client.config"))) {
            client.load(in);
        }
        client.put("bootstrap.servers", job.getProperty("bootstrap"));
        topics = job.getProperty("topics").split(",");
        parts = ints(job.getProperty("partitions"));
        first = new int[topics.length];
        int n = 0;
        for (int i = 0; i < topics.length; i++) {
            index.put(topics[i], i);
            first[i] = n;
            n += parts[i];
        }
        nparts = n;
        producers = integer("producers");
        groups = integer("groups");
        perGroup = integer("consumers.per.group");
        rate = Long.parseLong(job.getProperty("rate"));
        inFlight = integer("in.flight");
        warmupNs = Long.parseLong(job.getProperty("warmup.ns"));
        durationNs = Long.parseLong(job.getProperty("duration.ns"));
        drainNs = Long.parseLong(job.getProperty("drain.timeout.ns"));
        churn = Integer.parseInt(job.getProperty("connection.churn", "0"));
        nsec = (int) ((durationNs + SECOND - 1) / SECOND);
        pub = new Recorder(nsec);
        e2e = new Recorder(nsec);
        sendDelay = new Recorder(nsec);
        topicPub = new AtomicLongArray(topics.length);
        topicCons = new AtomicLongArray(topics.length);
        try (DataInputStream in = new DataInputStream(new BufferedInputStream(new FileInputStream(job.getProperty("payload.file"))))) {
            int count = in.readInt();
            for (int i = 0; i < count; i++) {
                byte[] b = new byte[in.readInt()];
                in.readFully(b);
                payloads.add(b);
            }
        }
        digests = new long[payloads.size()];
        for (int i = 0; i < digests.length; i++) {
            digests[i] = digest(null, payloads.get(i));
        }
        Instant w = Instant.now();
        mono0 = System.nanoTime();
        wall0 = w.getEpochSecond() * SECOND + w.getNano();
    }

    int integer(String key) {
        return Integer.parseInt(job.getProperty(key));
    }

    static int[] ints(String csv) {
        return Arrays.stream(csv.split(",")).mapToInt(Integer::parseInt).toArray();
    }

    long now() {
        return wall0 + (System.nanoTime() - mono0);
    }

    // digest is xp's record check: CRC-32C of key then value in the high 32
    // bits, CRC-32 (IEEE) of the same bytes in the low 32 bits.
    static long digest(byte[] key, byte[] value) {
        return digest(key == null ? null : ByteBuffer.wrap(key), value == null ? null : ByteBuffer.wrap(value));
    }

    // digest of a consumed record's key and value as the consumer hands
    // them over: views into the fetched buffer (ByteBufferDeserializer), not
    // copies, so that the consumer allocates less beside the pacer; the
    // views' positions are left where they were.
    static long digest(ByteBuffer key, ByteBuffer value) {
        CRC32C c = new CRC32C();
        CRC32 i = new CRC32();
        update(c, i, key);
        update(c, i, value);
        return (c.getValue() << 32) | i.getValue();
    }

    static void update(CRC32C c, CRC32 i, ByteBuffer b) {
        if (b == null) {
            return;
        }
        int pos = b.position();
        c.update(b);
        b.position(pos);
        i.update(b);
        b.position(pos);
    }

    void noteErr(String msg) {
        errs.incrementAndGet();
        synchronized (errSamples) {
            if (errSamples.size() < MAX_ERR_SAMPLES && !errSamples.contains(msg)) {
                errSamples.add(msg);
            }
        }
    }

    // message names t and its causes (a KafkaException that failed to
    // construct a client says why only in them).
    static String message(Throwable t) {
        StringBuilder b = new StringBuilder();
        for (int depth = 0; t != null && depth < 4; t = t.getCause(), depth++) {
            if (depth > 0) {
                b.append("; caused by ");
            }
            String m = t.getMessage();
            b.append(t.getClass().getSimpleName()).append(m == null ? "" : ": " + m);
        }
        return b.toString();
    }

    int second(long ti) {
        if (ti < warmEnd || ti >= measEnd) {
            return -1;
        }
        return (int) ((ti - warmEnd) / SECOND);
    }

    long backlog() {
        return Math.max(0, groups * ackedAll.get() - consumedAll.get());
    }

    void sampleBacklog() {
        long bl = backlog();
        backlogMax.accumulateAndGet(bl, Math::max);
    }

    static synchronized void out(String line) {
        System.out.println(line);
        System.out.flush();
    }

    static final class Failure extends Exception {
        private static final long serialVersionUID = 1L;

        Failure(String msg) {
            super(msg);
        }
    }

    // ---- consumers ----

    final class Member implements Runnable {
        final int group;
        final KafkaConsumer<ByteBuffer, ByteBuffer> consumer;
        final AtomicLong assigned = new AtomicLong();

        Member(int group, KafkaConsumer<ByteBuffer, ByteBuffer> consumer) {
            this.group = group;
            this.consumer = consumer;
        }

        long count(Collection<TopicPartition> tps) {
            long n = 0;
            for (TopicPartition tp : tps) {
                if (index.containsKey(tp.topic())) {
                    n++;
                }
            }
            return n;
        }

        @Override
        public void run() {
            ConsumerRebalanceListener l = new ConsumerRebalanceListener() {
                public void onPartitionsAssigned(Collection<TopicPartition> tps) {
                    assigned.addAndGet(count(tps));
                }

                public void onPartitionsRevoked(Collection<TopicPartition> tps) {
                    assigned.addAndGet(-count(tps));
                }

                public void onPartitionsLost(Collection<TopicPartition> tps) {
                    assigned.addAndGet(-count(tps));
                }
            };
            consumer.subscribe(Arrays.asList(topics), l);
            AtomicLongArray hi = seen[group];
            while (!consumersStop) {
                ConsumerRecords<ByteBuffer, ByteBuffer> recs;
                try {
                    recs = consumer.poll(Duration.ofMillis(100));
                } catch (WakeupException e) {
                    break;
                } catch (RuntimeException e) {
                    if (!consumersStop) {
                        noteErr("fetch: " + message(e));
                    }
                    continue;
                }
                long now = now();
                for (ConsumerRecord<ByteBuffer, ByteBuffer> rec : recs) {
                    consumeOne(rec, hi, now);
                }
                sampleBacklog();
            }
        }

        void consumeOne(ConsumerRecord<ByteBuffer, ByteBuffer> rec, AtomicLongArray hi, long now) {
            long ti = 0, dig = 0;
            int have = 0;
            for (Header h : rec.headers()) {
                byte[] v = h.value();
                if (v == null || v.length != 8) {
                    continue;
                }
                if (h.key().equals(HEADER_TIME)) {
                    ti = ByteBuffer.wrap(v).getLong();
                    have |= 1;
                } else if (h.key().equals(HEADER_DIGEST)) {
                    dig = ByteBuffer.wrap(v).getLong();
                    have |= 2;
                }
            }
            Integer tix = index.get(rec.topic());
            if (tix == null) {
                noteErr(String.format("record %s/%d@%d from a topic this run did not produce to", rec.topic(), rec.partition(), rec.offset()));
                return;
            }
            int p = rec.partition();
            if (p >= 0 && p < parts[tix]) {
                int i = first[tix] + p;
                while (true) {
                    long cur = hi.get(i);
                    if (rec.offset() <= cur) {
                        duplicates.incrementAndGet();
                        return;
                    }
                    if (hi.compareAndSet(i, cur, rec.offset())) {
                        break;
                    }
                }
            }
            consumedAll.incrementAndGet();
            if (have != 3) {
                noteErr(String.format("record %s/%d@%d lacks the xp headers", rec.topic(), rec.partition(), rec.offset()));
                return;
            }
            if (digest(rec.key(), rec.value()) != dig) {
                noteErr(String.format("record %s/%d@%d fails its digest check (altered in transit)", rec.topic(), rec.partition(), rec.offset()));
            }
            int sec = second(ti);
            if (sec >= 0) {
                e2e.record(sec, now - ti);
                consMeasured.incrementAndGet();
                topicCons.incrementAndGet(tix);
            } else if (ti < warmEnd) {
                consWarm.incrementAndGet();
            }
        }
    }

    List<Member> newConsumers() throws Failure {
        List<Member> ms = new ArrayList<>();
        seen = new AtomicLongArray[groups];
        String reset = job.getProperty("offset.reset");
        String[] groupNames = job.getProperty("groups.names", "").split(",");
        for (int g = 0; g < groups; g++) {
            seen[g] = new AtomicLongArray(nparts);
            for (int i = 0; i < nparts; i++) {
                seen[g].set(i, -1);
            }
            for (int j = 0; j < perGroup; j++) {
                Properties p = new Properties();
                p.putAll(client);
                p.put("group.id", groupNames[g]);
                p.put("client.id", "xp-loadgen-g" + g + "-" + j);
                p.put("auto.offset.reset", reset);
                p.put("enable.auto.commit", "false");
                p.put("fetch.max.wait.ms", "500");
                try {
                    ms.add(new Member(g, new KafkaConsumer<>(p, new ByteBufferDeserializer(), new ByteBufferDeserializer())));
                } catch (RuntimeException e) {
                    for (Member m : ms) {
                        m.consumer.close(Duration.ofSeconds(5));
                    }
                    throw new Failure("consumer: " + message(e));
                }
            }
        }
        return ms;
    }

    // awaitAssignment waits until every group holds all partitions, by as
    // many members as can hold some, for at most the job's assign.timeout.ns.
    void awaitAssignment(List<Member> ms) throws Failure, InterruptedException {
        long wait = Long.parseLong(job.getProperty("assign.timeout.ns"));
        long deadline = System.nanoTime() + wait;
        for (int g = 0; g < groups; g++) {
            while (true) {
                long held = 0;
                int members = 0;
                for (int j = 0; j < perGroup; j++) {
                    long n = ms.get(g * perGroup + j).assigned.get();
                    if (n > 0) {
                        held += n;
                        members++;
                    }
                }
                if (held == nparts && members == Math.min(perGroup, nparts)) {
                    break;
                }
                if (System.nanoTime() > deadline) {
                    throw new Failure(String.format("consumer group %d: %d members hold %d of %d partitions after %ds", g, members, held, nparts, wait / SECOND));
                }
                if (stopping.get()) {
                    throw new Failure("interrupted");
                }
                Thread.sleep(5);
            }
        }
    }

    // ---- producers ----

    KafkaProducer<byte[], byte[]> newProducer(int k) {
        Properties p = new Properties();
        p.putAll(client);
        int size = integer("message.size");
        long bufferRecords = Long.parseLong(job.getProperty("buffer.records"));
        p.put("client.id", "xp-loadgen-p" + k);
        p.put("acks", job.getProperty("acks"));
        p.put("enable.idempotence", job.getProperty("acks").equals("all") ? "true" : "false");
        p.put("linger.ms", job.getProperty("linger.ms"));
        p.put("batch.size", job.getProperty("batch.bytes"));
        p.put("compression.type", job.getProperty("compression"));
        // Room for the records the pacer may have buffered (a second at
        // the target rate, or the closed loop's window twice), so that a
        // broker hiccup shows as publish latency before it blocks send.
        p.put("buffer.memory", Long.toString(Math.max(32L << 20, bufferRecords * (size + 128))));
        long drainMs = drainNs / 1_000_000;
        long linger = Long.parseLong(job.getProperty("linger.ms"));
        p.put("request.timeout.ms", Long.toString(Math.max(1000, Math.min(30000, drainMs - linger))));
        p.put("delivery.timeout.ms", Long.toString(drainMs));
        KafkaProducer<byte[], byte[]> pr = new KafkaProducer<>(p, new ByteArraySerializer(), new ByteArraySerializer());
        // The first send of a topic blocks until its metadata is in, which
        // would be send delay of the first records: fetch it now.
        for (String t : topics) {
            pr.partitionsFor(t);
        }
        return pr;
    }

    // connectionsOpened is a producer's connection-creation-total: every
    // connection it set up (TCP, TLS, SASL), to the bootstrap servers and
    // to the brokers.
    static long connectionsOpened(KafkaProducer<byte[], byte[]> pr) {
        for (Map.Entry<MetricName, ? extends Metric> e : pr.metrics().entrySet()) {
            MetricName n = e.getKey();
            if (n.name().equals("connection-creation-total") && n.group().equals("producer-metrics")) {
                return (long) ((Number) e.getValue().metricValue()).doubleValue();
            }
        }
        return 0;
    }

    // churnTick counts one record of producer k, intended for ti, sent;
    // every churn records it waits for the producer's records to be
    // acknowledged (flush), closes it and opens a new one, which connects,
    // handshakes and authenticates again, as the Go load generator's
    // churner does. A reconnect counts in the window when the record that
    // set it off does; its time is from the new producer's construction
    // to its topics' metadata in (a connection set up, authenticated and
    // answering). False when the producer could not be reopened or the run
    // is stopping.
    boolean churnTick(int k, int[] count, long ti) {
        if (churn == 0 || ++count[0] < churn) {
            return true;
        }
        count[0] = 0;
        KafkaProducer<byte[], byte[]> old = current.get(k);
        old.flush();
        if (churnedInWindow[k]) {
            handshakes.addAndGet(connectionsOpened(old));
        }
        old.close(Duration.ofSeconds(30));
        Engines.collect(this, false);
        if (stopping.get()) {
            return false;
        }
        long start = System.nanoTime();
        KafkaProducer<byte[], byte[]> pr;
        try {
            pr = newProducer(k);
        } catch (RuntimeException e) {
            noteErr("producer: " + message(e));
            return false;
        }
        long took = System.nanoTime() - start;
        current.set(k, pr);
        churnedInWindow[k] = second(ti) >= 0;
        if (churnedInWindow[k]) {
            reconnects.incrementAndGet();
            synchronized (reconnectHist) {
                reconnectHist.recordValue(Math.max(1, Math.min(60_000_000L, took / 1000)));
            }
        }
        return true;
    }

    // send produces one record with intended time ti to topic tix; done
    // runs when it is acknowledged or has failed.
    void send(KafkaProducer<byte[], byte[]> pr, SplittableRandom rng, long ti, int tix, Runnable done) {
        int i = rng.nextInt(payloads.size());
        byte[] val = payloads.get(i);
        RecordHeaders hs = new RecordHeaders();
        hs.add(HEADER_TIME, ByteBuffer.allocate(8).putLong(ti).array());
        hs.add(HEADER_DIGEST, ByteBuffer.allocate(8).putLong(digests[i]).array());
        sent.incrementAndGet();
        pr.send(new ProducerRecord<>(topics[tix], null, null, null, val, hs), (md, err) -> {
            if (err != null) {
                if (!closing.get()) {
                    noteErr("produce: " + message(err));
                }
            } else {
                long ack = now();
                ackedAll.incrementAndGet();
                int sec = second(ti);
                if (sec >= 0) {
                    pub.record(sec, ack - ti);
                    pubMeasured.incrementAndGet();
                    topicPub.incrementAndGet(tix);
                } else if (ti < warmEnd) {
                    pubWarm.incrementAndGet();
                }
            }
            completed.incrementAndGet();
            if (done != null) {
                done.run();
            }
        });
    }

    // PACER_WAKE is the pacer's shortest park (ns), the Go pacer's
    // pacerWake: when the next record is due sooner, the pacer parks this
    // long and then sends every record that has come due, instead of
    // waking for each record at high rates.
    static final long PACER_WAKE = 50_000;

    // paceUntil parks until run-clock time t (in parks of at most 100 ms,
    // so that a stop is seen, and of at least PACER_WAKE). The pacer's
    // timer slack is 1 ns (announcePacer), so a park wakes on time, as
    // the Go pacer's nanosleep does; neither spins, so the pacer's CPU is
    // not part of the client's cost.
    boolean paceUntil(long t) {
        while (true) {
            if (stopping.get()) {
                return false;
            }
            long d = t - now();
            if (d <= 0) {
                return true;
            }
            LockSupport.parkNanos(Math.max(PACER_WAKE, Math.min(d, 100_000_000L)));
        }
    }

    // announcePacer sets the calling thread's timer slack to 1 ns, as the
    // Go pacer's (a thread may set its own through /proc/TID; the client's
    // threads keep the default), and tells xp its id and slack ("pacer TID
    // SLACK_NS"), so that xp gives the thread the Go pacer's scheduling
    // priority, which Java cannot set. Without /proc the thread keeps the
    // defaults.
    static void announcePacer() {
        String tid;
        try {
            String self = Files.readSymbolicLink(Path.of("/proc/thread-self")).toString();
            tid = self.substring(self.lastIndexOf('/') + 1);
        } catch (IOException | UnsupportedOperationException | SecurityException e) {
            return; // not Linux: nothing to set or announce
        }
        Path slack = Path.of("/proc", tid, "timerslack_ns");
        String got = "unknown";
        try {
            Files.writeString(slack, "1");
        } catch (IOException | SecurityException e) {
            // the thread keeps the default slack, which is read back below
        }
        try {
            got = Files.readString(slack).trim();
        } catch (IOException | SecurityException e) {
            // reported as unknown
        }
        out("pacer " + tid + " " + got);
    }

    // openLoop is a producer's pacer: pacedSends, measured over the window.
    void openLoop(int k, SplittableRandom rng, int tix, double rate) {
        announcePacer();
        // The pacer's scheduling at its first record due in the window,
        // and at the loop's end (the Go pacer's pacerSched).
        long[][] sched = new long[1][];
        try {
            pacedSends(k, rng, tix, rate, sched);
        } finally {
            long[] end = sched[0] == null ? null : threadSched();
            if (end != null) {
                pacerWait.addAndGet(end[0] - sched[0][0]);
                pacerRuns.addAndGet(end[1] - sched[0][1]);
                pacers.incrementAndGet();
            }
        }
    }

    // threadSched is the calling thread's run-queue wait (ns) and turns on
    // a CPU, from /proc/thread-self/schedstat; null where unreadable.
    static long[] threadSched() {
        try {
            String[] f = Files.readString(Path.of("/proc/thread-self/schedstat")).trim().split(" ");
            return new long[] {Long.parseLong(f[1]), Long.parseLong(f[2])};
        } catch (IOException | RuntimeException e) {
            return null;
        }
    }

    // pacedSends sends record i at t0 + i/rate, at once when behind;
    // records due in the window may be sent up to SEND_GRACE after it,
    // later ones are never sent (a shortfall the rate rule sees).
    void pacedSends(int k, SplittableRandom rng, int tix, double rate, long[][] sched) {
        long stop = measEnd + SEND_GRACE;
        int[] count = new int[1];
        double period = 1e9 / rate;
        boolean measuring = false;
        for (long i = 0;; i++) {
            long ti = t0 + (long) (i * period);
            if (ti >= measEnd) {
                return;
            }
            long now = now();
            if (ti > now) {
                if (!paceUntil(ti)) {
                    return;
                }
                now = now();
            }
            if (now >= stop || stopping.get()) {
                long due = (long) Math.ceil((measEnd - ti) / period);
                if (due > 0) {
                    unsent.addAndGet(due);
                }
                return;
            }
            int sec = second(ti);
            if (sec >= 0) {
                if (!measuring) {
                    measuring = true;
                    sched[0] = threadSched();
                }
                sendDelay.record(sec, now - ti);
            }
            send(current.get(k), rng, ti, tix, null);
            if (++tix == topics.length) {
                tix = 0;
            }
            if (!churnTick(k, count, ti)) {
                return;
            }
        }
    }

    // closedLoop keeps inFlight records in flight; the intended send time
    // is the moment a slot frees.
    void closedLoop(int k, SplittableRandom rng, int tix) throws InterruptedException {
        Semaphore win = new Semaphore(inFlight);
        int[] count = new int[1];
        if (!paceUntil(t0)) {
            return;
        }
        while (!stopping.get()) {
            if (!win.tryAcquire(100, TimeUnit.MILLISECONDS)) {
                continue;
            }
            long now = now();
            if (now >= measEnd) {
                win.release();
                return;
            }
            send(current.get(k), rng, now, tix, win::release);
            if (++tix == topics.length) {
                tix = 0;
            }
            if (!churnTick(k, count, now)) {
                return;
            }
        }
    }

    // ---- the sampler ----

    static double processCPU() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean()).getProcessCpuTime() / 1e9;
    }

    final Object samplerStop = new Object();
    volatile boolean samplerStopped;

    void sample() {
        try {
            if (!sleepUntilWall(warmEnd)) {
                return;
            }
            cpuStart = processCPU();
            long lastPub = ackedAll.get(), lastCons = consumedAll.get();
            out("phase measure " + measEnd);
            for (int sec = 0;; sec++) {
                long next = warmEnd + (sec + 1) * SECOND;
                boolean stopped = false;
                while (!stopped && now() < next) {
                    synchronized (samplerStop) {
                        if (samplerStopped) {
                            stopped = true;
                            break;
                        }
                        samplerStop.wait(Math.max(1, Math.min(10, (next - now()) / 1_000_000)));
                    }
                    sampleBacklog();
                }
                sampleBacklog();
                long p = ackedAll.get(), c = consumedAll.get();
                synchronized (series) {
                    series.add(new long[] {p - lastPub, c - lastCons, backlog()});
                }
                lastPub = p;
                lastCons = c;
                if (sec + 1 == nsec) {
                    cpuEnd = processCPU();
                }
                if (stopped) {
                    return;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    boolean sleepUntilWall(long t) throws InterruptedException {
        while (true) {
            long d = t - now();
            if (d <= 0) {
                return true;
            }
            synchronized (samplerStop) {
                if (samplerStopped) {
                    return false;
                }
                samplerStop.wait(Math.max(1, d / 1_000_000));
            }
        }
    }

    void stopSampler(Thread t) throws InterruptedException {
        synchronized (samplerStop) {
            samplerStopped = true;
            samplerStop.notifyAll();
        }
        t.join();
        if (cpuEnd == 0 && cpuStart != 0) {
            cpuEnd = processCPU();
        }
    }

    // ---- the run ----

    String execute() throws Exception {
        List<Member> ms = newConsumers();
        List<Thread> consThreads = new ArrayList<>();
        for (Member m : ms) {
            Thread t = new Thread(m, "xp-consumer-g" + m.group);
            t.setDaemon(true);
            t.start();
            consThreads.add(t);
        }
        current = new AtomicReferenceArray<>(producers);
        churnedInWindow = new boolean[producers];
        try {
            awaitAssignment(ms);
            try {
                for (int k = 0; k < producers; k++) {
                    current.set(k, newProducer(k));
                }
            } catch (RuntimeException e) {
                throw new Failure("producer: " + message(e));
            }
            t0 = now() + 100_000_000L;
            warmEnd = t0 + warmupNs;
            measEnd = warmEnd + durationNs;
            long drainEnd = measEnd + drainNs;
            long seed = Long.parseLong(job.getProperty("seed"));
            int[] firstTopic = ints(job.getProperty("first.topics"));
            List<Thread> prodThreads = new ArrayList<>();
            for (int k = 0; k < producers; k++) {
                int pk = k;
                SplittableRandom rng = new SplittableRandom(seed * 0x9E3779B97F4A7C15L + k + 1);
                int tix = firstTopic[k];
                Thread t = new Thread(() -> {
                    try {
                        if (rate > 0) {
                            openLoop(pk, rng, tix, (double) rate / producers);
                        } else {
                            closedLoop(pk, rng, tix);
                        }
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                    }
                }, "xp-producer-" + k);
                t.setPriority(Thread.MAX_PRIORITY);
                prodThreads.add(t);
                t.start();
            }
            if (warmupNs > 0) {
                out("phase warmup " + warmEnd);
            }
            Thread smp = new Thread(this::sample, "xp-sampler");
            smp.setDaemon(true);
            smp.start();
            for (Thread t : prodThreads) {
                t.join();
            }
            if (!stopping.get()) {
                out("phase drain " + drainEnd);
            }
            // Drain: every buffered record acknowledged, every acknowledged
            // record consumed by every group, or the deadline.
            Thread flusher = new Thread(() -> {
                for (int k = 0; k < producers; k++) {
                    current.get(k).flush();
                }
            }, "xp-flush");
            flusher.setDaemon(true);
            flusher.start();
            flusher.join(Math.max(1, (drainEnd - now()) / 1_000_000));
            boolean drained = false;
            while (now() < drainEnd && !stopping.get()) {
                sampleBacklog();
                if (backlog() == 0 && sent.get() - completed.get() == 0) {
                    drained = true;
                    break;
                }
                Thread.sleep(2);
            }
            long drainAt = now();
            long unacked = sent.get() - completed.get();
            stopSampler(smp);
            closing.set(true);
            consumersStop = true;
            for (Member m : ms) {
                m.consumer.wakeup();
            }
            for (Thread t : consThreads) {
                t.join(5000);
            }
            for (int k = 0; k < producers; k++) {
                if (churnedInWindow[k]) {
                    handshakes.addAndGet(connectionsOpened(current.get(k)));
                }
            }
            Engines.collect(this, true);
            return result(drained, drainAt, unacked);
        } finally {
            closing.set(true);
            consumersStop = true;
            for (int k = 0; k < producers; k++) {
                KafkaProducer<byte[], byte[]> pr = current.get(k);
                if (pr != null) {
                    pr.close(Duration.ofSeconds(5));
                }
            }
            for (Member m : ms) {
                m.consumer.wakeup();
            }
            for (Thread t : consThreads) {
                t.join(5000);
            }
            for (Member m : ms) {
                try {
                    m.consumer.close(Duration.ofSeconds(5));
                } catch (RuntimeException e) {
                    // closing a consumer whose thread is still polling
                }
            }
        }
    }

    String result(boolean drained, long drainAt, long unacked) throws IOException {
        Json j = new Json();
        j.num("t0", t0).num("warm_end", warmEnd).num("meas_end", measEnd);
        j.num("published", pubMeasured.get()).num("consumed", consMeasured.get());
        j.num("warmup_published", pubWarm.get()).num("warmup_consumed", consWarm.get());
        j.num("errors", errs.get()).num("unsent", unsent.get()).num("duplicates", duplicates.get());
        j.num("backlog_max", backlogMax.get()).num("backlog", backlog());
        j.bool("drained", drained).num("drain_at", drainAt).num("unacked", unacked);
        j.dbl("cpu_s", Math.max(0, cpuEnd - cpuStart));
        synchronized (errSamples) {
            j.strs("error_samples", errSamples);
        }
        List<String> ser = new ArrayList<>();
        synchronized (series) {
            for (long[] s : series) {
                ser.add(s[0] + "," + s[1] + "," + s[2]);
            }
        }
        j.strs("series", ser);
        List<String> tc = new ArrayList<>();
        for (int i = 0; i < topics.length; i++) {
            tc.add(topicPub.get(i) + "," + topicCons.get(i));
        }
        j.strs("topics", tc);
        j.strs("publish", pub.encodeAll()).strs("e2e", e2e.encodeAll()).strs("send_delay", sendDelay.encodeAll());
        j.str("client_name", "java");
        j.str("client_version", "kafka-clients " + clientsVersion());
        j.str("client_runtime", runtime());
        synchronized (tlsSessions) {
            j.strs("tls_sessions", new ArrayList<>(tlsSessions));
        }
        j.num("pacer_wait_ns", pacerWait.get()).num("pacer_runs", pacerRuns.get()).num("pacers", pacers.get());
        j.num("reconnects", reconnects.get()).num("handshakes", handshakes.get());
        synchronized (reconnectHist) {
            j.str("reconnect", Base64.getEncoder().encodeToString(Recorder.encode(reconnectHist)));
        }
        return j.end();
    }

    // clientsVersion is kafka-clients' version, from the file its jar
    // carries (the class that reads it moved between releases).
    static String clientsVersion() {
        Properties p = new Properties();
        try (InputStream in = KafkaProducer.class.getResourceAsStream("/kafka/kafka-version.properties")) {
            if (in != null) {
                p.load(in);
            }
        } catch (IOException e) {
            // unknown below
        }
        return p.getProperty("version", "unknown") + " (" + p.getProperty("commitId", "unknown") + ")";
    }

    // runtime names the JVM, its flags and its collectors, as the evidence
    // records them.
    static String runtime() {
        StringBuilder b = new StringBuilder();
        b.append(System.getProperty("java.vm.name")).append(' ').append(System.getProperty("java.runtime.version"));
        b.append(" (").append(System.getProperty("java.vm.vendor")).append(')');
        List<String> flags = ManagementFactory.getRuntimeMXBean().getInputArguments();
        b.append("; flags: ").append(flags.isEmpty() ? "(none)" : String.join(" ", flags));
        List<String> gcs = new ArrayList<>();
        for (GarbageCollectorMXBean gc : ManagementFactory.getGarbageCollectorMXBeans()) {
            gcs.add(gc.getName());
        }
        b.append("; gc: ").append(String.join(", ", gcs));
        b.append("; max heap ").append(Runtime.getRuntime().maxMemory() >> 20).append(" MiB");
        return b.toString();
    }

    // tlsSessions are the distinct "PROTOCOL,SUITE,KEY" the client's TLS
    // connections negotiated (JSSE's names; KEY the server certificate's,
    // as a row's tls_key names it).
    final Set<String> tlsSessions = new TreeSet<>();

    // Engines is the Java client's SSL engine factory: Kafka's own
    // (DefaultSslEngineFactory), every client engine it makes noted so that
    // what each connection negotiated is read from the connection itself.
    // xp loadgen names it in ssl.engine.factory.class on TLS connections.
    public static final class Engines implements SslEngineFactory {
        static final ConcurrentLinkedQueue<SSLEngine> made = new ConcurrentLinkedQueue<>();
        final DefaultSslEngineFactory kafka = new DefaultSslEngineFactory();

        @Override
        public void configure(Map<String, ?> configs) {
            kafka.configure(configs);
        }

        @Override
        public SSLEngine createClientSslEngine(String peerHost, int peerPort, String endpointIdentification) {
            SSLEngine e = kafka.createClientSslEngine(peerHost, peerPort, endpointIdentification);
            made.add(e);
            return e;
        }

        @Override
        public SSLEngine createServerSslEngine(String peerHost, int peerPort) {
            return kafka.createServerSslEngine(peerHost, peerPort);
        }

        @Override
        public boolean shouldBeRebuilt(Map<String, Object> nextConfigs) {
            return kafka.shouldBeRebuilt(nextConfigs);
        }

        @Override
        public Set<String> reconfigurableConfigs() {
            return kafka.reconfigurableConfigs();
        }

        @Override
        public KeyStore keystore() {
            return kafka.keystore();
        }

        @Override
        public KeyStore truststore() {
            return kafka.truststore();
        }

        @Override
        public void close() throws IOException {
            kafka.close();
        }

        // collect moves the sessions of the engines whose handshake is done
        // into lg's tlsSessions; with all, the engines that never finished
        // one (a failed connection) are dropped too.
        static void collect(Loadgen lg, boolean all) {
            for (SSLEngine e : made) {
                SSLSession s = e.getSession();
                if ("NONE".equals(s.getProtocol())) {
                    if (all) {
                        made.remove(e);
                    }
                    continue;
                }
                String key = "unknown";
                try {
                    Certificate[] chain = s.getPeerCertificates();
                    key = keyName(chain[0].getPublicKey());
                } catch (SSLException ex) {
                    // no peer certificate: the key stays unknown
                }
                synchronized (lg.tlsSessions) {
                    lg.tlsSessions.add(s.getProtocol() + "," + s.getCipherSuite() + "," + key);
                }
                made.remove(e);
            }
        }

        // keyName names a certificate's key as a row's tls_key does
        // (ecdsa-p256, rsa2048, rsa4096), other keys by algorithm.
        static String keyName(PublicKey k) {
            if (k instanceof ECPublicKey ec) {
                return "ecdsa-p" + ec.getParams().getCurve().getField().getFieldSize();
            }
            if (k instanceof RSAPublicKey rsa) {
                return "rsa" + rsa.getModulus().bitLength();
            }
            return k.getAlgorithm().toLowerCase();
        }
    }

    // Recorder keeps one histogram per second of measurement for one kind:
    // the latest seconds dense, older ones in their compressed encoding,
    // so memory stays flat however long the run.
    static final class Recorder {
        static final int DENSE_WINDOW = 3;
        final Histogram[] dense;
        final byte[][] packed;
        int latest;

        Recorder(int seconds) {
            dense = new Histogram[seconds];
            packed = new byte[seconds][];
        }

        static Histogram newHistogram() {
            return new Histogram(1, 60_000_000L, 3);
        }

        synchronized void record(int sec, long ns) {
            if (sec < 0 || sec >= dense.length) {
                return;
            }
            long us = Math.max(1, Math.min(60_000_000L, ns / 1000));
            Histogram h = dense[sec];
            if (h == null) {
                h = newHistogram();
                if (packed[sec] != null) {
                    h.add(decode(packed[sec]));
                    packed[sec] = null;
                }
                dense[sec] = h;
            }
            h.recordValue(us);
            if (sec > latest) {
                latest = sec;
                for (int s = 0; s <= sec - DENSE_WINDOW; s++) {
                    if (dense[s] != null) {
                        packed[s] = encode(dense[s]);
                        dense[s] = null;
                    }
                }
            }
        }

        static byte[] encode(Histogram h) {
            ByteBuffer buf = ByteBuffer.allocate(h.getNeededByteBufferCapacity());
            int n = h.encodeIntoCompressedByteBuffer(buf, Deflater.DEFAULT_COMPRESSION);
            return Arrays.copyOf(buf.array(), n);
        }

        static Histogram decode(byte[] b) {
            try {
                return Histogram.decodeFromCompressedByteBuffer(ByteBuffer.wrap(b), 0);
            } catch (DataFormatException e) {
                throw new IllegalStateException(e);
            }
        }

        // encodeAll is every second's histogram, base64 of the V2-compressed
        // encoding (an empty histogram for a second with no values).
        synchronized List<String> encodeAll() {
            List<String> out = new ArrayList<>();
            for (int s = 0; s < dense.length; s++) {
                byte[] b = dense[s] != null ? encode(dense[s]) : packed[s] != null ? packed[s] : encode(newHistogram());
                out.add(Base64.getEncoder().encodeToString(b));
            }
            return out;
        }
    }

    // Json writes one flat JSON object.
    static final class Json {
        final StringBuilder b = new StringBuilder("{");

        Json key(String k) {
            if (b.length() > 1) {
                b.append(',');
            }
            quote(k);
            b.append(':');
            return this;
        }

        void quote(String s) {
            b.append('"');
            for (int i = 0; i < s.length(); i++) {
                char c = s.charAt(i);
                if (c == '"' || c == '\\') {
                    b.append('\\').append(c);
                } else if (c < 0x20) {
                    b.append(String.format("\\u%04x", (int) c));
                } else {
                    b.append(c);
                }
            }
            b.append('"');
        }

        Json num(String k, long v) {
            key(k).b.append(v);
            return this;
        }

        Json dbl(String k, double v) {
            key(k).b.append(v);
            return this;
        }

        Json bool(String k, boolean v) {
            key(k).b.append(v);
            return this;
        }

        Json str(String k, String v) {
            key(k).quote(v);
            return this;
        }

        Json strs(String k, List<String> vs) {
            key(k).b.append('[');
            for (int i = 0; i < vs.size(); i++) {
                if (i > 0) {
                    b.append(',');
                }
                quote(vs.get(i));
            }
            b.append(']');
            return this;
        }

        String end() {
            return b.append('}').toString();
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 1) {
            System.err.println("usage: xp.loadgen.Loadgen JOB.properties (run by xp loadgen --client java)");
            System.exit(2);
        }
        Properties job = new Properties();
        try (InputStream in = new FileInputStream(args[0])) {
            job.load(in);
        }
        // The login's JVM system properties (job keys system.NAME: the
        // OAUTHBEARER token endpoint allowed, GSSAPI's krb5.conf), set
        // before any client reads them.
        for (String k : job.stringPropertyNames()) {
            if (k.startsWith("system.")) {
                System.setProperty(k.substring("system.".length()), job.getProperty(k));
            }
        }
        Loadgen lg = new Loadgen(job);
        Thread stdin = new Thread(() -> {
            try {
                while (System.in.read() >= 0) {
                    // the caller keeps stdin open while the run may go on
                }
            } catch (IOException e) {
                // treated as end of input
            }
            lg.stopping.set(true);
        }, "xp-stdin");
        stdin.setDaemon(true);
        stdin.start();
        try {
            out("result " + lg.execute());
        } catch (Failure e) {
            out("error " + e.getMessage());
            System.exit(1);
        }
        System.exit(0);
    }
}
