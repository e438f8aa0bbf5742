"""Alembic (SQLAlchemy's migration tool) against a running Permafrost server, as a new
user runs it: `alembic init`, two revisions (tables, an index, a data migration with
op.bulk_insert and op.execute), `upgrade head`, `downgrade base`, `upgrade head` again.
Alembic runs every migration and its version bookkeeping (CREATE TABLE alembic_version,
INSERT / UPDATE / DELETE of its row) in one transaction block, so this checks that a
block's schema changes are seen by its later statements and roll back with it.

Usage: python3 alembic_test.py PORT
"""

import os
import sys
import tempfile
import textwrap

import sqlalchemy as sa
from alembic import command
from alembic.config import Config

PORT = int(sys.argv[1])
URL = f"postgresql+psycopg2://u@127.0.0.1:{PORT}/postgres"

REV1 = '''
"""accounts"""
from alembic import op
import sqlalchemy as sa

revision = "a1"
down_revision = None


def upgrade():
    op.create_table(
        "account",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("name", sa.String(50), nullable=False),
        sa.Column("balance", sa.Numeric(12, 2), server_default="0"),
    )
    op.create_index("ix_account_name", "account", ["name"])
    table = sa.table("account", sa.column("id", sa.Integer), sa.column("name", sa.String))
    op.bulk_insert(table, [{"id": 1, "name": "ann"}, {"id": 2, "name": "bob"}])


def downgrade():
    op.drop_table("account")
'''

REV2 = '''
"""notes, and a data fix"""
from alembic import op
import sqlalchemy as sa

revision = "b2"
down_revision = "a1"


def upgrade():
    op.create_table(
        "note",
        sa.Column("id", sa.Integer, primary_key=True),
        sa.Column("account_id", sa.Integer, nullable=False),
        sa.Column("body", sa.Text),
    )
    op.execute("INSERT INTO note (id, account_id, body) SELECT id, id, 'welcome ' || name FROM account")
    op.execute("UPDATE account SET balance = 10 WHERE name = 'ann'")


def downgrade():
    op.drop_table("note")
'''


def fail(msg):
    print(f"FAIL: {msg}")
    sys.exit(1)


def check(engine, expected_version, expected):
    with engine.connect() as c:
        version = c.execute(sa.text("SELECT version_num FROM alembic_version")).scalars().all()
        if version != expected_version:
            fail(f"alembic_version is {version}, expected {expected_version}")
        for sql, want in expected:
            got = [tuple(r) for r in c.execute(sa.text(sql)).all()]
            if got != want:
                fail(f"{sql}: got {got}, expected {want}")


def main():
    engine = sa.create_engine(URL)
    with engine.begin() as c:
        for t in ("note", "account", "alembic_version"):
            c.execute(sa.text(f"DROP TABLE IF EXISTS {t}"))
    with tempfile.TemporaryDirectory() as d:
        scripts = os.path.join(d, "migrations")
        cfg = Config(os.path.join(d, "alembic.ini"))
        command.init(cfg, scripts)
        cfg.set_main_option("script_location", scripts)
        cfg.set_main_option("sqlalchemy.url", URL)
        for name, text in (("a1_accounts.py", REV1), ("b2_notes.py", REV2)):
            with open(os.path.join(scripts, "versions", name), "w") as f:
                f.write(textwrap.dedent(text))

        command.upgrade(cfg, "head")
        upgraded = [
            ("SELECT id, name, balance FROM account ORDER BY id", [(1, "ann", 10), (2, "bob", 0)]),
            ("SELECT account_id, body FROM note ORDER BY id", [(1, "welcome ann"), (2, "welcome bob")]),
        ]
        check(engine, ["b2"], upgraded)
        print("upgrade head: ok")

        command.downgrade(cfg, "a1")
        check(engine, ["a1"], [("SELECT id, name FROM account ORDER BY id", [(1, "ann"), (2, "bob")])])
        with engine.connect() as c:
            if sa.inspect(c).has_table("note"):
                fail("note still exists after downgrade to a1")
        print("downgrade a1: ok")

        command.downgrade(cfg, "base")
        with engine.connect() as c:
            insp = sa.inspect(c)
            if insp.has_table("account") or insp.has_table("note"):
                fail("tables left after downgrade to base")
            if c.execute(sa.text("SELECT count(*) FROM alembic_version")).scalar() != 0:
                fail("alembic_version not emptied by downgrade to base")
        print("downgrade base: ok")

        command.upgrade(cfg, "head")
        check(engine, ["b2"], upgraded)
        print("upgrade head again: ok")
    with engine.begin() as c:
        for t in ("note", "account", "alembic_version"):
            c.execute(sa.text(f"DROP TABLE IF EXISTS {t}"))
    print("alembic: all checks passed")


if __name__ == "__main__":
    main()
