package kdc

import (
	"context"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/jcmturner/gokrb5/v8/client"
	"github.com/jcmturner/gokrb5/v8/config"
	"github.com/jcmturner/gokrb5/v8/keytab"
)

// TestKDC starts a real MIT KDC on loopback and logs in with gokrb5 from
// keytabs it made: the client's keytab gets a ticket for a service
// principal; a keytab whose keys the KDC has since replaced is refused.
func TestKDC(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	k, err := Start(ctx, Options{Dir: filepath.Join(dir, "kdc"), Realm: "GROUP.XP"})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	svc, err := k.Keytab(ctx, filepath.Join(dir, "kafka.keytab"), "kafka/127.0.0.1")
	if err != nil {
		t.Fatal(err)
	}
	old, err := k.Keytab(ctx, filepath.Join(dir, "old.keytab"), "xp")
	if err != nil {
		t.Fatal(err)
	}
	cur, err := k.Keytab(ctx, filepath.Join(dir, "xp.keytab"), "xp")
	if err != nil {
		t.Fatal(err)
	}
	for _, p := range []string{svc, cur, filepath.Join(dir, "kdc", "kdc.conf")} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v, mode %v; want 0600", p, err, fi.Mode())
		}
	}
	cfg, err := config.Load(k.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	login := func(path string) error {
		kt, err := keytab.Load(path)
		if err != nil {
			t.Fatal(err)
		}
		cl := client.NewWithKeytab("xp", "GROUP.XP", kt, cfg, client.DisablePAFXFAST(true))
		defer cl.Destroy()
		if err := cl.Login(); err != nil {
			return err
		}
		_, _, err = cl.GetServiceTicket("kafka/127.0.0.1")
		return err
	}
	if err := login(cur); err != nil {
		t.Fatalf("current keytab: %v", err)
	}
	if err := login(old); err == nil {
		t.Fatal("a keytab of replaced keys logged in")
	}
}

// TestKDCListen: the KDC listens on the address asked, which its
// krb5.conf names; an address that is not an IP is refused.
func TestKDCListen(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dir := t.TempDir()
	k, err := Start(ctx, Options{Dir: filepath.Join(dir, "kdc"), Listen: "127.0.0.2"})
	if err != nil {
		t.Fatal(err)
	}
	defer k.Close()
	conf, err := os.ReadFile(k.Krb5Conf)
	if err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(k.Address, "127.0.0.2:") || !strings.Contains(string(conf), "kdc = "+k.Address+"\n") {
		t.Errorf("KDC on %s, krb5.conf:\n%s", k.Address, conf)
	}
	if _, err := Start(ctx, Options{Dir: filepath.Join(dir, "other"), Listen: "kdc.example"}); err == nil || !strings.Contains(err.Error(), `listen address "kdc.example" is not an IP address`) {
		t.Errorf("a host name to listen on: %v", err)
	}
}
