//! `make bench-backup`: what a backup Job costs (DESIGN §3o). One redis-server of the machine on
//! 127.0.0.1, filled with `--size-mb` MiB by `DEBUG POPULATE`, is backed up into the test bed's
//! bucket (versitygw) `--rounds` times by `redis-backup backup` and as many times by the plain
//! pipeline `redis-cli --rdb - | aws s3 cp - s3://...` (the AWS CLI of PyPI, `bin/aws`), one
//! after the other, alternating which goes first. Wall time from the first process started to
//! the last one ended gives MiB/s of the RDB; each process's peak RSS is its VmHWM, read from
//! /proc every few milliseconds until it exits. Then the dataset is cut to a quarter and
//! redis-backup runs once more: its peak RSS must not follow the dataset. Every object written
//! is deleted. Prints figures; asserts nothing.

use std::fmt::Write as _;
use std::path::PathBuf;
use std::process::{Child, Command, ExitCode, ExitStatus, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant, SystemTime, UNIX_EPOCH};

use clap::Parser;
use e2e::Error;
use e2e::bench::{ProfileArg, load_average, progress};
use e2e::local_redis::LocalRedis;
use e2e::operator::workspace_binary;
use e2e::repo_root;
use e2e::s3::S3Bed;

/// How often each process's VmHWM is read.
const POLL: Duration = Duration::from_millis(10);
/// Keys per `DEBUG POPULATE` (each is one blocking command of the server).
const POPULATE_CHUNK: u64 = 50_000;
/// The goals of the issue: redis-backup's throughput over the pipeline's, and its peak RSS.
const GOAL_RATIO: f64 = 0.8;
const GOAL_RSS_MIB: f64 = 64.0;
const MIB: f64 = 1024.0 * 1024.0;

#[derive(Parser, Debug)]
#[command(
    name = "bench-backup",
    about = "MiB/s and peak RSS of `redis-backup backup` vs `redis-cli --rdb - | aws s3 cp -` \
             for one local redis-server into the test bed's bucket. Prints figures; asserts \
             nothing."
)]
struct Args {
    /// MiB of values in the redis-server (`DEBUG POPULATE`, --value-size bytes each).
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(1..=65536))]
    size_mb: u64,

    /// Backups per tool.
    #[arg(long, default_value_t = 3, value_parser = clap::value_parser!(u32).range(1..=100))]
    rounds: u32,

    /// Bytes of each value.
    #[arg(long, default_value_t = 1024, value_parser = clap::value_parser!(u64).range(16..=1048576))]
    value_size: u64,

    /// The second, smaller dataset (redis-backup only, for its peak RSS) is --size-mb / this.
    #[arg(long, default_value_t = 4, value_parser = clap::value_parser!(u64).range(1..=1024))]
    smaller_by: u64,

    /// redis-backup's --part-size (the AWS CLI's default part is 8 MiB too).
    #[arg(long, default_value = "8MiB")]
    part_size: String,

    /// The AWS CLI (hack/tools/awscli.sh links it; default <repo>/bin/aws).
    #[arg(long)]
    aws: Option<PathBuf>,

    /// Longest one backup may take before its processes are killed.
    #[arg(long, default_value = "15m", value_parser = parse_duration)]
    timeout: Duration,

    #[command(flatten)]
    profile: ProfileArg,
}

/// `90s`, `15m`, `1h`, or plain seconds.
fn parse_duration(text: &str) -> Result<Duration, String> {
    let text = text.trim();
    let (number, unit) = text.split_at(
        text.find(|c: char| !c.is_ascii_digit())
            .unwrap_or(text.len()),
    );
    let n: u64 = number
        .parse()
        .map_err(|_| format!("not a duration: {text:?}"))?;
    let secs = match unit {
        "" | "s" => n,
        "m" => n * 60,
        "h" => n * 3600,
        _ => return Err(format!("not a duration (s, m, h): {text:?}")),
    };
    Ok(Duration::from_secs(secs))
}

fn main() -> ExitCode {
    let args = Args::parse();
    e2e::bench::main("bench-backup", &args.profile, || async {
        bench(&args).await.map(|()| ExitCode::SUCCESS)
    })
}

