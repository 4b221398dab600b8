package runner

import (
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"regexp"
	"slices"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"

	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/planner"
)

// targetFile is the part of a TARGET.yaml every platform shares.
type targetFile struct {
	Platform string `yaml:"platform"`
}

// openedTarget is --target resolved: the target, the platform it is, and
// what the campaign records of it.
type openedTarget struct {
	target.Target
	// platform is the platform the target serves (local, aws, ...).
	platform string
	// recorded is kept with the campaign: "local", or the TARGET.yaml's
	// text.
	recorded string
}

// openTarget resolves --target: "local" or a TARGET.yaml path, opened by
// the platform's opener. Errors are bad input.
func openTarget(arg string, platforms target.Platforms, workDir, db, campaign string, keep bool) (openedTarget, error) {
	if arg == "" || arg == "local" {
		open, ok := platforms["local"]
		if !ok {
			return openedTarget{}, fmt.Errorf("--target local: this xp has no local target (it supports %s)", supportedList(platforms))
		}
		t, err := open(target.Config{Platform: "local", WorkDir: workDir, DB: db, Keep: keep})
		if err != nil {
			return openedTarget{}, fmt.Errorf("--target local: %w", err)
		}
		return openedTarget{Target: t, platform: "local", recorded: "local"}, nil
	}
	b, err := os.ReadFile(arg)
	if errors.Is(err, os.ErrNotExist) {
		return openedTarget{}, fmt.Errorf("--target %s: no such file (use --target local, or the path of a TARGET.yaml)", arg)
	}
	if err != nil {
		return openedTarget{}, fmt.Errorf("--target %s: %w", arg, err)
	}
	platform, err := targetPlatform(arg, b, platforms)
	if err != nil {
		return openedTarget{}, err
	}
	t, err := platforms[platform](target.Config{Platform: platform, Path: arg, Text: b, WorkDir: workDir, DB: db, Campaign: campaign, Keep: keep})
	if err != nil {
		return openedTarget{}, err
	}
	return openedTarget{Target: t, platform: platform, recorded: string(b)}, nil
}

// targetPlatform reads `platform:` of a TARGET.yaml, the part every
// platform's file shares, and checks that this xp can provision it. Its
// errors name the file and, where there is one, the line.
func targetPlatform(path string, b []byte, platforms target.Platforms) (string, error) {
	var doc yaml.Node
	if err := yaml.Unmarshal(b, &doc); err != nil {
		line, reason := yamlReason(err)
		return "", fmt.Errorf("%s:%d: not valid YAML: %s", path, line, reason)
	}
	if len(doc.Content) == 0 || doc.Content[0].Kind != yaml.MappingNode {
		line := 1
		if len(doc.Content) > 0 {
			line = doc.Content[0].Line
		}
		return "", fmt.Errorf("%s:%d: want a mapping of settings that starts with `platform:` (one of %s)",
			path, line, strings.Join(planner.Platforms, ", "))
	}
	m := doc.Content[0]
	var value *yaml.Node
	for i := 0; i+1 < len(m.Content); i += 2 {
		if m.Content[i].Value == "platform" {
			value = m.Content[i+1]
		}
	}
	switch {
	case value == nil:
		return "", fmt.Errorf("%s: no platform: set `platform:` to one of %s", path, strings.Join(planner.Platforms, ", "))
	case value.Kind != yaml.ScalarNode || !slices.Contains(planner.Platforms, value.Value):
		return "", fmt.Errorf("%s:%d: platform: unknown platform %q: want one of %s",
			path, value.Line, value.Value, strings.Join(planner.Platforms, ", "))
	case platforms[value.Value] == nil:
		return "", fmt.Errorf("%s:%d: platform %q has no target in this xp (it has %s); use --target local",
			path, value.Line, value.Value, supportedList(platforms))
	}
	return value.Value, nil
}

// supportedList names the platforms this xp can provision.
func supportedList(platforms target.Platforms) string {
	var names []string
	for _, p := range planner.Platforms {
		if platforms[p] != nil {
			names = append(names, p)
		}
	}
	if len(names) == 0 {
		return "none"
	}
	return strings.Join(names, ", ")
}

var yamlLineRE = regexp.MustCompile(`^yaml: line (\d+): `)

// yamlReason splits a YAML error into its line (1 when it names none) and
// its reason.
func yamlReason(err error) (int, string) {
	s := err.Error()
	if m := yamlLineRE.FindStringSubmatch(s); m != nil {
		n, _ := strconv.Atoi(m[1])
		return n, s[len(m[0]):]
	}
	return 1, strings.TrimPrefix(s, "yaml: ")
}

// endpointsJSON is the endpoints as recorded in the infra table.
func endpointsJSON(e target.Endpoints) json.RawMessage {
	b, _ := json.Marshal(e)
	return b
}
