package kafkaproc

import (
	"context"
	"path/filepath"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local"
)

// KerberosService is the service name of the brokers' principals
// (sasl.kerberos.service.name).
const KerberosService = "kafka"

// identitySASL adds o's OAUTHBEARER and GSSAPI to srv: the listener
// settings, the brokers' principals and keytab, and the JVM flags that
// let Kafka reach the identity provider and the KDC.
func (c *Cluster) identitySASL(ctx context.Context, o Options, srv *kafkaconf.Server) error {
	srv.ReauthMs = o.ReauthMs
	if o.OAuth != nil {
		srv.OAuth = o.OAuth
		c.identityFlags = append(c.identityFlags, kafkaconf.AllowedURLsFlag(o.OAuth.JWKSURL))
	}
	if o.KDC == nil {
		return nil
	}
	var principals []string
	for _, n := range srv.Brokers() {
		principals = append(principals, KerberosService+"/"+n.Address)
	}
	kt, err := o.KDC.Keytab(ctx, filepath.Join(c.dir, local.PKIDir, "brokers.keytab"), principals...)
	if err != nil {
		return err
	}
	srv.Kerberos = &kafkaconf.KerberosServer{ServiceName: KerberosService, Realm: o.KDC.Realm, Keytab: kt}
	c.identityFlags = append(c.identityFlags, "-Djava.security.krb5.conf="+o.KDC.Krb5Conf)
	return nil
}
