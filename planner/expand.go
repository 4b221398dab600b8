package planner

import (
	"bufio"
	"errors"
	"fmt"
	"io"
	"slices"
	"strconv"
	"strings"
)

// Summary describes an expansion: what was written and what was dropped.
type Summary struct {
	Campaign   string
	Seed       int64
	Replicates int
	// Combinations is the number of level combinations crossed (before
	// replicates and drops); Cells of them were kept.
	Combinations int64
	Cells        int64
	Rows         int64
	MatchedSets  int64
	// InfraGroups counts the groups rows are ordered in: combinations of
	// the infrastructure fields' levels, other than the treatment's.
	InfraGroups int64
	// Dropped counts dropped combinations by reason, most first.
	Dropped []Drop
}

// Drop is a reason combinations were dropped and how many were.
type Drop struct {
	Reason       string
	Combinations int64
}

// ErrNoRows is returned when every combination of a spec was dropped.
var ErrNoRows = errors.New("every combination was dropped; nothing to run")

// Reasons a combination is dropped besides its level ranges and exclude
// entries.
const (
	ReasonRFOverBrokers     = "replication_factor > brokers"
	ReasonISROverRF         = "min_insync_replicas > replication_factor"
	ReasonFieldEncryptBytes = "field_encrypt needs a structured encoding (json, avro, protobuf)"
	ReasonStructuredTooBig  = "structured encoding larger than message_size"
	ReasonConcurrencyOpen   = "concurrency other than 1 needs target_rate max (closed loop)"
	ReasonNoBaseline        = "matched set lost its baseline"
	// The security surface's rules (issue 38): each names the field and
	// the fix.
	ReasonSASLMechanismNoSASL = "sasl_mechanism other than scram-sha-512 needs a sasl_ssl connection (security sasl_ssl, or a gateway with gateway_transport sasl_ssl); leave it at scram-sha-512 on other rows (an exclude entry, or include)"
	ReasonInterBrokerAlone    = "inter_broker_security other than plaintext needs brokers and replication_factor of 2 or more (with one replica nothing replicates); set inter_broker_security plaintext there"
	ReasonACLsNoAuthorizer    = "acls other than 0 needs authorizer acl; set authorizer: acl, or acls: 0"
	ReasonTLSNoTLS            = "tls_version and tls_cipher other than default need a TLS client connection (security tls, mtls or sasl_ssl, or a gateway_transport other than plaintext); leave them at default on other rows"
	ReasonTLSKeyNoTLS         = "tls_key other than ecdsa-p256 needs TLS on the row (a TLS client connection, or inter_broker_security tls or mtls); leave it at ecdsa-p256 on other rows"
	ReasonTLSCipherNoVersion  = "tls_cipher other than default needs tls_version 1.2 or 1.3: under default the version, and with it the suite, is what the two sides prefer"
	ReasonTLS13CipherGo       = "tls_cipher other than default with tls_version 1.3 needs a Java TLS server: Go's crypto/tls (xp's built-in gateway) does not let a server choose TLS 1.3 suites; use tls_version 1.2 or gateway_kind kroxylicious"
)

// reasonField names, for each reason a row cannot run, the field
// ValidatePlan reports it under.
var reasonField = map[string]string{
	ReasonRFOverBrokers: "replication_factor", ReasonISROverRF: "min_insync_replicas",
	ReasonFieldEncryptBytes: "encoding", ReasonStructuredTooBig: "message_size",
	ReasonConcurrencyOpen: "concurrency", ReasonSASLMechanismNoSASL: "sasl_mechanism",
	ReasonInterBrokerAlone: "inter_broker_security", ReasonACLsNoAuthorizer: "acls",
	ReasonTLSNoTLS: "tls_version", ReasonTLSKeyNoTLS: "tls_key", ReasonTLSCipherNoVersion: "tls_cipher", ReasonTLS13CipherGo: "tls_cipher",
}

// ClientTransport is the transport of r's client connection: its security
// mode for direct rows, its gateway_transport for gateway rows.
func (r *Row) ClientTransport() string {
	if r.NeedsGateway() {
		return r.GatewayTransport
	}
	return r.Security
}

// UsesSASL reports whether r's client connection authenticates with SASL.
func (r *Row) UsesSASL() bool { return r.ClientTransport() == SecuritySASLSSL }

