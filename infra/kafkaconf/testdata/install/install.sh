#!/bin/sh
# written by xp: install Apache Kafka 3.9.1 and format this node's storage;
# xp's agent starts the server (kafka-server-start.sh) afterwards
set -eu
dir=/home/ubuntu/xp/c1/kafka-1
kafka="$dir/kafka-3.9.1"
mkdir -p "$dir/logs"

# The release, checked against its SHA-512 before it is unpacked.
if [ ! -x "$kafka/bin/kafka-server-start.sh" ]; then
	curl -fsSL --retry 3 -o "$dir/kafka.tgz.part" 'https://downloads.example.org/kafka/3.9.1/kafka_2.13-3.9.1.tgz'
	echo "77b1ffb1b5f884f9498ca1cdcd8756b0fc68525e4b68d5cbb7418334f68149f6ce6fc6a47e3a09f36fdb14109f6f1b0558a8b6e44f0dabb4dbe1f1ab07c43d53  $dir/kafka.tgz.part" | sha512sum -c --quiet - || {
		echo "kafka: $dir/kafka.tgz.part from https://downloads.example.org/kafka/3.9.1/kafka_2.13-3.9.1.tgz does not match the sha512 of the target file" >&2
		rm -f "$dir/kafka.tgz.part"
		exit 1
	}
	rm -rf "$kafka.part"
	mkdir -p "$kafka.part"
	tar -xzf "$dir/kafka.tgz.part" -C "$kafka.part" --strip-components=1
	rm -f "$dir/kafka.tgz.part"
	if [ ! -x "$kafka.part/bin/kafka-server-start.sh" ] || [ ! -x "$kafka.part/bin/kafka-storage.sh" ]; then
		echo "kafka: https://downloads.example.org/kafka/3.9.1/kafka_2.13-3.9.1.tgz holds no bin/kafka-server-start.sh and bin/kafka-storage.sh: not a Kafka release" >&2
		rm -rf "$kafka.part"
		exit 1
	fi
	mv "$kafka.part" "$kafka"
fi

# Java from the distribution's packages.
sudo=
if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
if ! command -v java >/dev/null 2>&1; then
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq openjdk-17-jre-headless >/dev/null
fi
java -version 2>&1 | head -n 1

# Storage, formatted once.
if [ ! -f "/home/ubuntu/xp/c1/kafka-1/data/meta.properties" ]; then
	"$kafka/bin/kafka-storage.sh" format --ignore-formatted -t MkU3OEVBNTcwNTJENDM2Qk -c "$dir/server.properties"
fi

echo "kafka: 3.9.1 installed and formatted in $dir"
