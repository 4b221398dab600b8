package planner

import (
	"bytes"
	"fmt"
	"slices"
	"time"

	"go.yaml.in/yaml/v3"
)

// Prices is a price table (plans/prices.yaml): hourly on-demand prices per
// instance type for the cloud platforms, with where and when they were read.
type Prices struct {
	Currency  string                    `yaml:"currency"`
	Platforms map[string]PlatformPrices `yaml:"platforms"`
}

// PlatformPrices is one cloud's price list.
type PlatformPrices struct {
	Source string             `yaml:"source"`
	Region string             `yaml:"region"`
	Date   string             `yaml:"date"`
	Hourly map[string]float64 `yaml:"hourly"`
}

// ParsePrices reads a price table; unknown keys are errors.
func ParsePrices(data []byte) (*Prices, error) {
	var p Prices
	dec := yaml.NewDecoder(bytes.NewReader(data))
	dec.KnownFields(true)
	if err := dec.Decode(&p); err != nil {
		return nil, fmt.Errorf("price table: %w", err)
	}
	for name, pl := range p.Platforms {
		if pl.Source == "" || pl.Date == "" {
			return nil, fmt.Errorf("price table: platform %s needs a source and a date", name)
		}
		for it, h := range pl.Hourly {
			if h < 0 {
				return nil, fmt.Errorf("price table: %s %s: negative price %v", name, it, h)
			}
		}
	}
	if p.Currency == "" {
		p.Currency = "USD"
	}
	return &p, nil
}

// Hourly returns the hourly price of one instance of typ on platform; local
// and hosts machines cost nothing to xp, nor does a cluster that exists
// already (its TARGET.yaml's hourly_price_usd prices it). ok is false when
// the table has no price.
func (p *Prices) Hourly(platform, typ string) (price float64, ok bool) {
	if platform == "local" || platform == "hosts" || platform == "existing" {
		return 0, true
	}
	if p == nil {
		return 0, false
	}
	price, ok = p.Platforms[platform].Hourly[typ]
	return price, ok
}

// Time model of the estimate. Per-run overhead covers topic creation and
// deletion, client connection and writing evidence; provisioning covers
// bringing one infrastructure group up and down.
var (
	runOverhead   = map[string]time.Duration{"local": 3 * time.Second}
	provisionTime = map[string]time.Duration{"local": 5 * time.Second, "hosts": 5 * time.Minute, "existing": 10 * time.Second}
)

const (
	defaultRunOverhead   = 10 * time.Second
	defaultProvisionTime = 15 * time.Minute
	// ExpectedDrain is how long a healthy run's backlog takes to drain.
	ExpectedDrain = 2 * time.Second
)

// RunOverhead is the time a run takes on platform beyond warm-up,
// measurement and drain: 3 s locally, 10 s elsewhere.
func RunOverhead(platform string) time.Duration {
	if d, ok := runOverhead[platform]; ok {
		return d
	}
	return defaultRunOverhead
}

// ProvisionTime is the time to bring one infrastructure group up and down
// on platform: 5 s locally, 10 s for a cluster that exists already (its
// endpoints checked), 5 min on existing hosts, 15 min on a cloud.
func ProvisionTime(platform string) time.Duration {
	if d, ok := provisionTime[platform]; ok {
		return d
	}
	return defaultProvisionTime
}

// RunTime is the expected wall time of one row: warm-up + measurement +
// expected drain (at most its timeout) + per-run overhead.
func RunTime(r *Row) time.Duration {
	drain := min(time.Duration(r.DrainTimeoutS)*time.Second, ExpectedDrain)
	return time.Duration(r.WarmupS+r.DurationS)*time.Second + drain + RunOverhead(r.Platform)
}

// RunTimeMax is RunTime with the whole drain timeout spent.
func RunTimeMax(r *Row) time.Duration {
	return time.Duration(r.WarmupS+r.DurationS+r.DrainTimeoutS)*time.Second + RunOverhead(r.Platform)
}