// UsesTLS reports whether r's client connection is TLS.
func (r *Row) UsesTLS() bool { return r.ClientTransport() != SecurityPlaintext }

// surfaceCheck is one rule of the security surface: a row whose field
// is away from its default and for which bad holds cannot run, for
// reason; with names the other fields the rule reads, so that a spec can
// be told when no combination of their levels lets the field run.
type surfaceCheck struct {
	field  string
	with   []string
	reason string
	bad    func(*Row) bool
}

var surfaceChecks = []surfaceCheck{
	{"sasl_mechanism", []string{"security", "gateway_transport"}, ReasonSASLMechanismNoSASL,
		func(r *Row) bool { return r.SASLMechanism != SASLScramSHA512 && !r.UsesSASL() }},
	{"inter_broker_security", []string{"brokers", "replication_factor"}, ReasonInterBrokerAlone,
		func(r *Row) bool {
			return r.InterBrokerSecurity != SecurityPlaintext && (r.Brokers < 2 || r.ReplicationFactor < 2)
		}},
	{"acls", []string{"authorizer"}, ReasonACLsNoAuthorizer,
		func(r *Row) bool { return r.ACLs != 0 && r.Authorizer != AuthorizerACL }},
	{"tls_version", []string{"security", "gateway_transport"}, ReasonTLSNoTLS,
		func(r *Row) bool { return r.TLSVersion != TLSDefault && !r.UsesTLS() }},
	{"tls_cipher", []string{"security", "gateway_transport"}, ReasonTLSNoTLS,
		func(r *Row) bool { return r.TLSCipher != TLSDefault && !r.UsesTLS() }},
	{"tls_key", []string{"security", "gateway_transport", "inter_broker_security"}, ReasonTLSKeyNoTLS,
		func(r *Row) bool {
			return r.TLSKey != TLSKeyECDSAP256 && !r.UsesTLS() && r.InterBrokerSecurity == SecurityPlaintext
		}},
	{"tls_cipher", []string{"tls_version"}, ReasonTLSCipherNoVersion,
		func(r *Row) bool { return r.TLSCipher != TLSDefault && r.TLSVersion == TLSDefault }},
	{"tls_cipher", []string{"tls_version", "security", "gateway_kind"}, ReasonTLS13CipherGo,
		func(r *Row) bool {
			return r.TLSCipher != TLSDefault && r.TLSVersion == TLSVersion13 && r.NeedsGateway() && r.GatewayKind == GatewayKindBuiltin
		}},
}

// surfaceReason says why r's security surface fields cannot run, or "".
func surfaceReason(r *Row) string {
	if c := surfaceFailure(r); c != nil {
		return c.reason
	}
	return ""
}

// surfaceFailure is the first rule of the security surface r breaks, or
// nil.
func surfaceFailure(r *Row) *surfaceCheck {
	for i := range surfaceChecks {
		if surfaceChecks[i].bad(r) {
			return &surfaceChecks[i]
		}
	}
	return nil
}

// cannotRun says why row r cannot run, or "" when it can. It checks every
// field's range, then the cross-field rules.
func cannotRun(r *Row) string {
	for i := range fields {
		f := &fields[i]
		if why := f.rangeReason(f.get(r)); why != "" {
			return why
		}
	}
	switch {
	case r.ReplicationFactor > r.Brokers:
		return ReasonRFOverBrokers
	case r.MinInsyncReplicas > r.ReplicationFactor:
		return ReasonISROverRF
	case r.Security == SecurityFieldEncrypt && MinStructuredSize[r.Encoding] == 0:
		return ReasonFieldEncryptBytes
	case MinStructuredSize[r.Encoding] > r.MessageSize:
		return ReasonStructuredTooBig
	case r.Concurrency != 1 && !r.TargetRate.IsMax():
		return ReasonConcurrencyOpen
	}
	return surfaceReason(r)
}

// dim is one crossed factor: a field and its levels.
type dim struct {
	field  int
	levels []Value
}

// expander holds a spec compiled for expansion.
type expander struct {
	spec  *Spec
	base  Row
	set   []bool
	dims  []dim
	group []int // dims of infrastructure fields other than the treatment
	pair  []int // every other dim except the treatment
	treat int   // the treatment dim
	// baseIdx is the baseline's level index in the treatment dim.
	baseIdx int
	excl    [][]excl
	// included maps a group index to the sorted pair indexes the spec's
	// include entries name; nil when the spec has no include list.
	included map[int][]uint32
}

