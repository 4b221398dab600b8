package main

import (
	"bufio"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"sort"
	"strings"
	"testing"
	"unicode"
)

// The documentation is checked against the code: README.md is the front
// door and docs/ the reference, so a link that leads nowhere, a
// command the README lists that xp does not have (or one xp has that the
// README omits), or a spec example that does not expand fails here.

// repoRoot is the repository's top directory, seen from this package.
const repoRoot = "../.."

// docFiles lists the Markdown files whose links are checked.
func docFiles(t *testing.T) []string {
	t.Helper()
	files := []string{"README.md", "BENCHMARKS.md", "terraform/README.md"}
	more, err := filepath.Glob(filepath.Join(repoRoot, "docs", "*.md"))
	if err != nil {
		t.Fatal(err)
	}
	if len(more) == 0 {
		t.Fatal("no docs/*.md found")
	}
	for _, m := range more {
		rel, _ := filepath.Rel(repoRoot, m)
		files = append(files, rel)
	}
	return files
}

// mdLink matches [text](target) and ![alt](target), with an optional title.
var mdLink = regexp.MustCompile(`!?\[[^\]]*\]\(([^)\s]+)(?:\s+"[^"]*")?\)`)

// inlineCode matches a code span, whose brackets are not links.
var inlineCode = regexp.MustCompile("`[^`]*`")

// mdLines returns a Markdown file's lines outside fenced code blocks, with
// their 1-based line numbers.
func mdLines(text string) (lines []string, numbers []int) {
	fenced := false
	for i, l := range strings.Split(text, "\n") {
		if strings.HasPrefix(strings.TrimSpace(l), "```") {
			fenced = !fenced
			continue
		}
		if !fenced {
			lines = append(lines, l)
			numbers = append(numbers, i+1)
		}
	}
	return lines, numbers
}

// headingAnchors returns the anchors GitHub derives from a Markdown file's
// headings: lower case, punctuation dropped, spaces as hyphens, repeats
// suffixed -1, -2, ...
func headingAnchors(text string) map[string]bool {
	anchors := map[string]bool{}
	seen := map[string]int{}
	lines, _ := mdLines(text)
	for _, l := range lines {
		if !strings.HasPrefix(l, "#") {
			continue
		}
		h := strings.TrimSpace(strings.TrimLeft(l, "#"))
		var b strings.Builder
		for _, r := range strings.ToLower(h) {
			switch {
			case unicode.IsLetter(r) || unicode.IsDigit(r) || r == '-' || r == '_':
				b.WriteRune(r)
			case r == ' ':
				b.WriteByte('-')
			}
		}
		a := b.String()
		if n := seen[a]; n > 0 {
			anchors[fmt.Sprintf("%s-%d", a, n)] = true
		} else {
			anchors[a] = true
		}
		seen[a]++
	}
	return anchors
}

// checkLinks returns one problem per relative link of the Markdown file
// rel (relative to root) whose file does not exist or whose #anchor names
// no heading of that file.
func checkLinks(root, rel string) ([]string, error) {
	text, err := os.ReadFile(filepath.Join(root, rel))
	if err != nil {
		return nil, err
	}
	var problems []string
	lines, numbers := mdLines(string(text))
	for i, l := range lines {
		for _, m := range mdLink.FindAllStringSubmatch(inlineCode.ReplaceAllString(l, ""), -1) {
			target := m[1]
			if strings.Contains(target, "://") || strings.HasPrefix(target, "mailto:") {
				continue
			}
			path, anchor, _ := strings.Cut(target, "#")
			file := rel
			if path != "" {
				file = filepath.Join(filepath.Dir(rel), path)
			}
			where := fmt.Sprintf("%s:%d: link %s", rel, numbers[i], target)
			st, err := os.Stat(filepath.Join(root, file))
			if err != nil {
				problems = append(problems, where+": no such file "+file)
				continue
			}
			if anchor == "" {
				continue
			}
			if st.IsDir() || !strings.HasSuffix(file, ".md") {
				problems = append(problems, where+": an anchor into a file that is not Markdown")
				continue
			}
			dest, err := os.ReadFile(filepath.Join(root, file))
			if err != nil {
				return nil, err
			}
			if !headingAnchors(string(dest))[anchor] {
				problems = append(problems, fmt.Sprintf("%s: no heading #%s in %s", where, anchor, file))
			}
		}
	}
	return problems, nil
}

