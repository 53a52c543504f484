# shellcheck shell=bash
# The real nodes of the test bed (sourced by ../up.sh, ../down.sh, ../fault.sh and ../images.sh):
# REAL_NODES of them (default 3), real-node-0..N-1, each with its own containerd (socket, root,
# state), runc, CNI bridge and pod range, kubelet (root dir, cgroupRoot, node IP); one kube-proxy
# for all of them, from the same Kubernetes build as the control plane. Pods on them really run
# (redis-server in the image hack/cluster/images.sh builds); they are labelled and tainted so
# only tests that ask for them land there (see README "The real nodes").
#
# Network, all in the machine's own network namespace: the port-less bridge ${HOST_IF} holds
# ${HOST_IP} (where the API server is advertised to pods); node i's bridge redisbed-n<i> holds
# 10.88.<i+1>.1/24 (the node's InternalIP, where its kubelet serves) and its pods get addresses
# from 10.88.<i+1>.0/24 inside network namespaces its containerd creates. The machine routes
# between the bridges, so pods reach each other across nodes. Nothing leaves the machine: pod
# traffic to any address outside ${POD_CIDR} is dropped, the kwok pod range is blackholed, the
# service range is routed to ${HOST_IF}.

REAL_NODES=${REAL_NODES:-3}
HOST_IF=redisbed0
HOST_IP=10.88.0.1
# Every real node's pods (and the host address): the egress guard and kube-proxy's clusterCIDR.
POD_CIDR=10.88.0.0/16
SERVICE_CIDR=10.96.0.0/16
KWOK_POD_CIDR=10.244.0.0/16
NODE_LABEL=redis-operator.dev/node
# Containers' cgroups live under this root (cgroup v1, cgroupfs driver), one folder per node
# under it, one folder in all to remove.
NODE_CGROUP_ROOT=/redis-operator-bed
# The sandbox image name containerd is configured with; hack/cluster/images.sh imports ours under it.
PAUSE_IMAGE=registry.k8s.io/pause:3.10
EGRESS_CHAIN=REDIS-BED-EGRESS
# The node faults of fault.sh (partition rules); emptied by node-heal, removed by cluster-down.
FAULT_CHAIN=REDIS-BED-FAULTS

nodes_dir="${state_dir}/node"
volumes_dir="${nodes_dir}/volumes"
fault_dir="${state_dir}/faults"

# node_use I: the names, addresses and folders of real node I (0-based) in NODE_* and node_dir,
# containerd_dir, containerd_sock.
node_use() {
  local i=$1
  NODE_INDEX=$i
  NODE_NAME="real-node-${i}"
  NODE_BRIDGE="redisbed-n${i}"
  NODE_IP="10.88.$((i + 1)).1"
  NODE_POD_CIDR="10.88.$((i + 1)).0/24"
  NODE_CGROUP="${NODE_CGROUP_ROOT}/${NODE_NAME}"
  node_dir="${nodes_dir}/${NODE_NAME}"
  containerd_dir="${node_dir}/containerd"
  containerd_sock="${containerd_dir}/containerd.sock"
}

# node_index NAME: I of real-node-I, or fails.
node_index() {
  [[ $1 =~ ^real-node-([0-9]+)$ ]] || return 1
  echo "${BASH_REMATCH[1]}"
}

