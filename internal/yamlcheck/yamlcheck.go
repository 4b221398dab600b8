// Package yamlcheck reads the YAML files people write for xp (factor
// specs, TARGET.yaml, gateway configs) strictly, and says where they are
// wrong: one document, every key of a mapping once and known, the closest
// known key suggested for a typo, each problem at its FILE:LINE.
package yamlcheck

import (
	"bytes"
	"fmt"
	"reflect"
	"slices"
	"strings"

	"go.yaml.in/yaml/v3"
)

// Error is one problem of a file at a line of it ("FILE:LINE: MSG"), or
// of the whole file when Line is 0 ("FILE: MSG").
type Error struct {
	File string
	Line int
	Msg  string
}

func (e Error) Error() string {
	if e.Line > 0 {
		return fmt.Sprintf("%s:%d: %s", e.File, e.Line, e.Msg)
	}
	return e.File + ": " + e.Msg
}

// Document decodes the first YAML document of data and returns its top
// node (the document node's content), and the document node of a second
// document, at the line where it starts, when data holds one that decodes
// (nil when not): a file of one document refuses it. The error is yaml's
// for data that is not YAML, and io.EOF for data that holds no document.
func Document(data []byte) (root, second *yaml.Node, err error) {
	dec := yaml.NewDecoder(bytes.NewReader(data))
	var doc yaml.Node
	if err := dec.Decode(&doc); err != nil {
		return nil, nil, err
	}
	var extra yaml.Node
	if dec.Decode(&extra) == nil {
		second = &extra
	}
	if doc.Kind == yaml.DocumentNode && len(doc.Content) > 0 {
		return doc.Content[0], second, nil
	}
	return &doc, second, nil
}

// KeyError is a key of a mapping given twice, or one the file's schema
// does not know.
type KeyError struct {
	// Key is the key's node (its Value and Line).
	Key *yaml.Node
	// First is the line where a key given twice was first given; 0 when
	// the key is unknown.
	First int
	// Known are the keys the mapping may have.
	Known []string
	// Path is where the mapping is: the keys leading to it, joined with
	// '.' ("" at the top); StructKeys sets it.
	Path string
}

// Twice reports whether the key was given before in its mapping (else
// it is unknown).
func (e *KeyError) Twice() bool { return e.First > 0 }

// Message is the problem as xp's files say it, prefix (e.g. "ssh.") naming
// the mapping: `PREFIXKEY appears twice (first at line N)`, or
// `unknown key PREFIX"KEY"; did you mean "K"? (keys: K1, K2)`.
func (e *KeyError) Message(prefix string) string {
	if e.Twice() {
		return fmt.Sprintf("%s%s appears twice (first at line %d)", prefix, e.Key.Value, e.First)
	}
	return fmt.Sprintf("unknown key %s%q%s (keys: %s)", prefix, e.Key.Value, Suggestion(e.Key.Value, e.Known), strings.Join(e.Known, ", "))
}

func (e *KeyError) Error() string { return e.Message("") }

// Keys calls f with each key of mapping n and its value, in file order.
// A key given before, or not one of known (nil: any key is known), is
// passed to bad instead. n must be a mapping.
func Keys(n *yaml.Node, known []string, f func(k, v *yaml.Node), bad func(*KeyError)) {
	seen := map[string]int{}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], n.Content[i+1]
		if first, twice := seen[k.Value]; twice {
			bad(&KeyError{Key: k, First: first, Known: known})
			continue
		}
		seen[k.Value] = k.Line
		if known != nil && !slices.Contains(known, k.Value) {
			bad(&KeyError{Key: k, Known: known})
			continue
		}
		f(k, v)
	}
}

// StructKeys checks the keys of mapping n, and of the mappings within it,
// against the yaml tags of the fields of struct type t (and of the struct
// types of those fields), as decoding n into a t strictly would: the first
// key given twice or unknown is returned (nil when none), with its Path.
// extra are further keys the top mapping may have, their values not
// checked.
func StructKeys(n *yaml.Node, t reflect.Type, extra ...string) *KeyError {
	return structKeys(n, t, "", extra)
}

func structKeys(n *yaml.Node, t reflect.Type, path string, extra []string) *KeyError {
	if n.Kind != yaml.MappingNode || t.Kind() != reflect.Struct {
		return nil
	}
	fields := map[string]reflect.Type{}
	var known []string
	for i := range t.NumField() {
		f := t.Field(i)
		name, _, _ := strings.Cut(f.Tag.Get("yaml"), ",")
		if name == "" || name == "-" {
			continue
		}
		ft := f.Type
		for ft.Kind() == reflect.Pointer {
			ft = ft.Elem()
		}
		fields[name] = ft
		known = append(known, name)
	}
	known = append(known, extra...)
	var found *KeyError
	Keys(n, known, func(k, v *yaml.Node) {
		if found != nil {
			return
		}
		p := k.Value
		if path != "" {
			p = path + "." + k.Value
		}
		if ft := fields[k.Value]; ft != nil {
			found = structKeys(v, ft, p, nil)
		}
	}, func(e *KeyError) {
		if found == nil {
			e.Path = path
			found = e
		}
	})
	return found
}
