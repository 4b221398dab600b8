// Package encrypt is the gateway filter behind the `encrypt` and
// `field_encrypt` security modes: on produce it encrypts record values
// (optionally keys and header values too, or else named fields of JSON,
// Avro and Protobuf values) of the configured topics,
// on fetch it decrypts them and rebuilds each batch, so data rests on the
// brokers as ciphertext while clients see exactly what they produced.
//
// Failures are visible, never garbage and never a silently empty fetch:
//
//   - Produce: a record that cannot be encrypted (a value that does not
//     parse in the rule's encoding, a corrupt or pre-v2 batch, a key
//     failure) fails its partition, which is answered with the code
//     (INVALID_RECORD 87 for values, CORRUPT_MESSAGE 2 for batches,
//     UNSUPPORTED_FOR_MESSAGE_FORMAT 43 for pre-v2 batches,
//     UNKNOWN_TOPIC_ID 100 for a topic id the gateway has not seen) and
//     none of whose records go upstream; the request's other partitions
//     go on to the broker and the client gets both answers in one
//     response, as Kafka answers each partition of a produce request on
//     its own (gateway.PartitionErrors).
//   - Fetch: a partition with a record that cannot be restored gets an
//     error code and no records, while the other partitions of the
//     response are delivered: TOPIC_AUTHORIZATION_FAILED (29) when the
//     vault lacks the record's key-encryption key ("this gateway may not
//     read that data"), INVALID_RECORD (87) when a tag does not verify
//     (tampered, moved to another topic or field, or a corrupt envelope or
//     batch). franz-go returns both to the application as fetch errors
//     and kcat (librdkafka) reports them ("Broker failed to validate
//     record", "Topic authorization failed"); CORRUPT_MESSAGE
//     would be retried silently by franz-go. The failed partition's record
//     set is empty, not null: librdkafka refuses a null one as a protocol
//     error.
package encrypt

import (
	"context"
	"crypto/cipher"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"path"
	"runtime"
	"sync"
	"sync/atomic"
	"time"

	"github.com/twmb/franz-go/pkg/kerr"
	"github.com/twmb/franz-go/pkg/kmsg"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/infra/gateway/fields"
	"github.com/xp-bench/xp/infra/gateway/records"
)

// Fetch error codes (see the package doc).
var (
	// ErrCodeMissingKey is set on a fetched partition whose records name a
	// key-encryption key the vault does not hold.
	ErrCodeMissingKey = kerr.TopicAuthorizationFailed
	// ErrCodeIntegrity is set on a fetched partition with a record whose
	// tag does not verify or that does not parse.
	ErrCodeIntegrity = kerr.InvalidRecord
)

// noRecords is the record set of a failed partition: empty, not null
// (librdkafka refuses a null record set, size -1, as a protocol error).
var noRecords = []byte{}

// Filter is the encrypting gateway.RecordFilter.
type Filter struct {
	rules []*rule
	keys  *envelope.Keyring
	log   *slog.Logger

	topics  sync.Map // topic name → *rule (noRule when none matches)
	calls   callCache
	lastLog atomic.Int64

	// Vault change detection (KEK rotation without a restart).
	vaultPath   string
	reloadEvery time.Duration
	nextCheck   atomic.Int64
	vaultStamp  atomic.Pointer[vaultStamp]
}

type vaultStamp struct {
	mod  time.Time
	size int64
}

var (
	_ gateway.RecordFilter = (*Filter)(nil)
	_ gateway.CipherUser   = (*Filter)(nil)
)

var noRule = &rule{}

// Option tunes a Filter.
type Option func(*Filter)

// WithLogger logs refused produces and failed fetch partitions (at most
// one line a second); default discard.
func WithLogger(l *slog.Logger) Option { return func(f *Filter) { f.log = l } }

// WithKeyring uses k instead of a keyring over the configured vault (tests
// and benchmarks that share one between filters).
func WithKeyring(k *envelope.Keyring) Option { return func(f *Filter) { f.keys = k } }

