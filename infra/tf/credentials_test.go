package tf

import (
	"errors"
	"strings"
	"testing"
)

func TestCheckCredentials(t *testing.T) {
	home := t.TempDir()
	tests := []struct {
		name     string
		platform string
		env      map[string]string
		want     string // "" = ok
	}{
		{name: "hosts needs none", platform: "hosts"},
		{name: "aws keys", platform: "aws", env: map[string]string{"AWS_ACCESS_KEY_ID": "a", "AWS_SECRET_ACCESS_KEY": "s"}},
		{name: "aws profile", platform: "aws", env: map[string]string{"AWS_PROFILE": "lab"}},
		{name: "aws secret missing", platform: "aws", env: map[string]string{"AWS_ACCESS_KEY_ID": "a"}, want: "AWS_SECRET_ACCESS_KEY is missing"},
		{name: "aws nothing", platform: "aws", want: "set AWS_PROFILE"},
		{name: "azure service principal", platform: "azure", env: map[string]string{"ARM_SUBSCRIPTION_ID": "s", "ARM_TENANT_ID": "t", "ARM_CLIENT_ID": "c", "ARM_CLIENT_SECRET": "x"}},
		{name: "azure subscription missing", platform: "azure", env: map[string]string{"ARM_TENANT_ID": "t"}, want: "ARM_SUBSCRIPTION_ID is missing"},
		{name: "azure tenant missing", platform: "azure", env: map[string]string{"ARM_SUBSCRIPTION_ID": "s", "ARM_CLIENT_ID": "c", "ARM_CLIENT_SECRET": "x"}, want: "ARM_TENANT_ID is missing"},
		{name: "azure secret missing", platform: "azure", env: map[string]string{"ARM_SUBSCRIPTION_ID": "s", "ARM_TENANT_ID": "t", "ARM_CLIENT_ID": "c"}, want: "ARM_CLIENT_SECRET is missing"},
		{name: "azure nothing", platform: "azure", env: map[string]string{"ARM_SUBSCRIPTION_ID": "s"}, want: "az login"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			env := func(k string) string {
				if k == "HOME" {
					return home
				}
				return tc.env[k]
			}
			err := CheckCredentials(tc.platform, env)
			switch {
			case tc.want == "" && err != nil:
				t.Fatal(err)
			case tc.want != "" && (err == nil || !strings.Contains(err.Error(), tc.want) || !errors.Is(err, ErrNoCredentials)):
				t.Fatalf("error %v, want %q", err, tc.want)
			}
		})
	}
}
