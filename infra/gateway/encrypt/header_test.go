package encrypt

import (
	"bytes"
	"slices"
	"testing"

	"github.com/xp-bench/xp/infra/gateway/records"
	"github.com/xp-bench/xp/planner"
)

func TestMarkerParse(t *testing.T) {
	for _, tc := range []struct {
		in           string
		ok, whole    bool
		names        []string
		key, headers bool
	}{
		{in: "1", ok: true, whole: true},
		{in: "1;k", ok: true, whole: true, key: true},
		{in: "1;h", ok: true, whole: true, headers: true},
		{in: "1;kh", ok: true, whole: true, key: true, headers: true},
		{in: "1;hk", ok: true, whole: true, key: true, headers: true},
		{in: "1:ssn", ok: true, names: []string{"ssn"}},
		{in: "1:ssn,email", ok: true, names: []string{"ssn", "email"}},
		{in: "0", ok: true},
		{in: ""},
		{in: "2"},
		{in: "1;"},
		{in: "1;kk"},
		{in: "1;x"},
		{in: "1:"},
		{in: "1:a,,b"},
		{in: "1x"},
	} {
		t.Run(tc.in, func(t *testing.T) {
			var m markerCache
			for range 2 { // parsed, then from the cache
				whole, names, ok := m.parse([]byte(tc.in))
				if ok != tc.ok || whole != tc.whole || !slices.Equal(names, tc.names) || (ok && (m.key != tc.key || m.headers != tc.headers)) {
					t.Fatalf("parse(%q) = %v %v %v k=%v h=%v", tc.in, whole, names, ok, m.key, m.headers)
				}
			}
		})
	}
}

// TestKeyAndHeaderEncryption: with encrypt_key and encrypt_headers the key
// and every header value rest as envelopes bound to their place, and come
// back byte-identical.
func TestKeyAndHeaderEncryption(t *testing.T) {
	hs := records.AppendHeader(nil, "trace", []byte("abc"))
	hs = records.AppendHeader(hs, "nil", nil)
	hs = records.AppendHeader(hs, "e2e", []byte("1750000000000"))
	recs := []records.Record{
		{Key: []byte("customer-1"), Value: []byte("secret value"), Headers: hs, NumHeaders: 3},
		{OffsetDelta: 1, Value: []byte("no key")},
		{OffsetDelta: 2, Key: []byte("customer-2")}, // tombstone, key encrypted
		{OffsetDelta: 3, Key: []byte{}, Value: []byte{}},
	}
	batch, err := records.BuildBatch(records.None, 1_750_000_000_000, recs)
	if err != nil {
		t.Fatal(err)
	}
	rt := newRoundTripper(t, "kh-x", "bytes")
	rules := append(testRules(), TopicRule{Pattern: "kh-*", Mode: planner.SecurityEncrypt, EncryptKey: true, EncryptHeaders: true})
	if rt.f, err = New(Config{Vault: newVault(t, "k1"), Topics: rules}, "."); err != nil {
		t.Fatal(err)
	}
	rt.batch, rt.atRest = batch, true
	if out := rt.run(t); !bytes.Equal(out, batch) {
		t.Fatal("not byte-identical after produce and fetch")
	}
	w := records.Get()
	defer records.Put(w)
	i := 0
	if _, err := w.Rewrite(nil, rt.rest, func(_ *records.BatchInfo, r *records.Record) (bool, error) {
		in := recs[i]
		i++
		if len(in.Key) > 0 && bytes.Contains(r.Key, in.Key) || (in.Key == nil) != (r.Key == nil) {
			t.Errorf("record %d: key at rest %q", i, r.Key)
		}
		if (in.Value == nil) != (r.Value == nil) {
			t.Errorf("record %d: null value changed", i)
		}
		k, v, _, _ := r.LastHeader()
		if string(k) != HeaderKey || string(v) != "1;kh" {
			t.Errorf("record %d: marker %s=%s", i, k, v)
		}
		return r.EachHeader(r.NumHeaders-1, func(k, v []byte) error {
			if string(k) == "trace" && bytes.Contains(v, []byte("abc")) || string(k) == "nil" && v != nil {
				t.Errorf("record %d: header %s=%q at rest", i, k, v)
			}
			return nil
		}) == nil, nil
	}); err != nil {
		t.Fatal(err)
	}
	// Swapping two header values at rest breaks both: each is bound to
	// its header's name.
	swapped := swapHeaderValues(t, rt.rest)
	p := &rt.resp.Topics[0].Partitions[0]
	p.ErrorCode, p.RecordBatches = 0, swapped
	if err := rt.f.FetchResponse(t.Context(), nil, &rt.resp); err != nil || p.ErrorCode != ErrCodeIntegrity.Code {
		t.Fatalf("swapped header values: err %v code %d, want %d", err, p.ErrorCode, ErrCodeIntegrity.Code)
	}
}

// swapHeaderValues exchanges the values of the first record's first and
// third headers.
func swapHeaderValues(t *testing.T, set []byte) []byte {
	w := records.Get()
	defer records.Put(w)
	first := true
	out, err := w.Rewrite(nil, set, func(_ *records.BatchInfo, r *records.Record) (bool, error) {
		if !first {
			return false, nil
		}
		first = false
		var ks, vs [][]byte
		if err := r.EachHeader(r.NumHeaders, func(k, v []byte) error {
			ks, vs = append(ks, k), append(vs, v)
			return nil
		}); err != nil {
			return false, err
		}
		vs[0], vs[2] = vs[2], vs[0]
		var hs []byte
		for i := range ks {
			hs = records.AppendHeaderBytes(hs, ks[i], vs[i])
		}
		r.Headers = hs
		return true, nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return out
}
