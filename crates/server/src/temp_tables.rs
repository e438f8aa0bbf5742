//! A session's own names (permafrost_sql::temp): the text of each statement of a session
//! that has temporary tables, may make one, or has a search_path that puts schemas before
//! public is rewritten to name what PostgreSQL would read before it is scanned, cached or
//! planned ([`qualify`], for the simple and the extended protocol alike); and the
//! session's temporary schema is dropped with its tables when the session ends
//! ([`TempSchema`]) or, when it never ended, as the server starts ([`drop_leftovers`]).

use std::borrow::Cow;
use std::sync::Arc;

use permafrost_executor::Database;
use permafrost_sql::temp;
use pgwire::api::ClientInfo;
use pgwire::error::PgWireResult;

use crate::error::sql_error_in;

/// The temporary schema of a session that has made or named one; dropped with the session
/// (its connection's extensions).
struct TempSchema {
    db: Arc<Database>,
    schema: String,
}

impl Drop for TempSchema {
    fn drop(&mut self) {
        if !self.db.catalog().has_schema(&self.schema) {
            return;
        }
        let (db, statement) = (self.db.clone(), temp::drop_statement(&self.schema));
        let run = move || {
            if let Err(e) = db.execute_ddl(&statement) {
                eprintln!(
                    "could not drop a session's temporary tables ({statement}): {e}; they are dropped at the next start"
                );
            }
        };
        match tokio::runtime::Handle::try_current() {
            Ok(h) => drop(h.spawn_blocking(run)),
            Err(_) => run(),
        }
    }
}

/// Statement text `sql` of `client`'s session as it is run: its temporary tables' names
/// qualified with the session's temporary schema (unchanged for a session that has none
/// and a text that makes none, without parsing it).
pub(crate) fn qualify<'a, C: ClientInfo>(db: &Arc<Database>, client: &C, sql: &'a str) -> PgWireResult<Cow<'a, str>> {
    let known = client.session_extensions().get::<TempSchema>();
    // (Most sessions have no temporary table, and most databases no schema but public:
    // their texts go on without a look at anything else.)
    if known.is_none() && !temp::may_name(sql) && !db.with_catalog(|c| c.schemas().next().is_some()) {
        return Ok(Cow::Borrowed(sql));
    }
    let catalog = crate::txn::draft_catalog(&crate::txn::of(client)).unwrap_or_else(|| db.catalog());
    // The schemas the session's search_path puts before public (none while there are none).
    let ahead = match catalog.schemas().next() {
        None => Vec::new(),
        Some(_) => {
            let user = client
                .metadata()
                .get(pgwire::api::METADATA_USER)
                .cloned()
                .unwrap_or_default();
            let settings = crate::session_settings::of(client);
            let has = |s: &str| catalog.has_schema(s) && !temp::is_temp_schema(s);
            settings.path_schemas(&user, has).0
        }
    };
    if known.is_none() && ahead.is_empty() && !temp::may_name(sql) {
        return Ok(Cow::Borrowed(sql));
    }
    let own = match &known {
        Some(t) => t.schema.clone(),
        None => temp::schema_of(client.pid_and_secret_key().0),
    };
    match temp::qualify(&catalog, &own, &ahead, sql) {
        Ok(None) => Ok(Cow::Borrowed(sql)),
        Ok(Some(text)) => {
            if known.is_none() && text.contains(own.as_str()) {
                client.session_extensions().insert(TempSchema {
                    db: db.clone(),
                    schema: own,
                });
            }
            Ok(Cow::Owned(text))
        }
        Err(e) => Err(sql_error_in(e, sql)),
    }
}

/// Drops the temporary schemas of sessions that did not end before the server stopped
/// (a crash; a shutdown with sessions open), as a server starts.
pub(crate) async fn drop_leftovers(db: &Arc<Database>) -> crate::error::Result<()> {
    let db = db.clone();
    let drop_all = move || {
        for schema in temp::leftovers(&db.catalog()) {
            db.execute_ddl(&temp::drop_statement(&schema))?;
        }
        Ok(())
    };
    // (The statements wait for the partitions, which a runtime's thread may not.)
    tokio::task::spawn_blocking(drop_all)
        .await
        .unwrap_or_else(|e| std::panic::resume_unwind(e.into_panic()))
}
