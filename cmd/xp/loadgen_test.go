package main

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/xp-bench/xp/infra/local"
)

func TestLoadgenBadFlagsExit2(t *testing.T) {
	dir := t.TempDir()
	badConf := filepath.Join(dir, "bad.properties")
	os.WriteFile(badConf, []byte("bootstrap.servers\n"), 0o600)
	cases := []struct {
		name string
		args []string
		want string
	}{
		{"rate zero", []string{"--rate", "0"}, "--rate"},
		{"rate word", []string{"--rate", "fast"}, "--rate"},
		{"acks", []string{"--acks", "2"}, "--acks"},
		{"encoding", []string{"--encoding", "xml"}, "--encoding"},
		{"concurrency with fixed rate", []string{"--rate", "100", "--concurrency", "8"}, "--concurrency applies to --rate max"},
		{"message size", []string{"--message-size", "8"}, "--message-size"},
		{"duration syntax", []string{"--duration", "30"}, "duration"},
		{"unknown flag", []string{"--frobs", "3"}, "unknown flag"},
		{"zero partitions", []string{"--partitions", "0"}, "--partitions 0"},
		{"negative concurrency", []string{"--rate", "max", "--concurrency", "-1"}, "--concurrency -1"},
		{"zero topics", []string{"--topics", "0"}, "--topics 0: want at least 1"},
		{"too many topics", []string{"--topics", "1001"}, "--topics 1001"},
		{"zero duration", []string{"--duration", "0s"}, "--duration"},
		{"no bootstrap", []string{"--bootstrap", ""}, "no bootstrap"},
		{"missing client config", []string{"--client-config", filepath.Join(dir, "nope")}, "--client-config"},
		{"bad client config line", []string{"--client-config", badConf}, badConf + ":1"},
		{"positional argument", []string{"extra"}, "unknown command"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			args := append([]string{"loadgen", "--bootstrap", "127.0.0.1:9"}, tc.args...)
			code, _, stderr := runXP(t, args...)
			if code != exitUsage {
				t.Fatalf("exit %d, want 2 (stderr %q)", code, stderr)
			}
			if !strings.Contains(stderr, tc.want) {
				t.Fatalf("stderr %q does not contain %q", stderr, tc.want)
			}
		})
	}
}

func TestLoadgenJSON(t *testing.T) {
	c, err := local.Start(context.Background(), local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	code, stdout, stderr := runXP(t, "loadgen", "--client-config", c.Modes()["tls"].ClientConfig,
		"--rate", "500", "--warmup", "1s", "--duration", "2s", "--drain-timeout", "5s", "--encoding", "avro", "--json")
	if code != 0 {
		t.Fatalf("exit %d: %s", code, stderr)
	}
	var got map[string]any
	if err := json.Unmarshal([]byte(stdout), &got); err != nil {
		t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
	}
	for _, k := range []string{"healthy", "reasons", "target_rate", "publish_rate", "consume_rate", "published", "consumed",
		"errors", "backlog_max", "drain_s", "publish_latency_ms", "e2e_latency_ms", "send_delay_ms", "histograms", "series",
		"client_cpu_s", "config"} {
		if _, ok := got[k]; !ok {
			t.Errorf("JSON lacks %q", k)
		}
	}
	if got["healthy"] != true || got["published"].(float64) != 1000 {
		t.Fatalf("healthy %v published %v", got["healthy"], got["published"])
	}
	if !strings.Contains(stderr, "measure until") {
		t.Errorf("no progress on stderr: %q", stderr)
	}
}

func TestLoadgenTopics(t *testing.T) {
	c, err := local.Start(context.Background(), local.Options{Dir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	cases := []struct {
		name string
		args []string
		want func(t *testing.T, stdout string)
	}{
		{"json", []string{"--json"}, func(t *testing.T, stdout string) {
			var got struct {
				Healthy   bool  `json:"healthy"`
				Published int64 `json:"published"`
				Topics    []struct {
					Topic      string `json:"topic"`
					Partitions int    `json:"partitions"`
					Published  int64  `json:"published"`
					Consumed   int64  `json:"consumed"`
				} `json:"topics"`
				Config struct {
					Topic  string `json:"topic"`
					Topics int    `json:"topics"`
				} `json:"config"`
			}
			if err := json.Unmarshal([]byte(stdout), &got); err != nil {
				t.Fatalf("stdout is not one JSON object: %v\n%s", err, stdout)
			}
			if !got.Healthy || got.Published != 1200 || got.Config.Topic != "cli-json" || got.Config.Topics != 3 || len(got.Topics) != 3 {
				t.Fatalf("unexpected result: %+v", got)
			}
			for i, tp := range got.Topics {
				if tp.Topic != fmt.Sprintf("cli-json-%d", i) || tp.Partitions != 2 || tp.Published != 400 || tp.Consumed != 400 {
					t.Errorf("topic %d: %+v, want cli-json-%d, 2 partitions, 400 published and consumed", i, tp, i)
				}
			}
		}},
		{"text", nil, func(t *testing.T, stdout string) {
			for i := range 3 {
				want := fmt.Sprintf("topic cli-text-%d (2 partitions)  published 400  consumed 400", i)
				if !strings.Contains(stdout, want) {
					t.Errorf("stdout lacks %q:\n%s", want, stdout)
				}
			}
		}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			// One producer at 600 msg/s for 2 s: records alternate over
			// the 3 topics, 400 each.
			args := append([]string{"loadgen", "--client-config", c.Modes()["plaintext"].ClientConfig, "--topic", "cli-" + tc.name,
				"--topics", "3", "--partitions", "2", "--rate", "600", "--warmup", "1s", "--duration", "2s", "--drain-timeout", "5s"}, tc.args...)
			code, stdout, stderr := runXP(t, args...)
			if code != 0 {
				t.Fatalf("exit %d: %s", code, stderr)
			}
			tc.want(t, stdout)
		})
	}
}
