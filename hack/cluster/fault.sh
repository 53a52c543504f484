#!/usr/bin/env bash
# Node faults on the test bed's real nodes, for tests and by hand:
#
#   fault.sh node-stop real-node-1       the machine lost power: kubelet, containerd, the node's
#                                        shims and container processes killed (SIGKILL)
#   fault.sh node-freeze real-node-1     the machine hangs: the node's containers frozen with the
#                                        cgroup freezer, kubelet and containerd stopped (SIGSTOP);
#                                        its pods still look Running to the API server
#   fault.sh node-partition real-node-1  the machine is cut off: iptables drops every packet of
#                                        the node's pod range to and from the other nodes and the
#                                        host, both ways, established connections included, while
#                                        its pods keep running; its kubelet is stopped (SIGSTOP)
#                                        too, as a cut-off machine's kubelet cannot reach the API
#                                        server (all kubelets share the host's addresses, so no
#                                        packet rule could single its connections out)
#   fault.sh node-heal real-node-1       undo whichever of the three the node has: restart
#                                        containerd and kubelet (the node's pods come back as
#                                        kubelet reconciles them), thaw and continue, or remove
#                                        the rules and continue
#   fault.sh path-cut 10.88.2.5          the controller's path to one pod is cut: iptables drops
#                                        every packet between the pod and its node's address on
#                                        the host, both ways, established connections included.
#                                        The host's own connections to a node's pods leave from
#                                        that address (the controller's, as it runs on the host);
#                                        the pod, its node, its kubelet (whose probes exec in the
#                                        container), the other pods and the clients that connect
#                                        from the host address 10.88.0.1 (HOST_IP; the tests'
#                                        writers bind it) still reach it
#   fault.sh path-heal 10.88.2.5         remove those rules
#   fault.sh status                      the faults in place, one line per node or cut path
#
# Each verb is idempotent (the same fault twice is one fault; healing a healthy node does
# nothing); a node carries one fault at a time. `make cluster-down` undoes all of them.
set -euo pipefail
# shellcheck source-path=SCRIPTDIR

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=node/node.sh
source "${cluster_here}/node/node.sh"

log() { printf '[fault] %s\n' "$*" >&2; }
die() {
  log "$*"
  exit 1
}

usage() {
  echo "usage: $0 node-stop|node-freeze|node-partition|node-heal NODE | path-cut|path-heal POD_IP | status" >&2
  exit 2
}

# signal_node SIGNAL: send SIGNAL to node I's kubelet and containerd.
signal_node() {
  local pid
  for pid in $(pid_of "kubelet-${NODE_NAME}") $(pid_of "containerd-${NODE_NAME}"); do
    kill "-$1" "$pid" 2>/dev/null || true
  done
}

# freezer STATE: FROZEN or THAWED for every container of node I (its cgroup subtree).
freezer() {
  local file="/sys/fs/cgroup/freezer${NODE_CGROUP}/freezer.state"
  [[ -e $file ]] || die "${NODE_NAME} has no freezer cgroup ${file} (cgroup v1 freezer not mounted?)"
  echo "$1" >"$file"
}

# partition_rules add|del: the node's rules in FAULT_CHAIN (node.sh puts the chain first in mangle
# INPUT, OUTPUT and FORWARD). Pods of the node still reach each other on its bridge; the host's address
# on the bridge (NODE_IP, the source of the host's own connections to the pods) does not.
partition_rules() {
  tagged_rules "$1" "partition ${NODE_NAME}" \
    "-s ${NODE_IP} -j DROP" \
    "-d ${NODE_IP} -j DROP" \
    "-s ${NODE_POD_CIDR} -d ${NODE_POD_CIDR} -j RETURN" \
    "-s ${NODE_POD_CIDR} -j DROP" \
    "-d ${NODE_POD_CIDR} -j DROP"
}

# path_rules add|del IP: the rules cutting pod IP off from its node's address on the host.
path_rules() {
  tagged_rules "$1" "path ${2}" "-s ${NODE_IP} -d ${2} -j DROP" "-s ${2} -d ${NODE_IP} -j DROP"
}

