package main

import (
	"reflect"
	"testing"

	"github.com/xp-bench/xp/infra/local"
)

// xp cluster local serves every gateway security, and field_encrypt with
// fpe, on std under their own names and again on fast as NAME.fast;
// --direct-only none.
func TestLocalGatewayModes(t *testing.T) {
	want := []local.GatewayModeOptions{
		{Security: "proxy", Crypto: "std"},
		{Security: "encrypt", Crypto: "std"},
		{Security: "field_encrypt", Crypto: "std"},
		{Security: "field_encrypt", Cipher: "fpe", Crypto: "std"},
		{Security: "proxy", Crypto: "fast", Name: "proxy.fast"},
		{Security: "encrypt", Crypto: "fast", Name: "encrypt.fast"},
		{Security: "field_encrypt", Crypto: "fast", Name: "field_encrypt.fast"},
		{Security: "field_encrypt", Cipher: "fpe", Crypto: "fast", Name: "field_encrypt.fpe.fast"},
	}
	if got := localGatewayModes(false); !reflect.DeepEqual(got, want) {
		t.Errorf("localGatewayModes(false) =\n%+v\nwant\n%+v", got, want)
	}
	if got := localGatewayModes(true); got != nil {
		t.Errorf("localGatewayModes(true) = %+v, want none", got)
	}
}
