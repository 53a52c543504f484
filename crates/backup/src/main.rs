//! `redis-backup backup` (a Job): a full RDB of one redis-server, streamed into S3.
//! `redis-backup restore` (an init container): one backup into the data directory.
//!
//! Success: one JSON line on stdout and in `--result-file` (the container's termination
//! message). Failure: one line `<Reason>: <what happened>` on stderr and in `--result-file`,
//! exit status 1. Secrets come from the environment only (`REDIS_PASSWORD`,
//! `AWS_SECRET_ACCESS_KEY`, ...), never from flags, so they never show in a command line.

use api::backup_run::{
    BackupResult, DeleteResult, Reason, RestoreResult, env as contract_env, flag, subcommand,
};
use backup::restore::Layout;
use backup::s3::Purpose;
use backup::tls::TlsFiles;
use backup::{Error, RedisSource, RestoreOutcome, S3, S3Settings};
use clap::{ArgAction, Args, Parser, Subcommand};
use std::path::PathBuf;
use std::process::ExitCode;
use std::time::Duration;

const DEFAULT_RESULT_FILE: &str = "/dev/termination-log";

const ENV_ONLY: &str = "Environment only (never flags): REDIS_USERNAME, REDIS_PASSWORD (the \
redis-server login, backup), AWS_ACCESS_KEY_ID, AWS_SECRET_ACCESS_KEY (the bucket).";

#[derive(Parser)]
#[command(name = "redis-backup", version, about, after_help = ENV_ONLY)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand)]
enum Command {
    /// Takes a full RDB of one redis-server over the replication protocol and streams it into
    /// an S3 object (with its SHA-256 in `<key>.sha256` beside it).
    #[command(name = subcommand::BACKUP)]
    Backup(BackupArgs),
    /// Downloads a backup into a data directory that holds no dataset yet.
    #[command(name = subcommand::RESTORE)]
    Restore(RestoreArgs),
    /// Deletes a backup's object and its checksum.
    #[command(name = subcommand::DELETE)]
    Delete(DeleteArgs),
}

#[derive(Args)]
struct DeleteArgs {
    #[command(flatten)]
    s3: S3Args,
}

#[derive(Args)]
struct S3Args {
    /// S3 endpoint, e.g. http://10.88.0.1:9000 (AWS's for the region when unset).
    #[arg(long, env = contract_env::S3_ENDPOINT)]
    endpoint: Option<String>,
    /// The region the requests are signed for.
    #[arg(long, env = contract_env::S3_REGION, default_value = api::backup::DEFAULT_REGION)]
    region: String,
    /// The bucket (it must exist).
    #[arg(long, env = contract_env::S3_BUCKET)]
    bucket: String,
    /// The object's key.
    #[arg(long, env = contract_env::S3_KEY)]
    key: String,
    /// Path-style addressing (http://endpoint/bucket/key) rather than virtual-hosted.
    #[arg(long, env = contract_env::S3_FORCE_PATH_STYLE, default_value_t = true, action = ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    force_path_style: bool,
    /// Where the one-line outcome is also written (the container's termination message); a
    /// file that cannot be written is warned about.
    #[arg(long, env = "RESULT_FILE", default_value = DEFAULT_RESULT_FILE)]
    result_file: PathBuf,
}

impl S3Args {
    fn settings(&self) -> S3Settings {
        S3Settings {
            endpoint: self.endpoint.clone(),
            region: self.region.clone(),
            bucket: self.bucket.clone(),
            access_key_id: env(api::backup::ACCESS_KEY_ID_KEY),
            secret_access_key: env(api::backup::SECRET_ACCESS_KEY_KEY),
            force_path_style: self.force_path_style,
        }
    }
}

