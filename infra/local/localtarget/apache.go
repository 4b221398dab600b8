package localtarget

import (
	"context"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"sort"
	"strings"
	"time"

	"github.com/xp-bench/xp/infra/kafkaconf"
	"github.com/xp-bench/xp/infra/local/kafkaproc"
	"github.com/xp-bench/xp/infra/target"
	"github.com/xp-bench/xp/infra/targetfile"
	"github.com/xp-bench/xp/infra/tf"
	"github.com/xp-bench/xp/planner"
)

// apache is what the local target needs to run Apache Kafka instead of
// the embedded cluster: TARGET.yaml's releases, unpacked and checked, the
// Java that runs them and the brokers' JVM settings, all checked when the
// target opens, before any group starts.
type apache struct {
	// file is the TARGET.yaml's path, for messages.
	file  string
	kafka targetfile.Kafka
	// releases by version (a row's kafka_version).
	releases map[string]kafkaproc.Release
	java     kafkaproc.Java
	heap     string
	heapMiB  int64
	jvmFlags []string
	// memMiB is this machine's memory, for the heap check of each row.
	memMiB int64
	// keep starts brokers that outlive xp (--keep).
	keep bool
	// swept is set once leftover brokers under the work directory are
	// stopped (at the first Up, when the campaign db's lock is held).
	swept bool
}

// openTimeout bounds what opening a local target of a TARGET.yaml does:
// find and try Java, download (once) and unpack (once) the releases of
// Kafka and Kroxylicious.
const openTimeout = 15 * time.Minute

// Opener is the target.Opener of platform local. Without a TARGET.yaml,
// or with one whose kafka: is absent or `distribution: embedded`, the
// target runs the embedded cluster; with Apache Kafka releases in kafka:,
// it runs them (openApache). A gateway.kroxylicious section lets rows of
// gateway_kind kroxylicious run (openKroxylicious), on either cluster.
// getenv reads JAVA_HOME, PATH, HOME and XDG_CACHE_HOME.
func Opener(getenv func(string) string) target.Opener {
	return func(c target.Config) (target.Target, error) {
		t := New(c.WorkDir)
		if c.Text == nil {
			return t, nil
		}
		file, err := targetfile.Parse(c.Path, c.Text, getenv)
		if err != nil {
			return nil, err
		}
		ctx, cancel := context.WithTimeout(context.Background(), openTimeout)
		defer cancel()
		k := file.Kafka
		if len(k.Releases) == 0 {
			for _, key := range []string{"heap", "jvm_flags", "java"} {
				if k.Lines[key] > 0 {
					return nil, fmt.Errorf("%s: kafka.%s: the embedded cluster runs in xp's own process, not a JVM; name an Apache Kafka release (kafka.distribution with its sha512) or remove kafka.%s",
						k.Where(c.Path, key), key, key)
				}
			}
		} else {
			a, err := openApache(ctx, c.Path, k, getenv)
			if err != nil {
				return nil, err
			}
			a.keep = c.Keep
			t.apache = a
		}
		if kx := file.Gateway.Kroxylicious; kx != nil {
			var java kafkaproc.Java
			if t.apache != nil {
				java = t.apache.java
			} else if java, err = kafkaproc.FindJava(ctx, "", getenv); err != nil {
				return nil, fmt.Errorf("%s: gateway.kroxylicious: %w", kx.Where(c.Path, ""), err)
			}
			if t.kroxy, err = openKroxylicious(ctx, c.Path, *kx, java, getenv); err != nil {
				return nil, err
			}
		}
		return t, nil
	}
}

// Open is Opener reading the process environment.
func Open(c target.Config) (target.Target, error) { return Opener(os.Getenv)(c) }

