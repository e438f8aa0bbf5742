//! What the interactive transactions (txns.rs) run their statements through: a connection
//! of either driver, PostgreSQL's (tokio-postgres, which Permafrost speaks too) or
//! MariaDB's (mysql_async, mariadb.rs), so that one text of each transaction's logic drives
//! every system. A statement is named by [`St`]; each driver prepares its dialect's text of
//! it once per connection.

use std::future::Future;

use tokio_postgres::types::{IsNull, ToSql, Type, to_sql_checked};
use tokio_postgres::{Client, Row, Statement};

use super::options::DISTRICTS;
use super::sql;
use crate::ycsb::server::describe;

/// A statement of the interactive transactions: an index into each driver's prepared list.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct St(pub usize);

impl St {
    pub const NO_CUSTOMER: St = St(0);
    pub const NO_DISTRICT: St = St(1);
    pub const NO_ORDER: St = St(2);
    pub const NO_NEW_ORDER: St = St(3);
    pub const NO_ITEM: St = St(4);
    pub const NO_STOCK_UPDATE: St = St(5);
    pub const NO_LINE: St = St(6);
    pub const P_WAREHOUSE: St = St(7);
    pub const P_DISTRICT: St = St(8);
    pub const BY_NAME: St = St(9);
    pub const P_CUSTOMER: St = St(10);
    pub const P_CUSTOMER_DATA: St = St(11);
    pub const P_UPDATE_BC: St = St(12);
    pub const P_UPDATE: St = St(13);
    pub const P_HISTORY: St = St(14);
    pub const OS_CUSTOMER: St = St(15);
    pub const OS_ORDER: St = St(16);
    pub const OS_LINES: St = St(17);
    pub const D_OLDEST: St = St(18);
    pub const D_DELETE: St = St(19);
    pub const D_ORDER: St = St(20);
    pub const D_LINES: St = St(21);
    pub const D_SUM: St = St(22);
    pub const D_CUSTOMER: St = St(23);
    pub const SL_NEXT: St = St(24);
    pub const SL_COUNT: St = St(25);
    /// The statements besides New-Order's stock reads.
    const FIXED: usize = 26;

    /// New-Order's stock read for an order of district `d` (1 to 10).
    pub fn no_stock(d: i32) -> St {
        St(Self::FIXED + d as usize - 1)
    }

    /// How many there are.
    pub const COUNT: usize = Self::FIXED + DISTRICTS as usize;
}

/// The PostgreSQL texts, in [`St`]'s order: those of sql.rs, the rows a transaction goes on
/// to change read `FOR UPDATE` (for PostgreSQL's READ COMMITTED).
pub fn postgres_texts() -> Vec<String> {
    let fixed = [
        sql::NO_CUSTOMER,
        sql::NO_DISTRICT,
        sql::NO_ORDER,
        sql::NO_NEW_ORDER,
        sql::NO_ITEM,
        sql::NO_STOCK_UPDATE,
        sql::NO_LINE,
        sql::P_WAREHOUSE,
        sql::P_DISTRICT,
        sql::BY_NAME,
        &format!("{} FOR UPDATE", sql::P_CUSTOMER),
        sql::P_CUSTOMER_DATA,
        sql::P_UPDATE_BC,
        sql::P_UPDATE,
        sql::P_HISTORY,
        sql::OS_CUSTOMER,
        sql::OS_ORDER,
        sql::OS_LINES,
        &format!("{} FOR UPDATE", sql::D_OLDEST),
        sql::D_DELETE,
        sql::D_ORDER,
        sql::D_LINES,
        sql::D_SUM,
        sql::D_CUSTOMER,
        sql::SL_NEXT,
        sql::SL_COUNT,
    ]
    .map(str::to_string);
    let stock = (1..=DISTRICTS).map(|d| format!("{} FOR UPDATE", sql::no_stock(d)));
    fixed.into_iter().chain(stock).collect()
}

/// A statement's parameter.
#[derive(Debug, Clone, Copy)]
pub enum Param<'a> {
    Int(i32),
    Big(i64),
    Text(&'a str),
}

/// Why an attempt failed: the database refused a statement, or a row the population
/// guarantees was not there.
#[derive(Debug)]
pub enum Failure {
    Postgres(tokio_postgres::Error),
    MariaDb(mysql_async::Error),
    Missing(String),
}

impl From<tokio_postgres::Error> for Failure {
    fn from(e: tokio_postgres::Error) -> Failure {
        Failure::Postgres(e)
    }
}

