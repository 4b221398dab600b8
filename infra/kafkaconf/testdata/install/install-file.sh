#!/bin/sh
# written by xp: install Apache Kafka 4.4.0 and format this node's storage;
# xp's agent starts the server (java -cp "$kafka/libs/*" kafka.Kafka) afterwards
set -eu
dir=/home/ubuntu/xp/c1/kafka-1
kafka="$dir/kafka-4.4.0"
mkdir -p "$dir/logs"

# The release, checked against its SHA-512 before it is unpacked; a
# release is its libs/ (Kafka's main classes run from there), whatever its
# bin/ scripts are.
if [ ! -d "$kafka" ]; then
	tgz=/home/ubuntu/xp/c1/kafka-1/kafka_2.13-4.4.0.tgz
	echo "77b1ffb1b5f884f9498ca1cdcd8756b0fc68525e4b68d5cbb7418334f68149f6ce6fc6a47e3a09f36fdb14109f6f1b0558a8b6e44f0dabb4dbe1f1ab07c43d53  $tgz" | sha512sum -c --quiet - || {
		echo "kafka: $tgz (kafka.distribution, uploaded) does not match the sha512 of the target file" >&2
		rm -f "$tgz"
		exit 1
	}
	rm -rf "$kafka.part"
	mkdir -p "$kafka.part"
	tar -xzf "$tgz" -C "$kafka.part" --strip-components=1
	rm -f "$tgz"
	set -- "$kafka.part"/libs/kafka_2.13-*.jar
	if [ ! -f "$1" ]; then
		echo "kafka: the release file holds no libs/kafka_2.13-*.jar: not a Kafka release" >&2
		rm -rf "$kafka.part"
		exit 1
	fi
	mv "$kafka.part" "$kafka"
fi

# Java from the distribution's packages.
sudo=
if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
if ! command -v java >/dev/null 2>&1; then
	# On a fresh machine cloud-init, and the unattended upgrades it
	# starts, hold dpkg's lock: wait for cloud-init, then let apt wait
	# for the lock rather than fail.
	if command -v cloud-init >/dev/null 2>&1; then cloud-init status --wait >/dev/null 2>&1 || true; fi
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq -o DPkg::Lock::Timeout=600
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 openjdk-17-jre-headless >/dev/null
fi
java -version 2>&1 | head -n 1
# Kafka 4.4.0 runs on Java 17 or later.
java_version=$(java -version 2>&1 | sed -n 's/.* version "\([^"]*\)".*/\1/p' | head -n 1)
java_major=$(echo "$java_version" | sed 's/^1\.//; s/[^0-9].*//')
if [ -z "$java_major" ] || [ "$java_major" -lt 17 ]; then
	echo "kafka: Kafka 4.4.0 needs Java 17 or later, but $(command -v java) is Java ${java_version:-of an unknown version}: install one (openjdk-17-jre-headless or newer) and make it the java on PATH (update-alternatives --config java)" >&2
	exit 1
fi

# The log configuration, in the release's dialect: everything to
# $dir/logs/server.log.
cat >"/home/ubuntu/xp/c1/kafka-1/log4j2.properties" <<'EOF'
status = warn
appender.file.type = File
appender.file.name = file
appender.file.fileName = ${sys:kafka.logs.dir}/server.log
appender.file.layout.type = PatternLayout
appender.file.layout.pattern = [%d] %p %m (%c)%n
rootLogger.level = INFO
rootLogger.appenderRef.file.ref = file
logger.request.name = kafka.request.logger
logger.request.level = WARN
logger.state.name = state.change.logger
logger.state.level = WARN
EOF

# Storage, formatted once (a static quorum: controller.quorum.voters), by a
# JVM made to start fast: it runs for a second.
if [ ! -f "/home/ubuntu/xp/c1/kafka-1/data/meta.properties" ]; then
	java -Xmx256m -XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dlog4j2.configurationFile=/home/ubuntu/xp/c1/kafka-1/log4j2.properties -Dkafka.logs.dir="$dir/logs" -cp "$kafka/libs/*" kafka.tools.StorageTool format --ignore-formatted -t MkU3OEVBNTcwNTJENDM2Qk -c "$dir/server.properties"
fi

echo "kafka: 4.4.0 installed and formatted in $dir"
