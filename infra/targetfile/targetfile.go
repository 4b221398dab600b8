package targetfile

import (
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"net"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"time"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/release"
	"github.com/xp-bench/xp/internal/yamlcheck"
	"github.com/xp-bench/xp/terraform"
)

// Teardown policies: when a campaign's infrastructure is destroyed.
const (
	TeardownAlways    = "always"     // at the end, on a fatal error and on Ctrl-C (unless --keep)
	TeardownOnSuccess = "on-success" // only when every row is done; kept for inspection otherwise
	TeardownNever     = "never"      // left up; `xp infra down` destroys it
)

// Known-hosts policies.
const (
	KnownHostsAcceptNew = "accept-new" // a host's first key is recorded, a changed key refused
	KnownHostsStrict    = "strict"     // only keys already in known_hosts are accepted
)

// File is a parsed TARGET.yaml: where a campaign's infrastructure
// comes from and how it is reached.
type File struct {
	// Path is the file read, as given.
	Path     string
	Platform string
	// Module is the module as written ("" = the platform's built-in copy
	// of terraform/<platform>); ModuleDir the directory it resolves to.
	Module    string
	ModuleDir string
	// Vars are passed to the module beside the variables xp derives from
	// the plan's rows.
	Vars  map[string]any
	SSH   SSH
	Kafka Kafka
	// Gateway configures the gateway kinds other than builtin that rows
	// (gateway_kind) may ask for.
	Gateway Gateway
	// Teardown is TeardownAlways (default), TeardownOnSuccess or
	// TeardownNever.
	Teardown string
	// BudgetUSD stops the campaign when spending reaches it; 0 = no budget.
	BudgetUSD float64
	// Existing is the cluster of platform existing (nil for the others).
	Existing *Existing
}

// SSH is how xp logs in to the machines.
type SSH struct {
	// User overrides the module's ssh_user output.
	User string `json:"user,omitempty"`
	// PrivateKey is the path of the key (~ expanded); its .pub is the
	// module's ssh_public_key.
	PrivateKey string `json:"private_key,omitempty"`
	// KnownHosts is KnownHostsAcceptNew (default) or KnownHostsStrict.
	KnownHosts string `json:"known_hosts"`
	// Keepalive is how often xp asks each host for an answer; a host that
	// leaves three unanswered is taken for gone (its commands fail, the
	// next use dials again). Zero: ssh.Config's default, 5s.
	Keepalive time.Duration `json:"keepalive,omitempty"`
	// Wait is how long xp waits, after an apply, for every machine to
	// answer over SSH (machines still booting); zero: 5 minutes.
	Wait time.Duration `json:"wait,omitempty"`
}

// DistributionEmbedded is kafka.distribution for xp's embedded cluster.
const DistributionEmbedded = "embedded"

// Kafka is the Kafka the machines run: xp's embedded cluster
// (Distribution DistributionEmbedded), or Apache Kafka releases, one per version a
// row's kafka_version may ask for. The single-release form (version,
// distribution, sha512 at the top of kafka:) is Releases with one entry;
// Version, Distribution and SHA512 keep what that form wrote.
type Kafka struct {
	Version string `json:"version,omitempty"`
	// Distribution is the release tarball's URL, or "embedded" for xp's
	// own embedded cluster on test hosts.
	Distribution string `json:"distribution,omitempty"`
	// SHA512 is the tarball's checksum (hex), required with a URL.
	SHA512 string `json:"sha512,omitempty"`
	// Releases are the Apache Kafka releases, in file order (kafka.releases,
	// or the single-release form).
	Releases []KafkaRelease `json:"releases,omitempty"`
	// Heap and JVMFlags are the JVM settings of Apache Kafka's brokers and
	// controllers (kafka.heap, kafka.jvm_flags; see KafkaJVM).
	Heap     string `json:"heap,omitempty"`
	JVMFlags string `json:"jvm_flags,omitempty"`
	// Java is the java executable Apache Kafka's brokers run on (~
	// expanded, relative to the TARGET.yaml); "" for JAVA_HOME's or the
	// first on PATH. Platform local only (kafka.java).
	Java string `json:"java,omitempty"`
	// Line is the line of kafka: in the file (0 when not read from one).
	Line int `json:"-"`
	// Lines are the lines of kafka:'s keys (heap, jvm_flags, java, ...),
	// for errors found after the file is read.
	Lines map[string]int `json:"-"`
}

