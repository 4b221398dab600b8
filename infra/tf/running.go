package tf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"sync"
	"time"
)

// Activity is what Terraform is doing in this process now: a signal
// handler asks it whether to wait (Terraform saving its state after an
// interrupt) and what to say while it waits. The zero value is ready; a
// nil *Activity records nothing.
type Activity struct {
	mu   sync.Mutex
	next int
	ops  map[int]runningOp
}

type runningOp struct {
	what  string
	since time.Time
}

// Start records a Terraform command, described by what, until the
// returned func is called.
func (a *Activity) Start(what string) func() {
	if a == nil {
		return func() {}
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	if a.ops == nil {
		a.ops = map[int]runningOp{}
	}
	id := a.next
	a.next++
	a.ops[id] = runningOp{what: what, since: time.Now()}
	return func() {
		a.mu.Lock()
		delete(a.ops, id)
		a.mu.Unlock()
	}
}

// Running describes each Terraform command running now ("terraform apply
// of group G in DIR, for 1m30s"), oldest first; empty when none.
func (a *Activity) Running() []string {
	if a == nil {
		return nil
	}
	a.mu.Lock()
	defer a.mu.Unlock()
	ops := make([]runningOp, 0, len(a.ops))
	for _, op := range a.ops {
		ops = append(ops, op)
	}
	sort.Slice(ops, func(i, j int) bool { return ops[i].since.Before(ops[j].since) })
	out := make([]string, len(ops))
	for i, op := range ops {
		out[i] = fmt.Sprintf("%s, for %s", op.what, time.Since(op.since).Round(time.Second))
	}
	return out
}

// runningFile, in a group's working directory, says that an xp process
// runs terraform apply or destroy there; it is removed when Terraform
// returns. Found by a later process, it means that process died (a third
// interrupt, SIGKILL) while Terraform ran: Terraform was killed with it,
// and what it was creating may exist outside its state.
const runningFile = ".xp-terraform-running"

type runMark struct {
	Op      string    `json:"op"`
	PID     int       `json:"pid"`
	Started time.Time `json:"started"`
}

// terraform runs fn, a terraform apply or destroy (op) of group in dir,
// marking it in dir (runningFile) and in p.Activity while it runs.
func (p *Provisioner) terraform(op, group, dir string, fn func() error) error {
	b, _ := json.Marshal(runMark{Op: op, PID: os.Getpid(), Started: p.now()})
	mark := filepath.Join(dir, runningFile)
	if err := os.WriteFile(mark, b, 0o600); err != nil {
		return err
	}
	done := p.Activity.Start(fmt.Sprintf("terraform %s of group %s in %s", op, group, dir))
	err := fn()
	done()
	if rerr := os.Remove(mark); rerr != nil && !errors.Is(rerr, os.ErrNotExist) {
		err = errors.Join(err, rerr)
	}
	return err
}

// Abandoned is a terraform apply or destroy whose xp process died while
// it ran: resources it was creating may exist in the cloud, and cost,
// without being in the group's state, where a destroy cannot see them.
type Abandoned struct {
	Group    string
	Op       string
	PID      int
	Started  time.Time
	Platform string
	// Campaign, Slug and Region are the group's campaign, group and
	// region variables: the tags and the place to look.
	Campaign, Slug, Region string
}

// Abandoned lists the groups not recorded as down whose working directory
// holds the mark of a Terraform command that never returned.
func (p *Provisioner) Abandoned(ctx context.Context) ([]Abandoned, error) {
	last, order, err := p.latest(ctx)
	if err != nil {
		return nil, err
	}
	var out []Abandoned
	for _, g := range order {
		e := last[g]
		if e.Event == EventDown {
			continue
		}
		var o eventOutputs
		if json.Unmarshal(e.Outputs, &o) != nil || o.Dir == "" {
			continue
		}
		b, err := os.ReadFile(filepath.Join(o.Dir, runningFile))
		if err != nil {
			continue
		}
		var m runMark
		json.Unmarshal(b, &m)
		str := func(k string) string { s, _ := o.Vars[k].(string); return s }
		out = append(out, Abandoned{Group: g, Op: m.Op, PID: m.PID, Started: m.Started, Platform: o.Platform,
			Campaign: str("campaign"), Slug: str("group"), Region: str("region")})
	}
	return out, nil
}

// Advice says what may be left outside the state and how to find it: the
// modules tag every resource with the campaign and the group
// (terraform/README.md), and the cloud's CLI lists what carries both.
func (a Abandoned) Advice() string {
	op := a.Op
	if op == "" {
		op = "apply"
	}
	s := fmt.Sprintf("group %s: the terraform %s started %s by xp (pid %d) was abandoned before Terraform saved its state: ",
		a.Group, op, a.Started.Format(time.RFC3339), a.PID)
	switch a.Platform {
	case "aws":
		region := a.Region
		if region == "" {
			region = "REGION"
		}
		return s + fmt.Sprintf("resources it was creating may exist outside the state and keep costing. "+
			"After this destroy, list what is left with the tags xp:campaign=%[1]s and xp:group=%[2]s:\n"+
			"  aws resourcegroupstaggingapi get-resources --region %[3]s --tag-filters Key=xp:campaign,Values=%[1]s Key=xp:group,Values=%[2]s\n"+
			"and delete it in the console or with the service's CLI (instances first: aws ec2 terminate-instances --region %[3]s --instance-ids ...)",
			a.Campaign, a.Slug, region)
	case "azure":
		return s + fmt.Sprintf("resources it was creating may exist outside the state and keep costing. "+
			"After this destroy, list what is left with the tags xp-campaign=%[1]s and xp-group=%[2]s:\n"+
			"  az resource list --tag xp-group=%[2]s --query \"[?tags.\\\"xp-campaign\\\"=='%[1]s']\" -o table\n"+
			"and delete the group's resource group if it is still there: az group delete --name xp-%[1]s-%[2]s",
			a.Campaign, a.Slug)
	}
	return s + fmt.Sprintf("platform %s creates nothing in a cloud, so nothing can be left costing outside the state", a.Platform)
}

// interrupted says an apply or destroy that an interrupt stopped.
func interrupted(op string) error {
	return fmt.Errorf("terraform %s interrupted: Terraform stopped after the calls in flight and saved its state; "+
		"xp infra down destroys what it holds", strings.TrimSpace(op))
}
