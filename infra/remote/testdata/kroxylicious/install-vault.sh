#!/bin/sh
# written by xp: install Kroxylicious 0.13.0 and Vault on this gateway host
set -eu
dir=/home/xp/xp/c1/gateway-1/kroxylicious
kroxy="$dir/kroxylicious-0.13.0"
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
command -v unzip >/dev/null 2>&1 || tools="$tools unzip"
if [ -n "$tools" ]; then apt $tools; fi

# The release, checked against its SHA-512 before it is unpacked.
if [ ! -x "$kroxy/bin/kroxylicious-start.sh" ]; then
	curl -fsSL --retry 3 -o "$dir/kroxylicious.tgz.part" 'https://github.com/kroxylicious/kroxylicious/releases/download/v0.13.0/kroxylicious-app-0.13.0-bin.tar.gz'
	echo "0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef0123456789abcdef  $dir/kroxylicious.tgz.part" | sha512sum -c --quiet - || {
		echo "kroxylicious: $dir/kroxylicious.tgz.part from https://github.com/kroxylicious/kroxylicious/releases/download/v0.13.0/kroxylicious-app-0.13.0-bin.tar.gz does not match the sha512 of the target file" >&2
		rm -f "$dir/kroxylicious.tgz.part"
		exit 1
	}
	tgz="$dir/kroxylicious.tgz.part"
	rm -rf "$kroxy.part"
	mkdir -p "$kroxy.part"
	tar -xzf "$tgz" -C "$kroxy.part" --strip-components=1
	rm -f "$dir/kroxylicious.tgz.part"
	mv "$kroxy.part" "$kroxy"
fi
echo "kroxylicious: $kroxy"
# The release is the version the target file names (attempts record it).
if [ ! -f "$kroxy/libs/kroxylicious-runtime-0.13.0.jar" ]; then
	echo "kroxylicious: $kroxy has no libs/kroxylicious-runtime-0.13.0.jar: the release is not Kroxylicious 0.13.0 (correct gateway.kroxylicious.version)" >&2
	exit 1
fi

# Vault (its dev server holds the record encryption keys), checked against
# its SHA-256 before it is unpacked.
if [ ! -x "$dir/vault" ]; then
	curl -fsSL --retry 3 -o "$dir/vault.zip.part" 'https://releases.hashicorp.com/vault/1.18.3/vault_1.18.3_linux_amd64.zip'
	echo "fedcba9876543210fedcba9876543210fedcba9876543210fedcba9876543210  $dir/vault.zip.part" | sha256sum -c --quiet - || {
		echo "vault: $dir/vault.zip.part from https://releases.hashicorp.com/vault/1.18.3/vault_1.18.3_linux_amd64.zip does not match the sha256 of the target file" >&2
		rm -f "$dir/vault.zip.part"
		exit 1
	}
	unzip -o -q "$dir/vault.zip.part" vault -d "$dir"
	rm -f "$dir/vault.zip.part"
fi
"$dir/vault" version

# Java 21 or later: the java on PATH or one installed beside it, else
# the distribution's package; its home is what the gateways start with.
java_ok() {
	v=$("$1" -version 2>&1 | sed -n 's/.*version "\([0-9][0-9]*\).*/\1/p' | head -n 1)
	[ -n "$v" ] && [ "$v" -ge 21 ]
}
find_java() {
	for j in "$(command -v java || true)" /usr/lib/jvm/*/bin/java; do
		if [ -x "$j" ] && java_ok "$j"; then readlink -f "$j"; return; fi
	done
}
java=$(find_java)
if [ -z "$java" ]; then
	apt openjdk-21-jre-headless
	java=$(find_java)
	if [ -z "$java" ]; then
		echo "kroxylicious: no Java 21 or later, even after installing openjdk-21-jre-headless (set gateway.kroxylicious.java)" >&2
		exit 1
	fi
fi
dirname "$(dirname "$java")" >"$dir/java-home"
"$java" -version 2>&1 | head -n 1