// New builds a filter from cfg; dir resolves relative paths.
func New(cfg Config, dir string, opts ...Option) (*Filter, error) {
	rules, err := compileRules(cfg, dir)
	if err != nil {
		return nil, err
	}
	f := &Filter{rules: rules, log: slog.New(slog.DiscardHandler)}
	for _, o := range opts {
		o(f)
	}
	if f.keys == nil {
		v, err := openVault(cfg, dir)
		if err != nil {
			return nil, err
		}
		f.keys = envelope.NewKeyring(v, envelope.Options{MaxEncryptions: cfg.DataKeyMaxEncryptions, MaxAge: cfg.DataKeyMaxAge})
		f.vaultPath, f.reloadEvery = v.Path(), cfg.VaultReload
		if f.reloadEvery == 0 {
			f.reloadEvery = DefaultVaultReload
		}
		if st, err := os.Stat(f.vaultPath); err == nil {
			f.vaultStamp.Store(&vaultStamp{st.ModTime(), st.Size()})
		}
		f.nextCheck.Store(time.Now().Add(f.reloadEvery).UnixNano())
	}
	f.calls.max = max(4, idleCallsPerCore*runtime.GOMAXPROCS(0))
	f.calls.new = func() *call {
		c := &call{f: f, rw: records.NewRewriter(0), sealer: f.keys.Sealer(""), opener: f.keys.Opener()}
		c.fillFn = c.fill
		return c
	}
	return f, nil
}

// UseCipher makes the filter's envelopes use newAEAD (gateway.CipherUser:
// the gateway's crypto setting); default crypto/cipher's AES-GCM.
func (f *Filter) UseCipher(newAEAD func(key []byte) (cipher.AEAD, error)) { f.keys.UseCipher(newAEAD) }

// Keyring is the filter's keyring (for KEK rotation: Keyring().Reload()).
func (f *Filter) Keyring() *envelope.Keyring { return f.keys }

// maybeReload re-reads the vault when its file changed, at most once per
// reloadEvery; a vault that no longer reads is logged and the keys in use
// are kept.
func (f *Filter) maybeReload() {
	if f.reloadEvery <= 0 {
		return
	}
	now := time.Now().UnixNano()
	next := f.nextCheck.Load()
	if now < next || !f.nextCheck.CompareAndSwap(next, now+int64(f.reloadEvery)) {
		return
	}
	st, err := os.Stat(f.vaultPath)
	if err != nil {
		f.log.Warn("key vault unreadable; keeping the keys loaded", "vault", f.vaultPath, "error", err)
		return
	}
	if old := f.vaultStamp.Load(); old != nil && old.mod.Equal(st.ModTime()) && old.size == st.Size() {
		return
	}
	if err := f.keys.Reload(); err != nil {
		f.log.Warn("key vault changed but does not load; keeping the keys loaded", "vault", f.vaultPath, "error", err)
		return
	}
	f.vaultStamp.Store(&vaultStamp{st.ModTime(), st.Size()})
	f.log.Info("key vault reloaded", "vault", f.vaultPath, "active_kek", f.keys.ActiveKEK())
}

func (f *Filter) ruleFor(topic string) *rule {
	if r, ok := f.topics.Load(topic); ok {
		return r.(*rule)
	}
	r := noRule
	for _, c := range f.rules {
		if ok, _ := path.Match(c.pattern, topic); ok {
			r = c
			break
		}
	}
	f.topics.Store(topic, r)
	return r
}

func topicName(ctx context.Context, name string, id [16]byte) (string, bool) {
	if name != "" {
		return name, true
	}
	return gateway.TopicName(ctx, id)
}

