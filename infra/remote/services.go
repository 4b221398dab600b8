package remote

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"strings"

	"github.com/xp-bench/xp/infra/agent"
	"github.com/xp-bench/xp/infra/ssh"
	"github.com/xp-bench/xp/planner"
)

// ServiceDownError is a service xp started on a host (a Kafka node, the
// embedded cluster, a gateway) that no longer runs: a run measured while
// it was gone did not measure the cluster the group brought up.
type ServiceDownError struct {
	Host, Service string
}

func (e *ServiceDownError) Error() string {
	return fmt.Sprintf("service %s is not running (it exited or was killed; its log is kept with the attempt)", e.Service)
}

// CheckServices asks the agent on every broker, controller and gateway
// host whether the services started there still run, and returns a
// *ServiceDownError (one per host, naming its services that do not run).
func (d *Deployment) CheckServices(ctx context.Context) error {
	names := append(append(d.names(planner.RoleBroker), d.names(planner.RoleController)...), d.names(planner.RoleGateway)...)
	return d.each(ctx, names, func(ctx context.Context, h *deployed) error {
		c, err := d.client(ctx, h)
		if err != nil {
			return err
		}
		out, err := c.Output(ctx, fmt.Sprintf("%s agent status --dir %s", ssh.Quote(h.xp), ssh.Quote(h.dir)))
		if err != nil {
			return fmt.Errorf("agent status: %w", err)
		}
		var down []string
		sc := bufio.NewScanner(bytes.NewReader(out))
		for sc.Scan() {
			var s agent.Service
			if err := json.Unmarshal(sc.Bytes(), &s); err != nil {
				return fmt.Errorf("agent status: %q: %w", sc.Text(), err)
			}
			if !s.Running {
				down = append(down, s.Name)
			}
		}
		if len(down) > 0 {
			return &ServiceDownError{Host: h.Name, Service: strings.Join(down, ", ")}
		}
		return nil
	})
}
