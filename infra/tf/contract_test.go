package tf

import (
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/hashicorp/hcl/v2"
	"github.com/hashicorp/hcl/v2/hclsyntax"
)

// The contract every module under terraform/ keeps (terraform/README.md).
var (
	contractOutputs   = []string{"hosts", "hourly_price_usd", "instance_types", "region", "ssh_user"}
	contractVariables = []string{
		"campaign", "group", "broker_count", "controller_count", "gateway_count", "client_count",
		"broker_instance_type", "controller_instance_type", "gateway_instance_type", "client_instance_type",
		"ssh_public_key", "operator_cidr",
	}
	// untaggable are resource types the providers cannot tag.
	untaggable = []string{
		"terraform_data",
		"aws_route_table_association",
		"azurerm_subnet",
		"azurerm_subnet_network_security_group_association",
	}
	// credentialAttrs are provider arguments that would put a secret or an
	// account in a file.
	credentialAttrs = []string{
		"access_key", "secret_key", "token", "profile", "shared_credentials_files",
		"subscription_id", "tenant_id", "client_id", "client_secret", "client_certificate_password",
	}
	exactVersion = regexp.MustCompile(`^\d+\.\d+\.\d+$`)
)

// module is one parsed module directory.
type module struct {
	name      string
	outputs   map[string]*hclsyntax.Block
	variables map[string]*hclsyntax.Block
	resources []*hclsyntax.Block
	providers []*hclsyntax.Block
	terraform []*hclsyntax.Block
	locals    hclsyntax.Attributes
}

func parseModule(name string, files map[string]string) (*module, error) {
	m := &module{name: name, outputs: map[string]*hclsyntax.Block{}, variables: map[string]*hclsyntax.Block{}, locals: hclsyntax.Attributes{}}
	names := make([]string, 0, len(files))
	for f := range files {
		names = append(names, f)
	}
	sort.Strings(names)
	for _, fn := range names {
		f, diags := hclsyntax.ParseConfig([]byte(files[fn]), fn, hcl.InitialPos)
		if diags.HasErrors() {
			return nil, diags
		}
		for _, b := range f.Body.(*hclsyntax.Body).Blocks {
			switch b.Type {
			case "output":
				m.outputs[b.Labels[0]] = b
			case "variable":
				m.variables[b.Labels[0]] = b
			case "resource":
				m.resources = append(m.resources, b)
			case "provider":
				m.providers = append(m.providers, b)
			case "terraform":
				m.terraform = append(m.terraform, b)
			case "locals":
				for k, a := range b.Body.Attributes {
					m.locals[k] = a
				}
			}
		}
	}
	return m, nil
}

// refers reports whether e is exactly the reference root.attr (e.g.
// var.operator_cidr).
func refers(e hclsyntax.Expression, root, attr string) bool {
	st, ok := e.(*hclsyntax.ScopeTraversalExpr)
	if !ok || len(st.Traversal) != 2 || st.Traversal.RootName() != root {
		return false
	}
	a, ok := st.Traversal[1].(hcl.TraverseAttr)
	return ok && a.Name == attr
}

// mentions reports whether e references root.attr anywhere.
func mentions(e hclsyntax.Expression, root, attr string) bool {
	for _, t := range e.Variables() {
		if t.RootName() != root || len(t) < 2 {
			continue
		}
		if a, ok := t[1].(hcl.TraverseAttr); ok && a.Name == attr {
			return true
		}
	}
	return false
}

// literal is e's value when it is a constant (a string or number literal,
// or a template without interpolation), else "".
func literal(e hclsyntax.Expression) string {
	v, diags := e.Value(nil)
	if diags.HasErrors() || !v.IsKnown() || v.IsNull() {
		return ""
	}
	switch {
	case v.Type().FriendlyName() == "string":
		return v.AsString()
	case v.Type().FriendlyName() == "number":
		return v.AsBigFloat().Text('f', -1)
	}
	return ""
}

func attr(b *hclsyntax.Block, name string) hclsyntax.Expression {
	if a, ok := b.Body.Attributes[name]; ok {
		return a.Expr
	}
	return nil
}