# node_names: the real nodes this bed runs (from its pid files, so down.sh also finds the nodes
# of a bed started with another REAL_NODES).
node_names() {
  local f
  for f in "${pid_dir}"/kubelet-real-node-*.pid "${pid_dir}"/containerd-real-node-*.pid; do
    [[ -e $f ]] || continue
    f=${f##*/}
    f=${f%.pid}
    echo "${f#*-}"
  done | sort -u -V
}

# ctr against node I's containerd (node_use), in the namespace the CRI plugin uses.
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

# host_network_up: the host address, forwarding for pod traffic through Services, and the guards
# that keep every packet on this machine (once for all nodes).
host_network_up() {
  if ! ip link show "$HOST_IF" >/dev/null 2>&1; then
    ip link add "$HOST_IF" type bridge
  fi
  ip addr replace "${HOST_IP}/24" dev "$HOST_IF"
  ip link set "$HOST_IF" up
  mkdir -p "$nodes_dir"
  [[ -f "${nodes_dir}/ip_forward.orig" ]] || cat /proc/sys/net/ipv4/ip_forward >"${nodes_dir}/ip_forward.orig"
  echo 1 >/proc/sys/net/ipv4/ip_forward
  # Replies between two pods on a bridge must pass conntrack for Service NAT to undo.
  if [[ -w /proc/sys/net/bridge/bridge-nf-call-iptables ]]; then
    echo 1 >/proc/sys/net/bridge/bridge-nf-call-iptables
  fi
  # Both guards live in the mangle table, which packets cross before the filter table: kube-router
  # (bed-firewall) puts its chain first in filter FORWARD on every sync and ACCEPTs the pod
  # traffic a policy allows there, which would bypass anything later in that table.
  iptables -w -t mangle -N "$EGRESS_CHAIN" 2>/dev/null || iptables -w -t mangle -F "$EGRESS_CHAIN"
  iptables -w -t mangle -A "$EGRESS_CHAIN" -d "$POD_CIDR" -j RETURN
  iptables -w -t mangle -A "$EGRESS_CHAIN" -j DROP
  iptables -w -t mangle -C FORWARD -s "$POD_CIDR" -j "$EGRESS_CHAIN" 2>/dev/null ||
    iptables -w -t mangle -I FORWARD 1 -s "$POD_CIDR" -j "$EGRESS_CHAIN"
  # The chain fault.sh fills to cut a node off, first in every path a packet of the machine takes
  # (before kube-proxy's, kubelet's and kube-router's rules, which accept established connections).
  iptables -w -t mangle -N "$FAULT_CHAIN" 2>/dev/null || iptables -w -t mangle -F "$FAULT_CHAIN"
  local hook
  for hook in INPUT OUTPUT FORWARD; do
    iptables -w -t mangle -C "$hook" -j "$FAULT_CHAIN" 2>/dev/null ||
      iptables -w -t mangle -I "$hook" 1 -j "$FAULT_CHAIN"
  done
  # kwok's pods have no network: their addresses fail at once instead of following the default
  # route. Service addresses go to the host interface (a blackhole would fail connect() before
  # kube-proxy's DNAT could apply; this way an address without endpoints stays on the machine).
  ip route replace blackhole "$KWOK_POD_CIDR"
  ip route replace "$SERVICE_CIDR" dev "$HOST_IF"
}

# node_network_up: node I's bridge (node_use), with the node's address as its pods' gateway.
node_network_up() {
  if ! ip link show "$NODE_BRIDGE" >/dev/null 2>&1; then
    ip link add "$NODE_BRIDGE" type bridge
  fi
  ip addr replace "${NODE_IP}/24" dev "$NODE_BRIDGE"
  ip link set "$NODE_BRIDGE" up
}

# node_network_down: undo host_network_up and node_network_up for every node, and what kubelet,
# kube-proxy and CNI left behind.
node_network_down() {
  ip route del blackhole "$KWOK_POD_CIDR" 2>/dev/null || true
  ip route del "$SERVICE_CIDR" dev "$HOST_IF" 2>/dev/null || true
  # Our guard and fault chains, kube-proxy's, kubelet's and kube-router's chains (KUBE-*) and the
  # CNI plugins' (CNI-*), with every rule that jumps to them: each table saved without them and
  # restored at once.
  local save table rules ours="(KUBE|CNI)-|${EGRESS_CHAIN}|${FAULT_CHAIN}"
  for save in iptables-save ip6tables-save; do
    command -v "$save" >/dev/null || continue
    for table in filter nat mangle; do
      rules=$("$save" -t "$table" 2>/dev/null) || continue
      grep -q -E "$ours" <<<"$rules" || continue
      grep -v -E "$ours" <<<"$rules" | "${save/-save/-restore}" -T "$table" || true
    done
  done
  # kube-router's ipsets (KUBE-SRC-*, KUBE-DST-*, ...) outlive its rules; free once no rule
  # refers to them.
  if command -v ipset >/dev/null; then
    local set
    for set in $(ipset list -n 2>/dev/null | grep -E '^(inet6:)?KUBE-' || true); do
      ipset destroy "$set" 2>/dev/null || true
    done
  fi
  local link
  for link in $(ip -o link show | awk -F': ' '{print $2}' | sed 's/@.*//' | grep -E '^redisbed(0|-n[0-9]+)$' || true); do
    ip link del "$link" 2>/dev/null || true
  done
  if [[ -f "${nodes_dir}/ip_forward.orig" ]]; then
    cat "${nodes_dir}/ip_forward.orig" >/proc/sys/net/ipv4/ip_forward || true
  fi
}

# node_kill_containers: kill node I's (node_use) shims and container processes (pause and
# workload): what a machine losing power takes with it.
node_kill_containers() {
  local pids pid sub dir
  # Shims outlive containerd by design; the node's carry its containerd's address.
  pids=$(pgrep -f "containerd-shim-runc-v2 .*-address ${containerd_sock}( |$)" || true)
  for pid in $pids; do kill -KILL "$pid" 2>/dev/null || true; done
  for sub in /sys/fs/cgroup/*/; do
    dir="${sub}${NODE_CGROUP#/}"
    [[ -d $dir ]] || continue
    find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
}

# node_thaw_all: thaw every node's containers (a frozen process cannot die, even of SIGKILL).
node_thaw_all() {
  local state
  for state in /sys/fs/cgroup/freezer"${NODE_CGROUP_ROOT}"/*/freezer.state; do
    [[ -e $state ]] && echo THAWED >"$state" 2>/dev/null || true
  done
}

# node_cleanup: after the nodes' containerd, kubelet and kube-proxy stopped: kill the containers
# they left (shims, pause and workload processes), unmount kubelet's and containerd's mounts,
# remove the pod network namespaces and the cgroups, then the network.
node_cleanup() {
  local pid m ns sub dir
  node_thaw_all
  # Shims outlive containerd by design; ours carry an address under our state dir.
  for pid in $(pgrep -f "containerd-shim-runc-v2 .*-address ${nodes_dir}/" || true); do
    kill -KILL "$pid" 2>/dev/null || true
  done
  for sub in /sys/fs/cgroup/*/; do
    dir="${sub}${NODE_CGROUP_ROOT#/}"
    [[ -d $dir ]] || continue
    find "$dir" -name cgroup.procs -exec cat {} + 2>/dev/null | while read -r pid; do
      kill -KILL "$pid" 2>/dev/null || true
    done
  done
  sleep 0.5
  # Mounts under the nodes' state dir, deepest first.
  while read -r m; do
    umount -l "$m" 2>/dev/null || true
  done < <(awk -v d="$nodes_dir" 'index($2, d) == 1 { print $2 }' /proc/self/mounts | sort -r)
  # Network namespaces of pods (containerd names them cni-<uuid>).
  for ns in /run/netns/cni-*; do
    [[ -e $ns ]] || continue
    ip netns delete "$(basename "$ns")" 2>/dev/null || true
  done
  for sub in /sys/fs/cgroup/*/; do
    dir="${sub}${NODE_CGROUP_ROOT#/}"
    [[ -d $dir ]] && find "$dir" -depth -type d -exec rmdir {} + 2>/dev/null || true
  done
  rm -rf "$fault_dir"
  node_network_down
}

# node_cgroups_up: the cgroup root of node I's (node_use) containers in every v1 hierarchy.
node_cgroups_up() {
  local sub dir level
  for sub in /sys/fs/cgroup/*/; do
    [[ -f "${sub}cgroup.procs" ]] || continue
    for level in "$NODE_CGROUP_ROOT" "$NODE_CGROUP"; do
      dir="${sub}${level#/}"
      mkdir -p "$dir"
      if [[ -f "${sub}cpuset.cpus" ]]; then
        cat "${sub}cpuset.cpus" >"${dir}/cpuset.cpus"
        cat "${sub}cpuset.mems" >"${dir}/cpuset.mems"
      fi
    done
  done
}

# node_write_configs KUBELET_PORT KUBELET_HEALTHZ_PORT: containerd's, CNI's and kubelet's
# configuration of node I (node_use).
node_write_configs() {
  local kubelet_port=$1 kubelet_healthz=$2
  mkdir -p "${containerd_dir}/certs.d/_default" "${node_dir}/cni/net.d" "${node_dir}/cni/ipam" \
    "${node_dir}/kubelet"
  cat >"${containerd_dir}/config.toml" <<TOML
# containerd for the bed's ${NODE_NAME}: its own root, state and socket (hack/cluster/node/node.sh).
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
        "ranges": [[{ "subnet": "${NODE_POD_CIDR}", "gateway": "${NODE_IP}" }]],
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
cgroupRoot: ${NODE_CGROUP}
containerRuntimeEndpoint: unix://${containerd_sock}
address: ${NODE_IP}
port: ${kubelet_port}
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: ${kubelet_healthz}
tlsCertFile: ${pki_dir}/kubelet-${NODE_NAME}.crt
tlsPrivateKeyFile: ${pki_dir}/kubelet-${NODE_NAME}.key
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
# Renewed every quarter of it: a stopped, frozen or cut-off node is noticed after
# kube-controller-manager's --node-monitor-grace-period (up.sh).
nodeLeaseDurationSeconds: 16
syncFrequency: 10s
fileCheckFrequency: 0s
# A container that exits again and again is restarted after at most 10 s, not 5 min: the chaos
# run kills one pod's redis-server round after round, and with the default back-off a long run
# spent most of its time waiting for the kubelet (a member back later is only slower, never
# less safe). Beta and on by default since 1.35 (KubeletCrashLoopBackOffMax).
crashLoopBackOff: {maxContainerRestartPeriod: 10s}
volumePluginDir: ${node_dir}/kubelet/volume-plugins
# Each node its own pod log directory: a kubelet's container GC deletes every directory of
# /var/log/pods whose pod it does not run, so on a shared one the nodes deleted each other's
# logs (a pod's log read from the API server failed with "no such file or directory").
podLogsDir: ${node_dir}/pod-logs
YAML
}

# proxy_write_config PROXY_HEALTHZ_PORT PROXY_METRICS_PORT: the one kube-proxy's configuration.
# The nodes share the machine's network namespace, so one kube-proxy (named after real-node-0,
# though it keeps running when that node is stopped) programs Services for all of them.
proxy_write_config() {
  local proxy_healthz=$1 proxy_metrics=$2
  mkdir -p "${nodes_dir}/kube-proxy"
  cat >"${nodes_dir}/kube-proxy/config.yaml" <<YAML
apiVersion: kubeproxy.config.k8s.io/v1alpha1
kind: KubeProxyConfiguration
clientConnection:
  kubeconfig: ${state_dir}/kube-proxy.kubeconfig
hostnameOverride: real-node-0
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

# node_start_containerd: start node I's (node_use) cgroups, bridge and containerd.
node_start_containerd() {
  node_cgroups_up
  node_network_up
  start "containerd-${NODE_NAME}" --config "${containerd_dir}/config.toml"
  wait_until "containerd-${NODE_NAME}" 60 node_ctr version
}

# node_start_kubelet: start node I's (node_use) kubelet, registered as NODE_NAME with its labels
# (kubernetes.io/hostname is its name) and the taint only tests that ask for real pods tolerate.
node_start_kubelet() {
  start "kubelet-${NODE_NAME}" \
    --config="${node_dir}/kubelet/config.yaml" \
    --kubeconfig="${state_dir}/node-${NODE_NAME}.kubeconfig" \
    --root-dir="${node_dir}/kubelet/root" \
    --cert-dir="${node_dir}/kubelet/pki" \
    --hostname-override="${NODE_NAME}" \
    --node-ip="${NODE_IP}" \
    --node-labels="${NODE_LABEL}=real" \
    --register-with-taints="${NODE_LABEL}=real:NoSchedule" \
    --v=1
  node_wait_device_plugin_socket
}

# Every kubelet serves device-plugin registration on the one path kubelet hard-codes
# (/var/lib/kubelet/device-plugins/kubelet.sock, whatever its --root-dir), and deletes what is
# there just before it binds: two kubelets starting at once race, and the loser fails to bind
# ("address already in use") and exits. So a kubelet counts as started once it listens there;
# the next one starts after that.
node_wait_device_plugin_socket() {
  local pid
  pid=$(pid_of "kubelet-${NODE_NAME}")
  wait_until "kubelet-${NODE_NAME}" 120 node_listens_on_device_plugin_socket "$pid"
}

node_listens_on_device_plugin_socket() {
  ss -xlpn | grep -F /var/lib/kubelet/device-plugins/kubelet.sock | grep -qF "pid=$1,"
}
