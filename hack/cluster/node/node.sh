# shellcheck shell=bash
# The real node of the test bed (sourced by ../up.sh and ../down.sh): containerd + runc + the CNI
# bridge, kubelet and kube-proxy from the same Kubernetes build as the control plane. Pods on it
# really run (redis-server in the image hack/cluster/images.sh builds); it is labelled and tainted
# so only tests that ask for it land there (see README "The real node").
#
# Network: the bridge ${NODE_BRIDGE} holds ${NODE_IP}/16 (the node's InternalIP, where kubelet
# serves and the API server is advertised to pods); pods get addresses from ${POD_CIDR} inside
# network namespaces containerd creates. Nothing leaves the machine: pod traffic to any address
# outside the pod range is dropped, the kwok pod range is blackholed, the service range is routed
# to the bridge.

NODE_NAME=real-node-0
NODE_BRIDGE=redisbed0
NODE_IP=10.88.0.1
POD_CIDR=10.88.0.0/16
SERVICE_CIDR=10.96.0.0/16
KWOK_POD_CIDR=10.244.0.0/16
NODE_LABEL=redis-operator.dev/node
# Containers' cgroups live under this root (cgroup v1, cgroupfs driver), one folder to remove.
NODE_CGROUP_ROOT=/redis-operator-bed
# The sandbox image name containerd is configured with; hack/cluster/images.sh imports ours under it.
PAUSE_IMAGE=registry.k8s.io/pause:3.10
EGRESS_CHAIN=REDIS-BED-EGRESS

node_dir="${state_dir}/node"
containerd_dir="${node_dir}/containerd"
containerd_sock="${containerd_dir}/containerd.sock"

# ctr against the bed's containerd, in the namespace the CRI plugin uses.
node_ctr() { ctr --address "$containerd_sock" --namespace k8s.io "$@"; }

# node_check_alone: the bridge, routes, iptables chains and cgroup root are the machine's, so only
# one real node runs per machine: refuse to start next to another checkout's kubelet.
node_check_alone() {
  local pid exe
  for pid in $(pgrep -x kubelet || true); do
    exe=$(tr '\0' '\n' <"/proc/${pid}/cmdline" 2>/dev/null | head -n1) || continue
    if [[ $exe != "${bin_dir}/kubelet" ]]; then
      echo "another kubelet runs on this machine (pid ${pid}, ${exe}): stop that test bed first" \
        "(make cluster-down in its checkout); only one real node runs per machine" >&2
      return 1
    fi
  done
}

# node_network_up: the bridge with the node's address, forwarding for pod traffic through
# Services, and the guards that keep every packet on this machine.
node_network_up() {
  if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
    ip link add "$NODE_BRIDGE" type bridge
  fi
  ip addr replace "${NODE_IP}/16" dev "$NODE_BRIDGE"
  ip link set "$NODE_BRIDGE" up
  mkdir -p "$node_dir"
  [[ -f "${node_dir}/ip_forward.orig" ]] || cat /proc/sys/net/ipv4/ip_forward >"${node_dir}/ip_forward.orig"
  echo 1 >/proc/sys/net/ipv4/ip_forward
  # Replies between two pods on the bridge must pass conntrack for Service NAT to undo.
  if [[ -w /proc/sys/net/bridge/bridge-nf-call-iptables ]]; then
    echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables
  fi
  iptables -w -N "$EGRESS_CHAIN" 2>/dev/null || iptables -w -F "$EGRESS_CHAIN"
  iptables -w -A "$EGRESS_CHAIN" -d "$POD_CIDR" -j RETURN
  iptables -w -A "$EGRESS_CHAIN" -j DROP
  iptables -w -C FORWARD -s "$POD_CIDR" -j "$EGRESS_CHAIN" 2>/dev/null ||
    iptables -w -I FORWARD 1 -s "$POD_CIDR" -j "$EGRESS_CHAIN"
  # kwok's pods have no network: their addresses fail at once instead of following the default
  # route. Service addresses go to the bridge (a blackhole would fail connect() before
  # kube-proxy's DNAT could apply; this way an address without endpoints stays on the machine).
  ip route replace blackhole "$KWOK_POD_CIDR"
  ip route replace "$SERVICE_CIDR" dev "$NODE_BRIDGE"
}

