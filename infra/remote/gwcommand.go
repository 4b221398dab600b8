package remote

import (
	"bytes"
	"context"
	"fmt"
	"net"
	"os"
	"path"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"text/template"
	"time"

	"github.com/xp-bench/xp/infra/endpoint"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
)

// GatewayPortBase is the first port xp gives a command or Kroxylicious
// gateway: the Slot-th gateway of a host gets the 100 ports from
// GatewayPortBase + 100*Slot (its bootstrap port, then one per broker;
// Kroxylicious's management endpoint on the last, on loopback).
const GatewayPortBase = 19192

// CommandData is what the templates of a command gateway (gateway.command
// start and config in the TARGET.yaml) are given, one gateway at a time.
type CommandData struct {
	// Host is the gateway host's private address: listen on it and
	// advertise it.
	Host string
	// Port is the bootstrap port xp chose for this gateway; Listen is
	// Host:Port, the address clients bootstrap from.
	Port   int
	Listen string
	// NodePortBase is Port+1: a gateway with a port per broker puts the
	// broker of node id N on NodePortBase+N. Ports up to Port+99 are this
	// gateway's.
	NodePortBase int
	// Brokers is the number of brokers of the cluster, their node ids
	// FirstNodeID, FirstNodeID+1, ...
	Brokers, FirstNodeID int
	// Upstream is the bootstrap list (host:port) of the direct mode
	// fronted; Transport that mode: plaintext, tls, mtls or sasl_ssl. The
	// gateway serves its clients over the same transport.
	Upstream  []string
	Transport string
	// CA, Cert and Key are paths on the gateway host: the cluster's CA
	// (verifies the brokers and, for mtls, the clients) and the gateway's
	// certificate for Host and its key (server, and client for mtls).
	CA, Cert, Key string
	// Mode is the gateway mode (proxy, encrypt, field_encrypt), ModeKey
	// the row's mode key (e.g. encrypt.fast) and Service the agent's
	// service name of this gateway.
	Mode, ModeKey, Service string
	// Encoding and Fields: field_encrypt's record encoding and the fields
	// it encrypts; SchemaDir, for avro and protobuf records, the directory
	// on the host holding the load generator's schemas (record.avsc, the
	// descriptor set record.pb, record.proto), else "".
	Encoding  string
	Fields    []string
	SchemaDir string
	// Crypto is the row's gateway_crypto (std or fast).
	Crypto string
	// Dir is this gateway's directory on the host (its config and files
	// are there; the command runs in CampaignDir, the host's campaign
	// directory).
	Dir, CampaignDir string
	// Config is the path of the rendered config on the host ("" without
	// gateway.command.config); Files maps the base name of each of
	// gateway.command.files to its path on the host: {{.Files.Path
	// "vault.keys"}} (an error for a name not among them).
	Config string
	Files  Files
	// XP is the xp binary on the host.
	XP string
}

// Files maps the base names of a command gateway's extra files to their
// paths on the gateway host.
type Files map[string]string

// Path is the path on the host of the file named name; a name not among
// gateway.command.files is an error.
func (f Files) Path(name string) (string, error) {
	p, ok := f[name]
	if !ok {
		names := make([]string, 0, len(f))
		for n := range f {
			names = append(names, n)
		}
		slices.Sort(names)
		return "", fmt.Errorf("no file %q among gateway.command.files (%s)", name, strings.Join(names, ", "))
	}
	return p, nil
}

// commandFuncs are the functions the templates may call besides text/template's own.
var commandFuncs = template.FuncMap{
	"join":  strings.Join,
	"quote": ssh.Quote,
	"add":   func(a, b int) int { return a + b },
}

// commandTemplates are a command gateway's parsed templates.
type commandTemplates struct {
	start, config *template.Template
}

