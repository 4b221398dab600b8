package remote

import (
	"strings"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
)

var (
	_ target.SurfaceServer  = (*Deployer)(nil)
	_ target.BrokerReporter = (*Deployer)(nil)
)

// Broker is the broker software of the deployment that is up
// (target.BrokerReporter): what its first broker host runs, and on
// Apache Kafka its Java runtime, JVM flags and the cluster part of the
// security surface applied; the zero Broker when nothing runs.
func (d *Deployer) Broker() target.Broker {
	dep := d.Deployment()
	if dep == nil {
		return target.Broker{}
	}
	return dep.Broker()
}

// Broker is what Deployer.Broker says of d.
func (d *Deployment) Broker() target.Broker {
	for _, m := range d.Hosts() {
		if m.Role != planner.RoleBroker {
			continue
		}
		b, ok := target.ParseBroker(m.Kafka)
		if !ok {
			return target.Broker{}
		}
		if b.Kind == target.BrokerApache {
			b.Java, b.JVMFlags = m.Java, strings.Fields(m.JVMFlags)
			b.InterBrokerSecurity = d.security.InterBroker
			if b.InterBrokerSecurity == "" {
				b.InterBrokerSecurity = planner.SecurityPlaintext
			}
			if d.security.Authorizer == planner.AuthorizerACL {
				b.Authorizer, b.ACLs = kafkaconf.StandardAuthorizer, d.security.ACLs
			}
		}
		return b
	}
	return target.Broker{}
}

// ServesSurface refuses the security surface settings the hosts' cluster
// does not serve (servesSurface), before any machine is touched.
func (d *Deployer) ServesSurface(r *planner.Row) error {
	return servesSurface(r, !d.o.Kafka.Embedded())
}

// servesSurface says why a remote target, running Apache Kafka on its
// broker hosts or the embedded cluster (apache false), cannot serve r's
// security surface, or nil: target.ServesSurface's rules, where the
// embedded cluster's gateway modes are its own (ecdsa-p256 only) and
// oauthbearer's identity provider is HTTPS on the first client host
// (startIDP) with a certificate from xp's CA, which every client trusts
// through the client config's ssl.ca.location (kafkaconf.OAuthTokenCA).
// The brokers' part is applied by
// surfaceServer, the gateway hosts' by GatewaySpec, the KDC by startKDC.
func servesSurface(r *planner.Row, apache bool) error {
	return target.ServesSurface(r, target.SurfaceLimits{Apache: apache, Target: "remote targets",
		OnKafka: "kafka.distribution a release in the target file"})
}

// surfaceServer sets the cluster part of a group's security surface on
// srv, whose node i runs on host hostOf[i]: its TLS listeners' version
// and suites, what the brokers replicate over and, with authorizer acl,
// KRaft's StandardAuthorizer with xp's admin (ANONYMOUS: the plaintext
// and TLS listeners, the controllers' listener) and, with inter-broker
// mtls, each broker's certificate as super users.
func surfaceServer(srv *kafkaconf.Server, sec planner.ClusterSecurity, hostOf []string) {
	srv.TLS = kafkaconf.TLSChoice{Version: sec.TLSVersion, Cipher: sec.TLSCipher}
	srv.InterBroker = sec.InterBroker
	if sec.Authorizer != planner.AuthorizerACL {
		return
	}
	srv.SuperUsers = []string{agent.PrincipalAnonymous}
	if sec.InterBroker == planner.SecurityMTLS {
		// Brokers come first in srv.Nodes, as in hostOf.
		for i := range srv.Brokers() {
			srv.SuperUsers = append(srv.SuperUsers, kafkaconf.CertPrincipal(hostOf[i]))
		}
	}
}

// clientCertName is the common name of the load generators' certificate,
// the principal of mtls clients.
const clientCertName = "client"