// openApache checks everything a group of Apache Kafka will need, each
// error naming the file, the line of the key at fault and the fix: the
// heap fits this machine's memory; a Java runtime is found, is new
// enough for every release and accepts the JVM flags; every release is in
// the cache (downloaded once for a URL), matches its sha512 and holds
// Kafka.
func openApache(ctx context.Context, file string, k targetfile.Kafka, getenv func(string) string) (*apache, error) {
	a := &apache{file: file, kafka: k, releases: map[string]kafkaproc.Release{}, heap: k.Heap}
	if k.JVMFlags != "" {
		a.jvmFlags = strings.Fields(k.JVMFlags)
	}
	if a.heap == "" {
		a.heap = kafkaproc.DefaultHeap
	}
	var err error
	if a.heapMiB, err = kafkaproc.ParseHeap(a.heap); err != nil {
		return nil, fmt.Errorf("%s: kafka.heap %w", k.Where(file, "heap"), err)
	}
	if a.memMiB, err = kafkaproc.MemTotalMiB(); err != nil {
		return nil, fmt.Errorf("local target: this machine's memory: %w", err)
	}
	if why := kafkaproc.FitHeap(a.heapMiB, 1, a.memMiB); why != "" {
		return nil, fmt.Errorf("%s: kafka.heap %s does not fit: %s; lower kafka.heap", k.Where(file, "heap"), a.heap, why)
	}
	if a.jvmFlags == nil {
		a.jvmFlags = kafkaproc.DefaultJVMFlags
	}
	if a.java, err = kafkaproc.FindJava(ctx, k.Java, getenv); err != nil {
		return nil, fmt.Errorf("%s: %w", k.Where(file, "java"), err)
	}
	flags := append(kafkaproc.HeapFlags(a.heap), a.jvmFlags...)
	if err := a.java.CheckFlags(ctx, flags); err != nil {
		key := "jvm_flags"
		if k.Lines[key] == 0 {
			key = "heap"
		}
		return nil, fmt.Errorf("%s: kafka.%s: %s refuses the brokers' JVM flags: %w", k.Where(file, key), key, a.java.Path, err)
	}
	cache := tf.CacheDir(getenv)
	for _, r := range k.Releases {
		where := file
		if r.Line > 0 {
			where = fmt.Sprintf("%s:%d", file, r.Line)
		}
		rel, err := kafkaproc.Prepare(ctx, cache, r.Distribution, r.SHA512)
		if err != nil {
			return nil, fmt.Errorf("%s: kafka: %w", where, err)
		}
		if rel.Version != r.Version {
			return nil, fmt.Errorf("%s: kafka: version %s, but %s holds Kafka %s: correct version", where, r.Version, r.Distribution, rel.Version)
		}
		if err := a.java.Suits(rel.KafkaRelease); err != nil {
			return nil, fmt.Errorf("%s: kafka: %w", where, err)
		}
		a.releases[r.Version] = rel
	}
	return a, nil
}

// checkRow refuses a row this target's Apache Kafka cannot serve: a
// kafka_version without a release, or more brokers than this machine's
// memory holds at kafka.heap.
func (a *apache) checkRow(r *planner.Row) error {
	if why := a.kafka.CheckVersion(a.file, r.KafkaVersion); why != "" {
		return errors.New(why)
	}
	if r.Brokers < 1 || r.Brokers > 9 {
		return fmt.Errorf("brokers %d: the local target runs 1 to 9", r.Brokers)
	}
	if why := kafkaproc.FitHeap(a.heapMiB, r.Brokers, a.memMiB); why != "" {
		return fmt.Errorf("%s: kafka.heap %s for brokers %d does not fit: %s; lower kafka.heap or the rows' brokers",
			a.kafka.Where(a.file, "heap"), a.heap, r.Brokers, why)
	}
	return nil
}

// broker is the provenance of a group of release rel.
func (a *apache) broker(rel kafkaproc.Release, c *kafkaproc.Cluster, acls int) target.Broker {
	b := target.Broker{Kind: target.BrokerApache, Version: rel.Version, Java: a.java.String(), JVMFlags: c.JVMFlags(),
		InterBrokerSecurity: c.InterBroker()}
	if c.Authorizer() {
		b.Authorizer, b.ACLs = kafkaconf.StandardAuthorizer, acls
	}
	return b
}

// start runs the group's brokers of its kafka_version in dir (their
// files, PKI and client configs), first
// stopping (once per target) brokers an earlier run left under the work
// directory workDir.
func (a *apache) start(ctx context.Context, g target.Group, workDir, dir string, id *identity) (*kafkaproc.Cluster, error) {
	if !a.swept && workDir != "" {
		if _, err := kafkaproc.Sweep(workDir); err != nil {
			return nil, fmt.Errorf("local target: stopping brokers an earlier run left: %w", err)
		}
		a.swept = true
	}
	rel, ok := a.releases[g.Key.KafkaVersion]
	if !ok {
		var have []string
		for v := range a.releases {
			have = append(have, v)
		}
		sort.Strings(have)
		return nil, fmt.Errorf("local target: no Kafka release of version %s in %s (it has %v)", g.Key.KafkaVersion, a.file, have)
	}
	o := kafkaproc.Options{Release: rel, Java: a.java, Brokers: g.Key.Brokers,
		Dir: filepath.Clean(dir), Heap: a.heap, JVMFlags: a.jvmFlags, Keep: a.keep,
		TLS:    kafkaconf.TLSChoice{Version: g.Key.Security.TLSVersion, Cipher: g.Key.Security.TLSCipher},
		TLSKey: g.Key.Security.TLSKey, InterBroker: g.Key.Security.InterBroker,
		Authorizer: g.Key.Security.Authorizer == planner.AuthorizerACL}
	id.options(&o)
	c, err := kafkaproc.Start(ctx, o)
	if err != nil {
		return nil, fmt.Errorf("local target: %w", err)
	}
	if err := id.addToClientConfig(c.Modes()[planner.SecuritySASLSSL].ClientConfig); err != nil {
		c.Close()
		return nil, fmt.Errorf("local target: %w", err)
	}
	if c.Authorizer() {
		// Before the group's rows: the ACLs the row asks for, for other
		// principals, beside the run's own.
		if err := c.CreateACLs(ctx, g.Key.Security.ACLs); err != nil {
			c.Close()
			return nil, fmt.Errorf("local target: %w", err)
		}
	}
	return c, nil
}
