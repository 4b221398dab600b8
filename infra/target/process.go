package target

import (
	"os"

	"github.com/xp-bench/xp/infra/procstat"
	"github.com/xp-bench/xp/planner"
)

// ProcessSample is this process as host HostClient: its CPU time so far
// and its resident memory. It samples the load generator when the load
// runs in xp itself.
func ProcessSample() HostSample {
	return HostSample{Host: HostClient, Role: planner.RoleClient, CPU: procstat.SelfCPU(), MemMiB: procstat.RSS(os.Getpid())}
}
