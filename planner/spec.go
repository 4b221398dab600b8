package planner

import (
	"crypto/sha256"
	"encoding/binary"
	"errors"
	"fmt"
	"io"
	"math"
	"os"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/internal/yamlcheck"
)

// Spec is a factor spec: which levels of which row fields to cross, how
// often, and which level every other is compared against. ParseSpec reads
// one from YAML and checks it; every Spec it returns expands.
type Spec struct {
	// Campaign names the campaign, [a-z0-9-]+.
	Campaign string
	// Seed drives the run order (and, through the rows, payloads). When
	// HasSeed is false it is DefaultSeed(Campaign).
	Seed    int64
	HasSeed bool
	// Replicates is how many times every cell runs, one block each; default
	// 1, at most MaxReplicates.
	Replicates int
	// Treatment is the compared factor (default "security"), Baseline the
	// level every other level is paired against (default: its first level).
	Treatment string
	Baseline  Value
	// Factors are the crossed fields, in spec order, each with >= 1
	// distinct levels; Fixed fields take one value; every other field
	// takes its default.
	Factors []Factor
	Fixed   []Setting
	// Include, when not empty, lists the wanted configurations: a
	// combination of the non-treatment factors runs only if it matches
	// every setting of some entry (fields an entry leaves out are crossed
	// as usual), and each runs with every treatment level. Expansion
	// visits only these, so N wanted configurations cost O(N) however
	// many factors vary.
	Include [][]Setting
	// Exclude drops every row that matches all settings of any entry.
	Exclude [][]Setting
}

// Factor is one crossed field and its levels.
type Factor struct {
	Field  string
	Levels []Value
}

// Setting is one field set to one value.
type Setting struct {
	Field string
	Value Value
}

// MaxRows bounds the rows a spec may expand to before exclusions.
const MaxRows = 100_000_000

// DefaultSeed is the seed of a campaign whose spec names none: the first
// 63 bits of SHA-256("xp-seed:" + campaign).
func DefaultSeed(campaign string) int64 {
	sum := sha256.Sum256([]byte("xp-seed:" + campaign))
	return int64(binary.BigEndian.Uint64(sum[:8]) >> 1)
}

// SpecError is one problem of a spec, at a line of its file (0 when the
// problem has no single place).
type SpecError = yamlcheck.Error

// SpecErrors is every problem found in a spec, in file order.
type SpecErrors []SpecError

func (es SpecErrors) Error() string {
	s := make([]string, len(es))
	for i, e := range es {
		s[i] = e.Error()
	}
	return strings.Join(s, "\n")
}

var topKeys = []string{"campaign", "seed", "replicates", "treatment", "baseline", "factors", "fixed", "include", "exclude"}

// ReadSpec reads and checks the spec file at path.
func ReadSpec(path string) (*Spec, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return nil, err
	}
	return ParseSpec(path, data)
}

type specParser struct {
	file string
	errs SpecErrors
	// keys holds each row field's key under factors or fixed, for
	// messages about the field as a whole.
	keys map[string]*yaml.Node
}

func (p *specParser) errf(n *yaml.Node, format string, a ...any) {
	line := 0
	if n != nil {
		line = n.Line
	}
	p.errs = append(p.errs, SpecError{File: p.file, Line: line, Msg: fmt.Sprintf(format, a...)})
}

func resolve(n *yaml.Node) *yaml.Node {
	for n != nil && n.Kind == yaml.AliasNode {
		n = n.Alias
	}
	return n
}