// ProduceRequest implements gateway.RecordFilter: it encrypts the records
// of configured topics. A partition whose records cannot be encrypted is
// failed on its own (a *gateway.PartitionErrors), its records emptied so
// that no plaintext of it can go upstream; the other partitions go on.
func (f *Filter) ProduceRequest(ctx context.Context, req *kmsg.ProduceRequest) error {
	f.maybeReload()
	var c *call
	defer func() {
		if c != nil {
			f.calls.put(c)
		}
	}()
	var failed *gateway.PartitionErrors
	fail := func(t *kmsg.ProduceRequestTopic, p *kmsg.ProduceRequestTopicPartition, err error) {
		if failed == nil {
			failed = &gateway.PartitionErrors{}
		}
		failed.Add(t.Topic, t.TopicID, p.Partition, err)
		p.Records = nil
	}
	var a arena
	for ti := range req.Topics {
		t := &req.Topics[ti]
		topic, ok := topicName(ctx, t.Topic, t.TopicID)
		if !ok {
			// An id the gateway never saw in metadata: it cannot know
			// whether the topic is encrypted, so it must not let
			// plaintext through.
			for pi := range t.Partitions {
				fail(t, &t.Partitions[pi], fmt.Errorf("encrypt: produce to unknown topic id %x: %w", t.TopicID, kerr.UnknownTopicID))
			}
			continue
		}
		r := f.ruleFor(topic)
		if r == noRule {
			continue
		}
		if c == nil {
			c = f.calls.get()
		}
		c.begin(topic, r)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			if records.HasOldMagic(p.Records) {
				fail(t, p, fmt.Errorf("encrypt: message format before v2 cannot carry the encryption header: %w", kerr.UnsupportedForMessageFormat))
				continue
			}
			// The request outlives this call, so its records need their
			// own buffer: the arena, sized for every record growing by
			// its envelopes and the marker header.
			out, err := a.rewrite(ctx, func() int { return f.produceSize(ctx, req) }, c.rw, p.Records, c.encryptRecord)
			if err != nil {
				fail(t, p, fmt.Errorf("encrypt: %w", produceError(err)))
				continue
			}
			p.Records = out
		}
	}
	if failed != nil {
		return failed
	}
	return nil
}

// produceSize is the size of req's records of encrypted topics once
// encrypted, at most.
func (f *Filter) produceSize(ctx context.Context, req *kmsg.ProduceRequest) int {
	n := 0
	for ti := range req.Topics {
		t := &req.Topics[ti]
		topic, ok := topicName(ctx, t.Topic, t.TopicID)
		if !ok {
			continue
		}
		r := f.ruleFor(topic)
		if r == noRule {
			continue
		}
		g := f.growth(r)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			n += len(p.Records) + records.CountRecords(p.Records)*g
		}
	}
	return n
}

func produceError(err error) error {
	var ke *kerr.Error
	switch {
	case errors.As(err, &ke):
		return err
	case errors.Is(err, records.ErrCorrupt), errors.Is(err, records.ErrCRC), errors.Is(err, records.ErrTruncated), errors.Is(err, records.ErrTooLarge):
		return fmt.Errorf("%w: %w", err, kerr.CorruptMessage)
	case errors.Is(err, fields.ErrMalformed), errors.Is(err, fields.ErrFieldType),
		errors.Is(err, fields.ErrFormatDomain), errors.Is(err, fields.ErrFormatEscape):
		return fmt.Errorf("%w: %w", err, kerr.InvalidRecord)
	}
	return fmt.Errorf("%w: %w", err, kerr.UnknownServerError)
}

