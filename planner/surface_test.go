package planner

import (
	"bytes"
	"strings"
	"testing"
)

// TestSurfaceSpecRefused: a level of a security surface field that no row
// of the spec can run is refused at its line, naming the field and the
// fix.
func TestSurfaceSpecRefused(t *testing.T) {
	const head = "campaign: s\nfixed: {message_size: 100, acks: all, target_rate: 100}\n"
	for _, tc := range []struct {
		name, factors, want string
	}{
		{"sasl_mechanism on plaintext", "factors:\n  security: [plaintext, tls]\n  brokers: [3]\n  sasl_mechanism: [scram-sha-512, plain]\n",
			"s.yaml:6: sasl_mechanism plain never runs: sasl_mechanism other than scram-sha-512 needs a sasl_ssl connection"},
		{"sasl_mechanism on a tls gateway", "factors:\n  security: [proxy]\n  brokers: [1]\n  sasl_mechanism: [scram-sha-256]\n",
			"sasl_mechanism scram-sha-256 never runs"},
		{"inter_broker_security with 1 broker", "factors:\n  security: [plaintext, tls]\n  brokers: [1]\n  inter_broker_security: [tls]\n",
			"s.yaml:6: inter_broker_security tls never runs: inter_broker_security other than plaintext needs brokers and replication_factor of 2 or more"},
		{"inter_broker_security with replication_factor 1", "factors:\n  security: [plaintext, tls]\n  brokers: [3]\n  replication_factor: [1]\n  inter_broker_security: [mtls]\n",
			"inter_broker_security mtls never runs"},
		{"acls without authorizer", "factors:\n  security: [plaintext, tls]\n  brokers: [1]\n  acls: [0, 1000]\n",
			"s.yaml:6: acls 1000 never runs: acls other than 0 needs authorizer acl; set authorizer: acl, or acls: 0"},
		{"cipher without a version", "factors:\n  security: [tls, mtls]\n  brokers: [1]\n  tls_cipher: [chacha20-poly1305]\n",
			"tls_cipher chacha20-poly1305 never runs: tls_cipher other than default needs tls_version 1.2 or 1.3"},
		{"TLS 1.3 cipher on xp's gateway", "factors:\n  security: [proxy, encrypt]\n  brokers: [1]\n  tls_version: [\"1.3\"]\n  tls_cipher: [aes256-gcm]\n",
			"tls_cipher aes256-gcm never runs: tls_cipher other than default with tls_version 1.3 needs a Java TLS server"},
		{"tls_version on plaintext", "factors:\n  security: [plaintext]\n  brokers: [1]\n  tls_version: [\"1.2\"]\n",
			"tls_version 1.2 never runs: tls_version and tls_cipher other than default need a TLS client connection"},
		{"tls_key on plaintext", "factors:\n  security: [plaintext]\n  brokers: [1]\n  tls_key: [rsa2048]\n",
			"tls_key rsa2048 never runs"},
		{"unknown mechanism", "factors:\n  security: [sasl_ssl]\n  brokers: [1]\n  sasl_mechanism: [scram-sha-1]\n",
			`unknown level "scram-sha-1"`},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := ParseSpec("s.yaml", []byte(head+tc.factors))
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Errorf("error %v, want %q", err, tc.want)
			}
		})
	}
}

