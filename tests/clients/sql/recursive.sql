-- WITH RECURSIVE: counting, walking a tree down and up, UNION against UNION ALL on a
-- graph with a cycle, a recursive query joined and aggregated, a non-recursive query under
-- WITH RECURSIVE. Expected output: PostgreSQL 15's (regen.sh). Errors print only their
-- SQLSTATE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE rc_node (id int PRIMARY KEY, parent int, name text);
INSERT INTO rc_node VALUES (1, NULL, 'root'), (2, 1, 'a'), (3, 1, 'b'), (4, 2, 'a1'), (5, 2, 'a2'),
    (6, 4, 'a1x'), (7, 3, 'b1');
CREATE TABLE rc_edge (src int, dst int, PRIMARY KEY (src, dst));
INSERT INTO rc_edge VALUES (1, 2), (2, 3), (3, 1), (3, 4);

WITH RECURSIVE t (n) AS (SELECT 1 UNION ALL SELECT n + 1 FROM t WHERE n < 5) SELECT n FROM t;
WITH RECURSIVE t (n, f) AS (SELECT 1, 1::bigint UNION ALL SELECT n + 1, f * (n + 1) FROM t WHERE n < 10)
SELECT n, f FROM t ORDER BY n DESC LIMIT 3;
-- the subtree under 'a', with depth and path
WITH RECURSIVE sub AS (
    SELECT id, name, 0 AS depth, name AS path FROM rc_node WHERE name = 'a'
    UNION ALL
    SELECT c.id, c.name, s.depth + 1, s.path || '/' || c.name FROM rc_node c JOIN sub s ON c.parent = s.id)
SELECT id, depth, path FROM sub ORDER BY path;
-- the ancestors of a1x
WITH RECURSIVE up AS (
    SELECT id, parent FROM rc_node WHERE id = 6
    UNION ALL
    SELECT n.id, n.parent FROM rc_node n, up WHERE n.id = up.parent)
SELECT id FROM up ORDER BY id;
-- reachable nodes over a cycle: UNION stops where UNION ALL would not
WITH RECURSIVE reach (node) AS (SELECT 1 UNION SELECT e.dst FROM rc_edge e JOIN reach r ON e.src = r.node)
SELECT node FROM reach ORDER BY node;
-- aggregated and joined afterwards
WITH RECURSIVE sub AS (SELECT id FROM rc_node WHERE id = 2 UNION ALL SELECT c.id FROM rc_node c JOIN sub ON c.parent = sub.id)
SELECT count(*), max(n.name) FROM sub JOIN rc_node n ON n.id = sub.id;
-- a WITH RECURSIVE list whose query does not read itself, and one reading an earlier one
WITH RECURSIVE a AS (SELECT 2 AS x), b AS (SELECT x FROM a UNION ALL SELECT x * 2 FROM b WHERE x < 20)
SELECT x FROM b ORDER BY x;
-- errors: sides of different widths (42601)
WITH RECURSIVE t (n) AS (SELECT 1 UNION ALL SELECT n, n FROM t) SELECT * FROM t;
DROP TABLE rc_edge;
DROP TABLE rc_node;
