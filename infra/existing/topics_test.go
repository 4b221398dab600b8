package existing

import (
	"context"
	"encoding/json"
	"testing"

	"github.com/xp-bench/xp/results"
)

// TestRecordedGroups: the consumer groups a campaign owns are those its
// topics events name and, for events of an xp that did not name them, the
// load generator's groups of each load's topic (or topics' prefix).
func TestRecordedGroups(t *testing.T) {
	ev := &events{}
	for _, te := range []topicsEvent{
		{Run: "r1", Topics: []string{"xp-c-r1-aa"}, Groups: []string{"xp-c-r1-aa-g0", "xp-c-r1-aa-g1"}},
		{Run: "r2", Topics: []string{"xp-c-r2-bb"}},
		{Run: "r3", Topics: []string{"xp-c-r3-cc-0", "xp-c-r3-cc-1"}},
	} {
		out, _ := json.Marshal(te)
		ev.AddInfraEvent(context.Background(), results.InfraEvent{Event: EventTopics, Outputs: out})
	}
	ev.AddInfraEvent(context.Background(), results.InfraEvent{Event: "up", Group: "g"})
	ours, err := recorded(context.Background(), ev)
	if err != nil {
		t.Fatal(err)
	}
	for g, want := range map[string]bool{
		"xp-c-r1-aa-g0": true, "xp-c-r1-aa-g1": true,
		"xp-c-r1-aa-g2": false, // not recorded, although named like one
		"xp-c-r2-bb-g0": true, "xp-c-r2-bb-g12": true,
		"xp-c-r3-cc-g0": true, "xp-c-r3-cc-0-g0": false,
		"xp-c-r2-bb-gx": false, "xp-c-r2-bb-g": false, "xp-c-r2-bb": false,
		"xp-c-r9-dd-g0": false, "payments-g0": false,
	} {
		if got := ours.group(g); got != want {
			t.Errorf("group %s: ours %v, want %v", g, got, want)
		}
	}
	if !ours.topics["xp-c-r3-cc-1"] || ours.topics["xp-c-r3-cc"] {
		t.Errorf("topics %v", ours.topics)
	}
}
