-- Queries over one table: access paths, predicates, ordering, expressions.
CREATE TABLE t (id BIGINT PRIMARY KEY, grp INTEGER NOT NULL, name VARCHAR(20), score DOUBLE PRECISION, amount NUMERIC(8,2));
CREATE INDEX t_grp ON t (grp, name);
INSERT INTO t VALUES (1, 1, 'alpha', 1.5, 10.00), (2, 1, 'beta', NULL, 20.50), (3, 2, 'gamma', 3.25, 30.25), (4, 2, NULL, 4.0, NULL), (5, 3, 'epsilon', -1.0, 5.55), (6, 3, 'zeta', 6.5, 0.01), (7, 3, 'eta', 7.0, 100.00);
-- Point lookups, with parameters in both styles.
SELECT * FROM t WHERE id = 3;
-- params: 5
SELECT name, score FROM t WHERE id = $1;
-- params: 2
SELECT name FROM t WHERE id = ?;
-- params: '6'
SELECT name FROM t WHERE id = $1;
SELECT * FROM t WHERE id = 99;
SELECT id FROM t WHERE id = 2.5;
SELECT id FROM t WHERE id = 2.0;
-- Ranges on the primary key.
SELECT id, name FROM t WHERE id >= 2 AND id < 5 ORDER BY id;
SELECT id FROM t WHERE id BETWEEN 3 AND 6 ORDER BY id DESC;
SELECT id FROM t WHERE id > 2.5 AND id <= 4 ORDER BY id;
SELECT id FROM t WHERE id NOT BETWEEN 2 AND 6 ORDER BY id;
-- A composite secondary index: prefix, prefix plus range.
SELECT id, name FROM t WHERE grp = 3 ORDER BY name;
-- One text key: every value text (compared as text directly), or one NULL among them.
SELECT name FROM t WHERE name IS NOT NULL ORDER BY name DESC;
SELECT DISTINCT name FROM t WHERE grp <> 2 ORDER BY name;
SELECT name FROM t ORDER BY name DESC;
SELECT name FROM t ORDER BY name;
SELECT id FROM t WHERE grp = 3 AND name > 'eta' ORDER BY id;
SELECT id FROM t WHERE grp = 2 AND name <= 'gamma' ORDER BY id;
-- Scans with filters.
SELECT id FROM t WHERE score > 3 ORDER BY id;
SELECT id FROM t WHERE name LIKE '%ta' ORDER BY id;
SELECT id FROM t WHERE name ILIKE 'ALP%';
SELECT id FROM t WHERE name NOT LIKE '%a' ORDER BY id;
SELECT id FROM t WHERE grp IN (1, 3) AND id NOT IN (6) ORDER BY id;
SELECT id FROM t WHERE name IS NULL;
SELECT id FROM t WHERE score IS NOT NULL AND amount IS NULL;
-- NULL never equals anything.
SELECT id FROM t WHERE name = NULL;
SELECT id FROM t WHERE name <> 'alpha' ORDER BY id;
SELECT id FROM t WHERE name IS DISTINCT FROM 'alpha' ORDER BY id;
-- Ordering: NULLs last ascending, first descending, unless told.
SELECT id, score FROM t ORDER BY score;
SELECT id, score FROM t ORDER BY score DESC;
SELECT id, score FROM t ORDER BY score NULLS FIRST;
SELECT grp, id AS key FROM t ORDER BY 1 DESC, key;
SELECT id FROM t ORDER BY score * -1 LIMIT 2;
-- LIMIT and OFFSET.
SELECT id FROM t ORDER BY id LIMIT 3;
SELECT id FROM t ORDER BY id LIMIT 2 OFFSET 4;
-- params: 2
SELECT id FROM t ORDER BY id LIMIT $1;
SELECT id FROM t ORDER BY id LIMIT -1;
SELECT DISTINCT grp FROM t ORDER BY grp;
-- Expressions.
SELECT id, id * 2 + 1 AS e, score / 2, amount * 2, -id, id % 3, name || '!' FROM t WHERE id <= 3 ORDER BY id;
SELECT CASE WHEN score > 4 THEN 'high' WHEN score > 2 THEN 'mid' ELSE 'low' END AS band, id FROM t ORDER BY id;
SELECT CASE grp WHEN 1 THEN 'one' WHEN 2 THEN 'two' END FROM t WHERE id IN (1, 3, 5) ORDER BY id;
SELECT COALESCE(name, 'none'), UPPER(name), LOWER('ABC'), LENGTH(name), SUBSTRING(name FROM 2 FOR 3), ABS(score) FROM t WHERE id IN (1, 4) ORDER BY id;
SELECT CAST(amount AS INTEGER), CAST(id AS TEXT), CAST('42' AS BIGINT), '7'::INT + 1 FROM t WHERE id = 3;
SELECT 1 + 1, 'text', NULL, TRUE AND NULL, FALSE AND NULL, NULL IS NULL, 7 / 2, 7.0 / 2;
SELECT 1 + 1 AS two, GREATEST(3, 9, 1), LEAST(3, 9, 1), NULLIF(1, 1), ROUND(2.567, 2), FLOOR(2.5), CEIL(2.1);
-- Self join with aliases.
SELECT a.id, b.id FROM t a, t b WHERE a.id = 1 AND b.id = a.id + 1;
-- Errors.
SELECT 1 / 0;
SELECT 9223372036854775807 + 1;
SELECT nosuch FROM t;
SELECT * FROM nosuch;
SELECT id FROM t WHERE grp = 'abc';
SELECT SUM(id) FROM t WHERE SUM(id) > 1;
SELECT id FROM t WHERE name LIKE 1;
SELECT id FROM t WHERE EXISTS (SELECT 1 FROM t AS u WHERE u.id = t.nope);
SELEKT 1;
-- Ranges over the integer key: exact bounds need no second check; others are checked.
SELECT id FROM t WHERE id BETWEEN 2 AND 4 ORDER BY id;
SELECT id FROM t WHERE id > 2 AND id < 5 ORDER BY id;
SELECT id FROM t WHERE id > 2.5 AND id <= 4.5 ORDER BY id;
SELECT id FROM t WHERE id >= 6 ORDER BY id;
SELECT id FROM t WHERE 3 < id AND 5 >= id ORDER BY id;
SELECT id FROM t WHERE id BETWEEN 2 AND 6 AND grp = 3 ORDER BY id;
SELECT id FROM t WHERE id >= 99999999999999999999 ORDER BY id;
-- params: 2, NULL
SELECT id FROM t WHERE id >= $1 AND id <= $2;
-- params: 3, 5
SELECT id FROM t WHERE id BETWEEN $1 AND $2 ORDER BY id;
-- params: 3, 1
SELECT id FROM t WHERE id BETWEEN $1 AND $2 + $1 ORDER BY id;
