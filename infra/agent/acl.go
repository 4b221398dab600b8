package agent

import (
	"context"
	"fmt"
	"strconv"

	"github.com/twmb/franz-go/pkg/kadm"
	"github.com/twmb/franz-go/pkg/kgo"

	"github.com/xp-bench/xp/infra/kafkaconf"
)

// Principals and resources of the ACLs xp makes for a row's authorizer
// acl. Kafka's default principal builder names a TLS client by its
// certificate's subject (RFC 2253; kafkaconf.CertPrincipal), a SASL
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

// CreateRunACLs lets each of principals (the run's clients' identities
// on the modes where the authorizer decides: the mtls client certificate,
// the sasl_ssl user) do anything to the topics and consumer groups under
// ACLPrefix (prefixed ACLs), the load generator's and the readiness
// checks' (xp-ready), and describe __consumer_offsets; through the
// connection admin describes, which must be a super user's (Kafka's
// kafka-acls.sh --add --resource-pattern-type prefixed).
func CreateRunACLs(ctx context.Context, admin map[string]string, principals []string) error {
	adm, done, err := aclAdmin(admin)
	if err != nil {
		return err
	}
	defer done()
	if err := createACLs(ctx, adm, kadm.NewACLs().Topics(ACLPrefix).Groups(ACLPrefix).
		ResourcePatternType(kadm.ACLPatternPrefixed).Allow(principals...).Operations(kadm.OpAll)); err != nil {
		return err
	}
	// The readiness checks look the group coordinator's topic up.
	return createACLs(ctx, adm, kadm.NewACLs().Topics(consumerOffsets).
		ResourcePatternType(kadm.ACLPatternLiteral).Allow(principals...).Operations(kadm.OpDescribe))
}

// CreateOtherACLs creates n ACLs for other principals (OtherACLs), which
// are there only for the authorizer to search, through admin's
// connection, in requests of at most 5,000.
func CreateOtherACLs(ctx context.Context, admin map[string]string, n int) error {
	adm, done, err := aclAdmin(admin)
	if err != nil {
		return err
	}
	defer done()
	for _, b := range OtherACLs(n) {
		if err := createACLs(ctx, adm, b); err != nil {
			return err
		}
	}
	return nil
}

// aclAdmin is an admin client on props' connection and the function that
// closes it.
func aclAdmin(props map[string]string) (*kadm.Client, func(), error) {
	opts, err := kafkaconf.ClientOpts(props)
	if err != nil {
		return nil, nil, fmt.Errorf("agent: acl admin connection: %w", err)
	}
	cl, err := kgo.NewClient(append(opts, kgo.ClientID("xp-acls"))...)
	if err != nil {
		return nil, nil, err
	}
	return kadm.NewClient(cl), cl.Close, nil
}

// OtherACLs lays n ACLs out in builders of at most aclBatch: 20
// principals, User:xp-other-<p> reading topics other-<p>-<i>, literal
// for even i and prefixed for odd i (half and half).
func OtherACLs(n int) []*kadm.ACLBuilder {
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
		return fmt.Errorf("agent: create ACLs: %w", err)
	}
	for _, r := range rs {
		if r.Err != nil {
			return fmt.Errorf("agent: create ACL for %s on %s %s: %w", r.Principal, r.Type, r.Name, r.Err)
		}
	}
	return nil
}
