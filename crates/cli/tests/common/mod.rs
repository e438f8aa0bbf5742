//! What the tests that run `permafrost serve` in a child process share: a free port, the
//! server (killed when dropped), its peak resident memory, and a client that waits for it.

#![allow(dead_code)]

use std::net::TcpListener;
use std::path::Path;
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

use tokio_postgres::{Client, NoTls};

pub fn free_port() -> u16 {
    TcpListener::bind("127.0.0.1:0").unwrap().local_addr().unwrap().port()
}

/// A `permafrost serve` child process, killed when dropped.
pub struct Server(pub Child);

impl Drop for Server {
    fn drop(&mut self) {
        let _ = self.0.kill();
        let _ = self.0.wait();
    }
}

impl Server {
    /// Starts `permafrost serve` on `port` over `dir` with two partitions, the metrics
    /// listener off and `args`.
    pub fn start(dir: &Path, port: u16, args: &[&str]) -> Server {
        let child = Command::new(env!("CARGO_BIN_EXE_permafrost"))
            .args([
                "serve",
                "--listen",
                &format!("127.0.0.1:{port}"),
                "--metrics-listen",
                "off",
            ])
            .args(["--partitions", "2"])
            .args(args)
            .arg("--data-dir")
            .arg(dir)
            .stdin(Stdio::null())
            .stdout(Stdio::null())
            .stderr(Stdio::null())
            .spawn()
            .expect("the permafrost binary starts");
        Server(child)
    }

    /// Peak resident memory so far (VmHWM), in bytes.
    pub fn peak(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.0.id())).unwrap();
        let kb: u64 = status
            .lines()
            .find_map(|l| l.strip_prefix("VmHWM:"))
            .and_then(|v| v.split_whitespace().next())
            .and_then(|v| v.parse().ok())
            .expect("VmHWM");
        kb * 1024
    }
}

/// A client of the server on `port`, once it accepts connections (within a minute).
pub async fn connect(port: u16) -> Client {
    let deadline = Instant::now() + Duration::from_secs(60);
    loop {
        match tokio_postgres::connect(&format!("host=127.0.0.1 port={port} user=test"), NoTls).await {
            Ok((client, conn)) => {
                tokio::spawn(conn);
                return client;
            }
            Err(_) if Instant::now() < deadline => tokio::time::sleep(Duration::from_millis(50)).await,
            Err(e) => panic!("the server did not come up: {e}"),
        }
    }
}
