// Command kafkakeys lists the broker configuration keys an Apache Kafka
// source tree defines, for infra/kafkaconf's TestServerKeysExistInKafka.
//
//	go run ./infra/kafkaconf/testdata/kafkakeys GIT_DIR REF >infra/kafkaconf/testdata/kafka-keys-NAME.txt
//
// GIT_DIR is a (bare) clone of github.com/apache/kafka and REF a tag or
// branch. It reads every non-test .java and .scala file of the modules
// that make up the broker's configuration, resolves their String
// constants (literals joined with + and other constants), and prints,
// sorted, every config key given as the first argument of a ConfigDef
// define(...) call, as a string literal or a constant. It reads the
// source as text: a key built another way would be missed, so the test
// fails (rather than passes) when that happens.
package main

import (
	"fmt"
	"os"
	"os/exec"
	"path"
	"regexp"
	"sort"
	"strings"
)

// modules holding the broker's ConfigDef and the constants it uses.
var modules = regexp.MustCompile(`^(core|server|server-common|raft|metadata|storage|group-coordinator|transaction-coordinator|share-coordinator|coordinator-common)/src/main/|^clients/src/main/java/org/apache/kafka/common/(config|security)/`)

var (
	constRE  = regexp.MustCompile(`(?s)(?:static\s+final\s+String|val)\s+([A-Za-z0-9_]+)\s*(?::\s*String\s*)?=\s*([^;\n]+(?:\n\s*\+[^;\n]+)*)`)
	defineRE = regexp.MustCompile(`\.define\(\s*(?:"([^"]*)"|([A-Za-z0-9_.]+))\s*,`)
	tokenRE  = regexp.MustCompile(`"((?:[^"\\]|\\.)*)"|([A-Za-z_][A-Za-z0-9_.]*)|(\+)|(\s+)`)
	keyRE    = regexp.MustCompile(`^[a-z][a-z0-9-]*(\.[a-z0-9-]+)*$`)
)

func main() {
	if len(os.Args) != 3 {
		fmt.Fprintln(os.Stderr, "usage: kafkakeys GIT_DIR REF")
		os.Exit(2)
	}
	dir, ref := os.Args[1], os.Args[2]
	out, err := exec.Command("git", "-C", dir, "ls-tree", "-r", "--name-only", ref).Output()
	if err != nil {
		fmt.Fprintln(os.Stderr, "kafkakeys: git ls-tree:", err)
		os.Exit(1)
	}
	exprs := map[string]string{}    // Class.NAME -> expression
	byName := map[string][]string{} // NAME -> Class.NAME
	var defines []struct{ class, ident string }
	keys := map[string]bool{}
	for _, f := range strings.Split(strings.TrimSpace(string(out)), "\n") {
		if !modules.MatchString(f) || !(strings.HasSuffix(f, ".java") || strings.HasSuffix(f, ".scala")) {
			continue
		}
		src, err := exec.Command("git", "-C", dir, "show", ref+":"+f).Output()
		if err != nil {
			fmt.Fprintln(os.Stderr, "kafkakeys:", f, err)
			os.Exit(1)
		}
		class := strings.TrimSuffix(strings.TrimSuffix(path.Base(f), ".java"), ".scala")
		for _, m := range constRE.FindAllStringSubmatch(string(src), -1) {
			q := class + "." + m[1]
			if _, ok := exprs[q]; !ok {
				exprs[q] = m[2]
				byName[m[1]] = append(byName[m[1]], q)
			}
		}
		for _, m := range defineRE.FindAllStringSubmatch(string(src), -1) {
			if m[2] == "" {
				keys[m[1]] = true
				continue
			}
			defines = append(defines, struct{ class, ident string }{class, m[2]})
		}
	}
	var resolve func(class, ident string, depth int) (string, bool)
	resolve = func(class, ident string, depth int) (string, bool) {
		if depth > 10 {
			return "", false
		}
		q := ident
		if i := strings.LastIndex(ident, "."); i >= 0 {
			q = ident[strings.LastIndex(ident[:i], ".")+1:]
		} else if _, ok := exprs[class+"."+ident]; ok {
			q = class + "." + ident
		} else if len(byName[ident]) == 1 {
			q = byName[ident][0]
		}
		e, ok := exprs[q]
		if !ok {
			return "", false
		}
		owner := q[:strings.Index(q, ".")]
		var b strings.Builder
		for _, t := range tokenRE.FindAllStringSubmatch(strings.TrimSpace(e), -1) {
			switch {
			case t[1] != "" || t[0] == `""`:
				b.WriteString(t[1])
			case t[2] != "":
				v, ok := resolve(owner, t[2], depth+1)
				if !ok {
					return "", false
				}
				b.WriteString(v)
			}
		}
		return b.String(), true
	}
	for _, d := range defines {
		if v, ok := resolve(d.class, d.ident, 0); ok && keyRE.MatchString(v) {
			keys[v] = true
		}
	}
	var list []string
	for k := range keys {
		list = append(list, k)
	}
	sort.Strings(list)
	fmt.Println(strings.Join(list, "\n"))
}
