package remote

import (
	"context"
	"fmt"
	"path"
	"strings"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/planner"
)

// KafkaSecurity is what a group's cluster needs of the security surface:
// its cluster part, and whether a row logs in with GSSAPI, for which a
// KDC serves the group's realm, or OAUTHBEARER, for which xp's identity
// provider serves tokens.
type KafkaSecurity struct {
	planner.ClusterSecurity
	// GSSAPI starts an MIT KDC on the first client host (startKDC).
	GSSAPI bool
	// OAuth starts xp's identity provider on the first client host
	// (startIDP), at OAuthIssuer.
	OAuth bool
	// OAuthIssuer, when set, is the issuer URL of the identity provider
	// OAUTHBEARER rows log in at (idpIssuer of the first client host:
	// startIDP), the brokers validating its tokens.
	OAuthIssuer string
}

// The group's Kerberos realm and the files of its KDC.
const (
	kerberosRealm   = "XP.TEST"
	kerberosService = "kafka"
	// kerberosClient is the load generators' principal, xp@XP.TEST:
	// Kafka's default principal-to-local rule makes it User:xp, the SASL
	// user the authorizer's ACLs already admit.
	kerberosClient = "xp"
	kdcService     = "kdc"
	kdcDir         = "kdc"
	brokerKeytab   = "kafka.keytab"
	clientKeytab   = "xp.keytab"
	krb5Conf       = "krb5.conf"
)

// kerberos is the realm's files for the hosts, fetched from the KDC's
// host: krb5.conf naming the KDC, the brokers' keytab (every broker's
// principal kafka/ADDRESS) and the load generators'.
type kerberos struct {
	krb5Conf, brokers, client []byte
}

// startKDC starts the group's KDC as service kdc on host h, listening on
// its private address, with keytabs for the brokers at brokerAddrs and
// for the load generators, and fetches the files the other hosts need.
// The realm's database and its master key stay on h.
func (d *Deployment) startKDC(ctx context.Context, h *deployed, brokerAddrs []string) (*kerberos, error) {
	dir := path.Join(h.dir, kdcDir)
	var principals []string
	for _, a := range brokerAddrs {
		principals = append(principals, kerberosService+"/"+a)
	}
	ready := path.Join(dir, "ready")
	argv := []string{h.xp, "agent", "kdc", "--dir", dir, "--listen", h.Private, "--realm", kerberosRealm, "--ready", ready,
		"--keytab", path.Join(dir, brokerKeytab) + "=" + strings.Join(principals, ","),
		"--keytab", path.Join(dir, clientKeytab) + "=" + kerberosClient}
	q := make([]string, len(argv))
	for i, a := range argv {
		q[i] = ssh.Quote(a)
	}
	cmd := fmt.Sprintf("rm -rf %s && %s agent start --dir %s --name %s --wait-file %s --timeout 1m -- %s", ssh.Quote(dir), ssh.Quote(h.xp),
		ssh.Quote(h.dir), kdcService, ssh.Quote(ready), strings.Join(q, " "))
	sctx, cancel := context.WithTimeout(ctx, 2*time.Minute)
	defer cancel()
	if _, err := h.c.Output(sctx, cmd); err != nil {
		tail, _ := h.c.Output(ctx, "tail -c 2000 "+ssh.Quote(path.Join(h.dir, "logs", kdcService+".log"))+" 2>/dev/null || true")
		return nil, fmt.Errorf("remote: kdc on %s: %w\n%s", h.Name, err, tail)
	}
	k := &kerberos{}
	for _, f := range []struct {
		name string
		to   *[]byte
	}{{krb5Conf, &k.krb5Conf}, {brokerKeytab, &k.brokers}, {clientKeytab, &k.client}} {
		b, err := h.c.Output(ctx, "cat "+ssh.Quote(path.Join(dir, f.name)))
		if err != nil {
			return nil, fmt.Errorf("remote: kdc on %s: %s: %w", h.Name, f.name, err)
		}
		*f.to = b
	}
	return k, nil
}

// kerberosServer is the brokers' GSSAPI settings, their keytab at the
// same path under each broker's directory (planNode).
func kerberosServer() *kafkaconf.KerberosServer {
	return &kafkaconf.KerberosServer{ServiceName: kerberosService, Realm: kerberosRealm}
}

// addKerberos gives p's brokers their keytab and krb5.conf (and the JVM
// flag naming it), and the client hosts the load generators' keytab,
// krb5.conf and their GSSAPI properties in the sasl_ssl client config,
// beside its SCRAM user: a row's sasl_mechanism picks which.
func (p *kafkaPlan) addKerberos(k *kerberos, clientDir string) error {
	p.kerberos = k
	conf, kt := path.Join(clientDir, krb5Conf), path.Join(clientDir, clientKeytab)
	p.clientFiles[conf], p.clientFiles[kt] = k.krb5Conf, k.client
	f := p.modes[planner.SecuritySASLSSL].ClientConfig
	props, err := kafkaconf.ParseClientConfig(p.clientFiles[f])
	if err != nil {
		return err
	}
	props[kafkaconf.KerberosPrincipal] = kerberosClient + "@" + kerberosRealm
	props[kafkaconf.KerberosKeytab] = kt
	props[kafkaconf.KerberosKrb5Conf] = conf
	props[kafkaconf.KerberosServiceName] = kerberosService
	p.clientFiles[f] = kafkaconf.FormatClientConfig(props)
	return nil
}
