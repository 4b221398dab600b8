package remote

import (
	"encoding/json"
	"reflect"
	"testing"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/target"
)

// `xp agent info` prints an agent.Info, which a deployment reads into a
// target.HostInfo: every field must arrive.
func TestAgentInfoIsHostInfo(t *testing.T) {
	in := agent.Info{OS: "linux", Arch: "arm64", Kernel: "6.8.0", Distro: "Ubuntu 24.04 LTS", CPUs: 4, MemoryMiB: 15890,
		Java: `openjdk version "17.0.12" 2024-07-16`}
	v := reflect.ValueOf(in)
	for i := range v.NumField() {
		if v.Field(i).IsZero() {
			t.Fatalf("set agent.Info.%s in this test", v.Type().Field(i).Name)
		}
	}
	b, err := json.Marshal(in)
	if err != nil {
		t.Fatal(err)
	}
	var info target.HostInfo
	if err := json.Unmarshal(b, &info); err != nil {
		t.Fatal(err)
	}
	hb, _ := json.Marshal(info)
	var sent, kept map[string]any
	json.Unmarshal(b, &sent)
	json.Unmarshal(hb, &kept)
	for k, v := range sent {
		if !reflect.DeepEqual(kept[k], v) {
			t.Errorf("agent info's %s %v is %v in the host info", k, v, kept[k])
		}
	}
}
