#!/usr/bin/env bash
# Installs the Debian packages the real node of the test bed needs (hack/cluster/node/up.sh):
# the CRI runtime, the OCI runtime, the CNI plugins, the tools kubelet and kube-proxy call, and
# redis-server/redis-cli, whose binaries become the Redis image (hack/cluster/images.sh), and
# redis-sentinel, the reference of `make bench-failover` (run as plain processes on 127.0.0.1).
# Needs root. Runs `apt-get update` at most once per machine boot unless a package is missing.
set -euo pipefail

packages=(containerd runc containernetworking-plugins iptables iproute2 conntrack ethtool
  socat kmod mount util-linux redis-server redis-tools redis-sentinel binutils)

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
if ((${#missing[@]} == 0)); then
  exit 0
fi
if ((EUID != 0)); then
  echo "node/packages.sh: needs root to install: ${missing[*]}" >&2
  exit 1
fi
echo "[node-packages] installing ${missing[*]}" >&2
export DEBIAN_FRONTEND=noninteractive
apt-get update -qq
# --no-install-recommends: no service managers or docs; policy-rc.d: a package's postinst must
# not start its daemon (containerd, redis-server, redis-sentinel) on the machine; the bed runs
# its own.
policy=/usr/sbin/policy-rc.d
created_policy=0
if [[ ! -e $policy ]]; then
  printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && created_policy=1
fi
trap '((created_policy)) && rm -f "$policy"' EXIT
apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