// Where is file:line of kafka's key (of kafka: when the key was not
// given), for errors about it found after the file was read.
func (k Kafka) Where(file, key string) string {
	if l := k.Lines[key]; l > 0 {
		return fmt.Sprintf("%s:%d", file, l)
	}
	if k.Line > 0 {
		return fmt.Sprintf("%s:%d", file, k.Line)
	}
	return file
}

// KafkaRelease is one Apache Kafka release tarball.
type KafkaRelease struct {
	Version string `json:"version"`
	// Distribution is the tarball's http(s) URL, or the absolute path of a
	// file on this machine (given relative to the TARGET.yaml or
	// absolute), which Read has checked against SHA512 and found
	// to hold a Kafka release of Version.
	Distribution string `json:"distribution"`
	SHA512       string `json:"sha512"`
	// Line is the release's line in the file.
	Line int `json:"-"`
}

// Local reports whether the release is a file on this machine (uploaded
// where hosts need it) rather than a URL the hosts download.
func (r KafkaRelease) Local() bool { return !isURL(r.Distribution) }

func isURL(s string) bool { return strings.HasPrefix(s, "https://") || strings.HasPrefix(s, "http://") }

// Embedded reports whether the machines run xp's embedded cluster.
func (k Kafka) Embedded() bool { return k.Distribution == DistributionEmbedded }

// Release returns the release of version.
func (k Kafka) Release(version string) (KafkaRelease, bool) {
	for _, r := range k.Releases {
		if r.Version == version {
			return r, true
		}
	}
	return KafkaRelease{}, false
}

// Versions lists the releases' versions in file order.
func (k Kafka) Versions() []string {
	var out []string
	for _, r := range k.Releases {
		out = append(out, r.Version)
	}
	return out
}

// CheckVersion says why a row asking for kafka_version cannot run on
// these machines, naming file, line and the fix; "" when it can. With the
// embedded cluster any version is accepted (kfake is no Apache Kafka
// release; the hosts record kfake and its version), and without a kafka:
// section the Deployer is what refuses.
func (k Kafka) CheckVersion(file, version string) string {
	if k.Embedded() || len(k.Releases) == 0 {
		return ""
	}
	if _, ok := k.Release(version); ok {
		return ""
	}
	where := file
	if k.Line > 0 {
		where = fmt.Sprintf("%s:%d", file, k.Line)
	}
	return fmt.Sprintf("%s: kafka: rows ask for kafka_version %s but the file has a release of %s only; "+
		"add {version: %s, distribution: URL, sha512: SUM} under kafka.releases (docs/targets.md), or give the rows one of those versions",
		where, version, strings.Join(k.Versions(), ", "), version)
}

// Error is one problem of a TARGET.yaml, at a line of it (0: of the
// whole file). Read and Parse return it as a pointer.
type Error = yamlcheck.Error

var (
	targetKeys = append([]string{"platform", "module", "vars", "ssh", "kafka", "gateway", "teardown", "budget_usd"}, existingKeys...)
	sshKeys    = []string{"user", "private_key", "known_hosts", "keepalive", "wait"}
	kafkaKeys  = []string{"version", "distribution", "sha512", "releases", "heap", "jvm_flags", "java"}
	// localKafkaKeys are kafka: keys only platform local reads.
	localKafkaKeys = []string{"java"}
	releaseKeys    = []string{"version", "distribution", "sha512"}
	teardowns      = []string{TeardownAlways, TeardownOnSuccess, TeardownNever}
	knownHosts     = []string{KnownHostsAcceptNew, KnownHostsStrict}
	allPlatforms   = []string{"aws", "azure", "hosts", "local", PlatformExisting}
	// derivedVars are set by xp from the plan's rows, never by the file.
	derivedVars = []string{"campaign", "group", "broker_count", "gateway_count", "broker_instance_type"}
)

// Read reads and checks a TARGET.yaml. Every problem is a
// *Error (joined when several) naming the file and line. getenv
// expands ~ in paths.
func Read(path string, getenv func(string) string) (*File, error) {
	b, err := os.ReadFile(path)
	if errors.Is(err, os.ErrNotExist) {
		return nil, &Error{File: path, Msg: "no such file (use --target local, or the path of a TARGET.yaml)"}
	}
	if err != nil {
		return nil, &Error{File: path, Msg: err.Error()}
	}
	return Parse(path, b, getenv)
}

