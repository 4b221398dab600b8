#!/bin/sh
# written by xp: install Kroxylicious 0.12.0 on this gateway host
set -eu
dir=/home/xp/xp/c1/gateway-1/kroxylicious
kroxy="$dir/kroxylicious-0.12.0"
mkdir -p "$dir"
sudo=
if [ "$(id -u)" != 0 ]; then sudo="sudo -n"; fi
apt() {
	# On a fresh machine cloud-init, and the unattended upgrades it
	# starts, hold dpkg's lock: wait for cloud-init, then let apt wait
	# for the lock rather than fail.
	if command -v cloud-init >/dev/null 2>&1; then cloud-init status --wait >/dev/null 2>&1 || true; fi
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get update -qq -o DPkg::Lock::Timeout=600
	$sudo env DEBIAN_FRONTEND=noninteractive apt-get install -y -qq -o DPkg::Lock::Timeout=600 "$@" >/dev/null
}
tools=
command -v curl >/dev/null 2>&1 || tools="$tools curl"
if [ -n "$tools" ]; then apt $tools; fi

# The release, checked against its SHA-512 before it is unpacked.
if [ ! -x "$kroxy/bin/kroxylicious-start.sh" ]; then
	echo "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  /home/xp/xp/c1/gateway-1/kroxylicious/kroxylicious-app-0.12.0-bin.tar.gz" | sha512sum -c --quiet - || {
		echo "kroxylicious: /home/xp/xp/c1/gateway-1/kroxylicious/kroxylicious-app-0.12.0-bin.tar.gz (uploaded from /home/me/xp/out/dist/kroxylicious-app-0.12.0-bin.tar.gz) does not match the sha512 of the target file" >&2
		exit 1
	}
	tgz="/home/xp/xp/c1/gateway-1/kroxylicious/kroxylicious-app-0.12.0-bin.tar.gz"
	rm -rf "$kroxy.part"
	mkdir -p "$kroxy.part"
	tar -xzf "$tgz" -C "$kroxy.part" --strip-components=1
	rm -f "$dir/kroxylicious.tgz.part"
	mv "$kroxy.part" "$kroxy"
fi
echo "kroxylicious: $kroxy"
# The release is the version the target file names (attempts record it).
if [ ! -f "$kroxy/libs/kroxylicious-runtime-0.12.0.jar" ]; then
	echo "kroxylicious: $kroxy has no libs/kroxylicious-runtime-0.12.0.jar: the release is not Kroxylicious 0.12.0 (correct gateway.kroxylicious.version)" >&2
	exit 1
fi
# kms inmemory: Kroxylicious's in-memory KMS must be in the release (xp's
# assembled releases have it; the project's archives do not).
if ! ls "$kroxy"/libs/kroxylicious-kms-provider-kroxylicious-inmemory-*.jar >/dev/null 2>&1; then
	echo "kroxylicious: $kroxy has no libs/kroxylicious-kms-provider-kroxylicious-inmemory-*.jar for kms inmemory (make kroxylicious-dist assembles a release with it)" >&2
	exit 1
fi

# Java 17 or later: the java on PATH or one installed beside it, else
# the distribution's package; its home is what the gateways start with.
java_ok() {
	v=$("$1" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\).*/\1/p' | head -n 1)
	[ -n "$v" ] && [ "$v" -ge 17 ]
}
find_java() {
	for j in "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
		if [ -x "$j" ] && java_ok "$j"; then readlink -f "$j"; return; fi
	done
}
java=$(find_java)
if [ -z "$java" ]; then
	apt openjdk-17-jre-headless
	java=$(find_java)
	if [ -z "$java" ]; then
		echo "kroxylicious: no Java 17 or later, even after installing openjdk-17-jre-headless (set gateway.kroxylicious.java)" >&2
		exit 1
	fi
fi
dirname "$(dirname "$java")" >"$dir/java-home"
"$java" -version 2>&1 | head -n 1