#[derive(Args)]
struct BackupArgs {
    /// The redis-server to back up (a name or an IP).
    #[arg(long = flag::HOST, env = "REDIS_HOST")]
    host: String,
    #[arg(long = flag::PORT, env = "REDIS_PORT", default_value_t = 6379)]
    port: u16,
    /// CA certificates (PEM) of the redis-server's certificate: turns TLS on.
    #[arg(long = flag::TLS_CA_FILE, env = "REDIS_TLS_CA_FILE")]
    tls_ca_file: Option<PathBuf>,
    /// Client certificate (PEM) shown to the redis-server, with --tls-key-file.
    #[arg(long = flag::TLS_CERT_FILE, env = "REDIS_TLS_CERT_FILE", requires = "tls_key_file")]
    tls_cert_file: Option<PathBuf>,
    /// The key (PEM) of --tls-cert-file.
    #[arg(long = flag::TLS_KEY_FILE, env = "REDIS_TLS_KEY_FILE", requires = "tls_cert_file")]
    tls_key_file: Option<PathBuf>,
    /// The name the redis-server's certificate must carry (default: --host).
    #[arg(long = flag::TLS_SERVER_NAME, env = "REDIS_TLS_SERVER_NAME")]
    tls_server_name: Option<String>,
    /// How long any read from the redis-server may wait for a byte (also the connection).
    #[arg(long, env = "REDIS_READ_TIMEOUT", default_value = "60s", value_parser = humantime::parse_duration)]
    read_timeout: Duration,
    /// Size of each uploaded part (5MiB..=64MiB); at most three are in memory.
    #[arg(long, env = "S3_PART_SIZE", default_value = "8MiB", value_parser = backup::parse_size)]
    part_size: usize,
    #[command(flatten)]
    s3: S3Args,
}

#[derive(Args)]
struct RestoreArgs {
    /// redis-server's `dir`: left alone when it holds <dbfilename> or <appenddirname>.
    #[arg(long = flag::DATA_DIR, env = "DATA_DIR", default_value = "/data")]
    data_dir: PathBuf,
    /// redis-server's `dbfilename`.
    #[arg(long, env = "REDIS_DBFILENAME", default_value = "dump.rdb")]
    dbfilename: String,
    /// Place the RDB as the base of Redis 7's multi-part AOF (for `appendonly yes`).
    #[arg(long = flag::APPEND_ONLY, env = "REDIS_APPENDONLY", default_value_t = false, action = ArgAction::Set,
          num_args = 0..=1, default_missing_value = "true")]
    append_only: bool,
    /// redis-server's `appendfilename`.
    #[arg(long = flag::APPENDFILENAME, env = "REDIS_APPENDFILENAME", default_value = "appendonly.aof")]
    appendfilename: String,
    /// redis-server's `appenddirname`.
    #[arg(long = flag::APPENDDIRNAME, env = "REDIS_APPENDDIRNAME", default_value = "appendonlydir")]
    appenddirname: String,
    /// The SHA-256 (hex) the object must have, as its backup's result said; when unset, the
    /// one in `<key>.sha256` beside it.
    #[arg(long = flag::EXPECTED_SHA256, env = "BACKUP_SHA256")]
    expected_sha256: Option<String>,
    #[command(flatten)]
    s3: S3Args,
}

/// How long a restore waits for the next bytes of the object.
const RESTORE_READ_TIMEOUT: Duration = Duration::from_secs(60);

fn env(name: &str) -> Option<String> {
    std::env::var(name).ok().filter(|v| !v.is_empty())
}

