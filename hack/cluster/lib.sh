# shellcheck shell=bash disable=SC2034
# Shared by up.sh and down.sh: where the test bed keeps its state, and how to tell
# whether a recorded pid is still one of our processes.

cluster_here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
cluster_root=$(cd "${cluster_here}/../.." && pwd)
bin_dir=${BIN_DIR:-${cluster_root}/bin}
state_dir=${CLUSTER_DIR:-${cluster_root}/.cluster}
pid_dir="${state_dir}/pids"
log_dir="${state_dir}/logs"
pki_dir="${state_dir}/pki"

# The control plane's components in start order; each real node adds containerd-<node> and
# kubelet-<node> (node/node.sh), then kube-proxy, bed-provisioner, bed-firewall,
# bed-cert-manager and versitygw (the S3 object store) follow. down.sh stops them in reverse.
control_plane=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok)
node_components=(kube-proxy bed-provisioner bed-firewall bed-cert-manager versitygw)

# The S3 object store (versitygw, README "S3 object storage"): its fixed port on the host address
# 10.88.0.1 (outside the kernel's ephemeral range, where the other ports are picked), its state
# (data/: one directory per bucket; env: endpoint and keys for the tests; curlrc: the same for curl).
s3_port=7070
s3_dir="${state_dir}/s3"

# components NODE...: every component of a bed with these real nodes, in start order.
components() {
  local node
  printf '%s\n' "${control_plane[@]}"
  for node in "$@"; do
    printf '%s\n' "containerd-${node}" "kubelet-${node}"
  done
  printf '%s\n' "${node_components[@]}"
}

# The executable each component runs: bin/NAME, or the Debian package's for the runtime
# (containerd-<node> runs containerd, kubelet-<node> runs bin/kubelet).
component_exe() {
  case $1 in
    containerd | containerd-*) command -v containerd || echo /usr/bin/containerd ;;
    kubelet-*) echo "${bin_dir}/kubelet" ;;
    *) echo "${bin_dir}/$1" ;;
  esac
}

# pid_of NAME: the recorded pid of NAME if that process is alive and still runs our
# executable (argv[0] is bin/NAME of this checkout); otherwise nothing.
pid_of() {
  local name=$1 file="${pid_dir}/$1.pid" pid argv0
  [[ -f $file ]] || return 0
  pid=$(<"$file")
  [[ $pid =~ ^[0-9]+$ ]] || return 0
  [[ -r /proc/${pid}/cmdline ]] || return 0
  argv0=$(tr '\0' '\n' 2>/dev/null <"/proc/${pid}/cmdline" | head -n1) || return 0
  if [[ $argv0 == "$(component_exe "$name")" ]]; then
    echo "$pid"
  fi
}

# start NAME ARGS...: run NAME's executable in its own session, detached from this shell, its
# output in logs/NAME.log (appended: a node restarted by fault.sh keeps its earlier log).
# On failure, sets failed_component and exits.
start() {
  local name=$1
  shift
  log "starting ${name}"
  setsid "$(component_exe "$name")" "$@" </dev/null >>"${log_dir}/${name}.log" 2>&1 &
  local pid=$!
  echo "$pid" >"${pid_dir}/${name}.pid"
  # The background job runs bash, then setsid, then exec's the executable; on a busy machine
  # that takes a while. Wait for the exec (pid_of then knows the process) or for it to die.
  local tries
  for ((tries = 0; tries < 300; tries++)); do
    [[ -n $(pid_of "$name") ]] && return 0
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  failed_component=$name
  if kill -0 "$pid" 2>/dev/null; then
    log "${name} (pid ${pid}) did not exec $(component_exe "$name") within 30s"
    kill -KILL "$pid" 2>/dev/null || true
  else
    log "${name} exited right away"
  fi
  exit 1
}

# wait_until NAME SECONDS COMMAND...: poll COMMAND until it succeeds; fail if NAME dies or time
# runs out (sets failed_component and exits).
wait_until() {
  local name=$1 timeout=$2
  shift 2
  local deadline=$((SECONDS + timeout))
  until "$@" >/dev/null 2>&1; do
    if [[ -z $(pid_of "$name") ]]; then
      failed_component=$name
      log "${name} exited"
      exit 1
    fi
    if ((SECONDS >= deadline)); then
      failed_component=$name
      log "${name} not ready after ${timeout}s"
      exit 1
    fi
    sleep 0.5
  done
}

kubectl() { "${bin_dir}/kubectl" --kubeconfig "${state_dir}/kubeconfig" "$@"; }