// Parse is Read of data read from path.
func Parse(path string, data []byte, getenv func(string) string) (*File, error) {
	t := &File{Path: path, Teardown: TeardownAlways, SSH: SSH{KnownHosts: KnownHostsAcceptNew}, Vars: map[string]any{}}
	p := &fileParser{path: path}
	bad, str, oneOf, mapping := p.bad, p.str, p.oneOf, p.mapping
	if isCampaignPlan(data) {
		return nil, &Error{File: path, Msg: "is a campaign (one run a line, as xp plan expand writes it), not a TARGET.yaml: " +
			"give it as the command's argument (xp run " + path + " --target TARGET.yaml), and --target a file that starts with platform: (docs/targets.md)"}
	}
	root, _, err := yamlcheck.Document(data)
	if err != nil && !errors.Is(err, io.EOF) {
		return nil, &Error{File: path, Msg: "not valid YAML: " + strings.TrimPrefix(err.Error(), "yaml: ")}
	}
	if err != nil || root.Kind != yaml.MappingNode {
		return nil, &Error{File: path, Line: 1, Msg: "want a mapping with platform: and the keys of docs/targets.md"}
	}
	if isFactorSpec(root) {
		return nil, &Error{File: path, Msg: "is a factor spec (campaign:, factors:), not a TARGET.yaml: expand it with xp plan expand " + path +
			" -o CAMPAIGN.jsonl, and give --target a file that starts with platform: (docs/targets.md)"}
	}
	var platformNode, moduleNode *yaml.Node
	nodes, lines := map[string]*yaml.Node{}, map[string]int{}
	mapping(root, "", targetKeys, func(k string, v *yaml.Node) {
		nodes[k], lines[k] = v, keyLine(root, k)
		switch k {
		case "platform":
			platformNode = v
			t.Platform = str(v, "platform")
			oneOf(v, "platform", t.Platform, allPlatforms)
		case "module":
			moduleNode = v
			t.Module = str(v, "module")
		case "vars":
			mapping(v, "vars.", nil, func(name string, val *yaml.Node) {
				if slices.Contains(derivedVars, name) {
					bad(val, "vars.%s is set by xp from the plan's rows; remove it", name)
					return
				}
				var x any
				if err := val.Decode(&x); err != nil {
					bad(val, "vars.%s: %v", name, err)
					return
				}
				if name == "operator_cidr" {
					if why := CheckOperatorCIDR(x); why != "" {
						bad(val, "vars.operator_cidr: %s", why)
						return
					}
				}
				t.Vars[name] = x
			})
		case "ssh":
			t.SSH = p.ssh(v, "ssh.", getenv)
		case "kafka":
			t.Kafka = p.kafka(v, getenv)
			t.Kafka.Line = keyLine(root, "kafka")
		case "gateway":
			t.Gateway = p.gateway(v, getenv)
		case "teardown":
			t.Teardown = str(v, "teardown")
			oneOf(v, "teardown", t.Teardown, teardowns)
		case "budget_usd":
			if err := v.Decode(&t.BudgetUSD); err != nil || t.BudgetUSD < 0 {
				bad(v, "budget_usd: want a number of US dollars, 0 or more")
			}
		}
	})
	if platformNode == nil {
		bad(nil, "no platform: set `platform:` to one of %s", strings.Join(allPlatforms, ", "))
	}
	if t.Platform != "local" && t.Platform != "" {
		for _, k := range localKafkaKeys {
			if l := t.Kafka.Lines[k]; l > 0 {
				p.errs = append(p.errs, &Error{File: path, Line: l,
					Msg: fmt.Sprintf("kafka.%s: only platform local reads it (remote hosts install their Java); remove it", k)})
			}
		}
	}
	if t.Platform == PlatformExisting {
		t.Existing = p.existing(nodes, lines, getenv)
	} else {
		for _, k := range existingKeys {
			if nodes[k] != nil {
				p.badAt(lines[k], "%s: only with platform: existing (a cluster someone else runs)", k)
			}
		}
	}
	if len(p.errs) == 0 && t.Platform != "local" && t.Platform != PlatformExisting {
		if err := t.resolveModule(); err != nil {
			bad(moduleNode, "module: %v", err)
		}
	}
	if len(p.errs) > 0 {
		return nil, errors.Join(p.errs...)
	}
	return t, nil
}

