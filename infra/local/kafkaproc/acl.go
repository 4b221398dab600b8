package kafkaproc

import (
	"context"
	"errors"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// Principals and resources of the ACLs, as infra/agent makes them for
// the local target and the remote hosts alike.
const (
	PrincipalAnonymous   = agent.PrincipalAnonymous
	ACLPrefix            = agent.ACLPrefix
	OtherPrincipalPrefix = agent.OtherPrincipalPrefix
)

// brokerPrincipal is the principal of broker name's certificate, its
// client identity with inter-broker mtls.
func brokerPrincipal(name string) string { return kafkaconf.CertPrincipal(name) }

// RunPrincipals are the principals a row's clients authenticate as on
// the modes where the authorizer decides (mtls: the client certificate;
// sasl_ssl: the SCRAM or PLAIN user), which ACLs admit to xp's topics and
// groups.
func (c *Cluster) RunPrincipals() []string {
	return []string{kafkaconf.CertPrincipal(clientCertName), "User:" + c.saslUser}
}

// clientCertName is the common name of the clients' certificate.
const clientCertName = "client"

// CreateACLs creates, through the Admin API as xp's admin, others ACLs
// for other principals (agent.OtherACLs), beside the run's (runACLs, made
// at start). It fails on a cluster without an authorizer.
func (c *Cluster) CreateACLs(ctx context.Context, others int) error {
	if !c.authorizer {
		return errors.New("kafkaproc: ACLs on a cluster without an authorizer")
	}
	admin, err := c.aclAdmin()
	if err != nil {
		return err
	}
	return agent.CreateOtherACLs(ctx, admin, others)
}

// runACLs lets RunPrincipals use xp's topics and groups
// (agent.CreateRunACLs).
func (c *Cluster) runACLs(ctx context.Context) error {
	admin, err := c.aclAdmin()
	if err != nil {
		return err
	}
	return agent.CreateRunACLs(ctx, admin, c.RunPrincipals())
}

// aclAdmin is the client config of xp's admin: the TLS listener's.
func (c *Cluster) aclAdmin() (map[string]string, error) {
	return kafkaconf.ReadClientConfig(c.modes[planner.SecurityTLS].ClientConfig)
}
