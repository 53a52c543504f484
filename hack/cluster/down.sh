#!/usr/bin/env bash
# Stops the test bed started by up.sh and removes its state (<repo>/.cluster/).
# Only the processes recorded in .cluster/pids/ are stopped, and only while they still run
# this checkout's bin/ executables. KEEP_STATE=1 keeps .cluster/ (up.sh uses it on failure,
# so the logs stay readable).
set -euo pipefail
# shellcheck source-path=SCRIPTDIR

# shellcheck source=lib.sh
source "$(dirname "${BASH_SOURCE[0]}")/lib.sh"
# shellcheck source=node/node.sh
source "${cluster_here}/node/node.sh"

log() { printf '[cluster-down] %s\n' "$*" >&2; }

# A frozen node's processes (fault.sh node-freeze) cannot die until thawed and continued.
node_thaw_all
for name in $(node_names); do
  for pid in $(pid_of "kubelet-${name}") $(pid_of "containerd-${name}"); do
    kill -CONT "$pid" 2>/dev/null || true
  done
done

mapfile -t all < <(components $(node_names))
stopped=0
for ((i = ${#all[@]} - 1; i >= 0; i--)); do
  name=${all[i]}
  pid=$(pid_of "$name")
  if [[ -z $pid ]]; then
    rm -f "${pid_dir}/${name}.pid"
    continue
  fi
  log "stopping ${name} (pid ${pid})"
  kill -TERM "$pid" 2>/dev/null || true
  # versitygw gives requests in flight up to 10 s to finish before it exits.
  grace=10
  [[ $name != versitygw ]] || grace=20
  for _ in $(seq 1 $((grace * 10))); do
    [[ -n $(pid_of "$name") ]] || break
    sleep 0.1
  done
  if [[ -n $(pid_of "$name") ]]; then
    log "${name} ignored SIGTERM for ${grace}s; sending SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
  fi
  rm -f "${pid_dir}/${name}.pid"
  stopped=$((stopped + 1))
done

# What the real nodes leave behind once their processes are gone: containers, mounts, pod
# network namespaces, cgroups, iptables chains (fault.sh's too), the bridges.
node_cleanup

if [[ ${KEEP_STATE:-} == 1 ]]; then
  exit 0
fi
if [[ -d $state_dir ]]; then
  rm -rf "$state_dir"
  log "stopped ${stopped} processes and removed ${state_dir}"
else
  log "nothing to do: no test bed in ${state_dir}"
fi
