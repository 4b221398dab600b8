package runner

import (
	"maps"
	"testing"
	"time"

	"github.com/xp-bench/xp/planner"
)

// The CPU per message sums the broker-side hosts of each role, named by
// role (the embedded cluster's process as the broker), only when every
// host of the role was read at both ends of the window, and the gateways
// likewise; a row without a gateway has a gateway CPU of 0 only where the
// target samples its hosts.
func TestCPUPerMessage(t *testing.T) {
	ms := time.Millisecond
	tel := func(roles map[string]string, measure, drain map[string]time.Duration) *telemetry {
		return &telemetry{roles: roles, marks: map[string]map[string]time.Duration{"measure": measure, "drain": drain}}
	}
	for _, c := range []struct {
		name                       string
		tel                        *telemetry
		needsGateway, hasTelemetry bool
		want                       map[string]float64
	}{
		{"direct, target samples", tel(map[string]string{"k": planner.RoleCluster}, map[string]time.Duration{"k": 0}, map[string]time.Duration{"k": 2 * ms}),
			false, true, map[string]float64{"host_cpu_broker_us_per_msg": 2, "gateway_cpu_us_per_msg": 0}},
		{"direct, runner's own sampling", tel(map[string]string{"k": planner.RoleCluster}, map[string]time.Duration{"k": 0}, map[string]time.Duration{"k": 2 * ms}),
			false, false, map[string]float64{"host_cpu_broker_us_per_msg": 2}},
		{"brokers and controller, not clients", tel(map[string]string{"b1": planner.RoleBroker, "c1": planner.RoleController, "l": planner.RoleClient},
			map[string]time.Duration{"b1": ms, "c1": ms, "l": 0}, map[string]time.Duration{"b1": 3 * ms, "c1": 2 * ms, "l": 9 * ms}),
			false, false, map[string]float64{"host_cpu_broker_us_per_msg": 2, "host_cpu_controller_us_per_msg": 1}},
		{"brokers summed", tel(map[string]string{"b1": planner.RoleBroker, "b2": planner.RoleBroker},
			map[string]time.Duration{"b1": 0, "b2": ms}, map[string]time.Duration{"b1": 2 * ms, "b2": 4 * ms}),
			false, false, map[string]float64{"host_cpu_broker_us_per_msg": 5}},
		{"host read at one end only", tel(map[string]string{"b1": planner.RoleBroker, "b2": planner.RoleBroker},
			map[string]time.Duration{"b1": 0, "b2": 0}, map[string]time.Duration{"b1": ms}),
			false, false, map[string]float64{}},
		{"gateways summed", tel(map[string]string{"g1": planner.RoleGateway, "g2": planner.RoleGateway},
			map[string]time.Duration{"g1": 0, "g2": ms}, map[string]time.Duration{"g1": 3 * ms, "g2": 2 * ms}),
			true, true, map[string]float64{"gateway_cpu_us_per_msg": 4}},
		{"a gateway read at one end only", tel(map[string]string{"g1": planner.RoleGateway, "g2": planner.RoleGateway},
			map[string]time.Duration{"g1": 0, "g2": ms}, map[string]time.Duration{"g1": 3 * ms}),
			true, true, map[string]float64{}},
		{"gateway row, no gateway sampled", tel(map[string]string{}, nil, nil),
			true, true, map[string]float64{}},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := cpuPerMessage(c.tel, 1000, c.needsGateway, c.hasTelemetry); !maps.Equal(got, c.want) {
				t.Errorf("cpuPerMessage = %v, want %v", got, c.want)
			}
		})
	}
}
