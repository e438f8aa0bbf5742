-- Outer joins: LEFT [OUTER] JOIN (chains of them, beside inner joins), FULL JOIN (of two
-- tables, beside other relations, USING, NATURAL), RIGHT JOIN of a relation, ON
-- conditions against WHERE conditions (IS NULL anti-joins), aggregates over them,
-- parenthesized joins, joins null-extended as one (LEFT JOIN (b JOIN c), RIGHT JOIN after
-- other joins). Expected output: PostgreSQL 15's
-- (regen.sh). Errors print only their SQLSTATE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE oj_author (id int PRIMARY KEY, name text);
CREATE TABLE oj_book (id int PRIMARY KEY, author_id int, title text, year int);
CREATE TABLE oj_review (id int PRIMARY KEY, book_id int, stars int);
INSERT INTO oj_author VALUES (1, 'ann'), (2, 'bob'), (3, 'cy'), (4, NULL);
INSERT INTO oj_book VALUES (10, 1, 'a1', 2001), (11, 1, 'a2', 2005), (12, 2, 'b1', 1999),
    (13, NULL, 'orphan', 2010), (14, 9, 'lost', 2011);
INSERT INTO oj_review VALUES (100, 10, 5), (101, 10, 3), (102, 12, 4), (103, 13, NULL);

-- every author, with or without books
SELECT a.id, a.name, b.title FROM oj_author a LEFT JOIN oj_book b ON b.author_id = a.id ORDER BY a.id, b.title;
SELECT a.id, b.title FROM oj_author a LEFT OUTER JOIN oj_book b ON b.author_id = a.id AND b.year > 2003 ORDER BY a.id;
-- ON against WHERE: a condition on the right side in WHERE drops the null-extended rows
SELECT a.id, b.title FROM oj_author a LEFT JOIN oj_book b ON b.author_id = a.id WHERE b.year > 2003 ORDER BY a.id;
-- anti-join: authors without books
SELECT a.id FROM oj_author a LEFT JOIN oj_book b ON b.author_id = a.id WHERE b.id IS NULL ORDER BY a.id;
-- an ON condition on the left side only, constant ON conditions
SELECT a.id, b.id AS book FROM oj_author a LEFT JOIN oj_book b ON a.id = 2 AND b.author_id = a.id ORDER BY a.id;
SELECT a.id, b.id AS book FROM oj_author a LEFT JOIN oj_book b ON false ORDER BY a.id;
SELECT count(*) FROM oj_author a LEFT JOIN oj_book b ON true;

-- chains: book -> author, book -> reviews; inner join after an outer one
SELECT b.title, a.name, r.stars FROM oj_book b LEFT JOIN oj_author a ON a.id = b.author_id
    LEFT JOIN oj_review r ON r.book_id = b.id ORDER BY b.id, r.id;
SELECT a.id, b.title, r.stars FROM oj_author a LEFT JOIN oj_book b ON b.author_id = a.id
    LEFT JOIN oj_review r ON r.book_id = b.id ORDER BY a.id, b.id, r.id;
SELECT a.id, b.title, r.stars FROM oj_author a LEFT JOIN oj_book b ON b.author_id = a.id
    JOIN oj_review r ON r.book_id = b.id ORDER BY a.id, b.id, r.id;
SELECT b.title, r.stars FROM oj_review r JOIN oj_book b ON b.id = r.book_id
    LEFT JOIN oj_author a ON a.id = b.author_id WHERE a.name IS NULL ORDER BY r.id;

-- aggregates over an outer join: count(column) counts matches
SELECT a.id, count(b.id) AS books, count(*) AS rows_, max(b.year) FROM oj_author a
    LEFT JOIN oj_book b ON b.author_id = a.id GROUP BY a.id ORDER BY a.id;
SELECT a.name, coalesce(sum(r.stars), 0) AS stars FROM oj_author a LEFT JOIN oj_book b ON b.author_id = a.id
    LEFT JOIN oj_review r ON r.book_id = b.id GROUP BY a.name ORDER BY a.name;

-- RIGHT JOIN of one relation; a parenthesized join
SELECT a.name, b.title FROM oj_author a RIGHT JOIN oj_book b ON b.author_id = a.id ORDER BY b.id;
SELECT a.name, b.title FROM (oj_book b LEFT JOIN oj_author a ON a.id = b.author_id) ORDER BY b.id;
-- a subquery reading the null-extended side
SELECT a.id, (SELECT count(*) FROM oj_review r WHERE r.book_id = b.id) AS n FROM oj_author a
    LEFT JOIN oj_book b ON b.author_id = a.id ORDER BY a.id, b.id;
-- NULLs do not match NULLs
SELECT b.id, r.id FROM oj_book b LEFT JOIN oj_review r ON r.stars = b.author_id ORDER BY b.id, r.id;

-- FULL JOIN of two tables: both sides' unmatched rows, WHERE after the join
SELECT a.id, b.id AS book FROM oj_author a FULL JOIN oj_book b ON b.author_id = a.id ORDER BY a.id, b.id;
SELECT a.id, b.id AS book FROM oj_author a FULL OUTER JOIN oj_book b ON b.author_id = a.id AND b.year > 2004
    ORDER BY a.id, b.id;
SELECT a.id, b.id AS book FROM oj_author a FULL JOIN oj_book b ON b.author_id = a.id WHERE a.id IS NULL OR b.id IS NULL
    ORDER BY a.id, b.id;