// ParseSpec parses and checks a spec; name is the file name used in
// messages. A returned error is SpecErrors listing every problem.
func ParseSpec(name string, data []byte) (*Spec, error) {
	p := &specParser{file: name, keys: map[string]*yaml.Node{}}
	root := p.document(data)
	if root == nil {
		return nil, p.errs
	}
	s := &Spec{Replicates: 1, Treatment: "security"}
	sec := p.topLevel(s, root)
	where := map[string]string{} // field -> "factors" or "fixed"
	if sec.factors != nil {
		p.factors(s, sec.factors, where)
	}
	if sec.fixed != nil {
		p.fixed(s, sec.fixed, where)
	}
	for _, f := range fields {
		if f.required && where[f.name] == "" {
			p.errf(nil, "%s is required: give it under factors or fixed", f.name)
		}
	}
	p.treatment(s, root, sec.treatment, sec.baseline, where)
	if sec.include != nil {
		p.include(s, sec.include)
	}
	if sec.exclude != nil {
		p.exclude(s, sec.exclude, where)
	}
	if len(p.errs) == 0 {
		p.surface(s)
	}
	if len(p.errs) == 0 {
		if n := s.rowsBeforeExclusion(); n > MaxRows {
			p.errf(nil, "spec crosses to more than %d rows before exclusions; split it", MaxRows)
		}
	}
	if !s.HasSeed {
		s.Seed = DefaultSeed(s.Campaign)
	}
	if len(p.errs) > 0 {
		// File order; problems without a single place last.
		slices.SortStableFunc(p.errs, func(a, b SpecError) int {
			if (a.Line == 0) != (b.Line == 0) {
				if a.Line == 0 {
					return 1
				}
				return -1
			}
			return a.Line - b.Line
		})
		return nil, p.errs
	}
	return s, nil
}

// document decodes data as one YAML document and returns its top-level
// mapping, or nil (with the error recorded) when it is empty, not YAML,
// or not a mapping. A second document is an error, but parsing goes on.
func (p *specParser) document(data []byte) *yaml.Node {
	top, second, err := yamlcheck.Document(data)
	if err != nil {
		if errors.Is(err, io.EOF) {
			p.errf(nil, "spec is empty; it needs at least campaign and factors")
		} else {
			p.errf(nil, "%v", err)
		}
		return nil
	}
	if second != nil {
		p.errf(second, "a spec is one YAML document; remove the second '---'")
	}
	root := resolve(top)
	if root.Kind != yaml.MappingNode {
		p.errf(root, "a spec is a mapping with campaign, factors, ...; got %s", kindName(root))
		return nil
	}
	return root
}

// specSections are the top-level values of a spec that are read after
// the others, because they depend on each other.
type specSections struct {
	baseline, treatment              *yaml.Node
	factors, fixed, include, exclude *yaml.Node
}

// topLevel reads the spec's top-level keys: campaign, seed, replicates and
// treatment into s; the sections read later are returned. A key twice, an
// unknown key (with a suggestion, or the hint that row fields go under
// factors or fixed) and a missing campaign are errors.
func (p *specParser) topLevel(s *Spec, root *yaml.Node) specSections {
	var sec specSections
	campaign := false
	yamlcheck.Keys(root, topKeys, func(k, v *yaml.Node) {
		v = resolve(v)
		switch k.Value {
		case "campaign":
			campaign = true
			if str, ok := p.scalar(v, "campaign"); ok {
				if !reCampaign.MatchString(str) {
					p.errf(v, "campaign %q: use lower-case letters, digits and '-', e.g. tls-overhead", str)
				}
				s.Campaign = str
			}
		case "seed":
			if n, ok := p.integer(v, "seed"); ok {
				s.Seed, s.HasSeed = n, true
			}
		case "replicates":
			if n, ok := p.integer(v, "replicates"); ok {
				if n < 1 || n > MaxReplicates {
					p.errf(v, "replicates %d: want 1..%d", n, MaxReplicates)
				} else {
					s.Replicates = int(n)
				}
			}
		case "treatment":
			sec.treatment = v
			if str, ok := p.scalar(v, "treatment"); ok {
				if fieldIndex(str) < 0 {
					p.errf(v, "treatment %q is not a row field%s", str, yamlcheck.Suggestion(str, FieldNames()))
				} else {
					s.Treatment = str
				}
			}
		case "baseline":
			sec.baseline = v
		case "factors":
			sec.factors = v
		case "fixed":
			sec.fixed = v
		case "include":
			sec.include = v
		case "exclude":
			sec.exclude = v
		}
	}, func(e *yamlcheck.KeyError) {
		if !e.Twice() && fieldIndex(e.Key.Value) >= 0 {
			p.errf(e.Key, "unknown key %q: row fields go under factors (several levels) or fixed (one value)", e.Key.Value)
			return
		}
		p.errf(e.Key, "%s", e.Message(""))
	})
	if !campaign {
		p.errf(nil, "campaign is required, e.g. campaign: tls-overhead")
	}
	return sec
}

