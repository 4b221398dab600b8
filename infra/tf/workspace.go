package tf

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"io/fs"
	"os"
	"path/filepath"
	"strings"

	"github.com/hashicorp/terraform-exec/tfexec"

	"github.com/xp-bench/xp/internal/durable"
)

// varsFile holds a group's variables in its working directory, so destroy
// (also by a later process, after a crash) sees what apply saw.
const varsFile = "xp.auto.tfvars.json"

// Workspace is the working directory of one infrastructure group: a copy
// of its module, its variables and its local state.
type Workspace struct {
	Dir string
	tf  *tfexec.Terraform
}

// NewWorkspace makes (or reopens) dir as the working directory of module,
// whose .tf files are copied from moduleFS (an existing directory's copy
// is replaced, its state kept), writes the variables every later plan,
// apply and destroy reads, and runs terraform init. Terraform's output
// goes to log.
func NewWorkspace(ctx context.Context, execPath string, moduleFS fs.FS, dir string, vars map[string]any, log io.Writer) (*Workspace, error) {
	if err := copyModule(moduleFS, dir); err != nil {
		return nil, err
	}
	b, err := json.MarshalIndent(vars, "", "  ")
	if err != nil {
		return nil, err
	}
	if err := durable.WriteFile(filepath.Join(dir, varsFile), append(b, '\n'), 0o600); err != nil {
		return nil, err
	}
	return openWorkspace(ctx, execPath, dir, log)
}

// Initialized reports whether dir holds a group's variables, so that a
// terraform apply may have run there.
func Initialized(dir string) bool {
	_, err := os.Stat(filepath.Join(dir, varsFile))
	return err == nil
}

// OpenWorkspace reopens an existing working directory as it was left
// (module copy, variables, state) and runs terraform init.
func OpenWorkspace(ctx context.Context, execPath, dir string, log io.Writer) (*Workspace, error) {
	if _, err := os.Stat(filepath.Join(dir, varsFile)); err != nil {
		return nil, fmt.Errorf("%s is not an xp Terraform working directory: %w", dir, err)
	}
	return openWorkspace(ctx, execPath, dir, log)
}

func openWorkspace(ctx context.Context, execPath, dir string, log io.Writer) (*Workspace, error) {
	t, err := tfexec.NewTerraform(dir, execPath)
	if err != nil {
		return nil, err
	}
	// terraform-exec kills Terraform 60 s after its interrupt by default;
	// xp never kills it (killing it may lose what its calls in flight
	// create): it waits for as long as Terraform takes to save its state,
	// and only xp's own death (a third signal, SIGKILL) ends it early.
	if err := t.SetWaitDelay(0); err != nil {
		return nil, err
	}
	if log != nil {
		t.SetStdout(log)
		t.SetStderr(log)
	}
	w := &Workspace{Dir: dir, tf: t}
	// A directory initialised before (the module copy unchanged since) is
	// not initialised again: a reopened group is only destroyed or read.
	marker := filepath.Join(dir, initMarker)
	if _, err := os.Stat(marker); err == nil {
		return w, nil
	}
	if err := t.Init(ctx, tfexec.Upgrade(false)); err != nil {
		return nil, fmt.Errorf("terraform init in %s: %w", dir, err)
	}
	if err := os.WriteFile(marker, nil, 0o600); err != nil {
		return nil, err
	}
	return w, nil
}

// initMarker says terraform init succeeded on the module copy beside it;
// copyModule removes it.
const initMarker = ".xp-initialized"

// copyModule writes the module's .tf files into dir, replacing the .tf
// files an earlier copy left there.
func copyModule(moduleFS fs.FS, dir string) error {
	if err := os.MkdirAll(dir, 0o700); err != nil {
		return err
	}
	// The group's directory entry too is on disk before its variables.
	if err := durable.SyncDir(filepath.Dir(dir)); err != nil {
		return err
	}
	old, _ := filepath.Glob(filepath.Join(dir, "*.tf"))
	old = append(old, filepath.Join(dir, initMarker))
	for _, f := range old {
		if err := os.Remove(f); err != nil && !errors.Is(err, os.ErrNotExist) {
			return err
		}
	}
	entries, err := fs.ReadDir(moduleFS, ".")
	if err != nil {
		return fmt.Errorf("module: %w", err)
	}
	n := 0
	for _, e := range entries {
		if e.IsDir() || !strings.HasSuffix(e.Name(), ".tf") {
			continue
		}
		b, err := fs.ReadFile(moduleFS, e.Name())
		if err != nil {
			return fmt.Errorf("module: %w", err)
		}
		if err := os.WriteFile(filepath.Join(dir, e.Name()), b, 0o600); err != nil {
			return err
		}
		n++
	}
	if n == 0 {
		return errors.New("module has no .tf files")
	}
	return nil
}

// Apply makes the group exist as its variables say and reads its
// inventory.
func (w *Workspace) Apply(ctx context.Context) (*Inventory, error) {
	if err := w.tf.Apply(ctx); err != nil {
		return nil, &ApplyError{Op: "apply", Err: fmt.Errorf("terraform apply: %w", err)}
	}
	// An interrupt after the apply finished does not lose its outputs.
	return w.Output(context.WithoutCancel(ctx))
}

// Output reads the inventory of the applied group.
func (w *Workspace) Output(ctx context.Context) (*Inventory, error) {
	outs, err := w.tf.Output(ctx)
	if err != nil {
		return nil, fmt.Errorf("terraform output: %w", err)
	}
	return parseOutputs(outs)
}

// Destroy takes down everything the group's state holds.
func (w *Workspace) Destroy(ctx context.Context) error {
	if err := w.tf.Destroy(ctx, tfexec.LockTimeout("2m")); err != nil {
		return &ApplyError{Op: "destroy", Err: fmt.Errorf("terraform destroy: %w", err)}
	}
	return nil
}

// Resources lists the addresses of the resources in the group's state
// (none before the first apply and after destroy).
func (w *Workspace) Resources(ctx context.Context) ([]string, error) {
	st, err := w.tf.Show(ctx)
	if err != nil {
		return nil, fmt.Errorf("terraform show: %w", err)
	}
	var out []string
	if st.Values == nil || st.Values.RootModule == nil {
		return nil, nil
	}
	for _, r := range st.Values.RootModule.Resources {
		out = append(out, r.Address)
	}
	for _, c := range st.Values.RootModule.ChildModules {
		for _, r := range c.Resources {
			out = append(out, r.Address)
		}
	}
	return out, nil
}