// isCampaignPlan says whether data is a campaign (JSONL): its first line
// a JSON object with a plan row's identity, run and cell.
func isCampaignPlan(data []byte) bool {
	line, _, _ := strings.Cut(strings.TrimSpace(string(data)), "\n")
	var row map[string]json.RawMessage
	if json.Unmarshal([]byte(line), &row) != nil {
		return false
	}
	_, run := row["run"]
	_, cell := row["cell"]
	return run && cell
}

// isFactorSpec says whether a mapping is a factor spec rather than a
// TARGET.yaml: it has factors: or campaign:, and no platform: key.
func isFactorSpec(m *yaml.Node) bool {
	spec := false
	for i := 0; i+1 < len(m.Content); i += 2 {
		switch m.Content[i].Value {
		case "platform":
			return false
		case "factors", "campaign":
			spec = true
		}
	}
	return spec
}

// kafka parses the kafka: section: distribution embedded, one release
// (version, distribution URL, sha512) or releases: a list of them.
func (p *fileParser) kafka(n *yaml.Node, getenv func(string) string) Kafka {
	k := Kafka{Line: n.Line, Lines: map[string]int{}}
	var releases *yaml.Node
	var single KafkaRelease
	p.mapping(n, "kafka.", kafkaKeys, func(key string, v *yaml.Node) {
		k.Lines[key] = v.Line
		switch key {
		case "java":
			k.Java = expandHome(p.str(v, "kafka.java"), getenv)
			if k.Java != "" && !filepath.IsAbs(k.Java) {
				k.Java = filepath.Join(filepath.Dir(p.path), k.Java)
			}
		case "version":
			single.Version = p.kafkaVersion(v, "kafka.version")
		case "distribution":
			single.Distribution = p.distribution(v, "kafka.distribution")
		case "sha512":
			single.SHA512 = p.hexSum(v, "kafka.sha512", "the tarball's SHA-512", 128)
		case "releases":
			releases = v
		case "heap":
			k.Heap = p.kafkaHeap(v)
		case "jvm_flags":
			k.JVMFlags = p.jvmFlags(v)
		}
	})
	k.Version, k.Distribution, k.SHA512 = single.Version, single.Distribution, single.SHA512
	if k.Embedded() && (k.Heap != "" || k.JVMFlags != "" || k.Java != "") {
		p.bad(n, "kafka: heap, jvm_flags and java are Apache Kafka's JVM settings; the embedded cluster is no JVM (remove them, or give a release)")
	}
	if n.Kind != yaml.MappingNode {
		return k
	}
	if releases != nil {
		if single != (KafkaRelease{}) {
			p.bad(n, "kafka: give either releases: or one release's version, distribution and sha512, not both")
			return k
		}
		if releases.Kind != yaml.SequenceNode || len(releases.Content) == 0 {
			p.bad(releases, "kafka.releases: want a list of {version, distribution, sha512}")
			return k
		}
		seen := map[string]int{}
		for i, rn := range releases.Content {
			what := fmt.Sprintf("kafka.releases[%d]", i)
			r := KafkaRelease{Line: rn.Line}
			p.mapping(rn, what+".", releaseKeys, func(key string, v *yaml.Node) {
				switch key {
				case "version":
					r.Version = p.kafkaVersion(v, what+".version")
				case "distribution":
					r.Distribution = p.distribution(v, what+".distribution")
					if r.Distribution == DistributionEmbedded {
						p.bad(v, "%s.distribution: \"embedded\" is not the URL or file of a release tarball (embedded is a distribution of its own, not a release)", what)
					}
				case "sha512":
					r.SHA512 = p.hexSum(v, what+".sha512", "the tarball's SHA-512", 128)
				}
			})
			if rn.Kind != yaml.MappingNode {
				continue
			}
			if !p.checkRelease(rn, what, &r) {
				continue
			}
			if first, dup := seen[r.Version]; dup {
				p.bad(rn, "%s: version %s is listed twice (first at line %d)", what, r.Version, first)
				continue
			}
			seen[r.Version] = rn.Line
			k.Releases = append(k.Releases, r)
		}
		return k
	}
	if single.Distribution == DistributionEmbedded || single == (KafkaRelease{}) {
		return k
	}
	if single.Distribution == "" {
		p.bad(n, "kafka: no distribution (embedded, or a release tarball's URL or file with its sha512)")
		return k
	}
	if !p.checkRelease(n, "kafka", &single) {
		return k
	}
	single.Line = n.Line
	k.Releases = []KafkaRelease{single}
	return k
}

