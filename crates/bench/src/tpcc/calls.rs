//! The five transactions over the wire as one call each of a stored procedure: on
//! Permafrost a `CALL` of the procedures `permafrost serve` has built in (procs.rs), made
//! callable by `CREATE PROCEDURE ... LANGUAGE internal` before the run; on PostgreSQL a
//! `SELECT * FROM` its PL/pgSQL functions of the same arguments (plpgsql.rs).

use tokio_postgres::error::SqlState;
use tokio_postgres::{Client, Statement};

use super::inputs::Input;
use super::plpgsql::FUNCTIONS;
use super::procs::{CREATE, INVALID_ITEM, NAMES};
use super::txns::{Done, Ended, Failure};
use crate::BenchError;
use crate::way::Flavor;
use crate::ycsb::server::describe;

/// Makes the procedures callable (again: an earlier run's are dropped first).
pub async fn create(client: &Client, flavor: Flavor) -> Result<(), BenchError> {
    for (i, name) in NAMES.iter().enumerate() {
        let statements = match flavor {
            Flavor::Permafrost => vec![format!("DROP PROCEDURE IF EXISTS {name}"), CREATE[i].to_string()],
            Flavor::Postgres => vec![FUNCTIONS[i].to_string()],
        };
        for sql in statements {
            client
                .batch_execute(&sql)
                .await
                .map_err(|e| BenchError::Client(format!("{sql}: {}", describe(&e))))?;
        }
    }
    Ok(())
}

/// The CALL statements of one connection, in [`NAMES`]' order.
pub struct Calls(Vec<Statement>);

impl Calls {
    pub async fn prepare(c: &Client, flavor: Flavor) -> Result<Calls, tokio_postgres::Error> {
        let arity = [6, 7, 4, 2, 3];
        let mut calls = Vec::new();
        for (name, n) in NAMES.iter().zip(arity) {
            let params: Vec<String> = (1..=n).map(|i| format!("${i}")).collect();
            let call = match flavor {
                Flavor::Permafrost => format!("CALL {name}({})", params.join(", ")),
                Flavor::Postgres => format!("SELECT * FROM {name}({})", params.join(", ")),
            };
            calls.push(c.prepare(&call).await?);
        }
        Ok(Calls(calls))
    }
}

/// Runs `input` as one CALL (no transaction block: the call is the transaction).
pub async fn run(client: &Client, calls: &Calls, input: &Input) -> Result<Done, Failure> {
    let st = &calls.0[input.kind().index()];
    let result = match input {
        Input::NewOrder { w, d, c, lines } => {
            let items: Vec<i32> = lines.iter().map(|l| l.0).collect();
            let supply: Vec<i32> = lines.iter().map(|l| l.1).collect();
            let qty: Vec<i32> = lines.iter().map(|l| l.2).collect();
            client.query(st, &[w, d, c, &items, &supply, &qty]).await
        }
        Input::Payment {
            w,
            d,
            c_w,
            c_d,
            customer,
            cents,
        } => {
            let (id, last) = customer.arguments();
            client.query(st, &[w, d, c_w, c_d, &id, &last, cents]).await
        }
        Input::OrderStatus { w, d, customer } => {
            let (id, last) = customer.arguments();
            client.query(st, &[w, d, &id, &last]).await
        }
        Input::Delivery { w, carrier } => client.query(st, &[w, carrier]).await,
        Input::StockLevel { w, d, threshold } => client.query(st, &[w, d, threshold]).await,
    };
    let mut done = Done::default();
    match result {
        Ok(rows) => {
            if matches!(input, Input::Delivery { .. })
                && let Some(r) = rows.first()
            {
                done.skipped_deliveries = r.try_get::<_, i64>(1).unwrap_or(0) as u32;
            }
            done.ended = Some(Ended::Committed);
        }
        Err(e)
            if matches!(input, Input::NewOrder { .. })
                && e.code() == Some(&SqlState::RAISE_EXCEPTION)
                && e.as_db_error().is_some_and(|d| d.message().ends_with(INVALID_ITEM)) =>
        {
            done.ended = Some(Ended::RolledBack)
        }
        Err(e) => return Err(Failure::Postgres(e)),
    }
    Ok(done)
}
