package runner

import (
	"context"
	"reflect"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
)

// gappySource samples hosts a and b, b only while up says.
type gappySource struct{ up func() bool }

func (s gappySource) Sample(context.Context) ([]target.HostSample, error) {
	out := []target.HostSample{{Host: "a", Role: planner.RoleBroker, CPU: time.Second, MemMiB: 1}}
	if s.up() {
		out = append(out, target.HostSample{Host: "b", Role: planner.RoleClient, CPU: time.Second, MemMiB: 1})
	}
	return out, nil
}

// A host without samples for part of the measured window is a gap of that
// length; a host sampled throughout is none; stretches outside the window
// do not count.
func TestTelemetryGapsInTheMeasuredWindow(t *testing.T) {
	clock := time.Date(2025, 1, 1, 0, 0, 0, 0, time.UTC)
	sec := 0
	src := gappySource{up: func() bool { return sec < 3 || sec > 7 }}
	tel := &telemetry{ctx: context.Background(), now: func() time.Time { return clock.Add(time.Duration(sec) * time.Second) },
		sources: []target.TelemetrySource{src}, base: map[string]target.HostSample{}, roles: map[string]string{},
		marks: map[string]map[string]time.Duration{}, markAt: map[string]time.Time{}, seen: map[string][]time.Time{}}
	for sec = 0; sec <= 10; sec++ {
		switch sec {
		case 1:
			tel.phase("measure")
		case 9:
			tel.phase("drain")
		default:
			tel.sample()
		}
	}
	// b's samples: 0 1 2, then 8 9 10: from 2 to 8 nothing, 6 s of the
	// window 1..9.
	want := []telemetryGap{{Host: "b", MissingS: 6, WindowS: 8}}
	if got := tel.gaps(); !reflect.DeepEqual(got, want) {
		t.Fatalf("gaps %+v, want %+v", got, want)
	}
	// b missing from before the window opens until its end.
	sec = 0
	src.up = func() bool { return sec < 1 }
	tel2 := &telemetry{ctx: context.Background(), now: tel.now, sources: []target.TelemetrySource{src}, base: map[string]target.HostSample{},
		roles: map[string]string{}, marks: map[string]map[string]time.Duration{}, markAt: map[string]time.Time{}, seen: map[string][]time.Time{}}
	for sec = 0; sec <= 5; sec++ {
		switch sec {
		case 2:
			tel2.phase("measure")
		case 5:
			tel2.phase("drain")
		default:
			tel2.sample()
		}
	}
	if got := tel2.gaps(); !reflect.DeepEqual(got, []telemetryGap{{Host: "b", MissingS: 3, WindowS: 3}}) {
		t.Fatalf("gaps %+v", got)
	}
}
