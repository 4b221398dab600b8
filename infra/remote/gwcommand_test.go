package remote

import (
	"context"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
)

// xpGatewayTemplate is a config template in `xp gateway`'s format, as an
// operator would write for a gateway xp does not know: the command kind
// treats xp's own gateway as an opaque user command. Metrics listen on the
// gateway's last port, so the test can read what went through it.
const xpGatewayTemplate = `# rendered by xp for {{.Service}} ({{.Mode}}, {{.Brokers}} broker(s))
listen:
  host: {{.Host}}
  bootstrap_port: {{.Port}}
  node_port_base: {{.NodePortBase}}
client:
  transport: {{.Transport}}
  cert: {{.Cert}}
  key: {{.Key}}
upstream:
  bootstrap: [{{join .Upstream ", "}}]
  transport: tls
  ca: {{.CA}}
metrics:
  listen: {{.Host}}:{{add .Port 99}}
crypto: {{.Crypto}}
{{- if ne .Mode "proxy"}}
encrypt:
  vault: {{.Files.Path "vault.keys"}}
  create_vault: false
  topics:
    - pattern: '*'
      mode: {{.Mode}}
  {{- if eq .Mode "field_encrypt"}}
      encoding: {{.Encoding}}
      fields: [{{join .Fields ", "}}]
      avro_schema: {{.SchemaDir}}/record.avsc
  {{- end}}
{{- end}}
`

// TestCheckCommand: the command kind's templates are checked before
// anything is provisioned; a template error names its file and line.
func TestCheckCommand(t *testing.T) {
	dir := t.TempDir()
	targetPath := filepath.Join(dir, "target.yaml")
	write := func(name, text string) string {
		p := filepath.Join(dir, name)
		if err := os.WriteFile(p, []byte(text), 0o600); err != nil {
			t.Fatal(err)
		}
		return p
	}
	good := write("good.yaml.tmpl", xpGatewayTemplate)
	tests := []struct {
		name   string
		start  string
		config string
		want   []string // error substrings; nil = fine
	}{
		{name: "xp gateway as a user command", start: "exec {{.XP}} gateway --config {{quote .Config}}", config: good},
		{name: "no config", start: "exec /opt/gw/bin/run --listen {{.Listen}} --upstream {{join .Upstream \",\"}}"},
		{name: "unknown field in the config", start: "run", config: write("lisen.tmpl", "a: 1\nb: 2\nlisten: {{.Lisen}}\n"),
			want: []string{filepath.Join(dir, "lisen.tmpl") + ":3:", `can't evaluate field Lisen`}},
		{name: "unknown function in the config", start: "run", config: write("fn.tmpl", "x: {{upper .Host}}\n"),
			want: []string{filepath.Join(dir, "fn.tmpl") + ":1:", `function "upper" not defined`}},
		{name: "missing file key", start: "run", config: write("files.tmpl", "\nvault: {{.Files.Path \"vault.keys\"}}\n"),
			want: []string{filepath.Join(dir, "files.tmpl") + ":2:", `no file "vault.keys" among gateway.command.files`}},
		{name: "unknown field in start", start: "run --port {{.ListenPort}}", want: []string{targetPath + ":4 gateway.command.start:1:", "ListenPort"}},
		{name: "start does not parse", start: "run {{.Port", want: []string{targetPath + ":4 gateway.command.start:1:", "unclosed action"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			err := CheckCommand(&targetfile.GatewayCommand{Start: tc.start, StartLine: 4, Config: tc.config, Modes: []string{"proxy"}}, targetPath)
			if tc.want == nil {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			if err == nil {
				t.Fatal("no error")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error %q lacks %q", err, w)
				}
			}
		})
	}
}