func TestDocsLinksResolve(t *testing.T) {
	for _, f := range docFiles(t) {
		problems, err := checkLinks(repoRoot, f)
		if err != nil {
			t.Fatal(err)
		}
		for _, p := range problems {
			t.Error(p)
		}
	}
}

// TestCheckLinks shows the link check catches what it is for.
func TestCheckLinks(t *testing.T) {
	dir := t.TempDir()
	write := func(name, text string) {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(dir, name)), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, name), []byte(text), 0o644); err != nil {
			t.Fatal(err)
		}
	}
	write("docs/page.md", "# Page\n\n## The `xp status --json` object\n\n## Twice\n\n## Twice\n")
	write("img/fig.svg", "<svg/>")
	cases := []struct {
		name, text string
		problems   int
	}{
		{"file", "see [page](docs/page.md)", 0},
		{"image", "![fig](img/fig.svg)", 0},
		{"anchor with code and punctuation", "[x](docs/page.md#the-xp-status---json-object)", 0},
		{"repeated heading", "[x](docs/page.md#twice-1)", 0},
		{"own heading", "# Top\n[x](#top)", 0},
		{"web link", "[x](https://example.com/none)", 0},
		{"inside code span", "`[x](nowhere.md)`", 0},
		{"inside fenced block", "```\n[x](nowhere.md)\n```", 0},
		{"missing file", "see [gone](docs/gone.md)", 1},
		{"missing image", "![fig](img/none.svg)", 1},
		{"missing anchor", "[x](docs/page.md#no-such-heading)", 1},
		{"missing own anchor", "# Top\n[x](#bottom)", 1},
		{"two broken on a line", "[a](a.md) and [b](b.md)", 2},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			write("README.md", c.text+"\n")
			problems, err := checkLinks(dir, "README.md")
			if err != nil {
				t.Fatal(err)
			}
			if len(problems) != c.problems {
				t.Fatalf("got %d problems, want %d: %q", len(problems), c.problems, problems)
			}
		})
	}
}

// readmeCommands returns the first-column commands of the README's
// "## Commands" table, e.g. "xp plan expand".
func readmeCommands(t *testing.T) []string {
	t.Helper()
	text, err := os.ReadFile(filepath.Join(repoRoot, "README.md"))
	if err != nil {
		t.Fatal(err)
	}
	_, section, ok := strings.Cut(string(text), "\n## Commands\n")
	if !ok {
		t.Fatal(`README.md has no "## Commands" section`)
	}
	section, _, _ = strings.Cut(section, "\n## ")
	var cmds []string
	sc := bufio.NewScanner(strings.NewReader(section))
	for sc.Scan() {
		cells := strings.Split(sc.Text(), "|")
		if len(cells) < 3 {
			continue
		}
		c := strings.TrimSpace(cells[1])
		if strings.HasPrefix(c, "`xp") && strings.HasSuffix(c, "`") {
			cmds = append(cmds, strings.Trim(c, "`"))
		}
	}
	if len(cmds) == 0 {
		t.Fatal(`README.md's "## Commands" section has no table of commands`)
	}
	return cmds
}

