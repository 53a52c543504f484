#!/usr/bin/env bash
# make bench-webhook: AdmissionReviews/s and p50/p99 latency over TLS with keep-alive on loopback
# of three servers under the same load:
#   - redis-webhook (this repository);
#   - the same admission rules on Go's sigs.k8s.io/controller-runtime webhook package
#     (hack/bench/controller-runtime-webhook/, built by hack/bench/controller-runtime-webhook.sh),
#     the stack a kubebuilder user knows, with every rule family, default and warning of
#     crates/api (its rules.go says where each is ported from); before it is measured it must
#     answer every review below, and several hundred more covering every rule family, exactly as
#     redis-webhook does (hack/bench/reviews.py check; its header lists what no review sends), or
#     the bench stops;
#   - a bare hyper+rustls server answering a fixed AdmissionReview (the ceiling of our stack).
# Reviews (hack/bench/reviews.py): a CREATE to /validate (the tutorial's my-op-redis), a CREATE
# to /mutate (empty spec: four defaults to add), and a realistic ~7 KiB UPDATE (object and
# oldObject with managedFields, labels, a last-applied-configuration, status) to both.
# Also each server's peak RSS under load and its time from exec to ready.
# An attack round (issue #21): the same reviews to both webhooks while ATTACK_CONNECTIONS (1000)
# slow and silent connections come from another loopback address, as from a pod
# (hack/bench/attack.py): the reviews' p99 and failures, and the webhook's peak RSS under attack.
# Prints figures; asserts nothing about them. Load stays on 127.0.0.1 and is bounded in time.
set -euo pipefail
root=$(cd "$(dirname "$0")/../.." && pwd)
cd "$root"
duration=${BENCH_DURATION:-5s}
connections=${BENCH_CONNECTIONS:-16}
rounds=${BENCH_ROUNDS:-3}
# Servers on the last core, the load generator on the others, so they do not fight for a core.
last_core=$(( $(nproc) - 1 ))
server_cpus=${BENCH_SERVER_CPUS:-$last_core}
load_cpus=${BENCH_LOAD_CPUS:-0-$(( last_core > 0 ? last_core - 1 : 0 ))}
oha=bin/oha
work=$(mktemp -d)
pids=()
cleanup() {
  for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT

free_port() { python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'; }
now_ns() { date +%s%N; }

echo ">> building release binaries"
cargo build --release --locked -q -p webhook --bin redis-webhook --example bare_tls_server
target_dir=${CARGO_TARGET_DIR:-target}
webhook=$target_dir/release/redis-webhook
bare=$target_dir/release/examples/bare_tls_server
cr_webhook=$(hack/bench/controller-runtime-webhook.sh)
"$webhook" gen-certs --out "$work/certs" --dns localhost --ip 127.0.0.1 >/dev/null
python3 hack/bench/reviews.py write "$work/reviews"
kib() { python3 -c "import os, sys; print(f'{os.path.getsize(sys.argv[1]) / 1024:.1f}')" "$1"; }

# Start each server pinned to the server CPU and time exec -> ready (each one's own readiness
# check: redis-webhook's and controller-runtime's plain-HTTP /readyz, whose check dials the TLS
# port; for the bare server, a completed HTTPS request).
tls=(--tls-cert-file "$work/certs/tls.crt" --tls-key-file "$work/certs/tls.key")
port=$(free_port) ops=$(free_port)
start_ns=$(now_ns)
taskset -c "$server_cpus" "$webhook" --bind "127.0.0.1:$port" --metrics-bind "127.0.0.1:$ops" "${tls[@]}" 2>"$work/webhook.log" &
webhook_pid=$!
pids+=("$webhook_pid")
until curl -sf "http://127.0.0.1:$ops/readyz" >/dev/null; do sleep 0.002; done
webhook_ready_ms=$(( ($(now_ns) - start_ns) / 1000000 ))

cr_port=$(free_port) cr_ops=$(free_port)
start_ns=$(now_ns)
taskset -c "$server_cpus" "$cr_webhook" --bind "127.0.0.1:$cr_port" --metrics-bind "127.0.0.1:$cr_ops" "${tls[@]}" 2>"$work/cr-webhook.log" &
cr_pid=$!
pids+=("$cr_pid")
until curl -sf "http://127.0.0.1:$cr_ops/readyz" >/dev/null; do
  kill -0 "$cr_pid" 2>/dev/null || { cat "$work/cr-webhook.log" >&2; echo "controller-runtime-webhook exited" >&2; exit 1; }
  sleep 0.002
done
cr_ready_ms=$(( ($(now_ns) - start_ns) / 1000000 ))

bare_port=$(free_port)
start_ns=$(now_ns)
taskset -c "$server_cpus" "$bare" "127.0.0.1:$bare_port" "$work/certs/tls.crt" "$work/certs/tls.key" &
bare_pid=$!
pids+=("$bare_pid")
until curl -sk -o /dev/null "https://127.0.0.1:$bare_port/"; do sleep 0.002; done
bare_ready_ms=$(( ($(now_ns) - start_ns) / 1000000 ))

echo ">> checking that controller-runtime-webhook answers as redis-webhook does"
python3 hack/bench/reviews.py check "$work/reviews" "$work/certs/ca.crt" \
  "https://localhost:$port" "https://localhost:$cr_port"

load() { # load URL BODY -> "rps p50_ms p99_ms"
  taskset -c "$load_cpus" "$oha" --no-tui --output-format json -z "$duration" -c "$connections" --insecure \
    -m POST -T application/json -D "$2" "$1" >"$work/out.json"
  python3 - "$work/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
codes = r.get("statusCodeDistribution", {})
bad = sum(v for k, v in codes.items() if k != "200")
if bad or r["summary"].get("successRate", 1) < 1:
    sys.exit(f"non-200 answers under load: {codes}")
p = r["latencyPercentiles"]
print(f'{r["summary"]["requestsPerSec"]:.0f} {p["p50"]*1000:.3f} {p["p99"]*1000:.3f}')
PY
}

# Runs: NAME URL BODY. The bare server reads each body and ignores it: its two runs give the
# ceiling for a small and for a ~7 KiB request.
runs=(
  "bare-create https://127.0.0.1:$bare_port/validate $work/reviews/validate.json"
  "bare-update https://127.0.0.1:$bare_port/validate $work/reviews/update.json"
)
for t in ours:$port cr:$cr_port; do
  runs+=(
    "${t%%:*}-validate-create https://127.0.0.1:${t#*:}/validate $work/reviews/validate.json"
    "${t%%:*}-mutate-create https://127.0.0.1:${t#*:}/mutate $work/reviews/mutate.json"
    "${t%%:*}-validate-update https://127.0.0.1:${t#*:}/validate $work/reviews/update.json"
    "${t%%:*}-mutate-update https://127.0.0.1:${t#*:}/mutate $work/reviews/update.json"
  )
done
echo ">> load: $connections keep-alive connections, $rounds rounds of $duration per run, interleaved;"
echo "   servers pinned to CPU $server_cpus, oha to CPU $load_cpus; the median round (by reviews/s) is reported"
for run in "${runs[@]}"; do : >"$work/${run%% *}.rounds"; done
for _ in $(seq "$rounds"); do
  for run in "${runs[@]}"; do
    read -r name url body <<<"$run"
    load "$url" "$body" >>"$work/$name.rounds"
  done
done
median() { sort -n "$1" | awk '{ rows[NR] = $0 } END { print rows[int((NR + 1) / 2)] }'; }
rss_mib() { awk '/VmHWM/ { printf "%.1f", $2 / 1024 }' "/proc/$1/status"; }
ratio() { python3 -c "import sys; a, b = map(float, sys.argv[1:]); print(f'{a / b:.2f}' if b else '-')" "$1" "$2"; }

declare -A rps p50 p99
for run in "${runs[@]}"; do
  name=${run%% *}
  read -r rps[$name] p50[$name] p99[$name] < <(median "$work/$name.rounds")
done
webhook_rss=$(rss_mib "$webhook_pid") cr_rss=$(rss_mib "$cr_pid") bare_rss=$(rss_mib "$bare_pid")

create_kib=$(kib "$work/reviews/validate.json") update_kib=$(kib "$work/reviews/update.json")
printf '\n%-34s %-26s %10s %9s %9s %8s\n' "target" "review" "reviews/s" "p50 ms" "p99 ms" "vs bare"
row() { # row LABEL REVIEW RUN BARE_RUN
  printf '%-34s %-26s %10s %9s %9s %8s\n' "$1" "$2" "${rps[$3]}" "${p50[$3]}" "${p99[$3]}" "$(ratio "${rps[$3]}" "${rps[$4]}")"
}
row "bare hyper+rustls (ceiling)" "CREATE (${create_kib} KiB)" bare-create bare-create
row "bare hyper+rustls (ceiling)" "UPDATE (${update_kib} KiB)" bare-update bare-update
for t in ours:redis-webhook cr:controller-runtime; do
  row "${t#*:} /validate" "CREATE my-op-redis" "${t%%:*}-validate-create" bare-create
  row "${t#*:} /mutate" "CREATE empty spec (patch)" "${t%%:*}-mutate-create" bare-create
  row "${t#*:} /validate" "UPDATE replicas 3->5" "${t%%:*}-validate-update" bare-update
  row "${t#*:} /mutate" "UPDATE (no patch)" "${t%%:*}-mutate-update" bare-update
done

printf '\n%-34s %-26s %14s %14s\n' "redis-webhook / controller-runtime" "review" "reviews/s" "p99 latency"
for r in validate-create:"/validate CREATE" mutate-create:"/mutate CREATE" validate-update:"/validate UPDATE" mutate-update:"/mutate UPDATE"; do
  printf '%-34s %-26s %13sx %13sx\n' "" "${r#*:}" "$(ratio "${rps[ours-${r%%:*}]}" "${rps[cr-${r%%:*}]}")" \
    "$(ratio "${p99[ours-${r%%:*}]}" "${p99[cr-${r%%:*}]}")"
done

echo "(reviews/s above 1: redis-webhook answers more; p99 below 1: redis-webhook's slowest answers are faster)"

printf '\n%-34s %18s %14s\n' "process" "peak RSS (MiB)" "exec->ready ms"
printf '%-34s %18s %14s\n' "bare hyper+rustls" "$bare_rss" "$bare_ready_ms"
printf '%-34s %18s %14s\n' "redis-webhook" "$webhook_rss" "$webhook_ready_ms"
printf '%-34s %18s %14s\n' "controller-runtime-webhook" "$cr_rss" "$cr_ready_ms"
printf 'RSS ratio redis-webhook / controller-runtime: %sx; redis-webhook / bare: %sx\n' \
  "$(ratio "$webhook_rss" "$cr_rss")" "$(ratio "$webhook_rss" "$bare_rss")"

# The attack round: reviews from 127.0.0.1 (the API server) while 127.0.0.2 (a pod) attacks.
attack_connections=${ATTACK_CONNECTIONS:-1000}
attack_seconds=$(( ${duration%s} + 4 ))
ulimit -n 65536 2>/dev/null || true
# Normal traffic, not saturation: ATTACK_RATE reviews/s (the p99 of a saturated server is its queue).
attack_rate=${ATTACK_RATE:-500}
load_counting() { # load_counting URL BODY -> "rps p50_ms p99_ms failed"
  taskset -c "$load_cpus" "$oha" --no-tui --output-format json -z "$duration" -c "$connections" -q "$attack_rate" --insecure \
    -m POST -T application/json -D "$2" "$1" >"$work/out.json"
  python3 - "$work/out.json" <<'PY'
import json, sys
r = json.load(open(sys.argv[1]))
codes = r.get("statusCodeDistribution", {})
ok = codes.get("200", 0)
# oha cancels the requests in flight when the duration ends: not the server's failures.
errors = sum(v for k, v in r.get("errorDistribution", {}).items() if "deadline" not in k.lower())
failed = sum(v for k, v in codes.items() if k != "200") + errors
p = r["latencyPercentiles"]
print(f'{r["summary"]["requestsPerSec"]:.0f} {p["p50"]*1000:.3f} {p["p99"]*1000:.3f} {failed}')
PY
}
echo
echo ">> attack: $attack_connections slow and silent connections from 127.0.0.2 (silent TCP, silent after TLS,"
echo "   trickled headers, trickled body) while $connections connections from 127.0.0.1 send $attack_rate /validate CREATE/s"
echo "   for $duration; first the same without the attack"
printf '%-34s %-8s %10s %9s %9s %8s %18s %16s\n' "target" "attack" "reviews/s" "p50 ms" "p99 ms" "failed" "peak RSS (MiB)" "attack opened"
for t in ours:$port:$webhook_pid:redis-webhook cr:$cr_port:$cr_pid:controller-runtime; do
  IFS=: read -r key target_port target_pid label <<<"$t"
  echo 5 >"/proc/$target_pid/clear_refs" 2>/dev/null || true
  read -r a_rps a_p50 a_p99 a_failed < <(load_counting "https://127.0.0.1:$target_port/validate" "$work/reviews/validate.json")
  printf '%-34s %-8s %10s %9s %9s %8s %18s %16s\n' "$label /validate" "none" "$a_rps" "$a_p50" "$a_p99" "$a_failed" "$(rss_mib "$target_pid")" "-"
  echo 5 >"/proc/$target_pid/clear_refs" 2>/dev/null || true
  taskset -c "$load_cpus" python3 hack/bench/attack.py 127.0.0.1 "$target_port" "$attack_connections" "$attack_seconds" \
    >"$work/attack-$key.out" &
  attack_pid=$!
  sleep 3
  read -r a_rps a_p50 a_p99 a_failed < <(load_counting "https://127.0.0.1:$target_port/validate" "$work/reviews/validate.json")
  wait "$attack_pid" || true
  read -r opened _closed <"$work/attack-$key.out" || opened=-
  printf '%-34s %-8s %10s %9s %9s %8s %18s %16s\n' "$label /validate" "$attack_connections" "$a_rps" "$a_p50" "$a_p99" "$a_failed" "$(rss_mib "$target_pid")" "$opened"
done

printf '\nrounds (reviews/s):\n'
for run in "${runs[@]}"; do
  printf '  %-22s %s\n' "${run%% *}" "$(cut -d' ' -f1 "$work/${run%% *}.rounds" | xargs)"
done
