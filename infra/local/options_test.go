package local

import (
	"maps"
	"testing"
	"time"
)

// Options default to one broker on 127.0.0.1; a broker count outside 1..9
// or a host that is not an IP address is refused.
func TestOptionsWithDefaults(t *testing.T) {
	for _, c := range []struct {
		name    string
		in      Options
		brokers int
		host    string
		err     string
	}{
		{"defaults", Options{}, 1, "127.0.0.1", ""},
		{"set", Options{Brokers: 3, Host: "10.0.0.5"}, 3, "10.0.0.5", ""},
		{"IPv6", Options{Brokers: 9, Host: "::1"}, 9, "::1", ""},
		{"too many brokers", Options{Brokers: 10}, 0, "", "local: brokers 10: want 1..9"},
		{"negative brokers", Options{Brokers: -1}, 0, "", "local: brokers -1: want 1..9"},
		{"a name, not an address", Options{Host: "broker-0"}, 0, "", `local: host "broker-0": want an IP address of this machine`},
	} {
		t.Run(c.name, func(t *testing.T) {
			o, err := c.in.withDefaults()
			if c.err != "" {
				if err == nil || err.Error() != c.err {
					t.Fatalf("error %v, want %q", err, c.err)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if o.Brokers != c.brokers || o.Host != c.host {
				t.Errorf("brokers %d host %q, want %d %q", o.Brokers, o.Host, c.brokers, c.host)
			}
		})
	}
}

// kfake's brokers get 8 MiB segments, and retention in whole milliseconds
// (at least one) only when it is set.
func TestBrokerConfigs(t *testing.T) {
	seg := "8388608"
	for _, c := range []struct {
		retention time.Duration
		want      map[string]string
	}{
		{0, map[string]string{"log.segment.bytes": seg}},
		{time.Minute, map[string]string{"log.segment.bytes": seg, "log.retention.ms": "60000"}},
		{time.Microsecond, map[string]string{"log.segment.bytes": seg, "log.retention.ms": "1"}},
	} {
		if got := brokerConfigs(c.retention); !maps.Equal(got, c.want) {
			t.Errorf("brokerConfigs(%s) = %v, want %v", c.retention, got, c.want)
		}
	}
}