async fn bench(args: &Args) -> Result<(), Error> {
    let s3 = S3Bed::from_bed()?;
    let redis_backup = workspace_binary("redis-backup")?;
    let aws = args
        .aws
        .clone()
        .unwrap_or_else(|| repo_root().join("bin").join("aws"));
    if !aws.is_file() {
        return Err(Error::process(
            "finding the AWS CLI",
            format!(
                "{} does not exist; hack/tools/awscli.sh VERSION installs it (make bench-backup does)",
                aws.display()
            ),
        ));
    }
    let stamp = SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let run = format!("bench-backup/{}-{stamp}", std::process::id());
    let scratch = Scratch::new(&format!("bench-backup-{}", std::process::id()))?;
    let bucket = Arc::new(Bucket {
        aws,
        s3,
        home: scratch.0.clone(),
    });
    // Whatever happens from here on, nothing this run wrote stays in the shared bucket.
    let _sweep = Sweep {
        bucket: bucket.clone(),
        prefix: format!("{run}/"),
    };

    println!("== bench-backup ==");
    println!(
        "{} CPUs, load average {} (start); {}; {}; AWS CLI: {}",
        std::thread::available_parallelism().map_or(0, |n| n.get()),
        load_average(),
        first_line(&output_of(Command::new("redis-server").arg("--version"))),
        first_line(&output_of(Command::new("redis-cli").arg("--version"))),
        first_line(&output_of(bucket.aws_command().arg("--version"))),
    );
    println!(
        "redis-backup: {} (--part-size {}); bucket s3://{}/{run}/ at {}",
        redis_backup.display(),
        args.part_size,
        bucket.s3.bucket,
        bucket.s3.endpoint
    );

    let data_dir = scratch.0.join("redis");
    std::fs::create_dir_all(&data_dir)
        .map_err(|e| Error::process(format!("creating {}", data_dir.display()), e))?;
    let options: Vec<String> = [
        "--save",
        "",
        "--appendonly",
        "no",
        "--dir",
        &data_dir.display().to_string(),
        // DEBUG POPULATE's values are zeros past "value:<n>": LZF would shrink the RDB to almost
        // nothing, so the RDB holds the bytes as they are.
        "--rdbcompression",
        "no",
        // Redis 7's default: the RDB goes straight to the socket. No 5 s wait for more replicas
        // before each transfer (the default delay), which would be the same for both tools.
        "--repl-diskless-sync",
        "yes",
        "--repl-diskless-sync-delay",
        "0",
        "--enable-debug-command",
        "local",
    ]
    .map(str::to_owned)
    .to_vec();
    progress("starting redis-server");
    let server = LocalRedis::start(&options).await?;
    println!(
        "redis-server on 127.0.0.1:{}: --save '' --rdbcompression no --repl-diskless-sync yes \
         --repl-diskless-sync-delay 0",
        server.port
    );

    let full = populate(&server, args.size_mb, args.value_size).await?;
    println!("dataset: {full}");
    let ctx = Arc::new(Ctx {
        bucket: bucket.clone(),
        redis_backup,
        port: server.port,
        part_size: args.part_size.clone(),
        run: run.clone(),
        timeout: args.timeout,
    });

    let mut ours = Vec::new();
    let mut theirs = Vec::new();
    for round in 1..=args.rounds {
        let ours_first = round % 2 == 1;
        for ours_now in [ours_first, !ours_first] {
            let ctx = ctx.clone();
            let measured = if ours_now {
                blocking(move || ctx.redis_backup(&format!("redis-backup-{round}.rdb"))).await?
            } else {
                blocking(move || ctx.pipeline(&format!("aws-cli-{round}.rdb"))).await?
            };
            println!("round {round}: {}", measured.line());
            if ours_now {
                ours.push(measured);
            } else {
                theirs.push(measured);
            }
        }
    }

    let smaller_mb = (args.size_mb / args.smaller_by).max(1);
    progress("FLUSHALL");
    let mut con = connection(&server).await?;
    redis::cmd("FLUSHALL")
        .query_async::<()>(&mut con)
        .await
        .map_err(|e| Error::process("FLUSHALL", e))?;
    let small = populate(&server, smaller_mb, args.value_size).await?;
    println!("smaller dataset: {small}");
    let small_run = {
        let ctx = ctx.clone();
        blocking(move || ctx.redis_backup("redis-backup-smaller.rdb")).await?
    };
    println!("smaller: {}", small_run.line());
    drop(server);

    println!();
    report(args, &ours, &theirs, &small, &small_run);
    println!("load average {} (end)", load_average());
    Ok(())
}

