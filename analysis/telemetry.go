package analysis

import (
	"cmp"
	"encoding/json"
	"math"
	"slices"
	"sort"
	"strings"
	"time"

	"github.com/xp-bench/xp/planner"
	"github.com/xp-bench/xp/results"
)

// Telemetry metrics as the runner stores them (runner/telemetry.go):
// cumulative CPU seconds and byte counters since the attempt began, and
// resident (local) or used (remote) memory.
const (
	telCPU       = "cpu_s"
	telMem       = "rss_mib"
	telNetIn     = "net_in_bytes"
	telNetOut    = "net_out_bytes"
	telDiskRead  = "disk_read_bytes"
	telDiskWrite = "disk_write_bytes"
)

// HostUse is what one host did over one attempt's measured window. A
// value the host's samples do not give is NaN.
type HostUse struct {
	Host, Role string
	// CPUCores is CPU seconds per second of the window: cores kept busy
	// (the process on the local target, the whole machine on a remote one).
	CPUCores float64
	// MemMaxMiB is the largest memory sample in the window, MiB.
	MemMaxMiB float64
	// Network and disk throughput over the window, MiB/s.
	NetRxMiBs, NetTxMiBs, DiskReadMiBs, DiskWriteMiBs float64
}

// RoleUse summarises the hosts of one role over the healthy final attempts
// of one configuration and treatment level: per attempt the mean over the
// role's hosts (memory: the largest), then the mean over the attempts
// (memory: the largest). NaN where no host of the role measured it.
type RoleUse struct {
	Pair, Level, Role string
	// Hosts names the role's hosts seen in any of the attempts.
	Hosts []string
	// Attempts counts the attempts with telemetry of the role.
	Attempts                                          int
	CPUCores, MemMaxMiB                               float64
	NetRxMiBs, NetTxMiBs, DiskReadMiBs, DiskWriteMiBs float64
}

// roleOrder sorts roles in the report: the cluster's, then the gateway,
// then the clients; others after them by name.
var roleOrder = []string{planner.RoleBroker, planner.RoleController, planner.RoleCluster, planner.RoleGateway, planner.RoleClient}

// measuredWindow reads the measurement window from the load generator's
// --json output (the attempt's loadgen.json log).
func measuredWindow(loadgenJSON []byte) (start, end time.Time, ok bool) {
	var w struct {
		Start time.Time `json:"start"`
		End   time.Time `json:"end"`
	}
	if json.Unmarshal(loadgenJSON, &w) != nil || w.Start.IsZero() || !w.End.After(w.Start) {
		return time.Time{}, time.Time{}, false
	}
	return w.Start, w.End, true
}

// HostRoles maps the attempt's machines (environment "machines": name,
// role) to their roles.
func HostRoles(env json.RawMessage) map[string]string {
	var e struct {
		Machines []struct {
			Name string `json:"name"`
			Role string `json:"role"`
		} `json:"machines"`
	}
	out := map[string]string{}
	if json.Unmarshal(env, &e) == nil {
		for _, m := range e.Machines {
			out[m.Name] = m.Role
		}
	}
	return out
}

// localRole is the role of a process the local target names: cluster,
// gateway and client are their own roles, broker-N a broker and
// controller-N a controller (Apache Kafka's JVMs); any other name is its
// own role.
func localRole(host string) string {
	for _, r := range []string{planner.RoleBroker, planner.RoleController} {
		if strings.HasPrefix(host, r+"-") {
			return r
		}
	}
	return host
}