// parseCommand parses the templates of c; errors name the file and line.
func parseCommand(c *targetfile.GatewayCommand, targetPath string) (*commandTemplates, error) {
	var t commandTemplates
	var err error
	t.start, err = template.New(fmt.Sprintf("%s:%d gateway.command.start", targetPath, c.StartLine)).
		Option("missingkey=error").Funcs(commandFuncs).Parse(c.Start)
	if err != nil {
		return nil, err
	}
	if c.Config != "" {
		text, err := os.ReadFile(c.Config)
		if err != nil {
			return nil, fmt.Errorf("gateway.command.config: %w", err)
		}
		if t.config, err = template.New(c.Config).Option("missingkey=error").Funcs(commandFuncs).Parse(string(text)); err != nil {
			return nil, err
		}
	}
	return &t, nil
}

// render executes the templates with data: the config (nil without one)
// and the start command line.
func (t *commandTemplates) render(data CommandData) (config []byte, start string, err error) {
	var b bytes.Buffer
	if t.config != nil {
		if err := t.config.Execute(&b, data); err != nil {
			return nil, "", err
		}
		config = bytes.Clone(b.Bytes())
		b.Reset()
	}
	if err := t.start.Execute(&b, data); err != nil {
		return nil, "", err
	}
	return config, strings.TrimSpace(b.String()), nil
}

// CheckCommand renders the templates of c once with example data, so that
// a template that names an unknown field or function fails before anything
// is provisioned, naming the template's file and line.
func CheckCommand(c *targetfile.GatewayCommand, targetPath string) error {
	t, err := parseCommand(c, targetPath)
	if err != nil {
		return err
	}
	files := Files{}
	for _, f := range c.Files {
		files[filepath.Base(f)] = "/home/xp/xp/campaign/gateway-0/gateway/gateway-proxy-0/" + filepath.Base(f)
	}
	_, _, err = t.render(CommandData{Host: "198.18.0.2", Port: GatewayPortBase, Listen: "198.18.0.2:" + strconv.Itoa(GatewayPortBase),
		NodePortBase: GatewayPortBase + 1, Brokers: 3, Upstream: []string{"198.18.0.1:9093", "198.18.0.3:9093"}, Transport: planner.SecurityTLS,
		CA: "/p/ca.pem", Cert: "/p/gateway.pem", Key: "/p/gateway-key.pem", Mode: planner.SecurityProxy, ModeKey: planner.SecurityProxy,
		Service: "gateway-proxy-0", Encoding: "avro", Fields: []string{"ssn"}, SchemaDir: "/d/schema", Crypto: planner.GatewayCryptoStd, Dir: "/d", CampaignDir: "/c",
		Config: "/d/gateway.conf", Files: files, XP: "/c/bin/xp"})
	return err
}