// checkModule lists every way m breaks the contract.
func checkModule(m *module) []string {
	var probs []string
	bad := func(format string, a ...any) { probs = append(probs, m.name+": "+fmt.Sprintf(format, a...)) }

	var outs []string
	for name, b := range m.outputs {
		outs = append(outs, name)
		if d := attr(b, "description"); d == nil || literal(d) == "" {
			bad("output %s has no description", name)
		}
	}
	sort.Strings(outs)
	if !slices.Equal(outs, contractOutputs) {
		bad("outputs %v, want exactly %v", outs, contractOutputs)
	}
	for _, v := range contractVariables {
		if m.variables[v] == nil {
			bad("no variable %s", v)
		}
	}
	for name, b := range m.variables {
		if attr(b, "type") == nil {
			bad("variable %s has no type", name)
		}
		if d := attr(b, "description"); d == nil || literal(d) == "" {
			bad("variable %s has no description", name)
		}
	}

	// Versions pinned, credentials from the environment only.
	required := false
	for _, t := range m.terraform {
		if attr(t, "required_version") != nil {
			required = true
		}
		for _, rp := range t.Body.Blocks {
			if rp.Type != "required_providers" {
				continue
			}
			for pname, a := range rp.Body.Attributes {
				obj, ok := a.Expr.(*hclsyntax.ObjectConsExpr)
				if !ok {
					bad("required provider %s: want {source, version}", pname)
					continue
				}
				version := ""
				for _, it := range obj.Items {
					if literal(it.KeyExpr) == "version" {
						version = literal(it.ValueExpr)
					}
				}
				if !exactVersion.MatchString(version) {
					bad("provider %s version %q is not pinned to one release", pname, version)
				}
			}
		}
	}
	if !required {
		bad("no terraform.required_version")
	}
	for _, p := range m.providers {
		for name := range p.Body.Attributes {
			if slices.Contains(credentialAttrs, name) {
				bad("provider %s sets %s: credentials come from the environment", p.Labels[0], name)
			}
		}
	}

	// Tags: local.tags names campaign and group; every taggable resource
	// carries it.
	tags, ok := m.locals["tags"]
	if !ok {
		if slices.ContainsFunc(m.resources, func(b *hclsyntax.Block) bool { return !slices.Contains(untaggable, b.Labels[0]) }) {
			bad("no local tags")
		}
	} else if !mentions(tags.Expr, "var", "campaign") || !mentions(tags.Expr, "var", "group") {
		bad("local.tags does not carry var.campaign and var.group")
	}
	for _, r := range m.resources {
		typ, name := r.Labels[0], r.Labels[1]
		if slices.Contains(untaggable, typ) {
			continue
		}
		if t := attr(r, "tags"); t == nil || !mentions(t, "local", "tags") {
			bad("resource %s.%s is not tagged with local.tags", typ, name)
		}
	}

	// Ingress: SSH from var.operator_cidr, everything from inside the
	// group, nothing else.
	for _, r := range m.resources {
		typ, name := r.Labels[0], r.Labels[1]
		switch typ {
		case "aws_security_group_rule", "azurerm_network_security_rule":
			bad("resource %s.%s: rules belong in the checked forms (aws_vpc_security_group_*_rule, inline security_rule)", typ, name)
		case "aws_security_group":
			for _, b := range r.Body.Blocks {
				if b.Type == "ingress" {
					bad("%s.%s has an inline ingress block", typ, name)
				}
			}
		case "aws_vpc_security_group_ingress_rule":
			switch {
			case attr(r, "referenced_security_group_id") != nil && attr(r, "cidr_ipv4") == nil && attr(r, "cidr_ipv6") == nil && attr(r, "prefix_list_id") == nil:
				if !mentions(attr(r, "referenced_security_group_id"), "aws_security_group", "group") {
					bad("%s.%s admits another security group", typ, name)
				}
			case attr(r, "cidr_ipv4") != nil && refers(attr(r, "cidr_ipv4"), "var", "operator_cidr") && attr(r, "cidr_ipv6") == nil:
				if f, t := attr(r, "from_port"), attr(r, "to_port"); f == nil || t == nil || literal(f) != "22" || literal(t) != "22" || literal(attr(r, "ip_protocol")) != "tcp" {
					bad("%s.%s admits the operator to more than SSH (tcp/22)", typ, name)
				}
			default:
				bad("%s.%s admits traffic from outside the group and the operator's SSH", typ, name)
			}
		case "azurerm_network_security_group":
			denyAll := false
			for _, b := range r.Body.Blocks {
				if b.Type != "security_rule" || literal(attr(b, "direction")) != "Inbound" {
					continue
				}
				src := attr(b, "source_address_prefix")
				switch access := literal(attr(b, "access")); {
				case access == "Deny":
					if src != nil && literal(src) == "*" && literal(attr(b, "destination_port_range")) == "*" && literal(attr(b, "protocol")) == "*" {
						denyAll = true
					}
				case attr(b, "source_address_prefixes") != nil:
					bad("%s.%s: rule %s admits a list of sources", typ, name, literal(attr(b, "name")))
				case src != nil && refers(src, "var", "operator_cidr"):
					if literal(attr(b, "destination_port_range")) != "22" || literal(attr(b, "protocol")) != "Tcp" {
						bad("%s.%s: rule %s admits the operator to more than SSH (Tcp/22)", typ, name, literal(attr(b, "name")))
					}
				case src != nil && refers(src, "var", "vnet_cidr"):
				default:
					bad("%s.%s: rule %s admits traffic from outside the group and the operator's SSH", typ, name, literal(attr(b, "name")))
				}
			}
			if !denyAll {
				bad("%s.%s does not deny other inbound traffic (Azure's defaults admit the whole virtual network and its load balancer)", typ, name)
			}
		}
	}
	return probs
}