fn report(
    args: &Args,
    ours: &[Measured],
    theirs: &[Measured],
    small: &Dataset,
    small_run: &Measured,
) {
    let rdb = ours.first().map_or(0, |m| m.bytes);
    println!(
        "RDB of the {} MiB dataset: {:.1} MiB ({} bytes); {} rounds each",
        args.size_mb,
        rdb as f64 / MIB,
        rdb,
        args.rounds
    );
    println!();
    println!("| tool | MiB/s median | min | max | peak RSS (MiB, max of rounds) |");
    println!("|---|---|---|---|---|");
    let (ours_median, ours_min, ours_max) = spread(ours);
    let ours_rss = max_peak(ours, 0);
    println!(
        "| redis-backup backup | {ours_median:.1} | {ours_min:.1} | {ours_max:.1} | {ours_rss:.1} |"
    );
    let (theirs_median, theirs_min, theirs_max) = spread(theirs);
    let cli_rss = max_peak(theirs, 0);
    let aws_rss = max_peak(theirs, 1);
    let sum_rss = theirs
        .iter()
        .map(|m| {
            m.peaks
                .iter()
                .map(|(_, kib)| *kib as f64 / 1024.0)
                .sum::<f64>()
        })
        .fold(0.0, f64::max);
    println!(
        "| redis-cli --rdb - \\| aws s3 cp - | {theirs_median:.1} | {theirs_min:.1} | \
         {theirs_max:.1} | aws {aws_rss:.1}, redis-cli {cli_rss:.1}, both {sum_rss:.1} |"
    );
    println!();
    let ratio = if theirs_median > 0.0 {
        ours_median / theirs_median
    } else {
        0.0
    };
    let small_rss = max_peak(std::slice::from_ref(small_run), 0);
    let worst_rss = ours_rss.max(small_rss);
    println!(
        "goal: throughput >= {GOAL_RATIO}x the pipeline's: {ratio:.2}x (median/median): {}",
        met(ratio >= GOAL_RATIO)
    );
    println!(
        "goal: peak RSS <= {GOAL_RSS_MIB:.0} MiB whatever the dataset: {worst_rss:.1} MiB: {}",
        met(worst_rss <= GOAL_RSS_MIB)
    );
    println!(
        "redis-backup's peak RSS by dataset: {:.1} MiB RDB -> {ours_rss:.1} MiB; {:.1} MiB RDB \
         ({}) -> {small_rss:.1} MiB",
        rdb as f64 / MIB,
        small_run.bytes as f64 / MIB,
        small.summary_short(),
    );
}

fn met(yes: bool) -> &'static str {
    if yes { "met" } else { "NOT met" }
}

/// Median, min and max MiB/s.
fn spread(runs: &[Measured]) -> (f64, f64, f64) {
    let mut rates: Vec<f64> = runs.iter().map(Measured::mib_per_s).collect();
    rates.sort_by(f64::total_cmp);
    if rates.is_empty() {
        return (0.0, 0.0, 0.0);
    }
    let n = rates.len();
    let median = if n % 2 == 1 {
        rates[n / 2]
    } else {
        (rates[n / 2 - 1] + rates[n / 2]) / 2.0
    };
    (median, rates[0], rates[n - 1])
}

/// The largest peak RSS (MiB) of process `index` over `runs`.
fn max_peak(runs: &[Measured], index: usize) -> f64 {
    runs.iter()
        .filter_map(|m| m.peaks.get(index))
        .map(|(_, kib)| *kib as f64 / 1024.0)
        .fold(0.0, f64::max)
}