fn main() -> ExitCode {
    let cli = match Cli::try_parse() {
        Ok(cli) => cli,
        Err(e) if !e.use_stderr() => e.exit(), // --help, --version
        Err(e) => {
            // A Job's flags or environment are wrong: say so where the controller reads it.
            let _ = e.print();
            let text = e.to_string();
            let what = text.split("\n\n").next().unwrap_or_default();
            let what: Vec<&str> = what.split_whitespace().collect();
            let line = backup::error::one_line(
                &api::backup_run::failure_line(
                    Reason::BadConfig,
                    what.join(" ").trim_start_matches("error: "),
                ),
                backup::error::MAX_LINE,
            );
            write_result(&result_file_of_args(), &line);
            return ExitCode::from(2);
        }
    };
    backup::tls::install_provider();
    let runtime = match tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
    {
        Ok(runtime) => runtime,
        Err(e) => {
            eprintln!("Io: starting the runtime: {e}");
            return ExitCode::FAILURE;
        }
    };
    let (result_file, outcome) = match cli.command {
        Command::Backup(args) => {
            let file = args.s3.result_file.clone();
            (file, runtime.block_on(backup(args)))
        }
        Command::Restore(args) => {
            let file = args.s3.result_file.clone();
            (file, runtime.block_on(restore(args)))
        }
        Command::Delete(args) => {
            let file = args.s3.result_file.clone();
            (file, runtime.block_on(delete(args)))
        }
    };
    match outcome {
        Ok(line) => {
            println!("{line}");
            write_result(&result_file, &line);
            ExitCode::SUCCESS
        }
        Err(error) => {
            let line = error.line();
            eprintln!("{line}");
            write_result(&result_file, &line);
            ExitCode::FAILURE
        }
    }
}

/// `--result-file` (or `RESULT_FILE`) when the arguments as a whole could not be parsed.
fn result_file_of_args() -> PathBuf {
    let args: Vec<String> = std::env::args().collect();
    let given = args.iter().enumerate().find_map(|(i, arg)| {
        arg.strip_prefix("--result-file=")
            .map(str::to_owned)
            .or_else(|| (arg == "--result-file").then(|| args.get(i + 1).cloned())?)
    });
    given
        .or_else(|| env("RESULT_FILE"))
        .unwrap_or_else(|| DEFAULT_RESULT_FILE.to_owned())
        .into()
}

fn write_result(path: &std::path::Path, line: &str) {
    if let Err(e) = std::fs::write(path, format!("{line}\n")) {
        eprintln!(
            "redis-backup: warning: the result file {} was not written: {e}",
            path.display()
        );
    }
}

async fn delete(args: DeleteArgs) -> Result<String, Error> {
    let settings = args.s3.settings();
    let s3 = S3::new(settings.clone(), Purpose::Upload)?;
    s3.delete(&args.s3.key).await?;
    json(&DeleteResult {
        deleted: settings.location(&args.s3.key),
    })
}

async fn backup(args: BackupArgs) -> Result<String, Error> {
    let tls = match &args.tls_ca_file {
        None => {
            if args.tls_cert_file.is_some() {
                return Err(Error::BadConfig(
                    "--tls-cert-file needs --tls-ca-file (which turns TLS on)".to_owned(),
                ));
            }
            None
        }
        Some(ca_file) => Some(
            TlsFiles {
                ca_file: ca_file.clone(),
                client: args.tls_cert_file.clone().zip(args.tls_key_file.clone()),
                server_name: args
                    .tls_server_name
                    .clone()
                    .unwrap_or_else(|| args.host.clone()),
            }
            .load()?,
        ),
    };
    let source = RedisSource {
        host: args.host.clone(),
        port: args.port,
        username: env(contract_env::REDIS_USERNAME),
        password: env(contract_env::REDIS_PASSWORD),
        tls,
        read_timeout: args.read_timeout,
    };
    let settings = args.s3.settings();
    let s3 = S3::new(settings.clone(), Purpose::Upload)?;
    let started = std::time::Instant::now();
    let snapshot =
        backup::backup_to_s3(&source, &s3, &args.s3.key, args.part_size, stop_signal()).await?;
    let seconds = started.elapsed().as_secs_f64();
    eprintln!(
        "redis-backup: {} bytes in {seconds:.1} s ({:.1} MiB/s)",
        snapshot.size,
        snapshot.size as f64 / 1048576.0 / seconds.max(0.001)
    );
    let result = BackupResult {
        location: settings.location(&args.s3.key),
        size: snapshot.size,
        sha256: snapshot.sha256,
        replication_offset: Some(snapshot.replication_offset),
        replid: snapshot.replid,
    };
    json(&result)
}