# node_network_down: undo node_network_up and what kubelet, kube-proxy and CNI left behind.
node_network_down() {
  ip route del blackhole "$KWOK_POD_CIDR" 2>/dev/null || true
  ip route del "$SERVICE_CIDR" dev "$NODE_BRIDGE" 2>/dev/null || true
  # Our guard chain, kube-proxy's and kubelet's chains (KUBE-*) and the CNI plugins' (CNI-*),
  # with every rule that jumps to them: each table saved without them and restored at once.
  local save table rules ours="(KUBE|CNI)-|${EGRESS_CHAIN}"
  for save in iptables-save ip6tables-save; do
    command -v "$save" >/dev/null || continue
    for table in filter nat mangle; do
      rules=$("$save" -t "$table" 2>/dev/null) || continue
      grep -q -E "$ours" <<<"$rules" || continue
      grep -v -E "$ours" <<<"$rules" | "${save/-save/-restore}" -T "$table" || true
    done
  done
  ip link del "$NODE_BRIDGE" 2>/dev/null || true
  if [[ -f "${node_dir}/ip_forward.orig" ]]; then
    cat "${node_dir}/ip_forward.orig" >/proc/sys/net/ipv4/ip_forward || true
  fi
}

# node_cleanup: after containerd, kubelet and kube-proxy stopped: kill containers they left
# (shims, pause and workload processes), unmount kubelet's and containerd's mounts, remove the
# pod network namespaces and the cgroups, then the network.
node_cleanup() {
  local pids pid m ns
  # Shims outlive containerd by design; ours carry our containerd's address.
  pids=$(pgrep -f "containerd-shim-runc-v2 .*-address ${containerd_sock}" || true)
  for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
  local sub dir
  for sub in /sys/fs/cgroup/*/; do
    dir="${sub}${NODE_CGROUP_ROOT#/}"
    [[ -d $dir ]] || continue
    find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  sleep 0.5
  # Mounts under the node's state dir, deepest first.
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$node_dir" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r)
  # Network namespaces of pods (containerd names them cni-<uuid>).
  for ns in /run/netns/cni-*; do
    [[ -e $ns ]] || continue
    ip netns delete "$(basename "$ns")" 2>/dev/null || true
  done
  for sub in /sys/fs/cgroup/*/; do
    dir="${sub}${NODE_CGROUP_ROOT#/}"
    [[ -d $dir ]] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  node_network_down
}

