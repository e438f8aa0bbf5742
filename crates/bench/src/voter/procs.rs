//! Voter's schema and its one transaction, Vote, in each form it runs in: the statements
//! (shared by the interactive client and the procedures), the Rust stored procedure that
//! the embedded target calls and `permafrost serve` has built in, and PostgreSQL's
//! PL/pgSQL function of the same arguments.
//!
//! Vote(vote_id, phone_number, contestant_number, max_votes) checks that the contestant
//! exists and that the caller has fewer than `max_votes` votes, looks up the state of the
//! caller's area code, and records the vote. It returns 0 when the vote is recorded, 1 for
//! an unknown contestant and 2 for a caller over the limit (H-Store's codes); the last two
//! change nothing.

use std::sync::Arc;

use permafrost_executor::{ColumnInfo, ProcedureDef, Rows};
use permafrost_types::{DataType, Value, ValueRef};

use super::data::NUMBERS_PER_AREA;
use crate::way::Flavor;

/// The tables, in the order they are created (and dropped in reverse).
pub const TABLES: [&str; 3] = ["contestants", "area_code_state", "votes"];

/// Vote's codes.
pub const ACCEPTED: i64 = 0;
pub const INVALID_CONTESTANT: i64 = 1;
pub const OVER_LIMIT: i64 = 2;

/// The CREATE statements. On Permafrost the storage options say what H-Store's project
/// declares: VOTES partitioned by the caller's number and evictable, the two small tables
/// replicated and kept in memory; the same tables on PostgreSQL are plain.
pub fn ddl(flavor: Flavor) -> Vec<String> {
    let (small, votes) = match flavor {
        Flavor::Permafrost => (
            " WITH (partition_by = 'none', evictable = false)",
            " WITH (partition_by = 'phone_number')",
        ),
        Flavor::Postgres => ("", ""),
    };
    vec![
        format!(
            "CREATE TABLE contestants (contestant_number integer NOT NULL, contestant_name varchar(50) NOT NULL, \
             PRIMARY KEY (contestant_number)){small}"
        ),
        format!(
            "CREATE TABLE area_code_state (area_code smallint NOT NULL, state varchar(2) NOT NULL, \
             PRIMARY KEY (area_code)){small}"
        ),
        format!(
            "CREATE TABLE votes (vote_id bigint NOT NULL, phone_number bigint NOT NULL, state varchar(2) NOT NULL, \
             contestant_number integer NOT NULL, created timestamptz NOT NULL){votes}"
        ),
        "CREATE INDEX votes_by_phone ON votes (phone_number)".to_string(),
    ]
}

/// The contestant, if there is one.
pub const CONTESTANT: &str = "SELECT contestant_number FROM contestants WHERE contestant_number = $1";
/// The caller's votes so far.
pub const VOTES_OF_CALLER: &str = "SELECT count(*) FROM votes WHERE phone_number = $1";
/// The state of an area code.
pub const STATE: &str = "SELECT state FROM area_code_state WHERE area_code = $1";
/// Records the vote.
pub const INSERT: &str = "INSERT INTO votes (vote_id, phone_number, state, contestant_number, created) \
                          VALUES ($1, $2, $3, $4, now())";
/// The state of votes from an area code missing from the table (H-Store's).
pub const UNKNOWN_STATE: &str = "XX";

/// The procedure's name, and what makes it callable over the wire on Permafrost.
pub const NAME: &str = "voter_vote";
pub const CREATE: &str = "CREATE PROCEDURE voter_vote(vote_id bigint, phone_number bigint, contestant_number integer, \
                          max_votes integer) LANGUAGE internal AS 'voter_vote'";

/// The area code of a phone number, as the STATE statement takes it.
pub fn area_code(phone: i64) -> i64 {
    phone / NUMBERS_PER_AREA
}

/// Vote as a Rust stored procedure, at the partition of the caller's number: the
/// contestants and area codes are replicated there, the caller's votes are there.
pub fn vote() -> ProcedureDef {
    let arg = |n: &str, t: DataType| (n.to_string(), t);
    ProcedureDef::new(NAME)
        .signature(vec![
            arg("vote_id", DataType::BigInt),
            arg("phone_number", DataType::BigInt),
            arg("contestant_number", DataType::Integer),
            arg("max_votes", DataType::Integer),
        ])
        .partition_param(1)
        .statement(CONTESTANT)
        .statement(VOTES_OF_CALLER)
        .statement(STATE)
        .statement(INSERT)
        .returns(vec![ColumnInfo {
            name: "code".into(),
            ty: Some(DataType::BigInt),
        }])
        .body(|ctx, p| {
            let (id, phone, contestant, max) = (&p[0], &p[1], &p[2], &p[3]);
            if ctx.execute(0, std::slice::from_ref(contestant))?.is_empty() {
                return Ok(code(INVALID_CONTESTANT));
            }
            let votes = ctx.execute(1, std::slice::from_ref(phone))?;
            let so_far = (!votes.is_empty())
                .then(|| votes.row(0).get_i64(0))
                .flatten()
                .unwrap_or(0);
            if so_far >= max.as_i64().unwrap_or(0) {
                return Ok(code(OVER_LIMIT));
            }
            let area = Value::Int(area_code(phone.as_i64().unwrap_or(0)));
            let found = ctx.execute(2, &[area])?;
            let state = found
                .iter()
                .next()
                .and_then(|r| r.get_str(0).map(str::to_string))
                .unwrap_or_else(|| UNKNOWN_STATE.to_string());
            ctx.execute(
                3,
                &[
                    id.clone(),
                    phone.clone(),
                    Value::from(state.as_str()),
                    contestant.clone(),
                ],
            )?;
            Ok(code(ACCEPTED))
        })
}

/// The one-row answer of a call.
fn code(c: i64) -> Rows {
    let columns: Arc<[ColumnInfo]> = vec![ColumnInfo {
        name: "code".into(),
        ty: Some(DataType::BigInt),
    }]
    .into();
    let mut rows = Rows::empty(columns);
    rows.push_row([ValueRef::Int(c)]);
    rows
}

/// Vote as PostgreSQL's own stored procedure, called `SELECT voter_vote(...)`. Under READ
/// COMMITTED two calls of one caller could both count the votes before either records
/// one; a transaction-scoped advisory lock on the caller's number orders them.
pub const FUNCTION: &str = r#"CREATE OR REPLACE FUNCTION voter_vote(p_id bigint, p_phone bigint, p_contestant integer,
    p_max integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE
    v_state varchar(2);
BEGIN
    PERFORM 1 FROM contestants WHERE contestant_number = p_contestant;
    IF NOT FOUND THEN RETURN 1; END IF;
    PERFORM pg_advisory_xact_lock(p_phone);
    IF (SELECT count(*) FROM votes WHERE phone_number = p_phone) >= p_max THEN RETURN 2; END IF;
    SELECT state INTO v_state FROM area_code_state WHERE area_code = p_phone / 10000000;
    INSERT INTO votes (vote_id, phone_number, state, contestant_number, created)
        VALUES (p_id, p_phone, coalesce(v_state, 'XX'), p_contestant, now());
    RETURN 0;
END $$"#;
