package tf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"

	"github.com/xp-bench/xp/infra/targetfile"
)

// operatorCIDRCases are ranges and whether vars.operator_cidr may be one.
var operatorCIDRCases = []struct {
	cidr string
	ok   bool
}{
	{"203.0.113.7/32", true},
	{"198.51.100.0/24", true},
	{"10.0.0.0/8", true},
	{"0.0.0.0/0", false},
	{"1.2.3.4/0", false},
	{"0.0.0.0/1", false},
	{"10.0.0.0/7", false},
	{"1.2.3.4/24", false},
	{"203.0.113.7", false},
	{"010.0.0.0/8", false},
	{"::/0", false},
	{"2001:db8::/64", false},
	{"203.0.113.7/33", false},
}

// TARGET.yaml's vars.operator_cidr is refused when it reads, naming the
// file, line and key.
func TestOperatorCIDRRefusedWhenRead(t *testing.T) {
	for _, c := range operatorCIDRCases {
		t.Run(c.cidr, func(t *testing.T) {
			text := fmt.Sprintf("platform: aws\nvars:\n  region: eu-west-1\n  operator_cidr: %q\n", c.cidr)
			_, err := targetfile.Parse("aws.yaml", []byte(text), func(string) string { return "" })
			if c.ok != (err == nil) {
				t.Fatalf("ok=%v, error %v", c.ok, err)
			}
			if err != nil && !strings.Contains(err.Error(), "aws.yaml:4: vars.operator_cidr: ") {
				t.Fatalf("error %q does not name file, line and key", err)
			}
		})
	}
	if why := targetfile.CheckOperatorCIDR("1.2.3.4/24"); !strings.Contains(why, "1.2.3.0/24") || !strings.Contains(why, "1.2.3.4/32") {
		t.Errorf("the message does not give the fix: %s", why)
	}
}

// The aws and azure modules' validation of var.operator_cidr, run by the
// real terraform, accepts exactly what CheckOperatorCIDR accepts.
func TestModulesValidateOperatorCIDRAsXPDoes(t *testing.T) {
	exe := terraformPath(t)
	for _, mod := range []string{"aws", "azure"} {
		t.Run(mod, func(t *testing.T) {
			src, err := os.ReadFile(filepath.Join("../../terraform", mod, "variables.tf"))
			if err != nil {
				t.Fatal(err)
			}
			f, diags := hclsyntax.ParseConfig(src, "variables.tf", hcl.InitialPos)
			if diags.HasErrors() {
				t.Fatal(diags)
			}
			var block string
			for _, b := range f.Body.(*hclsyntax.Body).Blocks {
				if b.Type == "variable" && b.Labels[0] == "operator_cidr" {
					r := b.Range()
					block = string(src[r.Start.Byte:r.End.Byte])
				}
			}
			if block == "" {
				t.Fatal("no variable operator_cidr")
			}
			// The block once per case, as operator_cidr_N: one plan
			// validates them all.
			var tf strings.Builder
			args := []string{"plan", "-input=false", "-no-color", "-lock=false"}
			for i, c := range operatorCIDRCases {
				name := fmt.Sprintf("operator_cidr_%d", i)
				tf.WriteString(strings.ReplaceAll(block, "operator_cidr", name) + "\n")
				args = append(args, "-var="+name+"="+c.cidr)
			}
			dir := t.TempDir()
			if err := os.WriteFile(filepath.Join(dir, "main.tf"), []byte(tf.String()), 0o600); err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(exe, args...)
			cmd.Dir = dir
			cmd.Env = append(os.Environ(), "TF_IN_AUTOMATION=1", "CHECKPOINT_DISABLE=1")
			out, _ := cmd.CombinedOutput()
			refused := map[string]bool{}
			for _, m := range regexp.MustCompile(`variable "(operator_cidr_[0-9]+)"`).FindAllStringSubmatch(string(out), -1) {
				refused[m[1]] = true
			}
			for i, c := range operatorCIDRCases {
				name := fmt.Sprintf("operator_cidr_%d", i)
				if refused[name] == c.ok {
					t.Errorf("%s: terraform refused=%v, xp accepts=%v", c.cidr, refused[name], c.ok)
				}
				if (targetfile.CheckOperatorCIDR(c.cidr) == "") != c.ok {
					t.Errorf("%s: CheckOperatorCIDR %q, want ok=%v", c.cidr, targetfile.CheckOperatorCIDR(c.cidr), c.ok)
				}
			}
			if len(refused) == 0 {
				t.Fatalf("terraform refused nothing:\n%s", out)
			}
		})
	}
}
