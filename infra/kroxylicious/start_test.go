package kroxylicious

import (
	"bytes"
	"context"
	"encoding/base64"
	"errors"
	"fmt"
	"net"
	"os"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
	"github.com/xp-bench/xp/internal/disttest"
)

// freePorts finds n consecutive free ports on loopback (a bootstrap port
// and one per broker, as portIdentifiesNode takes them).
func freePorts(t *testing.T, n int) int {
	t.Helper()
	for try := 0; try < 50; try++ {
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			t.Fatal(err)
		}
		base := ln.Addr().(*net.TCPAddr).Port
		ln.Close()
		ok := base+n < 65535
		for p := base; ok && p < base+n; p++ {
			l, err := net.Listen("tcp", "127.0.0.1:"+strconv.Itoa(p))
			if err != nil {
				ok = false
				break
			}
			l.Close()
		}
		if ok {
			return base
		}
	}
	t.Fatal("no free consecutive ports")
	return 0
}

// proxyCase is one Kroxylicious process of TestRealKroxylicious.
type proxyCase struct {
	name, mode, transport string
	setup                 Setup
	proc                  *Process
	err                   error
}

// TestRealKroxylicious starts the release make kroxylicious-dist
// assembled (the newest Maven Central serves) with the configs xp renders,
// in front of the embedded cluster, side by side: proxy over mtls and over
// sasl_ssl (SASL passed through to the brokers), encrypt over tls on the
// in-memory KMS with a KEK xp made. Records produced through each come back
// unchanged through it; read straight from the broker, the encrypt
// gateway's records are ciphertext that names xp's KEK, and the KEK
// itself is in no log. A config Kroxylicious refuses and a port already
// taken make it exit at start-up, and Start says so with the end of its
// log.
func TestRealKroxylicious(t *testing.T) {
	r := disttest.Kroxylicious(t)
	rel, err := Prepare(context.Background(), t.TempDir(), r.Path, r.SHA512)
	if err != nil {
		t.Fatal(err)
	}
	home := rel.Home
	java, err := JavaHome(rel.MinJava())
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	c, err := local.Start(ctx, local.Options{Brokers: 1})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	dir := t.TempDir()
	cert, key, err := c.Authority().Gateway("kroxylicious")
	if err != nil {
		t.Fatal(err)
	}
	kek, err := NewKEK(DefaultKEK)
	if err != nil {
		t.Fatal(err)
	}
	modes := c.Modes()
	clientConfigs = map[string]string{}
	for name, m := range modes {
		clientConfigs[name] = m.ClientConfig
	}
	setup := func(name, mode, transport string) Setup {
		port := freePorts(t, 3)
		s := Setup{Version: r.Version, Name: name, Host: "127.0.0.1", Port: port, Brokers: 1, Upstream: modes[transport].Bootstrap,
			Transport: transport, CA: c.Authority().CAPath(), Cert: cert, Key: key, Mode: mode, ManagementPort: port + 2}
		if mode == "encrypt" {
			s.KMS.InMemory = &InMemory{Alias: DefaultKEK, KEKs: []KEK{kek}}
		}
		return s
	}
	good := []*proxyCase{
		{name: "proxy-mtls", mode: "proxy", transport: "mtls"},
		{name: "proxy-sasl-ssl", mode: "proxy", transport: "sasl_ssl"},
		{name: "encrypt-tls", mode: "encrypt", transport: "tls"},
	}
	taken, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer taken.Close()
	badConfig := setup("bad-config", "proxy", "plaintext")
	portTaken := setup("port-taken", "proxy", "plaintext")
	portTaken.Port = taken.Addr().(*net.TCPAddr).Port
	sad := []struct {
		name  string
		setup Setup
		edit  func([]byte) []byte
		want  []string
	}{
		{"undefined filter", badConfig, func(b []byte) []byte { return append(b, "defaultFilters: [nothere]\n"...) },
			[]string{"exited at start-up", "references filters not defined", "nothere"}},
		{"port taken", portTaken, nil, []string{"exited at start-up", "Address already in use"}},
	}
	var wg sync.WaitGroup
	logs := make([]*syncBuffer, len(good))
	for i, pc := range good {
		pc.setup = setup(pc.name, pc.mode, pc.transport)
		logs[i] = &syncBuffer{}
		wg.Add(1)
		go func() {
			defer wg.Done()
			pc.proc, pc.err = start(ctx, t, home, java, dir, pc.setup, nil, logs[i])
		}()
	}
	sadErrs := make([]error, len(sad))
	for i, tc := range sad {
		wg.Add(1)
		go func() {
			defer wg.Done()
			p, err := start(ctx, t, home, java, dir, tc.setup, tc.edit, nil)
			if p != nil {
				p.Stop()
			}
			sadErrs[i] = err
		}()
	}
	wg.Wait()
	for _, pc := range good {
		if pc.proc != nil {
			defer pc.proc.Stop()
		}
	}
	for i, tc := range sad {
		t.Run(tc.name, func(t *testing.T) {
			var se *StartError
			if !errors.As(sadErrs[i], &se) || !se.Exited {
				t.Fatalf("Start: %v, want a *StartError of a proxy that exited", sadErrs[i])
			}
			for _, w := range tc.want {
				if !strings.Contains(sadErrs[i].Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, sadErrs[i])
				}
			}
		})
	}
	for i, pc := range good {
		t.Run(pc.name, func(t *testing.T) {
			if pc.err != nil {
				t.Fatal(pc.err)
			}
			props, err := kafkaconf.ReadClientConfig(modes[pc.transport].ClientConfig)
			if err != nil {
				t.Fatal(err)
			}
			direct := maps(props)
			props[kafkaconf.BootstrapServers] = net.JoinHostPort("127.0.0.1", strconv.Itoa(pc.setup.Port))
			topic := "t-" + pc.name
			values := produceConsume(ctx, t, props, topic, 50)
			raw := consume(ctx, t, direct, topic, len(values))
			for j, v := range raw {
				switch {
				case pc.mode == "proxy" && !bytes.Equal(v.Value, values[j]):
					t.Fatalf("record %d on the broker is %q, produced %q", j, v.Value, values[j])
				case pc.mode == "encrypt" && (bytes.Contains(v.Value, values[j]) || len(v.Value) <= len(values[j])):
					t.Fatalf("record %d on the broker holds the plaintext: %q", j, v.Value)
				case pc.mode == "encrypt" && !bytes.Contains(v.Value, uuidBytes(t, kek.UUID)):
					t.Fatalf("record %d on the broker does not name KEK %s: %x", j, kek.UUID, v.Value)
				case pc.mode == "encrypt" && !hasHeader(v, "kroxylicious.io/encryption"):
					t.Fatalf("record %d on the broker has no encryption header: %+v", j, v.Headers)
				}
			}
			if log := logs[i].String(); strings.Contains(log, base64.StdEncoding.EncodeToString(kek.Key)) || !strings.Contains(log, "kroxylicious: "+r.Version) {
				t.Errorf("the proxy's log names no version, or holds the KEK:\n%s", log)
			}
		})
	}
}

