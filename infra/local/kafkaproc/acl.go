package kafkaproc

import (
	"context"
	"errors"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/planner"
)

// Principals the authorizer knows. Kafka's default principal builder
// names a TLS client by its certificate's subject (RFC 2253), a SASL
// client by its user and a plaintext or one-way TLS client ANONYMOUS.
const (
	// PrincipalAnonymous is xp's admin identity: the plaintext and TLS
	// listeners' clients (the readiness checks, the SCRAM user's
	// creation, the ACLs' creation), the brokers on the plaintext
	// controller listener and, with inter-broker plaintext or tls, the
	// followers. A super user.
	PrincipalAnonymous = "User:ANONYMOUS"
	// ACLPrefix is the prefix of the topics and consumer groups the
	// load generator makes (xp-<time>-<random> and its groups), which the
	// run's principals may use.
	ACLPrefix = "xp-"
	// OtherPrincipalPrefix names the principals of the ACLs that are
	// there only to be searched: User:xp-other-<i>.
	OtherPrincipalPrefix = "User:xp-other-"
)

// consumerOffsets is Kafka's internal topic of group offsets.
const consumerOffsets = "__consumer_offsets"

// aclBatch is how many ACLs one CreateAcls request carries: the
// controller takes at most 10,000 records per request.
const aclBatch = 5000

// brokerPrincipal is the principal of broker name's certificate, its
// client identity with inter-broker mtls (pki's subject: CN, O=xp).
func brokerPrincipal(name string) string { return "User:CN=" + name + ",O=xp" }

// RunPrincipals are the principals a row's clients authenticate as on
// the modes where the authorizer decides (mtls: the client certificate;
// sasl_ssl: the SCRAM or PLAIN user), which ACLs admit to xp's topics and
// groups.
func (c *Cluster) RunPrincipals() []string {
	return []string{"User:CN=" + clientCertName + ",O=xp", "User:" + c.saslUser}
}

// clientCertName is the common name of the clients' certificate.
const clientCertName = "client"

// CreateACLs creates, through the Admin API as xp's admin, others ACLs
// for other principals (20 principals, each with literal and prefixed
// topic ACLs, half and half), beside the run's (runACLs, made at start).
// It fails on a cluster without an authorizer.
func (c *Cluster) CreateACLs(ctx context.Context, others int) error {
	if !c.authorizer {
		return errors.New("kafkaproc: ACLs on a cluster without an authorizer")
	}
	adm, done, err := c.aclAdmin()
	if err != nil {
		return err
	}
	defer done()
	for _, b := range otherACLs(others) {
		if err := createACLs(ctx, adm, b); err != nil {
			return err
		}
	}
	return nil
}

// runACLs lets each of RunPrincipals do anything to the topics and
// consumer groups under ACLPrefix (prefixed ACLs): the load generator's
// and the readiness checks' (xp-ready), and describe __consumer_offsets.
func (c *Cluster) runACLs(ctx context.Context) error {
	adm, done, err := c.aclAdmin()
	if err != nil {
		return err
	}
	defer done()
	if err := createACLs(ctx, adm, kadm.NewACLs().Topics(ACLPrefix).Groups(ACLPrefix).
		ResourcePatternType(kadm.ACLPatternPrefixed).Allow(c.RunPrincipals()...).Operations(kadm.OpAll)); err != nil {
		return err
	}
	// The readiness checks look the group coordinator's topic up.
	return createACLs(ctx, adm, kadm.NewACLs().Topics(consumerOffsets).
		ResourcePatternType(kadm.ACLPatternLiteral).Allow(c.RunPrincipals()...).Operations(kadm.OpDescribe))
}

// aclAdmin is an admin client as xp's admin (over the TLS listener) and
// the function that closes it.
func (c *Cluster) aclAdmin() (*kadm.Client, func(), error) {
	props, err := kafkaconf.ReadClientConfig(c.modes[planner.SecurityTLS].ClientConfig)
	if err != nil {
		return nil, nil, err
	}
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		return nil, nil, err
	}
	cl, err := kgo.NewClient(append(opts, kgo.ClientID("xp-acls"))...)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// otherACLs lays n ACLs out in builders of at most aclBatch: principal
// User:xp-other-<p> (p < 100) reads topics other-<p>-<i>, literal for
// even i and prefixed for odd i.
func otherACLs(n int) []*kadm.ACLBuilder {
	const principals = 20
	var out []*kadm.ACLBuilder
	per := (n + principals - 1) / principals
	made := 0
	for p := 0; made < n; p++ {
		var lit, pre []string
		for i := 0; i < per && made < n; i++ {
			name := "other-" + strconv.Itoa(p) + "-" + strconv.Itoa(i)
			if i%2 == 0 {
				lit = append(lit, name)
			} else {
				pre = append(pre, name+"-")
			}
			made++
		}
		who := OtherPrincipalPrefix + strconv.Itoa(p)
		for _, g := range []struct {
			names   []string
			pattern kadm.ACLPattern
		}{{lit, kadm.ACLPatternLiteral}, {pre, kadm.ACLPatternPrefixed}} {
			for len(g.names) > 0 {
				k := min(aclBatch, len(g.names))
				out = append(out, kadm.NewACLs().Topics(g.names[:k]...).ResourcePatternType(g.pattern).
					Allow(who).Operations(kadm.OpRead))
				g.names = g.names[k:]
			}
		}
	}
	return out
}

// createACLs creates b's ACLs, failing on any the cluster refused.
func createACLs(ctx context.Context, adm *kadm.Client, b *kadm.ACLBuilder) error {
	rs, err := adm.CreateACLs(ctx, b)
	if err != nil {
		return fmt.Errorf("kafkaproc: create ACLs: %w", err)
	}
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("kafkaproc: create ACL for %s on %s %s: %w", r.Principal, r.Type, r.Name, r.Err)
		}
	}
	return nil
}
