package localtarget

import (
	"context"
	"os"
	"path/filepath"
	"testing"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/planner"
)

// TestStartIdentity: a group's rows decide what starts beside Apache
// Kafka (nothing for SCRAM, the identity provider for oauthbearer, a KDC
// for gssapi), the brokers get its settings and the client config its
// properties, keytab and KDC files 0600.
func TestStartIdentity(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	none, err := startIdentity(ctx, []planner.Row{{SASLMechanism: planner.SASLScramSHA512}}, t.TempDir())
	if err != nil || none != nil {
		t.Fatalf("scram rows: %v, %v; want nothing started", none, err)
	}
	dir := t.TempDir()
	id, err := startIdentity(ctx, []planner.Row{{SASLMechanism: planner.SASLOAuthBearer}, {SASLMechanism: planner.SASLGSSAPI}}, dir)
	if err != nil {
		t.Fatal(err)
	}
	defer id.close()
	var o kafkaproc.Options
	id.options(&o)
	if o.OAuth == nil || o.OAuth.JWKSURL != id.idp.JWKSURL() || o.KDC == nil {
		t.Fatalf("broker options %+v", o)
	}
	conf := filepath.Join(dir, "sasl_ssl.properties")
	if err := kafkaconf.WriteClientConfig(conf, map[string]string{kafkaconf.SecurityProtocol: "sasl_ssl", kafkaconf.SASLMechanism: "SCRAM-SHA-512",
		kafkaconf.SASLUsername: "xp", kafkaconf.SASLPassword: "pw"}); err != nil {
		t.Fatal(err)
	}
	if err := id.addToClientConfig(conf); err != nil {
		t.Fatal(err)
	}
	props, err := kafkaconf.ReadClientConfig(conf)
	if err != nil {
		t.Fatal(err)
	}
	if props[kafkaconf.SASLUsername] != "xp" || props[kafkaconf.OAuthTokenURL] != id.idp.TokenURL() || props[kafkaconf.KerberosPrincipal] != "xp@"+id.kdc.Realm {
		t.Errorf("client config %v", kafkaconf.Redacted(props))
	}
	for _, p := range []string{conf, props[kafkaconf.KerberosKeytab], props[kafkaconf.KerberosKrb5Conf]} {
		if fi, err := os.Stat(p); err != nil || fi.Mode().Perm() != 0o600 {
			t.Errorf("%s: %v; want mode 0600", p, err)
		}
	}
	// Each mechanism finds a complete identity in the one config.
	for _, mech := range []string{"OAUTHBEARER", "GSSAPI"} {
		if _, err := kafkaconf.ClientOpts(kafkaconf.WithIdentity(props, mech, nil)); err != nil {
			t.Errorf("%s: %v", mech, err)
		}
	}
}
