#!/usr/bin/env bash
# make bench-webhook: AdmissionReviews/s and p50/p99 latency of redis-webhook over TLS with
# keep-alive on loopback, for /validate and /mutate, beside a bare hyper+rustls server answering
# a fixed AdmissionReview (the ceiling of this stack); also RSS under load and exec-to-ready time.
# Prints figures; asserts nothing. Load stays on 127.0.0.1 and is bounded in time.
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

echo ">> building release binaries"
cargo build --release --locked -q -p webhook --bin redis-webhook --example bare_tls_server
webhook=target/release/redis-webhook
bare=target/release/examples/bare_tls_server
"$webhook" gen-certs --out "$work/certs" --dns localhost --ip 127.0.0.1 >/dev/null

review() { # review NAME SPEC_JSON
  cat <<JSON
{"apiVersion":"admission.k8s.io/v1","kind":"AdmissionReview","request":{"uid":"bench-$1","kind":{"group":"myapp.tangx.in","version":"v1","kind":"Redis"},"resource":{"group":"myapp.tangx.in","version":"v1","resource":"redis"},"name":"$1","namespace":"default","operation":"CREATE","userInfo":{"username":"bench","groups":["system:authenticated"]},"object":{"apiVersion":"myapp.tangx.in/v1","kind":"Redis","metadata":{"name":"$1","namespace":"default"},"spec":$2},"oldObject":null,"dryRun":false,"options":{"apiVersion":"meta.k8s.io/v1","kind":"CreateOptions"}}}
JSON
}
review my-op-redis '{"replicas":2,"image":"redis:5-alpine","port":8333,"imagePullPolicy":"IfNotPresent"}' >"$work/validate.json"
review defaults '{}' >"$work/mutate.json"

port=$(free_port) ops=$(free_port) bare_port=$(free_port)
start_ns=$(date +%s%N)
taskset -c "$server_cpus" "$webhook" --bind "127.0.0.1:$port" --metrics-bind "127.0.0.1:$ops" \
  --tls-cert-file "$work/certs/tls.crt" --tls-key-file "$work/certs/tls.key" 2>"$work/webhook.log" &
webhook_pid=$!
pids+=("$webhook_pid")
until curl -sf "http://127.0.0.1:$ops/readyz" >/dev/null; do sleep 0.002; done
ready_ms=$(( ($(date +%s%N) - start_ns) / 1000000 ))
taskset -c "$server_cpus" "$bare" "127.0.0.1:$bare_port" "$work/certs/tls.crt" "$work/certs/tls.key" &
pids+=("$!")
until curl -sk -o /dev/null "https://127.0.0.1:$bare_port/"; do sleep 0.01; done

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

echo ">> load: $connections keep-alive connections, $rounds rounds of $duration per target, interleaved;"
echo "   servers pinned to CPU $server_cpus, oha to CPU $load_cpus; the median round is reported"
for target in bare validate mutate; do : >"$work/$target.rounds"; done
for _ in $(seq "$rounds"); do
  load "https://127.0.0.1:$bare_port/validate" "$work/validate.json" >>"$work/bare.rounds"
  load "https://127.0.0.1:$port/validate" "$work/validate.json" >>"$work/validate.rounds"
  load "https://127.0.0.1:$port/mutate" "$work/mutate.json" >>"$work/mutate.rounds"
done
median() { sort -n "$1" | awk '{ rows[NR] = $0 } END { print rows[int((NR + 1) / 2)] }'; }
read -r bare_rps bare_p50 bare_p99 < <(median "$work/bare.rounds")
read -r val_rps val_p50 val_p99 < <(median "$work/validate.rounds")
read -r mut_rps mut_p50 mut_p99 < <(median "$work/mutate.rounds")
rss_kb=$(awk '/VmHWM/ {print $2}' "/proc/$webhook_pid/status")

printf '\n%-28s %12s %10s %10s %8s\n' "target" "reviews/s" "p50 ms" "p99 ms" "ratio"
printf '%-28s %12s %10s %10s %8s\n' "bare hyper+rustls (ceiling)" "$bare_rps" "$bare_p50" "$bare_p99" "1.00"
printf '%-28s %12s %10s %10s %8.2f\n' "redis-webhook /validate" "$val_rps" "$val_p50" "$val_p99" "$(python3 -c "print($val_rps/$bare_rps)")"
printf '%-28s %12s %10s %10s %8.2f\n' "redis-webhook /mutate" "$mut_rps" "$mut_p50" "$mut_p99" "$(python3 -c "print($mut_rps/$bare_rps)")"
printf '\nrounds (reviews/s): bare %s; validate %s; mutate %s\n' "$(cut -d' ' -f1 "$work/bare.rounds" | xargs)" \
  "$(cut -d' ' -f1 "$work/validate.rounds" | xargs)" "$(cut -d' ' -f1 "$work/mutate.rounds" | xargs)"
printf 'redis-webhook peak RSS under load: %s MiB; exec to ready: %s ms\n' "$(( rss_kb / 1024 ))" "$ready_ms"