/// What `populate` made.
struct Dataset {
    keys: u64,
    value_size: u64,
    used_memory: u64,
}

impl std::fmt::Display for Dataset {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{} keys x {} B values ({:.1} MiB of values), used_memory {:.1} MiB",
            self.keys,
            self.value_size,
            (self.keys * self.value_size) as f64 / MIB,
            self.used_memory as f64 / MIB
        )
    }
}

impl Dataset {
    fn summary_short(&self) -> String {
        format!(
            "{} keys, used_memory {:.1} MiB",
            self.keys,
            self.used_memory as f64 / MIB
        )
    }
}

/// A connection that waits for slow commands (DEBUG POPULATE) longer than the client's 500 ms.
async fn connection(server: &LocalRedis) -> Result<redis::aio::MultiplexedConnection, Error> {
    let config =
        redis::AsyncConnectionConfig::new().set_response_timeout(Some(Duration::from_secs(120)));
    redis::Client::open(format!("redis://127.0.0.1:{}/", server.port))
        .map_err(|e| Error::process("a redis client", e))?
        .get_multiplexed_async_connection_with_config(&config)
        .await
        .map_err(|e| Error::process("connecting to redis-server", e))
}

/// `DEBUG POPULATE` of about `size_mb` MiB of `value_size`-byte values, in chunks.
async fn populate(server: &LocalRedis, size_mb: u64, value_size: u64) -> Result<Dataset, Error> {
    let keys = (size_mb * 1024 * 1024 / value_size).max(1);
    progress(format!("DEBUG POPULATE {keys} keys of {value_size} B"));
    let mut con = connection(server).await?;
    let started = Instant::now();
    let mut done = 0;
    let mut chunk = 0;
    while done < keys {
        let n = POPULATE_CHUNK.min(keys - done);
        redis::cmd("DEBUG")
            .arg("POPULATE")
            .arg(n)
            .arg(format!("c{chunk}"))
            .arg(value_size)
            .query_async::<()>(&mut con)
            .await
            .map_err(|e| Error::process("DEBUG POPULATE", e))?;
        done += n;
        chunk += 1;
    }
    let info: String = redis::cmd("INFO")
        .arg("memory")
        .query_async(&mut con)
        .await
        .map_err(|e| Error::process("INFO memory", e))?;
    let used_memory = info
        .lines()
        .find_map(|l| l.strip_prefix("used_memory:"))
        .and_then(|v| v.trim().parse().ok())
        .unwrap_or(0);
    let dbsize: u64 = redis::cmd("DBSIZE")
        .query_async(&mut con)
        .await
        .map_err(|e| Error::process("DBSIZE", e))?;
    progress(format!(
        "{dbsize} keys in {:.1} s",
        started.elapsed().as_secs_f64()
    ));
    Ok(Dataset {
        keys: dbsize,
        value_size,
        used_memory,
    })
}

/// Runs blocking work (processes and their polling) off the async threads.
async fn blocking<T: Send + 'static>(
    f: impl FnOnce() -> Result<T, Error> + Send + 'static,
) -> Result<T, Error> {
    tokio::task::spawn_blocking(f)
        .await
        .map_err(|e| Error::process("a measuring thread", e))?
}

/// One backup by one tool.
struct Measured {
    tool: &'static str,
    /// The RDB's size as stored.
    bytes: u64,
    elapsed: Duration,
    /// Each process's name and peak RSS (VmHWM, KiB).
    peaks: Vec<(&'static str, u64)>,
}

impl Measured {
    fn mib_per_s(&self) -> f64 {
        self.bytes as f64 / MIB / self.elapsed.as_secs_f64().max(0.001)
    }

