package yamlcheck

import (
	"errors"
	"io"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"
)

func TestError(t *testing.T) {
	if got := (Error{File: "x.yaml", Line: 3, Msg: "bad"}).Error(); got != "x.yaml:3: bad" {
		t.Errorf("with a line: %q", got)
	}
	if got := (&Error{File: "x.yaml", Msg: "bad"}).Error(); got != "x.yaml: bad" {
		t.Errorf("without: %q", got)
	}
}

func TestDocument(t *testing.T) {
	tests := []struct {
		name       string
		data       string
		kind       yaml.Kind
		line       int
		secondLine int // 0: no second document
		err        string
	}{
		{name: "mapping", data: "# a comment\n\na: 1\n", kind: yaml.MappingNode, line: 3},
		{name: "list", data: "- a\n", kind: yaml.SequenceNode, line: 1},
		{name: "second document", data: "a: 1\n---\nb: 2\n", kind: yaml.MappingNode, line: 1, secondLine: 2},
		{name: "second document not YAML", data: "a: 1\n---\nb: [\n", kind: yaml.MappingNode, line: 1},
		{name: "empty", data: "", err: io.EOF.Error()},
		{name: "comments only", data: "# nothing\n", err: io.EOF.Error()},
		{name: "not YAML", data: "a: [\n", err: "yaml: line 1: did not find expected node content"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			root, second, err := Document([]byte(tc.data))
			if tc.err != "" {
				if err == nil || err.Error() != tc.err {
					t.Fatalf("error %v, want %q", err, tc.err)
				}
				if tc.err == io.EOF.Error() && !errors.Is(err, io.EOF) {
					t.Fatalf("error %v is not io.EOF", err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if root.Kind != tc.kind || root.Line != tc.line {
				t.Errorf("root kind %v line %d, want %v line %d", root.Kind, root.Line, tc.kind, tc.line)
			}
			switch {
			case tc.secondLine == 0 && second != nil:
				t.Errorf("second document at line %d, want none", second.Line)
			case tc.secondLine != 0 && (second == nil || second.Line != tc.secondLine):
				t.Errorf("second document %v, want one at line %d", second, tc.secondLine)
			}
		})
	}
}

func mappingOf(t *testing.T, data string) *yaml.Node {
	t.Helper()
	root, _, err := Document([]byte(data))
	if err != nil {
		t.Fatal(err)
	}
	return root
}

func TestKeys(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		known []string
		keys  string   // the keys passed to f
		msgs  []string // KeyError.Message("ssh.") of each refused key
	}{
		{name: "known keys", data: "user: a\nwait: 5m\n", known: []string{"user", "wait"}, keys: "user wait"},
		{name: "any key", data: "x: 1\ny: 2\n", keys: "x y"},
		{name: "unknown key with a suggestion", data: "usr: a\nwait: 5m\n", known: []string{"user", "wait"}, keys: "wait",
			msgs: []string{`unknown key ssh."usr"; did you mean "user"? (keys: user, wait)`}},
		{name: "unknown key without", data: "colour: red\n", known: []string{"user", "wait"},
			msgs: []string{`unknown key ssh."colour" (keys: user, wait)`}},
		{name: "twice", data: "user: a\nwait: 5m\nuser: b\n", known: []string{"user", "wait"}, keys: "user wait",
			msgs: []string{"ssh.user appears twice (first at line 1)"}},
		{name: "unknown twice", data: "x: 1\nx: 2\n", known: []string{"user"},
			msgs: []string{`unknown key ssh."x" (keys: user)`, "ssh.x appears twice (first at line 1)"}},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			var keys, msgs []string
			Keys(mappingOf(t, tc.data), tc.known, func(k, v *yaml.Node) {
				keys = append(keys, k.Value)
			}, func(e *KeyError) {
				msgs = append(msgs, e.Message("ssh."))
			})
			if strings.Join(keys, " ") != tc.keys {
				t.Errorf("keys %q, want %q", keys, tc.keys)
			}
			if !reflect.DeepEqual(msgs, tc.msgs) {
				t.Errorf("refused %q, want %q", msgs, tc.msgs)
			}
		})
	}
}

type limits struct {
	MaxInFlight int `yaml:"max_in_flight"`
}

type config struct {
	Name     string   `yaml:"name,omitempty"`
	Limits   *limits  `yaml:"limits"`
	Hosts    []string `yaml:"hosts"`
	Untagged string
	Skipped  string `yaml:"-"`
}

func TestStructKeys(t *testing.T) {
	tests := []struct {
		name  string
		data  string
		extra []string
		want  string // "" = none; else Path, '|', Message("")
	}{
		{name: "known keys", data: "name: a\nlimits: {max_in_flight: 2}\nhosts: [a]\n"},
		{name: "unknown at the top", data: "name: a\nskipped: 1\n", want: `|unknown key "skipped" (keys: name, limits, hosts)`},
		{name: "unknown within", data: "limits:\n  max_inflight: 2\n", want: `limits|unknown key "max_inflight"; did you mean "max_in_flight"? (keys: max_in_flight)`},
		{name: "twice within", data: "limits:\n  max_in_flight: 2\n  max_in_flight: 3\n", want: "limits|max_in_flight appears twice (first at line 2)"},
		{name: "the first problem", data: "colour: red\nlimits: {bogus: 1}\n", want: `|unknown key "colour" (keys: name, limits, hosts)`},
		{name: "extra keys", data: "name: a\nencrypt: {anything: 1}\n", extra: []string{"encrypt"}},
		{name: "extra keys are top-level only", data: "limits: {encrypt: 1}\n", extra: []string{"encrypt"}, want: `limits|unknown key "encrypt" (keys: max_in_flight)`},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			e := StructKeys(mappingOf(t, tc.data), reflect.TypeOf(config{}), tc.extra...)
			got := ""
			if e != nil {
				got = e.Path + "|" + e.Message("")
			}
			if got != tc.want {
				t.Errorf("got %q, want %q", got, tc.want)
			}
		})
	}
}

func TestClosest(t *testing.T) {
	candidates := []string{"replicates", "brokers", "message_size", "campaign"}
	cases := []struct{ in, want string }{
		{"replicate", "replicates"},
		{"brokres", "brokers"},
		{"message-size", "message_size"},
		{"MessageSize", "message_size"},
		{"zzzzzz", ""},
		{"brokers", ""}, // an exact name needs no suggestion
	}
	for _, tc := range cases {
		t.Run(tc.in, func(t *testing.T) {
			if got := Closest(tc.in, candidates); got != tc.want {
				t.Errorf("Closest(%q) = %q, want %q", tc.in, got, tc.want)
			}
		})
	}
	if got := Suggestion("brokres", candidates); got != `; did you mean "brokers"?` {
		t.Errorf("Suggestion: %q", got)
	}
	if got := Suggestion("zzzzzz", candidates); got != "" {
		t.Errorf("Suggestion without a close candidate: %q", got)
	}
}
