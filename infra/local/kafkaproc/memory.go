package kafkaproc

import (
	"bufio"
	"fmt"
	"os"
	"regexp"
	"strconv"
	"strings"
)

// DefaultHeap is each broker's heap (-Xmx and -Xms) when TARGET.yaml sets
// none: Kafka's own default (kafka-server-start.sh's KAFKA_HEAP_OPTS).
const DefaultHeap = "1g"

// DefaultJVMFlags are the brokers' JVM flags besides the heap when
// TARGET.yaml sets none: Kafka's own KAFKA_JVM_PERFORMANCE_OPTS.
var DefaultJVMFlags = []string{"-server", "-XX:+UseG1GC", "-XX:MaxGCPauseMillis=20",
	"-XX:InitiatingHeapOccupancyPercent=35", "-XX:+ExplicitGCInvokesConcurrent",
	"-XX:MaxInlineLevel=15", "-Djava.awt.headless=true"}

// nonHeapMiB is what a broker's JVM needs beside its heap (metaspace, code
// cache, thread stacks, direct buffers), for the memory check: what an
// idle Kafka broker measures, rounded up.
const nonHeapMiB = 256

var heapRE = regexp.MustCompile(`^([0-9]+)([kKmMgGtT]?)$`)

// ParseHeap reads a Java heap size (-Xmx syntax: 512m, 1g, 1536M) and
// returns it in MiB. Sizes under 128 MiB are refused: a broker does not
// start in less.
func ParseHeap(s string) (int64, error) {
	m := heapRE.FindStringSubmatch(s)
	if m == nil {
		return 0, fmt.Errorf("%q: want a size such as 512m or 2g (the JVM's -Xmx syntax)", s)
	}
	n, err := strconv.ParseInt(m[1], 10, 64)
	if err != nil {
		return 0, fmt.Errorf("%q: %v", s, err)
	}
	var mib int64
	switch strings.ToLower(m[2]) {
	case "":
		mib = n >> 20
	case "k":
		mib = n >> 10
	case "m":
		mib = n
	case "g":
		mib = n << 10
	case "t":
		mib = n << 20
	}
	if mib < 128 || mib > 1<<30 {
		return 0, fmt.Errorf("%q: want 128m or more", s)
	}
	return mib, nil
}

// MemTotalMiB is this machine's memory (/proc/meminfo MemTotal) in MiB.
func MemTotalMiB() (int64, error) {
	f, err := os.Open("/proc/meminfo")
	if err != nil {
		return 0, err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		if rest, ok := strings.CutPrefix(sc.Text(), "MemTotal:"); ok {
			kb, err := strconv.ParseInt(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			if err != nil {
				return 0, fmt.Errorf("/proc/meminfo: MemTotal %q", rest)
			}
			return kb >> 10, nil
		}
	}
	return 0, fmt.Errorf("/proc/meminfo has no MemTotal")
}

// FitHeap says why brokers brokers of heapMiB each (and their JVMs'
// non-heap memory) do not fit memMiB of memory; "" when they do.
func FitHeap(heapMiB int64, brokers int, memMiB int64) string {
	need := int64(brokers) * (heapMiB + nonHeapMiB)
	if need <= memMiB {
		return ""
	}
	return fmt.Sprintf("%d broker(s) × (%d MiB heap + %d MiB beside it) = %d MiB, more than this machine's %d MiB",
		brokers, heapMiB, nonHeapMiB, need, memMiB)
}
