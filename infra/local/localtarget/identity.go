package localtarget

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"fmt"
	"path/filepath"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/kdc"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/infra/oauthidp"
	"github.com/xp-bench/xp/planner"
)

// identity is what a group's OAUTHBEARER and GSSAPI rows need beside
// Apache Kafka: xp's identity provider (token endpoint and key set, on
// loopback) and an MIT KDC with the group's realm, and the client
// properties that log in with them.
type identity struct {
	idp   *oauthidp.Server
	kdc   *kdc.KDC
	props map[string]string
}

// identityOAuthClient is the client id of the group's identity provider.
const identityOAuthClient = "xp"

// startIdentity starts what rows' sasl_mechanism needs, with the KDC's
// files and the client's keytab (0600) in dir; nil when no row needs
// either.
func startIdentity(ctx context.Context, rows []planner.Row, dir string) (_ *identity, err error) {
	var oauth, gssapi bool
	for _, r := range rows {
		oauth = oauth || r.SASLMechanism == planner.SASLOAuthBearer
		gssapi = gssapi || r.SASLMechanism == planner.SASLGSSAPI
	}
	if !oauth && !gssapi {
		return nil, nil
	}
	id := &identity{props: map[string]string{}}
	defer func() {
		if err != nil {
			id.close()
		}
	}()
	if oauth {
		secret := make([]byte, 16)
		rand.Read(secret)
		if id.idp, err = oauthidp.Start(oauthidp.Options{ClientID: identityOAuthClient, ClientSecret: hex.EncodeToString(secret)}); err != nil {
			return nil, fmt.Errorf("local target: %w", err)
		}
		id.props[kafkaconf.OAuthMethod] = "oidc"
		id.props[kafkaconf.OAuthTokenURL] = id.idp.TokenURL()
		id.props[kafkaconf.OAuthClientID] = identityOAuthClient
		id.props[kafkaconf.OAuthClientSecret] = hex.EncodeToString(secret)
	}
	if gssapi {
		if id.kdc, err = kdc.Start(ctx, kdc.Options{Dir: filepath.Join(dir, "kdc")}); err != nil {
			return nil, fmt.Errorf("local target: %w", err)
		}
		kt, err := id.kdc.Keytab(ctx, filepath.Join(dir, "kdc", "xp.keytab"), "xp")
		if err != nil {
			return nil, fmt.Errorf("local target: %w", err)
		}
		id.props[kafkaconf.KerberosPrincipal] = "xp@" + id.kdc.Realm
		id.props[kafkaconf.KerberosKeytab] = kt
		id.props[kafkaconf.KerberosKrb5Conf] = id.kdc.Krb5Conf
		id.props[kafkaconf.KerberosServiceName] = kafkaproc.KerberosService
	}
	return id, nil
}

// options adds the identity provider and KDC to the brokers' options.
func (id *identity) options(o *kafkaproc.Options) {
	if id == nil {
		return
	}
	if id.idp != nil {
		o.OAuth = &kafkaconf.OAuthServer{JWKSURL: id.idp.JWKSURL(), Issuer: id.idp.Issuer(), Audience: oauthidp.Audience}
	}
	o.KDC = id.kdc
}

// addToClientConfig adds the identity's properties to the SASL_SSL
// client config at path, beside its SCRAM and PLAIN user: a row's
// sasl_mechanism picks which the client uses.
func (id *identity) addToClientConfig(path string) error {
	if id == nil {
		return nil
	}
	props, err := kafkaconf.ReadClientConfig(path)
	if err != nil {
		return err
	}
	for k, v := range id.props {
		props[k] = v
	}
	return kafkaconf.WriteClientConfig(path, props)
}

func (id *identity) close() {
	if id == nil {
		return
	}
	if id.idp != nil {
		id.idp.Close()
	}
	if id.kdc != nil {
		id.kdc.Close()
	}
}