func readModule(t *testing.T, dir string) map[string]string {
	t.Helper()
	paths, err := filepath.Glob(filepath.Join(dir, "*.tf"))
	if err != nil || len(paths) == 0 {
		t.Fatalf("%s: no .tf files (%v)", dir, err)
	}
	files := map[string]string{}
	for _, p := range paths {
		b, err := os.ReadFile(p)
		if err != nil {
			t.Fatal(err)
		}
		files[p] = string(b)
	}
	return files
}

// TestModulesKeepContract checks every module under terraform/: the AWS
// and Azure providers cannot be downloaded here, so this is what checks
// them.
func TestModulesKeepContract(t *testing.T) {
	dirs, err := filepath.Glob("../../terraform/*")
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for _, d := range dirs {
		if fi, err := os.Stat(d); err == nil && fi.IsDir() {
			names = append(names, filepath.Base(d))
		}
	}
	if !slices.Equal(names, []string{"aws", "azure", "hosts"}) {
		t.Fatalf("modules %v, want aws, azure, hosts", names)
	}
	for _, name := range names {
		t.Run(name, func(t *testing.T) {
			m, err := parseModule(name, readModule(t, filepath.Join("../../terraform", name)))
			if err != nil {
				t.Fatal(err)
			}
			for _, p := range checkModule(m) {
				t.Error(p)
			}
		})
	}
}

