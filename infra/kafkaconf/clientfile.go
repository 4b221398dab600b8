package kafkaconf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"

	"github.com/xp-bench/xp/internal/yamlcheck"
)

// ClientFile is a client config file as read: its dialect and properties
// in file order, paths made absolute.
type ClientFile struct {
	Path    string
	Dialect string
	Props   []Property
}

// LoadClientConfig reads a client config file written for librdkafka
// (`kcat -F`) or for the Java client. A file with a property only the Java
// client knows (sasl.jaas.config, ssl.truststore.*, ...) is read in
// java.util.Properties syntax, one with a property only librdkafka knows
// in librdkafka's, one with only properties both know in librdkafka's
// unless only Java's syntax reads it (name: value); a file with properties
// of both is refused. Every property must be one xp reads: an
// unknown or unsupported one, or one given twice, is an error naming the
// file, line and property, so that nothing in the file is silently ignored
// (a typo must not turn TLS off). Relative paths (ssl.ca.location,
// ssl.truststore.location, ...) are taken from the file's directory.
func LoadClientConfig(path string) (*ClientFile, error) {
	b, err := os.ReadFile(path)
	if err != nil {
		return nil, fmt.Errorf("client config: %w", err)
	}
	return ParseClientFile(path, b)
}

// ParseClientFile is LoadClientConfig of b, read from path.
func ParseClientFile(path string, b []byte) (*ClientFile, error) {
	dialect, sure := detectDialect(b)
	f := &ClientFile{Path: path, Dialect: dialect}
	props, err := ParseProperties(b, f.Dialect)
	if err != nil && !sure {
		// Only properties both clients know, in a syntax only Java's
		// reads (name: value, continued lines).
		if jp, jerr := ParseProperties(b, DialectJava); jerr == nil {
			f.Dialect, props, err = DialectJava, jp, nil
		}
	}
	if err != nil {
		return nil, fmt.Errorf("client config %s:%w", path, err)
	}
	var errs []error
	bad := func(line int, format string, a ...any) {
		errs = append(errs, fmt.Errorf("client config %s:%d: %s", path, line, fmt.Sprintf(format, a...)))
	}
	seen := map[string]int{}
	var javaLine, rdLine Property
	for _, p := range props {
		if first, dup := seen[p.Key]; dup {
			bad(p.Line, "%s is given twice (first at line %d)", p.Key, first)
			continue
		}
		seen[p.Key] = p.Line
		if why := unsupportedReason(p.Key); why != "" {
			bad(p.Line, "%s is not supported: %s", p.Key, why)
			continue
		}
		if !supported(p.Key) {
			bad(p.Line, "unknown property %q%s (xp reads %s)", p.Key, yamlcheck.Suggestion(p.Key, knownKeys()), strings.Join(knownKeys(), ", "))
			continue
		}
		if p.Value == "" && p.Key != SSLEndpointIdentAlg {
			// An empty value is no value: Kafka's clients refuse most, and
			// it must not leave a setting at a default that turns security
			// off.
			bad(p.Line, "%s has no value", p.Key)
			continue
		}
		if javaOnly[p.Key] && javaLine.Line == 0 {
			javaLine = p
		}
		if librdkafkaOnly[p.Key] && rdLine.Line == 0 {
			rdLine = p
		}
		if slices.Contains(pathKeys, p.Key) && p.Value != "" && !filepath.IsAbs(p.Value) {
			p.Value = filepath.Join(filepath.Dir(path), p.Value)
			if abs, err := filepath.Abs(p.Value); err == nil {
				p.Value = abs
			}
		}
		f.Props = append(f.Props, p)
	}
	if javaLine.Line > 0 && rdLine.Line > 0 {
		bad(rdLine.Line, "%s is librdkafka's, but line %d's %s is the Java client's: write the file in one client's properties",
			rdLine.Key, javaLine.Line, javaLine.Key)
	}
	if len(errs) > 0 {
		return nil, errors.Join(errs...)
	}
	return f, nil
}

// detectDialect is DialectJava when a line of b starts with a property
// only the Java client knows and none with one only librdkafka knows;
// sure is false when b has neither (then librdkafka's syntax is tried
// first, and Java's when b is not in it).
func detectDialect(b []byte) (dialect string, sure bool) {
	java := false
	for _, line := range splitLines(string(b)) {
		line = strings.TrimLeft(line, " \t\f")
		k, _ := splitJava(line)
		switch {
		case librdkafkaOnly[k]:
			return DialectLibrdkafka, true
		case javaOnly[k]:
			java = true
		}
	}
	if java {
		return DialectJava, true
	}
	return DialectLibrdkafka, false
}

// Map returns the properties by name.
func (f *ClientFile) Map() map[string]string {
	m := make(map[string]string, len(f.Props))
	for _, p := range f.Props {
		m[p.Key] = p.Value
	}
	return m
}

// Line is the line of property key, 0 when the file has none.
func (f *ClientFile) Line(key string) int {
	for _, p := range f.Props {
		if p.Key == key {
			return p.Line
		}
	}
	return 0
}

// Check turns the properties into client options as the load generator
// will (ClientOpts: trust and key stores opened, the JAAS config read), so
// that a store that does not open or a mechanism that does not go with its
// login module is found before anything runs; the error names the file
// and the line of the property at fault.
func (f *ClientFile) Check() error {
	_, err := ClientOpts(f.Map())
	if err == nil {
		return nil
	}
	var pe *PropertyError
	if errors.As(err, &pe) {
		if line := f.Line(pe.Key); line > 0 {
			return fmt.Errorf("client config %s:%d: %w", f.Path, line, err)
		}
	}
	return fmt.Errorf("client config %s: %w", f.Path, err)
}
