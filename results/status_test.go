package results

import (
	"encoding/json"
	"testing"
)

// TestInfraUp checks which groups count as up from their events alone.
func TestInfraUp(t *testing.T) {
	ev := func(event, group string, outputs string, cost, hourly float64) InfraEvent {
		e := InfraEvent{Event: event, Group: group, Cost: cost, HourlyUSD: hourly}
		if outputs != "" {
			e.Outputs = json.RawMessage(outputs)
		}
		return e
	}
	type up struct{ group, event, outputs string }
	for _, tc := range []struct {
		name   string
		events []InfraEvent
		want   []up
		cost   float64
	}{
		{"no events", nil, nil, 0},
		{"up then down is not up", []InfraEvent{ev("up", "g1", "", 0, 0), ev("down", "g1", "", 1.5, 0)}, nil, 1.5},
		{"up again after down: the new up", []InfraEvent{
			ev("up", "g1", `{"a":1}`, 0, 1), ev("down", "g1", "", 2, 0), ev("up", "g1", `{"a":2}`, 0, 3),
		}, []up{{"g1", "up", `{"a":2}`}}, 2},
		{"a second up keeps the first, with the latest outputs", []InfraEvent{
			ev("up", "g4", "", 0, 0.5), ev("up", "g4", `{"hosts":["a"]}`, 0, 0),
		}, []up{{"g4", "up", `{"hosts":["a"]}`}}, 0},
		{"restart: still up, its outputs", []InfraEvent{
			ev("up", "g4", `{"hosts":["a"]}`, 0, 0), ev("restart", "g4", `{"hosts":["b"]}`, 0, 0),
		}, []up{{"g4", "up", `{"hosts":["b"]}`}}, 0},
		{"restart failed: still up", []InfraEvent{ev("up", "g5", "", 0, 0), ev("restart-failed", "g5", "", 0, 0)},
			[]up{{"g5", "up", ""}}, 0},
		{"a provisioner's step last: not up", []InfraEvent{ev("up", "g6", "", 0, 0), ev("destroying", "g6", "", 0, 0)}, nil, 0},
		{"restart without an up: the restart", []InfraEvent{ev("restart", "g7", `{"x":1}`, 0, 0)},
			[]up{{"g7", "restart", `{"x":1}`}}, 0},
		{"groups in order of first event", []InfraEvent{
			ev("up", "b", "", 0.25, 0), ev("up", "a", "", 0.5, 0), ev("restart", "b", "", 0, 0),
		}, []up{{"b", "up", ""}, {"a", "up", ""}}, 0.75},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, cost := infraUp(tc.events)
			if cost != tc.cost {
				t.Errorf("cost %v, want %v", cost, tc.cost)
			}
			if len(got) != len(tc.want) {
				t.Fatalf("up %+v, want %v", got, tc.want)
			}
			for i, w := range tc.want {
				if got[i].Group != w.group || got[i].Event != w.event || string(got[i].Outputs) != w.outputs {
					t.Errorf("up[%d] = %s %s %s, want %v", i, got[i].Group, got[i].Event, got[i].Outputs, w)
				}
			}
		})
	}
}
