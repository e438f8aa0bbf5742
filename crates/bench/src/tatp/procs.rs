//! TATP's schema and its seven transactions in each form they run in: the statements
//! (shared by the interactive client and the procedures), the Rust stored procedures the
//! embedded target calls and `permafrost serve` has built in, and PostgreSQL's PL/pgSQL
//! functions of the same arguments.
//!
//! Every procedure is routed by the subscriber's id, its first argument (the three the
//! description gives a subscriber's number take the id too, as H-Store's do, and look the
//! number up at its partition). Each returns one row, `done`: 1 when the description
//! counts the transaction as successful, 0 when it ends as the description expects some to
//! (no such row; a call forwarding already there, or not there to delete), changing
//! nothing.

use std::sync::Arc;

use permafrost_executor::{ColumnInfo, ProcContext, ProcError, ProcedureDef, Rows};
use permafrost_types::{DataType, Value, ValueRef};

/// The tables, in the order they are created (and dropped in reverse).
pub const TABLES: [&str; 4] = ["subscriber", "access_info", "special_facility", "call_forwarding"];

/// The CREATE statements: plain DDL (Permafrost partitions every table by `s_id`, its key's
/// first column), and the index on the subscriber's number.
pub const DDL: &[&str] = &[
    "CREATE TABLE subscriber (s_id integer NOT NULL, sub_nbr varchar(15) NOT NULL, \
     bit_1 smallint, bit_2 smallint, bit_3 smallint, bit_4 smallint, bit_5 smallint, bit_6 smallint, \
     bit_7 smallint, bit_8 smallint, bit_9 smallint, bit_10 smallint, \
     hex_1 smallint, hex_2 smallint, hex_3 smallint, hex_4 smallint, hex_5 smallint, hex_6 smallint, \
     hex_7 smallint, hex_8 smallint, hex_9 smallint, hex_10 smallint, \
     byte2_1 smallint, byte2_2 smallint, byte2_3 smallint, byte2_4 smallint, byte2_5 smallint, \
     byte2_6 smallint, byte2_7 smallint, byte2_8 smallint, byte2_9 smallint, byte2_10 smallint, \
     msc_location integer, vlr_location integer, PRIMARY KEY (s_id))",
    "CREATE TABLE access_info (s_id integer NOT NULL, ai_type smallint NOT NULL, data1 smallint, \
     data2 smallint, data3 varchar(3), data4 varchar(5), PRIMARY KEY (s_id, ai_type))",
    "CREATE TABLE special_facility (s_id integer NOT NULL, sf_type smallint NOT NULL, is_active smallint NOT NULL, \
     error_cntrl smallint, data_a smallint, data_b varchar(5), PRIMARY KEY (s_id, sf_type))",
    "CREATE TABLE call_forwarding (s_id integer NOT NULL, sf_type smallint NOT NULL, start_time smallint NOT NULL, \
     end_time smallint, numberx varchar(15), PRIMARY KEY (s_id, sf_type, start_time))",
    "CREATE INDEX subscriber_by_nbr ON subscriber (sub_nbr)",
];

pub const GET_SUBSCRIBER: &str = "SELECT * FROM subscriber WHERE s_id = $1";
pub const GET_NEW_DESTINATION: &str = "SELECT cf.numberx FROM special_facility sf JOIN call_forwarding cf \
     ON cf.s_id = sf.s_id AND cf.sf_type = sf.sf_type WHERE sf.s_id = $1 AND sf.sf_type = $2 \
     AND sf.is_active = 1 AND cf.start_time <= $3 AND $4 < cf.end_time";
pub const GET_ACCESS: &str = "SELECT data1, data2, data3, data4 FROM access_info WHERE s_id = $1 AND ai_type = $2";
/// Update-Subscriber-Data's two updates: the facility's first, so that when it has none
/// (the description's expected failure) the subscriber is left as it was.
pub const UPDATE_FACILITY: &str = "UPDATE special_facility SET data_a = $1 WHERE s_id = $2 AND sf_type = $3";
pub const UPDATE_SUBSCRIBER: &str = "UPDATE subscriber SET bit_1 = $1 WHERE s_id = $2";
pub const UPDATE_LOCATION: &str = "UPDATE subscriber SET vlr_location = $1 WHERE sub_nbr = $2";
pub const SUBSCRIBER_OF: &str = "SELECT s_id FROM subscriber WHERE sub_nbr = $1";
pub const FACILITY_TYPES: &str = "SELECT sf_type FROM special_facility WHERE s_id = $1";
pub const INSERT_FORWARDING: &str = "INSERT INTO call_forwarding (s_id, sf_type, start_time, end_time, numberx) \
     VALUES ($1, $2, $3, $4, $5) ON CONFLICT DO NOTHING";
