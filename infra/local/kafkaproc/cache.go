package kafkaproc

import (
	"context"

	"github.com/xp-bench/xp/infra/release"
)

// Release is an Apache Kafka release unpacked on this machine.
type Release struct {
	// Dir is the release's top directory (with libs/).
	Dir string
	// Archive is the tarball it was unpacked from.
	Archive string
	release.KafkaRelease
}

// Prepare makes the release of distribution (a tarball file on this
// machine or an http(s) URL) ready to run, in xp's cache as release.Cache
// keeps releases (cacheDir/kafka): a URL downloaded once and checked
// against sha512 (lower-case hex) before it is kept; the tarball checked,
// found to hold Kafka, and unpacked once. A release whose digest differs,
// or that holds no Kafka, is an error naming it.
func Prepare(ctx context.Context, cacheDir, distribution, sha512 string) (Release, error) {
	var rel release.KafkaRelease
	c, err := release.Cache(ctx, cacheDir, release.Fetch{Kind: "kafka", Distribution: distribution, SHA512: sha512, SHA512Key: "kafka.sha512",
		Inspect: func(archive string) (string, string, error) {
			var err error
			rel, err = release.InspectKafka(archive)
			return rel.Top, "libs", err
		}})
	if err != nil {
		return Release{}, err
	}
	return Release{Dir: c.Dir, Archive: c.Archive, KafkaRelease: rel}, nil
}
