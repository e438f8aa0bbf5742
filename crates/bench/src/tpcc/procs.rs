//! The five transactions as stored procedures: Rust bodies over the statements of sql.rs,
//! each call one transaction at the partition of its warehouse (a call that reaches
//! another warehouse, a remote supplier of New-Order or a remote customer of Payment, runs
//! at both of their partitions). The embedded target calls them through the engine's API;
//! `permafrost serve` has them built in ([`library`]), and a client makes them callable
//! with `CREATE PROCEDURE ... LANGUAGE internal` ([`CREATE`]), then runs one `CALL` per
//! transaction.
//!
//! The procedures take no locks: a partition runs its transactions one at a time. New-Order
//! with an unused item aborts with P0001 "Item number is not valid" (clause 2.4.2.3: the
//! transaction is rolled back, as the specification asks). Each returns one row that sums
//! up the terminal's output (clause 2.4.3 and following), not every field of it.

use std::sync::Arc;

use permafrost_executor::{ColumnInfo, ProcContext, ProcError, ProcedureDef, Rows};
use permafrost_types::array::ElemType;
use permafrost_types::{DataType, Value, ValueRef};

use super::options::DISTRICTS;
use super::sql;

/// The procedures' names, in [`TxnType::ALL`](super::random::TxnType::ALL)'s order.
pub const NAMES: [&str; 5] = [
    "tpcc_new_order",
    "tpcc_payment",
    "tpcc_order_status",
    "tpcc_delivery",
    "tpcc_stock_level",
];

/// The message of New-Order's rollback (clause 2.4.3.4's "Item number is not valid").
pub const INVALID_ITEM: &str = "Item number is not valid";

/// What a client runs over the wire to make the built-in procedures callable: the
/// signatures of [`library`]'s procedures.
pub const CREATE: [&str; 5] = [
    "CREATE PROCEDURE tpcc_new_order(w_id integer, d_id integer, c_id integer, items integer[], \
     supply_w_ids integer[], quantities integer[]) LANGUAGE internal AS 'tpcc_new_order'",
    "CREATE PROCEDURE tpcc_payment(w_id integer, d_id integer, c_w_id integer, c_d_id integer, c_id integer, \
     c_last varchar, cents integer) LANGUAGE internal AS 'tpcc_payment'",
    "CREATE PROCEDURE tpcc_order_status(w_id integer, d_id integer, c_id integer, c_last varchar) \
     LANGUAGE internal AS 'tpcc_order_status'",
    "CREATE PROCEDURE tpcc_delivery(w_id integer, carrier_id integer) LANGUAGE internal AS 'tpcc_delivery'",
    "CREATE PROCEDURE tpcc_stock_level(w_id integer, d_id integer, threshold integer) \
     LANGUAGE internal AS 'tpcc_stock_level'",
];

fn int() -> DataType {
    DataType::Integer
}

fn ints() -> DataType {
    DataType::Array(ElemType::Integer)
}

fn args(list: &[(&str, DataType)]) -> Vec<(String, DataType)> {
    list.iter().map(|(n, t)| (n.to_string(), *t)).collect()
}

/// The five procedures, for `Database::register` (embedded) or a server's library.
pub fn library() -> Vec<ProcedureDef> {
    vec![new_order(), payment(), order_status(), delivery(), stock_level()]
}

/// The integers of an `integer[]` argument.
fn int_list(ctx: &ProcContext<'_, '_, '_>, v: &Value, what: &str) -> Result<Vec<i64>, ProcError> {
    let text = v
        .as_str()
        .ok_or_else(|| ctx.abort(format!("{what} must be an integer array")))?;
    permafrost_types::array_value::values(ElemType::Integer, text)
        .map_err(|e| ctx.abort(format!("{what}: {e}")))?
        .iter()
        .map(|x| x.as_i64().ok_or_else(|| ctx.abort(format!("{what} holds a NULL"))))
        .collect()
}

fn int_at(rows: &Rows, row: usize, col: usize) -> Option<i64> {
    (row < rows.len()).then(|| rows.row(row).get_i64(col)).flatten()
}

/// Columns of type bigint named `names`.
fn bigints(names: &[&str]) -> Vec<ColumnInfo> {
    names
        .iter()
        .map(|n| ColumnInfo {
            name: n.to_string(),
            ty: Some(DataType::BigInt),
        })
        .collect()
}

