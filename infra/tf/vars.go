package tf

import (
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"os"
	"strings"

	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/planner"
)

// GroupSlug is the short, stable name of an infrastructure group in
// resource names and working directories: "g" and 8 hex digits of the
// group key's hash (of its SlugSeed).
func GroupSlug(k planner.InfraKey) string {
	h := sha256.Sum256([]byte(k.SlugSeed()))
	return "g" + hex.EncodeToString(h[:4])
}

// campaignLabel makes a campaign name fit cloud resource names: lower
// case letters, digits and '-', at most 24 characters.
func campaignLabel(name string) string {
	var b strings.Builder
	for _, c := range strings.ToLower(name) {
		switch {
		case 'a' <= c && c <= 'z', '0' <= c && c <= '9':
			b.WriteRune(c)
		default:
			b.WriteByte('-')
		}
	}
	s := strings.Trim(b.String(), "-")
	if len(s) > 24 {
		s = strings.TrimRight(s[:24], "-")
	}
	if s == "" {
		s = "xp"
	}
	return s
}

// GroupVars are the variables one infrastructure group is applied with:
// the target file's vars, and what the group's rows say (campaign, group,
// broker_count, gateway_count, instance types). ssh_public_key is read
// from the target's ssh.private_key with .pub appended.
func GroupVars(t *targetfile.File, campaign string, key planner.InfraKey, rows []planner.Row) (map[string]any, error) {
	vars := make(map[string]any, len(t.Vars)+8)
	for k, v := range t.Vars {
		vars[k] = v
	}
	vars["campaign"] = campaignLabel(campaign)
	vars["group"] = GroupSlug(key)
	vars["broker_count"] = key.Brokers
	gateways := 0
	for i := range rows {
		if rows[i].NeedsGateway() {
			gateways = key.Gateways
			break
		}
	}
	vars["gateway_count"] = gateways
	if key.InstanceType != "" {
		vars["broker_instance_type"] = key.InstanceType
		for _, role := range []string{planner.RoleController, planner.RoleGateway, planner.RoleClient} {
			if _, set := vars[role+"_instance_type"]; !set {
				vars[role+"_instance_type"] = key.InstanceType
			}
		}
	}
	switch t.Platform {
	case "aws", "azure":
		if _, ok := vars["operator_cidr"]; !ok {
			return nil, fmt.Errorf("%s: vars.operator_cidr is missing: the address range SSH may come from, e.g. your address/32", t.Path)
		}
		if _, ok := vars["region"]; !ok {
			return nil, fmt.Errorf("%s: vars.region is missing (e.g. eu-west-1 on aws, westeurope on azure)", t.Path)
		}
		if _, ok := vars["ssh_public_key"]; !ok {
			if t.SSH.PrivateKey == "" {
				return nil, fmt.Errorf("%s: ssh.private_key is missing: the key xp logs in with (its .pub is installed on the machines)", t.Path)
			}
			pub, err := os.ReadFile(t.SSH.PrivateKey + ".pub")
			if err != nil {
				return nil, fmt.Errorf("%s: ssh.private_key: the public key beside it: %w", t.Path, err)
			}
			vars["ssh_public_key"] = strings.TrimSpace(string(pub))
		}
	case "hosts":
		if _, ok := vars["machines"]; !ok {
			return nil, fmt.Errorf("%s: vars.machines is missing: the list of {name, address, ssh_port, role} of your machines", t.Path)
		}
	}
	if t.SSH.User != "" && t.Platform != "aws" {
		if _, set := vars["ssh_user"]; !set {
			vars["ssh_user"] = t.SSH.User
		}
	}
	return vars, nil
}