pub const DELETE_FORWARDING: &str = "DELETE FROM call_forwarding WHERE s_id = $1 AND sf_type = $2 AND start_time = $3";

/// The procedures' names, in [`super::data::KINDS`]' order.
pub const NAMES: [&str; 7] = [
    "tatp_get_subscriber_data",
    "tatp_get_new_destination",
    "tatp_get_access_data",
    "tatp_update_subscriber_data",
    "tatp_update_location",
    "tatp_insert_call_forwarding",
    "tatp_delete_call_forwarding",
];

/// Each procedure's arguments (name, type).
const ARGS: [&[(&str, DataType)]; 7] = [
    &[("s_id", DataType::Integer)],
    &[
        ("s_id", DataType::Integer),
        ("sf_type", DataType::SmallInt),
        ("start_time", DataType::SmallInt),
        ("end_time", DataType::SmallInt),
    ],
    &[("s_id", DataType::Integer), ("ai_type", DataType::SmallInt)],
    &[
        ("s_id", DataType::Integer),
        ("bit_1", DataType::SmallInt),
        ("sf_type", DataType::SmallInt),
        ("data_a", DataType::SmallInt),
    ],
    &[
        ("s_id", DataType::Integer),
        ("sub_nbr", DataType::Varchar(None)),
        ("vlr_location", DataType::Integer),
    ],
    &[
        ("s_id", DataType::Integer),
        ("sub_nbr", DataType::Varchar(None)),
        ("sf_type", DataType::SmallInt),
        ("start_time", DataType::SmallInt),
        ("end_time", DataType::SmallInt),
        ("numberx", DataType::Varchar(None)),
    ],
    &[
        ("s_id", DataType::Integer),
        ("sub_nbr", DataType::Varchar(None)),
        ("sf_type", DataType::SmallInt),
        ("start_time", DataType::SmallInt),
    ],
];

/// What a client runs over the wire to make procedure `i` callable on Permafrost.
pub fn create(i: usize) -> String {
    let args: Vec<String> = ARGS[i].iter().map(|(n, t)| format!("{n} {}", t.sql_name())).collect();
    format!(
        "CREATE PROCEDURE {}({}) LANGUAGE internal AS '{}'",
        NAMES[i],
        args.join(", "),
        NAMES[i]
    )
}

/// The one-row answer of a call.
fn done(d: bool) -> Rows {
    let columns: Arc<[ColumnInfo]> = vec![ColumnInfo {
        name: "done".into(),
        ty: Some(DataType::BigInt),
    }]
    .into();
    let mut rows = Rows::empty(columns);
    rows.push_row([ValueRef::Int(d as i64)]);
    rows
}