// rowsBeforeExclusion is levels crossed × replicates (with include: the
// combinations the entries name), saturating at math.MaxInt64.
func (s *Spec) rowsBeforeExclusion() int64 {
	mul := func(n, l int64) int64 {
		if l > 0 && n > math.MaxInt64/l {
			return math.MaxInt64
		}
		return n * l
	}
	if len(s.Include) == 0 {
		n := int64(s.Replicates)
		for _, f := range s.Factors {
			n = mul(n, int64(len(f.Levels)))
		}
		return n
	}
	var total int64
	for _, entry := range s.Include {
		n := int64(s.Replicates)
		for _, f := range s.Factors {
			if !slices.ContainsFunc(entry, func(st Setting) bool { return st.Field == f.Field }) {
				n = mul(n, int64(len(f.Levels))) // the treatment and the factors the entry leaves out
			}
		}
		if total > math.MaxInt64-n {
			return math.MaxInt64
		}
		total += n
	}
	return total
}

func kindName(n *yaml.Node) string {
	switch n.Kind {
	case yaml.MappingNode:
		return "a mapping"
	case yaml.SequenceNode:
		return "a list"
	case yaml.ScalarNode:
		if n.Tag == "!!null" {
			return "nothing"
		}
		return fmt.Sprintf("%q", n.Value)
	}
	return "something else"
}

func (p *specParser) scalar(n *yaml.Node, what string) (string, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag == "!!null" {
		p.errf(n, "%s: want a single value, got %s", what, kindName(n))
		return "", false
	}
	return n.Value, true
}

func (p *specParser) integer(n *yaml.Node, what string) (int64, bool) {
	if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
		p.errf(n, "%s: want an integer, got %s", what, kindName(n))
		return 0, false
	}
	var v int64
	if err := n.Decode(&v); err != nil {
		p.errf(n, "%s: %q is not a 64-bit integer", what, n.Value)
		return 0, false
	}
	return v, true
}

// value parses n as one value of field f.
func (p *specParser) value(f *fieldDef, n *yaml.Node, what string) (Value, bool) {
	n = resolve(n)
	switch f.kind {
	case kindInt:
		v, ok := p.integer(n, what)
		return Value{Int: v}, ok
	case kindRate:
		if n.Kind == yaml.ScalarNode && n.Tag == "!!str" && n.Value == "max" {
			return Value{Int: int64(RateMax)}, true
		}
		if n.Kind != yaml.ScalarNode || n.Tag != "!!int" {
			p.errf(n, `%s: want messages per second or "max", got %s`, what, kindName(n))
			return Value{}, false
		}
		v, ok := p.integer(n, what)
		if ok && v <= 0 {
			// Out-of-range rates are dropped like other out-of-range
			// levels, but RateMax's encoding must not be reachable.
			v = 0
		}
		return Value{Int: v}, ok
	case kindEnum:
		str, ok := p.scalar(n, what)
		if !ok {
			return Value{}, false
		}
		if !slices.Contains(f.enum, str) {
			p.errf(n, "%s: unknown level %q%s (one of %s)", what, str, yamlcheck.Suggestion(str, f.enum), strings.Join(f.enum, ", "))
			return Value{}, false
		}
		if why := f.refused[str]; why != "" {
			p.errf(n, "%s: %s is refused: %s", what, str, why)
			return Value{}, false
		}
		return Value{Str: str}, true
	case kindText:
		str, ok := p.scalar(n, what)
		if !ok {
			return Value{}, false
		}
		if !f.pattern.MatchString(str) {
			p.errf(n, "%s: %q is not %s", what, str, f.hint)
			return Value{}, false
		}
		return Value{Str: str}, true
	case kindList:
		var words []string
		switch n.Kind {
		case yaml.ScalarNode:
			if str, ok := p.scalar(n, what); ok {
				words = []string{str}
			}
		case yaml.SequenceNode:
			for _, c := range n.Content {
				if str, ok := p.scalar(resolve(c), what); ok {
					words = append(words, str)
				} else {
					return Value{}, false
				}
			}
		default:
			p.errf(n, "%s: want a list of record fields, e.g. [ssn]", what)
			return Value{}, false
		}
		l := slices.Clone(words)
		slices.Sort(l)
		if msg := f.checkWord(l); msg != "" {
			p.errf(n, "%s: %s", what, msg)
			return Value{}, false
		}
		return Value{List: l}, true
	}
	return Value{}, false
}

