package local

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"reflect"
	"sort"
	"strings"
	"testing"
	"time"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/planner"
)

// TestGatewayModes starts the built-in gateway in front of the embedded
// cluster on every transport: the proxy mode is registered with its
// upstream, franz-go produces through it, kcat (with the mode's client
// config file) reads the records back through it, and a direct read of the
// upstream mode sees the same records.
func TestGatewayModes(t *testing.T) {
	c := startCluster(t, 2)
	for _, transport := range planner.DirectModes() {
		t.Run(transport, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			name := "proxy-" + strings.ReplaceAll(transport, "_", "-")
			g, err := StartGateway(ctx, c, GatewayOptions{Name: name, Transport: transport})
			if err != nil {
				t.Fatal(err)
			}
			defer g.Close()
			m, ok := c.Modes()[name]
			if !ok || m.Upstream == nil || strings.Join(m.Bootstrap, ",") != g.Bootstrap() {
				t.Fatalf("mode %s: %+v", name, m)
			}
			if !reflect.DeepEqual(*m.Upstream, c.Modes()[transport]) {
				t.Fatalf("upstream %+v, want the %s mode %+v", *m.Upstream, transport, c.Modes()[transport])
			}
			if st, err := os.Stat(m.ClientConfig); err != nil || st.Mode().Perm() != 0o600 {
				t.Fatalf("client config %s: %v %v", m.ClientConfig, st, err)
			}

			topic := "gw-" + transport
			cl := clientFor(t, m.ClientConfig)
			if _, err := kadm.NewClient(cl).CreateTopic(ctx, 2, 1, nil, topic); err != nil {
				t.Fatal(err)
			}
			const n = 50
			var want []string
			for i := range n {
				v := fmt.Sprintf("%s-%d", transport, i)
				want = append(want, v)
				cl.Produce(ctx, &kgo.Record{Topic: topic, Value: []byte(v)}, func(_ *kgo.Record, err error) {
					if err != nil {
						t.Errorf("produce: %v", err)
					}
				})
			}
			if err := cl.Flush(ctx); err != nil {
				t.Fatal(err)
			}
			sort.Strings(want)

			kcat := exec.CommandContext(ctx, "/usr/bin/kcat", "-F", m.ClientConfig, "-C", "-t", topic, "-o", "beginning", "-e", "-q", "-f", "%s\n")
			var stderr strings.Builder
			kcat.Stderr = &stderr
			out, err := kcat.Output()
			if err != nil {
				t.Fatalf("kcat through the gateway: %v\n%s", err, stderr.String())
			}
			got := strings.Fields(string(out))
			sort.Strings(got)
			if strings.Join(got, ",") != strings.Join(want, ",") {
				t.Fatalf("kcat read through the gateway:\n%v\nwant\n%v", got, want)
			}

			direct := clientFor(t, m.Upstream.ClientConfig, kgo.ConsumeTopics(topic), kgo.ConsumeResetOffset(kgo.NewOffset().AtStart()))
			var read []string
			for len(read) < n {
				fs := direct.PollFetches(ctx)
				if ctx.Err() != nil {
					t.Fatalf("direct read: %d of %d", len(read), n)
				}
				fs.EachRecord(func(r *kgo.Record) { read = append(read, string(r.Value)) })
			}
			sort.Strings(read)
			if strings.Join(read, ",") != strings.Join(want, ",") {
				t.Fatalf("direct read %v, want %v", read, want)
			}
		})
	}
	t.Run("unknown transport", func(t *testing.T) {
		if _, err := StartGateway(context.Background(), c, GatewayOptions{Name: "bad", Transport: "ssl"}); err == nil || !strings.Contains(err.Error(), `gateway transport "ssl"`) {
			t.Fatalf("error %v", err)
		}
	})
	t.Run("duplicate name", func(t *testing.T) {
		g, err := StartGateway(context.Background(), c, GatewayOptions{Transport: planner.SecurityPlaintext})
		if err != nil {
			t.Fatal(err)
		}
		defer g.Close()
		if _, err := StartGateway(context.Background(), c, GatewayOptions{Transport: planner.SecurityPlaintext}); err == nil || !strings.Contains(err.Error(), "already exists") {
			t.Fatalf("second proxy: %v", err)
		}
	})
}
