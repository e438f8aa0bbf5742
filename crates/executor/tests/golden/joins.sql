-- Joins, including TPC-C's Stock-Level query.
CREATE TABLE district (d_w_id INTEGER, d_id INTEGER, d_next_o_id INTEGER, PRIMARY KEY (d_w_id, d_id));
CREATE TABLE stock (s_w_id INTEGER, s_i_id INTEGER, s_quantity INTEGER, PRIMARY KEY (s_w_id, s_i_id));
CREATE TABLE order_line (ol_w_id INTEGER, ol_d_id INTEGER, ol_o_id INTEGER, ol_number INTEGER, ol_i_id INTEGER, PRIMARY KEY (ol_w_id, ol_d_id, ol_o_id, ol_number));
INSERT INTO district VALUES (1, 1, 14), (1, 2, 12), (2, 1, 11);
INSERT INTO stock VALUES (1, 100, 5), (1, 101, 50), (1, 102, 12), (1, 103, 8), (1, 104, 30), (2, 100, 1), (2, 101, 2);
INSERT INTO order_line VALUES (1, 1, 10, 1, 100), (1, 1, 10, 2, 101), (1, 1, 11, 1, 102), (1, 1, 12, 1, 100), (1, 1, 12, 2, 103), (1, 1, 13, 1, 104), (1, 1, 9, 1, 103), (1, 2, 11, 1, 102), (2, 1, 10, 1, 100);
-- Stock-Level: distinct items of the last orders of a district whose stock is low.
-- params: 1, 1, 14, 10, 1, 15
SELECT COUNT(DISTINCT s_i_id) FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ?;
-- params: 1, 1, 14, 10, 1, 15
SELECT DISTINCT s_i_id FROM order_line, stock WHERE ol_w_id = ? AND ol_d_id = ? AND ol_o_id < ? AND ol_o_id >= ? AND s_w_id = ? AND s_i_id = ol_i_id AND s_quantity < ? ORDER BY s_i_id;
-- Written with JOIN ... ON.
SELECT ol.ol_o_id, ol.ol_i_id, s.s_quantity FROM order_line ol JOIN stock s ON s.s_w_id = ol.ol_w_id AND s.s_i_id = ol.ol_i_id WHERE ol.ol_w_id = 1 AND ol.ol_d_id = 1 AND ol.ol_o_id = 10 ORDER BY ol.ol_number;
-- Three tables, grouped.
SELECT d.d_id, COUNT(*) FROM district d, order_line ol, stock s WHERE d.d_w_id = 1 AND ol.ol_w_id = d.d_w_id AND ol.ol_d_id = d.d_id AND ol.ol_o_id < d.d_next_o_id AND s.s_w_id = ol.ol_w_id AND s.s_i_id = ol.ol_i_id AND s.s_quantity < 20 GROUP BY d.d_id ORDER BY d.d_id;
-- A cross join, and a join across warehouses (partitions).
SELECT COUNT(*) FROM district, district x;
SELECT a.s_w_id, b.s_w_id, a.s_i_id FROM stock a, stock b WHERE a.s_i_id = b.s_i_id AND a.s_w_id < b.s_w_id ORDER BY a.s_i_id;
SELECT s_w_id, s_i_id, ol_o_id FROM stock LEFT JOIN order_line ON s_i_id = ol_i_id ORDER BY s_w_id, s_i_id, ol_o_id;
-- Errors.
SELECT s_w_id FROM stock, stock;
SELECT ol_w_id FROM order_line a, order_line b;
SELECT count(*), count(s_i_id), count(ol_i_id), count(d_id) FROM stock FULL JOIN order_line ON s_i_id = ol_i_id, district;
SELECT x.s_w_id FROM stock;