// fieldKey checks a field name used as a key under factors, fixed or an
// exclude entry.
func (p *specParser) fieldKey(k *yaml.Node, under string) (*fieldDef, bool) {
	i := fieldIndex(k.Value)
	if i < 0 {
		p.errf(k, "%s: unknown row field %q%s", under, k.Value, yamlcheck.Suggestion(k.Value, FieldNames()))
		return nil, false
	}
	return &fields[i], true
}

func (p *specParser) mapping(n *yaml.Node, what, example string) bool {
	if n.Kind != yaml.MappingNode {
		p.errf(n, "%s: want a mapping of row fields, e.g. %s; got %s", what, example, kindName(n))
		return false
	}
	return true
}

func (p *specParser) factors(s *Spec, n *yaml.Node, where map[string]string) {
	if !p.mapping(n, "factors", "{security: [plaintext, tls]}") {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		f, ok := p.fieldKey(k, "factors")
		if !ok {
			continue
		}
		if where[f.name] != "" {
			p.errf(k, "factors: %s appears twice", f.name)
			continue
		}
		where[f.name] = "factors"
		p.keys[f.name] = k
		if v.Kind != yaml.SequenceNode {
			p.errf(v, "factors: %s: want a list of levels, e.g. [%s]; a single value goes under fixed", f.name, exampleLevels(f))
			continue
		}
		if len(v.Content) == 0 {
			p.errf(v, "factors: %s: no levels; list at least one", f.name)
			continue
		}
		fac := Factor{Field: f.name}
		bad := false
		for _, c := range v.Content {
			val, ok := p.value(f, c, "factors: "+f.name)
			if !ok {
				bad = true
				continue
			}
			if slices.ContainsFunc(fac.Levels, func(x Value) bool { return f.equal(x, val) }) {
				p.errf(c, "factors: %s: level %s appears twice", f.name, f.format(val))
				bad = true
				continue
			}
			fac.Levels = append(fac.Levels, val)
		}
		if !bad {
			s.Factors = append(s.Factors, fac)
		}
	}
}

func exampleLevels(f *fieldDef) string {
	switch f.kind {
	case kindInt, kindRate:
		return "1, 3"
	case kindList:
		return "[ssn], [ssn, id]"
	case kindEnum:
		return strings.Join(f.enum[:min(2, len(f.enum))], ", ")
	}
	return "a, b"
}

