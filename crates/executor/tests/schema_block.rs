//! A transaction block that changes the schema and runs statements (schema_block.rs): its
//! statements see its changes; a probe and an abandoned block leave nothing behind; the
//! commit applies changes and writes together, is one command-log record, and replays
//! (from the log, and after a snapshot); a schema change by another connection or a
//! changed result fails the commit with 40001 and applies nothing.

mod common;

use std::path::Path;

use permafrost_executor::{
    Config, Database, LogConfig, LogMode, NewStatement, Place, Rows, SchemaDraft, SnapshotConfig, StopFlag,
    TxnStatement,
};
use permafrost_types::Value;

fn config(dir: &Path) -> Config {
    let mut log = LogConfig::new(dir.join("log"));
    log.mode = LogMode::Async;
    let mut snaps = SnapshotConfig::new(dir.join("snapshots"));
    snaps.interval = None;
    snaps.log_bytes = 0;
    Config::builder()
        .partitions(2)
        .command_log(log)
        .snapshots(snaps)
        .build()
        .unwrap()
}

/// A client's block, as the server keeps it: its schema changes as drafts, its statements
/// planned against the latest.
struct Block<'a> {
    db: &'a Database,
    now: i64,
    draft: Option<SchemaDraft>,
    all: Vec<TxnStatement>,
}

impl<'a> Block<'a> {
    /// The seed of the block's next statement, as the server gives it.
    fn seed(&self) -> u64 {
        TxnStatement::seed_for(self.now as u64, self.all.len())
    }

    fn begin(db: &'a Database) -> Block<'a> {
        Block {
            db,
            now: 1_700_000_000_000_000,
            draft: None,
            all: Vec::new(),
        }
    }

    fn ddl(&mut self, sql: &str) -> permafrost_executor::Result<()> {
        let d = self.db.draft_ddl(self.draft.as_ref(), self.all.len(), sql)?;
        self.draft = Some(d);
        Ok(())
    }

    fn run(&mut self, sql: &str) -> permafrost_executor::Result<Rows> {
        let catalog = match &self.draft {
            Some(d) => d.catalog().clone(),
            None => self.db.catalog(),
        };
        let s = self
            .db
            .ad_hoc_in(catalog.clone(), permafrost_sql::prepare(&catalog, sql).unwrap());
        let next = NewStatement {
            stmt: &s,
            params: vec![],
            seed: self.seed(),
        };
        let rows = match &self.draft {
            Some(d) => common::block_on(self.db.probe_draft(d, &self.all, next, self.now, StopFlag::new()))?,
            None => {
                let before: Vec<&TxnStatement> = self.all.iter().filter(|s| s.writes()).collect();
                common::block_on(self.db.probe(&before, next, self.now, StopFlag::new(), Place::Here))?
            }
        };
        self.all.push(TxnStatement {
            stmt: s,
            params: vec![],
            digest: rows.digest(),
            seen: None,
            done: None,
            seed: if rows.drew_random { self.seed() } else { 0 },
            draws: rows.draws.clone(),
            reach: Default::default(),
        });
        Ok(rows)
    }

    fn commit(self) -> permafrost_executor::Result<()> {
        let draft = self.draft.expect("a block with schema changes");
        self.db.commit_draft(&draft, &self.all, self.now, StopFlag::new())
    }
}

fn values(db: &Database, sql: &str) -> Vec<Vec<Value>> {
    db.execute_sql(sql, vec![]).unwrap().to_values()
}

fn ints(rows: &[i64]) -> Vec<Vec<Value>> {
    rows.iter().map(|&n| vec![Value::Int(n)]).collect()
}

#[test]
fn statements_after_a_schema_change_see_it_and_commit_with_it() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(config(dir.path())).unwrap();
        db.execute_ddl("CREATE TABLE log (id BIGINT PRIMARY KEY, what TEXT)")
            .unwrap();
        db.execute_sql("INSERT INTO log VALUES (1, 'start')", vec![]).unwrap();