// StartCommandGateways runs the operator's gateway (gateway_kind command)
// on the gateway hosts for every spec, count per mode, placed and given
// TLS material as the builtin gateway is (startGateways). For each, the
// config template is rendered with CommandData and uploaded 0600 with the
// extra files into the gateway's directory, the start command line is
// rendered and started by sh under the agent (so teardown and xp infra
// down stop it), and xp waits until the gateway answers on its port
// (c.Ready, within c.ReadyTimeout). A gateway that exits or is not ready
// in time fails the deploy with the end of its log, naming host and
// service.
func (d *Deployment) StartCommandGateways(ctx context.Context, c *targetfile.GatewayCommand, targetPath string, specs []GatewaySpec, count int) (map[string]endpoint.Endpoint, error) {
	if c == nil {
		return nil, fmt.Errorf("%s: gateway_kind command: no gateway.command section", targetPath)
	}
	for _, s := range specs {
		if !slices.Contains(c.Modes, s.Security) {
			return nil, fmt.Errorf("%s: gateway_kind command implements %s, not %s (mode %s): add it to gateway.command.modes or run these rows with gateway_kind builtin",
				targetPath, strings.Join(c.Modes, ", "), s.Security, s.Key)
		}
	}
	t, err := parseCommand(c, targetPath)
	if err != nil {
		return nil, err
	}
	files := map[string][]byte{}
	for _, f := range c.Files {
		if files[filepath.Base(f)], err = os.ReadFile(f); err != nil {
			return nil, fmt.Errorf("gateway.command.files: %w", err)
		}
	}
	configName := "gateway.conf"
	if c.Config != "" {
		configName = strings.TrimSuffix(filepath.Base(c.Config), ".tmpl")
	}
	return d.startGateways(ctx, specs, count, func(ctx context.Context, h *deployed, in gatewayInstance) (gatewayStarted, error) {
		s := in.Spec
		port := GatewayPortBase + 100*in.Slot
		dir := path.Join(in.Dir, in.Service)
		data := CommandData{Host: h.Private, Port: port, Listen: net.JoinHostPort(h.Private, strconv.Itoa(port)), NodePortBase: port + 1,
			Brokers: d.brokers, FirstNodeID: d.firstNodeID, Upstream: in.Upstream, Transport: s.Transport, CA: in.TLS.CA, Cert: in.TLS.Cert, Key: in.TLS.Key,
			Mode: s.Security, ModeKey: s.Key, Service: in.Service, Encoding: s.Encoding, Fields: s.Fields, Crypto: s.Crypto,
			Dir: dir, CampaignDir: h.dir, Files: Files{}, XP: h.xp}
		if data.Crypto == "" {
			data.Crypto = planner.GatewayCryptoStd
		}
		if len(data.Fields) == 0 {
			data.Fields = slices.Clone(planner.DefaultEncryptFields)
		}
		if c.Config != "" {
			data.Config = path.Join(dir, configName)
		}
		for name := range files {
			data.Files[name] = path.Join(dir, name)
		}
		if needsSchema(s) {
			data.SchemaDir = path.Join(dir, "schema")
			if err := uploadSchemas(ctx, h, data.SchemaDir); err != nil {
				return gatewayStarted{}, err
			}
		}
		config, start, err := t.render(data)
		if err != nil {
			return gatewayStarted{}, err
		}
		if config != nil {
			if err := h.c.WriteFile(ctx, data.Config, config, 0o600); err != nil {
				return gatewayStarted{}, err
			}
		}
		for name, b := range files {
			if err := h.c.WriteFile(ctx, data.Files[name], b, 0o600); err != nil {
				return gatewayStarted{}, err
			}
		}
		wait := "--wait-kafka"
		if c.Ready == targetfile.ReadyTCP {
			wait = "--wait-tcp"
		}
		if err := startProbed(ctx, h, in.Service, c.ReadyTimeout, wait, data.Listen, probeTLSFlags(s.Transport, in.TLS), start); err != nil {
			return gatewayStarted{}, fmt.Errorf("command gateway %s (mode %s): %w", in.Service, s.Key, err)
		}
		fmt.Fprintf(d.o.Log, "remote: %s: command gateway %s serves on %s\n", h.Name, in.Service, data.Listen)
		return gatewayStarted{Bootstrap: data.Listen}, nil
	})
}

// startProbed starts the shell command line start (run by sh) as service
// on h under the agent, and returns once wait (--wait-kafka or --wait-tcp)
// sees addr serve, or with the end of its log when it exits first or
// timeout passes (then the agent has stopped it).
func startProbed(ctx context.Context, h *deployed, service string, timeout time.Duration, wait, addr string, tlsFlags []string, start string) error {
	args := []string{ssh.Quote(h.xp), "agent", "start", "--dir", ssh.Quote(h.dir), "--name", service,
		"--timeout", timeout.String(), wait, ssh.Quote(addr)}
	args = append(args, tlsFlags...)
	args = append(args, "--", "sh", "-c", ssh.Quote(start))
	// The agent's wait bounds the command, not SSH's default limit.
	ctx, cancel := context.WithTimeout(ctx, timeout+30*time.Second)
	defer cancel()
	_, err := h.c.Output(ctx, strings.Join(args, " "))
	return err
}

// probeTLSFlags are the agent's TLS flags to probe a gateway whose clients
// use transport: none for plaintext, the CA for tls and sasl_ssl, and the
// gateway's certificate as the client's for mtls.
func probeTLSFlags(transport string, t gatewayTLS) []string {
	switch transport {
	case planner.SecurityPlaintext:
		return nil
	case planner.SecurityMTLS:
		return []string{"--wait-tls-ca", ssh.Quote(t.CA), "--wait-tls-cert", ssh.Quote(t.Cert), "--wait-tls-key", ssh.Quote(t.Key)}
	default:
		return []string{"--wait-tls-ca", ssh.Quote(t.CA)}
	}
}
