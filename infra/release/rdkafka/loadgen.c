/*
 * xp's load generator in C: the producers and consumer groups of
 * `xp loadgen --client librdkafka`, on librdkafka, the client under the
 * Python, .NET, Node and cgo Go Kafka clients, so that a run measures what
 * a service on librdkafka pays. It is the Java load generator
 * (infra/release/loadgen/Loadgen.java) in another client: the same job
 * file, payload file and report, and the same schedule, line for line:
 * records due at t0 + i/rate (open loop, latency from the intended send
 * time) or a window of records in flight (closed loop), the xp-t and xp-d
 * headers, the digest check, one count per partition offset and group,
 * per-second HdrHistograms in microseconds (1 us to 60 s, 3 digits) in the
 * V2-compressed encoding Go's hdrhistogram reads. Written for xp, compiled
 * by `make rdkafka-client` against Debian's rdkafka.h (librdkafka's ABI is
 * stable across 2.x) and linked with the librdkafka of a PyPI wheel.
 *
 * Protocol: xp-rdkafka-loadgen JOB.properties. Lines on stdout:
 * "phase NAME UNIX_NS" as each phase starts (NAME warmup, measure, drain;
 * UNIX_NS when it ends at the latest), "pacer TID SLACK_NS" as each
 * open-loop pacer thread starts, then "result JSON"; or
 * "error MESSAGE" and exit status 1 when the cluster cannot be used. End
 * of standard input stops the run early (it still reports).
 * xp-rdkafka-loadgen -version prints "librdkafka VERSION";
 * xp-rdkafka-loadgen -encode-histogram US... prints the encoding of a
 * histogram of those values (XP_HDR_REPACK=1: after a decode and
 * re-encode), for the codec's test.
 */
#define _GNU_SOURCE
#include <errno.h>
#include <gnu/libc-version.h>
#include <inttypes.h>
#include <math.h>
#include <pthread.h>
#include <semaphore.h>
#include <stdarg.h>
#include <stdatomic.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/syscall.h>
#include <time.h>
#include <unistd.h>

#include <librdkafka/rdkafka.h>
#include <zlib.h>

#ifndef XP_BUILD
#define XP_BUILD "built outside make rdkafka-client"
#endif

#define SECOND 1000000000LL
#define SEND_GRACE SECOND
#define MAX_ERR_SAMPLES 5
#define ERR_LEN 512

/* ---- small helpers ---- */

static void die(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    fputs("error ", stdout);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
    va_end(ap);
    exit(1);
}

static void *xmalloc(size_t n) {
    void *p = calloc(1, n ? n : 1);
    if (!p) {
        die("out of memory (%zu bytes)", n);
    }
    return p;
}

static char *xstrdup(const char *s) {
    char *p = strdup(s);
    if (!p) {
        die("out of memory");
    }
    return p;
}

static pthread_mutex_t out_mu = PTHREAD_MUTEX_INITIALIZER;

static void out_line(const char *fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    pthread_mutex_lock(&out_mu);
    vfprintf(stdout, fmt, ap);
    fputc('\n', stdout);
    fflush(stdout);
    pthread_mutex_unlock(&out_mu);
    va_end(ap);
}

/* The run's clock: the wall time at the start plus monotonic time since,
 * so an NTP step cannot bend a latency. */
static int64_t wall0, mono0;

static int64_t mono_ns(void) {
    struct timespec ts;
    clock_gettime(CLOCK_MONOTONIC, &ts);
    return (int64_t)ts.tv_sec * SECOND + ts.tv_nsec;
}

static int64_t now_ns(void) { return wall0 + (mono_ns() - mono0); }

