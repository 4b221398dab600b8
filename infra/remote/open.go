package remote

import (
	"context"
	"fmt"
	"io"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/planner"
)

// BinaryEnv names the environment variable that gives the xp binary to
// upload to remote hosts, for hosts of another OS or architecture than
// this xp's; default this xp.
const BinaryEnv = "XP_AGENT_BINARY"

// OpenOptions are what Opener needs from the process around it.
type OpenOptions struct {
	// Log is the campaign log (Terraform's output, remote commands).
	Log    io.Writer
	Prices *planner.Prices
	Getenv func(string) string
	// Terraform learns of every terraform apply and destroy while it
	// runs (the signal handler's view).
	Terraform *tf.Activity
}

// Opener opens the aws, azure and hosts platforms' targets: machines from
// Terraform (tf.Target) configured over SSH by a Deployer.
func Opener(o OpenOptions) target.Opener {
	return func(cfg target.Config) (target.Target, error) {
		get := o.Getenv
		if get == nil {
			get = func(string) string { return "" }
		}
		t, err := targetfile.Parse(cfg.Path, cfg.Text, get)
		if err != nil {
			return nil, err
		}
		dep, err := NewDeployer(DeployerOptions{Campaign: cfg.Campaign, SSH: t.SSH, Kafka: t.Kafka, Gateway: t.Gateway, TargetPath: cfg.Path,
			KnownHosts: cfg.DB + ".known_hosts", Binary: get(BinaryEnv), Log: o.Log, WorkDir: cfg.WorkDir})
		if err != nil {
			return nil, fmt.Errorf("%s: %w", cfg.Path, err)
		}
		exec, err := tf.Find(context.Background(), tf.CacheDir(get))
		if err != nil {
			return nil, err
		}
		return tf.NewTarget(cfg, cfg.Campaign, tf.TargetOptions{Deployer: dep, ExecPath: exec, Log: o.Log,
			Prices: o.Prices, Getenv: get, Activity: o.Terraform})
	}
}
