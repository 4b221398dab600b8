package tf

import (
	"encoding/json"
	"fmt"
	"net"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/xp-bench/xp/planner"
)

// Roles are the machine roles of the module contract, in the order
// inventories list them.
var Roles = []string{planner.RoleBroker, planner.RoleController, planner.RoleGateway, planner.RoleClient}

// Host is one machine of an applied group.
type Host struct {
	Name string `json:"name"`
	// PublicAddress is where xp reaches the machine over SSH.
	PublicAddress string `json:"public_address"`
	// PrivateAddress is where the group's machines reach each other.
	PrivateAddress string `json:"private_address"`
	SSHPort        int    `json:"ssh_port"`
}

// Hosts are an applied group's machines by role. Controllers is empty when
// brokers are combined KRaft nodes.
type Hosts struct {
	Brokers     []Host `json:"brokers"`
	Controllers []Host `json:"controllers"`
	Gateways    []Host `json:"gateways"`
	Clients     []Host `json:"clients"`
}

// Role returns the hosts of one of Roles.
func (h Hosts) Role(role string) []Host {
	switch role {
	case planner.RoleBroker:
		return h.Brokers
	case planner.RoleController:
		return h.Controllers
	case planner.RoleGateway:
		return h.Gateways
	case planner.RoleClient:
		return h.Clients
	}
	return nil
}

// Count is the number of machines of every role.
func (h Hosts) Count() int {
	return len(h.Brokers) + len(h.Controllers) + len(h.Gateways) + len(h.Clients)
}

// Inventory is what a module's outputs say about one applied group: the
// machines a remote deployer configures over SSH, and what they cost.
type Inventory struct {
	Hosts   Hosts  `json:"hosts"`
	SSHUser string `json:"ssh_user"`
	// InstanceTypes and HourlyPriceUSD are keyed by role (Roles); a price
	// is nil when the module does not know it.
	InstanceTypes  map[string]string   `json:"instance_types"`
	HourlyPriceUSD map[string]*float64 `json:"hourly_price_usd"`
	Region         string              `json:"region"`
	// Dir is the group's working directory (not an output: the
	// Provisioner sets it). What belongs to the group alone, such as its
	// machines' host keys, lives there and goes with the group.
	Dir string `json:"-"`
}

// parseOutputs reads terraform output into an Inventory, refusing outputs
// that break the module contract.
func parseOutputs(outs map[string]tfexec.OutputMeta) (*Inventory, error) {
	raw := map[string]json.RawMessage{}
	for _, k := range []string{"hosts", "ssh_user", "instance_types", "hourly_price_usd", "region"} {
		o, ok := outs[k]
		if !ok {
			return nil, fmt.Errorf("module has no output %q (terraform/README.md lists the contract)", k)
		}
		raw[k] = o.Value
	}
	b, _ := json.Marshal(raw)
	var inv Inventory
	if err := json.Unmarshal(b, &inv); err != nil {
		return nil, fmt.Errorf("module outputs break the contract: %w", err)
	}
	if len(inv.Hosts.Brokers) == 0 {
		return nil, fmt.Errorf("module outputs no brokers")
	}
	for _, role := range Roles {
		for _, h := range inv.Hosts.Role(role) {
			if h.Name == "" || h.PublicAddress == "" || h.SSHPort <= 0 {
				return nil, fmt.Errorf("module outputs a %s without name, public_address or ssh_port: %+v", role, h)
			}
			// Addresses go into shell lines, configs and certificates on
			// the machines: only an IP address is taken as one.
			for _, a := range []struct{ key, v string }{{"public_address", h.PublicAddress}, {"private_address", h.PrivateAddress}} {
				if a.v != "" && net.ParseIP(a.v) == nil {
					return nil, fmt.Errorf("module outputs %s %s with %s %q: want an IP address", role, h.Name, a.key, a.v)
				}
			}
		}
	}
	return &inv, nil
}

// Machine is one host of an Inventory with its role and instance type, as
// a deployer that handles every machine alike wants it.
type Machine struct {
	Host
	Role         string
	InstanceType string
}

// Machines lists every host in Roles order (brokers first).
func (inv *Inventory) Machines() []Machine {
	var out []Machine
	for _, role := range Roles {
		for _, h := range inv.Hosts.Role(role) {
			out = append(out, Machine{Host: h, Role: role, InstanceType: inv.InstanceTypes[role]})
		}
	}
	return out
}
