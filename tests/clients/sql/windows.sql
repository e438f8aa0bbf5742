-- Window functions with the default frame: ranking, offsets, aggregates over a partition
-- (running with ORDER BY, whole without), over grouped rows, beside ORDER BY, DISTINCT and
-- LIMIT; where they are refused. Expected output: PostgreSQL 15's (regen.sh). Errors print
-- only their SQLSTATE.
\set VERBOSITY sqlstate
\set SHOW_CONTEXT never
CREATE TABLE wf_emp (id int PRIMARY KEY, dept text, salary int);
INSERT INTO wf_emp VALUES (1, 'a', 100), (2, 'a', 200), (3, 'a', 200), (4, 'b', 50), (5, 'b', NULL),
    (6, 'c', 70), (7, NULL, 10);

SELECT id, row_number() OVER (ORDER BY id) FROM wf_emp ORDER BY id;
SELECT id, dept, salary, rank() OVER (PARTITION BY dept ORDER BY salary DESC),
       dense_rank() OVER (PARTITION BY dept ORDER BY salary DESC),
       row_number() OVER (PARTITION BY dept ORDER BY salary DESC, id) FROM wf_emp ORDER BY dept, id;
SELECT id, salary, lag(salary) OVER (ORDER BY id), lead(salary, 2) OVER (ORDER BY id),
       lag(salary, 1, -1) OVER (ORDER BY id) FROM wf_emp ORDER BY id;
SELECT id, dept, first_value(id) OVER (PARTITION BY dept ORDER BY salary) FROM wf_emp ORDER BY id;
-- aggregates: running (with ORDER BY, peers together) and whole-partition (without)
SELECT id, salary, sum(salary) OVER (ORDER BY salary), count(*) OVER (ORDER BY salary),
       count(salary) OVER () FROM wf_emp ORDER BY salary, id;
SELECT id, dept, avg(salary) OVER (PARTITION BY dept), max(salary) OVER (PARTITION BY dept),
       min(salary) OVER (PARTITION BY dept ORDER BY id) FROM wf_emp ORDER BY id;
SELECT id, salary - avg(salary) OVER (PARTITION BY dept) AS diff FROM wf_emp WHERE dept = 'a' ORDER BY id;
-- over grouped rows
SELECT dept, sum(salary) AS total, rank() OVER (ORDER BY sum(salary) DESC) FROM wf_emp
    GROUP BY dept ORDER BY 3, 1;
SELECT dept, count(*), sum(count(*)) OVER () FROM wf_emp GROUP BY dept ORDER BY dept;
-- ORDER BY a window call, LIMIT, DISTINCT
SELECT id FROM wf_emp ORDER BY row_number() OVER (ORDER BY salary DESC NULLS LAST, id) LIMIT 3;
SELECT DISTINCT dept, count(*) OVER (PARTITION BY dept) FROM wf_emp ORDER BY 1;
-- last_value and nth_value over the default frame (up to the current row's last peer),
-- ntile, percent_rank, cume_dist
SELECT id, dept, salary, last_value(id) OVER (PARTITION BY dept ORDER BY salary, id),
       nth_value(id, 2) OVER (PARTITION BY dept ORDER BY salary NULLS FIRST, id),
       last_value(salary) OVER (PARTITION BY dept ORDER BY salary) AS last_peer_salary,
       last_value(id) OVER (PARTITION BY dept) IS NOT NULL AS has_last
    FROM wf_emp ORDER BY dept, salary, id;
SELECT id, salary, ntile(3) OVER (ORDER BY id), ntile(10) OVER (ORDER BY id),
       percent_rank() OVER (ORDER BY salary), cume_dist() OVER (ORDER BY salary)
    FROM wf_emp ORDER BY id;
SELECT dept, percent_rank() OVER (PARTITION BY dept ORDER BY id), cume_dist() OVER (PARTITION BY dept)
    FROM wf_emp ORDER BY dept, id;
SELECT id, ntile(NULL) OVER (ORDER BY id), nth_value(id, NULL) OVER (ORDER BY id) FROM wf_emp ORDER BY id LIMIT 2;
SELECT ntile(0) OVER () FROM wf_emp;
SELECT nth_value(id, 0) OVER () FROM wf_emp;
-- refused: in WHERE (42P20), an unknown window function (42883)
SELECT id FROM wf_emp WHERE row_number() OVER () > 1;
SELECT id, foo() OVER () FROM wf_emp;
DROP TABLE wf_emp;