type excl struct {
	field int
	value Value
}

func compile(s *Spec) *expander {
	e := &expander{spec: s, set: make([]bool, len(fields)), treat: -1}
	e.base = Row{
		Campaign:  s.Campaign,
		Seed:      s.Seed,
		Treatment: s.Treatment,
	}
	for _, st := range s.Fixed {
		i := fieldIndex(st.Field)
		fields[i].set(&e.base, st.Value)
		e.set[i] = true
	}
	ti := fieldIndex(s.Treatment)
	for _, fac := range s.Factors {
		i := fieldIndex(fac.Field)
		e.set[i] = true
		d := len(e.dims)
		e.dims = append(e.dims, dim{field: i, levels: fac.Levels})
		switch {
		case i == ti:
			e.treat = d
			for j, l := range fac.Levels {
				if fields[i].equal(l, s.Baseline) {
					e.baseIdx = j
				}
			}
		case fields[i].infra:
			e.group = append(e.group, d)
		default:
			e.pair = append(e.pair, d)
		}
	}
	applyDefaults(&e.base, e.set)
	e.base.Baseline = fields[ti].format(s.Baseline)
	if len(s.Include) > 0 {
		e.included = e.includedCells()
	}
	for _, entry := range s.Exclude {
		var c []excl
		for _, st := range entry {
			c = append(c, excl{field: fieldIndex(st.Field), value: st.Value})
		}
		e.excl = append(e.excl, c)
	}
	return e
}

// includedCells enumerates the configurations the include entries name
// (crossing the factors an entry leaves out) as pair indexes per group.
func (e *expander) includedCells() map[int][]uint32 {
	seen := map[[2]int]bool{}
	out := map[int][]uint32{}
	nonTreat := append(slices.Clone(e.group), e.pair...)
	idx := make([]int, len(e.dims))
	for _, entry := range e.spec.Include {
		fixed := make([]bool, len(e.dims))
		for _, st := range entry {
			fi := fieldIndex(st.Field)
			for d := range e.dims {
				if e.dims[d].field == fi {
					fixed[d] = true
					idx[d] = slices.IndexFunc(e.dims[d].levels, func(v Value) bool { return fields[fi].equal(v, st.Value) })
				}
			}
		}
		var free []int
		for _, d := range nonTreat {
			if !fixed[d] {
				free = append(free, d)
				idx[d] = 0
			}
		}
		for {
			g, p := e.index(e.group, idx), e.index(e.pair, idx)
			if !seen[[2]int{g, p}] {
				seen[[2]int{g, p}] = true
				out[g] = append(out[g], uint32(p))
			}
			k := len(free) - 1
			for ; k >= 0; k-- {
				d := free[k]
				if idx[d]++; idx[d] < len(e.dims[d].levels) {
					break
				}
				idx[d] = 0
			}
			if k < 0 {
				break
			}
		}
	}
	for g := range out {
		slices.Sort(out[g])
	}
	return out
}

// index is the mixed-radix index (first dim slowest) of the level indexes
// idx of dims ds, the inverse of setLevels.
func (e *expander) index(ds []int, idx []int) int {
	x := 0
	for _, d := range ds {
		x = x*len(e.dims[d].levels) + idx[d]
	}
	return x
}

func (e *expander) size(ds []int) int {
	n := 1
	for _, d := range ds {
		n *= len(e.dims[d].levels)
	}
	return n
}

// setLevels sets the levels of dims ds from mixed-radix index x (the first
// dim varies slowest).
func (e *expander) setLevels(r *Row, ds []int, x int) {
	for k := len(ds) - 1; k >= 0; k-- {
		d := &e.dims[ds[k]]
		n := len(d.levels)
		fields[d.field].set(r, d.levels[x%n])
		x /= n
	}
}

// dropReason says why r is dropped, or "" to keep it.
func (e *expander) dropReason(r *Row) string {
	if why := cannotRun(r); why != "" {
		return why
	}
	for n, entry := range e.excl {
		match := true
		for _, x := range entry {
			if !fields[x.field].equal(fields[x.field].get(r), x.value) {
				match = false
				break
			}
		}
		if match {
			return fmt.Sprintf("exclude entry %d", n+1)
		}
	}
	return ""
}

