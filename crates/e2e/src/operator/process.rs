//! Processes of the harness: the workspace's binaries, kubectl, loopback ports and HTTP.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::Error;
use crate::cluster::{Cluster, repo_root};

/// Set to `release` to run the operator from `target/release` (benchmarks) instead of
/// `target/debug`.
pub const PROFILE_ENV: &str = "E2E_PROFILE";

/// A binary of this workspace, built by `cargo build --bins` (`make e2e` does it first), or by
/// `cargo build --release --bins` when `E2E_PROFILE=release`.
pub fn workspace_binary(name: &str) -> Result<PathBuf, Error> {
    let target = std::env::var_os("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|| repo_root().join("target"));
    let release = std::env::var(PROFILE_ENV).is_ok_and(|p| p == "release");
    let (profile, build) = if release {
        (
            "release",
            "`cargo build --release --bins` (make bench-controller does)",
        )
    } else {
        ("debug", "`cargo build --bins` (make e2e does)")
    };
    let path = target.join(profile).join(name);
    if path.is_file() {
        Ok(path)
    } else {
        Err(Error::process(
            format!("finding {name}"),
            format!("{} does not exist; build it with {build}", path.display()),
        ))
    }
}

/// `kubectl` from the test bed's `bin/`, else from PATH.
pub fn kubectl() -> PathBuf {
    let bed = repo_root().join("bin").join("kubectl");
    if bed.is_file() {
        bed
    } else {
        PathBuf::from("kubectl")
    }
}

/// Runs kubectl against the cluster under test; returns stdout, or stderr as the error.
pub fn run_kubectl(cluster: &Cluster, args: &[&str]) -> Result<String, String> {
    let output = Command::new(kubectl())
        .env("KUBECONFIG", cluster.kubeconfig())
        .args(args)
        .output()
        .map_err(|e| format!("running kubectl: {e}"))?;
    if output.status.success() {
        Ok(String::from_utf8_lossy(&output.stdout).into_owned())
    } else {
        Err(String::from_utf8_lossy(&output.stderr).into_owned())
    }
}

/// A free TCP port on 127.0.0.1.
pub fn free_port() -> Result<u16, Error> {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|l| l.local_addr())
        .map(|a| a.port())
        .map_err(|e| Error::process("finding a free port", e))
}

/// GET `path` on a plain-HTTP 127.0.0.1 port: (status code, body).
pub async fn http_get(port: u16, path: &str) -> Result<(u16, String), String> {
    use tokio::io::{AsyncReadExt, AsyncWriteExt};
    let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", port))
        .await
        .map_err(|e| e.to_string())?;
    let request = format!("GET {path} HTTP/1.0\r\nHost: 127.0.0.1\r\n\r\n");
    stream
        .write_all(request.as_bytes())
        .await
        .map_err(|e| e.to_string())?;
    let mut response = String::new();
    stream
        .read_to_string(&mut response)
        .await
        .map_err(|e| e.to_string())?;
    let code = response
        .split_whitespace()
        .nth(1)
        .and_then(|c| c.parse().ok())
        .ok_or("no status line")?;
    let body = response
        .split_once("\r\n\r\n")
        .map(|(_, b)| b.to_owned())
        .unwrap_or_default();
    Ok((code, body))
}

/// A child process killed when the guard drops; its stderr goes to a log file kept for debugging.
pub struct Process {
    pub name: String,
    child: Child,
    pub log: PathBuf,
}

impl Process {
    pub(super) fn spawn(name: &str, mut command: Command, log_dir: &Path) -> Result<Self, Error> {
        std::fs::create_dir_all(log_dir)
            .map_err(|e| Error::process(format!("creating {}", log_dir.display()), e))?;
        let log = log_dir.join(format!("{name}.log"));
        let file = std::fs::File::create(&log)
            .map_err(|e| Error::process(format!("creating {}", log.display()), e))?;
        let child = command
            .stdout(Stdio::null())
            .stderr(file)
            .spawn()
            .map_err(|e| Error::process(format!("starting {name}"), e))?;
        Ok(Process {
            name: name.to_owned(),
            child,
            log,
        })
    }

    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// SIGKILL, as a crash would.
    pub fn kill(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// SIGTERM and wait for the exit status.
    pub fn terminate(&mut self) -> Result<std::process::ExitStatus, Error> {
        let pid = self.child.id().to_string();
        Command::new("kill")
            .args(["-TERM", &pid])
            .status()
            .map_err(|e| Error::process("sending SIGTERM", e))?;
        self.child
            .wait()
            .map_err(|e| Error::process(format!("waiting for {}", self.name), e))
    }

    /// Whether it is still running (false once it exited).
    pub fn running(&mut self) -> bool {
        matches!(self.child.try_wait(), Ok(None))
    }

    /// The tail of its log, for failure messages.
    pub fn log_tail(&self) -> String {
        let text = std::fs::read_to_string(&self.log).unwrap_or_default();
        let lines: Vec<_> = text.lines().collect();
        lines[lines.len().saturating_sub(20)..].join("\n")
    }
}

impl Drop for Process {
    fn drop(&mut self) {
        self.kill();
    }
}

/// Where the operator processes of a test namespace log (and the flight recorder writes).
pub fn log_dir(namespace: &str) -> PathBuf {
    repo_root().join("target").join("e2e-logs").join(namespace)
}
