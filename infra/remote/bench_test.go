package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
)

// BenchmarkUploadXP is the rate at which the xp binary goes to a namespace
// host over SSH (streamed, then checked by the host's sha256sum).
func BenchmarkUploadXP(b *testing.B) {
	bin := buildXP(b)
	n := netnstest.New(b, 1)
	pool, err := ssh.NewPool(ssh.Config{User: n.User, PrivateKey: n.UserKey, KnownHosts: filepath.Join(b.TempDir(), "known_hosts")})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	ctx := context.Background()
	c, err := pool.Client(ctx, n.Hosts[0].SSHAddr())
	if err != nil {
		b.Fatal(err)
	}
	st, _ := os.Stat(bin)
	b.SetBytes(st.Size())
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		// A new destination each time: the same one would be skipped.
		if _, err := c.Upload(ctx, bin, filepath.Join(n.Hosts[0].Home(), fmt.Sprintf("xp-%d", i)), 0o755); err != nil {
			b.Fatal(err)
		}
	}
}

// BenchmarkBringUp is the bring-up of a group on namespace hosts (a
// broker and a client) once the binary is there: connect, check, start the
// embedded cluster, copy the client files, ready; then tear down.
func BenchmarkBringUp(b *testing.B) {
	bin := buildXP(b)
	n := netnstest.New(b, 2)
	pool, err := ssh.NewPool(ssh.Config{User: n.User, PrivateKey: n.UserKey, KnownHosts: filepath.Join(b.TempDir(), "known_hosts")})
	if err != nil {
		b.Fatal(err)
	}
	defer pool.Close()
	hosts := []Host{{Name: "broker-0", Role: planner.RoleBroker, SSH: n.Hosts[0].SSHAddr(), Private: n.Hosts[0].Addr},
		{Name: "client-0", Role: planner.RoleClient, SSH: n.Hosts[1].SSHAddr(), Private: n.Hosts[1].Addr}}
	ctx := context.Background()
	o := Options{Campaign: "bench", Hosts: hosts, Pool: pool, Binary: bin}
	if _, err := Deploy(ctx, o); err != nil { // the first upload, not measured
		b.Fatal(err)
	}
	var total time.Duration
	b.ResetTimer()
	for i := 0; i < b.N; i++ {
		start := time.Now()
		d, err := Deploy(ctx, o)
		if err != nil {
			b.Fatal(err)
		}
		if _, err := d.StartEmbedded(ctx, 1); err != nil {
			b.Fatal(err)
		}
		total += time.Since(start)
		b.StopTimer()
		if err := d.Teardown(ctx); err != nil {
			b.Fatal(err)
		}
		b.StartTimer()
	}
	b.ReportMetric(total.Seconds()/float64(b.N), "bringup_s")
}