static double process_cpu(void) {
    struct timespec ts;
    clock_gettime(CLOCK_PROCESS_CPUTIME_ID, &ts);
    return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void sleep_ns(int64_t d) {
    if (d <= 0) {
        return;
    }
    struct timespec ts = {d / SECOND, d % SECOND};
    while (clock_nanosleep(CLOCK_MONOTONIC, 0, &ts, &ts) == EINTR) {
    }
}

/* ---- properties files ---- */

typedef struct {
    char **keys, **vals;
    int n, cap;
} props_t;

static void props_put(props_t *p, const char *k, const char *v) {
    if (p->n == p->cap) {
        p->cap = p->cap ? 2 * p->cap : 32;
        p->keys = realloc(p->keys, p->cap * sizeof(char *));
        p->vals = realloc(p->vals, p->cap * sizeof(char *));
        if (!p->keys || !p->vals) {
            die("out of memory");
        }
    }
    p->keys[p->n] = xstrdup(k);
    p->vals[p->n] = xstrdup(v);
    p->n++;
}

/* props_read reads name=value lines (# comments and blank lines skipped);
 * with escapes, \\ and \n in values are read as the job file writes them
 * (the client config, librdkafka's dialect as kcat reads it, has none). */
static void props_read(props_t *p, const char *path, int escapes) {
    FILE *f = fopen(path, "r");
    if (!f) {
        die("%s: %s", path, strerror(errno));
    }
    char *line = NULL;
    size_t cap = 0;
    ssize_t len;
    while ((len = getline(&line, &cap, f)) >= 0) {
        while (len > 0 && (line[len - 1] == '\n' || line[len - 1] == '\r')) {
            line[--len] = 0;
        }
        if (len == 0 || line[0] == '#') {
            continue;
        }
        char *eq = strchr(line, '=');
        if (!eq) {
            die("%s: line without '=': %s", path, line);
        }
        *eq = 0;
        char *v = eq + 1;
        if (escapes) {
            char *w = v;
            for (char *r = v; *r; r++) {
                if (*r == '\\' && r[1] == 'n') {
                    *w++ = '\n';
                    r++;
                } else if (*r == '\\' && r[1] == '\\') {
                    *w++ = '\\';
                    r++;
                } else {
                    *w++ = *r;
                }
            }
            *w = 0;
        }
        props_put(p, line, v);
    }
    free(line);
    fclose(f);
}

static const char *props_get(const props_t *p, const char *k) {
    for (int i = p->n - 1; i >= 0; i--) {
        if (strcmp(p->keys[i], k) == 0) {
            return p->vals[i];
        }
    }
    return NULL;
}

static props_t job;

static const char *job_str(const char *k) {
    const char *v = props_get(&job, k);
    if (!v) {
        die("job: no %s", k);
    }
    return v;
}

static int64_t job_int(const char *k) {
    const char *v = job_str(k);
    char *end;
    errno = 0;
    long long n = strtoll(v, &end, 10);
    if (errno || *end || end == v) {
        die("job: %s=%s is not an integer", k, v);
    }
    return n;
}

/* split_csv splits s at commas into a new array; *n is the count. */
static char **split_csv(const char *s, int *n) {
    int cap = 1;
    for (const char *c = s; *c; c++) {
        cap += *c == ',';
    }
    char **out = xmalloc(cap * sizeof(char *));
    char *dup = xstrdup(s);
    int k = 0;
    char *save = NULL;
    for (char *t = strtok_r(dup, ",", &save); t; t = strtok_r(NULL, ",", &save)) {
        out[k++] = t;
    }
    *n = k;
    return out;
}

/* ---- digests: CRC-32C of key then value in the high 32 bits, CRC-32
 * (IEEE, zlib's) of the same bytes in the low 32 bits ---- */

static uint32_t crc32c_table[8][256];

static void crc32c_init(void) {
    for (uint32_t i = 0; i < 256; i++) {
        uint32_t c = i;
        for (int k = 0; k < 8; k++) {
            c = c & 1 ? (c >> 1) ^ 0x82F63B78u : c >> 1;
        }
        crc32c_table[0][i] = c;
    }
    for (int t = 1; t < 8; t++) {
        for (int i = 0; i < 256; i++) {
            uint32_t c = crc32c_table[t - 1][i];
            crc32c_table[t][i] = (c >> 8) ^ crc32c_table[0][c & 0xff];
        }
    }
}

__attribute__((target("sse4.2"))) static uint32_t crc32c_hw(uint32_t crc, const uint8_t *p, size_t n) {
    uint64_t c = ~crc;
    while (n >= 8) {
        uint64_t v;
        memcpy(&v, p, 8);
        c = __builtin_ia32_crc32di(c, v);
        p += 8;
        n -= 8;
    }
    uint32_t c32 = (uint32_t)c;
    while (n--) {
        c32 = __builtin_ia32_crc32qi(c32, *p++);
    }
    return ~c32;
}

static uint32_t crc32c_sw(uint32_t crc, const uint8_t *p, size_t n) {
    uint32_t c = ~crc;
    while (n >= 8) {
        uint32_t lo, hi;
        memcpy(&lo, p, 4);
        memcpy(&hi, p + 4, 4);
        lo ^= c;
        c = crc32c_table[7][lo & 0xff] ^ crc32c_table[6][(lo >> 8) & 0xff] ^ crc32c_table[5][(lo >> 16) & 0xff] ^
            crc32c_table[4][lo >> 24] ^ crc32c_table[3][hi & 0xff] ^ crc32c_table[2][(hi >> 8) & 0xff] ^
            crc32c_table[1][(hi >> 16) & 0xff] ^ crc32c_table[0][hi >> 24];
        p += 8;
        n -= 8;
    }
    while (n--) {
        c = (c >> 8) ^ crc32c_table[0][(c ^ *p++) & 0xff];
    }
    return ~c;
}

static int have_sse42;

static uint64_t digest(const void *key, size_t klen, const void *val, size_t vlen) {
    uint32_t c = 0;
    uLong i = crc32(0L, Z_NULL, 0);
    if (key) {
        c = have_sse42 ? crc32c_hw(c, key, klen) : crc32c_sw(c, key, klen);
        i = crc32(i, key, (uInt)klen);
    }
    if (val) {
        c = have_sse42 ? crc32c_hw(c, val, vlen) : crc32c_sw(c, val, vlen);
        i = crc32(i, val, (uInt)vlen);
    }
    return ((uint64_t)c << 32) | (uint32_t)i;
}

static void put_be64(uint8_t *b, uint64_t v) {
    for (int k = 7; k >= 0; k--) {
        b[k] = (uint8_t)v;
        v >>= 8;
    }
}

static uint64_t get_be64(const uint8_t *b) {
    uint64_t v = 0;
    for (int k = 0; k < 8; k++) {
        v = v << 8 | b[k];
    }
    return v;
}

static void put_be32(uint8_t *b, uint32_t v) {
    b[0] = v >> 24;
    b[1] = v >> 16;
    b[2] = v >> 8;
    b[3] = v;
}

static uint32_t get_be32(const uint8_t *b) { return (uint32_t)b[0] << 24 | (uint32_t)b[1] << 16 | (uint32_t)b[2] << 8 | b[3]; }

/* ---- HdrHistogram: 1 us to 60 s, 3 significant digits, in the standard
 * layout (unit magnitude 0, 2048 sub-buckets, 16 buckets), encoded as
 * HdrHistogram's V2 compressed encoding ---- */

#define H_LOWEST 1
#define H_HIGHEST 60000000LL
#define H_DIGITS 3
#define H_SUB_HALF_MAG 10
#define H_SUB_COUNT 2048
#define H_SUB_HALF 1024
#define H_BUCKETS 16
#define H_LEN ((H_BUCKETS + 1) * H_SUB_HALF)
#define H_COOKIE 0x1c849313          /* V2 encoding cookie | 0x10 */
#define H_COMPRESSED_COOKIE 0x1c849314 /* V2 compressed cookie | 0x10 */

typedef struct {
    int64_t counts[H_LEN];
    int64_t max;
} hist_t;

static int h_index(int64_t v) {
    int bucket = 53 - __builtin_clzll((uint64_t)v | (H_SUB_COUNT - 1));
    int sub = (int)(v >> bucket);
    return ((bucket + 1) << H_SUB_HALF_MAG) + (sub - H_SUB_HALF);
}

static void h_record(hist_t *h, int64_t v) {
    h->counts[h_index(v)]++;
    if (v > h->max) {
        h->max = v;
    }
}

/* h_value is the lowest value of counts index i (for the max after a
 * decode: every value of the index shares the index). */
static int64_t h_value(int i) {
    int bucket = (i >> H_SUB_HALF_MAG) - 1;
    int sub = (i & (H_SUB_HALF - 1)) + H_SUB_HALF;
    if (bucket < 0) {
        sub -= H_SUB_HALF;
        bucket = 0;
    }
    return (int64_t)sub << bucket;
}

static size_t zigzag_put(uint8_t *b, int64_t v) {
    uint64_t u = ((uint64_t)v << 1) ^ (uint64_t)(v >> 63);
    size_t n = 0;
    while (n < 8 && u >= 0x80) {
        b[n++] = (uint8_t)(u | 0x80);
        u >>= 7;
    }
    b[n++] = (uint8_t)u;
    return n;
}

static size_t zigzag_get(const uint8_t *b, size_t len, int64_t *v) {
    uint64_t u = 0;
    size_t n = 0;
    for (int shift = 0; n < len; shift += 7) {
        uint8_t c = b[n++];
        if (shift == 56) {
            u |= (uint64_t)c << 56;
            break;
        }
        u |= (uint64_t)(c & 0x7f) << shift;
        if (!(c & 0x80)) {
            break;
        }
    }
    *v = (int64_t)(u >> 1) ^ -(int64_t)(u & 1);
    return n;
}

/* h_encode returns the V2-compressed encoding of h (malloc'd, *len). */
static uint8_t *h_encode(const hist_t *h, size_t *len) {
    int limit = h_index(h->max > 0 ? h->max : 0) + 1;
    if (h->max == 0) {
        limit = 1;
    }
    uint8_t *raw = xmalloc(40 + (size_t)limit * 9);
    size_t p = 40;
    for (int i = 0; i < limit;) {
        int64_t c = h->counts[i++];
        int64_t zeros = 0;
        if (c == 0) {
            zeros = 1;
            while (i < limit && h->counts[i] == 0) {
                zeros++;
                i++;
            }
        }
        p += zigzag_put(raw + p, zeros > 1 ? -zeros : c);
    }
    put_be32(raw, H_COOKIE);
    put_be32(raw + 4, (uint32_t)(p - 40));
    put_be32(raw + 8, 0);
    put_be32(raw + 12, H_DIGITS);
    put_be64(raw + 16, H_LOWEST);
    put_be64(raw + 24, H_HIGHEST);
    double one = 1.0;
    uint64_t bits;
    memcpy(&bits, &one, 8);
    put_be64(raw + 32, bits);
    uLongf clen = compressBound(p);
    uint8_t *out = xmalloc(8 + clen);
    if (compress2(out + 8, &clen, raw, p, Z_DEFAULT_COMPRESSION) != Z_OK) {
        die("zlib: compressing a histogram failed");
    }
    free(raw);
    put_be32(out, H_COMPRESSED_COOKIE);
    put_be32(out + 4, (uint32_t)clen);
    *len = 8 + clen;
    return out;
}

/* h_decode adds the encoding h_encode wrote to h. */
static void h_decode(hist_t *h, const uint8_t *b, size_t len) {
    if (len < 8 || get_be32(b) != H_COMPRESSED_COOKIE) {
        die("histogram: bad encoding");
    }
    uLongf rlen = 40 + (uLongf)H_LEN * 9;
    uint8_t *raw = xmalloc(rlen);
    if (uncompress(raw, &rlen, b + 8, get_be32(b + 4)) != Z_OK || rlen < 40) {
        die("histogram: zlib failed");
    }
    size_t end = 40 + get_be32(raw + 4);
    int i = 0;
    for (size_t p = 40; p < end && p < rlen && i < H_LEN;) {
        int64_t v;
        p += zigzag_get(raw + p, rlen - p, &v);
        if (v < 0) {
            i += (int)-v;
        } else {
            if (v > 0) {
                h->counts[i] += v;
                if (h_value(i) > h->max) {
                    h->max = h_value(i);
                }
            }
            i++;
        }
    }
    free(raw);
}

static char *base64(const uint8_t *b, size_t n) {
    static const char tab[] = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    char *out = xmalloc(4 * ((n + 2) / 3) + 1);
    size_t o = 0;
    for (size_t i = 0; i < n; i += 3) {
        uint32_t v = (uint32_t)b[i] << 16 | (i + 1 < n ? (uint32_t)b[i + 1] << 8 : 0) | (i + 2 < n ? b[i + 2] : 0);
        out[o++] = tab[v >> 18 & 63];
        out[o++] = tab[v >> 12 & 63];
        out[o++] = i + 1 < n ? tab[v >> 6 & 63] : '=';
        out[o++] = i + 2 < n ? tab[v & 63] : '=';
    }
    out[o] = 0;
    return out;
}

/* recorder keeps one histogram per second of measurement for one kind:
 * the latest seconds dense, older ones in their compressed encoding, so
 * memory stays flat however long the run. */
#define DENSE_WINDOW 3

typedef struct {
    pthread_mutex_t mu;
    int seconds, latest;
    hist_t **dense;
    uint8_t **packed;
    size_t *packed_len;
} recorder_t;

static void rec_init(recorder_t *r, int seconds) {
    pthread_mutex_init(&r->mu, NULL);
    r->seconds = seconds;
    r->dense = xmalloc(seconds * sizeof(hist_t *));
    r->packed = xmalloc(seconds * sizeof(uint8_t *));
    r->packed_len = xmalloc(seconds * sizeof(size_t));
}

static void rec_record(recorder_t *r, int sec, int64_t ns) {
    if (sec < 0 || sec >= r->seconds) {
        return;
    }
    int64_t us = ns / 1000;
    us = us < H_LOWEST ? H_LOWEST : us > H_HIGHEST ? H_HIGHEST : us;
    pthread_mutex_lock(&r->mu);
    hist_t *h = r->dense[sec];
    if (!h) {
        h = xmalloc(sizeof(hist_t));
        if (r->packed[sec]) {
            h_decode(h, r->packed[sec], r->packed_len[sec]);
            free(r->packed[sec]);
            r->packed[sec] = NULL;
        }
        r->dense[sec] = h;
    }
    h_record(h, us);
    if (sec > r->latest) {
        r->latest = sec;
        for (int s = 0; s <= sec - DENSE_WINDOW; s++) {
            if (r->dense[s]) {
                r->packed[s] = h_encode(r->dense[s], &r->packed_len[s]);
                free(r->dense[s]);
                r->dense[s] = NULL;
            }
        }
    }
    pthread_mutex_unlock(&r->mu);
}

/* ---- JSON ---- */

typedef struct {
    char *b;
    size_t n, cap;
} sbuf_t;

static void sb_add(sbuf_t *s, const char *p, size_t n) {
    if (s->n + n + 1 > s->cap) {
        s->cap = (s->n + n + 1) * 2;
        s->b = realloc(s->b, s->cap);
        if (!s->b) {
            die("out of memory");
        }
    }
    memcpy(s->b + s->n, p, n);
    s->n += n;
    s->b[s->n] = 0;
}

static void sb_printf(sbuf_t *s, const char *fmt, ...) {
    char tmp[256];
    va_list ap;
    va_start(ap, fmt);
    int n = vsnprintf(tmp, sizeof tmp, fmt, ap);
    va_end(ap);
    sb_add(s, tmp, n < (int)sizeof tmp ? (size_t)n : sizeof tmp - 1);
}

static void sb_quote(sbuf_t *s, const char *v) {
    sb_add(s, "\"", 1);
    for (const unsigned char *c = (const unsigned char *)v; *c; c++) {
        if (*c == '"' || *c == '\\') {
            char e[2] = {'\\', (char)*c};
            sb_add(s, e, 2);
        } else if (*c < 0x20) {
            sb_printf(s, "\\u%04x", *c);
        } else {
            sb_add(s, (const char *)c, 1);
        }
    }
    sb_add(s, "\"", 1);
}

static void sb_key(sbuf_t *s, const char *k) {
    sb_add(s, s->n > 1 ? "," : "", s->n > 1);
    sb_quote(s, k);
    sb_add(s, ":", 1);
}

/* ---- the run's state ---- */

static char **topics;
static int ntopics;
static int *parts, *firsts;
static int nparts;
typedef struct {
    const char *name;
    int index;
} topic_ix_t;
static topic_ix_t *by_name; /* sorted by name */
static int producers, groups, per_group, in_flight, nsec, churn;
static int64_t rate, warmup_ns, duration_ns, drain_ns, assign_ns;
static int npayloads;
static uint8_t **payloads;
static size_t *payload_len;
static uint64_t *digests;
static int64_t t0, warm_end, meas_end;

static recorder_t pub_rec, e2e_rec, delay_rec;
static atomic_llong acked_all, consumed_all, pub_measured, pub_warm, cons_measured, cons_warm;
static atomic_llong errs, unsent, duplicates, sent, completed, backlog_max;
static atomic_llong *topic_pub, *topic_cons;
static atomic_llong **seen;
/* Connection churn (job key connection.churn, 0: none): each producer's
 * client is flushed, destroyed and created again every churn records.
 * reconnects counts those set off by a record intended in the window,
 * reconnect_h how long each took (reconnect_mu guards it), handshakes the
 * producers' connections set up in the window, as the Go side counts
 * them. */
static atomic_llong reconnects, handshakes;
/* The pacers' run-queue wait (ns) and turns on a CPU over the window, and
 * how many were measured (pacer_sched). */
static atomic_llong pacer_wait, pacer_runs, pacers;
/* window_known is set once warm_end and meas_end are, which the first
 * clients' threads may read before (connect_cb). */
static atomic_int window_known;
static hist_t reconnect_h;
static pthread_mutex_t reconnect_mu = PTHREAD_MUTEX_INITIALIZER;
static atomic_int stopping, closing, consumers_stop;
/* assigning is set until every group holds its partitions: a consumer
 * that subscribes before its broker has the run's fresh topics in its
 * metadata reports them unknown until they arrive, which is the topics'
 * creation still spreading, not an error of the run (Kafka's Java
 * consumer waits for them silently). */
static atomic_int assigning = 1;

static pthread_mutex_t err_mu = PTHREAD_MUTEX_INITIALIZER;
static char err_samples[MAX_ERR_SAMPLES][ERR_LEN];
static int n_err_samples;

static void note_err(const char *fmt, ...) {
    char msg[ERR_LEN];
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(msg, sizeof msg, fmt, ap);
    va_end(ap);
    atomic_fetch_add(&errs, 1);
    pthread_mutex_lock(&err_mu);
    int dup = 0;
    for (int i = 0; i < n_err_samples; i++) {
        dup |= strcmp(err_samples[i], msg) == 0;
    }
    if (!dup && n_err_samples < MAX_ERR_SAMPLES) {
        snprintf(err_samples[n_err_samples++], ERR_LEN, "%s", msg);
    }
    pthread_mutex_unlock(&err_mu);
}

static int second_of(int64_t ti) {
    if (ti < warm_end || ti >= meas_end) {
        return -1;
    }
    return (int)((ti - warm_end) / SECOND);
}

static int64_t backlog(void) {
    int64_t b = groups * atomic_load(&acked_all) - atomic_load(&consumed_all);
    return b > 0 ? b : 0;
}

static void sample_backlog(void) {
    int64_t b = backlog();
    long long cur = atomic_load(&backlog_max);
    while (b > cur && !atomic_compare_exchange_weak(&backlog_max, &cur, b)) {
    }
}

static int cmp_topic(const void *a, const void *b) {
    return strcmp(((const topic_ix_t *)a)->name, ((const topic_ix_t *)b)->name);
}

static int topic_index(const char *name) {
    topic_ix_t key = {name, 0};
    topic_ix_t *t = bsearch(&key, by_name, ntopics, sizeof key, cmp_topic);
    return t ? t->index : -1;
}

/* ---- client configuration ---- */

static props_t client;

/* handle_error keeps the last error librdkafka reported on a handle
 * (a broker down, a failed TLS handshake or login): the message of a
 * setup that times out names it. A fatal error is the run's. */
typedef struct {
    pthread_mutex_t mu;
    char last[ERR_LEN];
} handle_err_t;

static void error_cb(rd_kafka_t *rk, int err, const char *reason, void *opaque) {
    (void)rk;
    handle_err_t *h = opaque;
    if (h) {
        pthread_mutex_lock(&h->mu);
        snprintf(h->last, sizeof h->last, "%s", reason);
        pthread_mutex_unlock(&h->mu);
    }
    if (err == RD_KAFKA_RESP_ERR__FATAL && !atomic_load(&closing)) {
        note_err("client: %s", reason);
    }
}

static void last_error(handle_err_t *h, char *buf, size_t n) {
    pthread_mutex_lock(&h->mu);
    snprintf(buf, n, "%s", h->last[0] ? h->last : "none reported");
    pthread_mutex_unlock(&h->mu);
}

static void conf_set(rd_kafka_conf_t *c, const char *k, const char *v, const char *what) {
    char e[512];
    if (rd_kafka_conf_set(c, k, v, e, sizeof e) != RD_KAFKA_CONF_OK) {
        die("%s: %s=%s: %s", what, k, v, e);
    }
}

static rd_kafka_conf_t *base_conf(handle_err_t *h) {
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    for (int i = 0; i < client.n; i++) {
        if (strcmp(client.keys[i], "bootstrap.servers") != 0) {
            char e[512];
            if (rd_kafka_conf_set(c, client.keys[i], client.vals[i], e, sizeof e) != RD_KAFKA_CONF_OK) {
                die("client config: %s: %s", client.keys[i], e);
            }
        }
    }
    conf_set(c, "bootstrap.servers", job_str("bootstrap"), "job");
    conf_set(c, "log.connection.close", "false", "job");
    pthread_mutex_init(&h->mu, NULL);
    rd_kafka_conf_set_opaque(c, h);
    rd_kafka_conf_set_error_cb(c, error_cb);
    return c;
}

/* ---- consumers ---- */

typedef struct {
    int group, index;
    rd_kafka_t *rk;
    atomic_llong assigned;
    handle_err_t err;
    pthread_t thread;
} member_t;

static int64_t count_ours(const rd_kafka_topic_partition_list_t *ps) {
    int64_t n = 0;
    for (int i = 0; i < ps->cnt; i++) {
        n += topic_index(ps->elems[i].topic) >= 0;
    }
    return n;
}

static void rebalance_cb(rd_kafka_t *rk, rd_kafka_resp_err_t err, rd_kafka_topic_partition_list_t *ps, void *opaque) {
    member_t *m = opaque ? (member_t *)((char *)opaque - offsetof(member_t, err)) : NULL;
    int cooperative = strcmp(rd_kafka_rebalance_protocol(rk), "COOPERATIVE") == 0;
    if (err == RD_KAFKA_RESP_ERR__ASSIGN_PARTITIONS) {
        if (cooperative) {
            rd_kafka_error_t *e = rd_kafka_incremental_assign(rk, ps);
            if (e) {
                note_err("fetch: assign: %s", rd_kafka_error_string(e));
                rd_kafka_error_destroy(e);
            }
        } else {
            rd_kafka_assign(rk, ps);
        }
        atomic_fetch_add(&m->assigned, count_ours(ps));
    } else {
        if (cooperative) {
            rd_kafka_error_t *e = rd_kafka_incremental_unassign(rk, ps);
            if (e) {
                rd_kafka_error_destroy(e);
            }
        } else {
            rd_kafka_assign(rk, NULL);
        }
        atomic_fetch_sub(&m->assigned, count_ours(ps));
    }
}

static void consume_one(const rd_kafka_message_t *msg, atomic_llong *hi, int64_t now) {
    const char *tname = rd_kafka_topic_name(msg->rkt);
    int tix = topic_index(tname);
    if (tix < 0) {
        note_err("record %s/%d@%" PRId64 " from a topic this run did not produce to", tname, msg->partition, msg->offset);
        return;
    }
    int p = msg->partition;
    if (p >= 0 && p < parts[tix]) {
        atomic_llong *slot = &hi[firsts[tix] + p];
        long long cur = atomic_load(slot);
        for (;;) {
            if (msg->offset <= cur) {
                atomic_fetch_add(&duplicates, 1);
                return;
            }
            if (atomic_compare_exchange_weak(slot, &cur, msg->offset)) {
                break;
            }
        }
    }
    atomic_fetch_add(&consumed_all, 1);
    int64_t ti = 0;
    uint64_t dig = 0;
    int have = 0;
    rd_kafka_headers_t *hs = NULL;
    if (rd_kafka_message_headers(msg, &hs) == RD_KAFKA_RESP_ERR_NO_ERROR) {
        const void *v;
        size_t n;
        if (rd_kafka_header_get_last(hs, "xp-t", &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR && v && n == 8) {
            ti = (int64_t)get_be64(v);
            have |= 1;
        }
        if (rd_kafka_header_get_last(hs, "xp-d", &v, &n) == RD_KAFKA_RESP_ERR_NO_ERROR && v && n == 8) {
            dig = get_be64(v);
            have |= 2;
        }
    }
    if (have != 3) {
        note_err("record %s/%d@%" PRId64 " lacks the xp headers", tname, msg->partition, msg->offset);
        return;
    }
    if (digest(msg->key, msg->key_len, msg->payload, msg->len) != dig) {
        note_err("record %s/%d@%" PRId64 " fails its digest check (altered in transit)", tname, msg->partition, msg->offset);
    }
    int sec = second_of(ti);
    if (sec >= 0) {
        rec_record(&e2e_rec, sec, now - ti);
        atomic_fetch_add(&cons_measured, 1);
        atomic_fetch_add(&topic_cons[tix], 1);
    } else if (ti < warm_end) {
        atomic_fetch_add(&cons_warm, 1);
    }
}

static void *member_run(void *arg) {
    member_t *m = arg;
    atomic_llong *hi = seen[m->group];
    int n = 0;
    while (!atomic_load(&consumers_stop)) {
        rd_kafka_message_t *msg = rd_kafka_consumer_poll(m->rk, 100);
        if (!msg) {
            sample_backlog();
            continue;
        }
        if (msg->err) {
            int unknown = msg->err == RD_KAFKA_RESP_ERR_UNKNOWN_TOPIC_OR_PART || msg->err == RD_KAFKA_RESP_ERR__UNKNOWN_TOPIC;
            if (!atomic_load(&consumers_stop) && msg->err != RD_KAFKA_RESP_ERR__PARTITION_EOF && !(unknown && atomic_load(&assigning))) {
                note_err("fetch: %s", rd_kafka_message_errstr(msg));
            }
        } else {
            consume_one(msg, hi, now_ns());
        }
        rd_kafka_message_destroy(msg);
        if (++n % 64 == 0) {
            sample_backlog();
        }
    }
    return NULL;
}

static member_t *new_consumers(void) {
    int total = groups * per_group;
    member_t *ms = xmalloc((total ? total : 1) * sizeof(member_t));
    seen = xmalloc((groups ? groups : 1) * sizeof(atomic_llong *));
    const char *reset = job_str("offset.reset");
    int ngn = 0;
    char **group_names = groups ? split_csv(job_str("groups.names"), &ngn) : NULL;
    if (ngn < groups) {
        die("job: groups.names has %d names for %d groups", ngn, groups);
    }
    rd_kafka_topic_partition_list_t *subs = rd_kafka_topic_partition_list_new(ntopics);
    for (int i = 0; i < ntopics; i++) {
        rd_kafka_topic_partition_list_add(subs, topics[i], RD_KAFKA_PARTITION_UA);
    }
    for (int g = 0; g < groups; g++) {
        seen[g] = xmalloc(nparts * sizeof(atomic_llong));
        for (int i = 0; i < nparts; i++) {
            atomic_init(&seen[g][i], -1);
        }
        for (int j = 0; j < per_group; j++) {
            member_t *m = &ms[g * per_group + j];
            m->group = g;
            m->index = j;
            rd_kafka_conf_t *c = base_conf(&m->err);
            char id[64];
            snprintf(id, sizeof id, "xp-loadgen-g%d-%d", g, j);
            conf_set(c, "group.id", group_names[g], "consumer");
            conf_set(c, "client.id", id, "consumer");
            conf_set(c, "auto.offset.reset", reset, "consumer");
            conf_set(c, "enable.auto.commit", "false", "consumer");
            conf_set(c, "fetch.wait.max.ms", "500", "consumer");
            rd_kafka_conf_set_rebalance_cb(c, rebalance_cb);
            char e[512];
            m->rk = rd_kafka_new(RD_KAFKA_CONSUMER, c, e, sizeof e);
            if (!m->rk) {
                die("consumer: %s", e);
            }
            rd_kafka_poll_set_consumer(m->rk);
            rd_kafka_resp_err_t err = rd_kafka_subscribe(m->rk, subs);
            if (err) {
                die("consumer: subscribe: %s", rd_kafka_err2str(err));
            }
        }
    }
    rd_kafka_topic_partition_list_destroy(subs);
    return ms;
}

/* await_assignment waits until every group holds all partitions, by as
 * many members as can hold some, for at most the job's assign.timeout.ns. */
static void await_assignment(member_t *ms) {
    int64_t deadline = mono_ns() + assign_ns;
    for (int g = 0; g < groups; g++) {
        for (;;) {
            int64_t held = 0;
            int members = 0;
            for (int j = 0; j < per_group; j++) {
                int64_t n = atomic_load(&ms[g * per_group + j].assigned);
                if (n > 0) {
                    held += n;
                    members++;
                }
            }
            if (held == nparts && members == (per_group < nparts ? per_group : nparts)) {
                break;
            }
            if (mono_ns() > deadline) {
                char last[ERR_LEN];
                last_error(&ms[g * per_group].err, last, sizeof last);
                die("consumer group %d: %d members hold %" PRId64 " of %d partitions after %" PRId64 "s (last client error: %s)", g, members,
                    held, nparts, assign_ns / SECOND, last);
            }
            if (atomic_load(&stopping)) {
                die("interrupted");
            }
            sleep_ns(5000000);
        }
    }
}

/* ---- producers ---- */

typedef struct {
    int k;
    rd_kafka_t *rk;
    rd_kafka_topic_t **rkt;
    sem_t win;
    int closed;
    handle_err_t err;
    pthread_t thread, poller;
    atomic_int poll_stop;
    int sent; /* records since the client was opened (churn) */
    int tix;
    uint64_t rng;
} producer_t;

/* dr_cb counts a record acknowledged or failed: its intended send time
 * is the message's opaque, its topic's index the topic's opaque. */
static void dr_cb(rd_kafka_t *rk, const rd_kafka_message_t *msg, void *opaque) {
    (void)rk;
    producer_t *p = (producer_t *)((char *)opaque - offsetof(producer_t, err));
    int64_t ti = (int64_t)(intptr_t)msg->_private;
    int tix = (int)(intptr_t)rd_kafka_topic_opaque(msg->rkt) - 1;
    if (msg->err) {
        if (!atomic_load(&closing)) {
            note_err("produce: %s", rd_kafka_err2str(msg->err));
        }
    } else {
        int64_t ack = now_ns();
        atomic_fetch_add(&acked_all, 1);
        int sec = second_of(ti);
        if (sec >= 0) {
            rec_record(&pub_rec, sec, ack - ti);
            atomic_fetch_add(&pub_measured, 1);
            if (tix >= 0) {
                atomic_fetch_add(&topic_pub[tix], 1);
            }
        } else if (ti < warm_end) {
            atomic_fetch_add(&pub_warm, 1);
        }
    }
    atomic_fetch_add(&completed, 1);
    if (p->closed) {
        sem_post(&p->win);
    }
}

static atomic_int pollers_stop;

/* poller serves a producer's delivery reports. */
static void *poller(void *arg) {
    producer_t *p = arg;
    while (!atomic_load(&pollers_stop) && !atomic_load(&p->poll_stop)) {
        rd_kafka_poll(p->rk, 100);
    }
    return NULL;
}

/* close_producer destroys producer p's first n topics and its client
 * (its poller stopped). */
static void close_producer(producer_t *p, int n) {
    for (int i = 0; i < n; i++) {
        rd_kafka_topic_destroy(p->rkt[i]);
    }
    rd_kafka_destroy(p->rk);
    p->rk = NULL;
}

/* connect_cb connects a producer's socket (as librdkafka does, the
 * socket non-blocking, so EINPROGRESS is a connection under way) and
 * counts it in handshakes when it is set up in the window. */
static int connect_cb(int fd, const struct sockaddr *addr, int addrlen, const char *id, void *opaque) {
    (void)id;
    (void)opaque;
    if (connect(fd, addr, (socklen_t)addrlen) == -1 && errno != EINPROGRESS) {
        return errno;
    }
    if (atomic_load(&window_known) && second_of(now_ns()) >= 0) {
        atomic_fetch_add(&handshakes, 1);
    }
    return 0;
}

/* open_producer creates producer p's client, its topics and their
 * metadata, and starts its poller; 0 with e set when it cannot. */
static int open_producer(producer_t *p, char *e, size_t elen) {
    int k = p->k;
    rd_kafka_conf_t *c = base_conf(&p->err);
    int64_t size = job_int("message.size");
    int64_t buffer_records = job_int("buffer.records");
    int64_t linger = job_int("linger.ms");
    int64_t drain_ms = drain_ns / 1000000;
    const char *acks = job_str("acks");
    char v[64];
    snprintf(v, sizeof v, "xp-loadgen-p%d", k);
    conf_set(c, "client.id", v, "producer");
    conf_set(c, "acks", strcmp(acks, "all") == 0 ? "-1" : acks, "producer");
    conf_set(c, "enable.idempotence", strcmp(acks, "all") == 0 ? "true" : "false", "producer");
    conf_set(c, "linger.ms", job_str("linger.ms"), "producer");
    conf_set(c, "batch.size", job_str("batch.bytes"), "producer");
    /* Java's batches are bounded by bytes only. */
    conf_set(c, "batch.num.messages", "1000000", "producer");
    conf_set(c, "compression.type", job_str("compression"), "producer");
    /* Room for the records the pacer may have buffered (a second at the
     * target rate, or the closed loop's window twice), as the Java
     * client's buffer.memory, so that a broker hiccup shows as publish
     * latency before it blocks a send. */
    int64_t bytes = buffer_records * (size + 128);
    if (bytes < (32LL << 20)) {
        bytes = 32LL << 20;
    }
    snprintf(v, sizeof v, "%" PRId64, bytes / 1024 < 2147483647 ? bytes / 1024 : 2147483647);
    conf_set(c, "queue.buffering.max.kbytes", v, "producer");
    snprintf(v, sizeof v, "%" PRId64, buffer_records * 2 > 100000 ? buffer_records * 2 : 100000);
    conf_set(c, "queue.buffering.max.messages", v, "producer");
    int64_t rt = drain_ms - linger;
    rt = rt < 1000 ? 1000 : rt > 30000 ? 30000 : rt;
    snprintf(v, sizeof v, "%" PRId64, rt);
    conf_set(c, "request.timeout.ms", v, "producer");
    snprintf(v, sizeof v, "%" PRId64, drain_ms);
    conf_set(c, "message.timeout.ms", v, "producer");
    rd_kafka_conf_set_dr_msg_cb(c, dr_cb);
    rd_kafka_conf_set_connect_cb(c, connect_cb);
    p->rk = rd_kafka_new(RD_KAFKA_PRODUCER, c, e, elen);
    if (!p->rk) {
        return 0;
    }
    if (!p->rkt) {
        p->rkt = xmalloc(ntopics * sizeof(rd_kafka_topic_t *));
    }
    for (int i = 0; i < ntopics; i++) {
        rd_kafka_topic_conf_t *tc = rd_kafka_default_topic_conf_dup(p->rk);
        rd_kafka_topic_conf_set_opaque(tc, (void *)(intptr_t)(i + 1));
        p->rkt[i] = rd_kafka_topic_new(p->rk, topics[i], tc);
        if (!p->rkt[i]) {
            snprintf(e, elen, "topic %s: %s", topics[i], rd_kafka_err2str(rd_kafka_last_error()));
            close_producer(p, i);
            return 0;
        }
        /* The first send of a topic waits for its metadata, which would
         * be send delay of the first records: fetch it now. */
        const struct rd_kafka_metadata *md = NULL;
        rd_kafka_resp_err_t err = rd_kafka_metadata(p->rk, 0, p->rkt[i], &md, (int)(assign_ns / 1000000));
        if (err) {
            char last[ERR_LEN];
            last_error(&p->err, last, sizeof last);
            snprintf(e, elen, "metadata of %s: %s (last client error: %s)", topics[i], rd_kafka_err2str(err), last);
            close_producer(p, i + 1);
            return 0;
        }
        rd_kafka_metadata_destroy(md);
    }
    atomic_store(&p->poll_stop, 0);
    pthread_create(&p->poller, NULL, poller, p);
    return 1;
}

static void new_producer(producer_t *p, int k) {
    p->k = k;
    char e[2 * ERR_LEN];
    if (!open_producer(p, e, sizeof e)) {
        die("producer: %s", e);
    }
}

/* churn_tick counts one record of producer p, intended for ti, sent;
 * every churn records it waits for the client's records to be
 * acknowledged (flush), destroys it and creates a new one, which
 * connects, handshakes and authenticates again, as the Go load
 * generator's churner does. A reconnect counts in the window when the
 * record that set it off does; its time is from creating the client to
 * its topics' metadata in (a connection set up, authenticated and
 * answering), as the Java client times it. 0 when the client could not
 * be reopened or the run is stopping. */
static int churn_tick(producer_t *p, int64_t ti) {
    if (churn == 0 || ++p->sent < churn) {
        return 1;
    }
    p->sent = 0;
    int64_t left = (meas_end + drain_ns - now_ns()) / 1000000;
    if (rd_kafka_flush(p->rk, left > 1 ? (int)left : 1) != RD_KAFKA_RESP_ERR_NO_ERROR) {
        note_err("producer: flush before reconnecting: %s", rd_kafka_err2str(RD_KAFKA_RESP_ERR__TIMED_OUT));
        return 0;
    }
    atomic_store(&p->poll_stop, 1);
    /* The poller's wait on the main queue ends now, not in 100 ms. */
    rd_kafka_queue_t *mq = rd_kafka_queue_get_main(p->rk);
    rd_kafka_queue_yield(mq);
    rd_kafka_queue_destroy(mq);
    pthread_join(p->poller, NULL);
    close_producer(p, ntopics);
    if (atomic_load(&stopping)) {
        return 0;
    }
    int64_t start = mono_ns();
    char e[2 * ERR_LEN];
    if (!open_producer(p, e, sizeof e)) {
        note_err("producer: reconnect: %s", e);
        return 0;
    }
    int64_t took = (mono_ns() - start) / 1000;
    if (second_of(ti) >= 0) {
        atomic_fetch_add(&reconnects, 1);
        pthread_mutex_lock(&reconnect_mu);
        h_record(&reconnect_h, took < H_LOWEST ? H_LOWEST : took > H_HIGHEST ? H_HIGHEST : took);
        pthread_mutex_unlock(&reconnect_mu);
    }
    return 1;
}

static uint64_t splitmix(uint64_t *s) {
    uint64_t z = (*s += 0x9E3779B97F4A7C15ULL);
    z = (z ^ (z >> 30)) * 0xBF58476D1CE4E5B9ULL;
    z = (z ^ (z >> 27)) * 0x94D049BB133111EBULL;
    return z ^ (z >> 31);
}

/* send_one produces one record with intended time ti to topic tix; a
 * full queue is waited out (as the Java client's send blocks on a full
 * buffer) unless the run stops. */
static void send_one(producer_t *p, int64_t ti, int tix) {
    int i = (int)(splitmix(&p->rng) % (uint64_t)npayloads);
    uint8_t t[8], d[8];
    put_be64(t, (uint64_t)ti);
    put_be64(d, digests[i]);
    atomic_fetch_add(&sent, 1);
    for (;;) {
        rd_kafka_resp_err_t err = rd_kafka_producev(
            p->rk, RD_KAFKA_V_RKT(p->rkt[tix]), RD_KAFKA_V_PARTITION(RD_KAFKA_PARTITION_UA), RD_KAFKA_V_MSGFLAGS(0),
            RD_KAFKA_V_VALUE(payloads[i], payload_len[i]), RD_KAFKA_V_HEADER("xp-t", t, 8), RD_KAFKA_V_HEADER("xp-d", d, 8),
            RD_KAFKA_V_OPAQUE((void *)(intptr_t)ti), RD_KAFKA_V_END);
        if (err == RD_KAFKA_RESP_ERR_NO_ERROR) {
            return;
        }
        if (err != RD_KAFKA_RESP_ERR__QUEUE_FULL || atomic_load(&stopping)) {
            if (!atomic_load(&closing)) {
                note_err("produce: %s", rd_kafka_err2str(err));
            }
            atomic_fetch_add(&completed, 1);
            if (p->closed) {
                sem_post(&p->win);
            }
            return;
        }
        sleep_ns(50000);
    }
}

/* PACER_WAKE is the pacer's shortest sleep (ns), the Go pacer's
 * pacerWake: when the next record is due sooner, the pacer sleeps this long
 * and then sends every record that has come due, instead of waking for
 * each record at high rates. */
#define PACER_WAKE 50000

/* pace_until sleeps until run-clock time t (in sleeps of at most 100 ms,
 * so that a stop is seen, and of at least PACER_WAKE). The pacer's timer
 * slack is 1 ns (open_loop), so a sleep wakes on time, as the Go pacer's
 * does; neither spins, so the pacer's CPU is not part of the client's
 * cost. */
static int pace_until(int64_t t) {
    for (;;) {
        if (atomic_load(&stopping)) {
            return 0;
        }
        int64_t d = t - now_ns();
        if (d <= 0) {
            return 1;
        }
        sleep_ns(d < PACER_WAKE ? PACER_WAKE : d < 100000000 ? d : 100000000);
    }
}

/* thread_sched reads the calling thread's run-queue wait (ns) and turns
 * on a CPU from /proc/thread-self/schedstat; 0 where unreadable. */
static int thread_sched(long long *wait, long long *runs) {
    FILE *f = fopen("/proc/thread-self/schedstat", "r");
    if (!f) {
        return 0;
    }
    long long cpu;
    int n = fscanf(f, "%lld %lld %lld", &cpu, wait, runs);
    fclose(f);
    return n == 3;
}

/* pacer_sched_t is a pacer's scheduling at its first record due in the
 * window (state 1; 0 before it, -1 unreadable). */
typedef struct {
    long long wait, runs;
    int state;
} pacer_sched_t;

static void pacer_start(pacer_sched_t *m) {
    if (m->state == 0) {
        m->state = thread_sched(&m->wait, &m->runs) ? 1 : -1;
    }
}

/* pacer_stop adds the pacer's wait and turns since pacer_start. */
static void pacer_stop(const pacer_sched_t *m) {
    long long w, n;
    if (m->state == 1 && thread_sched(&w, &n)) {
        atomic_fetch_add(&pacer_wait, w - m->wait);
        atomic_fetch_add(&pacer_runs, n - m->runs);
        atomic_fetch_add(&pacers, 1);
    }
}

/* paced_sends sends record i at t0 + i/rate, at once when behind; records
 * due in the window may be sent up to SEND_GRACE after it, later ones are
 * never sent (a shortfall the rate rule sees). */
static void paced_sends(producer_t *p, double r, pacer_sched_t *m) {
    int64_t stop = meas_end + SEND_GRACE;
    double period = 1e9 / r;
    int tix = p->tix;
    for (int64_t i = 0;; i++) {
        int64_t ti = t0 + (int64_t)(i * period);
        if (ti >= meas_end) {
            return;
        }
        int64_t now = now_ns();
        if (ti > now) {
            if (!pace_until(ti)) {
                return;
            }
            now = now_ns();
        }
        if (now >= stop || atomic_load(&stopping)) {
            int64_t due = (int64_t)ceil((meas_end - ti) / period);
            if (due > 0) {
                atomic_fetch_add(&unsent, due);
            }
            return;
        }
        int sec = second_of(ti);
        if (sec >= 0) {
            pacer_start(m);
            rec_record(&delay_rec, sec, now - ti);
        }
        send_one(p, ti, tix);
        if (++tix == ntopics) {
            tix = 0;
        }
        if (!churn_tick(p, ti)) {
            int64_t due = (int64_t)ceil((meas_end - ti) / period) - 1;
            if (due > 0) {
                atomic_fetch_add(&unsent, due);
            }
            return;
        }
    }
}

/* open_loop is the producer's pacer: paced_sends, measured over the
 * window (the Go pacer's pacerSched). */
static void open_loop(producer_t *p, double r) {
    /* The Go pacer's timer slack for this thread (librdkafka's threads
     * keep the default), and the thread's id, so that xp gives it the Go
     * pacer's scheduling priority. */
    prctl(PR_SET_TIMERSLACK, 1UL, 0UL, 0UL, 0UL);
    out_line("pacer %ld %d", (long)syscall(SYS_gettid), prctl(PR_GET_TIMERSLACK, 0UL, 0UL, 0UL, 0UL));
    pacer_sched_t m = {0};
    paced_sends(p, r, &m);
    pacer_stop(&m);
}

/* closed_loop keeps in_flight records in flight; the intended send time
 * is the moment a slot frees. */
static void closed_loop(producer_t *p) {
    int tix = p->tix;
    if (!pace_until(t0)) {
        return;
    }
    while (!atomic_load(&stopping)) {
        struct timespec ts;
        clock_gettime(CLOCK_REALTIME, &ts);
        ts.tv_nsec += 100000000;
        if (ts.tv_nsec >= SECOND) {
            ts.tv_sec++;
            ts.tv_nsec -= SECOND;
        }
        if (sem_timedwait(&p->win, &ts) != 0) {
            continue;
        }
        int64_t now = now_ns();
        if (now >= meas_end) {
            sem_post(&p->win);
            return;
        }
        send_one(p, now, tix);
        if (++tix == ntopics) {
            tix = 0;
        }
        if (!churn_tick(p, now)) {
            return;
        }
    }
}

static void *producer_run(void *arg) {
    producer_t *p = arg;
    if (rate > 0) {
        open_loop(p, (double)rate / producers);
    } else {
        closed_loop(p);
    }
    return NULL;
}

/* ---- the sampler ---- */

static pthread_mutex_t smp_mu = PTHREAD_MUTEX_INITIALIZER;
static pthread_cond_t smp_cond;
static int smp_stopped;
static double cpu_start, cpu_end;
static int64_t (*series)[3];
static int nseries, series_cap;

/* smp_wait waits up to d ns or until the sampler is stopped; it returns
 * whether it was stopped. */
static int smp_wait(int64_t d) {
    pthread_mutex_lock(&smp_mu);
    if (!smp_stopped && d > 0) {
        struct timespec ts;
        clock_gettime(CLOCK_MONOTONIC, &ts);
        int64_t at = (int64_t)ts.tv_sec * SECOND + ts.tv_nsec + d;
        ts.tv_sec = at / SECOND;
        ts.tv_nsec = at % SECOND;
        pthread_cond_timedwait(&smp_cond, &smp_mu, &ts);
    }
    int s = smp_stopped;
    pthread_mutex_unlock(&smp_mu);
    return s;
}

static void *sampler(void *arg) {
    (void)arg;
    for (;;) {
        int64_t d = warm_end - now_ns();
        if (d <= 0) {
            break;
        }
        if (smp_wait(d)) {
            return NULL;
        }
    }
    cpu_start = process_cpu();
    int64_t last_pub = atomic_load(&acked_all), last_cons = atomic_load(&consumed_all);
    out_line("phase measure %" PRId64, meas_end);
    for (int sec = 0;; sec++) {
        int64_t next = warm_end + (int64_t)(sec + 1) * SECOND;
        int stopped = 0;
        while (!stopped && now_ns() < next) {
            int64_t d = next - now_ns();
            stopped = smp_wait(d < 10000000 ? d : 10000000);
            sample_backlog();
        }
        sample_backlog();
        int64_t p = atomic_load(&acked_all), c = atomic_load(&consumed_all);
        pthread_mutex_lock(&smp_mu);
        if (nseries == series_cap) {
            series_cap = series_cap ? 2 * series_cap : 64;
            series = realloc(series, series_cap * sizeof *series);
            if (!series) {
                die("out of memory");
            }
        }
        series[nseries][0] = p - last_pub;
        series[nseries][1] = c - last_cons;
        series[nseries][2] = backlog();
        nseries++;
        pthread_mutex_unlock(&smp_mu);
        last_pub = p;
        last_cons = c;
        if (sec + 1 == nsec) {
            cpu_end = process_cpu();
        }
        if (stopped) {
            return NULL;
        }
    }
}

static void stop_sampler(pthread_t t) {
    pthread_mutex_lock(&smp_mu);
    smp_stopped = 1;
    pthread_cond_broadcast(&smp_cond);
    pthread_mutex_unlock(&smp_mu);
    pthread_join(t, NULL);
    if (cpu_end == 0 && cpu_start != 0) {
        cpu_end = process_cpu();
    }
}

/* ---- the report ---- */

static void add_hists(sbuf_t *s, const char *key, recorder_t *r) {
    sb_key(s, key);
    sb_add(s, "[", 1);
    hist_t *empty = NULL;
    for (int i = 0; i < r->seconds; i++) {
        size_t n;
        uint8_t *enc;
        if (r->dense[i]) {
            enc = h_encode(r->dense[i], &n);
        } else if (r->packed[i]) {
            enc = r->packed[i];
            n = r->packed_len[i];
            r->packed[i] = NULL;
        } else {
            if (!empty) {
                empty = xmalloc(sizeof(hist_t));
            }
            enc = h_encode(empty, &n);
        }
        char *b64 = base64(enc, n);
        free(enc);
        if (i > 0) {
            sb_add(s, ",", 1);
        }
        sb_quote(s, b64);
        free(b64);
    }
    free(empty);
    sb_add(s, "]", 1);
}

static const char *built_in_features(void) {
    static char buf[512];
    size_t n = sizeof buf;
    rd_kafka_conf_t *c = rd_kafka_conf_new();
    if (rd_kafka_conf_get(c, "builtin.features", buf, &n) != RD_KAFKA_CONF_OK) {
        snprintf(buf, sizeof buf, "unknown");
    }
    rd_kafka_conf_destroy(c);
    return buf;
}

static char *result(int drained, int64_t drain_at, int64_t unacked) {
    sbuf_t s = {0};
    sb_add(&s, "{", 1);
#define NUM(k, v)                                                                                                                          \
    do {                                                                                                                               \
        sb_key(&s, k);                                                                                                                 \
        sb_printf(&s, "%lld", (long long)(v));                                                                                         \
    } while (0)
    NUM("t0", t0);
    NUM("warm_end", warm_end);
    NUM("meas_end", meas_end);
    NUM("published", atomic_load(&pub_measured));
    NUM("consumed", atomic_load(&cons_measured));
    NUM("warmup_published", atomic_load(&pub_warm));
    NUM("warmup_consumed", atomic_load(&cons_warm));
    NUM("errors", atomic_load(&errs));
    NUM("unsent", atomic_load(&unsent));
    NUM("duplicates", atomic_load(&duplicates));
    NUM("backlog_max", atomic_load(&backlog_max));
    NUM("backlog", backlog());
    sb_key(&s, "drained");
    sb_printf(&s, "%s", drained ? "true" : "false");
    NUM("drain_at", drain_at);
    NUM("unacked", unacked);
    sb_key(&s, "cpu_s");
    sb_printf(&s, "%.9f", cpu_end - cpu_start > 0 ? cpu_end - cpu_start : 0);
    sb_key(&s, "error_samples");
    sb_add(&s, "[", 1);
    pthread_mutex_lock(&err_mu);
    for (int i = 0; i < n_err_samples; i++) {
        sb_add(&s, ",", i > 0);
        sb_quote(&s, err_samples[i]);
    }
    pthread_mutex_unlock(&err_mu);
    sb_add(&s, "]", 1);
    sb_key(&s, "series");
    sb_add(&s, "[", 1);
    for (int i = 0; i < nseries; i++) {
        sb_add(&s, ",", i > 0);
        sb_printf(&s, "\"%lld,%lld,%lld\"", (long long)series[i][0], (long long)series[i][1], (long long)series[i][2]);
    }
    sb_add(&s, "]", 1);
    sb_key(&s, "topics");
    sb_add(&s, "[", 1);
    for (int i = 0; i < ntopics; i++) {
        sb_add(&s, ",", i > 0);
        sb_printf(&s, "\"%lld,%lld\"", (long long)atomic_load(&topic_pub[i]), (long long)atomic_load(&topic_cons[i]));
    }
    sb_add(&s, "]", 1);
    add_hists(&s, "publish", &pub_rec);
    add_hists(&s, "e2e", &e2e_rec);
    add_hists(&s, "send_delay", &delay_rec);
    NUM("pacer_wait_ns", atomic_load(&pacer_wait));
    NUM("pacer_runs", atomic_load(&pacer_runs));
    NUM("pacers", atomic_load(&pacers));
    NUM("reconnects", atomic_load(&reconnects));
    NUM("handshakes", atomic_load(&handshakes));
    sb_key(&s, "reconnect");
    size_t rn;
    pthread_mutex_lock(&reconnect_mu);
    uint8_t *renc = h_encode(&reconnect_h, &rn);
    pthread_mutex_unlock(&reconnect_mu);
    char *r64 = base64(renc, rn);
    free(renc);
    sb_quote(&s, r64);
    free(r64);
    sb_key(&s, "client_name");
    sb_quote(&s, "librdkafka");
    char v[128];
    snprintf(v, sizeof v, "librdkafka %s", rd_kafka_version_str());
    sb_key(&s, "client_version");
    sb_quote(&s, v);
    char rt[1024];
    snprintf(rt, sizeof rt, "C (gcc %s, glibc %s); librdkafka %s with %s; %s", __VERSION__, gnu_get_libc_version(), rd_kafka_version_str(),
             built_in_features(), XP_BUILD);
    sb_key(&s, "client_runtime");
    sb_quote(&s, rt);
    sb_add(&s, "}", 1);
#undef NUM
    return s.b;
}

/* ---- the run ---- */

static void load(const char *path) {
    props_read(&job, path, 1);
    props_read(&client, job_str("client.config"), 0);
    topics = split_csv(job_str("topics"), &ntopics);
    int np = 0;
    char **ps = split_csv(job_str("partitions"), &np);
    if (np != ntopics || ntopics == 0) {
        die("job: %d topics, %d partition counts", ntopics, np);
    }
    parts = xmalloc(ntopics * sizeof(int));
    firsts = xmalloc(ntopics * sizeof(int));
    by_name = xmalloc(ntopics * sizeof(topic_ix_t));
    for (int i = 0; i < ntopics; i++) {
        parts[i] = atoi(ps[i]);
        firsts[i] = nparts;
        nparts += parts[i];
        by_name[i] = (topic_ix_t){topics[i], i};
    }
    qsort(by_name, ntopics, sizeof(topic_ix_t), cmp_topic);
    producers = (int)job_int("producers");
    groups = (int)job_int("groups");
    per_group = (int)job_int("consumers.per.group");
    rate = job_int("rate");
    in_flight = (int)job_int("in.flight");
    warmup_ns = job_int("warmup.ns");
    duration_ns = job_int("duration.ns");
    drain_ns = job_int("drain.timeout.ns");
    assign_ns = job_int("assign.timeout.ns");
    /* A job without the key (written before churn was honoured) has
     * none. */
    churn = props_get(&job, "connection.churn") ? (int)job_int("connection.churn") : 0;
    if (churn < 0) {
        die("job: connection.churn=%d is negative", churn);
    }
    nsec = (int)((duration_ns + SECOND - 1) / SECOND);
    rec_init(&pub_rec, nsec);
    rec_init(&e2e_rec, nsec);
    rec_init(&delay_rec, nsec);
    topic_pub = xmalloc(ntopics * sizeof(atomic_llong));
    topic_cons = xmalloc(ntopics * sizeof(atomic_llong));

    const char *pf = job_str("payload.file");
    FILE *f = fopen(pf, "rb");
    uint8_t n4[4];
    if (!f || fread(n4, 1, 4, f) != 4) {
        die("%s: cannot read", pf);
    }
    npayloads = (int)get_be32(n4);
    if (npayloads <= 0) {
        die("%s: no payloads", pf);
    }
    payloads = xmalloc(npayloads * sizeof(uint8_t *));
    payload_len = xmalloc(npayloads * sizeof(size_t));
    digests = xmalloc(npayloads * sizeof(uint64_t));
    for (int i = 0; i < npayloads; i++) {
        if (fread(n4, 1, 4, f) != 4) {
            die("%s: truncated", pf);
        }
        payload_len[i] = get_be32(n4);
        payloads[i] = xmalloc(payload_len[i]);
        if (fread(payloads[i], 1, payload_len[i], f) != payload_len[i]) {
            die("%s: truncated", pf);
        }
        digests[i] = digest(NULL, 0, payloads[i], payload_len[i]);
    }
    fclose(f);
}

static char *execute(void) {
    member_t *ms = new_consumers();
    int total = groups * per_group;
    for (int i = 0; i < total; i++) {
        pthread_create(&ms[i].thread, NULL, member_run, &ms[i]);
    }
    await_assignment(ms);
    atomic_store(&assigning, 0);
    producer_t *prs = xmalloc(producers * sizeof(producer_t));
    for (int k = 0; k < producers; k++) {
        new_producer(&prs[k], k);
    }
    t0 = now_ns() + 100000000LL;
    warm_end = t0 + warmup_ns;
    meas_end = warm_end + duration_ns;
    atomic_store(&window_known, 1);
    int64_t drain_end = meas_end + drain_ns;
    uint64_t seed = (uint64_t)job_int("seed");
    int nf = 0;
    char **first_topics = split_csv(job_str("first.topics"), &nf);
    for (int k = 0; k < producers; k++) {
        producer_t *p = &prs[k];
        p->rng = seed * 0x9E3779B97F4A7C15ULL + (uint64_t)k + 1;
        p->tix = k < nf ? atoi(first_topics[k]) % ntopics : 0;
        p->closed = rate == 0;
        sem_init(&p->win, 0, p->closed ? (unsigned)in_flight : 0);
        pthread_attr_t attr;
        pthread_attr_init(&attr);
        pthread_create(&p->thread, &attr, producer_run, p);
        pthread_attr_destroy(&attr);
    }
    if (warmup_ns > 0) {
        out_line("phase warmup %" PRId64, warm_end);
    }
    pthread_condattr_t ca;
    pthread_condattr_init(&ca);
    pthread_condattr_setclock(&ca, CLOCK_MONOTONIC);
    pthread_cond_init(&smp_cond, &ca);
    pthread_t smp;
    pthread_create(&smp, NULL, sampler, NULL);
    for (int k = 0; k < producers; k++) {
        pthread_join(prs[k].thread, NULL);
    }
    if (!atomic_load(&stopping)) {
        out_line("phase drain %" PRId64, drain_end);
    }
    /* Drain: every buffered record acknowledged, every acknowledged
     * record consumed by every group, or the deadline. */
    for (int k = 0; k < producers; k++) {
        int64_t left = (drain_end - now_ns()) / 1000000;
        if (prs[k].rk) { /* none after a failed reconnect */
            rd_kafka_flush(prs[k].rk, left > 1 ? (int)left : 1);
        }
    }
    int drained = 0;
    while (now_ns() < drain_end && !atomic_load(&stopping)) {
        sample_backlog();
        if (backlog() == 0 && atomic_load(&sent) - atomic_load(&completed) == 0) {
            drained = 1;
            break;
        }
        sleep_ns(2000000);
    }
    int64_t drain_at = now_ns();
    int64_t unacked = atomic_load(&sent) - atomic_load(&completed);
    stop_sampler(smp);
    atomic_store(&closing, 1);
    atomic_store(&consumers_stop, 1);
    for (int i = 0; i < total; i++) {
        pthread_join(ms[i].thread, NULL);
    }
    char *res = result(drained, drain_at, unacked);
    for (int k = 0; k < producers; k++) {
        if (prs[k].rk) {
            rd_kafka_purge(prs[k].rk, RD_KAFKA_PURGE_F_QUEUE | RD_KAFKA_PURGE_F_INFLIGHT);
        }
    }
    atomic_store(&pollers_stop, 1);
    for (int k = 0; k < producers; k++) {
        if (!prs[k].rk) {
            continue;
        }
        pthread_join(prs[k].poller, NULL);
        close_producer(&prs[k], ntopics);
    }
    for (int i = 0; i < total; i++) {
        rd_kafka_consumer_close(ms[i].rk);
        rd_kafka_destroy(ms[i].rk);
    }
    return res;
}

static void *stdin_watch(void *arg) {
    (void)arg;
    char buf[256];
    while (read(0, buf, sizeof buf) > 0) {
        /* the caller keeps stdin open while the run may go on */
    }
    atomic_store(&stopping, 1);
    return NULL;
}

int main(int argc, char **argv) {
    if (argc == 2 && strcmp(argv[1], "-version") == 0) {
        printf("librdkafka %s\n", rd_kafka_version_str());
        return 0;
    }
    if (argc >= 2 && strcmp(argv[1], "-encode-histogram") == 0) {
        /* The histogram of the microsecond values given, as a report
         * encodes it: the codec's round trip is tested from Go. */
        hist_t *h = xmalloc(sizeof(hist_t));
        for (int i = 2; i < argc; i++) {
            int64_t us = strtoll(argv[i], NULL, 10);
            h_record(h, us < H_LOWEST ? H_LOWEST : us > H_HIGHEST ? H_HIGHEST : us);
        }
        size_t n;
        uint8_t *enc = h_encode(h, &n);
        if (getenv("XP_HDR_REPACK")) {
            /* through the packed form an old second takes */
            hist_t *d = xmalloc(sizeof(hist_t));
            h_decode(d, enc, n);
            free(enc);
            enc = h_encode(d, &n);
        }
        char *b64 = base64(enc, n);
        printf("%s\n", b64);
        return 0;
    }
    if (argc != 2) {
        fprintf(stderr, "usage: xp-rdkafka-loadgen JOB.properties (run by xp loadgen --client librdkafka)\n");
        return 2;
    }
    crc32c_init();
    __builtin_cpu_init();
    have_sse42 = __builtin_cpu_supports("sse4.2");
    load(argv[1]);
    mono0 = mono_ns();
    struct timespec w;
    clock_gettime(CLOCK_REALTIME, &w);
    wall0 = (int64_t)w.tv_sec * SECOND + w.tv_nsec;
    pthread_t in;
    pthread_create(&in, NULL, stdin_watch, NULL);
    pthread_detach(in);
    char *res = execute();
    out_line("result %s", res);
    free(res);
    return 0;
}
