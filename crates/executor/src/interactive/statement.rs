//! The statements of an interactive transaction: the new one a probe runs, the block's
//! earlier ones (what each showed its client, and what it may reach), and what each must
//! give when it runs again.

use permafrost_sql::Route;
use permafrost_types::Value;

use crate::database::AdHoc;

/// The statement a probe runs after the block's earlier ones: its plan, its parameters,
/// and its random seed ([`TxnStatement::seed`]).
pub struct NewStatement<'a> {
    pub stmt: &'a AdHoc,
    pub params: Vec<Value>,
    pub seed: u64,
}

impl<'a> NewStatement<'a> {
    /// What a probe runs of it: the statement, its parameters, no result to check.
    pub(crate) fn into_run(self) -> (&'a AdHoc, Vec<Value>, Expected) {
        let expect = Expected {
            seed: self.seed,
            ..Expected::default()
        };
        (self.stmt, self.params, expect)
    }
}

/// One statement of an interactive transaction.
#[derive(Clone)]
pub struct TxnStatement {
    pub stmt: AdHoc,
    pub params: Vec<Value>,
    /// The fingerprint of the result the client was shown
    /// ([`Rows::digest`](permafrost_sql::Rows::digest)).
    pub digest: u64,
    /// The write clock ([`Database::write_clock`](crate::Database::write_clock)) read
    /// before the statement was submitted, if it was: the COMMIT does not run again a
    /// query whose rows no commit stamped later changed
    /// ([`Prepared::read_ranges`](permafrost_sql::Prepared::read_ranges),
    /// `ProcContext::unchanged_since`).
    pub seen: Option<u64>,
    /// The write clock read after its result came back, if it was: with `seen`, what a
    /// COMMIT that takes an earlier place knows of when it read ("Committing at an
    /// earlier place" in crate::interactive).
    pub done: Option<u64>,
    /// What `random()` and `gen_random_uuid()` draw from in it: the same in each probe
    /// that runs it and at COMMIT, so that they draw the values the client was shown, and
    /// logged with the commit for replay ([`TxnStatement::seed_for`]).
    pub seed: u64,
    /// The sequence values it took when it first ran
    /// ([`Rows::draws`](permafrost_sql::Rows::draws) of its probe): each later probe and
    /// the COMMIT give it the same ones, so that the keys its client was shown are the
    /// keys the transaction inserts.
    pub draws: Vec<(u32, i64)>,
    /// What it may read or change ([`permafrost_sql::Reach`]), computed when a probe
    /// first asks: the probes after it run it again only when it meets theirs.
    pub reach: std::sync::OnceLock<permafrost_sql::Reach>,
}

impl TxnStatement {
    /// The seed of statement number `ordinal` (from 0) of the block whose seed is
    /// `block_seed`.
    pub fn seed_for(block_seed: u64, ordinal: usize) -> u64 {
        permafrost_sql::splitmix64(block_seed ^ (ordinal as u64 + 1).wrapping_mul(0x9E37_79B9_7F4A_7C15))
    }

    /// What it may read or change, with its parameters.
    pub fn reach(&self) -> &permafrost_sql::Reach {
        self.reach.get_or_init(|| self.stmt.prepared().reach(&self.params))
    }

    /// Whether it may change data (what a probe runs before its own statement).
    pub fn writes(&self) -> bool {
        !self.stmt.prepared().is_read_only()
    }

    /// What a COMMIT runs of it: the statement, its parameters, and what it must give.
    pub(crate) fn to_commit(&self) -> (&AdHoc, Vec<Value>, Expected) {
        let expect = Expected {
            digest: Some(self.digest),
            seen: self.seen,
            done: self.done,
            seed: self.seed,
            draws: self.draws.clone(),
        };
        (&self.stmt, self.params.clone(), expect)
    }

    /// The partitions it runs at in a probe.
    pub(super) fn probe_route(&self, shared: &crate::shared::Shared) -> Route {
        shared.block_route(self.stmt.prepared(), &self.params, true, &self.draws)
    }
}

/// What a statement of an interactive procedure must give: the fingerprint of what its
/// client was shown, if it was ([`TxnStatement::digest`]), and the write clock before it
/// ran, if known ([`TxnStatement::seen`]).
#[derive(Clone, Default)]
pub(crate) struct Expected {
    pub(crate) digest: Option<u64>,
    pub(crate) seen: Option<u64>,
    pub(crate) done: Option<u64>,
    /// The statement's random seed ([`TxnStatement::seed`]; 0: none of its own).
    pub(crate) seed: u64,
    /// The sequence values it took when it first ran ([`TxnStatement::draws`]).
    pub(crate) draws: Vec<(u32, i64)>,
}

impl Expected {
    /// The write clock before the statement ran and after its result came back, when
    /// both are known.
    pub(super) fn window(&self) -> Option<(u64, u64)> {
        Some((self.seen?, self.done?))
    }
}