func (p *specParser) fixed(s *Spec, n *yaml.Node, where map[string]string) {
	if !p.mapping(n, "fixed", "{brokers: 3}") {
		return
	}
	for i := 0; i+1 < len(n.Content); i += 2 {
		k, v := n.Content[i], resolve(n.Content[i+1])
		f, ok := p.fieldKey(k, "fixed")
		if !ok {
			continue
		}
		switch where[f.name] {
		case "factors":
			p.errf(k, "fixed: %s is also under factors; keep one", f.name)
			continue
		case "fixed":
			p.errf(k, "fixed: %s appears twice", f.name)
			continue
		}
		where[f.name] = "fixed"
		p.keys[f.name] = k
		if v.Kind == yaml.SequenceNode && f.kind != kindList {
			p.errf(v, "fixed: %s: want one value; several levels go under factors", f.name)
			continue
		}
		if val, ok := p.value(f, v, "fixed: "+f.name); ok {
			s.Fixed = append(s.Fixed, Setting{Field: f.name, Value: val})
		}
	}
}

func (s *Spec) factor(field string) *Factor {
	for i := range s.Factors {
		if s.Factors[i].Field == field {
			return &s.Factors[i]
		}
	}
	return nil
}

func (s *Spec) fixedValue(field string) (Value, bool) {
	for _, st := range s.Fixed {
		if st.Field == field {
			return st.Value, true
		}
	}
	return Value{}, false
}

func (p *specParser) treatment(s *Spec, root, tn, bn *yaml.Node, where map[string]string) {
	at := tn
	if at == nil {
		at = root
	}
	f := &fields[fieldIndex(s.Treatment)]
	if where[f.name] != "factors" {
		if where[f.name] == "" && f.required {
			return // already reported as missing
		}
		p.errf(at, "treatment %s: list its levels under factors, e.g. %s: [%s]", f.name, f.name, exampleLevels(f))
		return
	}
	for _, d := range derivedFrom[f.name] {
		if where[d] == "" {
			p.errf(at, "treatment %s: set %s under fixed or factors; its default depends on %s and would differ inside a matched set", f.name, d, f.name)
		}
	}
	fac := s.factor(f.name)
	if fac == nil {
		return // its levels had errors
	}
	if bn == nil {
		s.Baseline = fac.Levels[0]
		return
	}
	v, ok := p.value(f, bn, "baseline")
	if !ok {
		return
	}
	if !slices.ContainsFunc(fac.Levels, func(x Value) bool { return f.equal(x, v) }) {
		levels := make([]string, len(fac.Levels))
		for i, l := range fac.Levels {
			levels[i] = f.format(l)
		}
		p.errf(bn, "baseline %s is not a level of treatment %s (%s)%s", f.format(v), f.name, strings.Join(levels, ", "), yamlcheck.Suggestion(f.format(v), levels))
		return
	}
	s.Baseline = v
}

// include reads the include list: configurations, each a mapping of
// non-treatment factors to one of their levels.
func (p *specParser) include(s *Spec, n *yaml.Node) {
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "include: want a list of configurations, e.g. [{message_size: 1024, partitions: 16}, {message_size: 100, partitions: 1}]; got %s", kindName(n))
		return
	}
	if len(n.Content) == 0 {
		p.errf(n, "include is empty and would run nothing; remove it to cross every factor")
		return
	}
	for e, c := range n.Content {
		c = resolve(c)
		what := fmt.Sprintf("include entry %d", e+1)
		if !p.mapping(c, what, "{message_size: 1024}") {
			continue
		}
		if len(c.Content) == 0 {
			p.errf(c, "%s is empty: name the factors' levels of one configuration", what)
			continue
		}
		var entry []Setting
		ok := true
		for i := 0; i+1 < len(c.Content); i += 2 {
			k, v := c.Content[i], resolve(c.Content[i+1])
			f, fok := p.fieldKey(k, what)
			if !fok {
				ok = false
				continue
			}
			if f.name == s.Treatment {
				p.errf(k, "%s: %s is the treatment, which runs at every level for each configuration; leave it out", what, f.name)
				ok = false
				continue
			}
			fac := s.factor(f.name)
			if fac == nil {
				p.errf(k, "%s: %s is not a factor; include entries pick levels of the factors", what, f.name)
				ok = false
				continue
			}
			if slices.ContainsFunc(entry, func(st Setting) bool { return st.Field == f.name }) {
				p.errf(k, "%s: %s appears twice", what, f.name)
				ok = false
				continue
			}
			val, vok := p.value(f, v, what+": "+f.name)
			if !vok {
				ok = false
				continue
			}
			if !slices.ContainsFunc(fac.Levels, func(x Value) bool { return f.equal(x, val) }) {
				levels := make([]string, len(fac.Levels))
				for i, l := range fac.Levels {
					levels[i] = f.format(l)
				}
				p.errf(v, "%s: %s %s is not one of its levels (%s)%s", what, f.name, f.format(val), strings.Join(levels, ", "), yamlcheck.Suggestion(f.format(val), levels))
				ok = false
				continue
			}
			entry = append(entry, Setting{Field: f.name, Value: val})
		}
		if ok {
			s.Include = append(s.Include, entry)
		}
	}
}

