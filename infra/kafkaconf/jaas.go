package kafkaconf

import (
	"errors"
	"fmt"
	"slices"
	"strings"
)

// Login modules of the Java client's sasl.jaas.config that xp reads, and
// the SASL mechanisms each serves.
const (
	PlainLoginModule = "org.apache.kafka.common.security.plain.PlainLoginModule"
	ScramLoginModule = "org.apache.kafka.common.security.scram.ScramLoginModule"
)

var moduleMechanisms = map[string][]string{
	PlainLoginModule: {"PLAIN"},
	ScramLoginModule: {"SCRAM-SHA-256", "SCRAM-SHA-512"},
}

// jaasLogin is the one login module of a sasl.jaas.config.
type jaasLogin struct {
	Module, User, Password string
}

// parseJAAS reads a sasl.jaas.config value as Kafka's JaasConfig does:
// `CLASS FLAG key="value" ...;`, exactly one login module, values quoted
// (with backslash escapes) or bare words. Only username and password are
// understood; any other option is refused.
func parseJAAS(s string) (jaasLogin, error) {
	toks, err := jaasTokens(s)
	if err != nil {
		return jaasLogin{}, err
	}
	if len(toks) == 0 {
		return jaasLogin{}, errors.New(`empty: want e.g. ` + ScramLoginModule + ` required username="u" password="p";`)
	}
	var l jaasLogin
	modules := 0
	for i := 0; i < len(toks); {
		if toks[i].quoted || toks[i].text == ";" || toks[i].text == "=" {
			return l, fmt.Errorf("%q where a login module class was expected", toks[i].text)
		}
		modules++
		if modules > 1 {
			return l, fmt.Errorf("more than one login module (%s, %s): the Kafka client takes exactly one", l.Module, toks[i].text)
		}
		l.Module = toks[i].text
		if _, ok := moduleMechanisms[l.Module]; !ok {
			return l, fmt.Errorf("login module %s is not supported: use %s or %s", l.Module, PlainLoginModule, ScramLoginModule)
		}
		i++
		if i == len(toks) || toks[i].quoted || !slices.Contains([]string{"required", "requisite", "sufficient", "optional"}, strings.ToLower(toks[i].text)) {
			return l, fmt.Errorf("login module %s: want a control flag (required) after the class", l.Module)
		}
		i++
		for i < len(toks) && !(toks[i].text == ";" && !toks[i].quoted) {
			if i+2 >= len(toks) || toks[i+1].text != "=" || toks[i+1].quoted || toks[i].quoted {
				return l, fmt.Errorf("login module %s: want options as name=\"value\" and a closing ';'", l.Module)
			}
			name, value := toks[i].text, toks[i+2].text
			switch name {
			case "username":
				l.User = value
			case "password":
				l.Password = value
			case "tokenauth":
				return l, errors.New("tokenauth (delegation tokens) is not supported")
			default:
				return l, fmt.Errorf("login module option %q is not supported (xp reads username and password)", name)
			}
			i += 3
		}
		if i == len(toks) {
			return l, errors.New("no ';' at the end of the login module")
		}
		i++ // ';'
	}
	if l.User == "" || l.Password == "" {
		return l, errors.New(`needs username="..." and password="..."`)
	}
	return l, nil
}

type jaasToken struct {
	text   string
	quoted bool
}

// jaasTokens splits s into words, quoted strings, '=' and ';'.
func jaasTokens(s string) ([]jaasToken, error) {
	var out []jaasToken
	for i := 0; i < len(s); {
		c := s[i]
		switch {
		case c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f':
			i++
		case c == '=' || c == ';':
			out = append(out, jaasToken{text: string(c)})
			i++
		case c == '"':
			var b strings.Builder
			i++
			closed := false
			for i < len(s) {
				if s[i] == '\\' && i+1 < len(s) {
					b.WriteByte(s[i+1])
					i += 2
					continue
				}
				if s[i] == '"' {
					closed = true
					i++
					break
				}
				b.WriteByte(s[i])
				i++
			}
			if !closed {
				return nil, errors.New("a quoted value is not closed")
			}
			out = append(out, jaasToken{text: b.String(), quoted: true})
		default:
			j := i
			for j < len(s) && !strings.ContainsRune(" \t\n\r\f=;\"", rune(s[j])) {
				j++
			}
			out = append(out, jaasToken{text: s[i:j]})
			i = j
		}
	}
	return out, nil
}
