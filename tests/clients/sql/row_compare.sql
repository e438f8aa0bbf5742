-- Comparisons of row constructors, as keyset pagination writes them.
CREATE TABLE rc (a int, b int, c text, PRIMARY KEY (a, b));
INSERT INTO rc VALUES (1, 1, 'x'), (1, 2, 'y'), (2, 1, 'z'), (2, 2, NULL), (3, 1, 'w');
SELECT a, b FROM rc WHERE (a, b) > (1, 2) ORDER BY a, b;
SELECT a, b FROM rc WHERE (a, b) >= (1, 2) ORDER BY a, b LIMIT 2;
SELECT a, b FROM rc WHERE (a, b) < (2, 2) ORDER BY a, b;
SELECT a, b FROM rc WHERE (a, b) <= (2, 1) ORDER BY a DESC, b DESC;
SELECT a, b FROM rc WHERE (a, b) = (2, 1);
SELECT a, b FROM rc WHERE (a, b) <> (2, 1) ORDER BY a, b;
SELECT a, b FROM rc WHERE ROW(a, b) > ROW(2, 1) ORDER BY a, b;
-- NULLs: a pair that decides and holds a NULL makes the result NULL.
SELECT a, b, (a, c) < (2, 'z') AS lt, (b, c) = (1, 'x') AS eq FROM rc ORDER BY a, b;
SELECT (1, NULL::int) < (2, 1) AS t, (1, NULL::int) < (1, 2) AS n, (NULL::int, 1) = (NULL::int, 1) AS e;
SELECT (1, 2, 'b') >= (1, 2, 'a') AS ge, (1, 2) <> (1, 2) AS ne;
SELECT a FROM rc WHERE (a, b) < (1, 2, 3);
PREPARE page(int, int) AS SELECT a, b FROM rc WHERE (a, b) > ($1, $2) ORDER BY a, b LIMIT 2;
EXECUTE page(1, 2);
EXECUTE page(2, 2);
DEALLOCATE page;
UPDATE rc SET c = 'later' WHERE (a, b) >= (2, 2);
SELECT a, b, c FROM rc WHERE (a, b) >= (2, 2) ORDER BY a, b;
DROP TABLE rc;
