#!/usr/bin/env bash
# Installs the Debian packages the real node of the test bed needs (hack/cluster/node/up.sh):
# the CRI runtime, the OCI runtime, the CNI plugins, the tools kubelet and kube-proxy call, and
# redis-server/redis-cli, whose binaries become the Redis image (hack/cluster/images.sh), and
# redis-sentinel, the reference of `make bench-failover` (run as plain processes on 127.0.0.1).
#
# prometheus-redis-exporter (oliver006's redis_exporter), whose binary becomes the exporter image
# (hack/cluster/images.sh), is unpacked, not installed: its postinst would add a `prometheus`
# system user and enable a service listening on :9121 (update-rc.d, a multi-user.target.wants
# link) for the machine's next boot, and the bed needs only the binary. `apt-get download` fetches
# the .deb (hash-checked against the signed archive index) and `dpkg-deb -x` unpacks it into
# ${REDIS_OPERATOR_CACHE:-${XDG_CACHE_HOME:-~/.cache}/redis-operator}/debs/NAME/: no maintainer
# script runs, dpkg's database and the machine stay as they were.
#
# Needs root. Runs `apt-get update` at most once per machine boot unless a package is missing.
set -euo pipefail

packages=(containerd runc containernetworking-plugins iptables iproute2 conntrack ethtool
  socat kmod mount util-linux ipset redis-server redis-tools redis-sentinel binutils
  ca-certificates)
unpacked=(prometheus-redis-exporter)
debs_dir=${REDIS_OPERATOR_CACHE:-${XDG_CACHE_HOME:-${HOME}/.cache}/redis-operator}/debs

missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'install ok installed' || missing+=("$p")
done
missing_unpacked=()
for p in "${unpacked[@]}"; do
  [[ -f ${debs_dir}/${p}/.deb-version ]] || missing_unpacked+=("$p")
done
if ((${#missing[@]} + ${#missing_unpacked[@]} == 0)); then
  exit 0
fi
if ((EUID != 0)); then
  echo "node/packages.sh: needs root to install: ${missing[*]} ${missing_unpacked[*]}" >&2
  exit 1
fi
export DEBIAN_FRONTEND=noninteractive
created_policy=0
work=""
cleanup() {
  if ((created_policy)); then rm -f /usr/sbin/policy-rc.d; fi
  if [[ -n $work ]]; then rm -rf "$work"; fi
}
trap cleanup EXIT
apt-get update -qq

if ((${#missing[@]} > 0)); then
  echo "[node-packages] installing ${missing[*]}" >&2
  # --no-install-recommends: no service managers or docs; policy-rc.d: a package's postinst must
  # not start its daemon (containerd, redis-server, redis-sentinel) on the machine; the bed runs
  # its own.
  policy=/usr/sbin/policy-rc.d
  if [[ ! -e $policy ]]; then
    printf '#!/bin/sh\nexit 101\n' >"$policy" && chmod 755 "$policy" && created_policy=1
  fi
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
fi

for p in "${missing_unpacked[@]}"; do
  echo "[node-packages] unpacking ${p} into ${debs_dir}/${p}" >&2
  mkdir -p "$debs_dir"
  work=$(mktemp -d "${debs_dir}/.${p}.XXXXXX")
  # Downloaded as root (the cache is root's): apt's _apt sandbox user could not write there.
  (cd "$work" && apt-get download -qq -o APT::Sandbox::User=root "$p")
  deb=$(echo "${work}"/*.deb)
  dpkg-deb -x "$deb" "${work}/root"
  dpkg-deb -f "$deb" Version >"${work}/root/.deb-version"
  rm -rf "${debs_dir:?}/${p}"
  mv -T "${work}/root" "${debs_dir}/${p}"
  rm -rf "$work"
  work=""
done
