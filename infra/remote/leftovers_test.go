package remote

import (
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/internal/netnstest"
	"github.com/xp-bench/xp/planner"
)

// What xp infra down does on a group's machines before destroying them:
// it uploads nothing; it stops (and on the hosts platform removes) what an
// earlier run left only where xp's binary is already in the campaign's
// directory; a host it cannot reach is listed, not an error.
func TestLeftoversUploadNothing(t *testing.T) {
	bin := buildXP(t)
	n := netnstest.New(t, 3)
	log := &syncBuf{}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	// An earlier run deployed to broker-0 only and left a service there.
	pool := sshPool(t, n, log)
	earlier, err := Deploy(ctx, Options{Campaign: "c1", Pool: pool, Binary: bin, Log: log,
		Hosts: []Host{{Name: "broker-0", Role: planner.RoleBroker, SSH: n.Hosts[0].SSHAddr(), Private: n.Hosts[0].Addr}}})
	if err != nil {
		t.Fatalf("%v\n%s", err, log.String())
	}
	h := earlier.hosts["broker-0"]
	if _, err := h.c.Output(ctx, fmt.Sprintf("%s agent start --dir %s --name leftover -- sleep 600", ssh.Quote(h.xp), ssh.Quote(h.dir))); err != nil {
		t.Fatal(err)
	}
	running := func() bool {
		ps, err := n.Hosts[0].Processes()
		if err != nil {
			t.Fatal(err)
		}
		return slices.Contains(ps, "sleep")
	}
	if !running() {
		t.Fatal("the leftover service does not run")
	}
	// client-2 is down: its sshd refuses.
	if err := n.Hosts[2].StopSSHD(); err != nil {
		t.Fatal(err)
	}
	inv := &tf.Inventory{SSHUser: n.User, Hosts: tf.Hosts{
		Brokers: []tf.Host{{Name: "broker-0", PublicAddress: n.Hosts[0].Addr, PrivateAddress: n.Hosts[0].Addr, SSHPort: n.Hosts[0].SSHPort}},
		Clients: []tf.Host{
			{Name: "client-1", PublicAddress: n.Hosts[1].Addr, PrivateAddress: n.Hosts[1].Addr, SSHPort: n.Hosts[1].SSHPort},
			{Name: "client-2", PublicAddress: n.Hosts[2].Addr, PrivateAddress: n.Hosts[2].Addr, SSHPort: n.Hosts[2].SSHPort},
		}}}
	dep, err := NewDeployer(DeployerOptions{Campaign: "c1", Kafka: targetfile.Kafka{Distribution: targetfile.DistributionEmbedded},
		SSH:        targetfile.SSH{User: n.User, PrivateKey: n.UserKey, KnownHosts: targetfile.KnownHostsAcceptNew},
		KnownHosts: filepath.Join(t.TempDir(), "known_hosts"), Binary: bin, Log: log})
	if err != nil {
		t.Fatal(err)
	}
	defer dep.Close()
	uploads := strings.Count(log.String(), "xp uploaded")
	check := func(t *testing.T, what string, unreachable []string, err error) {
		t.Helper()
		if err != nil {
			t.Fatalf("%s: %v\n%s", what, err, log.String())
		}
		if len(unreachable) != 1 || !strings.HasPrefix(unreachable[0], "client-2 ("+n.Hosts[2].SSHAddr()+"): ") ||
			!strings.Contains(unreachable[0], "refused") {
			t.Errorf("%s: unreachable %q, want client-2's refusal", what, unreachable)
		}
		if got := strings.Count(log.String(), "xp uploaded"); got != uploads {
			t.Errorf("%s uploaded xp %d times", what, got-uploads)
		}
		if _, err := os.Stat(filepath.Join(n.Hosts[1].Home(), "xp")); !os.IsNotExist(err) {
			t.Errorf("%s: client-1, where no xp ran, got a campaign directory (%v)", what, err)
		}
	}
	t.Run("stop", func(t *testing.T) {
		unreachable, err := dep.StopLeftovers(ctx, inv)
		check(t, "StopLeftovers", unreachable, err)
		if running() {
			t.Error("the leftover service still runs")
		}
		if _, err := os.Stat(filepath.Join(n.Hosts[0].Home(), "xp", "c1", "broker-0", "bin", "xp")); err != nil {
			t.Errorf("StopLeftovers removed files: %v", err)
		}
	})
	t.Run("remove", func(t *testing.T) {
		unreachable, err := dep.RemoveLeftovers(ctx, inv)
		check(t, "RemoveLeftovers", unreachable, err)
		if _, err := os.Stat(filepath.Join(n.Hosts[0].Home(), "xp", "c1")); !os.IsNotExist(err) {
			t.Errorf("RemoveLeftovers left the campaign's directory on broker-0 (%v)", err)
		}
	})
}