    fn line(&self) -> String {
        let mut line = format!(
            "{}: {:.1} MiB in {:.2} s = {:.1} MiB/s; peak RSS",
            self.tool,
            self.bytes as f64 / MIB,
            self.elapsed.as_secs_f64(),
            self.mib_per_s()
        );
        for (name, kib) in &self.peaks {
            let _ = write!(line, " {name} {:.1} MiB", *kib as f64 / 1024.0);
        }
        line
    }
}

/// What each measured run needs.
struct Ctx {
    bucket: Arc<Bucket>,
    redis_backup: PathBuf,
    port: u16,
    part_size: String,
    run: String,
    timeout: Duration,
}

impl Ctx {
    /// `redis-backup backup` into `<run>/<name>`, then the object and its checksum deleted.
    fn redis_backup(&self, name: &str) -> Result<Measured, Error> {
        let key = format!("{}/{name}", self.run);
        let s3 = &self.bucket.s3;
        let mut command = Command::new(&self.redis_backup);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .args(["backup", "--host", "127.0.0.1", "--port"])
            .arg(self.port.to_string())
            .args(["--part-size", &self.part_size])
            .arg("--result-file")
            .arg(self.bucket.home.join("redis-backup.result"))
            .env("S3_ENDPOINT", &s3.endpoint)
            .env("S3_REGION", &s3.region)
            .env("S3_BUCKET", &s3.bucket)
            .env("S3_KEY", &key)
            .env("AWS_ACCESS_KEY_ID", &s3.access_key_id)
            .env("AWS_SECRET_ACCESS_KEY", &s3.secret_access_key)
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        progress(format!("redis-backup backup -> {key}"));
        let started = Instant::now();
        let child = command
            .spawn()
            .map_err(|e| Error::process("starting redis-backup", e))?;
        let mut procs = [Watched::new("redis-backup", child)];
        let elapsed = watch(&mut procs, started, self.timeout)?;
        let [backup] = procs;
        let peaks = vec![("redis-backup", backup.peak_kib)];
        let (status, stdout, stderr) = backup.finish();
        // Its own account of the run on stderr.
        for line in stderr.lines().filter(|l| !l.trim().is_empty()) {
            progress(format!("  {line}"));
        }
        let outcome = if status.success() {
            serde_json::from_str::<serde_json::Value>(stdout.trim())
                .ok()
                .and_then(|v| v.get("size").and_then(serde_json::Value::as_u64))
                .ok_or_else(|| {
                    Error::process("redis-backup's result", format!("no size in {stdout:?}"))
                })
        } else {
            Err(Error::process(
                format!("redis-backup backup ({status})"),
                stderr.trim(),
            ))
        };
        self.bucket.remove(&key);
        self.bucket.remove(&format!("{key}.sha256"));
        Ok(Measured {
            tool: "redis-backup",
            bytes: outcome?,
            elapsed,
            peaks,
        })
    }

    /// `redis-cli --rdb - | aws s3 cp - s3://<bucket>/<run>/<name>`, then the object deleted.
    fn pipeline(&self, name: &str) -> Result<Measured, Error> {
        let key = format!("{}/{name}", self.run);
        progress(format!("redis-cli --rdb - | aws s3 cp - -> {key}"));
        let started = Instant::now();
        let mut cli = Command::new("redis-cli")
            .args([
                "-h",
                "127.0.0.1",
                "-p",
                &self.port.to_string(),
                "--rdb",
                "-",
            ])
            .stdin(Stdio::null())
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn()
            .map_err(|e| Error::process("starting redis-cli", e))?;
        let rdb = cli
            .stdout
            .take()
            .ok_or_else(|| Error::process("redis-cli", "no stdout"))?;
        let aws = self
            .bucket
            .aws_command()
            .args([
                "s3",
                "cp",
                "-",
                &self.bucket.url(&key),
                "--only-show-errors",
            ])
            .stdin(Stdio::from(rdb))
            .stdout(Stdio::piped())
            .stderr(Stdio::piped())
            .spawn();
        let aws = match aws {
            Ok(aws) => aws,
            Err(e) => {
                let _ = cli.kill();
                let _ = cli.wait();
                return Err(Error::process("starting the AWS CLI", e));
            }
        };
        let mut procs = [Watched::new("redis-cli", cli), Watched::new("aws", aws)];
        let elapsed = watch(&mut procs, started, self.timeout)?;
        let [cli, aws] = procs;
        let peaks = vec![("redis-cli", cli.peak_kib), ("aws", aws.peak_kib)];
        let (cli_status, _, cli_err) = cli.finish();
        let (aws_status, _, aws_err) = aws.finish();
        let outcome = if !cli_status.success() {
            Err(Error::process(
                format!("redis-cli --rdb - ({cli_status})"),
                cli_err.trim(),
            ))
        } else if !aws_status.success() {
            Err(Error::process(
                format!("aws s3 cp - ({aws_status})"),
                aws_err.trim(),
            ))
        } else {
            self.bucket.size(&key)
        };
        self.bucket.remove(&key);
        Ok(Measured {
            tool: "redis-cli | aws",
            bytes: outcome?,
            elapsed,
            peaks,
        })
    }
}

/// A child process and the largest VmHWM seen of it.
struct Watched {
    name: &'static str,
    child: Child,
    peak_kib: u64,
    status: Option<ExitStatus>,
}

impl Watched {
    fn new(name: &'static str, child: Child) -> Self {
        Watched {
            name,
            child,
            peak_kib: 0,
            status: None,
        }
    }