// keyLine is the line of key in mapping n.
func keyLine(n *yaml.Node, key string) int {
	for i := 0; i+1 < len(n.Content); i += 2 {
		if n.Content[i].Value == key {
			return n.Content[i].Line
		}
	}
	return n.Line
}

// distribution reads a release's distribution: embedded, a URL, or a
// file on this machine, made absolute (relative paths are taken from the
// TARGET.yaml's directory) and required to exist.
func (p *fileParser) distribution(n *yaml.Node, what string) string {
	d := p.str(n, what)
	if d == "" || d == DistributionEmbedded || isURL(d) {
		return d
	}
	return p.localRelease(n, what, d, "an http(s) URL, a file, or embedded", "make kafka-dist writes out/dist/kafka_2.13-VERSION.tgz")
}

// checkRelease completes a release parsed at n and says whether it is
// whole: a URL needs version and sha512; a file needs sha512, which its
// contents must match, and must hold a Kafka release, whose version is the
// release's (given or not).
func (p *fileParser) checkRelease(n *yaml.Node, what string, r *KafkaRelease) bool {
	switch r.Distribution {
	case "":
		p.bad(n, "%s: no distribution (a release is a tarball's URL or file, with its sha512)", what)
		return false
	case DistributionEmbedded:
		return false // refused where it was read
	}
	var missing []string
	if r.SHA512 == "" {
		missing = append(missing, "sha512")
	}
	if r.Version == "" && !r.Local() {
		missing = append(missing, "version")
	}
	if len(missing) > 0 {
		kind := "a distribution URL"
		if r.Local() {
			kind = "a release file"
		}
		p.bad(n, "%s: %s needs its %s (version: what rows' kafka_version name, e.g. 4.1.0; sha512: the first word of the release's .sha512 file)",
			what, kind, strings.Join(missing, " and "))
		return false
	}
	if !isHex(r.SHA512, 128) {
		return false // refused where it was read
	}
	if !r.Local() {
		return true
	}
	sum, err := release.SHA512File(r.Distribution)
	if err != nil {
		p.bad(n, "%s.distribution: %v", what, err)
		return false
	}
	if sum != r.SHA512 {
		p.bad(n, "%s: %s has SHA-512 %s…, not the %s… of %s.sha512: the file is not the release named (download it again, or correct sha512)",
			what, r.Distribution, sum[:16], r.SHA512[:16], what)
		return false
	}
	rel, err := release.InspectKafka(r.Distribution)
	if err != nil {
		p.bad(n, "%s.distribution: %v", what, err)
		return false
	}
	if r.Version == "" {
		r.Version = rel.Version
	} else if r.Version != rel.Version {
		p.bad(n, "%s: version %s, but %s holds Kafka %s (libs/kafka_2.13-%s.jar): correct version, or leave it out for a file",
			what, r.Version, r.Distribution, rel.Version, rel.Version)
		return false
	}
	return true
}

// kafkaVersion is a Kafka release number, as rows' kafka_version spell it.
func (p *fileParser) kafkaVersion(n *yaml.Node, what string) string {
	v := p.str(n, what)
	if v != "" && !kafkaVersionRE.MatchString(v) {
		p.bad(n, "%s: %q is not a release number such as 3.9.1", what, v)
	}
	return v
}

var kafkaVersionRE = regexp.MustCompile(`^[0-9]+\.[0-9]+\.[0-9]+[A-Za-z0-9.-]*$`)

// fileParser collects the problems of one TARGET.yaml, each at its line.
type fileParser struct {
	path string
	errs []error
}

func (p *fileParser) bad(n *yaml.Node, format string, a ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.badAt(line, format, a...)
}

func (p *fileParser) badAt(line int, format string, a ...any) {
	p.errs = append(p.errs, &Error{File: p.path, Line: line, Msg: fmt.Sprintf(format, a...)})
}

// parseKeepalive reads ssh.keepalive: 100ms..10m.
func parseKeepalive(s string) (time.Duration, error) {
	d, err := time.ParseDuration(s)
	if err != nil || d < 100*time.Millisecond || d > 10*time.Minute {
		return 0, errors.New("want a duration from 100ms to 10m, such as 5s")
	}
	return d, nil
}

