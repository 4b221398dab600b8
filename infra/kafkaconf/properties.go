package kafkaconf

import (
	"bufio"
	"bytes"
	"fmt"
	"strconv"
	"strings"
	"unicode/utf8"
)

// Property is one name=value of a client config file, with the line it
// starts on.
type Property struct {
	Key, Value string
	Line       int
}

// Dialects of client config files.
const (
	// DialectLibrdkafka is what librdkafka (and `kcat -F`) reads:
	// name=value lines, # comments, no escapes.
	DialectLibrdkafka = "librdkafka"
	// DialectJava is java.util.Properties as the Java client reads it:
	// `=`, `:` or blank between name and value, # and ! comments,
	// backslash escapes and continued lines.
	DialectJava = "java"
)

// ParseProperties parses text in dialect's syntax. Errors name the line.
func ParseProperties(b []byte, dialect string) ([]Property, error) {
	if dialect == DialectJava {
		return parseJava(b)
	}
	return parseLibrdkafka(b)
}

// parseLibrdkafka reads name=value lines; blank lines and # comments are
// skipped, name and value trimmed.
func parseLibrdkafka(b []byte) ([]Property, error) {
	var out []Property
	sc := bufio.NewScanner(bytes.NewReader(b))
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := strings.TrimSpace(sc.Text())
		if line == "" || strings.HasPrefix(line, "#") {
			continue
		}
		k, v, ok := strings.Cut(line, "=")
		k = strings.TrimSpace(k)
		if !ok || k == "" {
			return nil, fmt.Errorf("%d: want name=value, got %q", n, line)
		}
		out = append(out, Property{Key: k, Value: strings.TrimSpace(v), Line: n})
	}
	return out, sc.Err()
}

// parseJava reads text as java.util.Properties.load does.
func parseJava(b []byte) ([]Property, error) {
	lines := splitLines(string(b))
	var out []Property
	for i := 0; i < len(lines); i++ {
		start := i + 1
		line := strings.TrimLeft(lines[i], " \t\f")
		if line == "" || line[0] == '#' || line[0] == '!' {
			continue
		}
		// A line ending in an odd number of backslashes goes on in the
		// next one, whose leading blanks are dropped.
		logical := line
		for continued(logical) && i+1 < len(lines) {
			i++
			logical = logical[:len(logical)-1] + strings.TrimLeft(lines[i], " \t\f")
		}
		if continued(logical) {
			logical = logical[:len(logical)-1]
		}
		k, v := splitJava(logical)
		key, err := unescapeJava(k)
		if err != nil {
			return nil, fmt.Errorf("%d: %v", start, err)
		}
		val, err := unescapeJava(v)
		if err != nil {
			return nil, fmt.Errorf("%d: %s: %v", start, key, err)
		}
		if key == "" {
			return nil, fmt.Errorf("%d: want name=value, got %q", start, line)
		}
		out = append(out, Property{Key: key, Value: val, Line: start})
	}
	return out, nil
}

// splitLines splits at \n, \r\n and \r, as Java's LineReader does.
func splitLines(s string) []string {
	s = strings.ReplaceAll(s, "\r\n", "\n")
	s = strings.ReplaceAll(s, "\r", "\n")
	s = strings.TrimSuffix(s, "\n")
	if s == "" {
		return nil
	}
	return strings.Split(s, "\n")
}

func continued(s string) bool {
	n := 0
	for i := len(s) - 1; i >= 0 && s[i] == '\\'; i-- {
		n++
	}
	return n%2 == 1
}

// splitJava splits a logical line into its escaped key and value: the key
// ends at the first unescaped '=', ':' or blank; blanks and one '=' or ':'
// after it are skipped.
func splitJava(s string) (key, value string) {
	i := 0
	for i < len(s) {
		c := s[i]
		if c == '\\' {
			i += 2
			continue
		}
		if c == '=' || c == ':' || c == ' ' || c == '\t' || c == '\f' {
			break
		}
		i++
	}
	i = min(i, len(s))
	key, rest := s[:i], s[i:]
	rest = strings.TrimLeft(rest, " \t\f")
	if rest != "" && (rest[0] == '=' || rest[0] == ':') {
		rest = strings.TrimLeft(rest[1:], " \t\f")
	}
	return key, rest
}

// unescapeJava resolves \t \n \r \f, \uXXXX and \c (any other c).
func unescapeJava(s string) (string, error) {
	if !strings.Contains(s, `\`) {
		return s, nil
	}
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if c != '\\' {
			b.WriteByte(c)
			continue
		}
		i++
		if i == len(s) {
			break
		}
		switch s[i] {
		case 't':
			b.WriteByte('\t')
		case 'n':
			b.WriteByte('\n')
		case 'r':
			b.WriteByte('\r')
		case 'f':
			b.WriteByte('\f')
		case 'u':
			if len(s)-i-1 < 4 {
				return "", fmt.Errorf(`malformed \uXXXX escape`)
			}
			n, err := strconv.ParseUint(s[i+1:i+5], 16, 16)
			if err != nil {
				return "", fmt.Errorf(`malformed \uXXXX escape %q`, s[i-1:i+5])
			}
			b.WriteRune(rune(n))
			i += 4
		default:
			r, size := utf8.DecodeRuneInString(s[i:])
			b.WriteRune(r)
			i += size - 1
		}
	}
	return b.String(), nil
}

// JavaProperty is the line `name=value` as java.util.Properties reads it
// back: backslashes and line breaks escaped, a leading blank kept.
func JavaProperty(name, value string) string {
	v := javaPropEscape(value)
	if strings.HasPrefix(v, " ") || strings.HasPrefix(v, "\t") {
		v = `\` + v
	}
	return name + "=" + v + "\n"
}
