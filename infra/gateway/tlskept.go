package gateway

import (
	"bufio"
	"context"
	"fmt"
	"io"
	"maps"
	"net/http"
	"slices"
	"strconv"
	"strings"
)

// tlsKeptMetric counts the TLS legs crypto/tls keeps under crypto fast.
const tlsKeptMetric = "xp_gateway_tls_kept_total"

// The legs of a gateway connection, as xp_gateway_tls_kept_total and
// TLSKept name them.
const (
	// LegClient is the client's connection to the gateway (the gateway is
	// its TLS server).
	LegClient = "client"
	// LegUpstream is the gateway's connection to a broker (the gateway is
	// its TLS client).
	LegUpstream = "upstream"
)

// TLSKept counts TLS legs of a crypto fast gateway that crypto/tls carries
// instead of tlsrec: leg (LegClient, LegUpstream) → reason (the reason
// label of xp_gateway_tls_kept_total: not_tls13_aesgcm, no_secrets,
// sent_under_keys, untested_go) → legs. Zero counts are left out.
type TLSKept map[string]map[string]int64

// Add adds o's counts to k.
func (k TLSKept) Add(o TLSKept) {
	for leg, rs := range o {
		for reason, n := range rs {
			k.add(leg, reason, n)
		}
	}
}

func (k TLSKept) add(leg, reason string, n int64) {
	if n == 0 {
		return
	}
	if k[leg] == nil {
		k[leg] = map[string]int64{}
	}
	k[leg][reason] += n
	if k[leg][reason] == 0 {
		delete(k[leg], reason)
		if len(k[leg]) == 0 {
			delete(k, leg)
		}
	}
}

// Since is what k counts beyond an earlier reading of the same counters:
// the legs kept between the two readings.
func (k TLSKept) Since(earlier TLSKept) TLSKept {
	out := TLSKept{}
	out.Add(k)
	for leg, rs := range earlier {
		for reason, n := range rs {
			out.add(leg, reason, -n)
		}
	}
	return out
}

// Total is the number of legs counted.
func (k TLSKept) Total() int64 {
	var t int64
	for _, rs := range k {
		for _, n := range rs {
			t += n
		}
	}
	return t
}

// String lists the counts as leg:reason=legs, sorted, separated by ";"
// (runs.csv's gateway_tls_kept); "" when none.
func (k TLSKept) String() string {
	var parts []string
	for _, leg := range slices.Sorted(maps.Keys(k)) {
		for _, reason := range slices.Sorted(maps.Keys(k[leg])) {
			parts = append(parts, fmt.Sprintf("%s:%s=%d", leg, reason, k[leg][reason]))
		}
	}
	return strings.Join(parts, ";")
}

// ParseTLSKept reads xp_gateway_tls_kept_total from a gateway's metrics in
// Prometheus text format. Metrics without the series count nothing; a
// malformed line of the series is an error naming its line.
func ParseTLSKept(r io.Reader) (TLSKept, error) {
	k := TLSKept{}
	sc := bufio.NewScanner(r)
	sc.Buffer(make([]byte, 0, 64<<10), 1<<20)
	for n := 1; sc.Scan(); n++ {
		line := sc.Text()
		rest, ok := strings.CutPrefix(line, tlsKeptMetric+"{")
		if !ok {
			continue
		}
		labels, value, ok := strings.Cut(rest, "} ")
		if !ok {
			return nil, fmt.Errorf("%s line %d: %q: want %s{leg=...,reason=...} N", tlsKeptMetric, n, line, tlsKeptMetric)
		}
		var leg, reason string
		for _, l := range strings.Split(labels, ",") {
			name, v, ok := strings.Cut(l, "=")
			uq, err := strconv.Unquote(v)
			if !ok || err != nil {
				return nil, fmt.Errorf("%s line %d: label %q: want name=\"value\"", tlsKeptMetric, n, l)
			}
			switch name {
			case "leg":
				leg = uq
			case "reason":
				reason = uq
			}
		}
		v, err := strconv.ParseInt(strings.TrimSpace(value), 10, 64)
		if err != nil || v < 0 || leg == "" || reason == "" {
			return nil, fmt.Errorf("%s line %d: %q: want a leg, a reason and a count", tlsKeptMetric, n, line)
		}
		k.add(leg, reason, v)
	}
	return k, sc.Err()
}

// ReadTLSKept reads xp_gateway_tls_kept_total from a gateway's metrics
// endpoint (Gateway.MetricsURL).
func ReadTLSKept(ctx context.Context, url string) (TLSKept, error) {
	return ReadTLSKeptWith(ctx, http.DefaultClient, url)
}

// ReadTLSKeptWith is ReadTLSKept through client (e.g. one that dials
// through an SSH connection).
func ReadTLSKeptWith(ctx context.Context, client *http.Client, url string) (TLSKept, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("%s: %s", url, resp.Status)
	}
	k, err := ParseTLSKept(resp.Body)
	if err != nil {
		return nil, fmt.Errorf("%s: %w", url, err)
	}
	return k, nil
}