// TestCommandGatewayOnNamespaceHosts runs gateway_kind command for real on
// namespace hosts (a broker, a gateway and a client host, each with its own
// sshd): the command is `xp gateway`, started from a config template in
// its format and a start line, as any operator's gateway would be. proxy,
// encrypt and field_encrypt (of Avro records, with the schemas xp uploads)
// loads go through the gateway host (the client config's
// bootstrap is there, and the gateway's own metrics count the records); a
// command that exits at once and one that never serves fail the deploy
// with what the operator needs: host, service, the log's end. A
// kroxylicious group gets as far as the host's install script, which
// refuses a release with the wrong checksum.
func TestCommandGatewayOnNamespaceHosts(t *testing.T) {
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
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	d, err := Deploy(ctx, Options{Campaign: "c1", Hosts: hosts, Pool: pool, Binary: bin, Log: log})
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	defer d.Teardown(context.Background())
	if _, err := d.StartEmbedded(ctx, 1); err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}

	dir := t.TempDir()
	targetPath := filepath.Join(dir, "target.yaml")
	config := filepath.Join(dir, "xp-gateway.yaml.tmpl")
	if err := os.WriteFile(config, []byte(xpGatewayTemplate), 0o600); err != nil {
		t.Fatal(err)
	}
	vault := filepath.Join(dir, "vault.keys")
	if err := envelope.AddKey(vault, "k1"); err != nil {
		t.Fatal(err)
	}
	proxy := []GatewaySpec{{Key: "proxy", Security: "proxy", Transport: "tls"}}

	sad := []struct {
		name  string
		start string
		ready time.Duration
		want  []string
	}{
		{name: "exits at once", start: "echo 'gw: cannot bind {{.Listen}}' >&2; exit 3", ready: 20 * time.Second,
			want: []string{"host gateway-1", "command gateway gateway-proxy-0", "exited before it was ready", "gw: cannot bind " + gwAddr + ":19192"}},
		{name: "never ready", start: "echo 'gw: waiting for a licence'; exec sleep 60", ready: 2 * time.Second,
			want: []string{"host gateway-1", "gateway-proxy-0 not ready after 2s", "no Kafka ApiVersions answer on " + gwAddr + ":19192", "waiting for a licence"}},
	}
	for _, tc := range sad {
		t.Run(tc.name, func(t *testing.T) {
			c := &targetfile.GatewayCommand{Start: tc.start, StartLine: 3, Ready: targetfile.ReadyKafka, ReadyTimeout: tc.ready, Modes: []string{"proxy"}}
			_, err := d.StartCommandGateways(ctx, c, targetPath, proxy, 1)
			if err == nil {
				t.Fatal("the deploy succeeded")
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("error lacks %q:\n%v", w, err)
				}
			}
		})
	}
	// gateway_kind kroxylicious reaches the gateway host's install script,
	// which refuses a release whose checksum is not the target file's
	// (served by the test on the bridge's address in the root namespace).
	t.Run("kroxylicious release with the wrong checksum", func(t *testing.T) {
		ln, err := net.Listen("tcp", net.JoinHostPort(n.Gateway, "0"))
		if err != nil {
			t.Fatal(err)
		}
		srv := &http.Server{Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) { w.Write([]byte("not the release")) })}
		go srv.Serve(ln)
		defer srv.Shutdown(context.Background())
		k := &targetfile.Kroxylicious{Version: "0.13.0", URL: "http://" + ln.Addr().String() + "/kroxylicious-app-0.13.0-bin.tar.gz",
			SHA512: testKroxySHA, Java: "openjdk-21-jre-headless"}
		_, err = d.StartKroxylicious(ctx, k, targetPath, proxy, 1)
		for _, w := range []string{"host gateway-1", "installing kroxylicious", "does not match the sha512 of the target file"} {
			if err == nil || !strings.Contains(err.Error(), w) {
				t.Errorf("error lacks %q:\n%v", w, err)
			}
		}
	})
	// Nothing failed left a gateway running.
	if out, err := d.hosts["gateway-1"].c.Output(ctx, fmt.Sprintf("%s agent status --dir %s", ssh.Quote(d.hosts["gateway-1"].xp), ssh.Quote(d.hosts["gateway-1"].dir))); err != nil || strings.Contains(string(out), `"running":true`) {
		t.Fatalf("services on the gateway host after the failed starts: %s %v", out, err)
	}

	c := &targetfile.GatewayCommand{Start: "exec {{.XP}} gateway --config {{quote .Config}}", StartLine: 3, Config: config, Files: []string{vault},
		Ready: targetfile.ReadyKafka, ReadyTimeout: 30 * time.Second, Modes: []string{"proxy", "encrypt", "field_encrypt"}}
	if err := CheckCommand(c, targetPath); err != nil {
		t.Fatal(err)
	}
	specs := []GatewaySpec{{Key: "encrypt", Security: "encrypt", Transport: "tls"},
		{Key: "field_encrypt.avro", Security: "field_encrypt", Transport: "tls", Encoding: "avro"},
		{Key: "proxy", Security: "proxy", Transport: "tls"}}
	modes, err := d.StartCommandGateways(ctx, c, targetPath, specs, 1)
	if err != nil {
		t.Fatalf("%v\nlog:\n%s", err, log.String())
	}
	// The host's slots in the specs' order.
	wantPort := map[string]int{"encrypt": GatewayPortBase, "field_encrypt.avro": GatewayPortBase + 100, "proxy": GatewayPortBase + 200}
	for key, port := range wantPort {
		m := modes[key]
		if strings.Join(m.Bootstrap, ",") != gwAddr+":"+strconv.Itoa(port) || m.Upstream == nil || m.Crypto != nil {
			t.Errorf("mode %s: %+v, want bootstrap %s:%d fronting the tls mode", key, m, gwAddr, port)
		}
	}
	produced := regexp.MustCompile(`(?m)^xp_gateway_request_bytes_total\{api_key="0",api="Produce"\} (\d+)$`)
	for key, port := range wantPort {
		flags := []string{"--message-size", "128", "--warmup", "1s", "--duration", "1s", "--drain-timeout", "10s", "--partitions", "2"}
		if key == "field_encrypt.avro" {
			flags = append(flags, "--encoding", "avro")
		}
		res, _, err := d.RunLoad(ctx, Load{Mode: key, Rate: 300, Timeout: time.Minute, Flags: flags})
		if err != nil || !res.Healthy || res.Published < 200 {
			t.Fatalf("%s through the command gateway: %v (healthy %v %v, published %d)", key, err, res.Healthy, res.Reasons, res.Published)
		}
		resp, err := http.Get(fmt.Sprintf("http://%s:%d/metrics", gwAddr, port+99))
		if err != nil {
			t.Fatal(err)
		}
		text, _ := io.ReadAll(resp.Body)
		resp.Body.Close()
		m := produced.FindStringSubmatch(string(text))
		if m == nil {
			t.Fatalf("%s: the gateway's metrics count no Produce:\n%s", key, text)
		}
		if bytes, _ := strconv.ParseInt(m[1], 10, 64); bytes < res.Published*128 {
			t.Errorf("%s: the gateway relayed %d Produce bytes for %d records of 128 bytes", key, bytes, res.Published)
		}
	}
	// The config was uploaded 0600 beside the vault, in the gateway's own
	// directory.
	gw := d.hosts["gateway-1"]
	out, err := gw.c.Output(ctx, "stat -c '%a %n' "+ssh.Quote(gw.dir)+"/gateway/gateway-proxy-0/*")
	if err != nil || !strings.Contains(string(out), "600 "+gw.dir+"/gateway/gateway-proxy-0/xp-gateway.yaml\n") ||
		!strings.Contains(string(out), "600 "+gw.dir+"/gateway/gateway-proxy-0/vault.keys\n") {
		t.Errorf("files of the gateway: %s %v", out, err)
	}
	if err := d.Teardown(ctx); err != nil {
		t.Fatal(err)
	}
	for _, h := range n.Hosts {
		waitNoXP(t, h)
	}
}

// TestOpenerChecksCommandTemplates: opening a hosts target whose command
// gateway's config template names an unknown field fails at once (before
// anything is provisioned), naming the template's file and line.
func TestOpenerChecksCommandTemplates(t *testing.T) {
	dir := t.TempDir()
	if err := os.WriteFile(filepath.Join(dir, "gw.yaml.tmpl"), []byte("listen: {{.Listen}}\nupstream: {{.Upsteam}}\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	path := filepath.Join(dir, "target.yaml")
	text := "platform: hosts\nkafka: {distribution: embedded}\ngateway:\n  command:\n    start: run-gw\n    config: gw.yaml.tmpl\n    modes: [proxy]\n"
	_, err := Opener(OpenOptions{Getenv: os.Getenv})(target.Config{Platform: "hosts", Path: path, Text: []byte(text), DB: filepath.Join(dir, "c.db"), Campaign: "c1"})
	if err == nil || !strings.Contains(err.Error(), filepath.Join(dir, "gw.yaml.tmpl")+":2:") || !strings.Contains(err.Error(), "Upsteam") {
		t.Fatalf("opening the target: %v", err)
	}
}
