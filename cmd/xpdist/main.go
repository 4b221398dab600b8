// Command xpdist assembles the releases xp's tests and local campaigns run
// from Maven Central, in their official releases' layout, with a .sha512
// beside each (make kafka-dist):
//
//	xpdist kafka [-version V] [-out DIR]          DIR/kafka_2.13-V.tgz (default: the newest 4.x)
//	xpdist kroxylicious [-version V] [-out DIR]   DIR/kroxylicious-app-V-bin.tar.gz (default: the newest)
//	xpdist java-client [-version V] [-out DIR]    DIR/xp-java-client-V.tgz: xp's Java load generator on kafka-clients V (default: the newest 4.x)
//	xpdist rdkafka-client [-out DIR]              DIR/xp-rdkafka-client-V.tgz: xp's librdkafka load generator on librdkafka V,
//	                                              from the PyPI wheel pinned in infra/release (release.RdkafkaWheel)
//
// Maven Central has no kroxylicious-app (the official release's main class
// and archive): the Kroxylicious release is assembled in its layout from
// the runtime, the Record Encryption filter and its KMS providers, with a
// launcher of xp's own compiled by javac.
//
// The librdkafka client's library comes from PyPI (the wheel's SHA-256
// pinned and checked against the index's) and its load generator is
// compiled by gcc against Debian's librdkafka-dev header.
//
// mvn resolves with strict checksums and caches in the Maven local
// repository, so a second run needs no network. The path of the archive is
// printed on stdout; mvn's output goes to stderr with -v.
package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"

	"github.com/xp-bench/xp/infra/release"
)

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	if err := run(ctx, os.Args[1:], os.Stdout, os.Stderr); err != nil {
		fmt.Fprintln(os.Stderr, "xpdist:", err)
		os.Exit(1)
	}
}

const usage = "usage: xpdist kafka|kroxylicious|java-client|rdkafka-client [-version V] [-out DIR] [-v]"

func run(ctx context.Context, args []string, stdout, stderr io.Writer) error {
	if len(args) == 0 {
		return fmt.Errorf("%s", usage)
	}
	fs := flag.NewFlagSet("xpdist "+args[0], flag.ContinueOnError)
	fs.SetOutput(stderr)
	version := fs.String("version", "", "the release's `version` (default: the newest Maven Central has, of the major version xp defaults to)")
	out := fs.String("out", "out/dist", "write the archive into `DIR`")
	verbose := fs.Bool("v", false, "show mvn's output")
	if err := fs.Parse(args[1:]); err != nil {
		return err
	}
	m := release.Maven{}
	if *verbose {
		m.Log = stderr
	}
	var w release.Written
	var err error
	switch args[0] {
	case "kafka":
		w, err = release.AssembleKafka(ctx, m, *version, *out)
	case "kroxylicious":
		w, err = release.AssembleKroxylicious(ctx, m, *version, *out)
	case "java-client":
		w, err = release.AssembleJavaClient(ctx, m, *version, *out)
	case "rdkafka-client":
		w, err = release.AssembleRdkafkaClient(ctx, release.PyPI{}, *version, *out)
	default:
		return fmt.Errorf("unknown release %q; %s", args[0], usage)
	}
	if err != nil {
		return err
	}
	fmt.Fprintln(stdout, w.Path)
	return nil
}