// summariseHosts returns each host's use over [start, end]. Cumulative
// counters are read at the window's ends by linear interpolation between
// the samples around them (clipped to the samples' span), so the rate is
// the counter's growth over the window divided by its length; memory is the
// largest sample inside the window. A host not named in roles takes the
// role its local-target name says (localRole).
func summariseHosts(samples []results.Sample, roles map[string]string, start, end time.Time) []HostUse {
	type point struct {
		t time.Time
		v float64
	}
	series := map[string]map[string][]point{}
	for _, s := range samples {
		if series[s.Host] == nil {
			series[s.Host] = map[string][]point{}
		}
		series[s.Host][s.Metric] = append(series[s.Host][s.Metric], point{s.TS, s.Value})
	}
	rate := func(ps []point) float64 {
		if len(ps) < 2 {
			return math.NaN()
		}
		sort.SliceStable(ps, func(i, j int) bool { return ps[i].t.Before(ps[j].t) })
		a, b := start, end
		if a.Before(ps[0].t) {
			a = ps[0].t
		}
		if last := ps[len(ps)-1].t; b.After(last) {
			b = last
		}
		secs := b.Sub(a).Seconds()
		if secs <= 0 {
			return math.NaN()
		}
		at := func(t time.Time) float64 {
			i := sort.Search(len(ps), func(i int) bool { return !ps[i].t.Before(t) })
			// t lies within the samples' span (clipped above).
			if i == 0 || ps[i].t.Equal(t) {
				return ps[i].v
			}
			p, q := ps[i-1], ps[i]
			f := t.Sub(p.t).Seconds() / q.t.Sub(p.t).Seconds()
			return p.v + f*(q.v-p.v)
		}
		return (at(b) - at(a)) / secs
	}
	const mib = 1 << 20
	var out []HostUse
	for host, m := range series {
		role := roles[host]
		if role == "" {
			role = localRole(host)
		}
		u := HostUse{Host: host, Role: role, CPUCores: rate(m[telCPU]), MemMaxMiB: math.NaN(),
			NetRxMiBs: rate(m[telNetIn]) / mib, NetTxMiBs: rate(m[telNetOut]) / mib,
			DiskReadMiBs: rate(m[telDiskRead]) / mib, DiskWriteMiBs: rate(m[telDiskWrite]) / mib}
		for _, p := range m[telMem] {
			if !p.t.Before(start) && !p.t.After(end) && (math.IsNaN(u.MemMaxMiB) || p.v > u.MemMaxMiB) {
				u.MemMaxMiB = p.v
			}
		}
		out = append(out, u)
	}
	slices.SortFunc(out, func(a, b HostUse) int { return cmp.Compare(a.Host, b.Host) })
	return out
}

// buildTelemetry summarises the hosts of every role per configuration and
// treatment level over the healthy final runs.
func (res *Result) buildTelemetry() {
	d := res.Dataset
	ti := slices.Index(d.Factors, d.Treatment)
	type key struct{ pair, level, role string }
	type acc struct {
		hosts    []string
		attempts int
		// sums and counts of the per-attempt means, by field index
		sum [5]float64
		n   [5]int
		mem float64
	}
	groups := map[key]*acc{}
	for i := range d.Runs {
		r := &d.Runs[i]
		if !r.Final || r.Outcome != OutcomeDone || len(r.Hosts) == 0 {
			continue
		}
		byRole := map[string][]HostUse{}
		for _, h := range r.Hosts {
			byRole[h.Role] = append(byRole[h.Role], h)
		}
		for role, hs := range byRole {
			k := key{r.Pair, r.Factors[ti], role}
			a := groups[k]
			if a == nil {
				a = &acc{mem: math.NaN()}
				groups[k] = a
			}
			a.attempts++
			for f := range a.sum {
				s, n := 0.0, 0
				for _, h := range hs {
					if v := h.field(f); !math.IsNaN(v) {
						s, n = s+v, n+1
					}
				}
				if n > 0 {
					a.sum[f] += s / float64(n)
					a.n[f]++
				}
			}
			for _, h := range hs {
				if !slices.Contains(a.hosts, h.Host) {
					a.hosts = append(a.hosts, h.Host)
				}
				if !math.IsNaN(h.MemMaxMiB) && (math.IsNaN(a.mem) || h.MemMaxMiB > a.mem) {
					a.mem = h.MemMaxMiB
				}
			}
		}
	}
	levelIdx := map[string]int{}
	for i, lv := range res.Levels {
		levelIdx[lv] = i
	}
	roleIdx := func(r string) int {
		if i := slices.Index(roleOrder, r); i >= 0 {
			return i
		}
		return len(roleOrder)
	}
	keys := make([]key, 0, len(groups))
	for k := range groups {
		keys = append(keys, k)
	}
	slices.SortFunc(keys, func(a, b key) int {
		return cmp.Or(cmp.Compare(a.pair, b.pair), cmp.Compare(levelIdx[a.level], levelIdx[b.level]),
			cmp.Compare(roleIdx(a.role), roleIdx(b.role)), cmp.Compare(a.role, b.role))
	})
	res.Telemetry = nil
	for _, k := range keys {
		a := groups[k]
		mean := func(f int) float64 {
			if a.n[f] == 0 {
				return math.NaN()
			}
			return a.sum[f] / float64(a.n[f])
		}
		slices.Sort(a.hosts)
		res.Telemetry = append(res.Telemetry, RoleUse{Pair: k.pair, Level: k.level, Role: k.role, Hosts: a.hosts,
			Attempts: a.attempts, CPUCores: mean(0), MemMaxMiB: a.mem, NetRxMiBs: mean(1), NetTxMiBs: mean(2),
			DiskReadMiBs: mean(3), DiskWriteMiBs: mean(4)})
	}
}

// field returns the averaged fields of u by index: CPU, network in and
// out, disk read and write.
func (u HostUse) field(i int) float64 {
	return [...]float64{u.CPUCores, u.NetRxMiBs, u.NetTxMiBs, u.DiskReadMiBs, u.DiskWriteMiBs}[i]
}
