//! TATP against a server started in this process and embedded, with a small population:
//! the seven transactions as interactive transactions, as one CALL each of the built-in
//! procedures, and embedded; the invariants hold after each run and fail when the data is
//! made wrong.

mod common;

use permafrost_bench::tatp::{self, Mode, TatpOptions};
use permafrost_bench::tpcc::Target;
use permafrost_executor::{Config, Database};

fn options() -> TatpOptions {
    TatpOptions {
        subscribers: 2500,
        clients: 4,
        warmup: 0.2,
        duration: 1.5,
        seed: 9,
        load: true,
        run: true,
    }
}

#[test]
fn tatp_over_the_wire_keeps_its_invariants() {
    let server = common::Server::start();
    let addr = server.addr.clone();
    let target = Target::new(&addr, "test", "test").unwrap();

    let report = tatp::run(&target, &options(), Mode::Interactive, false).unwrap();
    let summary = report.summary();
    assert!(report.ok(), "{summary}");
    assert_eq!(report.checks.len(), 5, "{summary}");
    assert!(report.by_type.iter().all(|t| t.completed > 0), "{summary}");

    // The same transactions as one CALL each, on the tables the first run left.
    let calls = TatpOptions {
        load: false,
        ..options()
    };
    let report = tatp::run(&target, &calls, Mode::Procedures, false).unwrap();
    let summary = report.summary();
    assert!(report.ok(), "{summary}");
    assert!(summary.contains("stored procedures over the wire"), "{summary}");
    let rate = |name: &str| {
        let t = report.by_type.iter().find(|t| t.name == name).unwrap();
        (t.completed - t.rolled_back) as f64 / t.completed.max(1) as f64
    };
    assert!(
        rate("get_subscriber_data") == 1.0 && rate("get_access_data") < 0.9,
        "{summary}"
    );

    // The invariants see what is wrong: a subscriber without access data, a forwarding
    // without its facility, one more forwarding than the run inserted.
    let c = server.client();
    server.rt.block_on(async {
        let forwardings = tatp::check::count_over_wire(&c, tatp::check::FORWARDINGS)
            .await
            .unwrap();
        c.batch_execute(
            "DELETE FROM access_info WHERE s_id = 7; \
             DELETE FROM special_facility WHERE s_id = 9; \
             INSERT INTO call_forwarding VALUES (9, 1, 0, 5, '123'), (9, 2, 8, 20, '123')",
        )
        .await
        .unwrap();
        let expected = tatp::check::Expected {
            subscribers: 2500,
            forwardings,
        };
        let checks = tatp::check::over_wire(&c, &expected).await;
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| !c.passed())
            .map(|c| c.clause.as_str())
            .collect();
        assert_eq!(failed, ["T1", "T2", "T3", "T5"], "{checks:?}");
    });
}

#[test]
fn tatp_runs_embedded() {
    let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
    let opts = TatpOptions {
        clients: 32,
        ..options()
    };
    let report = tatp::embedded::run(&db, &opts, 2, false).unwrap();
    let summary = report.summary();
    assert!(report.ok(), "{summary}");
    assert!(report.by_type.iter().all(|t| t.completed > 0), "{summary}");
}
