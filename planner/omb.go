package planner

import (
	"fmt"
	"path/filepath"
	"regexp"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/internal/yamlcheck"
)

// OMBFile is one OpenMessaging Benchmark workload file.
type OMBFile struct {
	Name string
	Data []byte
}

// ImportOptions fill what an OMB workload does not say.
type ImportOptions struct {
	// Campaign names the spec; default "omb-" and the first file's name.
	Campaign string
	// Security are the compared modes (the treatment), Baseline the
	// reference; default plaintext, tls, mtls, sasl_ssl against plaintext.
	Security []string
	Baseline string
	// Brokers (default 3), Acks (default "all"; OMB sets it in the driver
	// file), Replicates (default 3).
	Brokers    int
	Acks       string
	Replicates int
}

// ombMapped are the workload keys xp maps to row fields, with the field.
var ombMapped = map[string]string{
	"topics":                  "topics",
	"partitionsPerTopic":      "partitions",
	"messageSize":             "message_size",
	"producersPerTopic":       "producers",
	"subscriptionsPerTopic":   "consumer_groups",
	"consumerPerSubscription": "consumers_per_group",
	"producerRate":            "target_rate",
	"testDurationMinutes":     "duration_s",
	"warmupDurationMinutes":   "warmup_s",
}

// ombFields are the row fields workloads set.
var ombFields = func() map[string]bool {
	m := map[string]bool{}
	for _, f := range ombMapped {
		m[f] = true
	}
	return m
}()

// ombIgnored are workload keys OMB knows that do not change what xp
// measures, with why.
var ombIgnored = map[string]string{
	"name":                      "",
	"keyDistributor":            "xp sends records without keys",
	"payloadFile":               "xp generates its own incompressible payloads",
	"useRandomizedPayloads":     "xp's payloads are always random",
	"randomBytesRatio":          "xp's payloads are always random",
	"randomizedPayloadPoolSize": "xp's payloads are always random",
	"backlogDrainRatio":         "backlog tests are not supported",
	"producerStartRate":         "OMB's rate search is not supported; xp runs producerRate (0: a closed loop at max)",
	"producerIncrementRate":     "OMB's rate search is not supported; xp runs producerRate (0: a closed loop at max)",
	"producerIncrementSeconds":  "OMB's rate search is not supported; xp runs producerRate (0: a closed loop at max)",
	"acceptableBacklog":         "OMB's rate search is not supported; xp's health gate checks the backlog drains",
	"producerPauseDuringDrain":  "backlog tests are not supported",
}

var ombKeys = func() []string {
	var k []string
	for key := range ombMapped {
		k = append(k, key)
	}
	for key := range ombIgnored {
		k = append(k, key)
	}
	k = append(k, "consumerBacklogSizeGB")
	slices.Sort(k)
	return k
}()

var reNotCampaign = regexp.MustCompile(`[^a-z0-9-]+`)