// clientConfigs are the embedded cluster's client configs by mode.
var clientConfigs map[string]string

// start renders s (edited by edit when set) into dir and starts it.
func start(ctx context.Context, t *testing.T, home, java, dir string, s Setup, edit func([]byte) []byte, log *syncBuffer) (*Process, error) {
	b, err := Config(s)
	if err != nil {
		return nil, err
	}
	if edit != nil {
		b = edit(b)
	}
	path := fmt.Sprintf("%s/%s.yaml", dir, s.Name)
	if err := writeFile(path, b); err != nil {
		return nil, err
	}
	o := Options{Home: home, Config: path, JavaHome: java, JavaOptions: "-Xmx256m", Ready: net.JoinHostPort(s.Host, strconv.Itoa(s.Port)), Timeout: 3 * time.Minute}
	if s.Transport != "plaintext" {
		// The client leg's TLS, as the clients of the fronted mode make it.
		props, err := kafkaconf.ReadClientConfig(clientConfigs[s.Transport])
		if err != nil {
			return nil, err
		}
		if o.ReadyTLS, err = kafkaconf.TLSConfig(props); err != nil {
			return nil, err
		}
	}
	if log != nil {
		o.Log = log
	}
	return Start(ctx, o)
}

func maps(m map[string]string) map[string]string {
	c := make(map[string]string, len(m))
	for k, v := range m {
		c[k] = v
	}
	return c
}

func uuidBytes(t *testing.T, u string) []byte {
	var b []byte
	for _, part := range strings.Split(u, "-") {
		for i := 0; i+1 < len(part); i += 2 {
			n, err := strconv.ParseUint(part[i:i+2], 16, 8)
			if err != nil {
				t.Fatal(err)
			}
			b = append(b, byte(n))
		}
	}
	return b
}

func hasHeader(r *kgo.Record, key string) bool {
	for _, h := range r.Headers {
		if h.Key == key {
			return true
		}
	}
	return false
}

// produceConsume creates topic (one partition) through the client props,
// produces n records and reads them back; it returns the values produced.
func produceConsume(ctx context.Context, t *testing.T, props map[string]string, topic string, n int) [][]byte {
	t.Helper()
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.RecordPartitioner(kgo.ManualPartitioner()))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	if _, err := kadm.NewClient(cl).CreateTopic(ctx, 1, 1, nil, topic); err != nil {
		t.Fatalf("creating %s: %v", topic, err)
	}
	var values [][]byte
	for i := range n {
		v := []byte(fmt.Sprintf("secret record %03d of %s", i, topic))
		values = append(values, v)
		if err := cl.ProduceSync(ctx, &kgo.Record{Topic: topic, Value: v}).FirstErr(); err != nil {
			t.Fatalf("producing to %s: %v", topic, err)
		}
	}
	got := consume(ctx, t, props, topic, n)
	for i, r := range got {
		if !bytes.Equal(r.Value, values[i]) {
			t.Fatalf("record %d read back through the proxy is %q, produced %q", i, r.Value, values[i])
		}
	}
	return values
}

// consume reads the first n records of topic's partition 0.
func consume(ctx context.Context, t *testing.T, props map[string]string, topic string, n int) []*kgo.Record {
	t.Helper()
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		t.Fatal(err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.ConsumePartitions(map[string]map[int32]kgo.Offset{topic: {0: kgo.NewOffset().AtStart()}}))...)
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	ctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var out []*kgo.Record
	for len(out) < n {
		f := cl.PollFetches(ctx)
		if err := ctx.Err(); err != nil {
			t.Fatalf("read %d of %d records of %s: %v", len(out), n, topic, err)
		}
		f.EachError(func(_ string, _ int32, err error) { t.Fatalf("fetching %s: %v", topic, err) })
		out = append(out, f.Records()...)
	}
	return out[:n]
}

type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func writeFile(path string, b []byte) error { return os.WriteFile(path, b, 0o600) }