    /// Its exit status, stdout and stderr (a few lines: read once it has exited).
    fn finish(mut self) -> (ExitStatus, String, String) {
        use std::io::Read;
        let mut stdout = String::new();
        let mut stderr = String::new();
        if let Some(mut pipe) = self.child.stdout.take() {
            let _ = pipe.read_to_string(&mut stdout);
        }
        if let Some(mut pipe) = self.child.stderr.take() {
            let _ = pipe.read_to_string(&mut stderr);
        }
        // `watch` returns Ok only once every process has a status.
        let status = match self.status {
            Some(status) => status,
            None => self.child.wait().unwrap_or_default(),
        };
        (status, stdout, stderr)
    }
}

/// Polls each process's VmHWM and exit until all have exited; the wall time from `started`.
/// Past `timeout` every process still running is killed and that is an error.
fn watch(procs: &mut [Watched], started: Instant, timeout: Duration) -> Result<Duration, Error> {
    loop {
        let mut running = false;
        for p in procs.iter_mut().filter(|p| p.status.is_none()) {
            if let Some(kib) = vm_hwm_kib(p.child.id()) {
                p.peak_kib = p.peak_kib.max(kib);
            }
            match p.child.try_wait() {
                Ok(Some(status)) => p.status = Some(status),
                Ok(None) => running = true,
                Err(e) => return Err(Error::process(format!("waiting for {}", p.name), e)),
            }
        }
        let elapsed = started.elapsed();
        if !running {
            return Ok(elapsed);
        }
        if elapsed > timeout {
            for p in procs.iter_mut().filter(|p| p.status.is_none()) {
                let _ = p.child.kill();
                p.status = p.child.wait().ok();
            }
            return Err(Error::process(
                "a backup",
                format!("still running after {timeout:?} (--timeout); killed"),
            ));
        }
        std::thread::sleep(POLL);
    }
}

/// The peak resident set (VmHWM, KiB) of a running process.
fn vm_hwm_kib(pid: u32) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    status
        .lines()
        .find_map(|l| l.strip_prefix("VmHWM:"))?
        .split_whitespace()
        .next()?
        .parse()
        .ok()
}

/// The bed's bucket through the AWS CLI (also the baseline's uploader).
struct Bucket {
    aws: PathBuf,
    s3: S3Bed,
    /// HOME of the AWS CLI: no ~/.aws of the user's.
    home: PathBuf,
}

impl Bucket {
    fn aws_command(&self) -> Command {
        let mut command = Command::new(&self.aws);
        command
            .env_clear()
            .env("PATH", std::env::var_os("PATH").unwrap_or_default())
            .env("HOME", &self.home)
            .env("AWS_CONFIG_FILE", self.home.join("aws-config"))
            .env(
                "AWS_SHARED_CREDENTIALS_FILE",
                self.home.join("aws-credentials"),
            )
            .env("AWS_ACCESS_KEY_ID", &self.s3.access_key_id)
            .env("AWS_SECRET_ACCESS_KEY", &self.s3.secret_access_key)
            .env("AWS_DEFAULT_REGION", &self.s3.region)
            .args(["--endpoint-url", &self.s3.endpoint]);
        command
    }

