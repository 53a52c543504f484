//! `make bench-tls`: what TLS costs a Redis (DESIGN §3k). One pod of a Redis with `spec.tls` and
//! a `plaintextPort` on the test bed's real node; Debian's `redis-benchmark` on the machine runs
//! SET and GET against that pod's TLS port and its plaintext port, same server, same data, one
//! after the other. Prints requests per second of each and their ratio; asserts nothing.

use std::process::{ExitCode, Stdio};
use std::time::Duration;

use api::Redis;
use clap::Parser;
use e2e::bench::{ProfileArg, load_average, progress};
use e2e::certs::{TestCa, redis_dns_names};
use e2e::node::{self, REDIS_IMAGE};
use e2e::operator::Operator;
use e2e::pods;
use e2e::{Cluster, Context, Error, NamespaceOptions, seen, wait_for};
use k8s_openapi::api::core::v1::{Pod, Secret};
use kube::api::{Api, PostParams};

const NAME: &str = "bench-tls";
const TLS_PORT: u16 = 6379;
const PLAIN_PORT: u16 = 6380;
const CONVERGE: Duration = Duration::from_secs(180);

#[derive(Parser, Debug)]
#[command(
    name = "bench-tls",
    about = "SET and GET throughput of one Redis pod over TLS vs plaintext (its plaintextPort), \
             with Debian's redis-benchmark on the local test bed. Prints figures; asserts nothing."
)]
struct Args {
    /// Requests per test (redis-benchmark -n).
    #[arg(long, default_value_t = 100_000)]
    requests: u32,

    /// Parallel connections (redis-benchmark -c).
    #[arg(long, default_value_t = 50)]
    clients: u32,

    /// Pipelined requests per connection (redis-benchmark -P).
    #[arg(long, default_value_t = 1)]
    pipeline: u32,

    #[command(flatten)]
    profile: ProfileArg,
}

fn main() -> ExitCode {
    let args = Args::parse();
    e2e::bench::main("bench-tls", &args.profile, || async {
        bench(&args).await.map(|()| ExitCode::SUCCESS)
    })
}

async fn bench(args: &Args) -> Result<(), Error> {
    println!("== bench-tls ==");
    println!(
        "{} CPUs, load average {}; redis-benchmark -t set,get -n {} -c {} -P {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average(),
        args.requests,
        args.clients,
        args.pipeline
    );
    let cluster = Cluster::connect().await?;
    node::require_real_node(&cluster).await?;
    let ns = cluster
        .namespace_with(
            "bench-tls",
            NamespaceOptions::default()
                .pod_security("restricted")
                .real_node(),
        )
        .await?;
    progress(format!("starting the operator for namespace {}", ns.name()));
    let _operator = Operator::start(&cluster, &ns).await?;

    let ca = TestCa::new("bench-tls CA")?;
    let issued = ca.issue(&redis_dns_names(NAME, ns.name()))?;
    let dir = std::env::temp_dir().join(format!("bench-tls-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::process("a directory", e))?;
    let ca_file = dir.join("ca.crt");
    std::fs::write(&ca_file, ca.pem()).map_err(|e| Error::process("writing ca.crt", e))?;
    let secrets: Api<Secret> = ns.api();
    let secret = Secret {
        metadata: kube::api::ObjectMeta {
            name: Some("bench-tls".into()),
            ..Default::default()
        },
        type_: Some("kubernetes.io/tls".into()),
        data: Some(ca.secret_data(&issued)),
        ..Secret::default()
    };
    secrets
        .create(&PostParams::default(), &secret)
        .await
        .context("creating the TLS Secret")?;
    let spec = serde_json::from_value(serde_json::json!({
        "replicas": 1,
        "image": REDIS_IMAGE,
        "port": TLS_PORT,
        "tls": {"secretRef": {"name": "bench-tls"}, "plaintextPort": PLAIN_PORT},
    }))
    .map_err(|e| Error::process("the spec", e))?;
    let redis: Api<Redis> = ns.api();
    redis
        .create(&PostParams::default(), &Redis::new(NAME, spec))
        .await
        .context("creating the Redis")?;
    progress("waiting for the pod");
    let pods: Api<Pod> = ns.api();
    let ip = wait_for("the Redis pod Ready", CONVERGE, || async {
        let pod = pods.get(&format!("{NAME}-0")).await.map_err(seen)?;
        match pods::ip(&pod) {
            Some(ip) if e2e::pods::is_ready(&pod) => Ok(ip.to_owned()),
            _ => Err(e2e::pods::describe(&pod)),
        }
    })
    .await?;

    let ca_path = ca_file.display().to_string();
    let plain = run(args, &ip, PLAIN_PORT, &[]).await?;
    let tls = run(args, &ip, TLS_PORT, &["--tls", "--cacert", &ca_path]).await?;
    let _ = std::fs::remove_dir_all(&dir);
    println!();
    println!("| test | plaintext (req/s) | TLS (req/s) | TLS / plaintext |");
    println!("|---|---|---|---|");
    for (test, plain_rps) in &plain {
        let tls_rps = tls.iter().find(|(t, _)| t == test).map_or(0.0, |(_, r)| *r);
        let ratio = if *plain_rps > 0.0 {
            tls_rps / plain_rps
        } else {
            0.0
        };
        println!("| {test} | {plain_rps:.0} | {tls_rps:.0} | {ratio:.2} |");
    }
    Ok(())
}

/// `redis-benchmark -t set,get` against host:port: requests per second of each test.
async fn run(
    args: &Args,
    host: &str,
    port: u16,
    extra: &[&str],
) -> Result<Vec<(String, f64)>, Error> {
    progress(format!("redis-benchmark against {host}:{port} {extra:?}"));
    let output = tokio::process::Command::new("redis-benchmark")
        .args(["-h", host, "-p", &port.to_string()])
        .args(extra)
        .args(["-t", "set,get", "-q"])
        .args(["-n", &args.requests.to_string()])
        .args(["-c", &args.clients.to_string()])
        .args(["-P", &args.pipeline.to_string()])
        .stdin(Stdio::null())
        .kill_on_drop(true)
        .output()
        .await
        .map_err(|e| Error::process("running redis-benchmark (Debian's redis-tools)", e))?;
    let stdout = String::from_utf8_lossy(&output.stdout);
    // `-q` prints "SET: 81234.56 requests per second, p50=0.303 msec" per test, after
    // carriage-return progress lines.
    let results: Vec<(String, f64)> = stdout
        .split(['\n', '\r'])
        .filter_map(|line| {
            let (test, rest) = line.split_once(": ")?;
            let rps = rest.split_whitespace().next()?.parse().ok()?;
            rest.contains("requests per second")
                .then(|| (test.trim().to_owned(), rps))
        })
        .collect();
    if results.is_empty() {
        return Err(Error::process(
            format!("redis-benchmark against {host}:{port}"),
            format!("{stdout} {}", String::from_utf8_lossy(&output.stderr)),
        ));
    }
    Ok(results)
}
