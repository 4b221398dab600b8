package local

import (
	"context"
	"errors"
	"fmt"
	"io/fs"
	"log/slog"
	"os"
	"path/filepath"
	"sync"

	"github.com/xp-bench/xp/infra/gateway"
	"github.com/xp-bench/xp/infra/gateway/encrypt"
	"github.com/xp-bench/xp/infra/gateway/envelope"
	"github.com/xp-bench/xp/planner"
)

// GatewayModeOptions configure StartGatewayMode.
type GatewayModeOptions struct {
	// Security is proxy, encrypt or field_encrypt.
	Security string
	// Transport is the client-leg (and broker-leg) security; default tls.
	Transport string
	// Encoding is the record encoding field_encrypt parses: json (default),
	// avro or protobuf.
	Encoding string
	// Fields are the record fields field_encrypt encrypts; default ssn.
	Fields []string
	// Cipher is how field_encrypt encrypts them: aead (default) or fpe
	// (planner.FieldCipherFPE: format-preserving FF1); other modes
	// ignore it.
	Cipher string
	// Name is the mode registered in Modes(); default
	// planner.GatewayModeName.
	Name string
	// SchemaDir holds record.avsc and record.pb (the load generator's
	// schemas) for avro and protobuf field_encrypt.
	SchemaDir string
	// Crypto is the gateway's crypto: std (default) or fast.
	Crypto string
	// TLS is the client leg's TLS version, cipher and key; zero for the
	// defaults.
	TLS GatewayTLS
	// Logger receives the gateway's log; default discard.
	Logger *slog.Logger
}

// ClusterLocalGatewayModes are the gateway modes `xp cluster local` serves
// beside its brokers (unless --direct-only): every gateway mode, and
// field_encrypt with FF1 too, each with the std crypto and again with
// the fast one (named MODE.fast). A remote broker host's certificates for
// them are issued by the operator's xp (ModeName, GatewayCertName), which
// keeps the CA key.
func ClusterLocalGatewayModes() []GatewayModeOptions {
	var out []GatewayModeOptions
	for _, crypto := range []string{planner.GatewayCryptoStd, planner.GatewayCryptoFast} {
		modes := []GatewayModeOptions{}
		for _, security := range planner.GatewayModes() {
			modes = append(modes, GatewayModeOptions{Security: security})
		}
		modes = append(modes, GatewayModeOptions{Security: planner.SecurityFieldEncrypt, Cipher: planner.FieldCipherFPE})
		for _, o := range modes {
			o.Crypto = crypto
			if crypto != planner.DefaultGatewayCrypto {
				o.Name = planner.GatewayModeName(o.Security, "", "", o.Cipher) + "." + crypto
			}
			out = append(out, o)
		}
	}
	return out
}

// ModeName is the mode StartGatewayMode registers for o: Name, else
// planner.GatewayModeName of its settings with their defaults.
func (o GatewayModeOptions) ModeName() string {
	if o.Name != "" {
		return o.Name
	}
	if o.Transport == "" {
		o.Transport = planner.DefaultGatewayTransport
	}
	if o.Encoding == "" {
		o.Encoding = planner.DefaultFieldEncoding
	}
	return planner.GatewayModeName(o.Security, o.Transport, o.Encoding, o.Cipher)
}

// GatewayCertName is the name (pki) of the certificate the gateway of
// mode serves with.
func GatewayCertName(mode string) string { return "gateway-" + mode }

// vaultMu serializes creating the cluster's key vault, so that gateways
// started side by side share one key-encryption key.
var vaultMu sync.Mutex

// Vault returns the path of the cluster's key-encryption-key file (0600),
// creating it with one key, k1, if it does not exist.
func (c *Cluster) Vault() (string, error) {
	vaultMu.Lock()
	defer vaultMu.Unlock()
	path := filepath.Join(c.Dir(), "vault.keys")
	if _, err := os.Stat(path); err == nil {
		return path, nil
	} else if !errors.Is(err, fs.ErrNotExist) {
		return "", err
	}
	if err := envelope.AddKey(path, "k1"); err != nil {
		return "", fmt.Errorf("local: key vault: %w", err)
	}
	return path, nil
}

// StartGatewayMode starts xp's gateway for one gateway mode in front of c
// and registers it under planner.GatewayModeName. Close the gateway before the
// cluster.
func StartGatewayMode(ctx context.Context, c *Cluster, o GatewayModeOptions) (*gateway.Gateway, error) {
	if o.Transport == "" {
		o.Transport = planner.DefaultGatewayTransport
	}
	if o.Encoding == "" {
		o.Encoding = planner.DefaultFieldEncoding
	}
	name := o.ModeName()
	gopts := GatewayOptions{Name: name, Transport: o.Transport, Logger: o.Logger, Crypto: o.Crypto, TLS: o.TLS}
	switch o.Security {
	case planner.SecurityProxy:
	case planner.SecurityEncrypt, planner.SecurityFieldEncrypt:
		vault, err := c.Vault()
		if err != nil {
			return nil, err
		}
		var cfg encrypt.Config
		if o.Security == planner.SecurityEncrypt {
			cfg, err = encrypt.Preset(planner.SecurityEncrypt, vault)
		} else {
			cfg, err = encrypt.FieldPreset(o.Encoding, vault, o.SchemaDir)
			if err == nil && len(o.Fields) > 0 {
				cfg.Topics[0].Fields = o.Fields
			}
			if err == nil && o.Cipher == planner.FieldCipherFPE {
				cfg.Topics[0].Cipher = encrypt.CipherFPE
			}
		}
		if err != nil {
			return nil, fmt.Errorf("local: %s: %w", name, err)
		}
		var fopts []encrypt.Option
		if o.Logger != nil {
			fopts = append(fopts, encrypt.WithLogger(o.Logger))
		}
		f, err := encrypt.New(cfg, c.Dir(), fopts...)
		if err != nil {
			return nil, fmt.Errorf("local: %s: %w", name, err)
		}
		gopts.Filters = []gateway.RecordFilter{f}
	default:
		return nil, fmt.Errorf("local: %q is not a gateway mode (want one of %v)", o.Security, planner.GatewayModes())
	}
	return StartGateway(ctx, c, gopts)
}