impl From<mysql_async::Error> for Failure {
    fn from(e: mysql_async::Error) -> Failure {
        Failure::MariaDb(e)
    }
}

impl Failure {
    /// Whether the attempt is run again (a serialization failure, a deadlock, a lock wait).
    pub fn retryable(&self) -> bool {
        match self {
            Failure::Postgres(e) => crate::way::retryable(e),
            Failure::MariaDb(e) => crate::mariadb::retryable(e),
            Failure::Missing(_) => false,
        }
    }

    /// Whether the connection is gone.
    pub fn closed(&self) -> bool {
        match self {
            Failure::Postgres(e) => e.is_closed(),
            Failure::MariaDb(e) => crate::mariadb::connection_failed(e),
            Failure::Missing(_) => false,
        }
    }

    pub fn message(&self) -> String {
        match self {
            Failure::Postgres(e) => describe(e),
            Failure::MariaDb(e) => e.to_string(),
            Failure::Missing(m) => m.clone(),
        }
    }
}

pub type Result<T> = std::result::Result<T, Failure>;

/// A result row's columns, as the transactions read them.
pub trait Cells {
    /// An integer column (any width); None when NULL.
    fn int(&self, i: usize) -> Result<Option<i64>>;
    fn text(&self, i: usize) -> Result<String>;
}

/// A connection running the interactive transactions' statements, one per round trip.
pub trait Session: Send {
    type Row: Cells + Send;
    fn begin(&mut self) -> impl Future<Output = Result<()>> + Send;
    /// Ends the transaction block: COMMIT when `commit`, else ROLLBACK.
    fn end(&mut self, commit: bool) -> impl Future<Output = Result<()>> + Send;
    fn query(&mut self, st: St, params: &[Param<'_>]) -> impl Future<Output = Result<Vec<Self::Row>>> + Send;
    /// A write: the rows it changed.
    fn execute(&mut self, st: St, params: &[Param<'_>]) -> impl Future<Output = Result<u64>> + Send;
}

impl ToSql for Param<'_> {
    fn to_sql(
        &self,
        ty: &Type,
        out: &mut bytes::BytesMut,
    ) -> std::result::Result<IsNull, Box<dyn std::error::Error + Sync + Send>> {
        match self {
            Param::Int(v) => v.to_sql(ty, out),
            Param::Big(v) => v.to_sql(ty, out),
            Param::Text(v) => v.to_sql(ty, out),
        }
    }

    fn accepts(ty: &Type) -> bool {
        <i32 as ToSql>::accepts(ty) || <i64 as ToSql>::accepts(ty) || <&str as ToSql>::accepts(ty)
    }

    to_sql_checked!();
}

impl Cells for Row {
    fn int(&self, i: usize) -> Result<Option<i64>> {
        Ok(match *self.columns()[i].type_() {
            Type::INT2 => self.try_get::<_, Option<i16>>(i)?.map(i64::from),
            Type::INT4 => self.try_get::<_, Option<i32>>(i)?.map(i64::from),
            _ => self.try_get::<_, Option<i64>>(i)?,
        })
    }

    fn text(&self, i: usize) -> Result<String> {
        Ok(self.try_get(i)?)
    }
}

/// A tokio-postgres connection with the statements prepared.
pub struct Postgres {
    client: Client,
    statements: Vec<Statement>,
}

impl Postgres {
    pub async fn prepare(client: Client) -> std::result::Result<Postgres, tokio_postgres::Error> {
        let mut statements = Vec::with_capacity(St::COUNT);
        for text in postgres_texts() {
            statements.push(client.prepare(&text).await?);
        }
        Ok(Postgres { client, statements })
    }

    fn args<'p>(params: &'p [Param<'p>]) -> Vec<&'p (dyn ToSql + Sync)> {
        params.iter().map(|p| p as &(dyn ToSql + Sync)).collect()
    }
}

impl Session for Postgres {
    type Row = Row;

    async fn begin(&mut self) -> Result<()> {
        Ok(self.client.batch_execute("BEGIN").await?)
    }

    async fn end(&mut self, commit: bool) -> Result<()> {
        Ok(self
            .client
            .batch_execute(if commit { "COMMIT" } else { "ROLLBACK" })
            .await?)
    }

    async fn query(&mut self, st: St, params: &[Param<'_>]) -> Result<Vec<Row>> {
        Ok(self.client.query(&self.statements[st.0], &Self::args(params)).await?)
    }

    async fn execute(&mut self, st: St, params: &[Param<'_>]) -> Result<u64> {
        Ok(self.client.execute(&self.statements[st.0], &Self::args(params)).await?)
    }
}