/// One row of bigint columns named `names` (as [`bigints`] declares them).
fn summary(names: &[&str], values: &[i64]) -> Rows {
    let columns: Arc<[ColumnInfo]> = bigints(names).into();
    let mut rows = Rows::empty(columns);
    rows.push_row(values.iter().map(|&v| ValueRef::Int(v)));
    rows
}

/// What New-Order returns: the order's id, its lines, its amount before taxes and discount.
const NEW_ORDER_RETURNS: [&str; 3] = ["o_id", "o_ol_cnt", "total_cents"];
/// What Payment returns: the customer paid for, and whether its credit is bad.
const PAYMENT_RETURNS: [&str; 2] = ["c_id", "bad_credit"];
/// What Delivery returns: the districts whose oldest order it delivered, and those it skipped.
const DELIVERY_RETURNS: [&str; 2] = ["delivered", "skipped"];

// Statements of New-Order: the customer, the district, the order, the new order, the
// item, then a stock read per district, the stock update and the line.
const NO_STOCK: usize = 5;
const NO_STOCK_UPDATE: usize = NO_STOCK + DISTRICTS as usize;
const NO_LINE: usize = NO_STOCK_UPDATE + 1;

fn new_order() -> ProcedureDef {
    let mut def = ProcedureDef::new(NAMES[0])
        .signature(args(&[
            ("w_id", int()),
            ("d_id", int()),
            ("c_id", int()),
            ("items", ints()),
            ("supply_w_ids", ints()),
            ("quantities", ints()),
        ]))
        .partition_param(0)
        .partition_values(|p| match p.get(4).and_then(Value::as_str) {
            Some(text) => permafrost_types::array_value::values(ElemType::Integer, text).unwrap_or_default(),
            None => Vec::new(),
        })
        .statement(sql::NO_CUSTOMER)
        .statement(sql::NO_DISTRICT)
        .statement(sql::NO_ORDER)
        .statement(sql::NO_NEW_ORDER)
        .statement(sql::NO_ITEM);
    for d in 1..=DISTRICTS {
        def = def.statement(sql::no_stock(d));
    }
    def.statement(sql::NO_STOCK_UPDATE)
        .statement(sql::NO_LINE)
        .returns(bigints(&NEW_ORDER_RETURNS))
        .body(|ctx, p| {
            let (w, d, c) = (p[0].clone(), p[1].clone(), p[2].clone());
            let items = int_list(ctx, &p[3], "items")?;
            let supply = int_list(ctx, &p[4], "supply_w_ids")?;
            let quantities = int_list(ctx, &p[5], "quantities")?;
            if items.is_empty() || items.len() != supply.len() || items.len() != quantities.len() {
                return Err(
                    ctx.abort("items, supply_w_ids and quantities must be as long as each other, and not empty")
                );
            }
            let district = d.as_i64().filter(|d| (1..=DISTRICTS as i64).contains(d));
            let Some(district) = district else {
                return Err(ctx.abort(format!("d_id must be between 1 and {DISTRICTS}")));
            };
            if ctx.execute(0, &[w.clone(), d.clone(), c.clone()])?.is_empty() {
                return Err(ctx.abort("no such customer"));
            }
            let next = ctx.execute(1, &[w.clone(), d.clone()])?;
            let o_id = int_at(&next, 0, 0).ok_or_else(|| ctx.abort("no such district"))?;
            let home = w.as_i64().unwrap_or(0);
            let all_local = supply.iter().all(|&s| s == home) as i64;
            let count = items.len() as i64;
            let o = Value::Int(o_id);
            ctx.execute(
                2,
                &[
                    o.clone(),
                    d.clone(),
                    w.clone(),
                    c,
                    Value::Int(count),
                    Value::Int(all_local),
                ],
            )?;
            ctx.execute(3, &[o.clone(), d.clone(), w.clone()])?;
            let mut total = 0;
            for (n, ((&item, &s), &qty)) in items.iter().zip(&supply).zip(&quantities).enumerate() {
                let found = ctx.execute(4, &[Value::Int(item)])?;
                let Some(price) = int_at(&found, 0, 0) else {
                    return Err(ctx.abort(INVALID_ITEM));
                };
                let stock = ctx.execute(NO_STOCK + district as usize - 1, &[Value::Int(item), Value::Int(s)])?;
                let (Some(quantity), Some(dist_info)) = (
                    int_at(&stock, 0, 0),
                    stock.iter().next().and_then(|r| r.get_str(2).map(str::to_string)),
                ) else {
                    return Err(ctx.abort(format!("no stock of item {item} at warehouse {s}")));
                };
                let left = sql::stock_left(quantity, qty);
                ctx.execute(
                    NO_STOCK_UPDATE,
                    &[
                        Value::Int(left),
                        Value::Int(qty),
                        Value::Int((s != home) as i64),
                        Value::Int(item),
                        Value::Int(s),
                    ],
                )?;
                let amount = qty * price;
                total += amount;
                ctx.execute(
                    NO_LINE,
                    &[
                        o.clone(),
                        d.clone(),
                        w.clone(),
                        Value::Int(n as i64 + 1),
                        Value::Int(item),
                        Value::Int(s),
                        Value::Int(qty),
                        Value::Int(amount),
                        Value::from(dist_info.as_str()),
                    ],
                )?;
            }
            Ok(summary(&NEW_ORDER_RETURNS, &[o_id, count, total]))
        })
}

