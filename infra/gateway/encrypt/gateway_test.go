package encrypt

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"io"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/hamba/avro/v2"
	"github.com/twmb/franz-go/pkg/kgo"
	"google.golang.org/protobuf/proto"
	"google.golang.org/protobuf/reflect/protodesc"
	"google.golang.org/protobuf/reflect/protoreflect"
	"google.golang.org/protobuf/types/descriptorpb"
	"google.golang.org/protobuf/types/dynamicpb"

	"github.com/xp-bench/xp/infra/gateway/envelope"
)

const kcatPath = "/usr/bin/kcat"

func sameHeaders(a, b []kgo.RecordHeader) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i].Key != b[i].Key || !bytes.Equal(a[i].Value, b[i].Value) {
			return false
		}
	}
	return true
}

func sameBytes(a, b []byte) bool { return bytes.Equal(a, b) && (a == nil) == (b == nil) }

// TestGatewayRoundTrip produces the load generator's records in every
// encoding and compression codec through the encrypting gateway, then
// checks what rests on the broker (read directly) is ciphertext in the
// documented form and what franz-go and kcat read through the gateway is
// byte-identical to what was produced.
func TestGatewayRoundTrip(t *testing.T) {
	var topics []string
	for _, e := range encodings {
		for _, c := range codecs {
			topics = append(topics, topicPrefix(e)+c.name)
		}
	}
	topics = append(topics, "plain")
	kf := startKfake(t, topics...)
	e := startGateway(t, kf, Config{Vault: newVault(t, "k1"), Topics: testRules()})
	direct := kf.ListenAddrs()[0]
	avroSchema := avro.MustParse(string(readFile(t, loadgenAvro)))
	pbType := loadgenMessage(t)
	const n = 60
	for ei, enc := range encodings {
		for ci, c := range codecs {
			topic := topicPrefix(enc) + c.name
			t.Run(enc+"/"+c.name, func(t *testing.T) {
				produced, _ := testRecords(enc, n, uint64(ei*10+ci), true)
				if err := produce(t, e.gw.Bootstrap(), topic, c.codec, produced); err != nil {
					t.Fatal(err)
				}
				byTS := map[int64]*kgo.Record{}
				for _, r := range produced {
					byTS[r.Timestamp.UnixMilli()] = r
				}
				rest := consume(t, direct, topic, n)
				through := consume(t, e.gw.Bootstrap(), topic, n)
				for i, got := range through {
					want := byTS[got.Timestamp.UnixMilli()]
					if want == nil {
						t.Fatalf("record at %d/%d: timestamp %v was never produced", got.Partition, got.Offset, got.Timestamp)
					}
					if !sameBytes(got.Key, want.Key) || !sameBytes(got.Value, want.Value) || !sameHeaders(got.Headers, want.Headers) {
						t.Fatalf("through the gateway, record %d/%d differs from what was produced:\n got key %q headers %v value %.80q\nwant key %q headers %v value %.80q",
							got.Partition, got.Offset, got.Key, got.Headers, got.Value, want.Key, want.Headers, want.Value)
					}
					if r := rest[i]; r.Partition != got.Partition || r.Offset != got.Offset || !r.Timestamp.Equal(got.Timestamp) {
						t.Fatalf("offsets or timestamps differ from the broker's: %d/%d@%v vs %d/%d@%v", got.Partition, got.Offset, got.Timestamp, r.Partition, r.Offset, r.Timestamp)
					}
					checkAtRest(t, enc, rest[i], want, avroSchema, pbType)
				}
				kcatMatches(t, e.gw.Bootstrap(), topic, through)
			})
		}
	}
	t.Run("topic not configured passes untouched", func(t *testing.T) {
		produced, _ := testRecords(EncodingJSON, 20, 99, false)
		if err := produce(t, e.gw.Bootstrap(), "plain", kgo.NoCompression(), produced); err != nil {
			t.Fatal(err)
		}
		for _, r := range consume(t, direct, "plain", 20) {
			if len(r.Headers) > 0 && r.Headers[len(r.Headers)-1].Key == HeaderKey || !json.Valid(r.Value) || !bytes.Contains(r.Value, []byte(`"ssn":"`)) || bytes.Contains(r.Value, []byte(`"ssn":"AQ`)) {
				t.Fatalf("unconfigured topic was changed: %q", r.Value)
			}
		}
	})
	t.Run("kcat produces, franz-go reads", func(t *testing.T) {
		for _, c := range codecs {
			topic := "j-kcat-" + c.name
			var in bytes.Buffer
			var want []string
			for i := range 30 {
				v := fmt.Sprintf(`{"id":"%036d","status":"ACTIVE","ssn":"%03d-45-6789","notes":"%s"}`, i, i, strings.Repeat("x", 900))
				want = append(want, v)
				fmt.Fprintf(&in, "kk%d|%s\n", i, v)
			}
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, kcatPath, "-b", e.gw.Bootstrap(), "-t", topic, "-P", "-K", "|", "-z", c.name, "-X", "acks=all", "-X", "linger.ms=5")
			cmd.Stdin = &in
			if out, err := cmd.CombinedOutput(); err != nil {
				cancel()
				t.Fatalf("kcat produce %s: %v\n%s", c.name, err, out)
			}
			cancel()
			got := consume(t, e.gw.Bootstrap(), topic, 30)
			seen := map[string]bool{}
			for _, r := range got {
				seen[string(r.Key)+"|"+string(r.Value)] = true
			}
			for i, v := range want {
				if !seen[fmt.Sprintf("kk%d|%s", i, v)] {
					t.Fatalf("%s: record %d produced by kcat not read back byte-identical", c.name, i)
				}
			}
			for _, r := range consume(t, direct, topic, 30) {
				if bytes.Contains(r.Value, []byte("-45-6789")) {
					t.Fatalf("%s: ssn in plaintext on the broker: %q", c.name, r.Value)
				}
			}
		}
	})
}