// FetchResponse implements gateway.RecordFilter: it decrypts the records
// of configured topics and rebuilds their batches.
func (f *Filter) FetchResponse(ctx context.Context, _ *kmsg.FetchRequest, resp *kmsg.FetchResponse) error {
	f.maybeReload()
	var c *call
	defer func() {
		if c != nil {
			f.calls.put(c)
		}
	}()
	var a arena
	for ti := range resp.Topics {
		t := &resp.Topics[ti]
		topic, ok := topicName(ctx, t.Topic, t.TopicID)
		if !ok {
			// Not knowing the topic, the gateway cannot tell whether to
			// decrypt: withhold the records rather than pass ciphertext.
			for pi := range t.Partitions {
				if p := &t.Partitions[pi]; p.ErrorCode == 0 && len(p.RecordBatches) > 0 {
					p.ErrorCode, p.RecordBatches = kerr.UnknownTopicID.Code, noRecords
				}
			}
			continue
		}
		r := f.ruleFor(topic)
		if r == noRule {
			continue
		}
		if c == nil {
			c = f.calls.get()
		}
		c.begin(topic, r)
		for pi := range t.Partitions {
			p := &t.Partitions[pi]
			if p.ErrorCode != 0 || len(p.RecordBatches) == 0 {
				continue
			}
			// Decrypted records are shorter than their ciphertext, so the
			// response's record sets bound the arena.
			out, err := a.rewrite(ctx, func() int { return fetchSize(resp) }, c.rw, p.RecordBatches, c.decryptRecord)
			if err != nil && !errors.Is(err, records.ErrTruncated) {
				code := ErrCodeIntegrity
				if errors.Is(err, envelope.ErrUnknownKEK) {
					code = ErrCodeMissingKey
				}
				p.ErrorCode, p.RecordBatches = code.Code, noRecords
				f.logLimited("cannot decrypt a fetched partition; answering with an error code",
					"topic", topic, "partition", p.Partition, "code", code.Message, "error", err)
				continue
			}
			p.RecordBatches = out
		}
	}
	return nil
}

// arena holds the record sets of one message's partitions as they are
// rebuilt: a gateway scratch buffer (valid until the gateway has sent the
// message), taken at the first partition and sized for them all.
type arena struct{ buf []byte }

// rewrite rebuilds set through fn at the free end of the arena (taking
// a buffer of size() bytes first if it has none) and returns it; a set
// that does not fit grows into a buffer of its own.
func (a *arena) rewrite(ctx context.Context, size func() int, rw *records.Rewriter, set []byte, fn records.RecordFunc) ([]byte, error) {
	if a.buf == nil {
		a.buf = gateway.Scratch(ctx, size())
	}
	rest := a.buf[len(a.buf):]
	out, err := rw.Rewrite(rest, set, fn)
	if len(out) > 0 && cap(rest) > 0 && &out[0] == &rest[:1][0] {
		a.buf = a.buf[:len(a.buf)+len(out)]
	}
	return out[:len(out):len(out)], err
}

// fetchSize is the size of resp's record sets.
func fetchSize(resp *kmsg.FetchResponse) int {
	n := 0
	for ti := range resp.Topics {
		for _, p := range resp.Topics[ti].Partitions {
			n += len(p.RecordBatches)
		}
	}
	return n
}

func (f *Filter) logLimited(msg string, args ...any) {
	now := time.Now().UnixNano()
	last := f.lastLog.Load()
	if now-last < int64(time.Second) || !f.lastLog.CompareAndSwap(last, now) {
		return
	}
	f.log.Warn(msg, args...)
}

// callCache keeps idle calls with the buffers they have grown. A
// sync.Pool would drop them at every garbage collection, which at
// saturation comes several times a second, and each request would grow
// its batch-sized buffers again (and make the next collection come
// sooner).
type callCache struct {
	mu   sync.Mutex
	idle []*call
	max  int
	new  func() *call
}

// idleCallsPerCore bounds the idle calls kept (each holds up to two
// batch buffers of at most 4 MiB): a request's filtering is CPU work, so
// about as many run at once as the gateway has cores.
const idleCallsPerCore = 2

func (cc *callCache) get() *call {
	cc.mu.Lock()
	if n := len(cc.idle); n > 0 {
		c := cc.idle[n-1]
		cc.idle[n-1] = nil
		cc.idle = cc.idle[:n-1]
		cc.mu.Unlock()
		return c
	}
	cc.mu.Unlock()
	return cc.new()
}

func (cc *callCache) put(c *call) {
	c.rw.Trim()
	cc.mu.Lock()
	if len(cc.idle) < cc.max {
		cc.idle = append(cc.idle, c)
	}
	cc.mu.Unlock()
}