// Estimate is the expected wall time and cost of running rows in order.
type Estimate struct {
	// Wall is the expected wall time, WallMax the time if every run spends
	// its whole drain timeout.
	Wall, WallMax time.Duration
	// Provisionings counts infrastructure bring-ups: one per run of
	// consecutive rows with one InfraKey.
	Provisionings int
	// Cost and CostMax are the matching costs in Currency of every
	// machine of a group (brokers, gateways if a row needs them, one load
	// generator) for as long as the group is up.
	Cost, CostMax float64
	Currency      string
	// Unpriced lists "platform/instance_type" without a price; their cost
	// is left out.
	Unpriced []string
}

// Machines is how many instances the infrastructure of rows sharing one
// InfraKey needs: brokers, the gateways when any row runs through one, and
// one load-generator client.
func Machines(k InfraKey, needsGateway bool) int {
	n := k.Brokers + 1
	if needsGateway {
		n += k.Gateways
	}
	return n
}

// EstimateRows estimates running rows in the order given.
func EstimateRows(rows []Row, prices *Prices) Estimate {
	est := Estimate{Currency: "USD"}
	if prices != nil {
		est.Currency = prices.Currency
	}
	for i := 0; i < len(rows); {
		k := rows[i].InfraKey()
		wall := ProvisionTime(k.Platform)
		wallMax := wall
		gw := false
		j := i
		for ; j < len(rows) && rows[j].InfraKey() == k; j++ {
			wall += RunTime(&rows[j])
			wallMax += RunTimeMax(&rows[j])
			gw = gw || rows[j].NeedsGateway()
		}
		est.Wall += wall
		est.WallMax += wallMax
		est.Provisionings++
		price, ok := prices.Hourly(k.Platform, k.InstanceType)
		if !ok {
			name := k.Platform + "/" + k.InstanceType
			if !slices.Contains(est.Unpriced, name) {
				est.Unpriced = append(est.Unpriced, name)
			}
		}
		m := float64(Machines(k, gw)) * price
		est.Cost += m * wall.Hours()
		est.CostMax += m * wallMax.Hours()
		i = j
	}
	return est
}

// EstimateReplicates estimates the campaign of rows run with n replicates
// of every cell instead of its own: the rows of replicate 1 stand for
// their cells, each infrastructure group is provisioned once and runs its
// cells n times. It equals EstimateRows of the same spec expanded with n
// replicates, and needs no expansion, so it also prices answers beyond
// MaxReplicates (xp plan power).
func EstimateReplicates(rows []Row, n int, prices *Prices) Estimate {
	var first []Row
	for _, r := range rows {
		if r.Replicate == 1 {
			first = append(first, r)
		}
	}
	est := Estimate{Currency: "USD"}
	if prices != nil {
		est.Currency = prices.Currency
	}
	// Each group's provisioning once, its runs n times: EstimateRows of
	// the group's rows, its runs' share scaled by n.
	for i := 0; i < len(first); {
		k := first[i].InfraKey()
		j := i
		for j < len(first) && first[j].InfraKey() == k {
			j++
		}
		g := EstimateRows(first[i:j], prices)
		prov := ProvisionTime(k.Platform)
		scale := func(total time.Duration) time.Duration { return prov + time.Duration(n)*(total-prov) }
		wall, wallMax := scale(g.Wall), scale(g.WallMax)
		if g.Wall > 0 {
			est.Cost += g.Cost * wall.Hours() / g.Wall.Hours()
			est.CostMax += g.CostMax * wallMax.Hours() / g.WallMax.Hours()
		}
		est.Wall += wall
		est.WallMax += wallMax
		est.Provisionings += g.Provisionings
		for _, u := range g.Unpriced {
			if !slices.Contains(est.Unpriced, u) {
				est.Unpriced = append(est.Unpriced, u)
			}
		}
		i = j
	}
	return est
}