// checkAtRest checks a record as stored on the broker against the one
// produced.
func checkAtRest(t *testing.T, enc string, rest, want *kgo.Record, avroSchema avro.Schema, pbType protoreflect.MessageType) {
	t.Helper()
	if enc == encodingBytesKH {
		checkKHAtRest(t, rest, want)
		return
	}
	if !sameBytes(rest.Key, want.Key) {
		t.Fatalf("key changed at rest: %q", rest.Key)
	}
	if want.Value == nil {
		if rest.Value != nil || !sameHeaders(rest.Headers, want.Headers) {
			t.Fatal("tombstone changed at rest")
		}
		return
	}
	nh := len(rest.Headers)
	if nh != len(want.Headers)+1 || !sameHeaders(rest.Headers[:nh-1], want.Headers) || rest.Headers[nh-1].Key != HeaderKey {
		t.Fatalf("headers at rest %v, want %v plus %s", rest.Headers, want.Headers, HeaderKey)
	}
	marker := string(rest.Headers[nh-1].Value)
	isEnv := func(b []byte) {
		t.Helper()
		if _, err := envelope.HeaderLen(b); err != nil {
			t.Fatalf("not an envelope at rest: %x", b)
		}
	}
	b64Env := func(s string) {
		t.Helper()
		b, err := base64.StdEncoding.DecodeString(s)
		if err != nil {
			t.Fatalf("sensitive field at rest is not base64: %q", s)
		}
		isEnv(b)
	}
	switch enc {
	case "bytes":
		if marker != "1" || bytes.Equal(rest.Value, want.Value) || bytes.Contains(rest.Value, want.Value) {
			t.Fatal("value at rest equals or contains its plaintext")
		}
		isEnv(rest.Value)
	case EncodingJSON:
		var a, b map[string]json.RawMessage
		if err := json.Unmarshal(rest.Value, &a); err != nil {
			t.Fatalf("at rest not JSON: %v", err)
		}
		if err := json.Unmarshal(want.Value, &b); err != nil {
			t.Fatal(err)
		}
		for _, k := range []string{"id", "status", "notes"} {
			if !bytes.Equal(a[k], b[k]) {
				t.Fatalf("field %s changed at rest", k)
			}
		}
		var s string
		if err := json.Unmarshal(a["ssn"], &s); err != nil {
			t.Fatal(err)
		}
		b64Env(s)
	case EncodingAvro, encodingAvroConfluent:
		restV, wantV := rest.Value, want.Value
		if enc == encodingAvroConfluent {
			if !bytes.Equal(restV[:5], wantV[:5]) {
				t.Fatal("Confluent framing changed at rest")
			}
			restV, wantV = restV[5:], wantV[5:]
		}
		type rec struct {
			ID     string `avro:"id"`
			Status string `avro:"status"`
			SSN    string `avro:"ssn"`
			Notes  string `avro:"notes"`
		}
		var a, b rec
		if err := avro.Unmarshal(avroSchema, restV, &a); err != nil {
			t.Fatalf("at rest not Avro of the schema: %v", err)
		}
		if err := avro.Unmarshal(avroSchema, wantV, &b); err != nil {
			t.Fatal(err)
		}
		if a.ID != b.ID || a.Status != b.Status || a.Notes != b.Notes {
			t.Fatal("other fields changed at rest")
		}
		b64Env(a.SSN)
	case EncodingProtobuf:
		a, b := pbType.New().Interface(), pbType.New().Interface()
		if err := proto.Unmarshal(rest.Value, a); err != nil {
			t.Fatalf("at rest not the Protobuf message: %v", err)
		}
		if err := proto.Unmarshal(want.Value, b); err != nil {
			t.Fatal(err)
		}
		fs := pbType.Descriptor().Fields()
		for _, name := range []string{"id", "status", "notes"} {
			fd := fs.ByName(protoreflect.Name(name))
			if a.ProtoReflect().Get(fd).String() != b.ProtoReflect().Get(fd).String() {
				t.Fatalf("field %s changed at rest", name)
			}
		}
		b64Env(a.ProtoReflect().Get(fs.ByName("ssn")).String())
	}
	if enc != "bytes" && marker != "1:ssn" {
		t.Fatalf("marker %q, want 1:ssn", marker)
	}
}

