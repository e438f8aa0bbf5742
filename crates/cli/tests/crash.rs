//! `permafrost bench crash` works: a few short kill-and-restart iterations against the
//! built binary find nothing wrong (two data directories, so the fresh-directory path
//! runs too), and with the command log off the harness does find the lost changes.

use std::path::Path;
use std::process::{Command, Output};

fn crash(dir: &Path, extra: &[&str]) -> (Output, Option<serde_json::Value>) {
    let json = dir.join("crash.json");
    let out = Command::new(env!("CARGO_BIN_EXE_permafrost"))
        .args(["bench", "crash", "--seed", "7", "--min-run", "0.2", "--max-run", "0.5"])
        .arg("--data-dir")
        .arg(dir.join("data"))
        .arg("--json")
        .arg(&json)
        .args(extra)
        .env_remove("PERMAFROST_CONFIG")
        .output()
        .expect("the permafrost binary runs");
    let report = std::fs::read_to_string(&json)
        .ok()
        .map(|t| serde_json::from_str(&t).expect("the report is JSON"));
    (out, report)
}

fn text(out: &Output) -> String {
    format!(
        "stdout:\n{}\nstderr:\n{}",
        String::from_utf8_lossy(&out.stdout),
        String::from_utf8_lossy(&out.stderr)
    )
}

#[test]
fn the_crash_harness_kills_restarts_and_checks() {
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = crash(dir.path(), &["--iterations", "3", "--fresh-every", "2"]);
    assert!(out.status.success(), "{}", text(&out));
    let r = report.expect("a report");
    assert_eq!(r["iterations_run"], 3, "{r}");
    assert_eq!(r["complete"], true, "{r}");
    assert_eq!(r["data_directories"], 2, "{r}");
    assert_eq!(r["kills"]["total"], 3, "{r}");
    assert_eq!(r["violations"].as_array().unwrap().len(), 0, "{r}");
    let a = &r["acknowledged"];
    assert!(a["events_acknowledged"].as_u64().unwrap() > 0, "{r}");
    assert!(a["transfers_acknowledged"].as_u64().unwrap() > 0, "{r}");
    assert!(a["reads_verified"].as_u64().unwrap() > 0, "{r}");
    assert_eq!(a["balance_checks"], 3, "{r}");
    // Every acknowledged event is checked after each restart of its directory.
    assert!(
        a["acknowledged_event_checks"].as_u64() >= a["events_acknowledged"].as_u64(),
        "{r}"
    );
    assert_eq!(r["recovery"]["restarts"], 3, "{r}");
    assert!(r["recovery"]["max_records"].as_u64().unwrap() > 0, "{r}");
    let stdout = String::from_utf8_lossy(&out.stdout);
    assert!(stdout.contains("fresh data directory every 2 iterations"), "{stdout}");
    assert!(stdout.contains("violations: 0"), "{stdout}");
    // The data directories are removed once their iterations pass.
    assert_eq!(std::fs::read_dir(dir.path().join("data")).unwrap().count(), 0);
}

#[test]
fn without_the_command_log_the_harness_finds_the_losses() {
    let dir = tempfile::tempdir().unwrap();
    let (out, report) = crash(
        dir.path(),
        &["--iterations", "2", "--command-log", "off", "--accounts", "5000"],
    );
    assert!(!out.status.success(), "{}", text(&out));
    let r = report.expect("a report");
    // It stops at the first iteration with a violation, and says how to run it again.
    assert_eq!(r["iterations_run"], 1, "{r}");
    assert_eq!(r["complete"], false, "{r}");
    let v = &r["violations"][0];
    assert_eq!(v["iteration"], 1, "{r}");
    assert_eq!(v["seed"], 7, "{r}");
    assert!(v["what"].as_str().unwrap().contains("after the restart"), "{r}");
    assert!(v["reproduce"].as_str().unwrap().contains("--command-log off"), "{r}");
    assert!(
        String::from_utf8_lossy(&out.stderr).contains("violation"),
        "{}",
        text(&out)
    );
    // The data directory is kept.
    assert!(dir.path().join("data").join("cycle-0000").exists());
}
