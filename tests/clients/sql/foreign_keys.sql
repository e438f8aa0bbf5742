-- FOREIGN KEY constraints: declared on a column or the table, enforced on the writes of
-- both tables, with ON DELETE actions and DEFERRABLE INITIALLY DEFERRED keys.
CREATE TABLE author (id INT PRIMARY KEY, name TEXT UNIQUE);
CREATE TABLE book (id INT PRIMARY KEY, author_id INT REFERENCES author, title TEXT);
CREATE INDEX book_author ON book (author_id);
INSERT INTO author VALUES (1, 'ann'), (2, 'bob');
INSERT INTO book VALUES (10, 1, 'a'), (11, 1, 'b'), (12, NULL, 'c');
-- A key that is missing, on insert and on update; NULL is never checked.
INSERT INTO book VALUES (13, 3, 'x');
UPDATE book SET author_id = 5 WHERE id = 10;
UPDATE book SET author_id = 2 WHERE id = 10;
UPDATE book SET author_id = NULL WHERE id = 11 RETURNING *;
UPDATE book SET author_id = 1 WHERE id = 11;
-- A referenced key cannot go while referenced (NO ACTION).
DELETE FROM author WHERE id = 2;
UPDATE author SET id = 7 WHERE id = 2;
UPDATE author SET name = 'bobby' WHERE id = 2;
SELECT * FROM author ORDER BY id;
-- A statement that removes the key and its references together is fine.
INSERT INTO author VALUES (3, 'cy');
INSERT INTO book VALUES (14, 3, 'd');
DELETE FROM book WHERE author_id = 3;
DELETE FROM author WHERE id = 3;
-- ON DELETE CASCADE and SET NULL, through two levels.
CREATE TABLE review (id INT PRIMARY KEY, book_id INT, CONSTRAINT review_book FOREIGN KEY (book_id) REFERENCES book (id) ON DELETE CASCADE);
CREATE TABLE vote (id INT PRIMARY KEY, review_id INT REFERENCES review ON DELETE CASCADE);
INSERT INTO review VALUES (100, 10), (101, 11), (102, 11);
INSERT INTO vote VALUES (1, 101), (2, 102), (3, 100);
CREATE TABLE note (id INT PRIMARY KEY, book_id INT REFERENCES book ON DELETE SET NULL);
INSERT INTO note VALUES (1, 11), (2, 12);
DELETE FROM book WHERE id = 11;
SELECT * FROM review ORDER BY id;
SELECT * FROM vote ORDER BY id;
SELECT * FROM note ORDER BY id;
-- RESTRICT.
CREATE TABLE shelf (id INT PRIMARY KEY);
CREATE TABLE placed (id INT PRIMARY KEY, shelf_id INT REFERENCES shelf ON DELETE RESTRICT);
INSERT INTO shelf VALUES (1), (2);
INSERT INTO placed VALUES (1, 1);
DELETE FROM shelf WHERE id = 1;
DELETE FROM shelf WHERE id = 2;
-- Definitions that cannot be.
CREATE TABLE bad (id INT PRIMARY KEY, a TEXT REFERENCES book (title));
CREATE TABLE bad (id INT PRIMARY KEY, a INT REFERENCES nope);
CREATE TABLE bad (id INT PRIMARY KEY, a INT, b INT, FOREIGN KEY (a, b) REFERENCES author (id));
CREATE TABLE bad (id INT PRIMARY KEY, a INT REFERENCES author (name));
-- A self-reference.
CREATE TABLE node (id INT PRIMARY KEY, parent INT REFERENCES node ON DELETE CASCADE);
INSERT INTO node VALUES (1, NULL), (2, 1), (3, 2), (4, 1);
INSERT INTO node VALUES (5, 9);
DELETE FROM node WHERE id = 2;
SELECT * FROM node ORDER BY id;
-- Added and dropped after the fact; rows already there are checked.
ALTER TABLE note DROP CONSTRAINT note_book_id_fkey;
INSERT INTO note VALUES (3, 999);
ALTER TABLE note ADD CONSTRAINT note_fk FOREIGN KEY (book_id) REFERENCES book (id) DEFERRABLE INITIALLY DEFERRED;
DELETE FROM note WHERE id = 3;
ALTER TABLE note ADD CONSTRAINT note_fk FOREIGN KEY (book_id) REFERENCES book (id) DEFERRABLE INITIALLY DEFERRED;
ALTER TABLE note ADD CONSTRAINT note_fk FOREIGN KEY (book_id) REFERENCES book (id);
ALTER TABLE note DROP CONSTRAINT nope;
ALTER TABLE note DROP CONSTRAINT IF EXISTS nope;
-- A deferred key is checked at COMMIT: a row may come before the row it references.
BEGIN;
INSERT INTO note VALUES (4, 998);
INSERT INTO book VALUES (998, 1, 'late');
COMMIT;
BEGIN;
INSERT INTO note VALUES (5, 997);
SELECT count(*) FROM note;
COMMIT;
INSERT INTO note VALUES (6, 996);
SELECT * FROM note ORDER BY id;
-- The catalogs show them.
SELECT conname, contype, pg_get_constraintdef(oid), condeferrable, condeferred
  FROM pg_constraint WHERE contype = 'f' ORDER BY conname;
\d book
DROP TABLE vote, review, note, placed, shelf, node;
DROP TABLE book, author;