// checkKHAtRest: value, key and header values are envelopes; header names,
// null keys and tombstones are kept.
func checkKHAtRest(t *testing.T, rest, want *kgo.Record) {
	t.Helper()
	isEnv := func(what string, b []byte) {
		t.Helper()
		if _, err := envelope.HeaderLen(b); err != nil {
			t.Fatalf("%s at rest is not an envelope: %x", what, b)
		}
	}
	if (rest.Key == nil) != (want.Key == nil) || (rest.Value == nil) != (want.Value == nil) {
		t.Fatal("a null key or value changed at rest")
	}
	if want.Key != nil {
		isEnv("key", rest.Key)
	}
	if want.Value != nil {
		isEnv("value", rest.Value)
	}
	nh := len(rest.Headers)
	if nh != len(want.Headers)+1 || rest.Headers[nh-1].Key != HeaderKey || string(rest.Headers[nh-1].Value) != "1;kh" {
		t.Fatalf("headers at rest %v", rest.Headers)
	}
	for i, h := range want.Headers {
		if rest.Headers[i].Key != h.Key {
			t.Fatalf("header name changed at rest: %q", rest.Headers[i].Key)
		}
		isEnv("header "+h.Key, rest.Headers[i].Value)
	}
}

func loadgenMessage(t testing.TB) protoreflect.MessageType {
	t.Helper()
	var set descriptorpb.FileDescriptorSet
	if err := proto.Unmarshal(readFile(t, loadgenProto), &set); err != nil {
		t.Fatal(err)
	}
	files, err := protodesc.NewFiles(&set)
	if err != nil {
		t.Fatal(err)
	}
	d, err := files.FindDescriptorByName("xp.Record")
	if err != nil {
		t.Fatal(err)
	}
	return dynamicpb.NewMessageType(d.(protoreflect.MessageDescriptor))
}

// kcatMatches consumes topic through the gateway with kcat (librdkafka)
// and checks every record equals what franz-go read. Values are framed by
// their length, so binary payloads compare exactly.
func kcatMatches(t *testing.T, bootstrap, topic string, want []*kgo.Record) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	cmd := exec.CommandContext(ctx, kcatPath, "-b", bootstrap, "-t", topic, "-C", "-o", "beginning", "-e", "-q",
		"-f", "%p %o %T %S %K %h\n%s%k")
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	out, err := cmd.Output()
	if err != nil {
		t.Fatalf("kcat consume: %v\n%s", err, stderr.String())
	}
	type rec struct {
		key, value []byte
		headers    string
		ts         int64
	}
	got := map[[2]int64]rec{}
	br := bufio.NewReader(bytes.NewReader(out))
	for {
		line, err := br.ReadString('\n')
		if err == io.EOF && line == "" {
			break
		}
		if err != nil {
			t.Fatalf("kcat output: %v", err)
		}
		f := strings.SplitN(strings.TrimSuffix(line, "\n"), " ", 6)
		if len(f) != 6 {
			t.Fatalf("kcat line %q", line)
		}
		p, _ := strconv.ParseInt(f[0], 10, 64)
		o, _ := strconv.ParseInt(f[1], 10, 64)
		ts, _ := strconv.ParseInt(f[2], 10, 64)
		vl, _ := strconv.Atoi(f[3])
		kl, _ := strconv.Atoi(f[4])
		var r rec
		r.ts, r.headers = ts, f[5]
		read := func(n int) []byte {
			if n < 0 {
				return nil
			}
			b := make([]byte, n)
			if _, err := io.ReadFull(br, b); err != nil {
				t.Fatalf("kcat output short: %v", err)
			}
			return b
		}
		r.value, r.key = read(vl), read(kl)
		got[[2]int64{p, o}] = r
	}
	if len(got) != len(want) {
		t.Fatalf("kcat read %d records through the gateway, franz-go %d\n%s", len(got), len(want), stderr.String())
	}
	for _, w := range want {
		g, ok := got[[2]int64{int64(w.Partition), w.Offset}]
		var hs []string
		for _, h := range w.Headers {
			hs = append(hs, h.Key+"="+string(h.Value))
		}
		if !ok || !bytes.Equal(g.value, w.Value) || !bytes.Equal(g.key, w.Key) || g.ts != w.Timestamp.UnixMilli() || g.headers != strings.Join(hs, ",") {
			t.Fatalf("kcat record %d/%d differs: %+v vs franz-go key %q value %.60q headers %v", w.Partition, w.Offset, g, w.Key, w.Value, w.Headers)
		}
	}
}
