package kafkaconf

import (
	"fmt"
	"os"
	"sort"
	"strings"
)

// WriteJavaClientConfig writes, at path (0600), the Java client's
// properties for the same connection as props (librdkafka names, as xp's
// client configs have them), so Kafka's own tools (ProducerPerformance,
// kafka-console-consumer) connect as xp's clients do: security.protocol;
// the CA as a PEM truststore; for a client certificate a PEM keystore of
// key and certificate, written beside path as path+".keystore.pem" (0600;
// Kafka reads an unencrypted PKCS#8 key there); SASL as sasl.mechanism
// and sasl.jaas.config (OAUTHBEARER's token endpoint and GSSAPI's keytab
// as javaIdentitySASL says). bootstrap.servers is left to the tool's own flag.
func WriteJavaClientConfig(path string, props map[string]string) error {
	for k := range props {
		if !supported(k) || javaOnly[k] {
			return fmt.Errorf("unknown client property %q", k)
		}
	}
	out := map[string]string{}
	proto := Protocol(props)
	out["security.protocol"] = strings.ToUpper(proto)
	if proto == "ssl" || proto == "sasl_ssl" {
		if ca := props[SSLCALocation]; ca != "" {
			out["ssl.truststore.type"] = "PEM"
			out["ssl.truststore.location"] = ca
		}
		if strings.EqualFold(props[SSLEndpointIdentAlg], "none") {
			out["ssl.endpoint.identification.algorithm"] = ""
		}
		if cert, key := props[SSLCertificate], props[SSLKey]; cert != "" || key != "" {
			if cert == "" || key == "" {
				return fmt.Errorf("a client certificate needs both %s and %s", SSLCertificate, SSLKey)
			}
			ks := path + ".keystore.pem"
			if err := writeKeystorePEM(ks, key, cert); err != nil {
				return err
			}
			out["ssl.keystore.type"] = "PEM"
			out["ssl.keystore.location"] = ks
		}
	}
	if proto == "sasl_plaintext" || proto == "sasl_ssl" {
		if err := javaSASL(out, props); err != nil {
			return err
		}
	}
	keys := make([]string, 0, len(out))
	for k := range out {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	var b strings.Builder
	b.WriteString("# written by xp; Java client property names\n")
	for _, k := range keys {
		fmt.Fprintf(&b, "%s=%s\n", k, javaPropEscape(out[k]))
	}
	return os.WriteFile(path, []byte(b.String()), 0o600)
}

// JavaSystemProperties are the JVM system properties a Java client
// logging in as props needs beside its properties: for OAUTHBEARER the
// token endpoint allowed (AllowedURLsProperty), for GSSAPI the krb5.conf
// of its KDCs (java.security.krb5.conf); none for the other mechanisms.
func JavaSystemProperties(props map[string]string) map[string]string {
	mech := props[SASLMechanism]
	if mech == "" {
		mech = props[SASLMechanisms]
	}
	switch strings.ToUpper(mech) {
	case "OAUTHBEARER":
		return map[string]string{AllowedURLsProperty: props[OAuthTokenURL]}
	case "GSSAPI":
		return map[string]string{"java.security.krb5.conf": props[KerberosKrb5Conf]}
	}
	return nil
}

// javaSASL sets, in the Java client's properties out, the SASL login of
// props: sasl.mechanism and sasl.jaas.config, and what OAUTHBEARER and
// GSSAPI need besides (javaIdentitySASL).
func javaSASL(out, props map[string]string) error {
	mech := props[SASLMechanism]
	if mech == "" {
		mech = props[SASLMechanisms]
	}
	mech = strings.ToUpper(mech)
	if mech == "OAUTHBEARER" || mech == "GSSAPI" {
		return javaIdentitySASL(out, props, mech)
	}
	module := map[string]string{
		"PLAIN":         "org.apache.kafka.common.security.plain.PlainLoginModule",
		"SCRAM-SHA-256": "org.apache.kafka.common.security.scram.ScramLoginModule",
		"SCRAM-SHA-512": "org.apache.kafka.common.security.scram.ScramLoginModule",
	}[mech]
	if module == "" {
		return fmt.Errorf("%s=%q: want PLAIN, SCRAM-SHA-256, SCRAM-SHA-512, OAUTHBEARER or GSSAPI", SASLMechanism, mech)
	}
	out["sasl.mechanism"] = mech
	out["sasl.jaas.config"] = fmt.Sprintf(`%s required username="%s" password="%s";`,
		module, jaasEscape(props[SASLUsername]), jaasEscape(props[SASLPassword]))
	return nil
}

// writeKeystorePEM writes the key and then the certificate chain into one
// file, the layout of Kafka's PEM keystore.
func writeKeystorePEM(path, keyPath, certPath string) error {
	key, err := os.ReadFile(keyPath)
	if err != nil {
		return err
	}
	cert, err := os.ReadFile(certPath)
	if err != nil {
		return err
	}
	if !strings.Contains(string(key), "-----BEGIN PRIVATE KEY-----") {
		return fmt.Errorf("%s: Kafka's PEM keystore wants an unencrypted PKCS#8 key (BEGIN PRIVATE KEY)", keyPath)
	}
	b := append(append(append([]byte{}, key...), '\n'), cert...)
	return os.WriteFile(path, b, 0o600)
}

// jaasEscape escapes a value inside a JAAS option's double quotes.
func jaasEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, `"`, `\"`).Replace(s)
}

// javaPropEscape escapes a value for a java.util.Properties file.
func javaPropEscape(s string) string {
	return strings.NewReplacer(`\`, `\\`, "\n", `\n`, "\r", `\r`).Replace(s)
}