func (p *specParser) exclude(s *Spec, n *yaml.Node, where map[string]string) {
	if n.Kind != yaml.SequenceNode {
		p.errf(n, "exclude: want a list of entries, e.g. [{security: mtls, message_size: 10240}]; got %s", kindName(n))
		return
	}
	for e, c := range n.Content {
		c = resolve(c)
		what := fmt.Sprintf("exclude entry %d", e+1)
		if !p.mapping(c, what, "{security: mtls}") {
			continue
		}
		if len(c.Content) == 0 {
			p.errf(c, "%s is empty and would drop every row", what)
			continue
		}
		var entry []Setting
		ok := true
		for i := 0; i+1 < len(c.Content); i += 2 {
			k, v := c.Content[i], resolve(c.Content[i+1])
			f, fok := p.fieldKey(k, what)
			if !fok {
				ok = false
				continue
			}
			if slices.ContainsFunc(entry, func(st Setting) bool { return st.Field == f.name }) {
				p.errf(k, "%s: %s appears twice", what, f.name)
				ok = false
				continue
			}
			val, vok := p.value(f, v, what+": "+f.name)
			if !vok {
				ok = false
				continue
			}
			switch where[f.name] {
			case "factors":
				fac := s.factor(f.name)
				if fac != nil && !slices.ContainsFunc(fac.Levels, func(x Value) bool { return f.equal(x, val) }) {
					levels := make([]string, len(fac.Levels))
					for i, l := range fac.Levels {
						levels[i] = f.format(l)
					}
					p.errf(v, "%s: %s %s is not one of its levels (%s), so it never matches%s", what, f.name, f.format(val), strings.Join(levels, ", "), yamlcheck.Suggestion(f.format(val), levels))
					ok = false
				}
			case "fixed":
				if fv, _ := s.fixedValue(f.name); !f.equal(fv, val) {
					p.errf(v, "%s: %s is fixed at %s, so %s never matches", what, f.name, f.format(fv), f.format(val))
					ok = false
				}
			}
			entry = append(entry, Setting{Field: f.name, Value: val})
		}
		if ok {
			s.Exclude = append(s.Exclude, entry)
		}
	}
}