/// The customer's id: given, or the middle one of those with the last name by first name
/// (clause 2.5.2.2), found with statement `by_name`.
fn customer_id(
    ctx: &mut ProcContext<'_, '_, '_>,
    by_name: usize,
    (w, d): (&Value, &Value),
    id: &Value,
    last: &Value,
) -> Result<Value, ProcError> {
    if !id.is_null() {
        return Ok(id.clone());
    }
    if last.is_null() {
        return Err(ctx.abort("give c_id or c_last"));
    }
    let rows = ctx.execute(by_name, &[w.clone(), d.clone(), last.clone()])?;
    match int_at(&rows, rows.len().saturating_sub(1) / 2, 0) {
        Some(c) => Ok(Value::Int(c)),
        None => Err(ctx.abort(format!("no customer is named {}", last.as_str().unwrap_or("")))),
    }
}

fn payment() -> ProcedureDef {
    ProcedureDef::new(NAMES[1])
        .signature(args(&[
            ("w_id", int()),
            ("d_id", int()),
            ("c_w_id", int()),
            ("c_d_id", int()),
            ("c_id", int()),
            ("c_last", DataType::Varchar(None)),
            ("cents", int()),
        ]))
        .partition_param(0)
        .partition_values(|p| p.get(2).cloned().into_iter().collect())
        .statement(sql::P_WAREHOUSE)
        .statement(sql::P_DISTRICT)
        .statement(sql::BY_NAME)
        .statement(sql::P_CUSTOMER)
        .statement(sql::P_CUSTOMER_DATA)
        .statement(sql::P_UPDATE_BC)
        .statement(sql::P_UPDATE)
        .statement(sql::P_HISTORY)
        .returns(bigints(&PAYMENT_RETURNS))
        .body(|ctx, p| {
            let (w, d, c_w, c_d, cents) = (&p[0], &p[1], &p[2], &p[3], &p[6]);
            let wh = ctx.execute(0, &[cents.clone(), w.clone()])?;
            let w_name = wh.iter().next().and_then(|r| r.get_str(0).map(str::to_string));
            let di = ctx.execute(1, &[cents.clone(), w.clone(), d.clone()])?;
            let d_name = di.iter().next().and_then(|r| r.get_str(0).map(str::to_string));
            let (Some(w_name), Some(d_name)) = (w_name, d_name) else {
                return Err(ctx.abort("no such warehouse or district"));
            };
            let c = customer_id(ctx, 2, (c_w, c_d), &p[4], &p[5])?;
            let customer = ctx.execute(3, &[c_w.clone(), c_d.clone(), c.clone()])?;
            let Some(credit) = customer.iter().next().and_then(|r| r.get_str(10).map(str::to_string)) else {
                return Err(ctx.abort("no such customer"));
            };
            if credit == "BC" {
                let data = ctx.execute(4, &[c_w.clone(), c_d.clone(), c.clone()])?;
                let old = data.iter().next().and_then(|r| r.get_str(0)).unwrap_or("").to_string();
                let num = |v: &Value| v.as_i64().unwrap_or(0);
                let new = sql::bad_credit_data(num(&c), (num(c_w), num(c_d)), (num(w), num(d)), num(cents), &old);
                ctx.execute(
                    5,
                    &[
                        cents.clone(),
                        Value::from(new.as_str()),
                        c_w.clone(),
                        c_d.clone(),
                        c.clone(),
                    ],
                )?;
            } else {
                ctx.execute(6, &[cents.clone(), c_w.clone(), c_d.clone(), c.clone()])?;
            }
            let h_data = format!("{w_name}    {d_name}");
            ctx.execute(
                7,
                &[
                    c.clone(),
                    c_d.clone(),
                    c_w.clone(),
                    d.clone(),
                    w.clone(),
                    cents.clone(),
                    Value::from(h_data.as_str()),
                ],
            )?;
            Ok(summary(
                &PAYMENT_RETURNS,
                &[c.as_i64().unwrap_or(0), (credit == "BC") as i64],
            ))
        })
}

