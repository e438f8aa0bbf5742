"""SQLAlchemy 2 (a default engine) and psycopg2 (its default, non-autocommit mode)
against a running `permafrost serve`.

Usage: python3 sqlalchemy_test.py PORT

SQLAlchemy is run over both of its PostgreSQL drivers, psycopg 3 and psycopg2: connect
(which reads pg_type and settings), create_all (which asks the catalog whether each table
exists, then creates them inside one transaction), ORM sessions with a relationship, commit
and rollback, the inspector (tables, columns, primary keys, indexes, foreign keys), queries
with subqueries (Query.count(), IN, a scalar subquery, EXISTS) and UNION, joinedload (LEFT
OUTER JOIN, of a many-to-many relation too), relationship .any() (a correlated EXISTS), a correlated scalar subquery, upserts
(the PostgreSQL dialect's on_conflict_do_update / on_conflict_do_nothing, on the primary key and on a unique column
that is not the partition column), foreign keys (ForeignKey columns, enforced: a missing key
is an IntegrityError; reflected by the inspector), and drop_all. Native enums (sa.Enum over
a Python enum: create_all makes the type, values round trip and sort in the type's order,
the inspector and Table(autoload_with=...) read it back, drop_all drops it) over both
drivers. Tables in a schema of their own (`__table_args__ = {"schema": ...}`): create_all,
a relationship across them, the inspector by schema, autoload, drop_all. Each check prints
ok/FAIL; the exit status is the number of failures.
"""

import enum
import sys
import traceback

import psycopg2
from sqlalchemy import (
    Column,
    Enum,
    ForeignKey,
    MetaData,
    Index,
    Integer,
    String,
    Table,
    create_engine,
    exists,
    func,
    inspect,
    select,
    text,
    union,
)
from sqlalchemy.dialects.postgresql import insert as pg_insert
from sqlalchemy.exc import IntegrityError
from sqlalchemy.orm import DeclarativeBase, Mapped, Session, joinedload, mapped_column, relationship

PORT = int(sys.argv[1])
FAILED = 0
CHECKS = 0


def check(name):
    def run(fn):
        global FAILED, CHECKS
        CHECKS += 1
        try:
            fn()
            print(f"ok   {name}")
        except Exception:  # noqa: BLE001 - every failure is reported
            FAILED += 1
            print(f"FAIL {name}")
            traceback.print_exc()
        return fn

    return run


class Base(DeclarativeBase):
    pass


class Author(Base):
    __tablename__ = "sa_authors"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(40))
    books: Mapped[list["Book"]] = relationship(back_populates="author", order_by="Book.id")


book_tags = Table(
    "sa_book_tags",
    Base.metadata,
    Column("book_id", Integer, ForeignKey("sa_books.id"), primary_key=True),
    Column("tag_id", Integer, ForeignKey("sa_tags.id"), primary_key=True),
)


class Tag(Base):
    __tablename__ = "sa_tags"
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str] = mapped_column(String(20), unique=True)


class Book(Base):
    __tablename__ = "sa_books"
    id: Mapped[int] = mapped_column(primary_key=True)
    title: Mapped[str]
    author_id: Mapped[int] = mapped_column(ForeignKey("sa_authors.id"))
    author: Mapped[Author] = relationship(back_populates="books")
    # Many-to-many through an association table.
    tags: Mapped[list[Tag]] = relationship(secondary=book_tags)
    __table_args__ = (Index("sa_books_title", "title"),)


