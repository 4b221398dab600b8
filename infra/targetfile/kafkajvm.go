package targetfile

import (
	"regexp"
	"strconv"
	"strings"

	"go.yaml.in/yaml/v3"
)

// KafkaJVM: kafka.heap is the JVM heap of every Apache Kafka broker and
// controller, a size as java's -Xmx takes it (384m, 4g), given as both
// -Xmx and -Xms; absent, each platform picks one (remote hosts: a quarter
// of the host's memory, 512 MiB to 6 GiB). kafka.jvm_flags are their other
// JVM flags, in place of the ones Kafka's kafka-run-class.sh gives
// (KAFKA_JVM_PERFORMANCE_OPTS: G1 with a 20 ms pause goal).

var (
	heapSizeRE = regexp.MustCompile(`^([1-9][0-9]*)([mMgG])$`)
	jvmFlagRE  = regexp.MustCompile(`^-[A-Za-z0-9:=.,+/_-]+$`)
)

// minHeapMiB is the smallest heap kafka.heap may give: a broker with less
// does not get through its start.
const minHeapMiB = 256

// HeapMiB is Heap in MiB; 0 when it is not set.
func (k Kafka) HeapMiB() int64 {
	m := heapSizeRE.FindStringSubmatch(k.Heap)
	if m == nil {
		return 0
	}
	n, _ := strconv.ParseInt(m[1], 10, 64)
	if strings.EqualFold(m[2], "g") {
		n *= 1024
	}
	return n
}

func (p *fileParser) kafkaHeap(n *yaml.Node) string {
	h := p.str(n, "kafka.heap")
	if h == "" {
		return ""
	}
	if !heapSizeRE.MatchString(h) {
		p.bad(n, "kafka.heap: %q: want a size in MiB or GiB as java -Xmx takes it, e.g. 384m or 4g", h)
		return ""
	}
	if k := (Kafka{Heap: h}); k.HeapMiB() < minHeapMiB {
		p.bad(n, "kafka.heap: %s is less than the %dm a broker needs to start", h, minHeapMiB)
		return ""
	}
	return h
}

func (p *fileParser) jvmFlags(n *yaml.Node) string {
	s := p.str(n, "kafka.jvm_flags")
	for _, f := range strings.Fields(s) {
		switch {
		case !jvmFlagRE.MatchString(f):
			p.bad(n, "kafka.jvm_flags: %q: want JVM flags (each starting with -, of letters, digits and -:=.,+/_)", f)
		case strings.HasPrefix(f, "-Xmx") || strings.HasPrefix(f, "-Xms"):
			p.bad(n, "kafka.jvm_flags: %s: give the heap as kafka.heap", f)
		case f == "-cp" || f == "-classpath" || strings.HasPrefix(f, "--class-path"):
			p.bad(n, "kafka.jvm_flags: %s: xp sets the class path (the release's libs/)", f)
		default:
			continue
		}
		return ""
	}
	return strings.Join(strings.Fields(s), " ")
}