// call is the per-request state: cryptographic handles and buffers reused
// across records and requests.
type call struct {
	f      *Filter
	rw     *records.Rewriter
	sealer *envelope.Sealer
	opener *envelope.Opener
	topic  string
	rule   *rule
	sc     fields.Scratch
	value  []byte
	hdrs   []byte
	marker []byte
	mc     markerCache
	hv     []byte
	key    []byte
	// Format-preserving ciphers (field_cipher fpe) last used to encrypt
	// and to decrypt, and the KEK named by the record being decrypted.
	fcSeal, fcOpen formatCiphers
	kek            string

	// What fill does for the record being rebuilt (records.Record.Fill):
	// op on src (the record's value as it came) with names, for rec;
	// grow is about how much a value grows when encrypted.
	op     fillOp
	src    []byte
	names  []string
	rec    *records.Record
	grow   int
	fillFn func([]byte) ([]byte, error)
}

// fillOp is the operation fill applies to a record's value.
type fillOp uint8

const (
	sealValue  fillOp = iota // encrypt: seal the value
	sealFields               // field_encrypt: seal the rule's fields
	openValue                // open the value's envelope
	openFields               // open the fields named by the marker
	sealFormat               // field_encrypt, cipher fpe: encrypt the rule's fields in place
	openFormat               // decrypt in place the fields named by a format marker
)

// formatCiphers remembers the format-preserving cipher of one topic and
// KEK, so that a batch derives its key once.
type formatCiphers struct {
	topic, kek string
	fc         *fields.FormatCipher
}

// formatCipher returns the format-preserving cipher of c's topic under
// KEK kek, from cache when it is the last one used.
func (c *call) formatCipher(cache *formatCiphers, kek string) (*fields.FormatCipher, error) {
	if cache.fc != nil && cache.topic == c.topic && cache.kek == kek {
		return cache.fc, nil
	}
	ff, err := c.f.keys.FormatKeyFor(kek, c.topic)
	if err != nil {
		return nil, err
	}
	*cache = formatCiphers{topic: c.topic, kek: kek, fc: fields.NewFormatCipher(ff, c.topic)}
	return cache.fc, nil
}

// addMarker appends the marker header with value marker to r's headers
// (copied into c.hdrs, since r's alias the batch).
func (c *call) addMarker(r *records.Record, marker []byte) {
	c.hdrs = append(c.hdrs[:0], r.Headers...)
	c.hdrs = records.AppendHeader(c.hdrs, HeaderKey, marker)
	r.Headers, r.NumHeaders = c.hdrs, r.NumHeaders+1
}

// setFill has r's new value made by fill with op, hinting its length.
func (c *call) setFill(r *records.Record, op fillOp, hint int) {
	c.op, c.src, c.rec = op, r.Value, r
	r.Fill, r.FillHint = c.fillFn, hint
}

// fill appends the new value of c.rec to dst, in the batch being rebuilt:
// encrypted or decrypted there, instead of in c.value and then copied.
func (c *call) fill(dst []byte) ([]byte, error) {
	switch c.op {
	case sealValue:
		return c.sealer.Seal(dst, "", c.src)
	case openValue:
		return c.opener.Open(dst, c.topic, "", c.src)
	case openFields:
		return c.rule.codec.Decrypt(dst, c.src, c.names, c.topic, c.opener, &c.sc)
	case openFormat:
		fc, err := c.formatCipher(&c.fcOpen, c.kek)
		if err != nil {
			return dst, err
		}
		return c.rule.codec.DecryptFormat(dst, c.src, c.names, fc, &c.sc)
	}
	var (
		out   []byte
		found []string
		err   error
		kek   string
	)
	if c.op == sealFormat {
		kek = c.f.keys.ActiveKEK()
		fc, ferr := c.formatCipher(&c.fcSeal, kek)
		if ferr != nil {
			return dst, ferr
		}
		out, found, err = c.rule.codec.EncryptFormat(dst, c.src, c.rule.names, fc, &c.sc)
	} else {
		out, found, err = c.rule.codec.Encrypt(dst, c.src, c.rule.names, c.sealer, &c.sc)
	}
	if err != nil {
		return out, err
	}
	r := c.rec
	if len(found) == 0 {
		// No field to encrypt: the value stays as it was, and so do
		// the headers unless the producer's own last one is named
		// like the marker (see keepPlain).
		out = append(out, c.src...)
		_, err := c.keepPlain(r)
		return out, err
	}
	marker := c.rule.marker
	switch {
	case c.op == sealFormat:
		c.marker = appendFormatMarker(c.marker[:0], kek, found)
		marker = c.marker
	case len(found) != len(c.rule.names):
		c.marker = appendMarker(c.marker[:0], found)
		marker = c.marker
	}
	c.addMarker(r, marker)
	return out, nil
}