// ImportOMB turns OMB workload files into one spec: the workload fields
// that differ between files become factors (with one include entry per
// workload, so only the workloads' own combinations run), the rest fixed, security the
// treatment. Unknown keys are errors with a suggestion; keys xp cannot
// honour but that do not change the measurement come back as warnings.
func ImportOMB(files []OMBFile, opt ImportOptions) (*Spec, []string, error) {
	if len(files) == 0 {
		return nil, nil, fmt.Errorf("no workload files")
	}
	if opt.Campaign == "" {
		base := strings.TrimSuffix(filepath.Base(files[0].Name), filepath.Ext(files[0].Name))
		opt.Campaign = strings.Trim(reNotCampaign.ReplaceAllString(strings.ToLower(base), "-"), "-")
		opt.Campaign = "omb-" + opt.Campaign
		if len(opt.Campaign) > 64 {
			opt.Campaign = strings.TrimRight(opt.Campaign[:64], "-")
		}
	}
	if len(opt.Security) == 0 {
		opt.Security = []string{SecurityPlaintext, SecurityTLS, SecurityMTLS, SecuritySASLSSL}
	}
	if opt.Baseline == "" {
		opt.Baseline = opt.Security[0]
	}
	if opt.Brokers == 0 {
		opt.Brokers = 3
	}
	if opt.Acks == "" {
		opt.Acks = "all"
	}
	if opt.Replicates == 0 {
		opt.Replicates = 3
	}
	var errs SpecErrors
	var warnings []string
	var workloads []map[string]Value
	for _, f := range files {
		w, warn, err := parseWorkload(f)
		warnings = append(warnings, warn...)
		if err != nil {
			errs = append(errs, err.(SpecErrors)...)
			continue
		}
		workloads = append(workloads, w)
	}
	if len(errs) > 0 {
		return nil, warnings, errs
	}
	s := &Spec{Campaign: opt.Campaign, Replicates: opt.Replicates, Treatment: "security", Baseline: Value{Str: opt.Baseline}}
	sec := Factor{Field: "security"}
	for _, m := range opt.Security {
		sec.Levels = append(sec.Levels, Value{Str: m})
	}
	s.Factors = append(s.Factors, sec)
	s.Fixed = append(s.Fixed, Setting{Field: "brokers", Value: Value{Int: int64(opt.Brokers)}}, Setting{Field: "acks", Value: Value{Str: opt.Acks}})
	var varying []Factor
	for _, name := range FieldNames() {
		f := &fields[fieldIndex(name)]
		var levels []Value
		for _, w := range workloads {
			v := w[name]
			if !slices.ContainsFunc(levels, func(x Value) bool { return f.equal(x, v) }) {
				levels = append(levels, v)
			}
		}
		switch {
		case !ombFields[name]:
		case len(levels) == 1:
			s.Fixed = append(s.Fixed, Setting{Field: name, Value: levels[0]})
		default:
			varying = append(varying, Factor{Field: name, Levels: levels})
		}
	}
	s.Factors = append(s.Factors, varying...)
	s.Include = wantedCombinations(varying, workloads)
	// Check the result as a spec file would be checked.
	var b strings.Builder
	if err := WriteSpec(&b, s); err != nil {
		return nil, warnings, err
	}
	parsed, err := ParseSpec(s.Campaign+".yaml", []byte(b.String()))
	if err != nil {
		return nil, warnings, err
	}
	return parsed, warnings, nil
}

// wantedCombinations lists, as include entries, the varying fields'
// levels of each workload, once each: N workloads give N entries.
func wantedCombinations(varying []Factor, workloads []map[string]Value) [][]Setting {
	if len(varying) < 2 {
		return nil // one varying field: its levels are the workloads
	}
	var out [][]Setting
	for _, w := range workloads {
		var e []Setting
		for _, fac := range varying {
			e = append(e, Setting{Field: fac.Field, Value: w[fac.Field]})
		}
		if !slices.ContainsFunc(out, func(o []Setting) bool {
			return slices.EqualFunc(o, e, func(a, b Setting) bool { return fields[fieldIndex(a.Field)].equal(a.Value, b.Value) })
		}) {
			out = append(out, e)
		}
	}
	return out
}

// rePlaceholder is an environment placeholder as OMB's workload files
// write them (resolved by the scripts that run OMB, not by OMB).
var rePlaceholder = regexp.MustCompile(`^\$\{([A-Za-z_][A-Za-z0-9_]*)(?::-(.*))?\}$`)