type Body = fn(&mut ProcContext<'_, '_, '_>, &[Value]) -> Result<bool, ProcError>;

/// The procedure of type `i`: its statements and body.
fn procedure(i: usize, statements: &[&str], body: Body) -> ProcedureDef {
    let mut def = ProcedureDef::new(NAMES[i])
        .signature(ARGS[i].iter().map(|(n, t)| (n.to_string(), *t)).collect())
        .partition_param(0)
        .returns(vec![ColumnInfo {
            name: "done".into(),
            ty: Some(DataType::BigInt),
        }]);
    for s in statements {
        def = def.statement(*s);
    }
    def.body(move |ctx, p| body(ctx, p).map(done))
}

/// The seven procedures, for `Database::register` (embedded) or a server's library.
pub fn library() -> Vec<ProcedureDef> {
    vec![
        procedure(0, &[GET_SUBSCRIBER], |ctx, p| Ok(!ctx.execute(0, &p[..1])?.is_empty())),
        procedure(1, &[GET_NEW_DESTINATION], |ctx, p| Ok(!ctx.execute(0, p)?.is_empty())),
        procedure(2, &[GET_ACCESS], |ctx, p| Ok(!ctx.execute(0, p)?.is_empty())),
        procedure(3, &[UPDATE_FACILITY, UPDATE_SUBSCRIBER], |ctx, p| {
            let (s, bit_1, sf_type, data_a) = (&p[0], &p[1], &p[2], &p[3]);
            if ctx.execute(0, &[data_a.clone(), s.clone(), sf_type.clone()])?.affected == 0 {
                return Ok(false);
            }
            ctx.execute(1, &[bit_1.clone(), s.clone()])?;
            Ok(true)
        }),
        procedure(4, &[UPDATE_LOCATION], |ctx, p| {
            Ok(ctx.execute(0, &[p[2].clone(), p[1].clone()])?.affected > 0)
        }),
        procedure(5, &[SUBSCRIBER_OF, FACILITY_TYPES, INSERT_FORWARDING], |ctx, p| {
            let found = ctx.execute(0, &p[1..2])?;
            let Some(s) = (!found.is_empty()).then(|| found.row(0).get_i64(0)).flatten() else {
                return Ok(false);
            };
            let types = ctx.execute(1, &[Value::Int(s)])?;
            let wanted = p[2].as_i64();
            if !types.iter().any(|r| r.get_i64(0) == wanted) {
                return Ok(false);
            }
            let row = [Value::Int(s), p[2].clone(), p[3].clone(), p[4].clone(), p[5].clone()];
            Ok(ctx.execute(2, &row)?.affected > 0)
        }),
        procedure(6, &[SUBSCRIBER_OF, DELETE_FORWARDING], |ctx, p| {
            let found = ctx.execute(0, &p[1..2])?;
            let Some(s) = (!found.is_empty()).then(|| found.row(0).get_i64(0)).flatten() else {
                return Ok(false);
            };
            Ok(ctx.execute(1, &[Value::Int(s), p[2].clone(), p[3].clone()])?.affected > 0)
        }),
    ]
}

/// The seven as PostgreSQL's own stored procedures, called `SELECT name(...)`, in
/// [`NAMES`]' order; each returns 1 or 0 as the Rust ones do.
pub const FUNCTIONS: [&str; 7] = [
    r#"CREATE OR REPLACE FUNCTION tatp_get_subscriber_data(p_s integer) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE r subscriber%ROWTYPE;
BEGIN
    SELECT * INTO r FROM subscriber WHERE s_id = p_s;
    RETURN CASE WHEN FOUND THEN 1 ELSE 0 END;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION tatp_get_new_destination(p_s integer, p_sf smallint, p_start smallint, p_end smallint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE n bigint;
BEGIN
    SELECT count(cf.numberx) INTO n FROM special_facility sf JOIN call_forwarding cf
        ON cf.s_id = sf.s_id AND cf.sf_type = sf.sf_type WHERE sf.s_id = p_s AND sf.sf_type = p_sf
        AND sf.is_active = 1 AND cf.start_time <= p_start AND p_end < cf.end_time;
    RETURN CASE WHEN n > 0 THEN 1 ELSE 0 END;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION tatp_get_access_data(p_s integer, p_ai smallint) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE r access_info%ROWTYPE;
BEGIN
    SELECT * INTO r FROM access_info WHERE s_id = p_s AND ai_type = p_ai;
    RETURN CASE WHEN FOUND THEN 1 ELSE 0 END;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION tatp_update_subscriber_data(p_s integer, p_bit smallint, p_sf smallint, p_data smallint)
RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    UPDATE special_facility SET data_a = p_data WHERE s_id = p_s AND sf_type = p_sf;
    IF NOT FOUND THEN RETURN 0; END IF;
    UPDATE subscriber SET bit_1 = p_bit WHERE s_id = p_s;
    RETURN 1;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION tatp_update_location(p_s integer, p_nbr varchar, p_vlr integer)
RETURNS bigint LANGUAGE plpgsql AS $$
BEGIN
    UPDATE subscriber SET vlr_location = p_vlr WHERE sub_nbr = p_nbr;
    RETURN CASE WHEN FOUND THEN 1 ELSE 0 END;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION tatp_insert_call_forwarding(p_s integer, p_nbr varchar, p_sf smallint,
    p_start smallint, p_end smallint, p_numberx varchar) RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_s integer; n bigint;
BEGIN
    SELECT s_id INTO v_s FROM subscriber WHERE sub_nbr = p_nbr;
    IF NOT FOUND THEN RETURN 0; END IF;
    PERFORM 1 FROM special_facility WHERE s_id = v_s AND sf_type = p_sf;
    IF NOT FOUND THEN RETURN 0; END IF;
    INSERT INTO call_forwarding (s_id, sf_type, start_time, end_time, numberx)
        VALUES (v_s, p_sf, p_start, p_end, p_numberx) ON CONFLICT DO NOTHING;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$"#,
    r#"CREATE OR REPLACE FUNCTION tatp_delete_call_forwarding(p_s integer, p_nbr varchar, p_sf smallint, p_start smallint)
RETURNS bigint LANGUAGE plpgsql AS $$
DECLARE v_s integer; n bigint;
BEGIN
    SELECT s_id INTO v_s FROM subscriber WHERE sub_nbr = p_nbr;
    IF NOT FOUND THEN RETURN 0; END IF;
    DELETE FROM call_forwarding WHERE s_id = v_s AND sf_type = p_sf AND start_time = p_start;
    GET DIAGNOSTICS n = ROW_COUNT;
    RETURN n;
END $$"#,
];