    fn url(&self, key: &str) -> String {
        format!("s3://{}/{key}", self.s3.bucket)
    }

    /// The stored object's size.
    fn size(&self, key: &str) -> Result<u64, Error> {
        let text = run(self.aws_command().args([
            "s3api",
            "head-object",
            "--bucket",
            &self.s3.bucket,
            "--key",
            key,
            "--query",
            "ContentLength",
            "--output",
            "text",
        ]))
        .map_err(|e| Error::process(format!("HEAD {}", self.url(key)), e))?;
        text.trim()
            .parse()
            .map_err(|_| Error::process(format!("HEAD {}", self.url(key)), text.trim()))
    }

    /// Deletes one object (a failure is only said: the sweep at the end tries again).
    fn remove(&self, key: &str) {
        if let Err(e) =
            run(self
                .aws_command()
                .args(["s3", "rm", &self.url(key), "--only-show-errors"]))
        {
            progress(format!("deleting {}: {e}", self.url(key)));
        }
    }

    /// Deletes every object and aborts every multipart upload under `prefix`.
    fn sweep(&self, prefix: &str) {
        let url = self.url(prefix);
        if let Err(e) =
            run(self
                .aws_command()
                .args(["s3", "rm", "--recursive", &url, "--only-show-errors"]))
        {
            eprintln!("bench-backup: deleting {url}: {e}");
        }
        let uploads = run(self.aws_command().args([
            "s3api",
            "list-multipart-uploads",
            "--bucket",
            &self.s3.bucket,
            "--prefix",
            prefix,
            "--query",
            "Uploads[].[Key,UploadId]",
            "--output",
            "text",
        ]));
        match uploads {
            Ok(text) => {
                for line in text.lines() {
                    let Some((key, id)) = line.split_once('\t') else {
                        continue;
                    };
                    let aborted = run(self.aws_command().args([
                        "s3api",
                        "abort-multipart-upload",
                        "--bucket",
                        &self.s3.bucket,
                        "--key",
                        key,
                        "--upload-id",
                        id.trim(),
                    ]));
                    if let Err(e) = aborted {
                        eprintln!("bench-backup: aborting the upload of {key}: {e}");
                    }
                }
            }
            Err(e) => eprintln!("bench-backup: listing the uploads under {url}: {e}"),
        }
    }
}

/// Sweeps the run's prefix when dropped (the end, an error, Ctrl-C).
struct Sweep {
    bucket: Arc<Bucket>,
    prefix: String,
}

impl Drop for Sweep {
    fn drop(&mut self) {
        progress(format!(
            "deleting what is left under {}",
            self.bucket.url(&self.prefix)
        ));
        self.bucket.sweep(&self.prefix);
    }
}

/// A directory of the run's own, removed when dropped.
struct Scratch(PathBuf);

impl Scratch {
    fn new(name: &str) -> Result<Self, Error> {
        let dir = std::env::temp_dir().join(name);
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .map_err(|e| Error::process(format!("creating {}", dir.display()), e))?;
        Ok(Scratch(dir))
    }
}

impl Drop for Scratch {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

/// Runs a command to its end: its stdout, or its status and stderr.
fn run(command: &mut Command) -> Result<String, String> {
    let output = command
        .stdin(Stdio::null())
        .output()
        .map_err(|e| e.to_string())?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(format!(
            "{}: {}",
            output.status,
            String::from_utf8_lossy(&output.stderr).trim()
        ))
    }
}

/// stdout and stderr of a command, whatever its status (for versions).
fn output_of(command: &mut Command) -> String {
    command
        .stdin(Stdio::null())
        .output()
        .map(|o| {
            format!(
                "{}{}",
                String::from_utf8_lossy(&o.stdout),
                String::from_utf8_lossy(&o.stderr)
            )
        })
        .unwrap_or_else(|e| e.to_string())
}

fn first_line(text: &str) -> &str {
    text.lines().next().unwrap_or_default().trim()
}
