package analysis

import (
	"maps"
	"testing"
)

// TestHostMetricsByRole: host CPU metrics an earlier xp named by host are
// read by role, as xp names them now, so two campaigns join on metric
// names whatever their target; metrics already by role, and hosts of no
// known role, keep their names.
func TestHostMetricsByRole(t *testing.T) {
	for _, c := range []struct {
		name  string
		in    map[string]float64
		hosts []HostUse
		want  map[string]float64
	}{
		{"embedded cluster", map[string]float64{"host_cpu_cluster_us_per_msg": 3, "publish_rate": 9}, nil,
			map[string]float64{"host_cpu_broker_us_per_msg": 3, "publish_rate": 9}},
		{"local Apache Kafka brokers summed", map[string]float64{"host_cpu_broker-1_us_per_msg": 2, "host_cpu_broker-2_us_per_msg": 4, "host_cpu_controller-1_us_per_msg": 1}, nil,
			map[string]float64{"host_cpu_broker_us_per_msg": 6, "host_cpu_controller_us_per_msg": 1}},
		{"local broker JVM with telemetry", map[string]float64{"host_cpu_broker-1_us_per_msg": 2}, []HostUse{{Host: "broker-1", Role: "broker"}},
			map[string]float64{"host_cpu_broker_us_per_msg": 2}},
		{"remote host by its telemetry's role", map[string]float64{"host_cpu_b1_us_per_msg": 5}, []HostUse{{Host: "b1", Role: "broker"}},
			map[string]float64{"host_cpu_broker_us_per_msg": 5}},
		{"already by role", map[string]float64{"host_cpu_broker_us_per_msg": 5}, nil,
			map[string]float64{"host_cpu_broker_us_per_msg": 5}},
		{"unknown host keeps its name", map[string]float64{"host_cpu_x9_us_per_msg": 5}, nil,
			map[string]float64{"host_cpu_x9_us_per_msg": 5}},
	} {
		t.Run(c.name, func(t *testing.T) {
			in := maps.Clone(c.in)
			if got := hostMetricsByRole(in, c.hosts); !maps.Equal(got, c.want) {
				t.Errorf("got %v, want %v", got, c.want)
			}
			if !maps.Equal(in, c.in) {
				t.Errorf("the attempt's metrics were changed: %v", in)
			}
		})
	}
}