fn order_status() -> ProcedureDef {
    ProcedureDef::new(NAMES[2])
        .signature(args(&[
            ("w_id", int()),
            ("d_id", int()),
            ("c_id", int()),
            ("c_last", DataType::Varchar(None)),
        ]))
        .partition_param(0)
        .statement(sql::BY_NAME)
        .statement(sql::OS_CUSTOMER)
        .statement(sql::OS_ORDER)
        .statement(sql::OS_LINES)
        .body(|ctx, p| {
            let (w, d) = (&p[0], &p[1]);
            let c = customer_id(ctx, 0, (w, d), &p[2], &p[3])?;
            if ctx.execute(1, &[w.clone(), d.clone(), c.clone()])?.is_empty() {
                return Err(ctx.abort("no such customer"));
            }
            // The lines of the customer's last order (none for a customer without one:
            // order 0 does not exist).
            let order = ctx.execute(2, &[w.clone(), d.clone(), c])?;
            let o = int_at(&order, 0, 0).unwrap_or(0);
            ctx.execute(3, &[w.clone(), d.clone(), Value::Int(o)])
        })
}

fn delivery() -> ProcedureDef {
    ProcedureDef::new(NAMES[3])
        .signature(args(&[("w_id", int()), ("carrier_id", int())]))
        .partition_param(0)
        .statement(sql::D_OLDEST)
        .statement(sql::D_DELETE)
        .statement(sql::D_ORDER)
        .statement(sql::D_LINES)
        .statement(sql::D_SUM)
        .statement(sql::D_CUSTOMER)
        .returns(bigints(&DELIVERY_RETURNS))
        .body(|ctx, p| {
            let (w, carrier) = (&p[0], &p[1]);
            let (mut delivered, mut skipped) = (0, 0);
            for d in 1..=DISTRICTS as i64 {
                let d = Value::Int(d);
                let oldest = ctx.execute(0, &[w.clone(), d.clone()])?;
                let Some(o) = int_at(&oldest, 0, 0) else {
                    skipped += 1;
                    continue;
                };
                let o = Value::Int(o);
                ctx.execute(1, &[w.clone(), d.clone(), o.clone()])?;
                let order = ctx.execute(2, &[carrier.clone(), w.clone(), d.clone(), o.clone()])?;
                let Some(c) = int_at(&order, 0, 0) else {
                    return Err(ctx.abort("an order in NEW_ORDER is missing from ORDERS"));
                };
                ctx.execute(3, &[w.clone(), d.clone(), o.clone()])?;
                let sum = int_at(&ctx.execute(4, &[w.clone(), d.clone(), o])?, 0, 0).unwrap_or(0);
                ctx.execute(5, &[Value::Int(sum), w.clone(), d, Value::Int(c)])?;
                delivered += 1;
            }
            Ok(summary(&DELIVERY_RETURNS, &[delivered, skipped]))
        })
}

fn stock_level() -> ProcedureDef {
    ProcedureDef::new(NAMES[4])
        .signature(args(&[("w_id", int()), ("d_id", int()), ("threshold", int())]))
        .partition_param(0)
        .statement(sql::SL_NEXT)
        .statement(sql::SL_COUNT)
        .body(|ctx, p| {
            let next = ctx.execute(0, &[p[0].clone(), p[1].clone()])?;
            let Some(next) = int_at(&next, 0, 0) else {
                return Err(ctx.abort("no such district"));
            };
            ctx.execute(1, &[p[0].clone(), p[1].clone(), Value::Int(next), p[2].clone()])
        })
}