// TestContractCheckerFindsDefects breaks a module that keeps the contract
// in each way the checker must notice.
func TestContractCheckerFindsDefects(t *testing.T) {
	good := map[string]string{"variables.tf": `
variable "campaign" {
  type        = string
  description = "c"
}
variable "group" {
  type        = string
  description = "g"
}
variable "broker_count" {
  type        = number
  description = "b"
}
variable "controller_count" {
  type        = number
  description = "c"
}
variable "gateway_count" {
  type        = number
  description = "g"
}
variable "client_count" {
  type        = number
  description = "c"
}
variable "broker_instance_type" {
  type        = string
  description = "t"
}
variable "controller_instance_type" {
  type        = string
  description = "t"
}
variable "gateway_instance_type" {
  type        = string
  description = "t"
}
variable "client_instance_type" {
  type        = string
  description = "t"
}
variable "ssh_public_key" {
  type        = string
  description = "k"
}
variable "operator_cidr" {
  type        = string
  description = "o"
}
`, "outputs.tf": `
output "hosts" {
  description = "h"
  value       = {}
}
output "ssh_user" {
  description = "u"
  value       = "u"
}
output "instance_types" {
  description = "i"
  value       = {}
}
output "hourly_price_usd" {
  description = "p"
  value       = {}
}
output "region" {
  description = "r"
  value       = "r"
}
`, "main.tf": `
terraform {
  required_version = ">= 1.5"
  required_providers {
    aws = {
      source  = "hashicorp/aws"
      version = "5.80.0"
    }
  }
}
provider "aws" {
  region = "eu-west-1"
}
locals {
  tags = { campaign = var.campaign, group = var.group }
}
resource "aws_security_group" "group" {
  tags = local.tags
}
resource "aws_vpc_security_group_ingress_rule" "ssh" {
  cidr_ipv4   = var.operator_cidr
  ip_protocol = "tcp"
  from_port   = 22
  to_port     = 22
  tags        = local.tags
}
resource "aws_vpc_security_group_ingress_rule" "group" {
  referenced_security_group_id = aws_security_group.group.id
  ip_protocol                  = "-1"
  tags                         = local.tags
}
resource "azurerm_network_security_group" "group" {
  tags = local.tags
  security_rule {
    name                       = "ssh"
    direction                  = "Inbound"
    access                     = "Allow"
    protocol                   = "Tcp"
    destination_port_range     = "22"
    source_address_prefix      = var.operator_cidr
  }
  security_rule {
    name                       = "deny"
    direction                  = "Inbound"
    access                     = "Deny"
    protocol                   = "*"
    destination_port_range     = "*"
    source_address_prefix      = "*"
  }
}
resource "azurerm_subnet" "group" {
  name = "s"
}
`}
	tests := []struct {
		name      string
		file, old string
		new       string
		want      string // "" = no problem
	}{
		{name: "keeps the contract"},
		{name: "output missing", file: "outputs.tf", old: `output "region"`, new: `output "place"`, want: "outputs [hosts hourly_price_usd instance_types place ssh_user]"},
		{name: "output undescribed", file: "outputs.tf", old: `description = "u"`, new: ``, want: "output ssh_user has no description"},
		{name: "variable missing", file: "variables.tf", old: `variable "operator_cidr"`, new: `variable "operator_range"`, want: "no variable operator_cidr"},
		{name: "variable untyped", file: "variables.tf", old: "type        = number\n  description = \"g\"", new: `description = "g"`, want: "variable gateway_count has no type"},
		{name: "variable undescribed", file: "variables.tf", old: `description = "k"`, new: ``, want: "variable ssh_public_key has no description"},
		{name: "provider unpinned", file: "main.tf", old: `"5.80.0"`, new: `"~> 5.0"`, want: `provider aws version "~> 5.0" is not pinned`},
		{name: "credentials in file", file: "main.tf", old: `region = "eu-west-1"`, new: `access_key = "AKIA"`, want: "provider aws sets access_key"},
		{name: "resource untagged", file: "main.tf", old: "resource \"aws_security_group\" \"group\" {\n  tags = local.tags", new: `resource "aws_security_group" "group" {`, want: "resource aws_security_group.group is not tagged"},
		{name: "tags without group", file: "main.tf", old: `group = var.group`, new: `group = "g"`, want: "local.tags does not carry"},
		{name: "ssh from anywhere", file: "main.tf", old: `cidr_ipv4   = var.operator_cidr`, new: `cidr_ipv4   = "0.0.0.0/0"`, want: "aws_vpc_security_group_ingress_rule.ssh admits traffic from outside"},
		{name: "operator beyond ssh", file: "main.tf", old: `to_port     = 22`, new: `to_port     = 9092`, want: "admits the operator to more than SSH"},
		{name: "another security group", file: "main.tf", old: `aws_security_group.group.id`, new: `"sg-123"`, want: "admits another security group"},
		{name: "old-style rule", file: "main.tf", old: `resource "azurerm_subnet"`, new: "resource \"aws_security_group_rule\" \"x\" {\n  tags = local.tags\n}\nresource \"azurerm_subnet\"", want: "aws_security_group_rule.x: rules belong"},
		{name: "azure rule from anywhere", file: "main.tf", old: `source_address_prefix      = var.operator_cidr`, new: `source_address_prefix      = "Internet"`, want: "rule ssh admits traffic from outside"},
		{name: "azure defaults left open", file: "main.tf", old: `access                     = "Deny"`, new: `access                     = "Allow"`, want: "does not deny other inbound traffic"},
	}
	for _, tc := range tests {
		t.Run(tc.name, func(t *testing.T) {
			files := map[string]string{}
			for k, v := range good {
				files[k] = v
			}
			if tc.file != "" {
				if !strings.Contains(files[tc.file], tc.old) {
					t.Fatalf("%s has no %q", tc.file, tc.old)
				}
				files[tc.file] = strings.Replace(files[tc.file], tc.old, tc.new, 1)
			}
			m, err := parseModule("m", files)
			if err != nil {
				t.Fatal(err)
			}
			probs := checkModule(m)
			if tc.want == "" {
				if len(probs) > 0 {
					t.Fatalf("problems in a module that keeps the contract: %q", probs)
				}
				return
			}
			if !slices.ContainsFunc(probs, func(p string) bool { return strings.Contains(p, tc.want) }) {
				t.Fatalf("problems %q, want one containing %q", probs, tc.want)
			}
		})
	}
}
