package kafkaconf

import (
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
)

// The install script run for real with sh, in a sandbox whose PATH holds
// the tools it needs and stand-ins for cloud-init and apt-get that record
// their calls: on a fresh machine without java it waits for cloud-init
// (where there is one) before apt-get, and apt-get waits for dpkg's lock.
func TestInstallScriptWaitsForCloudInitAndDpkgLock(t *testing.T) {
	for _, withCloudInit := range []bool{true, false} {
		t.Run(fmt.Sprintf("cloud-init %v", withCloudInit), func(t *testing.T) {
			dir := t.TempDir()
			bin, calls := filepath.Join(dir, "bin"), filepath.Join(dir, "calls")
			node := filepath.Join(dir, "node")
			for _, d := range []string{bin, node + "/kafka-3.9.1/libs", node + "/data"} {
				if err := os.MkdirAll(d, 0o755); err != nil {
					t.Fatal(err)
				}
			}
			for _, tool := range []string{"sh", "mkdir", "id", "head", "env", "touch", "cat", "chmod", "sed"} {
				p, err := exec.LookPath(tool)
				if err != nil {
					t.Fatalf("%s: %v", tool, err)
				}
				if err := os.Symlink(p, filepath.Join(bin, tool)); err != nil {
					t.Fatal(err)
				}
			}
			script := func(path, text string) {
				if err := os.WriteFile(path, []byte("#!/bin/sh\n"+text), 0o755); err != nil {
					t.Fatal(err)
				}
			}
			if withCloudInit {
				script(filepath.Join(bin, "cloud-init"), fmt.Sprintf(`echo "cloud-init $*" >> %[1]s; touch %[2]s/cloud-init-done`, calls, dir))
			}
			// apt-get notes whether cloud-init was done; install brings a
			// java that formats storage by touching meta.properties.
			java := fmt.Sprintf(`case "$1" in -version) echo 'openjdk version "17.0.9" 2023-10-17';; *) touch %s/data/meta.properties;; esac`, node)
			script(filepath.Join(dir, "java"), java+"\n")
			script(filepath.Join(bin, "apt-get"), fmt.Sprintf(`done=no; [ -f %[2]s/cloud-init-done ] && done=yes
echo "apt-get $* (cloud-init done: $done)" >> %[1]s
case "$*" in *install*) cat %[2]s/java > %[3]s/java; chmod +x %[3]s/java;; esac`, calls, dir, bin))
			// A release already unpacked: the script goes straight to java.
			in := testInstall()
			in.Dir, in.LogDirs = node, node+"/data"
			b, err := in.Script()
			if err != nil {
				t.Fatal(err)
			}
			cmd := exec.Command(filepath.Join(bin, "sh"), "-c", string(b))
			cmd.Env = []string{"PATH=" + bin}
			if out, err := cmd.CombinedOutput(); err != nil {
				t.Fatalf("%v\n%s", err, out)
			}
			got, _ := os.ReadFile(calls)
			want := []string{
				fmt.Sprintf("apt-get update -qq -o DPkg::Lock::Timeout=600 (cloud-init done: %s)", map[bool]string{true: "yes", false: "no"}[withCloudInit]),
				fmt.Sprintf("apt-get install -y -qq -o DPkg::Lock::Timeout=600 openjdk-17-jre-headless (cloud-init done: %s)", map[bool]string{true: "yes", false: "no"}[withCloudInit]),
			}
			if withCloudInit {
				want = append([]string{"cloud-init status --wait"}, want...)
			}
			if strings.TrimSpace(string(got)) != strings.Join(want, "\n") {
				t.Fatalf("calls:\n%s\nwant:\n%s", got, strings.Join(want, "\n"))
			}
		})
	}
}