SELECT count(*), count(a.id), count(b.id) FROM oj_author a FULL JOIN oj_book b ON b.author_id = a.id;
SELECT r.id, b.id AS book FROM oj_review r FULL JOIN oj_book b ON b.id = r.book_id WHERE coalesce(r.stars, 0) < 5
    ORDER BY r.id, b.id;
-- FULL JOIN beside other relations, of a subquery or a join, USING and NATURAL (the
-- shared column merged, each side's copy still found by its qualified name), a.*
SELECT a.id, b.id AS book, r.id AS review FROM oj_author a FULL JOIN oj_book b ON b.author_id = a.id
    LEFT JOIN oj_review r ON r.book_id = b.id ORDER BY a.id, b.id, r.id;
SELECT a.id, b.id AS book, r.id AS review FROM oj_author a FULL JOIN oj_book b ON b.author_id = a.id
    FULL JOIN oj_review r ON r.book_id = b.id ORDER BY a.id, b.id, r.id;
SELECT a.id, x.id AS book, x.stars FROM oj_author a
    FULL JOIN (SELECT b.id, b.author_id, max(r.stars) AS stars FROM oj_book b JOIN oj_review r ON r.book_id = b.id
               GROUP BY b.id, b.author_id) x ON x.author_id = a.id ORDER BY a.id, x.id;
SELECT a.id, b.id AS book, r.id AS review FROM oj_author a FULL JOIN (oj_book b JOIN oj_review r ON r.book_id = b.id)
    ON b.author_id = a.id ORDER BY a.id, b.id, r.id;
SELECT * FROM oj_book FULL JOIN oj_review USING (id) ORDER BY id;
SELECT id, oj_book.id, oj_review.id, title FROM oj_book FULL JOIN oj_review USING (id) ORDER BY 1;
SELECT * FROM (SELECT id AS author_id, name FROM oj_author) a NATURAL FULL JOIN oj_book ORDER BY author_id, id;
SELECT a.*, b.title FROM oj_author a FULL JOIN oj_book b ON b.author_id = a.id ORDER BY a.id, b.id;
SELECT count(*), count(a.id), count(b.id) FROM oj_author a FULL JOIN oj_book b ON b.author_id = a.id, oj_review r
    WHERE r.book_id = b.id;
SELECT id FROM oj_author a FULL JOIN oj_book b ON b.author_id = a.id;
SELECT 1 FROM oj_author a FULL JOIN oj_book b ON b.author_id = a.id JOIN oj_book a ON true;

-- a join null-extended as one: a LEFT JOIN's parenthesized right side (SQLAlchemy's
-- joinedload of a many-to-many relation), a RIGHT JOIN after other joins, nested groups,
-- WHERE conditions over a group's columns, a group first in the join order
SELECT a.id, b.title, r.stars FROM oj_author a LEFT JOIN (oj_book b JOIN oj_review r ON r.book_id = b.id)
    ON b.author_id = a.id ORDER BY a.id, b.id, r.id;
SELECT a.id, b.title, r.stars FROM oj_author a LEFT OUTER JOIN (oj_book b JOIN oj_review r ON r.book_id = b.id AND r.stars > 3)
    ON b.author_id = a.id ORDER BY a.id, b.id, r.id;
SELECT a.id, b.title, r.id AS review FROM oj_author a LEFT JOIN (oj_book b LEFT JOIN oj_review r ON r.book_id = b.id)
    ON b.author_id = a.id AND b.year < 2006 ORDER BY a.id, b.id, r.id;
SELECT a.id, b.title, r.id AS review FROM oj_author a LEFT JOIN (oj_book b LEFT JOIN oj_review r ON r.book_id = b.id)
    ON b.author_id = a.id AND r.stars IS NULL ORDER BY a.id, b.id, r.id;
SELECT a.id, b.id AS book, r.id AS review FROM oj_author a LEFT JOIN (oj_book b JOIN oj_review r ON r.book_id = b.id)
    ON b.author_id = a.id WHERE r.id IS NULL ORDER BY a.id;
SELECT a.name, b.title, r.stars FROM oj_author a JOIN oj_book b ON b.author_id = a.id
    RIGHT JOIN oj_review r ON r.book_id = b.id ORDER BY r.id;
SELECT a.name, b.title, r.stars FROM oj_author a LEFT JOIN oj_book b ON b.author_id = a.id
    RIGHT JOIN oj_review r ON r.book_id = b.id AND a.id IS NOT NULL ORDER BY r.id;
SELECT r.id, b.title, a.name FROM oj_review r LEFT JOIN (oj_book b LEFT JOIN oj_author a ON a.id = b.author_id AND a.name > 'a')
    ON b.id = r.book_id AND b.year > 2000 ORDER BY r.id;
SELECT count(*), count(b.id), count(r.id) FROM oj_author a LEFT JOIN (oj_book b CROSS JOIN oj_review r)
    ON b.author_id = a.id AND r.book_id = b.id;
SELECT a.id, x.id, y.id FROM oj_author a LEFT JOIN (oj_author x JOIN oj_author y ON y.id = x.id + 1) ON true
    WHERE a.id = 1 ORDER BY x.id;
-- an ON condition may read only its join's sides (42P01)
SELECT * FROM oj_author a LEFT JOIN (oj_book b JOIN oj_review r ON r.book_id = a.id) ON true;
SELECT * FROM oj_author a, oj_book b LEFT JOIN oj_review r ON r.book_id = a.id;

-- a LEFT JOIN needs its ON condition (42601)
SELECT * FROM oj_author a LEFT JOIN oj_book b;
DROP TABLE oj_review;
DROP TABLE oj_book;
DROP TABLE oj_author;
