package encrypt

import (
	"bytes"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/infra/gateway/records"
)

// TestRotationMidStream rotates data keys by count while producing, then
// adds a key-encryption key to the vault and reloads it mid-stream; every
// record, old and new, reads back byte-identical, through the running
// gateway and through a fresh one that has to unwrap every data key anew.
func TestRotationMidStream(t *testing.T) {
	kf := startKfake(t, "v-rot", "j-rot")
	vault := newVault(t, "k1")
	e := startGateway(t, kf, Config{Vault: vault, DataKeyMaxEncryptions: 25, Topics: testRules()})
	for _, topic := range []string{"v-rot", "j-rot"} {
		t.Run(topic, func(t *testing.T) {
			enc := "bytes"
			if topic[0] == 'j' {
				enc = EncodingJSON
			}
			first, _ := testRecords(enc, 100, 11, false)
			if err := produce(t, e.gw.Bootstrap(), topic, kgo.Lz4Compression(), first); err != nil {
				t.Fatal(err)
			}
			if topic == "v-rot" {
				if err := envelope.AddKey(vault, "k2"); err != nil {
					t.Fatal(err)
				}
				if err := e.filter.Keyring().Reload(); err != nil {
					t.Fatal(err)
				}
			}
			second, _ := testRecords(enc, 100, 12, false)
			for _, r := range second {
				r.Timestamp = r.Timestamp.Add(time.Hour)
			}
			if err := produce(t, e.gw.Bootstrap(), topic, kgo.Lz4Compression(), second); err != nil {
				t.Fatal(err)
			}
			want := map[string][]byte{}
			for _, r := range append(first, second...) {
				want[string(r.Key)+"@"+r.Timestamp.String()] = r.Value
			}
			// What rests on the broker: many data keys, and after the
			// reload a second KEK.
			dataKeys, keks := map[string]bool{}, map[string]bool{}
			for _, r := range consume(t, kf.ListenAddrs()[0], topic, 200) {
				v := r.Value
				if enc == EncodingJSON {
					var obj struct{ SSN string }
					if err := jsonUnmarshal(v, &obj); err != nil {
						t.Fatal(err)
					}
					v = mustB64(t, obj.SSN)
				}
				n := int(v[1])
				keks[string(v[2:2+n])] = true
				dataKeys[string(v[2+n:2+n+envelope.DataKeyIDSize])] = true
			}
			if len(dataKeys) < 200/25 {
				t.Fatalf("%d data keys for 200 records at 25 per key", len(dataKeys))
			}
			if topic == "v-rot" && (!keks["k1"] || !keks["k2"]) {
				t.Fatalf("KEKs at rest %v, want k1 and k2", keks)
			}
			fresh := startGateway(t, kf, Config{Vault: vault, Topics: testRules()})
			for _, bootstrap := range []string{e.gw.Bootstrap(), fresh.gw.Bootstrap()} {
				got := consume(t, bootstrap, topic, 200)
				for _, r := range got {
					if w, ok := want[string(r.Key)+"@"+r.Timestamp.String()]; !ok || !bytes.Equal(w, r.Value) {
						t.Fatalf("record %d/%d not read back byte-identical", r.Partition, r.Offset)
					}
				}
			}
		})
	}
}

// TestVaultReloadWithoutRestart: a key appended to the vault file is
// picked up by a running filter within its reload interval, and new data
// is wrapped under it.
func TestVaultReloadWithoutRestart(t *testing.T) {
	vault := newVault(t, "k1")
	f, err := New(Config{Vault: vault, VaultReload: 20 * time.Millisecond, Topics: testRules()}, ".")
	if err != nil {
		t.Fatal(err)
	}
	rt := newRoundTripper(t, "v-reload", "bytes")
	rt.f, rt.atRest = f, true
	kekOf := func() string {
		rt.run(t)
		var kek string
		w := records.Get()
		defer records.Put(w)
		if _, err := w.Rewrite(nil, rt.rest, func(_ *records.BatchInfo, r *records.Record) (bool, error) {
			kek = string(r.Value[2 : 2+int(r.Value[1])])
			return false, nil
		}); err != nil {
			t.Fatal(err)
		}
		return kek
	}
	if got := kekOf(); got != "k1" {
		t.Fatalf("KEK %q before rotation", got)
	}
	if err := envelope.AddKey(vault, "k2"); err != nil {
		t.Fatal(err)
	}
	deadline := time.Now().Add(10 * time.Second)
	for kekOf() != "k2" {
		if time.Now().After(deadline) {
			t.Fatal("the added KEK was not picked up within 10s (reload interval 20ms)")
		}
		time.Sleep(10 * time.Millisecond)
	}
	if f.Keyring().ActiveKEK() != "k2" {
		t.Fatal("keyring not on k2")
	}
}
