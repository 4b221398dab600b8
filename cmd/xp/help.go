package main

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"strings"

	"github.com/spf13/cobra"
)

// workflow is what `xp` alone prints: the four steps and where to start.
const workflow = `xp measures what Kafka security costs with matched, randomized experiments.

The workflow:
  1. write a factor spec (YAML)      plans/quickstart.yaml is one; docs/spec.md
  2. xp plan expand SPEC.yaml -o PLAN.jsonl
  3. xp run PLAN.jsonl               embedded cluster; --target TARGET.yaml elsewhere
  4. xp analyse --db PLAN.db         effects.csv, tables.tex, figures, report.html
  then xp compare A.db B.db          does it replicate? two runs of one plan side by side

  make demo                          all four on plans/quickstart.yaml, a few minutes
  xp import FILE... --db NEW.db      OpenMessaging Benchmark results or a CSV, then step 4

Every command: xp help, or xp COMMAND --help.
`

// minimalSpec is the smallest factor spec worth running, for `xp plan expand --help`.
const minimalSpec = `campaign: my-first              # lower-case letters, digits, '-'
replicates: 3                   # every configuration runs 3 times
factors:                        # crossed; security is the compared factor
  security: [plaintext, tls]    # the first level is the baseline
  message_size: [1024]
fixed:                          # one value each
  brokers: 1
  acks: all
  target_rate: 1000             # msg/s, or max`

// looksLikeSpec says whether path names a factor spec (YAML) rather than
// a campaign (JSONL): by its extension, else by its content. A file that
// cannot be read is neither (the command's own error says why).
func looksLikeSpec(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".yaml", ".yml":
		return true
	case ".jsonl", ".json":
		return false
	}
	b, ok := firstBytes(path)
	return ok && b[0] != '{' && bytes.Contains(b, []byte("campaign:"))
}

// looksLikeJSONL says whether path names a campaign (JSONL) rather than
// a factor spec: by its extension, else by its first non-blank byte.
func looksLikeJSONL(path string) bool {
	switch strings.ToLower(filepath.Ext(path)) {
	case ".jsonl", ".json":
		return true
	case ".yaml", ".yml":
		return false
	}
	b, ok := firstBytes(path)
	return ok && b[0] == '{'
}

// firstBytes is up to 4 KiB of path from its first non-blank byte.
func firstBytes(path string) ([]byte, bool) {
	f, err := os.Open(path)
	if err != nil {
		return nil, false
	}
	defer f.Close()
	b := make([]byte, 4096)
	n, _ := f.Read(b)
	b = bytes.TrimSpace(b[:n])
	return b, len(b) > 0
}

// withoutExt is path without its extension.
func withoutExt(path string) string { return strings.TrimSuffix(path, filepath.Ext(path)) }

// dbFlagArgs is the Args of a command that reads its db from --db: one
// positional argument gets the command that would work.
func dbFlagArgs(name string) cobra.PositionalArgs {
	return func(cmd *cobra.Command, args []string) error {
		switch {
		case len(args) == 0:
			return nil
		case len(args) == 1:
			return fmt.Errorf("the db is given as --db, not as an argument: xp %s --db %s", name, args[0])
		}
		return fmt.Errorf("no arguments expected (got %s); the db is given as --db FILE", strings.Join(args, " "))
	}
}