func (c *call) begin(topic string, r *rule) {
	c.topic, c.rule = topic, r
	c.sealer.Reset(topic)
	c.grow = c.f.valueGrowth(r)
}

// growth is how many bytes a record grows by when encrypted under r: an
// envelope per field (base64 in text fields) or for the value (and key),
// the marker header, and longer length varints.
func (f *Filter) growth(r *rule) int {
	g := f.valueGrowth(r) + 16 + len(HeaderKey) + len(r.marker)
	if r.fpe {
		g += 3 + len(f.keys.ActiveKEK()) // "f1;KEK" before ":names"
	}
	if !r.fields && r.key {
		g += envelope.Overhead(len(f.keys.ActiveKEK()))
	}
	return g
}

// valueGrowth is how many bytes a record's value grows by when encrypted
// under r (at most, for fields).
func (f *Filter) valueGrowth(r *rule) int {
	if r.fpe {
		return 0 // in place
	}
	ov := envelope.Overhead(len(f.keys.ActiveKEK()))
	if r.fields {
		return len(r.names) * (ov*4/3 + 8)
	}
	return ov
}

func (c *call) encryptRecord(_ *records.BatchInfo, r *records.Record) (bool, error) {
	if !c.rule.fields && (c.rule.key || c.rule.headers) {
		return c.encryptWhole(r)
	}
	if r.Value == nil {
		return c.keepPlain(r) // a tombstone stays a tombstone
	}
	// The value is encrypted by fill, straight into the new batch.
	if c.rule.fields {
		// Which fields are present, and so the marker (or none), is
		// known once fill has scanned the value.
		op := sealFields
		if c.rule.fpe {
			op = sealFormat
		}
		c.setFill(r, op, len(r.Value)+c.grow)
		return true, nil
	}
	c.setFill(r, sealValue, len(r.Value)+c.grow)
	c.addMarker(r, c.rule.marker)
	return true, nil
}

// encryptWhole seals the value (unless null), the key (encrypt_key,
// unless null) and every header value (encrypt_headers, unless null),
// each bound to its own field path, and adds the marker.
func (c *call) encryptWhole(r *records.Record) (bool, error) {
	var err error
	c.value = c.value[:0]
	if r.Value != nil {
		if c.value, err = c.sealer.Seal(c.value, "", r.Value); err != nil {
			return false, err
		}
	}
	vEnd := len(c.value)
	if c.rule.key && r.Key != nil {
		if c.value, err = c.sealer.Seal(c.value, keyField, r.Key); err != nil {
			return false, err
		}
	}
	if r.Value != nil {
		r.Value = c.value[:vEnd:vEnd]
	}
	if c.rule.key && r.Key != nil {
		r.Key = c.value[vEnd:]
	}
	c.hdrs = c.hdrs[:0]
	if c.rule.headers {
		var herr error
		c.hdrs, herr = c.mapHeaders(c.hdrs, r, r.NumHeaders, func(dst []byte, field string, v []byte) ([]byte, error) {
			return c.sealer.Seal(dst, field, v)
		})
		if herr != nil {
			return false, herr
		}
	} else {
		c.hdrs = append(c.hdrs, r.Headers...)
	}
	c.hdrs = records.AppendHeader(c.hdrs, HeaderKey, c.rule.marker)
	r.Headers, r.NumHeaders = c.hdrs, r.NumHeaders+1
	return true, nil
}

