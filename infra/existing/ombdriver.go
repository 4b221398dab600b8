package existing

import (
	"errors"
	"fmt"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/internal/yamlcheck"
	"github.com/xp-bench/xp/planner"
)

// OMBKafkaDriver is the driverClass of OpenMessaging Benchmark's Kafka
// driver files (driver-kafka/kafka-*.yaml).
const OMBKafkaDriver = "io.openmessaging.benchmark.driver.kafka.KafkaBenchmarkDriver"

// ombDriverKeys are the keys of an OMB Kafka driver file (the driver's
// Config class and the benchmark's DriverConfiguration).
var ombDriverKeys = []string{"name", "driverClass", "replicationFactor", "reset", "topicConfig", "commonConfig", "producerConfig", "consumerConfig"}

// specFields maps the producer and topic properties of a driver file to
// the spec fields that set them in xp.
var specFields = map[string]string{
	"acks": "acks", "linger.ms": "linger_ms", "batch.size": "batch_bytes", "compression.type": "compression",
	"min.insync.replicas": "min_insync_replicas",
}

// DriverImport is an endpoints entry made of an OMB Kafka driver file.
type DriverImport struct {
	Mode      string
	Bootstrap []string
	// Properties are the connection properties of the driver's clients
	// (the Java client's), as a client config file's text.
	Properties string
	// Spec are settings of the driver that are spec fields in xp, as
	// `field: value` lines.
	Spec []string
	// Notes say, with the file and line, what of the driver xp does not
	// take over and why.
	Notes []string
}

// ImportOMBDriver turns an OMB Kafka driver file (commonConfig,
// producerConfig, consumerConfig; the clients' Java properties) into the
// endpoint of mode: bootstrap.servers becomes its bootstrap, the
// connection properties (security.protocol, trust and key stores,
// sasl.jaas.config, ...) its client config. Producer, consumer and topic
// settings are not connection settings: the ones xp's spec has a field
// for are returned as spec lines, the others noted. A property that
// changes security in a way xp cannot reproduce (Kerberos, a custom
// callback) is an error, as are unknown keys, naming file and line.
func ImportOMBDriver(path string, data []byte, mode string) (*DriverImport, error) {
	if msg := targetfile.CheckModeKey(mode); msg != "" {
		return nil, fmt.Errorf("mode %s: %s", mode, msg)
	}
	var doc yaml.Node
	if err := yaml.Unmarshal(data, &doc); err != nil {
		return nil, fmt.Errorf("%s: not valid YAML: %v", path, err)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		return nil, fmt.Errorf("%s: want an OMB driver file (driverClass: %s, commonConfig, ...)", path, OMBKafkaDriver)
	}
	r := &driverReader{path: path, d: &DriverImport{Mode: mode}, chosen: map[string]string{}}
	m := doc.Content[0]
	sections := r.topLevel(m)
	for _, sec := range []string{"commonConfig", "producerConfig", "consumerConfig", "topicConfig"} {
		if n := sections[sec]; n != nil {
			r.section(sec, n)
		}
	}
	if len(r.d.Bootstrap) == 0 && len(r.errs) == 0 {
		r.bad(m.Line, "commonConfig has no bootstrap.servers")
	}
	if len(r.errs) > 0 {
		return nil, errors.Join(r.errs...)
	}
	return r.endpoint()
}

// driverReader reads an OMB driver file from path into d, collecting its
// errors and the connection properties chosen.
type driverReader struct {
	path string
	d    *DriverImport
	errs []error
	// props are the connection properties taken over, as Java property
	// lines; chosen the same by key.
	props  []string
	chosen map[string]string
	// schemes are the bootstrap servers given as PROTOCOL://HOST:PORT.
	schemes []bootstrapScheme
}

// bootstrapScheme is a bootstrap server given as PROTOCOL://HOST:PORT, at
// line of the file.
type bootstrapScheme struct {
	server, protocol string
	line             int
}

// modeProtocols is the security.protocol of each mode transport, as a
// bootstrap server's PROTOCOL:// names it.
var modeProtocols = map[string]string{
	planner.SecurityPlaintext: "PLAINTEXT",
	planner.SecurityTLS:       "SSL",
	planner.SecurityMTLS:      "SSL",
	planner.SecuritySASLSSL:   "SASL_SSL",
}

// bad records an error at line of the file.
func (r *driverReader) bad(line int, format string, a ...any) {
	r.errs = append(r.errs, fmt.Errorf("%s:%d: %s", r.path, line, fmt.Sprintf(format, a...)))
}

// note records, at line of the file, what is not taken over and why.
func (r *driverReader) note(line int, format string, a ...any) {
	r.d.Notes = append(r.d.Notes, fmt.Sprintf("%s:%d: %s", r.path, line, fmt.Sprintf(format, a...)))
}

// topLevel reads the file's keys, m: the driver class, the replication
// factor and, by key, the properties sections it returns.
func (r *driverReader) topLevel(m *yaml.Node) map[string]*yaml.Node {
	sections := map[string]*yaml.Node{}
	driverClass := ""
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if !slices.Contains(ombDriverKeys, k.Value) {
			r.bad(k.Line, "unknown key %q%s (an OMB Kafka driver file has %s)", k.Value, yamlcheck.Suggestion(k.Value, ombDriverKeys), strings.Join(ombDriverKeys, ", "))
			continue
		}
		switch k.Value {
		case "driverClass":
			driverClass = v.Value
			if v.Value != OMBKafkaDriver {
				r.bad(v.Line, "driverClass %s: not OMB's Kafka driver (%s)", v.Value, OMBKafkaDriver)
			}
		case "replicationFactor":
			r.d.Spec = append(r.d.Spec, "replication_factor: "+v.Value)
		case "reset", "name":
		default:
			if v.Kind != yaml.ScalarNode {
				r.bad(v.Line, "%s: want Java properties text (%s: |)", k.Value, k.Value)
				continue
			}
			sections[k.Value] = v
		}
	}
	if driverClass == "" && len(r.errs) == 0 {
		r.bad(m.Line, "no driverClass: want %s", OMBKafkaDriver)
	}
	return sections
}

