//! TPC-C against a server started in this process and embedded, with a population smaller
//! than the specification's: the load, the five transactions without a failure (as
//! interactive blocks, as one CALL each of the built-in procedures, and embedded), and
//! consistency conditions that hold after each run and fail when the data is made
//! inconsistent.

mod common;

use permafrost_bench::tpcc::{self, Scale, TpccOptions};
use permafrost_executor::{Config, Database};

#[test]
fn tpcc_loads_runs_and_keeps_its_consistency_conditions() {
    let server = common::Server::start();
    let addr = server.addr.clone();
    let target = tpcc::Target::new(&addr, "test", "test").unwrap();
    let opts = TpccOptions {
        warehouses: 2,
        clients: 4,
        warmup: 0.2,
        duration: 2.0,
        seed: 11,
        scale: Scale::small(),
        mix: tpcc::Mix::Full,
        load: true,
        run: true,
    };
    let report = tpcc::run(&target, &opts, tpcc::Mode::Interactive, false).unwrap();
    let summary = report.summary();
    assert_eq!(report.failed, 0, "{summary}");
    assert_eq!(report.checks.len(), 11, "{summary}");
    assert!(report.ok(), "{summary}");
    let done = |name: &str| report.by_type.iter().find(|t| t.name == name).unwrap().completed;
    assert!(done("new_order") > 0 && done("payment") > 0, "{summary}");
    assert!(!report.specification_scale);

    // The same transactions as one CALL each, on the tables the first run left.
    let calls = TpccOptions {
        load: false,
        ..opts.clone()
    };
    let report = tpcc::run(&target, &calls, tpcc::Mode::Procedures, false).unwrap();
    let summary = report.summary();
    assert!(report.ok(), "{summary}");
    assert!(summary.contains("stored procedures over the wire"), "{summary}");
    let done = |name: &str| report.by_type.iter().find(|t| t.name == name).unwrap().completed;
    assert!(done("new_order") > 0 && done("delivery") > 0, "{summary}");

    // The conditions see what is wrong: a warehouse's year-to-date no longer the sum of its
    // districts' and of its history (3.3.2.1 and 3.3.2.8), an order line lost (3.3.2.4, 6),
    // a customer's balance off (3.3.2.10, 12).
    let c = server.client();
    server.rt.block_on(async {
        c.batch_execute(
            "UPDATE warehouse SET w_ytd = w_ytd + 1 WHERE w_id = 2; \
             DELETE FROM order_line WHERE ol_w_id = 1 AND ol_d_id = 3 AND ol_o_id = 5 AND ol_number = 1; \
             UPDATE customer SET c_balance = c_balance + 1 WHERE c_w_id = 2 AND c_d_id = 4 AND c_id = 7",
        )
        .await
        .unwrap();
        let checks = tpcc::check::check(&c).await;
        let failed: Vec<&str> = checks
            .iter()
            .filter(|c| !c.passed())
            .map(|c| c.clause.as_str())
            .collect();
        assert_eq!(
            failed,
            ["3.3.2.1", "3.3.2.4", "3.3.2.6", "3.3.2.8", "3.3.2.10", "3.3.2.12"],
            "{checks:?}"
        );
        assert!(checks.iter().all(|c| c.error.is_none()), "{checks:?}");
    });
}

/// Embedded: the built-in procedures called in this process, in both mixes; the
/// Looking Glass paper's runs New-Order and Payment only.
#[test]
fn tpcc_runs_embedded_in_both_mixes() {
    for mix in [tpcc::Mix::Full, tpcc::Mix::LookingGlass] {
        let db = Database::open(Config::builder().partitions(2).build().unwrap()).unwrap();
        let opts = TpccOptions {
            warehouses: 2,
            clients: 16,
            warmup: 0.2,
            duration: 1.5,
            seed: 5,
            scale: Scale::small(),
            mix,
            load: true,
            run: true,
        };
        let report = tpcc::embedded::run(&db, &opts, 2, false).unwrap();
        let summary = report.summary();
        assert!(report.ok(), "{mix:?}: {summary}");
        let done = |name: &str| report.by_type.iter().find(|t| t.name == name).unwrap().completed;
        assert!(done("new_order") > 0 && done("payment") > 0, "{summary}");
        let others = done("order_status") + done("delivery") + done("stock_level");
        assert_eq!(others == 0, mix == tpcc::Mix::LookingGlass, "{summary}");
    }
}
