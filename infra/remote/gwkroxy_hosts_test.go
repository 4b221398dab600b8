package remote

import (
	"context"
	"encoding/base64"
	"encoding/binary"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kroxylicious"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/internal/disttest"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/runner/loadgen"
)

// kroxyCommandTemplate is a Kroxylicious config as an operator would write
// it for gateway_kind command: Kroxylicious treated as any gateway xp does
// not know, its release uploaded with the files and unpacked by the start
// line. The encrypt mode uses the in-memory KMS with a KEK the operator
// (here the test) made; KEK_KEY and KEK_UUID are put in by the test.
const kroxyCommandTemplate = `virtualClusters:
  - name: vc-{{.Port}}
    targetCluster:
      bootstrapServers: {{join .Upstream ","}}
      tls:
        trust: {storeFile: {{.CA}}, storeType: PEM}
    gateways:
      - name: g
        portIdentifiesNode:
          bootstrapAddress: {{.Listen}}
          advertisedBrokerAddressPattern: {{.Host}}
          nodeIdRanges: [{name: brokers, start: {{.FirstNodeID}}, end: {{add .FirstNodeID (add .Brokers -1)}}}]
        tls:
          key: {privateKeyFile: {{.Key}}, certificateFile: {{.Cert}}}
{{- if eq .Mode "encrypt"}}
filterDefinitions:
  - name: enc
    type: RecordEncryption
    config:
      kms: UnitTestingKmsService
      kmsConfig:
        numIvBytes: 12
        numAuthBits: 128
        existingKeks: [{uuid: KEK_UUID, key: KEK_KEY, algorithm: AES, alias: KEK-ops}]
      selector: TemplateKekSelector
      selectorConfig: {template: KEK-ops}
      unresolvedKeyPolicy: REJECT
defaultFilters: [enc]
{{- end}}
`

// kroxyCommandStart unpacks the release uploaded beside the config and
// runs its start script.
const kroxyCommandStart = `mkdir -p {{.Dir}}/k && tar -xzf {{.Files.Path "RELEASE" | quote}} -C {{.Dir}}/k --strip-components=1 && exec {{.Dir}}/k/bin/kroxylicious-start.sh --config {{quote .Config}}`

// TestKroxyliciousOnNamespaceHosts runs the real Kroxylicious (the release
// make kroxylicious-dist assembled, uploaded from this machine as a
// release file) on a gateway host in front of Apache Kafka (the 4.x
// release of make kafka-dist) on a broker host, for loads from a client
// host: gateway_kind kroxylicious in
// proxy and encrypt (its in-memory KMS), and gateway_kind command with the
// same release started from an operator's config template and start line
// (encrypt, the mode with the most to get wrong).
// The encrypt loads read back what they wrote through the gateway, while
// the records on the broker are ciphertext: their values no longer match
// the digest the load generator put in their headers, and they carry
// Kroxylicious's encryption header. A Kroxylicious that cannot bind its
// port exits at start-up and fails the deploy with the end of its log.
func TestKroxyliciousOnNamespaceHosts(t *testing.T) {
	rel := disttest.Kroxylicious(t)
	kafka := disttest.Kafka(t, 4)
	bin := buildXP(t)
	n := netnstest.New(t, 3)
	log := &syncBuf{}
	pool := sshPool(t, n, log)
	roles := []string{planner.RoleBroker, planner.RoleGateway, planner.RoleClient}
	var hosts []Host
	for i, h := range n.Hosts {
		hosts = append(hosts, Host{Name: fmt.Sprintf("%s-%d", roles[i], i), Role: roles[i], SSH: h.SSHAddr(), Private: h.Addr})
	}
	gwAddr := n.Hosts[1].Addr
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Minute)
	defer cancel()
	d, err := Deploy(ctx, Options{Campaign: "c1", Hosts: hosts, Pool: pool, Binary: bin, Log: log})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	defer d.Teardown(context.Background())
	if _, err := d.StartKafka(ctx, KafkaRelease{Version: kafka.Version, File: kafka.Path, SHA512: kafka.SHA512, Heap: "384m",
		JVMFlags: "-XX:+UseSerialGC -XX:TieredStopAtLevel=1", ReadyTimeout: 2 * time.Minute}, KafkaSecurity{}); err != nil {
		t.Fatalf("%v\nserver logs:\n%s", err, serverLogs(d))
	}
	k := &targetfile.Kroxylicious{Version: rel.Version, URL: rel.Path, SHA512: rel.SHA512, Java: "openjdk-17-jre-headless", KMS: targetfile.KMSInMemory}
	dir := t.TempDir()
	targetPath := filepath.Join(dir, "target.yaml")
	gw := d.hosts["gateway-1"]

	// The port the first gateway takes is already taken: Kroxylicious
	// exits at start-up and the deploy says so with its log's end.
	t.Run("port taken", func(t *testing.T) {
		squat := fmt.Sprintf(`%s agent start --dir %s --name squatter --wait-tcp %s -- python3 -c 'import socket,time; s=socket.socket(); s.bind(("%s", %d)); s.listen(); time.sleep(300)'`,
			ssh.Quote(gw.xp), ssh.Quote(gw.dir), net.JoinHostPort(gwAddr, fmt.Sprint(GatewayPortBase)), gwAddr, GatewayPortBase)
		if out, err := gw.c.Output(ctx, squat); err != nil {
			t.Fatalf("%v: %s", err, out)
		}
		defer gw.c.Output(ctx, fmt.Sprintf("%s agent stop --dir %s squatter", ssh.Quote(gw.xp), ssh.Quote(gw.dir)))
		_, err := d.StartKroxylicious(ctx, k, targetPath, []GatewaySpec{{Key: "proxy", Security: "proxy", Transport: "tls"}}, 1)
		for _, w := range []string{"host gateway-1", "kroxylicious gateway gateway-proxy-0", "exited before it was ready", "Address already in use"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error lacks %q:\n%v", w, err)
			}
		}
	})

	specs := []GatewaySpec{{Key: "proxy", Security: "proxy", Transport: "tls"}, {Key: "encrypt", Security: "encrypt", Transport: "tls"}}
	modes, err := d.StartKroxylicious(ctx, k, targetPath, specs, 1)
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	for i, s := range specs {
		if m := modes[s.Key]; strings.Join(m.Bootstrap, ",") != net.JoinHostPort(gwAddr, fmt.Sprint(GatewayPortBase+100*i)) {
			t.Errorf("mode %s: bootstrap %q, want the gateway host's slot %d", s.Key, m.Bootstrap, i)
		}
		checkThrough(ctx, t, d, s.Key, s.Security == "encrypt")
	}
	// The release was uploaded once, installed once, and the config holds
	// the KEK: 0600.
	out, err := gw.c.Output(ctx, "stat -c '%a %n' "+ssh.Quote(gw.dir)+"/gateway/*.kroxylicious.yaml "+ssh.Quote(gw.dir)+"/kroxylicious/"+filepath.Base(rel.Path))
	if err != nil || strings.Count(string(out), "600 ") != 3 {
		t.Errorf("files on the gateway host: %s %v", out, err)
	}
	// The brokers stay; the gateways go, to make room for the next kind.
	if out, err := gw.c.Output(ctx, fmt.Sprintf("%s agent stop --dir %s gateway-proxy-0 gateway-encrypt-0", ssh.Quote(gw.xp), ssh.Quote(gw.dir))); err != nil {
		t.Fatalf("%v: %s", err, out)
	}

	// gateway_kind command: the same release as an operator's gateway.
	kek, err := kroxylicious.NewKEK("KEK-ops")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := strings.NewReplacer("KEK_UUID", kek.UUID, "KEK_KEY", base64.StdEncoding.EncodeToString(kek.Key)).Replace(kroxyCommandTemplate)
	config := filepath.Join(dir, "kroxylicious.yaml.tmpl")
	if err := os.WriteFile(config, []byte(tmpl), 0o600); err != nil {
		t.Fatal(err)
	}
	c := &targetfile.GatewayCommand{Start: strings.ReplaceAll(kroxyCommandStart, "RELEASE", filepath.Base(rel.Path)), StartLine: 3, Config: config,
		Files: []string{rel.Path}, Ready: targetfile.ReadyKafka, ReadyTimeout: 3 * time.Minute, Modes: []string{"proxy", "encrypt"}}
	if err := CheckCommand(c, targetPath); err != nil {
		t.Fatal(err)
	}
	if _, err := d.StartCommandGateways(ctx, c, targetPath, specs[1:], 1); err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	checkThrough(ctx, t, d, "encrypt", true)
	if err := d.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range n.Hosts {
		waitNoXP(t, h)
	}
}