// helpCommands returns the commands `xp --help` lists, and those the
// commands' own --help list below them, as "xp plan expand". cobra's
// completion command is listed, not its per-shell subcommands.
func helpCommands(t *testing.T) []string {
	t.Helper()
	var cmds []string
	var walk func(path []string)
	walk = func(path []string) {
		st, stdout, stderr := testState()
		if code := execute(st, append(append([]string{}, path...), "--help")); code != 0 {
			t.Fatalf("xp %s --help: exit %d: %s", strings.Join(path, " "), code, stderr)
		}
		_, list, ok := strings.Cut(stdout.String(), "\nAvailable Commands:\n")
		if !ok {
			return
		}
		list, _, _ = strings.Cut(list, "\n\n")
		for _, l := range strings.Split(list, "\n") {
			f := strings.Fields(l)
			if len(f) == 0 {
				continue
			}
			sub := append(append([]string{}, path...), f[0])
			cmds = append(cmds, "xp "+strings.Join(sub, " "))
			if f[0] != "completion" && f[0] != "help" {
				walk(sub)
			}
		}
	}
	walk(nil)
	return cmds
}

func TestReadmeCommandTableMatchesHelp(t *testing.T) {
	help := helpCommands(t)
	readme := readmeCommands(t)
	inHelp := map[string]bool{}
	for _, c := range help {
		inHelp[c] = true
	}
	inReadme := map[string]bool{}
	for _, c := range readme {
		inReadme[c] = true
		if !inHelp[c] {
			t.Errorf("README.md's command table lists %q, which xp --help does not (have: %s)", c, strings.Join(help, ", "))
		}
	}
	for _, c := range help {
		// A command with subcommands is listed through them.
		if !inReadme[c] && !hasSub(help, c) {
			t.Errorf("xp --help lists %q, which README.md's command table lacks: add a row to its \"## Commands\" table", c)
		}
	}
}

func hasSub(cmds []string, c string) bool {
	for _, o := range cmds {
		if strings.HasPrefix(o, c+" ") {
			return true
		}
	}
	return false
}

// isSpec tells a factor spec from the other YAML of the docs (gateway
// configs): it has a top-level factors key.
func isSpec(block []string) bool {
	for _, l := range block {
		if strings.HasPrefix(l, "factors:") {
			return true
		}
	}
	return false
}

// specExamples returns the ```yaml blocks of README.md and docs/*.md that
// are factor specs (they name a campaign and its factors), keyed by
// FILE:LINE.
func specExamples(t *testing.T) map[string]string {
	t.Helper()
	out := map[string]string{}
	for _, f := range docFiles(t) {
		text, err := os.ReadFile(filepath.Join(repoRoot, f))
		if err != nil {
			t.Fatal(err)
		}
		var block []string
		start := 0
		in := false
		for i, l := range strings.Split(string(text), "\n") {
			switch trimmed := strings.TrimSpace(l); {
			case !in && trimmed == "```yaml":
				in, start, block = true, i+1, nil
			case in && trimmed == "```":
				in = false
				if isSpec(block) {
					out[fmt.Sprintf("%s:%d", f, start)] = strings.Join(block, "\n")
				}
			case in:
				block = append(block, l)
			}
		}
	}
	return out
}

func TestDocsSpecExamplesExpand(t *testing.T) {
	examples := specExamples(t)
	if len(examples) < 2 {
		t.Fatalf("found %d spec examples in README.md and docs/, want the README's and docs/spec.md's at least", len(examples))
	}
	keys := make([]string, 0, len(examples))
	for k := range examples {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	for _, where := range keys {
		t.Run(where, func(t *testing.T) {
			dir := t.TempDir()
			spec := filepath.Join(dir, "spec.yaml")
			if err := os.WriteFile(spec, []byte(examples[where]), 0o644); err != nil {
				t.Fatal(err)
			}
			plan := filepath.Join(dir, "plan.jsonl")
			st, _, stderr := testState()
			if code := execute(st, []string{"plan", "expand", spec, "-o", plan}); code != 0 {
				t.Fatalf("xp plan expand of the example at %s: exit %d: %s", where, code, stderr)
			}
			st, _, stderr = testState()
			if code := execute(st, []string{"plan", "validate", plan}); code != 0 {
				t.Fatalf("xp plan validate of the example at %s: exit %d: %s", where, code, stderr)
			}
		})
	}
}