        // Abandoned after its probes: nothing of it stays, and the same names are free.
        let mut b = Block::begin(&db);
        b.ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT)").unwrap();
        b.ddl("CREATE INDEX t_v ON t (v)").unwrap();
        b.run("INSERT INTO t VALUES (1, 'a'), (2, 'b')").unwrap();
        assert_eq!(b.run("SELECT id FROM t WHERE v = 'b'").unwrap().to_values(), ints(&[2]));
        drop(b);
        assert!(db.execute_sql("SELECT * FROM t", vec![]).is_err());

        // Committed: a read between two changes, a rename, writes to the new table and
        // to an old one.
        let mut b = Block::begin(&db);
        b.ddl("CREATE TABLE t (id BIGINT PRIMARY KEY, v TEXT DEFAULT 'd')")
            .unwrap();
        assert!(b.run("SELECT * FROM t").unwrap().to_values().is_empty());
        b.ddl("ALTER TABLE t RENAME COLUMN v TO w").unwrap();
        b.ddl("CREATE INDEX t_w ON t (w)").unwrap();
        b.run("INSERT INTO t (id) VALUES (1), (2), (3)").unwrap();
        b.run("INSERT INTO log VALUES (2, 'migrated')").unwrap();
        assert_eq!(
            b.run("SELECT count(*) FROM t WHERE w = 'd'").unwrap().to_values(),
            ints(&[3])
        );
        b.commit().unwrap();
        assert_eq!(
            values(&db, "SELECT id FROM t WHERE w = 'd' ORDER BY id"),
            ints(&[1, 2, 3])
        );
        assert_eq!(values(&db, "SELECT id FROM log ORDER BY id"), ints(&[1, 2]));
        db.execute_sql("INSERT INTO t (id) VALUES (4)", vec![]).unwrap();
    }
    // Replayed from the log: the changes, then the writes, then what came after.
    let db = Database::open(config(dir.path())).unwrap();
    let report = db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(report.schema_changes, 2, "{report:?}");
    assert_eq!(
        values(&db, "SELECT id FROM t WHERE w = 'd' ORDER BY id"),
        ints(&[1, 2, 3, 4])
    );
    assert_eq!(values(&db, "SELECT id FROM log ORDER BY id"), ints(&[1, 2]));
    // And from a snapshot taken after it.
    db.snapshot().unwrap();
    drop(db);
    let db = Database::open(config(dir.path())).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(
        values(&db, "SELECT id FROM t WHERE w = 'd' ORDER BY id"),
        ints(&[1, 2, 3, 4])
    );
}

#[test]
fn a_block_fails_with_40001_when_the_schema_or_its_reads_changed() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    db.execute_ddl("CREATE TABLE a (id BIGINT PRIMARY KEY)").unwrap();
    db.execute_sql("INSERT INTO a VALUES (1)", vec![]).unwrap();

    // Another connection changed the schema since the block's first change.
    let mut b = Block::begin(&db);
    b.ddl("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    b.run("INSERT INTO t VALUES (1)").unwrap();
    db.execute_ddl("CREATE TABLE other (id BIGINT PRIMARY KEY)").unwrap();
    let e = b.commit().unwrap_err();
    assert_eq!(e.sqlstate(), "40001", "{e}");
    assert!(db.execute_sql("SELECT * FROM t", vec![]).is_err());

    // A read of the block changed since it was shown: nothing applies.
    let mut b = Block::begin(&db);
    b.ddl("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    assert_eq!(b.run("SELECT count(*) FROM a").unwrap().to_values(), ints(&[1]));
    b.run("INSERT INTO t VALUES (1)").unwrap();
    db.execute_sql("INSERT INTO a VALUES (2)", vec![]).unwrap();
    let e = b.commit().unwrap_err();
    assert_eq!(e.sqlstate(), "40001", "{e}");
    assert!(db.execute_sql("SELECT * FROM t", vec![]).is_err());
    // The stores were left as the published schema says: the table can be made now.
    db.execute_ddl("CREATE TABLE t (id BIGINT PRIMARY KEY)").unwrap();
    db.execute_sql("INSERT INTO t VALUES (7)", vec![]).unwrap();
    assert_eq!(values(&db, "SELECT id FROM t"), ints(&[7]));
}

#[test]
fn a_dropped_table_comes_back_unless_the_block_commits() {
    let dir = tempfile::tempdir().unwrap();
    let db = Database::open(config(dir.path())).unwrap();
    db.execute_ddl("CREATE TABLE a (id BIGINT PRIMARY KEY)").unwrap();
    db.execute_ddl("CREATE TABLE b (id BIGINT PRIMARY KEY)").unwrap();
    db.execute_ddl("CREATE INDEX b_id ON b (id)").unwrap();
    db.execute_sql("INSERT INTO a VALUES (1), (2), (3)", vec![]).unwrap();
    // Probed, then abandoned: the table and its rows are back.
    let mut b = Block::begin(&db);
    b.ddl("DROP TABLE a").unwrap();
    b.run("INSERT INTO b VALUES (1)").unwrap();
    drop(b);
    assert_eq!(values(&db, "SELECT id FROM a ORDER BY id"), ints(&[1, 2, 3]));
    // Committed: gone, and the write stays.
    let mut b = Block::begin(&db);
    b.ddl("DROP TABLE a").unwrap();
    b.run("INSERT INTO b VALUES (1)").unwrap();
    b.commit().unwrap();
    assert!(db.execute_sql("SELECT * FROM a", vec![]).is_err());
    assert_eq!(values(&db, "SELECT id FROM b"), ints(&[1]));
    // A dropped index cannot be put back cheaply: refused with statements.
    let mut b = Block::begin(&db);
    b.ddl("DROP INDEX b_id").unwrap();
    let e = b.run("INSERT INTO b VALUES (2)").unwrap_err();
    assert_eq!(e.sqlstate(), "0A000", "{e}");
    drop(b);
    assert_eq!(values(&db, "SELECT id FROM b"), ints(&[1]));
}

#[test]
fn changes_after_writes_run_and_replay_where_they_came() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(config(dir.path())).unwrap();
        db.execute_ddl("CREATE TABLE log (id BIGINT PRIMARY KEY, what TEXT)")
            .unwrap();
        let mut b = Block::begin(&db);
        b.run("INSERT INTO log VALUES (1, 'a')").unwrap();
        b.ddl("ALTER TABLE log RENAME COLUMN what TO why").unwrap();
        b.ddl("CREATE TABLE copy (id BIGINT PRIMARY KEY, why TEXT)").unwrap();
        b.run("INSERT INTO log (id, why) VALUES (2, 'b')").unwrap();
        b.run("INSERT INTO copy SELECT id, why FROM log").unwrap();
        b.ddl("CREATE TABLE after (id BIGINT PRIMARY KEY)").unwrap();
        b.run("INSERT INTO after SELECT count(*) FROM copy").unwrap();
        // An index over rows the block wrote cannot be built inside it.
        let mut bad = Block::begin(&db);
        bad.run("INSERT INTO log VALUES (9, 'z')").unwrap();
        bad.ddl("CREATE INDEX log_what ON log (what)").unwrap();
        let e = bad.run("SELECT 1").unwrap_err();
        assert_eq!(e.sqlstate(), "0A000", "{e}");
        drop(bad);
        b.commit().unwrap();
        assert_eq!(values(&db, "SELECT id FROM copy ORDER BY id"), ints(&[1, 2]));
        assert_eq!(values(&db, "SELECT id FROM after"), ints(&[2]));
    }
    let db = Database::open(config(dir.path())).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(
        values(&db, "SELECT why FROM log ORDER BY id"),
        vec![vec![Value::Text("a".into())], vec![Value::Text("b".into())]]
    );
    assert_eq!(values(&db, "SELECT id FROM copy ORDER BY id"), ints(&[1, 2]));
    assert_eq!(values(&db, "SELECT id FROM after"), ints(&[2]));
}