def orm_round_trip(url):
    engine = create_engine(url)
    Base.metadata.drop_all(engine)
    Base.metadata.create_all(engine)
    # create_all again finds the tables (the catalog answers) and creates nothing.
    Base.metadata.create_all(engine)

    with Session(engine) as s:
        a = Author(name="Le Guin", books=[Book(title="The Dispossessed"), Book(title="Lathe of Heaven")])
        s.add(a)
        s.commit()
        author_id = a.id
    with Session(engine) as s:
        s.add(Author(name="never", books=[Book(title="never")]))
        s.flush()
        s.rollback()
    with Session(engine) as s:
        authors = s.scalars(select(Author)).all()
        assert [x.name for x in authors] == ["Le Guin"], authors
        assert authors[0].id == author_id
        assert [b.title for b in authors[0].books] == ["The Dispossessed", "Lathe of Heaven"]
        assert s.scalar(select(Book).where(Book.title == "never")) is None, "a rolled-back row is visible"
        # An error inside the session's transaction, then rollback: the session goes on.
        try:
            s.execute(text("SELECT * FROM sa_nope"))
            raise AssertionError("no error")
        except Exception as e:  # noqa: BLE001
            assert "sa_nope" in str(e), e
        s.rollback()
        assert s.scalar(select(Author.name)) == "Le Guin"

    i = inspect(engine)
    assert {"sa_authors", "sa_books"} <= set(i.get_table_names()), i.get_table_names()
    cols = i.get_columns("sa_books")
    assert [c["name"] for c in cols] == ["id", "title", "author_id"], cols
    # An unbounded VARCHAR is TEXT here.
    assert str(cols[1]["type"]) == "TEXT" and not cols[1]["nullable"], cols[1]
    assert cols[0]["autoincrement"] is True, cols[0]
    name = i.get_columns("sa_authors")[1]
    assert str(name["type"]) == "VARCHAR(40)", name
    assert i.get_pk_constraint("sa_books")["constrained_columns"] == ["id"]
    idx = i.get_indexes("sa_books")
    assert [(x["name"], x["column_names"], x["unique"]) for x in idx] == [("sa_books_title", ["title"], False)], idx
    fks = i.get_foreign_keys("sa_books")
    assert [(f["constrained_columns"], f["referred_table"], f["referred_columns"]) for f in fks] == [
        (["author_id"], "sa_authors", ["id"])
    ], fks
    assert i.has_table("sa_authors") and not i.has_table("sa_nope")

    with Session(engine) as s:
        s.add_all([Author(name="Butler"), Author(name="Jemisin")])
        s.commit()
        # Query.count() wraps the query as a subquery in FROM.
        assert s.query(Author).filter(Author.name != "Butler").count() == 2
        # IN (subquery), a scalar subquery, EXISTS, UNION.
        with_books = select(Book.author_id)
        assert [a.name for a in s.scalars(select(Author).where(Author.id.in_(with_books)))] == ["Le Guin"]
        most = select(func.max(Author.id)).scalar_subquery()
        newest = max(s.scalars(select(Author)).all(), key=lambda a: a.id).name
        assert s.scalar(select(Author.name).where(Author.id == most)) == newest
        assert s.scalar(select(exists().where(Book.title == "Lathe of Heaven"))) is True
        names = union(select(Author.name).where(Author.name < "C"), select(Book.title).where(Book.title < "M"))
        assert sorted(s.scalars(names)) == ["Butler", "Lathe of Heaven"]
    with Session(engine) as s:
        # joinedload: one LEFT OUTER JOIN, authors without books kept.
        loaded = s.scalars(select(Author).options(joinedload(Author.books)).order_by(Author.name)).unique().all()
        assert [(a.name, len(a.books)) for a in loaded] == [("Butler", 0), ("Jemisin", 0), ("Le Guin", 2)], loaded
        # Many-to-many: the association table and the tags joined inside the LEFT OUTER
        # JOIN, as one null-extended group (`LEFT OUTER JOIN (sa_book_tags JOIN sa_tags ON
        # ...) ON ...`); a book without tags is kept.
        first = s.scalar(select(Book).where(Book.title == "The Dispossessed"))
        first.tags = [Tag(name="sf"), Tag(name="classic")]
        s.commit()
        loaded = s.scalars(
            select(Author).options(joinedload(Author.books).joinedload(Book.tags)).order_by(Author.name)
        ).unique().all()
        shelf = [(a.name, [(b.title, sorted(t.name for t in b.tags)) for b in a.books]) for a in loaded]
        assert shelf == [
            ("Butler", []),
            ("Jemisin", []),
            ("Le Guin", [("The Dispossessed", ["classic", "sf"]), ("Lathe of Heaven", [])]),
        ], shelf
        # relationship .any() / ~.any(): a correlated EXISTS.
        has = s.scalars(select(Author.name).where(Author.books.any(Book.title.like("L%")))).all()
        assert has == ["Le Guin"], has
        lonely = sorted(s.scalars(select(Author.name).where(~Author.books.any())))
        assert lonely == ["Butler", "Jemisin"], lonely
        # A correlated scalar subquery in the select list.
        n_books = select(func.count(Book.id)).where(Book.author_id == Author.id).correlate(Author).scalar_subquery()
        counts = s.execute(select(Author.name, n_books).order_by(Author.name)).all()
        assert [tuple(r) for r in counts] == [("Butler", 0), ("Jemisin", 0), ("Le Guin", 2)], counts

    with Session(engine) as s:
        # Upserts as the PostgreSQL dialect writes them: on a unique column that is not the
        # partition column (sa_tags.name, one key in the whole table), and on the key.
        ins = pg_insert(Tag).values([{"name": "sf"}, {"name": "fantasy"}])
        s.execute(ins.on_conflict_do_nothing(index_elements=[Tag.name]))
        ins = pg_insert(Author).values([{"id": author_id, "name": "Ursula K. Le Guin"}, {"id": 9000, "name": "Tiptree"}])
        done = s.execute(
            ins.on_conflict_do_update(index_elements=[Author.id], set_={"name": ins.excluded.name}).returning(
                Author.id, Author.name
            )
        ).all()
        assert sorted(tuple(r) for r in done) == [(author_id, "Ursula K. Le Guin"), (9000, "Tiptree")], done
        s.commit()
        assert sorted(s.scalars(select(Tag.name))) == ["classic", "fantasy", "sf"]
        assert s.get(Author, author_id).name == "Ursula K. Le Guin"
        s.add(Tag(name="sf"))
        try:
            s.commit()
            raise AssertionError("a repeated unique name was stored")
        except IntegrityError as e:
            assert "sa_tags_name_key" in str(e), e
            s.rollback()
        assert s.scalar(select(func.count()).select_from(Tag)) == 3

    with Session(engine) as s:
        # The foreign keys are enforced: a book of a missing author, and removing an
        # author whose books remain, are IntegrityErrors; nothing of either is applied.
        s.add(Book(title="Orphan", author_id=424242))
        try:
            s.commit()
            raise AssertionError("a book of a missing author was stored")
        except IntegrityError as e:
            assert "sa_books_author_id_fkey" in str(e), e
            s.rollback()
        try:
            s.execute(text("DELETE FROM sa_authors WHERE id = :id"), {"id": author_id})
            s.commit()
            raise AssertionError("an author with books was deleted")
        except IntegrityError as e:
            assert "still referenced" in str(e), e
            s.rollback()
        assert s.get(Author, author_id) is not None

    Base.metadata.drop_all(engine)
    assert not inspect(engine).has_table("sa_authors")
    engine.dispose()