// checkThrough runs a short load through mode (the load generator checks
// every record it reads back against the digest it wrote) keeping its
// topic, then reads the topic straight from the broker: with encrypted,
// every record's value must differ from what was produced (its digest no
// longer matches) and carry Kroxylicious's encryption header; without,
// every record must be as produced.
func checkThrough(ctx context.Context, t *testing.T, d *Deployment, mode string, encrypted bool) {
	t.Helper()
	topic := "kx-" + strings.ReplaceAll(mode, ".", "-") + fmt.Sprint(time.Now().UnixNano()%1e6)
	res, _, err := d.RunLoad(ctx, Load{Mode: mode, Rate: 200, Timeout: 2 * time.Minute,
		Flags: []string{"--message-size", "256", "--warmup", "1s", "--duration", "2s", "--drain-timeout", "20s", "--partitions", "2", "--topic", topic, "--keep-topic"}})
	if err != nil || !res.Healthy || res.Published < 300 {
		t.Fatalf("%s through kroxylicious: %v (healthy %v %v, published %d)", mode, err, res.Healthy, res.Reasons, res.Published)
	}
	cl, err := kgo.NewClient(kgo.SeedBrokers(d.modes["plaintext"].Bootstrap...), kgo.ConsumeTopics(topic),
		kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
	if err != nil {
		t.Fatal(err)
	}
	defer cl.Close()
	rctx, cancel := context.WithTimeout(ctx, 30*time.Second)
	defer cancel()
	var seen, changed, marked int64
	for seen < res.Published && rctx.Err() == nil {
		fs := cl.PollFetches(rctx)
		fs.EachRecord(func(r *kgo.Record) {
			seen++
			var digest []byte
			for _, h := range r.Headers {
				switch h.Key {
				case loadgen.HeaderDigest:
					digest = h.Value
				case "kroxylicious.io/encryption":
					marked++
				}
			}
			if len(digest) != 8 || binary.BigEndian.Uint64(digest) != loadgen.Digest(r.Key, r.Value) {
				changed++
			}
		})
	}
	if seen < res.Published {
		t.Fatalf("%s: read %d records of %s from the broker, %d were published", mode, seen, topic, res.Published)
	}
	if encrypted && (changed != seen || marked != seen) || !encrypted && (changed != 0 || marked != 0) {
		t.Errorf("%s: of %d records on the broker, %d differ from what was produced and %d carry the encryption header (want all of them encrypted: %v)",
			mode, seen, changed, marked, encrypted)
	}
}