// placeholder resolves a value that is a whole ${VAR:-default}
// placeholder to its default, in place, and says so. xp does not read the
// environment: a campaign's spec must say what ran. A placeholder without
// a default is an error (ok false). A placeholder inside a longer string
// (as in name) is left alone.
func placeholder(p *specParser, file, key string, v *yaml.Node) (warning string, ok bool) {
	if v.Kind != yaml.ScalarNode {
		return "", true
	}
	m := rePlaceholder.FindStringSubmatch(v.Value)
	if m == nil {
		return "", true
	}
	if !strings.Contains(v.Value, ":-") {
		p.errf(v, "%s: %s has no default (${%s:-VALUE}); write the value: xp does not read the environment", key, v.Value, m[1])
		return "", false
	}
	var n yaml.Node
	if err := yaml.Unmarshal([]byte(m[2]), &n); err != nil || len(n.Content) != 1 {
		p.errf(v, "%s: default %q of %s is not a YAML value", key, m[2], v.Value)
		return "", false
	}
	d := n.Content[0]
	v.Value, v.Tag, v.Style = d.Value, d.Tag, d.Style
	if _, ignored := ombIgnored[key]; ignored {
		return "", true
	}
	return fmt.Sprintf("%s:%d: %s: %s resolved to its default %s (xp does not read the environment; write another value in the file to run it)",
		file, v.Line, key, m[0], m[2]), true
}

// parseWorkload reads one workload into row field values.
func parseWorkload(f OMBFile) (map[string]Value, []string, error) {
	p := &specParser{file: f.Name}
	var doc yaml.Node
	if err := yaml.Unmarshal(f.Data, &doc); err != nil {
		p.errf(nil, "%v", err)
		return nil, nil, p.errs
	}
	root := resolve(&doc)
	if root.Kind == yaml.DocumentNode && len(root.Content) > 0 {
		root = resolve(root.Content[0])
	}
	if root.Kind != yaml.MappingNode {
		p.errf(root, "an OMB workload is a mapping (topics, partitionsPerTopic, messageSize, ...)")
		return nil, nil, p.errs
	}
	var warnings []string
	out := map[string]Value{"warmup_s": {Int: 60}} // OMB's default warm-up is one minute
	seen := map[string]bool{}
	for i := 0; i+1 < len(root.Content); i += 2 {
		k, v := root.Content[i], resolve(root.Content[i+1])
		if seen[k.Value] {
			p.errf(k, "%s appears twice", k.Value)
			continue
		}
		seen[k.Value] = true
		if w, ok := placeholder(p, f.Name, k.Value, v); ok {
			if w != "" {
				warnings = append(warnings, w)
			}
		} else {
			continue
		}
		if why, ok := ombIgnored[k.Value]; ok {
			if why != "" {
				warnings = append(warnings, fmt.Sprintf("%s:%d: %s ignored: %s", f.Name, k.Line, k.Value, why))
			}
			continue
		}
		if k.Value == "consumerBacklogSizeGB" {
			if n, ok := p.integer(v, k.Value); ok && n != 0 {
				p.errf(v, "consumerBacklogSizeGB %d: backlog tests are not supported; set it to 0", n)
			}
			continue
		}
		field, ok := ombMapped[k.Value]
		if !ok {
			p.errf(k, "unknown workload key %q%s (OMB ignores typos; xp does not)", k.Value, yamlcheck.Suggestion(k.Value, ombKeys))
			continue
		}
		n, ok := p.integer(v, k.Value)
		if !ok {
			continue
		}
		switch k.Value {
		case "producerRate":
			if n == 0 {
				n = int64(RateMax)
			} else if n < 0 {
				p.errf(v, "producerRate %d: want messages per second, or 0 for max", n)
				continue
			}
		case "testDurationMinutes", "warmupDurationMinutes":
			n *= 60
		}
		out[field] = Value{Int: n}
	}
	for key, field := range ombMapped {
		if _, ok := out[field]; !ok {
			p.errf(root, "missing %s", key)
		}
	}
	slices.SortFunc(p.errs, func(a, b SpecError) int {
		if a.Line != b.Line {
			return a.Line - b.Line
		}
		return strings.Compare(a.Msg, b.Msg)
	})
	if len(p.errs) > 0 {
		return nil, warnings, p.errs
	}
	return out, warnings, nil
}