// WriteSpec writes s as YAML that ParseSpec reads back to an equal Spec.
func WriteSpec(w io.Writer, s *Spec) error {
	var b strings.Builder
	fmt.Fprintf(&b, "campaign: %s\n", s.Campaign)
	if s.HasSeed {
		fmt.Fprintf(&b, "seed: %d\n", s.Seed)
	}
	fmt.Fprintf(&b, "replicates: %d\n", s.Replicates)
	tf := &fields[fieldIndex(s.Treatment)]
	fmt.Fprintf(&b, "treatment: %s\n", s.Treatment)
	fmt.Fprintf(&b, "baseline: %s\n", yamlValue(tf, s.Baseline))
	if len(s.Factors) > 0 {
		b.WriteString("factors:\n")
		for _, fac := range s.Factors {
			f := &fields[fieldIndex(fac.Field)]
			l := make([]string, len(fac.Levels))
			for i, v := range fac.Levels {
				l[i] = yamlValue(f, v)
			}
			fmt.Fprintf(&b, "  %s: [%s]\n", fac.Field, strings.Join(l, ", "))
		}
	}
	if len(s.Fixed) > 0 {
		b.WriteString("fixed:\n")
		for _, st := range s.Fixed {
			fmt.Fprintf(&b, "  %s: %s\n", st.Field, yamlValue(&fields[fieldIndex(st.Field)], st.Value))
		}
	}
	if len(s.Include) > 0 {
		b.WriteString("include:\n")
		for _, e := range s.Include {
			l := make([]string, len(e))
			for i, st := range e {
				l[i] = st.Field + ": " + yamlValue(&fields[fieldIndex(st.Field)], st.Value)
			}
			fmt.Fprintf(&b, "  - {%s}\n", strings.Join(l, ", "))
		}
	}
	if len(s.Exclude) > 0 {
		b.WriteString("exclude:\n")
		for _, e := range s.Exclude {
			l := make([]string, len(e))
			for i, st := range e {
				l[i] = st.Field + ": " + yamlValue(&fields[fieldIndex(st.Field)], st.Value)
			}
			fmt.Fprintf(&b, "  - {%s}\n", strings.Join(l, ", "))
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

func yamlValue(f *fieldDef, v Value) string {
	switch f.kind {
	case kindInt:
		return strconv.FormatInt(v.Int, 10)
	case kindRate:
		return Rate(v.Int).String()
	case kindList:
		return "[" + strings.Join(v.List, ", ") + "]"
	}
	return strconv.Quote(v.Str)
}

// MaxReplicates bounds a spec's replicates.
const MaxReplicates = 1000

// surface refuses a level of a security surface field that no row of
// the spec can run: for each rule, every combination of the levels of
// the fields it reads breaks it (sasl_mechanism plain with no sasl_ssl
// row, acls without authorizer acl, ...). Rows that break a rule only
// in some combinations are dropped at expansion, with the reason.
func (p *specParser) surface(s *Spec) {
	levels := func(name string) []Value {
		if fac := s.factor(name); fac != nil {
			return fac.Levels
		}
		if v, ok := s.fixedValue(name); ok {
			return []Value{v}
		}
		return nil // its default, or derived from others
	}
	for _, c := range surfaceChecks {
		fi := fieldIndex(c.field)
		f := &fields[fi]
		for _, l := range levels(c.field) {
			if f.equal(l, f.def) || p.anyRuns(c, fi, l, levels) {
				continue
			}
			p.errf(p.keys[c.field], "%s %s never runs: %s", c.field, f.format(l), c.reason)
		}
	}
}

// anyRuns reports whether some combination of the levels of the fields
// c reads lets field fi at level l pass c.
func (p *specParser) anyRuns(c surfaceCheck, fi int, l Value, levels func(string) []Value) bool {
	var vary []int
	var lv [][]Value
	for _, name := range c.with {
		if ls := levels(name); ls != nil {
			vary, lv = append(vary, fieldIndex(name)), append(lv, ls)
		}
	}
	idx := make([]int, len(vary))
	for {
		var r Row
		set := make([]bool, len(fields))
		fields[fi].set(&r, l)
		set[fi] = true
		for k, i := range vary {
			fields[i].set(&r, lv[k][idx[k]])
			set[i] = true
		}
		applyDefaults(&r, set)
		if !c.bad(&r) {
			return true
		}
		k := len(idx) - 1
		for ; k >= 0; k-- {
			if idx[k]++; idx[k] < len(lv[k]) {
				break
			}
			idx[k] = 0
		}
		if k < 0 {
			return false
		}
	}
}
