//! Voter against a server started in this process and embedded: votes as interactive
//! transactions, as one CALL each of the built-in procedure, and embedded, with few enough
//! phone numbers that callers reach the vote limit; the invariants hold after each run and
//! fail when the data is made wrong.

mod common;

use permafrost_bench::tpcc::Target;
use permafrost_bench::voter::{self, Mode, VoterOptions};
use permafrost_executor::{Config, Database};

fn options() -> VoterOptions {
    VoterOptions {
        clients: 4,
        warmup: 0.2,
        duration: 1.5,
        seed: 3,
        contestants: 6,
        max_votes: 2,
        // 305 area codes of 4 numbers: callers vote again and again, so the limit fires.
        numbers: 4,
        // Votes loaded first: two for some callers already (1,220 of them take turns).
        votes: 1500,
        load: true,
        run: true,
    }
}

#[test]
fn voter_over_the_wire_keeps_its_invariants() {
    let server = common::Server::start();
    let addr = server.addr.clone();
    let target = Target::new(&addr, "test", "test").unwrap();

    let report = voter::run(&target, &options(), Mode::Interactive, false).unwrap();
    let summary = report.summary();
    assert!(report.ok(), "{summary}");
    assert_eq!(report.checks.len(), 4, "{summary}");
    assert_eq!(report.votes_before, 1500, "{summary}");
    assert!(
        report.accepted > 0 && report.invalid_contestant > 0 && report.over_limit > 0,
        "{summary}"
    );

    // The same calls as one CALL each, on the votes the first run left.
    let calls = VoterOptions {
        load: false,
        ..options()
    };
    let report = voter::run(&target, &calls, Mode::Procedures, false).unwrap();
    let summary = report.summary();
    assert!(report.ok(), "{summary}");
    assert!(summary.contains("stored procedures over the wire"), "{summary}");
    assert!(report.votes_before > 0 && report.over_limit > 0, "{summary}");

    // The invariants see what is wrong: a vote for nobody, one from the wrong state, a
    // caller over the limit (numbers the run did not call), and rows VOTES holds that no
    // call was told were recorded.
    let c = server.client();
    server.rt.block_on(async {
        let rows = voter::check::rows_over_wire(&c).await.unwrap();
        c.batch_execute(
            "INSERT INTO votes VALUES (1, 2120000101, 'NY', 999, now()); \
             INSERT INTO votes VALUES (2, 2120000102, 'CA', 1, now()); \
             INSERT INTO votes VALUES (3, 2120000103, 'NY', 1, now()), (4, 2120000103, 'NY', 2, now()), \
             (5, 2120000103, 'NY', 3, now())",
        )
        .await
        .unwrap();
        let checks = voter::check::over_wire(&c, 2, rows).await;
        let failed: Vec<(&str, Option<i64>)> = checks
            .iter()
            .filter(|c| !c.passed())
            .map(|c| (c.clause.as_str(), c.violations))
            .collect();
        assert_eq!(
            failed,
            [("V1", Some(1)), ("V2", Some(1)), ("V3", Some(1)), ("V4", Some(5))],
            "{checks:?}"
        );
    });
}

#[test]
fn voter_runs_embedded() {
    let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
    // No votes loaded first: 32 embedded clients reach every caller's limit within the
    // warm-up otherwise, and accept none in the measured seconds.
    let opts = VoterOptions {
        clients: 32,
        votes: 0,
        ..options()
    };
    let report = voter::embedded::run(&db, &opts, 2, false).unwrap();
    let summary = report.summary();
    assert!(report.ok(), "{summary}");
    assert!(
        report.accepted > 0 && report.invalid_contestant > 0 && report.over_limit > 0,
        "{summary}"
    );
    // No caller is over the limit although many called more often than it allows.
    assert!(report.votes_after.unwrap() <= 305 * 4 * 2, "{summary}");
}