# tagged_rules add|del TAG RULE...: add the RULEs to FAULT_CHAIN, each commented TAG (once), or
# delete every rule commented TAG.
tagged_rules() {
  local op=$1 tag=$2 rule
  shift 2
  local rules=("$@")
  if [[ $op == add ]]; then
    for rule in "${rules[@]}"; do
      # shellcheck disable=SC2086 # a rule is words
      iptables -w -t mangle -C "$FAULT_CHAIN" $rule -m comment --comment "$tag" 2>/dev/null ||
        iptables -w -t mangle -A "$FAULT_CHAIN" $rule -m comment --comment "$tag"
    done
  else
    local line
    # Delete by number, highest first, every rule tagged for this node.
    while read -r line; do
      iptables -w -t mangle -D "$FAULT_CHAIN" "$line"
    done < <(iptables -w -t mangle -L "$FAULT_CHAIN" --line-numbers -n | awk -v t="/* ${tag} */" 'index($0, t) { print $1 }' | sort -rn)
  fi
}

stop_node() {
  signal_node CONT # a frozen process ignores everything until continued
  local name pid
  for name in "kubelet-${NODE_NAME}" "containerd-${NODE_NAME}"; do
    pid=$(pid_of "$name")
    [[ -n $pid ]] && kill -KILL "$pid" 2>/dev/null || true
    rm -f "${pid_dir}/${name}.pid"
  done
  node_kill_containers
}

heal_node() {
  case $1 in
    stopped)
      # The node's configuration, root and state are all kept: a restart, not a new node.
      node_start_containerd
      node_start_kubelet
      ;;
    frozen)
      freezer THAWED
      signal_node CONT
      ;;
    partitioned)
      partition_rules del
      signal_node CONT
      ;;
  esac
}

# cut_path cut|heal IP: path-cut and path-heal, recorded in fault_dir as path-IP.
cut_path() {
  local ip=$2
  [[ $ip =~ ^10\.88\.([0-9]+)\.[0-9]+$ ]] && ((BASH_REMATCH[1] >= 1)) ||
    die "${ip}: not a real node's pod address (10.88.<i+1>.x)"
  node_use "$((BASH_REMATCH[1] - 1))"
  local state_file="${fault_dir}/path-${ip}"
  if [[ $1 == cut ]]; then
    mkdir -p "$fault_dir"
    echo "cut (${NODE_NAME})" >"$state_file"
    path_rules add "$ip"
    log "${ip}: cut off from ${NODE_IP}"
  else
    path_rules del "$ip"
    rm -f "$state_file"
    log "${ip}: path healed"
  fi
}

verb=${1:-}
case $verb in
  status)
    for f in "$fault_dir"/*; do
      [[ -e $f ]] && echo "${f##*/} $(<"$f")"
    done
    exit 0
    ;;
  path-cut | path-heal)
    (($# == 2)) || usage
    cut_path "${verb#path-}" "$2"
    exit 0
    ;;
  node-stop | node-freeze | node-partition | node-heal) ;;
  *) usage ;;
esac
(($# == 2)) || usage
node=$2
index=$(node_index "$node") || die "${node}: not a real node's name (real-node-<i>)"
node_use "$index"
[[ -n $(pid_of "kubelet-${NODE_NAME}") || -e "${fault_dir}/${NODE_NAME}" ]] ||
  die "${NODE_NAME} is not running on this bed (make cluster-up; REAL_NODES)"
mkdir -p "$fault_dir"
state_file="${fault_dir}/${NODE_NAME}"
current=$(cat "$state_file" 2>/dev/null || true)
failed_component=""

want=""
case $verb in
  node-stop) want=stopped ;;
  node-freeze) want=frozen ;;
  node-partition) want=partitioned ;;
esac

if [[ $verb == node-heal ]]; then
  if [[ -z $current ]]; then
    log "${NODE_NAME}: healthy, nothing to heal"
    exit 0
  fi
  heal_node "$current"
  rm -f "$state_file"
  log "${NODE_NAME}: healed (was ${current})"
  exit 0
fi
if [[ $current == "$want" ]]; then
  log "${NODE_NAME}: already ${want}"
  exit 0
fi
[[ -z $current ]] || die "${NODE_NAME} is ${current}: heal it first (${0} node-heal ${NODE_NAME})"

# Record first: if the verb fails halfway, node-heal and cluster-down still undo it.
echo "$want" >"$state_file"
case $want in
  stopped) stop_node ;;
  frozen)
    signal_node STOP
    freezer FROZEN
    ;;
  partitioned)
    partition_rules add
    signal_node STOP
    ;;
esac
log "${NODE_NAME}: ${want}"