func (p *fileParser) str(n *yaml.Node, what string) string {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.bad(n, "%s: want a string", what)
		return ""
	}
	return n.Value
}

func (p *fileParser) oneOf(n *yaml.Node, what string, v string, allowed []string) {
	if !slices.Contains(allowed, v) {
		p.bad(n, "%s: %q is not one of %s%s", what, v, strings.Join(allowed, ", "), yamlcheck.Suggestion(v, allowed))
	}
}

// mapping calls f with each key and value of n, refusing keys not in keys
// (nil: any key) and keys given twice.
func (p *fileParser) mapping(n *yaml.Node, what string, keys []string, f func(k string, v *yaml.Node)) {
	if n.Kind != yaml.MappingNode {
		p.bad(n, "%s: want a mapping (keys: %s)", what, strings.Join(keys, ", "))
		return
	}
	yamlcheck.Keys(n, keys, func(k, v *yaml.Node) { f(k.Value, v) },
		func(e *yamlcheck.KeyError) { p.bad(e.Key, "%s", e.Message(what)) })
}

// resolveModule finds the module's directory: relative paths are taken
// from the target file's directory; no module means the built-in one.
func (t *File) resolveModule() error {
	if t.Module == "" {
		return nil
	}
	dir := t.Module
	if !filepath.IsAbs(dir) {
		dir = filepath.Join(filepath.Dir(t.Path), dir)
	}
	tfs, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
	if len(tfs) == 0 {
		return fmt.Errorf("%s has no .tf files (leave module: out to use xp's terraform/%s)", dir, t.Platform)
	}
	t.ModuleDir = dir
	return nil
}

// ModuleFS is the module's files: the directory named by module:, else
// xp's built-in copy of terraform/<platform>.
func (t *File) ModuleFS() (fs.FS, error) {
	if t.ModuleDir != "" {
		return os.DirFS(t.ModuleDir), nil
	}
	if !slices.Contains(terraform.Platforms, t.Platform) {
		return nil, fmt.Errorf("platform %s has no module", t.Platform)
	}
	return fs.Sub(terraform.Modules, t.Platform)
}

// ModuleName is the module as recorded: module: as written, or the
// built-in terraform/<platform>.
func (t *File) ModuleName() string {
	if t.Module != "" {
		return t.Module
	}
	return "terraform/" + t.Platform + " (built in)"
}

func expandHome(p string, getenv func(string) string) string {
	if p == "~" || strings.HasPrefix(p, "~/") {
		if h := getenv("HOME"); h != "" {
			return filepath.Join(h, strings.TrimPrefix(p, "~"))
		}
	}
	return p
}

func isHex(s string, n int) bool {
	if len(s) != n {
		return false
	}
	for _, c := range s {
		if !('0' <= c && c <= '9' || 'a' <= c && c <= 'f') {
			return false
		}
	}
	return true
}

var operatorCIDRRE = regexp.MustCompile(`^[0-9]{1,3}(\.[0-9]{1,3}){3}/[0-9]{1,2}$`)

// CheckOperatorCIDR says why v cannot be vars.operator_cidr, the only
// range SSH is admitted from; "" when it can. It must be an IPv4 network
// address with its prefix (203.0.113.7/32, 198.51.100.0/24), no wider
// than /8: a wider range, or an address with host bits set under its
// prefix (which the clouds widen to the network silently), would open the
// machines to far more of the Internet than meant. The aws and azure
// modules' validation of var.operator_cidr states the same rule.
func CheckOperatorCIDR(v any) string {
	s, ok := v.(string)
	if !ok {
		return fmt.Sprintf("want a string such as 203.0.113.7/32, not %v", v)
	}
	ip, n, err := net.ParseCIDR(s)
	if !operatorCIDRRE.MatchString(s) || err != nil || ip.To4() == nil {
		return fmt.Sprintf("%q is not an IPv4 range such as 203.0.113.7/32", s)
	}
	ones, _ := n.Mask.Size()
	if ones < 8 {
		return fmt.Sprintf("%q admits 2^%d addresses: want a prefix of /8 or longer, such as your address/32", s, 32-ones)
	}
	if !ip.Equal(n.IP) {
		return fmt.Sprintf("%q is not a network address: the range of /%d is %s (or give %s/32 for that one address)", s, ones, n, ip)
	}
	return ""
}