// TestSurfaceSpecRuns: the security surface crosses with the modes where
// it applies; rows where it does not are dropped with the reason, and the
// fields at their defaults leave the cell unchanged.
func TestSurfaceSpecRuns(t *testing.T) {
	rows, sum, _ := expandRows(t, `campaign: s
treatment: sasl_mechanism
factors:
  sasl_mechanism: [scram-sha-512, scram-sha-256, plain]
  security: [sasl_ssl, proxy]
  gateway_transport: [tls, sasl_ssl]
  tls_version: ["1.2", "1.3"]
  tls_cipher: [default, aes128-gcm, chacha20-poly1305]
  inter_broker_security: [plaintext, tls]
  connection_churn: [0, 1000]
fixed: {brokers: 3, message_size: 100, acks: all, target_rate: 100, authorizer: acl, acls: 100, tls_key: rsa4096}
`)
	if len(rows) == 0 {
		t.Fatal("no rows")
	}
	dropped := map[string]int64{}
	for _, d := range sum.Dropped {
		dropped[d.Reason] = d.Combinations
	}
	if dropped[ReasonSASLMechanismNoSASL] == 0 || dropped[ReasonTLS13CipherGo] == 0 {
		t.Errorf("drops %v, want sasl_mechanism on proxy over tls and TLS 1.3 ciphers on xp's gateway", sum.Dropped)
	}
	for _, r := range rows {
		if surfaceReason(&r) != "" {
			t.Errorf("row %s kept though %s", r.Run, surfaceReason(&r))
		}
	}
	// The group key names the cluster's settings away from their defaults.
	if id := rows[0].InfraKey().ID(); !strings.Contains(id, "authorizer=acl acls=100") || !strings.Contains(id, "tls_key=rsa4096") {
		t.Errorf("group %s does not name the cluster security", id)
	}
	// Round trip through JSONL and the validator.
	b := encodeRows(rows)
	back, err := ValidatePlan(bytes.NewReader(b), "p.jsonl")
	if err != nil {
		t.Fatal(err)
	}
	if len(back) != len(rows) {
		t.Fatalf("%d rows back of %d", len(back), len(rows))
	}
}

// TestSurfaceDefaultsLeaveCells: a spec naming the security surface at its
// defaults expands to the same bytes as one that does not name it.
func TestSurfaceDefaultsLeaveCells(t *testing.T) {
	base := "campaign: s\nfactors: {security: [plaintext, tls, sasl_ssl]}\nfixed: {brokers: 3, message_size: 100, acks: all, target_rate: 100"
	_, _, a := expandRows(t, base+"}\n")
	_, _, b := expandRows(t, base+`, inter_broker_security: plaintext, sasl_mechanism: scram-sha-512, authorizer: none, acls: 0, tls_version: default, tls_cipher: default, tls_key: ecdsa-p256, connection_churn: 0}`+"\n")
	if !bytes.Equal(a, b) {
		t.Errorf("defaults named change the plan:\n%s\n%s", a, b)
	}
	if bytes.Contains(a, []byte("sasl_mechanism")) {
		t.Errorf("a row at the defaults writes sasl_mechanism: %s", a)
	}
}

// TestSurfacePlanRefused: a plan row breaking a rule is refused under the
// field the rule is about.
func TestSurfacePlanRefused(t *testing.T) {
	for _, tc := range []struct {
		name  string
		edit  func(*Row)
		field string
	}{
		{"sasl_mechanism on tls", func(r *Row) { r.Security, r.SASLMechanism = SecurityTLS, SASLPlain }, "sasl_mechanism"},
		{"inter-broker tls alone", func(r *Row) {
			r.Brokers, r.ReplicationFactor, r.MinInsyncReplicas, r.InterBrokerSecurity = 1, 1, 1, SecurityTLS
		}, "inter_broker_security"},
		{"acls without authorizer", func(r *Row) { r.ACLs = 10 }, "acls"},
		{"cipher without version", func(r *Row) { r.Security, r.TLSCipher = SecurityTLS, TLSCipherAES128GCM }, "tls_cipher"},
		{"tls_key on plaintext", func(r *Row) { r.Security, r.TLSKey = SecurityPlaintext, TLSKeyRSA4096 }, "tls_key"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows := validRows(t)
			tc.edit(&rows[0])
			reidentify(&rows[0])
			_, err := ValidatePlan(bytes.NewReader(encodeRows(rows)), "p.jsonl")
			if err == nil || !strings.Contains(err.Error(), ": "+tc.field+": cannot run: ") {
				t.Errorf("error %v, want one under %s", err, tc.field)
			}
		})
	}
}
