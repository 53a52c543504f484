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

# Components in start order (down.sh stops them in reverse).
components=(etcd kube-apiserver kube-controller-manager kube-scheduler kwok containerd kubelet kube-proxy bed-provisioner)

# The executable each component runs: bin/NAME, or the Debian package's for the runtime.
component_exe() {
  case $1 in
    containerd) command -v containerd || echo /usr/bin/containerd ;;
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
