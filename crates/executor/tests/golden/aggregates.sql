-- Aggregates and grouping.
CREATE TABLE sales (id BIGINT PRIMARY KEY, region VARCHAR(10), product VARCHAR(10), qty INTEGER, price NUMERIC(8,2), rating DOUBLE PRECISION);
INSERT INTO sales VALUES (1, 'north', 'apple', 3, 1.20, 4.5), (2, 'north', 'pear', 1, 2.00, NULL), (3, 'south', 'apple', 5, 1.10, 3.0), (4, 'south', 'apple', 2, 1.30, 5.0), (5, 'east', 'plum', NULL, 3.00, 2.5), (6, 'north', 'apple', 4, 1.25, 4.0);
SELECT COUNT(*), COUNT(qty), SUM(qty), MIN(qty), MAX(qty), AVG(qty) FROM sales;
SELECT SUM(price), AVG(price), MIN(product), MAX(product), AVG(rating), SUM(rating) FROM sales;
SELECT region, COUNT(*), SUM(qty) FROM sales GROUP BY region ORDER BY region;
SELECT region, product, SUM(qty * price) AS revenue FROM sales GROUP BY region, product ORDER BY revenue DESC;
SELECT region, COUNT(*) FROM sales GROUP BY region HAVING COUNT(*) > 1 ORDER BY region;
SELECT COUNT(DISTINCT product), COUNT(DISTINCT region), SUM(DISTINCT qty) FROM sales;
SELECT product, COUNT(DISTINCT region) FROM sales GROUP BY product ORDER BY product;
SELECT region || '-' || product AS k, COUNT(*) FROM sales GROUP BY region, product ORDER BY k;
SELECT MAX(qty) - MIN(qty) AS spread, COUNT(*) * 2 FROM sales;
SELECT region, MAX(price) FROM sales GROUP BY region ORDER BY MAX(price) DESC, region;
-- Over no rows: one row without GROUP BY, none with it.
SELECT COUNT(*), SUM(qty), MAX(price) FROM sales WHERE id > 100;
SELECT region, COUNT(*) FROM sales WHERE id > 100 GROUP BY region;
-- params: 'north'
SELECT COUNT(*) FROM sales WHERE region = $1;
-- Errors.
SELECT region, qty FROM sales GROUP BY region;
SELECT qty FROM sales HAVING qty > 1;
SELECT SUM(region) FROM sales;
SELECT COUNT(SUM(qty)) FROM sales;
SELECT AVG(*) FROM sales;
-- Sums of bigint are numeric: past bigint's range, to zero, over NULL only.
CREATE TABLE big (id BIGINT PRIMARY KEY, v BIGINT);
INSERT INTO big VALUES (1, 9223372036854775807), (2, 9223372036854775807), (3, -5), (4, 5), (5, NULL), (6, -9223372036854775808);
SELECT SUM(v) FROM big;
SELECT SUM(v) FROM big WHERE id BETWEEN 1 AND 2;
SELECT SUM(v) FROM big WHERE id BETWEEN 3 AND 5;
SELECT SUM(v) FROM big WHERE id = 5;
SELECT SUM(v), AVG(v), COUNT(v) FROM big WHERE id IN (3, 4);
SELECT SUM(v) FROM big WHERE id IN (1, 6);
-- DISTINCT with ORDER BY over its columns, with OFFSET and LIMIT.
SELECT DISTINCT region FROM sales ORDER BY region;
SELECT DISTINCT region, product FROM sales ORDER BY product, region;
SELECT DISTINCT region FROM sales ORDER BY region DESC LIMIT 2 OFFSET 1;
SELECT DISTINCT product FROM sales ORDER BY product OFFSET 1;
SELECT DISTINCT region, product FROM sales ORDER BY region;
SELECT region FROM sales ORDER BY region, id DESC;