#[test]
fn column_changes_in_a_block_are_undone_or_committed_and_replay() {
    let dir = tempfile::tempdir().unwrap();
    {
        let db = Database::open(config(dir.path())).unwrap();
        db.execute_ddl("CREATE TABLE p (id BIGINT PRIMARY KEY, name VARCHAR(10) NOT NULL, old TEXT)")
            .unwrap();
        db.execute_sql("INSERT INTO p VALUES (1, 'a', 'x'), (2, 'b', NULL)", vec![])
            .unwrap();
        // Abandoned: the table is as it was, its rows too.
        let mut b = Block::begin(&db);
        b.ddl("ALTER TABLE p ADD COLUMN n INT NOT NULL DEFAULT 7").unwrap();
        b.ddl("ALTER TABLE p DROP COLUMN old").unwrap();
        assert_eq!(b.run("SELECT sum(n) FROM p").unwrap().to_values(), ints(&[14]));
        drop(b);
        assert_eq!(values(&db, "SELECT count(old) FROM p"), ints(&[1]));
        assert!(db.execute_sql("SELECT n FROM p", vec![]).is_err());
        // Committed, as Django's migrations run them: a column added with a default for the
        // rows there, the default dropped, a type widened, a column dropped, a row written.
        let mut b = Block::begin(&db);
        b.ddl("ALTER TABLE p ADD COLUMN n INT NOT NULL DEFAULT 7").unwrap();
        b.ddl("ALTER TABLE p ALTER COLUMN n DROP DEFAULT").unwrap();
        b.ddl("ALTER TABLE p ALTER COLUMN name TYPE VARCHAR(50)").unwrap();
        b.ddl("ALTER TABLE p DROP COLUMN old CASCADE").unwrap();
        b.run("INSERT INTO p (id, name, n) VALUES (3, 'a longer name here', 1)")
            .unwrap();
        b.commit().unwrap();
        assert_eq!(values(&db, "SELECT sum(n) FROM p"), ints(&[15]));
        let e = db
            .execute_sql("INSERT INTO p (id, name) VALUES (4, 'd')", vec![])
            .unwrap_err();
        assert_eq!(e.sqlstate(), "23502", "{e}");
        db.execute_ddl("ALTER TABLE p ALTER COLUMN n SET NOT NULL").unwrap();
    }
    let db = Database::open(config(dir.path())).unwrap();
    db.recover(vec![], &mut |_, _| {}).unwrap();
    assert_eq!(values(&db, "SELECT sum(n) FROM p"), ints(&[15]));
    assert_eq!(
        values(&db, "SELECT name FROM p WHERE id = 3"),
        vec![vec![Value::Text("a longer name here".into())]]
    );
    assert!(db.execute_sql("SELECT old FROM p", vec![]).is_err());
}
