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
	d := &DriverImport{Mode: mode}
	var errs []error
	bad := func(line int, format string, a ...any) {
		errs = append(errs, fmt.Errorf("%s:%d: %s", path, line, fmt.Sprintf(format, a...)))
	}
	note := func(line int, format string, a ...any) {
		d.Notes = append(d.Notes, fmt.Sprintf("%s:%d: %s", path, line, fmt.Sprintf(format, a...)))
	}
	m := doc.Content[0]
	sections := map[string]*yaml.Node{}
	driverClass := ""
	for i := 0; i+1 < len(m.Content); i += 2 {
		k, v := m.Content[i], m.Content[i+1]
		if !slices.Contains(ombDriverKeys, k.Value) {
			bad(k.Line, "unknown key %q%s (an OMB Kafka driver file has %s)", k.Value, yamlcheck.Suggestion(k.Value, ombDriverKeys), strings.Join(ombDriverKeys, ", "))
			continue
		}
		switch k.Value {
		case "driverClass":
			driverClass = v.Value
			if v.Value != OMBKafkaDriver {
				bad(v.Line, "driverClass %s: not OMB's Kafka driver (%s)", v.Value, OMBKafkaDriver)
			}
		case "replicationFactor":
			d.Spec = append(d.Spec, "replication_factor: "+v.Value)
		case "reset", "name":
		default:
			if v.Kind != yaml.ScalarNode {
				bad(v.Line, "%s: want Java properties text (%s: |)", k.Value, k.Value)
				continue
			}
			sections[k.Value] = v
		}
	}
	if driverClass == "" && len(errs) == 0 {
		bad(m.Line, "no driverClass: want %s", OMBKafkaDriver)
	}
	var props []string
	chosen := map[string]string{}
	for _, sec := range []string{"commonConfig", "producerConfig", "consumerConfig", "topicConfig"} {
		n := sections[sec]
		if n == nil {
			continue
		}
		// A block scalar's text starts on the line after its key.
		first := n.Line
		if n.Style == yaml.LiteralStyle || n.Style == yaml.FoldedStyle {
			first++
		}
		ps, err := kafkaconf.ParseProperties([]byte(n.Value), kafkaconf.DialectJava)
		if err != nil {
			bad(first, "%s: %v", sec, err)
			continue
		}
		for _, p := range ps {
			line := first + p.Line - 1
			if sec == "topicConfig" {
				if f, ok := specFields[p.Key]; ok {
					d.Spec = append(d.Spec, f+": "+p.Value)
				} else {
					note(line, "topicConfig %s=%s: xp creates its topics with the row's partitions, replication_factor and min_insync_replicas only; not taken over", p.Key, p.Value)
				}
				continue
			}
			switch {
			case p.Key == kafkaconf.BootstrapServers:
				for _, s := range strings.Split(p.Value, ",") {
					if s = strings.TrimSpace(s); s != "" {
						d.Bootstrap = append(d.Bootstrap, s)
					}
				}
			case kafkaconf.Reads(p.Key):
				if prev, ok := chosen[p.Key]; ok {
					if prev != p.Value {
						bad(line, "%s %s differs from the value given before: the driver's producers and consumers would connect differently", sec, p.Key)
					}
					continue
				}
				chosen[p.Key] = p.Value
				props = append(props, kafkaconf.JavaProperty(p.Key, p.Value))
			case specFields[p.Key] != "" && sec == "producerConfig":
				d.Spec = append(d.Spec, specFields[p.Key]+": "+p.Value)
			default:
				why := kafkaconf.Unsupported(p.Key)
				if why == "" {
					bad(line, "%s: unknown property %q", sec, p.Key)
					continue
				}
				if kafkaconf.SecurityProperty(p.Key) {
					bad(line, "%s %s: %s", sec, p.Key, why)
					continue
				}
				note(line, "%s %s=%s: not taken over: xp's clients keep their own (their settings come from the plan row)", sec, p.Key, p.Value)
			}
		}
	}
	if len(d.Bootstrap) == 0 && len(errs) == 0 {
		bad(m.Line, "commonConfig has no bootstrap.servers")
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	d.Properties = fmt.Sprintf("# %s endpoint, from the OMB driver file %s (xp plan import-omb-driver)\n", mode, path) + strings.Join(props, "")
	cf, err := kafkaconf.ParseClientFile(path+" (its connection properties)", []byte(d.Properties))
	if err == nil {
		err = matchMode(mode, cf)
	}
	if err != nil {
		return nil, fmt.Errorf("%s: as the endpoint of %s: %w", path, mode, err)
	}
	return d, nil
}
