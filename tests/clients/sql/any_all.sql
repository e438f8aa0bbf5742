-- Comparisons with ANY and ALL over arrays: every comparison operator, NULL elements and
-- operands, empty arrays, text, dates and numerics, literals and ARRAY[...], in WHERE.
SELECT 3 > ANY(ARRAY[1, 5]), 3 > ALL(ARRAY[1, 2]), 3 > ALL(ARRAY[1, 5]), 3 >= ALL(ARRAY[3, 2]);
SELECT 3 < ANY('{1,2}'::int[]), 3 <= ANY('{3}'::int[]), 3 = ALL('{3,3}'::int[]), 3 <> ANY('{3,4}'::int[]);
SELECT 3 = ANY(ARRAY[1, 3]), 3 <> ALL(ARRAY[1, 2]), 3 = ALL(ARRAY[3, 4]), 3 <> ANY(ARRAY[3, 3]);
-- NULLs: unknown unless another element decides.
SELECT 3 > ANY(ARRAY[NULL, 1]), 3 > ANY(ARRAY[NULL, 5]), 3 > ALL(ARRAY[NULL, 1]), 3 > ALL(ARRAY[NULL, 5]);
SELECT NULL::int > ANY(ARRAY[1]), NULL::int > ALL(ARRAY[1]), 3 > ANY(NULL::int[]), 3 > ALL(NULL::int[]);
-- Empty arrays: ANY is false, ALL is true, whatever the operand.
SELECT 3 > ANY('{}'::int[]), 3 > ALL('{}'::int[]), NULL::int < ANY('{}'::int[]), NULL::int < ALL('{}'::int[]);
-- Other element types.
SELECT 'b' < ANY(ARRAY['a', 'c']), 'b' > ALL(ARRAY['a', 'c']), 'b' >= ALL('{a,b}'::text[]);
SELECT date '2024-07-01' > ALL(ARRAY[date '2024-01-01', date '2024-06-30']), 2.5 < ANY(ARRAY[1.5, 2.75]);
-- In a WHERE clause over a table.
CREATE TABLE aa (id int PRIMARY KEY, v int, tags text[]);
INSERT INTO aa VALUES (1, 10, '{x,y}'), (2, 20, '{y}'), (3, 30, '{}'), (4, NULL, NULL);
SELECT id FROM aa WHERE v > ANY(ARRAY[15, 25]) ORDER BY id;
SELECT id FROM aa WHERE v < ALL(ARRAY[25, 35]) ORDER BY id;
SELECT id FROM aa WHERE 'x' < ALL(tags) ORDER BY id;
SELECT id, 'y' <= ANY(tags) AS any_y, 'a' < ALL(tags) AS all_after_a FROM aa ORDER BY id;
-- = ANY and <> ALL of a subquery are IN and NOT IN.
SELECT id FROM aa WHERE v = ANY (SELECT v FROM aa WHERE id > 2) ORDER BY id;
SELECT id FROM aa WHERE id <> ALL (SELECT id FROM aa WHERE v > 15) ORDER BY id;
DROP TABLE aa;