// mapHeaders appends the first n headers of r to dst with every non-null
// value replaced by fn's output; fn gets the header's field path
// ("header:" and its name).
func (c *call) mapHeaders(dst []byte, r *records.Record, n int, fn func(dst []byte, field string, v []byte) ([]byte, error)) ([]byte, error) {
	err := r.EachHeader(n, func(k, v []byte) error {
		if v == nil {
			dst = records.AppendHeaderBytes(dst, k, nil)
			return nil
		}
		var err error
		if c.hv, err = fn(c.hv[:0], headerField+string(k), v); err != nil {
			return err
		}
		dst = records.AppendHeaderBytes(dst, k, c.hv)
		return nil
	})
	return dst, err
}

// decryptWhole undoes encryptWhole; start is where the marker header
// begins.
func (c *call) decryptWhole(r *records.Record, start int) (bool, error) {
	var err error
	c.value = c.value[:0]
	if r.Value != nil {
		if c.value, err = c.opener.Open(c.value, c.topic, "", r.Value); err != nil {
			return false, err
		}
	}
	if c.mc.key && r.Key != nil {
		if c.key, err = c.opener.Open(c.key[:0], c.topic, keyField, r.Key); err != nil {
			return false, err
		}
		r.Key = c.key
	}
	if r.Value != nil {
		r.Value = c.value
	}
	n := r.NumHeaders - 1
	if c.mc.headers {
		c.hdrs, err = c.mapHeaders(c.hdrs[:0], r, n, func(dst []byte, field string, v []byte) ([]byte, error) {
			return c.opener.Open(dst, c.topic, field, v)
		})
		if err != nil {
			return false, err
		}
		r.Headers = c.hdrs
	} else {
		r.Headers = r.Headers[:start]
	}
	r.NumHeaders = n
	return true, nil
}

// keepPlain leaves r unencrypted; only if the producer's own last header
// is named like the marker does it get the plaintext marker, which fetch
// removes again.
func (c *call) keepPlain(r *records.Record) (bool, error) {
	if k, _, _, ok := r.LastHeader(); !ok || string(k) != HeaderKey {
		return false, nil
	}
	c.addMarker(r, plainMarker)
	return true, nil
}

// errMarker is a malformed encryption header.
var errMarker = fmt.Errorf("encrypt: malformed %s header: %w", HeaderKey, envelope.ErrMalformed)

// errUnencrypted is a fetched record without an envelope on a topic whose
// rule requires encryption; it fails its partition as a decrypt failure
// does.
var errUnencrypted = fmt.Errorf("encrypt: a record without an envelope on a topic that requires encryption: %w", envelope.ErrAuth)

func (c *call) decryptRecord(_ *records.BatchInfo, r *records.Record) (bool, error) {
	k, v, start, ok := r.LastHeader()
	if !ok || string(k) != HeaderKey {
		if c.rule.require {
			return false, errUnencrypted
		}
		return false, nil
	}
	whole, names, ok := c.mc.parse(v)
	if !ok {
		return false, errMarker
	}
	switch {
	case !whole && len(names) == 0: // plaintext marker
		if c.rule.require {
			return false, errUnencrypted
		}
		r.Headers, r.NumHeaders = r.Headers[:start], r.NumHeaders-1
		return true, nil
	case whole && (c.mc.key || c.mc.headers):
		return c.decryptWhole(r, start)
	case r.Value == nil:
		return false, errMarker
	}
	// The value is decrypted by fill, straight into the new batch.
	hint := max(len(r.Value)-c.grow, 0)
	if whole {
		c.setFill(r, openValue, hint)
	} else {
		if c.rule.codec == nil {
			return false, fmt.Errorf("encrypt: topic %s holds field-encrypted records but its rule is mode encrypt: %w", c.topic, fields.ErrFieldType)
		}
		if c.mc.kek != "" {
			c.setFill(r, openFormat, len(r.Value))
			c.kek = c.mc.kek
		} else {
			c.setFill(r, openFields, hint)
		}
		c.names = names
	}
	r.Headers, r.NumHeaders = r.Headers[:start], r.NumHeaders-1
	return true, nil
}