class Mood(enum.Enum):
    sad = 1
    ok = 2
    happy = 3


class EnumBase(DeclarativeBase):
    pass


class Person(EnumBase):
    __tablename__ = "sa_people"
    id: Mapped[int] = mapped_column(primary_key=True)
    mood: Mapped[Mood] = mapped_column(Enum(Mood, name="sa_mood"))
    status = mapped_column(Enum("new", "done", name="sa_status"), nullable=True)


def native_enums(url):
    engine = create_engine(url)
    EnumBase.metadata.drop_all(engine)
    EnumBase.metadata.create_all(engine)
    with Session(engine) as s:
        s.add_all([Person(id=1, mood=Mood.happy, status="new"), Person(id=2, mood=Mood.sad), Person(id=3, mood=Mood.ok)])
        s.commit()
        # Sorted in the type's order (sad, ok, happy), not the labels' alphabetical one.
        people = s.scalars(select(Person).order_by(Person.mood)).all()
        assert [(p.id, p.mood, p.status) for p in people] == [
            (2, Mood.sad, None),
            (3, Mood.ok, None),
            (1, Mood.happy, "new"),
        ], people
        assert s.scalars(select(Person.id).where(Person.mood > Mood.sad).order_by(Person.id)).all() == [1, 3]
    enums = {e["name"]: e["labels"] for e in inspect(engine).get_enums()}
    assert enums.get("sa_mood") == ["sad", "ok", "happy"], enums
    assert enums.get("sa_status") == ["new", "done"], enums
    reflected = Table("sa_people", MetaData(), autoload_with=engine)
    assert reflected.c.mood.type.name == "sa_mood", reflected.c.mood.type
    assert list(reflected.c.mood.type.enums) == ["sad", "ok", "happy"]
    EnumBase.metadata.drop_all(engine)
    names = {e["name"] for e in inspect(engine).get_enums()}
    assert not names & {"sa_mood", "sa_status"}, names
    engine.dispose()


class SchemaBase(DeclarativeBase):
    pass


class Shelf(SchemaBase):
    __tablename__ = "shelf"
    __table_args__ = {"schema": "sa_lib"}
    id: Mapped[int] = mapped_column(primary_key=True)
    name: Mapped[str]
    volumes: Mapped[list["Volume"]] = relationship(back_populates="shelf", order_by="Volume.id")


class Volume(SchemaBase):
    __tablename__ = "volume"
    __table_args__ = {"schema": "sa_lib"}
    id: Mapped[int] = mapped_column(primary_key=True)
    shelf_id: Mapped[int] = mapped_column(ForeignKey("sa_lib.shelf.id"))
    title: Mapped[str]
    shelf: Mapped[Shelf] = relationship(back_populates="volumes")


