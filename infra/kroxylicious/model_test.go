package kroxylicious

import (
	"fmt"
	"net"
	"net/url"
	"os"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

// kroxyModel is testdata/config-model.txt: Kroxylicious's
// config records (their Jackson property names) at the release it names.
type kroxyModel struct {
	records map[string]map[string]kroxyField
	unions  map[string][]string
	enums   map[string][]string
	plugins map[string]string
	opaque  map[string]bool
}

type kroxyField struct {
	typ      string
	required bool
}

func loadKroxyModel(t *testing.T) *kroxyModel {
	t.Helper()
	b, err := os.ReadFile("testdata/config-model.txt")
	if err != nil {
		t.Fatal(err)
	}
	m := &kroxyModel{records: map[string]map[string]kroxyField{}, unions: map[string][]string{},
		enums: map[string][]string{}, plugins: map[string]string{}, opaque: map[string]bool{}}
	for i, line := range strings.Split(string(b), "\n") {
		f := strings.Fields(line)
		if len(f) == 0 || strings.HasPrefix(f[0], "#") {
			continue
		}
		bad := func() { t.Fatalf("config-model.txt:%d: %q", i+1, line) }
		if len(f) < 2 {
			bad()
		}
		switch f[0] {
		case "record":
			fields := map[string]kroxyField{}
			for _, kv := range f[2:] {
				k, typ, ok := strings.Cut(kv, ":")
				if !ok {
					bad()
				}
				name, req := strings.CutSuffix(k, "!")
				fields[name] = kroxyField{typ: typ, required: req}
			}
			m.records[f[1]] = fields
		case "union":
			m.unions[f[1]] = f[2:]
		case "enum":
			m.enums[f[1]] = f[2:]
		case "plugin":
			if len(f) != 3 {
				bad()
			}
			m.plugins[f[1]] = f[2]
		case "opaque":
			for _, n := range f[1:] {
				m.opaque[n] = true
			}
		default:
			bad()
		}
	}
	// Every type a field names is defined.
	for r, fields := range m.records {
		for k, fl := range fields {
			typ := strings.TrimPrefix(fl.typ, "[]")
			if !m.known(typ) {
				t.Fatalf("config-model.txt: %s.%s: type %s is not defined", r, k, typ)
			}
		}
	}
	return m
}

func (m *kroxyModel) known(typ string) bool {
	switch typ {
	case "string", "int", "bool", "hostport", "uri", "any":
		return true
	}
	_, r := m.records[typ]
	_, u := m.unions[typ]
	_, e := m.enums[typ]
	return r || u || e || m.opaque[typ] || strings.HasPrefix(typ, "@")
}

// check returns what in v (at path) the model does not allow as typ;
// parent is the map v is a value of (for a plugin config's @KEY).
func (m *kroxyModel) check(v any, typ, path string, parent map[string]any) []string {
	bad := func(format string, a ...any) []string { return []string{path + ": " + fmt.Sprintf(format, a...)} }
	if elem, ok := strings.CutPrefix(typ, "[]"); ok {
		list, ok := v.([]any)
		if !ok {
			return bad("want a list of %s, got %T", elem, v)
		}
		var errs []string
		for i, e := range list {
			errs = append(errs, m.check(e, elem, fmt.Sprintf("%s[%d]", path, i), nil)...)
		}
		return errs
	}
	if key, ok := strings.CutPrefix(typ, "@"); ok {
		name, _ := parent[key].(string)
		rec, ok := m.plugins[name]
		if !ok {
			return bad("config of plugin %q (named by %s), which the model does not list", name, key)
		}
		return m.check(v, rec, path, nil)
	}
	switch typ {
	case "any":
		return nil
	case "string":
		if _, ok := v.(string); !ok {
			return bad("want a string, got %T", v)
		}
		return nil
	case "int":
		if _, ok := v.(int); !ok {
			return bad("want an integer, got %T", v)
		}
		return nil
	case "bool":
		if _, ok := v.(bool); !ok {
			return bad("want true or false, got %T", v)
		}
		return nil
	case "hostport":
		s, _ := v.(string)
		if _, p, err := net.SplitHostPort(s); err != nil {
			return bad("want HOST:PORT, got %v", v)
		} else if n, err := strconv.Atoi(p); err != nil || n < 1 || n > 65535 {
			return bad("port %q", p)
		}
		return nil
	case "uri":
		s, _ := v.(string)
		if u, err := url.Parse(s); err != nil || u.Scheme == "" || u.Host == "" {
			return bad("want an absolute URI, got %v", v)
		}
		return nil
	}
	if vals, ok := m.enums[typ]; ok {
		if s, _ := v.(string); !slices.Contains(vals, s) {
			return bad("%v is not one of %s's %s", v, typ, strings.Join(vals, ", "))
		}
		return nil
	}
	if alts, ok := m.unions[typ]; ok {
		var fits []string
		for _, a := range alts {
			if len(m.check(v, a, path, parent)) == 0 {
				fits = append(fits, a)
			}
		}
		if len(fits) != 1 {
			return bad("fits %d of %s's alternatives %s (%v)", len(fits), typ, strings.Join(alts, ", "), fits)
		}
		return nil
	}
	if m.opaque[typ] {
		return bad("xp renders a %s, which the model does not list: read its record into config-model.txt first", typ)
	}
	fields := m.records[typ]
	obj, ok := v.(map[string]any)
	if !ok {
		return bad("want a %s (a mapping), got %T", typ, v)
	}
	var errs []string
	keys := make([]string, 0, len(obj))
	for k := range obj {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, k := range keys {
		f, ok := fields[k]
		if !ok {
			errs = append(errs, fmt.Sprintf("%s.%s: %s has no such property", path, k, typ))
			continue
		}
		errs = append(errs, m.check(obj[k], f.typ, path+"."+k, obj)...)
	}
	for k, f := range fields {
		if _, ok := obj[k]; f.required && !ok {
			errs = append(errs, fmt.Sprintf("%s: %s requires %s", path, typ, k))
		}
	}
	return errs
}

// TestKroxyliciousConfigModel: every config xp renders, for each mode,
// transport and config form, uses only keys, types and values that
// Kroxylicious's config records define (config-model.txt, read from its
// source at the release it names), with every required key present; and
// the checker refuses what the proxy would refuse.
func TestKroxyliciousConfigModel(t *testing.T) {
	m := loadKroxyModel(t)
	for _, version := range []string{"0.23.0", "0.21.0", "0.11.0"} {
		for _, mode := range []string{"proxy", "encrypt", "encrypt-inmemory"} {
			for _, transport := range []string{"plaintext", "tls", "mtls", "sasl_ssl"} {
				name := fmt.Sprintf("%s/%s/%s", version, mode, transport)
				t.Run(name, func(t *testing.T) {
					s := kroxySetup(mode, transport, 3)
					if mode == "encrypt-inmemory" {
						s = kroxySetup("encrypt", transport, 3)
						s.KMS = KMS{InMemory: testInMemory()}
					}
					s.Version = version
					b, err := Config(s)
					if err != nil {
						t.Fatal(err)
					}
					var cfg any
					if err := yaml.Unmarshal(b, &cfg); err != nil {
						t.Fatal(err)
					}
					if errs := m.check(cfg, "Configuration", "config", nil); len(errs) > 0 {
						t.Errorf("not in Kroxylicious's config model:\n%s\n%s", strings.Join(errs, "\n"), b)
					}
				})
			}
		}
	}
	sad := []struct {
		name, yaml, want string
	}{
		{"unknown top-level key", "virtualClusters: []\nadminHttp: {}\n", "config.adminHttp: Configuration has no such property"},
		{"virtual clusters as a map", "virtualClusters: {demo: {}}\n", "want a list of VirtualCluster"},
		{"no gateways", "virtualClusters: [{name: a, targetCluster: {bootstrapServers: 'h:1'}}]\n", "VirtualCluster requires gateways"},
		{"bad client auth", "virtualClusters: [{name: a, gateways: [{name: g, tls: {trust: {storeFile: f, trustOptions: {clientAuth: YES}}}}]}]\n", "fits 0 of TrustProvider"},
		{"bad key policy", "filterDefinitions: [{name: e, type: RecordEncryption, config: {kms: VaultKmsService, selector: TemplateKekSelector, unresolvedKeyPolicy: DROP}}]\nvirtualClusters: []\n", "DROP is not one of UnresolvedKeyPolicy"},
		{"unknown kms key", "filterDefinitions: [{name: e, type: RecordEncryption, config: {kms: VaultKmsService, kmsConfig: {vaultTransitEngineUrl: 'http://v:8200/v1/transit', vaultToken: {passwordFile: f}, token: x}, selector: TemplateKekSelector}}]\nvirtualClusters: []\n", "kmsConfig.token: VaultConfig has no such property"},
		{"unknown plugin", "filterDefinitions: [{name: e, type: Upper, config: {}}]\nvirtualClusters: []\n", `config of plugin "Upper"`},
		{"bootstrap without port", "virtualClusters: [{name: a, gateways: [{name: g, portIdentifiesNode: {bootstrapAddress: h}}]}]\n", "want HOST:PORT"},
	}
	for _, tc := range sad {
		t.Run(tc.name, func(t *testing.T) {
			var cfg any
			if err := yaml.Unmarshal([]byte(tc.yaml), &cfg); err != nil {
				t.Fatal(err)
			}
			errs := strings.Join(m.check(cfg, "Configuration", "config", nil), "\n")
			if !strings.Contains(errs, tc.want) {
				t.Errorf("got %q, want %q", errs, tc.want)
			}
		})
	}
}