# node_cgroups_up: the cgroup root of the node's containers in every v1 hierarchy.
node_cgroups_up() {
  local sub dir
  for sub in /sys/fs/cgroup/*/; do
    [[ -f "${sub}cgroup.procs" ]] || continue
    dir="${sub}${NODE_CGROUP_ROOT#/}"
    mkdir -p "$dir"
    if [[ -f "${sub}cpuset.cpus" ]]; then
      cat "${sub}cpuset.cpus" >"${dir}/cpuset.cpus"
      cat "${sub}cpuset.mems" >"${dir}/cpuset.mems"
    fi
  done
}

# node_write_configs KUBELET_PORT KUBELET_HEALTHZ_PORT PROXY_HEALTHZ_PORT PROXY_METRICS_PORT
node_write_configs() {
  local kubelet_port=$1 kubelet_healthz=$2 proxy_healthz=$3 proxy_metrics=$4
  mkdir -p "${containerd_dir}/certs.d/_default" "${node_dir}/cni/net.d" "${node_dir}/cni/ipam" \
    "${node_dir}/kubelet" "${node_dir}/kube-proxy"
  cat >"${containerd_dir}/config.toml" <<TOML
# containerd for the bed's real node: its own root, state and socket (hack/cluster/node/node.sh).
version = 2
root = "${containerd_dir}/root"
state = "${containerd_dir}/state"
disabled_plugins = ["io.containerd.snapshotter.v1.aufs", "io.containerd.snapshotter.v1.btrfs",
  "io.containerd.snapshotter.v1.devmapper", "io.containerd.snapshotter.v1.zfs",
  "io.containerd.tracing.processor.v1.otlp", "io.containerd.internal.v1.tracing"]

[grpc]
  address = "${containerd_sock}"

[ttrpc]
  address = "${containerd_sock}.ttrpc"

[debug]
  address = "${containerd_sock}.debug"
  level = "warn"

[plugins."io.containerd.internal.v1.opt"]
  path = "${containerd_dir}/opt"

[plugins."io.containerd.grpc.v1.cri"]
  sandbox_image = "${PAUSE_IMAGE}"
  # The machine's sandbox lacks CAP_SYS_RESOURCE: a negative oom_score_adj fails every sandbox.
  restrict_oom_score_adj = true
  disable_apparmor = true
  enable_selinux = false
  [plugins."io.containerd.grpc.v1.cri".containerd]
    snapshotter = "overlayfs"
    default_runtime_name = "runc"
    [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc]
      runtime_type = "io.containerd.runc.v2"
      [plugins."io.containerd.grpc.v1.cri".containerd.runtimes.runc.options]
        BinaryName = "$(command -v runc)"
        SystemdCgroup = false
  [plugins."io.containerd.grpc.v1.cri".cni]
    bin_dir = "/usr/lib/cni"
    conf_dir = "${node_dir}/cni/net.d"
  [plugins."io.containerd.grpc.v1.cri".registry]
    # Every registry resolves to a closed local port: a missing image fails at once and no pull
    # ever leaves the machine (images come from hack/cluster/images.sh).
    config_path = "${containerd_dir}/certs.d"
TOML
  cat >"${containerd_dir}/certs.d/_default/hosts.toml" <<TOML
server = "http://127.0.0.1:9"
[host."http://127.0.0.1:9"]
  capabilities = ["pull", "resolve"]
TOML
  cat >"${node_dir}/cni/net.d/10-redis-bed.conflist" <<JSON
{
  "cniVersion": "1.0.0",
  "name": "redis-bed",
  "plugins": [
    {
      "type": "bridge",
      "bridge": "${NODE_BRIDGE}",
      "isGateway": true,
      "ipMasq": false,
      "hairpinMode": true,
      "ipam": {
        "type": "host-local",
        "dataDir": "${node_dir}/cni/ipam",
        "ranges": [[{ "subnet": "${POD_CIDR}", "rangeStart": "10.88.1.1", "gateway": "${NODE_IP}" }]],
        "routes": [{ "dst": "0.0.0.0/0" }]
      }
    },
    { "type": "portmap", "capabilities": { "portMappings": true } }
  ]
}
JSON
  : >"${node_dir}/kubelet/resolv.conf"
  cat >"${node_dir}/kubelet/config.yaml" <<YAML
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# The machine mounts cgroup v1 only: kubelet 1.35+ refuses it unless told (a deprecation warning).
failCgroupV1: false
cgroupDriver: cgroupfs
cgroupRoot: ${NODE_CGROUP_ROOT}
containerRuntimeEndpoint: unix://${containerd_sock}
address: ${NODE_IP}
port: ${kubelet_port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${kubelet_healthz}
tlsCertFile: ${pki_dir}/kubelet.crt
tlsPrivateKeyFile: ${pki_dir}/kubelet.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: ${pki_dir}/ca.crt}
authorization: {mode: AlwaysAllow}
# No cluster DNS and no host resolver in pods: nothing they could look up is on this machine.
resolvConf: ${node_dir}/kubelet/resolv.conf
clusterDomain: cluster.local
failSwapOn: false
serializeImagePulls: false
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
evictionHard: {memory.available: 100Mi, nodefs.available: 1%, imagefs.available: 1%}
maxPods: 60
nodeStatusUpdateFrequency: 4s
syncFrequency: 10s
fileCheckFrequency: 0s
volumePluginDir: ${node_dir}/kubelet/volume-plugins
YAML
  cat >"${node_dir}/kube-proxy/config.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${state_dir}/kube-proxy.kubeconfig
hostnameOverride: ${NODE_NAME}
mode: iptables
clusterCIDR: ${POD_CIDR}
bindAddress: 127.0.0.1
healthzBindAddress: 127.0.0.1:${proxy_healthz}
metricsBindAddress: 127.0.0.1:${proxy_metrics}
# Leave the machine's conntrack table size alone.
conntrack: {maxPerCore: 0, min: 0}
iptables: {syncPeriod: 30s, minSyncPeriod: 1s, localhostNodePorts: false}
YAML
}