def tables_in_a_schema(url):
    engine = create_engine(url)
    with engine.begin() as c:
        c.execute(text("CREATE SCHEMA IF NOT EXISTS sa_lib"))
    SchemaBase.metadata.drop_all(engine)
    SchemaBase.metadata.create_all(engine)
    with Session(engine) as s:
        s.add(Shelf(id=1, name="top", volumes=[Volume(id=1, title="a"), Volume(id=2, title="b")]))
        s.commit()
        got = [(v.title, v.shelf.name) for v in s.scalars(select(Volume).order_by(Volume.id))]
        assert got == [("a", "top"), ("b", "top")], got
    inspector = inspect(engine)
    assert "sa_lib" in inspector.get_schema_names()
    assert sorted(inspector.get_table_names(schema="sa_lib")) == ["shelf", "volume"]
    assert "volume" not in inspector.get_table_names(), "a schema's table is not public's"
    fks = inspector.get_foreign_keys("volume", schema="sa_lib")
    assert [(f["referred_schema"], f["referred_table"], f["referred_columns"]) for f in fks] == [
        ("sa_lib", "shelf", ["id"])
    ], fks
    reflected = Table("volume", MetaData(), autoload_with=engine, schema="sa_lib")
    assert list(reflected.c.keys()) == ["id", "shelf_id", "title"], reflected.c.keys()
    SchemaBase.metadata.drop_all(engine)
    with engine.begin() as c:
        c.execute(text("DROP SCHEMA sa_lib"))
    assert "sa_lib" not in inspect(engine).get_schema_names()
    engine.dispose()


@check("SQLAlchemy 2 tables in a schema over psycopg 3 and psycopg2: create_all, relationship, inspector, autoload")
def _sqlalchemy_schemas():
    for driver in ("psycopg", "psycopg2"):
        tables_in_a_schema(f"postgresql+{driver}://permafrost@127.0.0.1:{PORT}/permafrost")


@check("SQLAlchemy 2 native enums over psycopg 3 and psycopg2: create_all, order, inspector, autoload, drop_all")
def _sqlalchemy_enums():
    for driver in ("psycopg", "psycopg2"):
        native_enums(f"postgresql+{driver}://permafrost@127.0.0.1:{PORT}/permafrost")


@check("SQLAlchemy 2 over psycopg 3: create_all, session, relationship, rollback, inspector, drop_all")
def _sqlalchemy_psycopg():
    orm_round_trip(f"postgresql+psycopg://permafrost@127.0.0.1:{PORT}/permafrost")


@check("SQLAlchemy 2 over psycopg2: the same")
def _sqlalchemy_psycopg2():
    orm_round_trip(f"postgresql+psycopg2://permafrost@127.0.0.1:{PORT}/permafrost")


@check("psycopg2 default mode: commit keeps, rollback leaves nothing, savepoints")
def _psycopg2():
    conn = psycopg2.connect(host="127.0.0.1", port=PORT, user="permafrost", dbname="permafrost")
    assert not conn.autocommit
    cur = conn.cursor()
    cur.execute("DROP TABLE IF EXISTS p2_items")
    cur.execute("CREATE TABLE p2_items (id BIGINT PRIMARY KEY, name TEXT)")
    conn.commit()
    cur.execute("INSERT INTO p2_items VALUES (%s, %s)", (1, "kept"))
    conn.commit()
    cur.execute("INSERT INTO p2_items VALUES (%s, %s)", (2, "gone"))
    cur.execute("SELECT count(*) FROM p2_items")
    assert cur.fetchone() == (2,), "the transaction sees its own insert"
    conn.rollback()
    cur.execute("SAVEPOINT a")
    cur.execute("INSERT INTO p2_items VALUES (3, 'undone')")
    cur.execute("ROLLBACK TO SAVEPOINT a")
    cur.execute("INSERT INTO p2_items VALUES (4, 'kept too')")
    conn.commit()
    cur.execute("SELECT id, name FROM p2_items ORDER BY id")
    assert cur.fetchall() == [(1, "kept"), (4, "kept too")]
    conn.rollback()
    try:
        cur.execute("SELECT 1/0")
        raise AssertionError("no error")
    except psycopg2.errors.DivisionByZero:
        pass
    try:
        cur.execute("SELECT 1")
        raise AssertionError("no error")
    except psycopg2.errors.InFailedSqlTransaction:
        pass
    conn.rollback()
    cur.execute("DROP TABLE p2_items")
    conn.commit()
    conn.close()


print(f"sqlalchemy/psycopg2: {CHECKS - FAILED} passed, {FAILED} failed")
sys.exit(FAILED)
