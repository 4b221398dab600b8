package tf

import (
	"errors"
	"fmt"
	"os"
	"path/filepath"
)

// ErrNoCredentials is returned (wrapped) by CheckCredentials when a
// provider's credentials are missing.
var ErrNoCredentials = errors.New("provider credentials missing")

type credentialsError struct{ msg string }

func (e *credentialsError) Error() string { return e.msg }
func (e *credentialsError) Unwrap() error { return ErrNoCredentials }

func missing(format string, a ...any) error { return &credentialsError{fmt.Sprintf(format, a...)} }

// CheckCredentials says, before anything is applied, whether the
// environment holds the credentials platform's Terraform provider reads,
// naming the variable to set when not. hosts needs none.
func CheckCredentials(platform string, getenv func(string) string) error {
	set := func(k string) bool { return getenv(k) != "" }
	exists := func(p string) bool { _, err := os.Stat(p); return err == nil }
	home := getenv("HOME")
	switch platform {
	case "aws":
		switch {
		case set("AWS_ACCESS_KEY_ID") && !set("AWS_SECRET_ACCESS_KEY"):
			return missing("aws credentials: AWS_ACCESS_KEY_ID is set but AWS_SECRET_ACCESS_KEY is missing")
		case set("AWS_SECRET_ACCESS_KEY") && !set("AWS_ACCESS_KEY_ID"):
			return missing("aws credentials: AWS_SECRET_ACCESS_KEY is set but AWS_ACCESS_KEY_ID is missing")
		case set("AWS_ACCESS_KEY_ID"), set("AWS_PROFILE"), set("AWS_WEB_IDENTITY_TOKEN_FILE"),
			set("AWS_CONTAINER_CREDENTIALS_FULL_URI"), set("AWS_CONTAINER_CREDENTIALS_RELATIVE_URI"):
			return nil
		case home != "" && (exists(filepath.Join(home, ".aws", "credentials")) || exists(filepath.Join(home, ".aws", "config"))):
			return nil
		}
		return missing("aws credentials: none found: set AWS_PROFILE (a profile in ~/.aws/config), or AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY")
	case "azure":
		if !set("ARM_SUBSCRIPTION_ID") {
			return missing("azure credentials: ARM_SUBSCRIPTION_ID is missing (the subscription to create the group in)")
		}
		switch {
		case set("ARM_CLIENT_ID") || set("ARM_CLIENT_SECRET") || set("ARM_TENANT_ID"):
			for _, k := range []string{"ARM_TENANT_ID", "ARM_CLIENT_ID"} {
				if !set(k) {
					return missing("azure credentials: %s is missing (a service principal needs ARM_TENANT_ID, ARM_CLIENT_ID and ARM_CLIENT_SECRET or ARM_CLIENT_CERTIFICATE_PATH)", k)
				}
			}
			if !set("ARM_CLIENT_SECRET") && !set("ARM_CLIENT_CERTIFICATE_PATH") && !set("ARM_USE_OIDC") && !set("ARM_USE_MSI") {
				return missing("azure credentials: ARM_CLIENT_SECRET is missing (or set ARM_CLIENT_CERTIFICATE_PATH, ARM_USE_OIDC or ARM_USE_MSI)")
			}
			return nil
		case set("ARM_USE_MSI"), set("ARM_USE_OIDC"):
			return nil
		case home != "" && exists(filepath.Join(home, ".azure")):
			return nil // an `az login` session
		}
		return missing("azure credentials: none found: run `az login`, or set ARM_TENANT_ID, ARM_CLIENT_ID and ARM_CLIENT_SECRET")
	}
	return nil
}