// section reads the properties of section sec, text node n.
func (r *driverReader) section(sec string, n *yaml.Node) {
	// A block scalar's text starts on the line after its key.
	first := n.Line
	if n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle {
		first++
	}
	ps, err := kafkaconf.ParseProperties([]byte(n.Value), kafkaconf.DialectJava)
	if err != nil {
		r.bad(first, "%s: %v", sec, err)
		return
	}
	for _, p := range ps {
		line := first + p.Line - 1
		if sec == "topicConfig" {
			r.topicProperty(line, p)
		} else {
			r.clientProperty(sec, line, p)
		}
	}
}

// topicProperty takes over a topic property where xp's spec has a field
// for it.
func (r *driverReader) topicProperty(line int, p kafkaconf.Property) {
	if f, ok := specFields[p.Key]; ok {
		r.d.Spec = append(r.d.Spec, f+": "+p.Value)
	} else {
		r.note(line, "topicConfig %s=%s: xp creates its topics with the row's partitions, replication_factor and min_insync_replicas only; not taken over", p.Key, p.Value)
	}
}

// clientProperty sorts a client property of section sec: the bootstrap,
// a connection property (the same wherever it is given), a producer
// setting xp's spec has a field for, or one not taken over; a security
// property xp cannot reproduce and an unknown one are errors.
func (r *driverReader) clientProperty(sec string, line int, p kafkaconf.Property) {
	switch {
	case p.Key == kafkaconf.BootstrapServers:
		r.bootstrap(sec, line, p.Value)
	case strings.HasPrefix(p.Key, "sasl.kerberos."):
		r.bad(line, "%s %s: Kerberos (GSSAPI) is not supported on platform: existing; use PLAIN or SCRAM", sec, p.Key)
	case strings.HasPrefix(p.Key, "sasl.oauthbearer."):
		r.bad(line, "%s %s: OAUTHBEARER is not supported on platform: existing; use PLAIN or SCRAM", sec, p.Key)
	case kafkaconf.Reads(p.Key):
		if prev, ok := r.chosen[p.Key]; ok {
			if prev != p.Value {
				r.bad(line, "%s %s differs from the value given before: the driver's producers and consumers would connect differently", sec, p.Key)
			}
			return
		}
		r.chosen[p.Key] = p.Value
		r.props = append(r.props, kafkaconf.JavaProperty(p.Key, p.Value))
	case specFields[p.Key] != "" && sec == "producerConfig":
		r.d.Spec = append(r.d.Spec, specFields[p.Key]+": "+p.Value)
	default:
		why := kafkaconf.Unsupported(p.Key)
		if why == "" {
			r.bad(line, "%s: unknown property %q", sec, p.Key)
			return
		}
		if kafkaconf.SecurityProperty(p.Key) {
			r.bad(line, "%s %s: %s", sec, p.Key, why)
			return
		}
		r.note(line, "%s %s=%s: not taken over: xp's clients keep their own (their settings come from the plan row)", sec, p.Key, p.Value)
	}
}

// bootstrap reads bootstrap.servers, value, at line of section sec: a list
// of HOST:PORT or, as Kafka's Java client also takes them,
// PROTOCOL://HOST:PORT, whose protocol must be a security protocol (it is
// checked against the mode in endpoint).
func (r *driverReader) bootstrap(sec string, line int, value string) {
	for _, s := range strings.Split(value, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if scheme, addr, ok := strings.Cut(s, "://"); ok {
			proto := strings.ToUpper(scheme)
			if !slices.Contains([]string{"PLAINTEXT", "SSL", "SASL_PLAINTEXT", "SASL_SSL"}, proto) {
				r.bad(line, "%s bootstrap.servers %s: %s is not a security protocol (PLAINTEXT, SSL, SASL_SSL): give HOST:PORT, or PROTOCOL://HOST:PORT",
					sec, s, scheme)
				continue
			}
			r.schemes = append(r.schemes, bootstrapScheme{server: s, protocol: proto, line: line})
			s = addr
		}
		r.d.Bootstrap = append(r.d.Bootstrap, s)
	}
}

// endpoint is the import, its connection properties written as a client
// config file and checked against its mode.
func (r *driverReader) endpoint() (*DriverImport, error) {
	d, path, mode := r.d, r.path, r.d.Mode
	want := modeProtocols[targetfile.ModeTransport(mode)]
	var errs []error
	for _, b := range r.schemes {
		if b.protocol != want {
			what := "mode " + mode
			if t := targetfile.ModeTransport(mode); t != mode {
				what += " (clients speak " + t + " to the gateway)"
			}
			errs = append(errs, fmt.Errorf("%s:%d: bootstrap.servers %s: protocol %s is not %s: want %s://HOST:PORT (or HOST:PORT)",
				path, b.line, b.server, b.protocol, what, want))
		}
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	d.Properties = fmt.Sprintf("# %s endpoint, from the OMB driver file %s (xp plan import-omb-driver)\n", mode, path) + strings.Join(r.props, "")
	cf, err := kafkaconf.ParseClientFile(path+" (its connection properties)", []byte(d.Properties))
	if err == nil {
		err = matchMode(mode, cf)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: as the endpoint of %s: %w", path, mode, err)
	}
	return d, nil
}