// Expand writes the rows of s to w as JSONL, in execution order, and
// returns what it wrote and dropped. It streams: memory does not grow with
// the number of rows (only a 4-byte index per matched set of one block is
// kept for the shuffle). When every combination is dropped it returns the
// summary and ErrNoRows.
//
// Order: infrastructure groups (the crossed levels of platform,
// instance_type, brokers, kafka_version, gateways and gateway_kind, except
// the treatment) in spec level order; inside a group, blocks 1..replicates;
// inside a block, the group's matched sets in a seeded shuffle, and the rows
// of each matched set in a seeded shuffle, adjacent.
func Expand(s *Spec, w io.Writer) (Summary, error) {
	e := compile(s)
	sum := Summary{Campaign: s.Campaign, Seed: s.Seed, Replicates: s.Replicates}
	nP, nT := e.size(e.pair), 1
	if e.treat >= 0 {
		nT = len(e.dims[e.treat].levels)
	}
	groups := e.groupList()
	sum.Combinations = int64(e.size(e.group)) * int64(nP) * int64(nT)
	if e.included != nil {
		sum.Combinations = 0
		for _, ps := range e.included {
			sum.Combinations += int64(len(ps)) * int64(nT)
		}
	}
	x := &expansion{expander: e, bw: bufio.NewWriterSize(w, 64<<10), sum: &sum, dropped: map[string]int64{},
		tperm: make([]int, nT), rows: make([]Row, nT), keep: make([]bool, nT)}
	var perm []uint32
	if e.included != nil {
		for _, ps := range e.included {
			if len(ps) > cap(perm) {
				perm = make([]uint32, len(ps))
			}
		}
	} else {
		perm = make([]uint32, nP)
	}
	for _, g := range groups {
		if e.included != nil {
			perm = perm[:len(e.included[g])]
		}
		kept, err := x.expandGroup(g, perm)
		if err != nil {
			return sum, err
		}
		if kept {
			sum.InfraGroups++
		}
	}
	if err := x.bw.Flush(); err != nil {
		return sum, err
	}
	sum.Dropped = sortedDrops(x.dropped)
	if sum.Rows == 0 {
		return sum, ErrNoRows
	}
	return sum, nil
}

// groupList lists the infrastructure groups to expand, in order: every
// group, or with an include list the groups it names.
func (e *expander) groupList() []int {
	if e.included == nil {
		groups := make([]int, e.size(e.group))
		for g := range groups {
			groups[g] = g
		}
		return groups
	}
	groups := make([]int, 0, len(e.included))
	for g := range e.included {
		groups = append(groups, g)
	}
	slices.Sort(groups)
	return groups
}

// expansion is one Expand under way: where the rows go, the summary so
// far, and the buffers every matched set reuses, so that expanding
// allocates nothing per row.
type expansion struct {
	*expander
	bw      *bufio.Writer
	sum     *Summary
	dropped map[string]int64 // combinations dropped, by reason
	order   int              // the last row's position in execution order
	// rows holds one matched set, a row per treatment level; keep says
	// which of them run; tperm is their shuffled order.
	rows        []Row
	keep        []bool
	tperm       []int
	line, canon []byte
}

// expandGroup writes the blocks of infrastructure group g, 1..replicates:
// in each, the group's matched sets in a seeded shuffle. perm has room
// for the group's pair indexes. It returns whether any row was kept.
func (x *expansion) expandGroup(g int, perm []uint32) (groupKept bool, _ error) {
	for rep := 1; rep <= x.spec.Replicates; rep++ {
		rng := newRNG(x.spec.Seed, uint64(g), uint64(rep))
		if x.included != nil {
			copy(perm, x.included[g])
		} else {
			for i := range perm {
				perm[i] = uint32(i)
			}
		}
		rng.shuffle(len(perm), func(i, j int) { perm[i], perm[j] = perm[j], perm[i] })
		for _, p := range perm {
			kept, err := x.matchedSet(g, int(p), rep, rng)
			if err != nil {
				return groupKept, err
			}
			groupKept = groupKept || kept
		}
	}
	return groupKept, nil
}