/// SIGTERM (the Job deleted, or past its deadline) or SIGINT; never, if neither can be watched.
async fn stop_signal() {
    use tokio::signal::unix::{SignalKind, signal};
    match (
        signal(SignalKind::terminate()),
        signal(SignalKind::interrupt()),
    ) {
        (Ok(mut term), Ok(mut int)) => {
            tokio::select! {
                _ = term.recv() => {}
                _ = int.recv() => {}
            }
        }
        _ => std::future::pending().await,
    }
}

async fn restore(args: RestoreArgs) -> Result<String, Error> {
    let layout = Layout {
        data_dir: args.data_dir,
        dbfilename: args.dbfilename,
        append_only: args.append_only,
        appendfilename: args.appendfilename,
        appenddirname: args.appenddirname,
    };
    let s3 = S3::new(
        args.s3.settings(),
        Purpose::Download {
            read_timeout: RESTORE_READ_TIMEOUT,
        },
    )?;
    match backup::restore_from_s3(
        &s3,
        &args.s3.key,
        args.expected_sha256.as_deref(),
        &layout,
        RESTORE_READ_TIMEOUT,
    )
    .await?
    {
        RestoreOutcome::DataPresent => json(&RestoreResult::data_present()),
        RestoreOutcome::Restored(restored) => {
            json(&RestoreResult::restored(restored.size, restored.sha256))
        }
    }
}

fn json<T: serde::Serialize>(value: &T) -> Result<String, Error> {
    serde_json::to_string(value).map_err(|e| Error::BadConfig(format!("JSON: {e}")))
}

#[cfg(test)]
mod tests {
    use super::*;
    use api::backup_run::arg;
    use clap::CommandFactory;

    #[test]
    fn the_flags_the_controller_passes_parse() {
        Cli::command().debug_assert();
        let s3 = ["--bucket", "b", "--key", "k"].map(str::to_owned);
        let backup = [
            "redis-backup".to_owned(),
            subcommand::BACKUP.to_owned(),
            arg(flag::HOST),
            "10.0.0.1".to_owned(),
            arg(flag::PORT),
            "6380".to_owned(),
            arg(flag::TLS_CA_FILE),
            "/tls/ca.crt".to_owned(),
            arg(flag::TLS_CERT_FILE),
            "/tls/tls.crt".to_owned(),
            arg(flag::TLS_KEY_FILE),
            "/tls/tls.key".to_owned(),
            arg(flag::TLS_SERVER_NAME),
            "r.ns.svc".to_owned(),
        ];
        let parsed = Cli::try_parse_from(backup.iter().chain(&s3)).expect("parses");
        assert!(
            matches!(parsed.command, Command::Backup(a) if a.port == 6380 && a.tls_server_name.as_deref() == Some("r.ns.svc"))
        );
        let restore = [
            "redis-backup".to_owned(),
            subcommand::RESTORE.to_owned(),
            arg(flag::DATA_DIR),
            "/data".to_owned(),
            arg(flag::EXPECTED_SHA256),
            "ab".to_owned(),
            arg(flag::APPEND_ONLY),
            arg(flag::APPENDFILENAME),
            "a.aof".to_owned(),
            arg(flag::APPENDDIRNAME),
            "aof".to_owned(),
        ];
        let parsed = Cli::try_parse_from(restore.iter().chain(&s3)).expect("parses");
        assert!(
            matches!(parsed.command, Command::Restore(a) if a.append_only && a.appenddirname == "aof")
        );
        let delete = ["redis-backup".to_owned(), subcommand::DELETE.to_owned()];
        let parsed = Cli::try_parse_from(delete.iter().chain(&s3)).expect("parses");
        assert!(matches!(parsed.command, Command::Delete(_)));
    }
}
