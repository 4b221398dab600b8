package main

import (
	"errors"
	"testing"
	"time"

	"github.com/xp-bench/xp/runner/loadgen"
)

// Counts below 1 and durations not positive are usage errors naming the
// flag; the first one wrong, in flag order, is reported.
func TestCheckLoadgenFlags(t *testing.T) {
	ok := loadgen.Config{Topics: 1, Partitions: 6, MessageSize: 1024, Producers: 1, ConsumersPerGroup: 1,
		BatchBytes: 131072, Duration: 30 * time.Second, DrainTimeout: 30 * time.Second}
	for _, c := range []struct {
		name string
		edit func(*loadgen.Config)
		want string
	}{
		{"defaults", func(*loadgen.Config) {}, ""},
		{"zero consumer groups are loadgen's to judge", func(c *loadgen.Config) { c.ConsumerGroups = 0 }, ""},
		{"zero topics", func(c *loadgen.Config) { c.Topics = 0 }, "--topics 0: want at least 1"},
		{"negative batch bytes", func(c *loadgen.Config) { c.BatchBytes = -1 }, "--batch-bytes -1: want at least 1"},
		{"first in order", func(c *loadgen.Config) { c.Producers, c.Partitions = 0, 0 }, "--partitions 0: want at least 1"},
		{"zero duration", func(c *loadgen.Config) { c.Duration = 0 }, "--duration 0s: want a positive duration such as 30s"},
		{"negative drain timeout", func(c *loadgen.Config) { c.DrainTimeout = -time.Second }, "--drain-timeout -1s: want a positive duration such as 30s"},
	} {
		t.Run(c.name, func(t *testing.T) {
			cfg := ok
			c.edit(&cfg)
			err := checkLoadgenFlags(&cfg)
			if c.want == "" {
				if err != nil {
					t.Fatal(err)
				}
				return
			}
			var ee *exitError
			if err == nil || err.Error() != c.want || !errors.As(err, &ee) || ee.code != exitUsage {
				t.Errorf("error %v, want usage error %q", err, c.want)
			}
		})
	}
}