// matchedSet writes the rows of the matched set of group g and pair p in
// block rep, in a seeded shuffle, and returns whether any was kept. Every
// row of the set is built and judged first: a set without its baseline is
// dropped whole. Drops are counted in block 1 only (a combination, not
// its replicates).
func (x *expansion) matchedSet(g, p, rep int, rng *rng) (bool, error) {
	kept := 0
	for t := range x.rows {
		why := x.buildRow(&x.rows[t], g, p, t)
		x.keep[t] = why == ""
		if !x.keep[t] {
			if rep == 1 {
				x.dropped[why]++
			}
		} else {
			kept++
		}
	}
	if kept > 0 && !x.keep[x.baselineIndex()] {
		if rep == 1 {
			x.dropped[ReasonNoBaseline] += int64(kept)
		}
		kept = 0
	}
	if kept == 0 {
		rng.shuffle(len(x.rows), func(int, int) {}) // keep the stream independent of drops
		return false, nil
	}
	x.sum.MatchedSets++
	if rep == 1 {
		x.sum.Cells += int64(kept)
	}
	x.canon = appendCanonical(x.canon[:0], &x.rows[x.baselineIndex()], fieldIndex(x.spec.Treatment))
	pair := hash12(x.canon)
	tperm := x.tperm
	for i := range tperm {
		tperm[i] = i
	}
	rng.shuffle(len(tperm), func(i, j int) { tperm[i], tperm[j] = tperm[j], tperm[i] })
	for _, t := range tperm {
		if !x.keep[t] {
			continue
		}
		if err := x.writeRow(&x.rows[t], pair, rep); err != nil {
			return true, err
		}
	}
	return true, nil
}

// buildRow sets r to the row of group g, pair p and treatment level t,
// with derived fields applied, and returns why it is dropped ("" to keep
// it).
func (x *expansion) buildRow(r *Row, g, p, t int) string {
	*r = x.base
	x.setLevels(r, x.group, g)
	x.setLevels(r, x.pair, p)
	if x.treat >= 0 {
		fields[x.dims[x.treat].field].set(r, x.dims[x.treat].levels[t])
	}
	applyDerived(r, x.set)
	return x.dropReason(r)
}

// writeRow gives r its identity (cell, pair, replicate and block rep,
// run, order) and writes it as a JSONL line.
func (x *expansion) writeRow(r *Row, pair string, rep int) error {
	x.canon = appendCanonical(x.canon[:0], r, -1)
	r.Cell = hash12(x.canon)
	r.Pair = pair
	r.Replicate, r.Block = rep, rep
	r.Run = RunOf(r.Cell, rep)
	x.order++
	r.Order = x.order
	x.line = appendRowJSON(x.line[:0], r)
	x.line = append(x.line, '\n')
	if _, err := x.bw.Write(x.line); err != nil {
		return err
	}
	x.sum.Rows++
	return nil
}

// sortedDrops lists the dropped combinations by reason, most first, ties
// by reason.
func sortedDrops(dropped map[string]int64) []Drop {
	var out []Drop
	for why, n := range dropped {
		out = append(out, Drop{Reason: why, Combinations: n})
	}
	slices.SortFunc(out, func(a, b Drop) int {
		if a.Combinations != b.Combinations {
			return int(b.Combinations - a.Combinations)
		}
		return strings.Compare(a.Reason, b.Reason)
	})
	return out
}

func (e *expander) baselineIndex() int {
	if e.treat < 0 {
		return 0
	}
	return e.baseIdx
}

// WriteText writes the summary for people, e.g. on stderr after expand.
func (s Summary) WriteText(w io.Writer) error {
	var b strings.Builder
	fmt.Fprintf(&b, "%s: %d rows (%d cells × %d replicates), %d matched sets, %s, seed %d\n",
		s.Campaign, s.Rows, s.Cells, s.Replicates, s.MatchedSets, Plural(int(s.InfraGroups), "infrastructure group"), s.Seed)
	var total int64
	for _, d := range s.Dropped {
		total += d.Combinations
	}
	if total > 0 {
		fmt.Fprintf(&b, "dropped %d of %d combinations:\n", total, s.Combinations)
		for _, d := range s.Dropped {
			fmt.Fprintf(&b, "  %8d  %s\n", d.Combinations, d.Reason)
		}
	}
	_, err := io.WriteString(w, b.String())
	return err
}

// Plural writes a count and its noun, "1 infrastructure group", "3
// infrastructure groups".
func Plural(n int, noun string) string {
	if n == 1 {
		return "1 " + noun
	}
	return strconv.Itoa(n) + " " + noun + "s"
}
