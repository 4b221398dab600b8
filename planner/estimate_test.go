package planner

import (
	"fmt"
	"math"
	"os"
	"strings"
	"testing"
	"time"
)

func TestEstimateRows(t *testing.T) {
	prices, err := ParsePrices([]byte(`currency: USD
platforms:
  aws:
    source: test
    date: "2026-12"
    hourly: {m5.xlarge: 0.2}
`))
	if err != nil {
		t.Fatal(err)
	}
	rows, _, _ := expandRows(t, `campaign: est
replicates: 2
factors:
  security: [sasl_ssl, proxy]
  platform: [local, aws]
fixed: {brokers: 3, message_size: 1024, acks: all, target_rate: 100, warmup_s: 10, duration_s: 60, drain_timeout_s: 20}
`)
	est := EstimateRows(rows, prices)
	// local: 5 s + 4 runs × (10 + 60 + 2 + 3) s; aws: 15 min + 4 × (10 + 60 + 2 + 10) s.
	wantLocal := 5*time.Second + 4*75*time.Second
	wantAWS := 15*time.Minute + 4*82*time.Second
	if est.Wall != wantLocal+wantAWS {
		t.Errorf("wall %v, want %v", est.Wall, wantLocal+wantAWS)
	}
	if want := 5*time.Second + 4*93*time.Second + 15*time.Minute + 4*100*time.Second; est.WallMax != want {
		t.Errorf("wall max %v, want %v", est.WallMax, want)
	}
	if est.Provisionings != 2 {
		t.Errorf("provisionings %d", est.Provisionings)
	}
	// aws: 3 brokers + 1 gateway (proxy rows) + 1 client = 5 machines.
	if want := 5 * 0.2 * wantAWS.Hours(); math.Abs(est.Cost-want) > 1e-9 {
		t.Errorf("cost %v, want %v", est.Cost, want)
	}
	if len(est.Unpriced) != 0 {
		t.Errorf("unpriced %v", est.Unpriced)
	}
	// Without the price, the cost is left out and named.
	est = EstimateRows(rows, &Prices{})
	if est.Cost != 0 || len(est.Unpriced) != 1 || est.Unpriced[0] != "aws/m5.xlarge" {
		t.Errorf("cost %v unpriced %v", est.Cost, est.Unpriced)
	}
}

// TestEstimateExisting: a cluster someone else runs is priced by its
// TARGET.yaml, not the table, and comes up in seconds.
func TestEstimateExisting(t *testing.T) {
	rows, _, _ := expandRows(t, `campaign: ex
factors:
  security: [plaintext, tls]
fixed: {platform: existing, brokers: 3, message_size: 1024, acks: all, target_rate: 100, warmup_s: 10, duration_s: 60, drain_timeout_s: 20}
`)
	if rows[0].Platform != "existing" || rows[0].InstanceType != "" {
		t.Fatalf("%+v", rows[0])
	}
	est := EstimateRows(rows, &Prices{})
	if want := 10*time.Second + 2*82*time.Second; est.Wall != want || est.Cost != 0 || len(est.Unpriced) != 0 {
		t.Errorf("wall %v (want %v), cost %v, unpriced %v", est.Wall, want, est.Cost, est.Unpriced)
	}
}

func TestParsePrices(t *testing.T) {
	data, err := os.ReadFile("../plans/prices.yaml")
	if err != nil {
		t.Fatal(err)
	}
	p, err := ParsePrices(data)
	if err != nil {
		t.Fatal(err)
	}
	for _, pl := range []string{"aws", "azure"} {
		if h, ok := p.Hourly(pl, DefaultInstanceType(pl)); !ok || h <= 0 {
			t.Errorf("%s default instance type %s has no price", pl, DefaultInstanceType(pl))
		}
	}
	bad := map[string]string{
		"unknown key":    "currency: USD\nplatfroms: {}\n",
		"no source":      "platforms: {aws: {date: x, hourly: {a: 1}}}\n",
		"negative price": "platforms: {aws: {source: s, date: d, hourly: {a: -1}}}\n",
	}
	for name, src := range bad {
		if _, err := ParsePrices([]byte(src)); err == nil {
			t.Errorf("%s: no error", name)
		}
	}
}

func TestDescribeSpec(t *testing.T) {
	s := mustSpec(t, exampleSpec)
	o, err := DescribeSpec(s, nil)
	if err != nil {
		t.Fatal(err)
	}
	if o.Rows != 15 || o.Cells != 5 || o.MatchedSets != 6 || o.Replicates != 3 || o.Absent != 1 || len(o.Groups) != 1 {
		t.Errorf("overview %+v", o)
	}
	if len(o.Dropped) != 1 || o.Dropped[0].Reason != "exclude entry 1" {
		t.Errorf("dropped %v", o.Dropped)
	}
	var b strings.Builder
	if err := o.WriteText(&b); err != nil {
		t.Fatal(err)
	}
	for _, w := range []string{"security             mtls, plaintext, tls", "message_size         1024, 10240", "rows         15", "matched sets 6", "exclude entry 1", "wall time"} {
		if !strings.Contains(b.String(), w) {
			t.Errorf("show output lacks %q:\n%s", w, b.String())
		}
	}
}

// TestEstimateReplicates: the estimate of a campaign at n replicates, from
// its rows at another number, equals the estimate of the spec expanded
// with n replicates: wall time, provisionings and cost.
func TestEstimateReplicates(t *testing.T) {
	prices, err := ParsePrices([]byte("currency: USD\nplatforms:\n  aws:\n    source: test\n    date: \"2026-12\"\n    hourly: {m5.xlarge: 0.2}\n"))
	if err != nil {
		t.Fatal(err)
	}
	spec := func(n int) string {
		return fmt.Sprintf(`campaign: est
replicates: %d
factors:
  security: [sasl_ssl, proxy]
  platform: [local, aws]
  message_size: [1024, 10240]
fixed: {brokers: 3, acks: all, target_rate: 100, warmup_s: 10, duration_s: 60, drain_timeout_s: 20}
`, n)
	}
	pilot, _, _ := expandRows(t, spec(3))
	for _, n := range []int{1, 2, 7, 40} {
		rows, _, _ := expandRows(t, spec(n))
		want := EstimateRows(rows, prices)
		got := EstimateReplicates(pilot, n, prices)
		if got.Wall != want.Wall || got.WallMax != want.WallMax || got.Provisionings != want.Provisionings ||
			math.Abs(got.Cost-want.Cost) > 1e-9 || math.Abs(got.CostMax-want.CostMax) > 1e-9 {
			t.Errorf("%d replicates: %+v, want %+v", n, got, want)
		}
	}
}
